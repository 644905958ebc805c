#!/bin/bash
# Issue 9 proof: PostgreSQL 15, the 20 published variants plus the BOLT twin of every PGO variant.
# Two stored runs over the same builds: cost mode (deterministic) on the full suite, then QPS on the
# quick suite (24 targets x 41 tests in QPS would take about 11 hours here; cost mode is the figure
# that resolves small effects). Resumable: run it again after an interrupt. Each run is named after its
# binaries ({binaries}): the same builds continue it, a rebuild on a new machine starts a new one. The wall
# time of each invocation is in cost/ and qps/ (matrix-timing.jsonl). PROOF_STEPS=cost or qps runs one.
. "$(dirname "$0")/../proof-env.sh"
proof_steps cost qps   # the queue runs cost first and QPS after the other issues' proofs
if [[ $STEPS == *" cost "* ]]; then
  $P matrix postgresql=15 --variants published --bolt --base rel_o2nofp --measure cost --suite full \
    --run 'pg15-matrix-cost-{binaries}' --store $OUT/results.sqlite --out $OUT/cost </dev/null > $OUT/cost.txt
  $P builds --markdown --server postgresql-15 > $OUT/builds.md
fi
if [[ $STEPS == *" qps "* ]]; then
  $P matrix postgresql=15 --variants published --bolt --base rel_o2nofp --measure qps --suite quick \
    --instances 2 --blocks 4 --seconds 2 \
    --run 'pg15-matrix-qps-{binaries}' --store $OUT/results.sqlite --out $OUT/qps </dev/null > $OUT/qps.txt
  $P builds --markdown --server postgresql-15 > $OUT/builds.md
fi
