#!/bin/bash
# Cost-mode checks of 2026-11-23 (README.md here): --cost-jobs 1 against 2, and PostgreSQL's
# loaded data vacuumed or not. Each bench is an A/A pair: the same Debian binary twice.
# Runs 1-6 were made at commit e78e1c7 (before the vacuum), run 7 at a3d0da1 (with it); all
# with MariaDB builds compiling on both cores beside them (cost counts do not depend on load,
# wall times do).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=docs/results/cost-mode-checks
P=.venv/bin/pgolab
aa() {   # aa RUN BINARY SCALE JOBS
  /usr/bin/time -f "$1: %e s wall" $P bench --base a --binary a="$2" --binary b="$2" --suite quick --measure cost \
    --cost-scale "$3" --table-size 10000 --cost-jobs "$4" --run "$1" --store $OUT/results.sqlite > "$OUT/$1.txt"
}
M=/usr/sbin/mariadbd
PG=/usr/lib/postgresql/15/bin/postgres
aa jobs-1 $M 0.25 1
aa jobs-2 $M 0.25 2
aa pg-jobs-1 $PG 0.25 1
aa pg-jobs-2 $PG 0.25 2
aa pg1-jobs-2 $PG 1 2
aa pg1-jobs-1 $PG 1 1
aa pg-vac-jobs-2 $PG 1 2      # at a3d0da1: PostgreSQL's golden data vacuumed and analysed once
