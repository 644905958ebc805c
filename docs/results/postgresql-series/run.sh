#!/bin/bash
# Issue 10's question, on the server that builds in minutes here: is the newer version slower at equal
# optimization, and how much of the gap does optimization close? PostgreSQL 15.18 (Debian 12) and 18.6
# (Debian unstable; trixie's 17.12 answers 404 since 2026-11-25), each as rel_o2nofp and
# rel_lto_pgo_use_clang, in one stored run (base: 15's rel_o2nofp), cost mode on the full suite: the
# part of the version series that fits one session on a new machine. PROOF_STEPS=build or bench runs one
# step: the builds may share the machine with another proof's builds, the benchmark should not share it
# with a QPS run. Resumable; the run is named after its binaries, so a rebuild starts anew.
. "$(dirname "$0")/../proof-env.sh"
proof_steps build bench
S15=$($P source postgresql --version 15.18)
S18=$($P source postgresql --version 18.6)
if [[ $STEPS == *" build "* ]]; then
  for S in "$S15" "$S18"; do
    $P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang </dev/null
  done
fi
if [[ $STEPS == *" bench "* ]]; then
  $P matrix "$S15" "$S18" --variants rel_o2nofp,rel_lto_pgo_use_clang --base rel_o2nofp --measure cost \
    --suite full --run 'pg-series-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
  $P builds --markdown --server postgresql > $OUT/builds.md
fi
