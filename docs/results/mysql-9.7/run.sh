#!/bin/bash
# Issue 10 proof: MySQL 9.7.2 from Debian unstable, built as rel_o2nofp, rel_pgo_use, rel_lto and
# rel_lto_pgo_use_clang (wall and CPU time of each in builds.md), then the full suite at 1 thread,
# cost and QPS (MariaDB beside MySQL is the version series' run). Every step resumes when run again;
# the run is named after its binaries, so a rebuild on a new machine starts anew.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mysql --version 9.7.2)
$P build "$S" --variant rel_o2nofp </dev/null
mysql_server_tests 9.7.2
for v in rel_pgo_use rel_lto rel_lto_pgo_use_clang; do
  $P build "$S" --variant "$v" </dev/null
done
$P builds --markdown --server mysql-9.7.2 > $OUT/builds.md
$P bench --source "$S" --base rel_o2nofp --variant rel_lto --variant rel_pgo_use --variant rel_lto_pgo_use_clang \
  --suite full --measure cost,qps --instances 2 --blocks 4 --seconds 3 \
  --run 'mysql-9.7-full-{binaries}' --store $OUT/results.sqlite --out $OUT/report > $OUT/report.txt
