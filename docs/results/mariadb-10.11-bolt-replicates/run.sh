#!/bin/bash
# Issue 32, build-to-build variation of BOLT against its twin on MariaDB 10.11.18 (Debian 12's
# tree): rel_lto_pgo_use_clang_bolt (clang PGO+ThinLTO, then BOLT) and its twin without BOLT,
# rel_lto_pgo_use_clang, two replicates each (`--replicates 2`; replicate 2 trains with seed 2 and
# links with layout seed 2, and its BOLT build reads replicate 2's profile). The twin is the base, so
# the build replicates table gives BOLT over its two builds against the twin, and the twin's own
# build-to-build spread (+r2 against replicate 1). On the machine of ../mariadb-10.11-replicates/ the
# twins are that proof's builds (same source, variant and training: up to date).
# PROOF_STEPS: build, cost (full suite, 1 thread, a quarter of the events, two servers at once) and
# qps (quick suite, 2 instances of 3 paired 2-second blocks: the machine to itself); default all.
. "$(dirname "$0")/../proof-env.sh"
STEPS=" ${PROOF_STEPS:-build cost qps} "
S=$($P source mariadb --version 10.11)
TARGETS=(--base rel_lto_pgo_use_clang --variant rel_lto_pgo_use_clang_bolt --replicates 2 --source "$S")
if [[ $STEPS == *" build "* ]]; then
  $P build "$S" --variant rel_lto_pgo_use_clang_bolt --replicates 2 </dev/null
  $P builds --markdown --server mariadb-10.11 > "$OUT/builds.md"
fi
if [[ $STEPS == *" cost "* ]]; then
  $P bench "${TARGETS[@]}" --measure cost --suite full --cost-jobs 2 --cost-scale 0.25 \
    --run 'mariadb-bolt-replicates-cost-{binaries}' --store "$OUT/results.sqlite" --out "$OUT/report-cost" </dev/null \
    > "$OUT/report-cost.txt"
fi
if [[ $STEPS == *" qps "* ]]; then
  $P bench "${TARGETS[@]}" --measure qps --suite quick --instances 2 --blocks 3 --seconds 2 \
    --run 'mariadb-bolt-replicates-qps-{binaries}' --store "$OUT/results.sqlite" --out "$OUT/report-qps" </dev/null \
    > "$OUT/report-qps.txt"
fi
