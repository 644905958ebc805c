#!/bin/bash
# Issue 32, build-to-build variation on MariaDB 10.11.18 (Debian 12's tree): rel_o2nofp (gcc -O2),
# rel_pgo_use (gcc PGO) and rel_lto_pgo_use_clang (clang PGO+ThinLTO), two replicates each
# (`--replicates 2`: replicate 2 trains with seed 2 and links with layout seed 2; replicate 1 is the
# usual build), and Debian's mariadbd. A replicate is a build of its own (PostgreSQL's -O2 replicates
# took the same CPU minutes as replicate 1: ../postgresql-15-replicates/builds.md).
# PROOF_STEPS picks the steps (default: all, in this order), each sized for one session:
#   clang  the two -O2 builds and the clang PGO pair (one instrumented build, two trainings, two
#          optimized compiles): 2026-11-28, 02:02-03:20 beside other work
#   gcc    the gcc PGO pair (the -O2 builds are shared)
#   cost, qps  ../replicates-measure.sh over all seven binaries (QPS: the machine to itself)
# Each measurement run is one base for every variant, so the report's build replicates table gives
# each variant's figure over its builds beside replicate 1. Resumable; a rebuild (new machine)
# starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
proof_steps clang gcc cost qps
S=$($P source mariadb --version 10.11)
TARGETS=(--base rel_o2nofp --variant rel_pgo_use --variant rel_lto_pgo_use_clang --replicates 2 --source "$S"
         --binary distro=/usr/sbin/mariadbd)
[[ $STEPS == *" clang "* ]] && $P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang --replicates 2 </dev/null
[[ $STEPS == *" gcc "* ]] && $P build "$S" --variant rel_o2nofp --variant rel_pgo_use --replicates 2 </dev/null
[[ $STEPS == *" clang "* || $STEPS == *" gcc "* ]] && $P builds --markdown --server mariadb-10.11 > "$OUT/builds.md"
RUN=mariadb-replicates
. "$PROOF_DIR/../replicates-measure.sh"
# The first clang piece (2026-11-28, at an earlier version of this script) measured its five binaries
# in one run, cost and QPS on the quick suite: report-rel_lto_pgo_use_clang*, run
# mariadb-replicates-rel_lto_pgo_use_clang-bfda8053. Its QPS half ran beside a CI run (README).
