#!/bin/bash
# The sha256 (first 12 digits) of each build here beside the replicates proof's (its targets.csv);
# exits 1 if any differs, so the proof measures only the binaries it claims to. SOURCE is the tree.
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
  same=same; [ "$mine" = "$intel" ] || { same=DIFFERENT; status=1; }
  echo "$label here $mine, Intel Xeon $intel: $same"
done
exit $status
