#!/bin/bash
# Issue 34 on MariaDB 10.11.18 (Debian 12's source): rel_o2nofp against rel_lto_pgo_use_clang, both
# built with the MyRocks plugin (--engine rocksdb, which the training mix covers), and Debian's own
# mariadbd (with Debian's mariadb-plugin-rocksdb when it is installed). In the order the issue lists:
#   1. a thread sweep (1, 2, 4, 8) of the quick suite and sysbench's oltp_read_write, QPS;
#   2. InnoDB against MyRocks, quick suite at 1 thread, QPS, one run per engine;
#   3. the version-series study's INSERT ... SELECT (examples/insert-select.sql) trained with the
#      mix and trained with itself (a third build: --train script:examples/insert-select.sql), cost
#      and QPS.
# Each step is a run of its own, named after its binaries: it resumes where it stopped, and a
# rebuild on a new machine starts runs of its own.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11)
DEBIAN=/usr/sbin/mariadbd
$P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang --engine rocksdb </dev/null
$P builds --markdown --server mariadb-10.11 > $OUT/builds.md
PAIR=(--source "$S" --base rel_o2nofp+rocksdb --variant rel_lto_pgo_use_clang+rocksdb --binary debian=$DEBIAN)
OLTP_RW=/usr/share/sysbench/oltp_read_write.lua
if [ -z "${PROOF_STEPS:-}" ] || [[ " $PROOF_STEPS " == *" sweep "* ]]; then
  $P bench "${PAIR[@]}" --threads 1,2,4,8 --suite quick --micro $OLTP_RW --seconds 2 --instances 2 --blocks 2 \
    --run 'mariadb-threads-{binaries}' --store $OUT/results.sqlite --out $OUT/report-threads </dev/null \
    > $OUT/report-threads.txt
fi
if [ -z "${PROOF_STEPS:-}" ] || [[ " $PROOF_STEPS " == *" engines "* ]]; then
  for engine in innodb rocksdb; do
    $P bench "${PAIR[@]}" --engine $engine --suite quick --seconds 2 --instances 2 --blocks 2 \
      --run "mariadb-engine-$engine-{binaries}" --store $OUT/results.sqlite --out $OUT/report-$engine </dev/null \
      > $OUT/report-$engine.txt
  done
fi
if [ -z "${PROOF_STEPS:-}" ] || [[ " $PROOF_STEPS " == *" insert-select "* ]]; then
  $P build "$S" --variant rel_lto_pgo_use_clang --engine rocksdb --train script:examples/insert-select.sql \
    --label trained-insert-select </dev/null
  $P builds --markdown --server mariadb-10.11 > $OUT/builds.md
  $P bench --source "$S" --base rel_o2nofp+rocksdb --variant rel_lto_pgo_use_clang+rocksdb \
    --variant trained-insert-select+rocksdb --suite none --micro examples/insert-select.sql --measure cost,qps \
    --seconds 2 --instances 2 --blocks 4 \
    --run 'mariadb-insert-select-{binaries}' --store $OUT/results.sqlite --out $OUT/report-insert-select </dev/null \
    > $OUT/report-insert-select.txt
fi
