#!/bin/bash
# Issue 35, the profile-driven code layout axes on PostgreSQL 15 (Debian 12's 15.18 tree): LLVM 19's
# clang PGO+ThinLTO build rel_lto_pgo_use_clang19 as the base, against itself with each layout axis
# added: _split (-fsplit-machine-functions), _hotcold (lld -z keep-text-section-prefix), both, _bolt,
# and _bolt_hugify (BOLT's hot text on huge pages). (_order is refused for PostgreSQL: README.) One stored run, quick suite, 1 thread:
# cost with all the events, then QPS (2 instances of 3 paired 2-second blocks per test). The report
# pairs each build with its twin on the axis it adds. Resumable: run it again; a rebuild (new
# machine) starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
B=rel_lto_pgo_use_clang19
VARIANTS=$B,rel_lto_pgo_use_split_clang19,rel_lto_pgo_use_hotcold_clang19,rel_lto_pgo_use_split_hotcold_clang19
VARIANTS=$VARIANTS,${B}_bolt,${B}_bolt_hugify
$P matrix "$S" --variants $VARIANTS --base $B --measure cost,qps --suite quick --cost-jobs 2 \
  --seconds 2 --instances 2 --blocks 3 --run 'pg15-layout-{binaries}' \
  --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
$P builds --markdown --server postgresql-15 > $OUT/builds.md
# What each layout axis left in the binaries: text sections, split-off parts, BOLT's hugify runtime.
"$(dirname "$P")/python" "$PROOF_DIR/../layout-sections.py" "$S" ${VARIANTS//,/ } > $OUT/sections.txt
# The kernel's huge-page settings the _hugify build met (its smoke test measured the result).
{ uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled
  grep -E "READ_ONLY_THP|TRANSPARENT_HUGEPAGE" "/boot/config-$(uname -r)" 2>/dev/null || zcat /proc/config.gz | grep -E "READ_ONLY_THP|TRANSPARENT_HUGEPAGE"; } > $OUT/kernel.txt
