#!/bin/bash
# Issue 31, the MySQL PGO proof in pieces that each fit one 3-hour session on a new machine:
# MySQL 9.7.2 as rel_lto_pgo_use_clang (clang-16 PGO with MySQL's own WITH_LTO, which is full LTO with clang:
# -flto, one link thread; the published table's best build:
# 1.77x on 8.0.28) and rel_o2nofp, each build's wall and CPU time, the lifecycle and training-mix
# tests on the first mysqld, then one stored run on the full suite at 1 thread: cost first (a quarter
# of the events, two servers at once), then QPS (2 instances of 3 paired 1-second blocks per test),
# as mysql-9.7-lto.
# Piece 1 trains: the instrumented build, the training and the PGO build, whose profile is exported
# into this folder (and committed). Piece 2, on any machine, compiles the PGO build from that file
# (no instrumented build, no training), builds rel_o2nofp and measures. Resumable: run it again after
# an interrupt; a rebuild (new machine) starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mysql --version 9.7.2)
PROFILE=$OUT/mysql-9.7.2-rel_lto_pgo_use_clang.profile.tar.gz
TRAINED_HERE=${PGOLAB_HOME:-/var/cache/pgolab}/mysql-9.7-pgo-clang.trained-here
if [ -f "$PROFILE" ] && [ ! -f "$TRAINED_HERE" ]; then
  $P build "$S" --variant rel_lto_pgo_use_clang --profile "$PROFILE" </dev/null
else
  # The profile first (instrumented build and training), written here to be committed before the
  # optimized compile, which then continues from the same training on this machine.
  [ -f "$PROFILE" ] || $P profile make "$S" --variant rel_lto_pgo_use_clang --out "$PROFILE" </dev/null
  touch "$TRAINED_HERE"
  $P build "$S" --variant rel_lto_pgo_use_clang </dev/null
fi
$P build "$S" --variant rel_o2nofp </dev/null
mysql_server_tests 9.7.2
$P bench --base rel_o2nofp --variant rel_lto_pgo_use_clang --source "$S" --measure cost,qps --suite full \
  --instances 2 --blocks 3 --seconds 1 --cost-jobs 2 --cost-scale 0.25 \
  --run 'mysql-pgo-clang-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server mysql-9.7.2 > $OUT/builds.md
