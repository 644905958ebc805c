#!/bin/bash
# Issue 35, the newer toolchain axis on PostgreSQL 15: clang PGO+ThinLTO of LLVM 19 (`_clang19`)
# against the same build of LLVM 16 (`_clang`), BOLT 19 on top of it (`_clang19_bolt`, functions
# ordered by cdsort), and rel_o2nofp as the base. Cost and QPS on the quick suite at 1 thread;
# QPS: 2 instances of 3 paired 2-second blocks per test. Resumable; the run is named after its
# binaries (a rebuild on a new machine starts a run of its own).
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
V=rel_o2nofp,rel_lto_pgo_use_clang,rel_lto_pgo_use_clang19,rel_lto_pgo_use_clang19_bolt
$P build "$S" $(printf -- '--variant %s ' ${V//,/ }) </dev/null
$P builds --markdown --server postgresql-15 > $OUT/builds.md
# QPS pins the server to one CPU and sysbench to the other: the queue's background build is paused
# for this step (queue.sh --pause) when one is running.
$P matrix "$S" --variants $V --base rel_o2nofp --measure cost,qps --suite quick \
  --instances 2 --blocks 3 --seconds 2 --cost-jobs 2 \
  --run 'pg15-llvm19-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
