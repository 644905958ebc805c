#!/bin/bash
# Where the cost of a write test differs between two servers of one binary (issue 30's write-test
# spread across machines, 6-17 %): an A/A cost run of pgolab's rel_o2nofp build of MariaDB 10.11.18
# (symbols, unlike Debian's stripped mariadbd), quick suite, a quarter of the events, then
# functions.py on each write-test repeat's two dumps. Debian's mariadbd A/A with and without
# --innodb-sync-spin-loops=0, twice each, for the per-test ratios.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11)
$P build "$S" --variant rel_o2nofp </dev/null >/dev/null
B=$(ls -d "${PGOLAB_HOME:-/var/cache/pgolab}"/builds/mariadb-10.11.18-*/rel_o2nofp/final/install/bin/mariadbd | head -1)
aa() {   # RUN BINARY [server option]
  $P bench --base a --binary a="$2" --binary b="$2" --measure cost --suite quick --cost-jobs 2 --cost-scale 0.25 \
    ${3:+--server-option=$3} --run "$1" --store "$OUT/results.sqlite" --out "$OUT/report-$1" </dev/null > "$OUT/report-$1.txt"
}
aa aa-rel_o2nofp "$B"
for r in 1 2; do
  aa aa-debian-default-$r /usr/sbin/mariadbd
  aa aa-debian-spin0-$r /usr/sbin/mariadbd --innodb-sync-spin-loops=0
done
# The dumps: one per repeat, numbered in the suite's order (6-8 update-index, 9-11 write-only).
D=${PGOLAB_HOME:-/var/cache/pgolab}/runs/aa-rel_o2nofp/callgrind
for n in 6 7 8 9 10 11; do
  echo "== dump $n"
  python3 "$(dirname "$0")/functions.py" "$(ls "$D"/a/callgrind.out.*."$n")" "$(ls "$D"/b/callgrind.out.*."$n")" 12
done > "$OUT/functions.txt"
