#!/bin/bash
# Issue 9 proof: PostgreSQL 15, the 20 published variants plus the BOLT twin of every PGO variant,
# cost mode (deterministic) and QPS on the full suite, one stored run. Resumable: run it again after
# an interrupt. The wall time of each invocation is appended to
# $PGOLAB_HOME/runs/<run>/matrix-timing.jsonl and copied here at the end.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=docs/results/postgresql-15-matrix
P=.venv/bin/pgolab
bash scripts/setup.sh
$P matrix postgresql --variants published --bolt --base rel_o2nofp --measure cost,qps --suite full \
  --instances 2 --blocks 4 --seconds 2 --run pg15-matrix --store $OUT/results.sqlite --out $OUT/report \
  > $OUT/report.txt
cp "${PGOLAB_HOME:-/var/cache/pgolab}/runs/pg15-matrix/matrix-timing.jsonl" $OUT/
$P builds --markdown > $OUT/builds.md
