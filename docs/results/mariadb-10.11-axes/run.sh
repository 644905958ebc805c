#!/bin/bash
# Issue 35: every axis's effect on MariaDB 10.11 in one table, both measures (`pgolab axes`), from
# every committed MariaDB run that holds a build and its twin without one axis, each read as its own
# report reads it. Reads committed stores and run files only; measures nothing. Run it again as the
# matrix's shards (../mariadb-10.11-matrix/shardK-*.run.gz) and issue 35's MariaDB proofs land.
#   bash docs/results/mariadb-10.11-axes/run.sh
. "$(dirname "$0")/../proof-env.sh"
# Left out: runs whose builds are never one axis apart (the full-suite proofs of rel_o2nofp, rel_lto,
# rel_pgo_use and clang PGO+LTO; replicates; workloads; the .deb).
PIECES=(mariadb-10.11-bolt/results:mariadb-bolt-870196ce
        mariadb-10.11-bolt-replicates/results:mariadb-bolt-replicates-cost-26cff411
        mariadb-10.11-bolt-replicates/results:mariadb-bolt-replicates-qps-26cff411
        mariadb-10.11-hugetext/results:mariadb-hugetext-00960e14)
for f in docs/results/mariadb-10.11-matrix/shard[0-9]*-*.run.gz docs/results/mariadb-10.11-layout/*.run.gz; do
  [ -f "$f" ] && PIECES+=("$f")
done
axes_table "${PIECES[@]}"
