#!/bin/bash
# Issue 10 proof: a version series at equal optimization. MariaDB 10.11.18 (Debian 12), MariaDB 11.8.6
# (Debian 13) and MySQL 9.7.2 (Debian unstable), each as rel_o2nofp and rel_lto_pgo_use_clang, in one
# stored run (labels <server>-<version>:<variant>; base: MariaDB 10.11.18's rel_o2nofp). Resumable; the run
# is named after its binaries, so a rebuild on a new machine starts anew.
. "$(dirname "$0")/../proof-env.sh"
$P matrix mariadb=10.11.18 mariadb=11.8.6 mysql=9.7.2 --variants rel_o2nofp,rel_lto_pgo_use_clang \
  --base rel_o2nofp --suite full --measure cost,qps --instances 2 --blocks 4 --seconds 3 \
  --run 'version-series-{binaries}' --store $OUT/results.sqlite --out $OUT/report > $OUT/report.txt
