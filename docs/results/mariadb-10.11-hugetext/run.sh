#!/bin/bash
# Issue 35, code on huge pages on MariaDB 10.11.18: gcc PGO (rel_pgo_use, the matrix's build) against
# itself with _hugetext (the server copies its code onto 2 MiB pages as it starts; the same code,
# compiled with rel_pgo_use's profile), with Debian's mariadbd beside them. QPS only, quick suite,
# 1 thread, 2 instances of 5 paired 2-second blocks per test: cost mode simulates no TLB, and the copy
# stands aside under valgrind. Resumable: run it again.
#   bash docs/results/queue.sh mariadb-10.11-hugetext
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11.18)
$P matrix "$S" --variants rel_pgo_use,rel_pgo_use_hugetext --base rel_pgo_use --binary distro=/usr/sbin/mariadbd \
  --measure qps --suite quick --instances 2 --blocks 5 --seconds 2 --run 'mariadb-hugetext-{binaries}' \
  --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server mariadb-10.11.18 > $OUT/builds.md
# The kernel's transparent huge page settings the servers met.
{ uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; } > $OUT/kernel.txt
