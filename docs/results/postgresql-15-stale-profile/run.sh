#!/bin/bash
# Issue 33, what a stale profile costs, on PostgreSQL 15.18: clang PGO+ThinLTO (rel_lto_pgo_use_clang)
# of the upstream tarball, trained on that tree itself (fresh), compiled with the profile trained on
# Debian's patched tree of the same release (stale: 11 Debian patches, the largest 151 lines in 5 files), and
# rel_o2nofp (no PGO) as the base; Debian's tree's own PGO build rides along as a binary. Cost mode,
# quick suite. Then the same Debian-tree profile offered to PostgreSQL 18.6 (another major release):
# its match share, its cost against 18.6's own profile and no PGO, and the refusal above the share
# applied (--min-profile-match 95). Resumable.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
H=${PGOLAB_HOME:-/var/cache/pgolab}
U=$(ls "$H"/sources/postgresql-15_15.18.orig.tar.bz2)
$P build "$S" --variant rel_lto_pgo_use_clang </dev/null
$P profile export rel_lto_pgo_use_clang --source "$S" -o $OUT/debian-tree.profile.tgz </dev/null
$P build "$U" --variant rel_o2nofp --variant rel_lto_pgo_use_clang </dev/null
$P build "$U" --variant rel_lto_pgo_use_clang --profile $OUT/debian-tree.profile.tgz --stale-profile \
  --label stale-from-debian-tree </dev/null
UT=$($P source "$U" 2>/dev/null | tail -1)
# The Debian tree's PGO build, by its record (both trees are 15.18: their build folders differ by digest).
DEB=$($P builds --json | "$(dirname "$P")/python" -c 'import json,sys; print(next(r["server_binary"] for r in json.load(sys.stdin)
  if r["label"] == "rel_lto_pgo_use_clang" and r["source"]["path"] == sys.argv[1]))' "$S")
$P builds --markdown --server postgresql-15 > $OUT/builds.md
$P bench --source "$UT" --base rel_o2nofp --variant rel_lto_pgo_use_clang --variant stale-from-debian-tree \
  --binary debian-tree-pgo="$DEB" --measure cost --suite quick --cost-jobs 2 \
  --run 'pg15-stale-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
# The second pair: the same 15.18 profile offered to PostgreSQL 18.6's tree (three major releases on),
# against 18.6 trained on itself and 18.6 without PGO, cost mode, quick suite.
S18=$($P source postgresql --version 18)
$P build "$S18" --variant rel_o2nofp --variant rel_lto_pgo_use_clang </dev/null
$P build "$S18" --variant rel_lto_pgo_use_clang --profile $OUT/debian-tree.profile.tgz --stale-profile \
  --label stale-from-15 </dev/null > $OUT/pg18-stale.txt 2>&1 || echo "exit $?" >> $OUT/pg18-stale.txt
$P bench --source "$S18" --base rel_o2nofp --variant rel_lto_pgo_use_clang --variant stale-from-15 \
  --measure cost --suite quick --cost-jobs 2 \
  --run 'pg18-stale-{binaries}' --store $OUT/results.sqlite --out $OUT/report-18 </dev/null > $OUT/report-18.txt
# Each stale build against the fresh profile's build of its tree: the runs above read with another base
# (every run of the store that has both labels, the one before the relocation fix included).
for run in $(sqlite3 $OUT/results.sqlite "SELECT name FROM runs WHERE status = 'finished' ORDER BY id"); do
  $P report "$run" --store $OUT/results.sqlite --base rel_lto_pgo_use_clang </dev/null > $OUT/vs-fresh-$run.txt
done
# The threshold: the same build asked for more of the profile than applies is refused (the compile
# is found up to date; only the check runs again).
$P build "$S18" --variant rel_lto_pgo_use_clang --profile $OUT/debian-tree.profile.tgz --stale-profile \
  --min-profile-match 95 --label stale-from-15 </dev/null > $OUT/pg18-refused.txt 2>&1 \
  && echo "not refused" >> $OUT/pg18-refused.txt || echo "exit $?" >> $OUT/pg18-refused.txt
# Every clang PGO build's profile check, the stale ones' share (absent: functions named by a file
# the tree no longer has, or a C function no longer spelled in it; see profiles/relocation.py).
"$(dirname "$P")/python" - "$H" > $OUT/profile-match.md <<'PY'
import json, sys
from pathlib import Path
print("| build | source | objects with profile | profile functions | changed | absent | share applied | names moved |\n|---|---|---|---|---|---|---|---|")
for f in sorted(Path(sys.argv[1], "builds").glob("postgresql-*/*/build.json")):
    r = json.loads(f.read_text())
    check = r.get("profile", {}).get("check-profile")
    if not check or not r["variant"].startswith("rel_lto_pgo_use_clang"):
        continue
    m = check.get("match") or {}
    moved = (r.get("profile", {}).get("profile-import") or {}).get("relocation") or {}
    print(f"| {r['label']} | {r['source']['path']} | {check['with_profile']} of {check['objects']} | "
          f"{m.get('functions', '')} | {m.get('mismatched', check.get('mismatched', ''))} | {m.get('absent', '')} | "
          f"{m.get('share', 'not stale')} | {moved.get('names', '') if moved.get('old') != moved.get('new') else ''} |")
PY
