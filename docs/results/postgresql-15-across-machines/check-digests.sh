#!/bin/bash
# The sha256 (first 12 digits) of each build here beside the replicates proof's (its targets.csv);
# exits 1 if a gcc build differs, so the proof measures only the binaries it claims to. The PGO build's
# line is printed and does not stop the proof: the Intel build recorded its profile folder's path in
# the binary (postgres records its compile flags; pgolab records a stand-in since 2026-11-28), so no
# build elsewhere can be that binary. SOURCE is the tree.
set -euo pipefail
cd "$(dirname "$0")/../../.."
P=${PGOLAB:-.venv/bin/pgolab}
theirs=docs/results/postgresql-15-replicates/report/targets.csv
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), cpu family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
status=0
for label in rel_o2nofp rel_o2nofp+r2 rel_o2nofp+r3 rel_lto_pgo_use_clang; do
  mine=$($P builds --json | "$(dirname "$P")/python" -c 'import json,sys,hashlib
r = next(r for r in json.load(sys.stdin) if r["label"] == sys.argv[1] and r["source"]["path"] == sys.argv[2])
print(hashlib.sha256(open(r["server_binary"], "rb").read()).hexdigest()[:12])' "$label" "$1")
  intel=$(awk -F, -v l="$label" '$1 == l {print $4}' "$theirs")
  same=same
  if [ "$mine" != "$intel" ]; then
    same=DIFFERENT
    [ "$label" = rel_lto_pgo_use_clang ] && same="DIFFERENT (recorded flags: see the README)" || status=1
  fi
  echo "$label here $mine, Intel Xeon $intel: $same"
done
exit $status
