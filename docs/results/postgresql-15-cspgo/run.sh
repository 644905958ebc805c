#!/bin/bash
# Issue 35's last axis not measured on PostgreSQL 15 (Debian 12's 15.18 tree): clang context-sensitive
# PGO (_cs: a second instrumented build, compiled with the first profile, trained again, both profiles
# merged), added to clang PGO+ThinLTO (LLVM 16) rel_lto_pgo_use_clang. Beside it, jemalloc's QPS, the
# one link axis measured on PostgreSQL in cost alone (../postgresql-15-best): rel_lto_pgo_use_clang_jemalloc
# compiles with the base's profile, so that pair differs in the link alone. One stored run, quick suite,
# 1 thread, the options of ../postgresql-15-link-axes: cost with all the events, then QPS (2 instances
# of 3 paired 2-second blocks per test). Resumable: run it again; a rebuild (new machine) starts a run
# of its own.
#   bash docs/results/queue.sh postgresql-15-cspgo
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
B=rel_lto_pgo_use_clang
VARIANTS=$B,rel_lto_pgo_use_cs_clang,${B}_jemalloc
$P matrix "$S" --variants $VARIANTS --base $B --measure cost,qps --suite quick --cost-jobs 2 \
  --seconds 2 --instances 2 --blocks 3 --run 'pg15-cspgo-{binaries}' \
  --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server postgresql-15 > $OUT/builds.md
