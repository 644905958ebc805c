#!/bin/bash
# Issue 9 proof: MariaDB 10.11.18, the 20 published variants plus rel_pgo_use_bolt and
# rel_lto_pgo_use_clang_bolt, and Debian's mariadbd: cost mode on the full suite, then QPS on the
# quick suite (two stored runs; the builds are shared, the second matrix finds them up to date).
# Many hours of building on 2 cores: run it in the background and again after any interrupt. Each run is
# named after its binaries, so a rebuild on a new machine starts anew; each report folder has the wall times.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11.18)
V=$($P variants --json | python3 -c 'import json,sys; print(",".join(v["name"] for v in json.load(sys.stdin)))')
V="$V,rel_pgo_use_bolt,rel_lto_pgo_use_clang_bolt"
# A quarter of the events: MariaDB's read-only A/A pairs still agreed within 0.04 % (instructions) and
# 0.17 % (I1 misses) at that scale (../mariadb-10.11-measurement/README.md), and 23 targets x 41
# tests at full scale would take about 9 hours of callgrind here even with two at once.
$P matrix "$S" --variants "$V" --base rel_o2nofp --binary distro=/usr/sbin/mariadbd --measure cost --cost-scale 0.25 \
  --suite full --run 'mariadb-matrix-cost-{binaries}' --store $OUT/results.sqlite --out $OUT/cost > $OUT/cost.txt
$P matrix "$S" --variants "$V" --base rel_o2nofp --binary distro=/usr/sbin/mariadbd --measure qps \
  --suite quick --instances 2 --blocks 4 --seconds 2 \
  --run 'mariadb-matrix-qps-{binaries}' --store $OUT/results.sqlite --out $OUT/qps > $OUT/qps.txt
$P builds --markdown --server mariadb-10.11.18 > $OUT/builds.md
