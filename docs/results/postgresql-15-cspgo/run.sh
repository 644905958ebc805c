#!/bin/bash
# Issue 9's optional axis: clang context-sensitive PGO (_cs) on PostgreSQL 15, beside the same builds
# without it, in cost mode on the full suite. The other builds are the PostgreSQL 15 matrix's (same
# pgolab home: found up to date); on a machine without them they are built here. Resumable; the run
# is named after its binaries.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
V=(rel_pgo_use_clang rel_pgo_use_cs_clang rel_lto_pgo_use_clang rel_lto_pgo_use_cs_clang)
$P build "$S" --variant rel_o2nofp $(printf -- '--variant %s ' "${V[@]}") </dev/null
$P builds --markdown --server postgresql-15 > $OUT/builds.md
$P bench --source "$S" --base rel_o2nofp $(printf -- '--variant %s ' "${V[@]}") --suite full --measure cost \
  --run 'pg15-cspgo-cost-{binaries}' --store $OUT/results.sqlite --out $OUT/report </dev/null > $OUT/report.txt
