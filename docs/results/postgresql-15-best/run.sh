#!/bin/bash
# Issue 35, `pgolab best` on PostgreSQL 15: from the published best build (rel_lto_pgo_use_clang),
# one axis at a time among -march=native, LLVM 19, jemalloc and
# BOLT, cost mode on the quick suite at 1 thread; the winner and the runner-up confirmed in QPS (2
# instances of 3 paired 2-second blocks per test) against the start and Debian's postgres. The
# other axes are left out to fit one session (each adds a build, most a PGO cycle, per round).
# Resumable: each round is a stored matrix run named after its binaries.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
BEST=($P best "$S" --axes native,clang19,jemalloc,bolt --suite quick --cost-jobs 2
      --seconds 2 --instances 2 --blocks 3 --binary distro=/usr/lib/postgresql/15/bin/postgres
      --run pg15-best --store $OUT/results.sqlite --out $OUT/report)
# The rounds (builds and cost) beside a background build; then, with it paused (queue.sh --pause:
# QPS pins the server to one CPU and sysbench to the other), the same command: the rounds are read
# back from the store and the QPS confirmation runs.
"${BEST[@]}" --no-confirm </dev/null > $OUT/rounds.txt
"${BEST[@]}" </dev/null > $OUT/report.txt
$P builds --markdown --server postgresql-15 > $OUT/builds.md
