#!/bin/bash
# Issue 31, one 3-hour piece of the MySQL PGO proof: MySQL 9.7.2 as rel_o2nofp and
# rel_lto_pgo_use_clang (clang-16 PGO with ThinLTO, the published table's best build: 1.77x on
# 8.0.28), each build's wall and CPU time, the lifecycle and training-mix tests on the first mysqld,
# then one stored run on the full suite at 1 thread: cost first (a quarter of the events, two
# servers at once), then QPS (2 instances of 3 paired 1-second blocks per test), as mysql-9.7-lto.
# Resumable: run it again after an interrupt; a rebuild (new machine) starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mysql --version 9.7.2)
$P build "$S" --variant rel_o2nofp </dev/null
mysql_server_tests 9.7.2
$P matrix "$S" --variants rel_o2nofp,rel_lto_pgo_use_clang --base rel_o2nofp --measure cost,qps --suite full \
  --instances 2 --blocks 3 --seconds 1 --cost-jobs 2 --cost-scale 0.25 \
  --run 'mysql-pgo-clang-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server mysql-9.7.2 > $OUT/builds.md
