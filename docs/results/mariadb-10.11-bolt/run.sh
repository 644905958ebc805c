#!/bin/bash
# Issue 9, the part of the MariaDB matrix that fits one working session on a new machine: BOLT on the
# best build, rel_lto_pgo_use_clang, against its twin without BOLT and against Debian's mariadbd (the
# base, so every ratio reads as a gain over the packaged server). One stored run, both measures on the
# full suite: QPS first (2 instances of 3 paired 1-second blocks per test, as the measurement proof's
# full-both-2), then cost at a quarter of the events (as the MariaDB matrix; two callgrind'd servers at
# once). The per-axis table reads each _bolt build against its twin from the same paired blocks.
# Resumable: run it again after an interrupt; a rebuild (new machine) starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11.18)
$P matrix "$S" --variants rel_lto_pgo_use_clang,rel_lto_pgo_use_clang_bolt --base distro \
  --binary distro=/usr/sbin/mariadbd --measure qps,cost --suite full \
  --instances 2 --blocks 3 --seconds 1 --cost-jobs 2 --cost-scale 0.25 \
  --run 'mariadb-bolt-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server mariadb-10.11.18 > $OUT/builds.md
