#!/bin/bash
# The exact commands of this proof run, in the order they ran (2026-11-22, the 2-core Debian 12
# machine described in ../README.md). Each `pgolab build` resumes or says "up to date" if re-run.
set -euo pipefail
cd "$(dirname "$0")/../../.."
bash scripts/setup.sh
S=$(.venv/bin/pgolab source mariadb --version 10.11.18)   # = /var/cache/pgolab/sources/mariadb_10.11.18

# Issue 2: the four builds (each ends with a smoke test: start, SELECT VERSION(), clean stop).
for v in rel_o2nofp rel_pgo_use rel_lto_pgo_use_clang rel_lto; do
  .venv/bin/pgolab build "$S" --variant "$v"
done

# Issue 4: the same gcc PGO variant trained two more ways; the instrumented build is shared.
.venv/bin/pgolab build "$S" --variant rel_pgo_use --label pgo-sysbench --train sysbench
.venv/bin/pgolab build "$S" --variant rel_pgo_use --label pgo-noselect --train mix-noselect
.venv/bin/pgolab profile-check "$S" --variant rel_pgo_use --suite full --seconds 2
.venv/bin/pgolab profile-check "$S" --variant rel_pgo_use --label pgo-sysbench --train sysbench --suite full --seconds 2
.venv/bin/pgolab profile-check "$S" --variant rel_pgo_use --label pgo-noselect --train mix-noselect --suite full --seconds 2

# Issues 3 and 4: one interleaved benchmark run of every binary, full suite, 1 thread.
.venv/bin/pgolab bench --base rel_o2nofp --binary distro=/usr/sbin/mariadbd \
  --variant rel_pgo_use --variant pgo-sysbench --variant pgo-noselect \
  --variant rel_lto_pgo_use_clang --variant rel_lto \
  --suite full --rounds 3 --seconds 3 --threads 1 \
  --run mariadb-10.11-full-1thread --store docs/results/mariadb-10.11/results.sqlite \
  --out docs/results/mariadb-10.11/bench
# Re-exported from the store after per-group intervals were added to the report:
.venv/bin/pgolab report mariadb-10.11-full-1thread --store docs/results/mariadb-10.11/results.sqlite \
  --out docs/results/mariadb-10.11/bench

# The build table (wall and CPU minutes of every build) and each build's record.
.venv/bin/pgolab builds --markdown > docs/results/mariadb-10.11/builds.md
for b in rel_o2nofp rel_lto rel_pgo_use pgo-sysbench pgo-noselect rel_lto_pgo_use_clang; do
  cp /var/cache/pgolab/builds/mariadb-10.11.18-*/$b/build.json docs/results/mariadb-10.11/build-records/$b.json
  cp /var/cache/pgolab/builds/mariadb-10.11.18-*/$b/logs/smoke.log docs/results/mariadb-10.11/build-records/$b.smoke.log
done
