#!/bin/bash
# Issue 35, the link and runtime axes on PostgreSQL 15 (Debian 12's 15.18 tree), which no earlier run
# measured: clang PGO+ThinLTO (LLVM 16) rel_lto_pgo_use_clang as the base, against itself with one axis
# added: _noplt (-fno-plt), _nosi (-fno-semantic-interposition), _static (static libstdc++ and
# libgcc), the allocator, _tcmalloc and _mimalloc (Debian's packages; jemalloc's cost was measured
# in ../postgresql-15-best), and _hugetext (the code copied onto 2 MiB pages at start-up; cost mode
# cannot see it: it stands aside under valgrind, which simulates no TLB). One stored run, quick suite, 1 thread: cost with all the events, then QPS
# (2 instances of 3 paired 2-second blocks per test). The report pairs each build with its twin on the
# axis it adds. _noplt and _nosi change the instrumented code, so each has its own instrumented build
# and training; _static, the allocators and _hugetext compile with the base's profile (the committed
# run, made before that change, trained the base's instrumented build again for _static and the
# allocators: run again, they are other binaries, in a run of their own). Resumable: run
# it again; a rebuild (new machine) starts a run of its own.
#   bash docs/results/queue.sh postgresql-15-link-axes
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
B=rel_lto_pgo_use_clang
VARIANTS=$B,${B}_noplt,${B}_nosi,${B}_static,${B}_tcmalloc,${B}_mimalloc,${B}_hugetext
$P matrix "$S" --variants $VARIANTS --base $B --measure cost,qps --suite quick --cost-jobs 2 \
  --seconds 2 --instances 2 --blocks 3 --run 'pg15-link-axes-{binaries}' \
  --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server postgresql-15 > $OUT/builds.md
# What each axis left in the binaries: PLT entries, the allocator and C++ runtime they load.
for v in ${VARIANTS//,/ }; do
  bin=$(ls -d "${PGOLAB_HOME:-/var/cache/pgolab}"/builds/postgresql-15.18-*/$v/final/install/bin/postgres | head -1)
  echo "## $v"
  readelf -SW "$bin" | grep -E ' \.plt(\.got|\.sec)? ' || echo "no .plt section"
  readelf -dW "$bin" | grep NEEDED
done > $OUT/linkage.txt
