#!/bin/bash
# Issue 32, build-to-build variation on PostgreSQL 15: rel_o2nofp (gcc -O2) and rel_lto_pgo_use_clang
# (clang PGO+ThinLTO, the best published build), three replicates each (`--replicates 3`: replicate K
# trains with seed K and links with layout seed K; replicate 1 is the usual build). One stored run,
# quick suite, 1 thread, cost (all the events: the options of postgresql-15-llvm19, whose rel_o2nofp
# is the same binary when the build is reproducible, measured there on another CPU) and QPS (2 instances
# of 3 paired 2-second blocks), every replicate a target of its own, so the report's build replicates table gives each
# variant's figure over its builds beside replicate 1 alone. PROOF_STEPS=build or measure runs one part
# (the builds may share the machine; QPS should not). Resumable; a rebuild starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
proof_steps build measure
S=$($P source postgresql --version 15)
if [[ $STEPS == *" build "* ]]; then
  $P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang --replicates 3 </dev/null
  $P builds --markdown --server postgresql-15 > "$OUT/builds.md"
fi
if [[ $STEPS == *" measure "* ]]; then
  $P bench --base rel_o2nofp --variant rel_lto_pgo_use_clang --replicates 3 --source "$S" --measure cost,qps \
    --suite quick --instances 2 --blocks 3 --seconds 2 --cost-jobs 2 \
    --run 'pg15-replicates-{binaries}' --store "$OUT/results.sqlite" --out "$OUT/report" </dev/null > "$OUT/report.txt"
fi
