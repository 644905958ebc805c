#!/bin/bash
# Issue 34, the thread sweep and the user's own statement on one session's machine: PostgreSQL 15
# rel_o2nofp against rel_lto_pgo_use_clang at 1, 2, 4 and 8 sysbench threads, the quick suite and
# the version-series study's INSERT ... SELECT (examples/insert-select.sql) as a microbenchmark of
# its own, QPS: 2 instances of 2 paired 2-second blocks per test and count. Resumable; the run is
# named after its binaries (a rebuild on a new machine starts a run of its own).
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
$P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang </dev/null
$P builds --markdown --server postgresql-15 > $OUT/builds.md
$P bench --source "$S" --base rel_o2nofp --variant rel_lto_pgo_use_clang --threads 1,2,4,8 --suite quick \
  --micro examples/insert-select.sql --seconds 2 --instances 2 --blocks 2 \
  --run 'pg15-threads-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
# pgbench's built-in scripts on the same builds, a run of its own (added after the run above).
$P bench --source "$S" --base rel_o2nofp --variant rel_lto_pgo_use_clang --threads 1,2,4,8 --suite pgbench \
  --seconds 2 --instances 2 --blocks 2 \
  --run 'pg15-pgbench-{binaries}' --store $OUT/results.sqlite --out $OUT/report-pgbench </dev/null > $OUT/report-pgbench.txt
