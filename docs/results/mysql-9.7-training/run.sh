#!/bin/bash
# Issue 31, training on MySQL 9.7.2: how well a training covers the benchmark, and what another
# training does to the build. clang's PGO builds, whose instrumented build (rel_pgo_gen_clang) the
# clang PGO proof left on its machine (../mysql-9.7-pgo-clang-nolto/; elsewhere `profile-check`
# builds it first).
# PROOF_STEPS:
#   check     pgolab profile-check of the built-in mix against the full suite (2 s per test), on the
#             instrumented build: overlap of the two profiles and the hot functions the mix misses
#   sysbench  rel_pgo_use_clang trained on sysbench's own tests (label pgo-clang-sysbench), its
#             profile-check, then one cost run (full suite, a quarter of the events) of both trainings
#             against rel_o2nofp
# default: both, in that order. Estimated, not run: about 4.5 to 5 hours on a new machine (an
# instrumented build, two trainings, two optimized builds, rel_o2nofp, two full-suite checks and a
# cost run), more than one session, and nothing of it is exported yet for a new machine to go on from
# (its trainings are not kept as files): on a new machine each step starts again. Split it before it
# runs (the last piece of the queue; noted on issue 31).
. "$(dirname "$0")/../proof-env.sh"
proof_steps check sysbench
S=$($P source mysql --version 9.7.2)
if [[ $STEPS == *" check "* ]]; then
  $P profile-check "$S" --variant rel_pgo_use_clang --suite full --seconds 2 </dev/null > "$OUT/profile-check-mix.txt"
fi
if [[ $STEPS == *" sysbench "* ]]; then
  $P build "$S" --variant rel_pgo_use_clang --label pgo-clang-sysbench --train sysbench </dev/null
  $P profile-check "$S" --variant rel_pgo_use_clang --label pgo-clang-sysbench --train sysbench --suite full \
    --seconds 2 </dev/null > "$OUT/profile-check-sysbench.txt"
  $P build "$S" --variant rel_o2nofp --variant rel_pgo_use_clang </dev/null
  $P bench --base rel_o2nofp --variant rel_pgo_use_clang --variant pgo-clang-sysbench --source "$S" \
    --measure cost --suite full --cost-jobs 2 --cost-scale 0.25 \
    --run "mysql-training-{binaries}" --store "$OUT/results.sqlite" --out "$OUT/report" </dev/null > "$OUT/report.txt"
  $P builds --markdown --server mysql-9.7.2 > "$OUT/builds.md"
fi
