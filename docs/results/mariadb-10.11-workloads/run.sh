#!/bin/bash
# Issue 34 on MariaDB 10.11.18 (Debian 12's source): rel_o2nofp against rel_lto_pgo_use_clang, and
# Debian's own mariadbd. In the order the issue lists, each step a run of its own, named after its
# binaries (it resumes where it stopped; a rebuild on a new machine starts runs of its own):
#   sweep:         a thread sweep (1, 2, 4, 8) of the quick suite and sysbench's oltp_read_write, QPS;
#   insert-select: the version-series study's INSERT ... SELECT (examples/insert-select.sql) trained
#                  with the mix and trained with itself (a third build: --train script:...), cost and QPS;
#   engines:       InnoDB against MyRocks, quick suite at 1 thread, QPS, one run per engine, on the two
#                  builds made again with the MyRocks plugin (--engine rocksdb: the training covers it),
#                  and Debian's mariadbd with Debian's mariadb-plugin-rocksdb.
# The MyRocks builds come last: with the plugin a build has 1,236 steps against 902 for the server
# alone (builds.md has their times), so the steps without it do not wait for them.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11)
DEBIAN=(--binary debian=/usr/sbin/mariadbd)
OLTP_RW=/usr/share/sysbench/oltp_read_write.lua
step() { [ -z "${PROOF_STEPS:-}" ] || [[ " $PROOF_STEPS " == *" $1 "* ]]; }
builds_md() { $P builds --markdown --server mariadb-10.11 > $OUT/builds.md; }
$P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang </dev/null
builds_md
if step sweep; then
  $P bench --source "$S" --base rel_o2nofp --variant rel_lto_pgo_use_clang "${DEBIAN[@]}" --threads 1,2,4,8 \
    --suite quick --micro $OLTP_RW --seconds 2 --instances 2 --blocks 2 \
    --run 'mariadb-threads-{binaries}' --store $OUT/results.sqlite --out $OUT/report-threads </dev/null \
    > $OUT/report-threads.txt
  python3 "$PROOF_DIR/server-cpu-share.py" $OUT/results.sqlite > $OUT/server-cpu-share.txt
fi
if step insert-select; then
  $P build "$S" --variant rel_lto_pgo_use_clang --train script:examples/insert-select.sql \
    --label trained-insert-select </dev/null
  builds_md
  $P bench --source "$S" --base rel_o2nofp --variant rel_lto_pgo_use_clang --variant trained-insert-select \
    --suite none --micro examples/insert-select.sql --measure cost,qps --seconds 2 --instances 2 --blocks 4 \
    --run 'mariadb-insert-select-{binaries}' --store $OUT/results.sqlite --out $OUT/report-insert-select \
    </dev/null > $OUT/report-insert-select.txt
  # The build trained with the statement itself against the one trained with the mix.
  run=$(sqlite3 $OUT/results.sqlite "SELECT name FROM runs WHERE name LIKE 'mariadb-insert-select-%' ORDER BY id DESC LIMIT 1")
  $P report "$run" --store $OUT/results.sqlite --base rel_lto_pgo_use_clang </dev/null > $OUT/insert-select-self-vs-mix.txt
  # What training with one statement costs everywhere else: the quick suite, cost mode.
  $P bench --source "$S" --base rel_lto_pgo_use_clang --variant trained-insert-select --variant rel_o2nofp \
    --suite quick --measure cost --cost-jobs 2 \
    --run 'mariadb-insert-select-elsewhere-{binaries}' --store $OUT/results.sqlite \
    --out $OUT/report-insert-select-elsewhere </dev/null > $OUT/report-insert-select-elsewhere.txt
fi
if step engines; then
  $P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang --engine rocksdb </dev/null
  builds_md
  for engine in innodb rocksdb; do
    $P bench --source "$S" --base rel_o2nofp+rocksdb --variant rel_lto_pgo_use_clang+rocksdb "${DEBIAN[@]}" \
      --engine $engine --suite quick --seconds 2 --instances 2 --blocks 2 \
      --run "mariadb-engine-$engine-{binaries}" --store $OUT/results.sqlite --out $OUT/report-$engine </dev/null \
      > $OUT/report-$engine.txt
  done
  python3 "$PROOF_DIR/engines-side-by-side.py" $OUT > $OUT/engines-side-by-side.txt
fi
# What each training ran (its log's statement and event counts, the mix's engine coverage), and the
# Debian packages of the server and the plugin Debian's mariadbd loaded.
D=$(dirname "$(ls -d "${PGOLAB_HOME:-/var/cache/pgolab}"/builds/mariadb-10.11.18-*/rel_o2nofp | head -1)")
for label in rel_lto_pgo_use_clang trained-insert-select rel_lto_pgo_use_clang+rocksdb; do
  [ -f "$D/$label/logs/train.log" ] || continue
  grep -h "training mix on\|coverage:\|total number of events" "$D/$label/logs/train.log" | sed "s/^/$label: /"
done > $OUT/trainings.txt
dpkg-query -W mariadb-server-core mariadb-plugin-rocksdb > $OUT/debian-packages.txt
