#!/bin/bash
# Issue 32, build-to-build variation of BOLT against its twin on MariaDB 10.11.18 (Debian 12's
# tree): rel_lto_pgo_use_clang_bolt (clang PGO+ThinLTO, then BOLT) and its twin without BOLT,
# rel_lto_pgo_use_clang, two replicates each (`--replicates 2`; replicate 2 trains with seed 2 and
# links with layout seed 2, and its BOLT build reads replicate 2's profile). The twin is the base, so
# the build replicates table gives BOLT over its two builds against the twin, and the twin's own
# build-to-build spread (+r2 against replicate 1). On the machine of ../mariadb-10.11-replicates/ the
# twins are that proof's builds (same source, variant and training: up to date).
# PROOF_STEPS: build, then cost and qps (../replicates-measure.sh; QPS wants the machine to
# itself); default all.
. "$(dirname "$0")/../proof-env.sh"
proof_steps build cost qps
S=$($P source mariadb --version 10.11)
TARGETS=(--base rel_lto_pgo_use_clang --variant rel_lto_pgo_use_clang_bolt --replicates 2 --source "$S")
if [[ $STEPS == *" build "* ]]; then
  $P build "$S" --variant rel_lto_pgo_use_clang_bolt --replicates 2 </dev/null
  $P builds --markdown --server mariadb-10.11 > "$OUT/builds.md"
fi
RUN=mariadb-bolt-replicates
. "$PROOF_DIR/../replicates-measure.sh"
