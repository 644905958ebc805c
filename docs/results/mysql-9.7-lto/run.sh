#!/bin/bash
# Issue 10, the part of the MySQL proof that fits one working session on a new machine: MySQL 9.7.2
# as rel_o2nofp and rel_lto (the MySQL 8.0.28 table's first axis: LTO 1.06), each build's wall and
# CPU time, the lifecycle and training-mix tests on the first mysqld, then one stored run on the
# full suite at 1 thread: cost first (deterministic; a quarter of the events, two servers at once,
# as the MariaDB proofs), then QPS (2 instances of 3 paired 1-second blocks per test).
# Resumable: run it again after an interrupt; a rebuild (new machine) starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mysql --version 9.7.2)
$P build "$S" --variant rel_o2nofp </dev/null
mysql_server_tests 9.7.2
$P matrix "$S" --variants rel_o2nofp,rel_lto --base rel_o2nofp --measure cost,qps --suite full \
  --instances 2 --blocks 3 --seconds 1 --cost-jobs 2 --cost-scale 0.25 \
  --run 'mysql-lto-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server mysql-9.7.2 > $OUT/builds.md
