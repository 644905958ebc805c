#!/bin/bash
# Issues 30 and 32: the binaries of the PostgreSQL 15 replicates proof (Intel Xeon, 2026-11-27), made
# again on another machine and measured there with the same options, so that one binary's figures on
# two machines give the machine-to-machine component. Rebuilt, not copied: rel_o2nofp and its two
# link-order replicates from source (reproducible builds), rel_lto_pgo_use_clang from the profile the
# stale-profile proof exported of that very build (no training here). check-digests.sh compares the
# sha256s with the replicates proof's targets.csv and stops the proof if a gcc build differs (the PGO
# build cannot be Intel's binary: that one recorded its profile folder's path). Then one stored
# run, quick suite, 1 thread, cost (all the events) and QPS (2 instances of 3 paired 2-second blocks),
# the replicates proof's options; and `pgolab machines` per binary against that proof's run.
# PROOF_STEPS=build, measure or compare runs one part (QPS wants the machine alone). Resumable.
. "$(dirname "$0")/../proof-env.sh"
proof_steps build measure compare
R=docs/results
S=$($P source postgresql --version 15)
if [[ $STEPS == *" build "* ]]; then
  $P build "$S" --variant rel_o2nofp --replicates 3 </dev/null
  $P build "$S" --variant rel_lto_pgo_use_clang --profile $R/postgresql-15-stale-profile/debian-tree.profile.tgz </dev/null
  $P builds --markdown --server postgresql-15 > "$OUT/builds.md"
fi
if [[ $STEPS == *" measure "* ]]; then
  bash "$(dirname "$0")/check-digests.sh" "$S" > "$OUT/digests.txt"
  $P bench --base rel_o2nofp --variant rel_lto_pgo_use_clang --variant rel_o2nofp+r2 --variant rel_o2nofp+r3 \
    --source "$S" --measure cost,qps --suite quick --instances 2 --blocks 3 --seconds 2 --cost-jobs 2 \
    --run 'pg15-machines-{binaries}' --store "$OUT/results.sqlite" --out "$OUT/report" </dev/null > "$OUT/report.txt"
fi
if [[ $STEPS == *" compare "* ]]; then
  TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
  here=$(sqlite3 "$OUT/results.sqlite" "SELECT name FROM runs WHERE status = 'finished' ORDER BY id DESC LIMIT 1")
  $P export "$here" --store "$OUT/results.sqlite" -o "$TMP/here.json" >/dev/null
  $P export pg15-replicates-22fed8ba --store $R/postgresql-15-replicates/results.sqlite -o "$TMP/intel.json" >/dev/null
  # One binary per label on both machines: the gcc builds (with +r2 and +r3, their ratio to rel_o2nofp too).
  for label in rel_o2nofp rel_o2nofp+r2 rel_o2nofp+r3; do
    $P machines "$TMP/intel.json" "$TMP/here.json" --label "$label" --store "$TMP/scratch.sqlite" \
      --out "$OUT/machines-$label" > "$OUT/machines-$label.txt"
  done
fi
