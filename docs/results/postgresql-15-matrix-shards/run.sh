#!/bin/bash
# Issue 30: the PostgreSQL 15 matrix (the 20 published builds and the BOLT twin of every PGO build, cost
# on the full suite) in 6 shards, one per working session, each on whatever machine that session has.
# Shard K builds its share and the base and measures their cost; its run is exported to shardK.run.gz,
# which is committed: the next machine does not need this one's builds. PROOF_STEPS=merge puts every
# shard here together, with the native piece's -march=native builds as a fill (pgolab merge checks
# that the bases are one anchor); shard 6's builds are all the native piece's.
#   bash docs/results/queue.sh postgresql-15-matrix-shards@3        # shard 3 of 6
#   bash docs/results/queue.sh postgresql-15-matrix-shards@native   # the -march=native builds' cost, on a CPU without AVX-512
#   bash docs/results/queue.sh postgresql-15-matrix-shards@merge
. "$(dirname "$0")/../proof-env.sh"
N=6
# Shard 6's four builds are all -march=native (its refusal on AVX-512, README): the native piece
# measures them with the other four, so once its file is here shard 6 has nothing left to add.
NATIVE_ONLY_SHARD=6
native_covers() {   # SHARD
  [[ $1 == "$NATIVE_ONLY_SHARD" ]] && piece_file shard-native.run.gz >/dev/null
}
STEP=${PROOF_STEPS:-1}
if [[ $STEP == merge ]]; then
  FILES=()
  for k in $(seq 1 $N); do
    if f=$(piece_file shard$k.run.gz); then FILES+=("$f")
    elif native_covers $k; then echo "shard$k.run.gz: its builds are the native piece's" >&2
    else echo "shard$k.run.gz: not run yet, left out" >&2; fi
  done
  if [ ${#FILES[@]} -lt 2 ]; then echo "fewer than 2 shards, nothing to merge" >&2; exit 0; fi
  # The native piece adds only the -march=native builds' cost that the shards left out.
  FILL=(); if f=$(piece_file shard-native.run.gz); then FILL=(--fill "$f"); fi
  rm -f "$OUT/merged.sqlite"   # made anew from every shard so far: a merge of other shards is another run identity
  $P merge "${FILES[@]}" "${FILL[@]}" --name pg15-matrix-cost-merged --store $OUT/merged.sqlite --out $OUT/merged </dev/null > $OUT/merged.txt
  exit
fi
if [[ $STEP == native ]]; then
  native_piece shard-native pg15-shard-native postgresql=15 postgresql-15 --suite full
  exit
fi
# A shard whose run file is committed is done: the queue goes on to the next piece.
if f=$(piece_file shard$STEP.run.gz); then echo "shard $STEP of $N: done ($f), skipped"; exit 0; fi
if native_covers $STEP; then echo "shard $STEP of $N: its builds are measured by the native piece, skipped"; exit 0; fi
$P matrix postgresql=15 --variants published --bolt --base rel_o2nofp --measure cost --suite full \
  --shard $STEP/$N --run "pg15-shard$STEP-of-$N-{binaries}" --store $OUT/results.sqlite --out $OUT/shard$STEP \
  </dev/null > $OUT/shard$STEP.txt
export_newest_run "pg15-shard$STEP-of-$N" "$OUT/shard$STEP.run.gz"
$P builds --markdown --server postgresql-15 > $OUT/builds-shard$STEP.md
