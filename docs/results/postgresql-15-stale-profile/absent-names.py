"""The names by file of the Debian tree's profile that pgolab's stale-profile check counts absent on a
tree (default: the tree the profile was trained on, where every such name is a false one).
Run: .venv/bin/python docs/results/postgresql-15-stale-profile/absent-names.py [TREE]"""
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from pgolab.profiles.clang import function_names
from pgolab.profiles.relocation import _Spelled, file_of, plan

HERE = Path(__file__).parent
with tempfile.TemporaryDirectory() as scratch:
    tarfile.open(HERE / "debian-tree.profile.tgz").extractall(scratch)
    text = subprocess.run(["llvm-profdata-16", "merge", "--text", "-o", "-", f"{scratch}/profile/default.profdata"],
                          capture_output=True, text=True, check=True).stdout
names = function_names(text)
tree = Path(sys.argv[1] if len(sys.argv) > 1 else "/var/cache/pgolab/sources/postgresql-15_15.18")
moved = plan(names, tree)
print(f"{len(names)} functions; {moved}")
spelled, inside = _Spelled(tree), moved.old + "/"
for name in names:
    f = file_of(name)
    if f and f.startswith(inside) and not spelled.present(f[len(inside):], name[len(f) + 1:]):
        print(name[len(inside):])
