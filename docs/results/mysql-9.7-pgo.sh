#!/bin/bash
# Issue 31, one MySQL 9.7.2 PGO build against rel_o2nofp, in pieces that each fit one 3-hour session
# on a new machine. Sourced by a proof's run.sh after proof-env.sh and after it sets VARIANT (the PGO
# build) and RUN (the stored run's name, before -{binaries}). Each build's wall and CPU time, the lifecycle and
# training-mix tests on the first mysqld, then one stored run on the full suite at 1 thread: cost
# first (a quarter of the events, two servers at once), then QPS (2 instances of 3 paired 1-second
# blocks per test), as mysql-9.7-lto.
# Piece 1 trains: the instrumented build, the training and the PGO build, whose profile is exported
# into the proof's folder (and committed). Piece 2, on any machine, compiles the PGO build from that
# file (no instrumented build, no training), builds rel_o2nofp and measures. Resumable: run it again
# after an interrupt; a rebuild (new machine) starts a run of its own.
S=$($P source mysql --version 9.7.2)
PROFILE=$OUT/mysql-9.7.2-$VARIANT.profile.tar.gz
TRAINED_HERE=${PGOLAB_HOME:-/var/cache/pgolab}/$(basename "$OUT").trained-here
if [ -f "$PROFILE" ] && [ ! -f "$TRAINED_HERE" ]; then
  $P build "$S" --variant $VARIANT --profile "$PROFILE" </dev/null
else
  # The profile first (instrumented build and training), written here to be committed before the
  # optimized compile, which then continues from the same training on this machine.
  [ -f "$PROFILE" ] || $P profile make "$S" --variant $VARIANT --out "$PROFILE" </dev/null
  touch "$TRAINED_HERE"
  $P build "$S" --variant $VARIANT </dev/null
fi
$P build "$S" --variant rel_o2nofp </dev/null
mysql_server_tests 9.7.2
$P bench --base rel_o2nofp --variant $VARIANT --source "$S" --measure cost,qps --suite full \
  --instances 2 --blocks 3 --seconds 1 --cost-jobs 2 --cost-scale 0.25 \
  --run "$RUN-{binaries}" --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server mysql-9.7.2 > $OUT/builds.md
