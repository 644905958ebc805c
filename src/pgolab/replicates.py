"""Build replicates: independent builds of one variant, so that a claim about the variant can include
how much its figures move from one build to the next, not only within one run of one binary.

Replicate 1 is the build itself (its usual label and binary). Replicate k > 1 is labelled
`LABEL+rK`; a PGO build trains with the training seed moved by k - 1 (another statement sequence,
another profile), and every build links with layout seed k, which each compiler family turns into
its own way of moving code (toolchains.CompilerFamily.layout_seed_flags). So two replicates are two
binaries of the same variant, source and toolchain.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from .errors import PgolabError

SUFFIX = "+r"
MAX = 9
_LABEL = re.compile(r"^(?P<build>.+)\+r(?P<k>[2-9])$")


def label(build_label: str, k: int) -> str:
    """Replicate k's label: the build's own for k = 1, `LABEL+rK` after it."""
    return build_label if k == 1 else f"{build_label}{SUFFIX}{k}"


def labels(build_label: str, count: int) -> list[str]:
    return [label(build_label, k) for k in range(1, count + 1)]


def split(target_label: str) -> tuple[str, int]:
    """(the label every replicate shares, which replicate): ("rel_pgo_use", 2) for rel_pgo_use+r2."""
    found = _LABEL.match(target_label)
    return (found.group("build"), int(found.group("k"))) if found else (target_label, 1)


def check_label(name: str) -> str:
    """A label of one's own (--label, --binary NAME=PATH) must not read as another build's replicate."""
    if _LABEL.match(name):
        base, k = split(name)
        raise PgolabError(f"{name!r} reads as replicate {k} of {base!r}",
                          hint=f"choose a name that does not end in {SUFFIX}K, or build {base} with --replicates {k}")
    return name


def check_count(count: int) -> int:
    if not 1 <= count <= MAX:
        raise PgolabError(f"--replicates {count}: give 1 to {MAX}",
                          hint="2 or 3 replicates show the build-to-build spread; 1 builds the variant once")
    return count


def training(spec, k: int):
    """Replicate k's training (a workloads.TrainingSpec): the same loads, the seed moved by k - 1."""
    return spec if k == 1 else replace(spec, seed=spec.seed + k - 1)


# -- a link-order shuffle, for linkers without a shuffle of their own (GNU ld) -------------------
# gcc's collect2 looks for the linker (ld, or ld.gold and the like under -fuse-ld) in COMPILER_PATH
# before PATH, so a folder of wrappers on it moves the objects of every link of a build without a
# flag that would be recorded in the binary (PostgreSQL records its CFLAGS in pg_config).
LINKERS = ("ld", "ld.bfd", "ld.gold", "ld.lld")
LINK_LOG = "links.log"
WRAPPER = """#!{python}
# pgolab: replicate {seed}'s link-order shuffle. The first contiguous run of the link's own object files
# (relative paths, or paths outside /usr: never the C runtime's Scrt1.o, crti.o, crtbegin*.o, whose order
# makes .init and .fini) is permuted with the seed; everything after the run (archives, -l libraries,
# options, further objects) stays where it was, so no object moves past an archive it needs. Each link
# is logged.
import os, random, shlex, sys, tempfile
SEED, REAL, LOG = {seed}, {real!r}, {log!r}

def expanded(args):
    out = []
    for a in args:
        if a.startswith("@") and os.path.isfile(a[1:]):
            with open(a[1:]) as f:
                out += expanded(shlex.split(f.read()))
        else:
            out.append(a)
    return out

def own_object(i, a):
    return (a.endswith(".o") and not a.startswith("-") and i not in after_o
            and not os.path.abspath(a).startswith("/usr/"))

args = expanded(sys.argv[1:])
after_o = {{i + 1 for i, a in enumerate(args) if a in ("-o", "--output")}}
run = []
if "-r" not in args and "--relocatable" not in args:
    for i, a in enumerate(args):
        if own_object(i, a):
            run.append(i)
        elif run:
            break   # anything else (an archive, -lfoo, an option) ends the run of objects
chosen = [args[i] for i in run]
random.Random(SEED).shuffle(chosen)
for i, a in zip(run, chosen):
    args[i] = a
output = next((args[i] for i in sorted(after_o) if i < len(args)), "a.out")
with open(LOG, "a") as log:
    log.write(f"{{os.path.abspath(output)}} {{len(run)}} objects permuted\\n")
with tempfile.NamedTemporaryFile("w", suffix=".rsp", delete=False) as f:
    f.write(" ".join(shlex.quote(a) for a in args))
try:
    sys.exit(os.spawnv(os.P_WAIT, REAL, [REAL, "@" + f.name]))
finally:
    os.unlink(f.name)
"""


def write_link_order_wrappers(folder: Path, seed: int) -> list[Path]:
    """A wrapper in `folder` for each linker on PATH (ld, ld.bfd, ld.gold, ld.lld) that permutes the
    link's objects with `seed`, logs the link and runs that linker; gcc finds them through
    COMPILER_PATH=folder (layout_seed_env)."""
    found = {name: shutil.which(name) for name in LINKERS}
    if found["ld"] is None:
        raise PgolabError("no ld on PATH for a replicate's link", hint="apt-get install binutils")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, real in found.items():
        if real is None:
            continue
        wrapper = folder / name
        text = WRAPPER.format(python=sys.executable, seed=seed, real=real, log=str(folder / LINK_LOG))
        if not wrapper.exists() or wrapper.read_text() != text:
            wrapper.write_text(text)
            wrapper.chmod(0o755)
        written.append(wrapper)
    return written


def links_made(folder: Path) -> list[str]:
    """The links a replicate's wrappers made: output and how many objects they permuted."""
    log = folder / LINK_LOG
    return log.read_text().splitlines() if log.is_file() else []
