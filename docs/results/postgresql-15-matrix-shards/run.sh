#!/bin/bash
# Issue 30: the PostgreSQL 15 matrix (the 20 published builds and the BOLT twin of every PGO build, cost
# on the full suite) in 6 shards, one per working session, each on whatever machine that session has.
# Shard K builds its share and the base and measures their cost; its run is exported to shardK.run.gz,
# which is committed: the next machine does not need this one's builds. When all six are here,
# PROOF_STEPS=merge puts them together (pgolab merge checks that the six bases are one anchor).
#   bash docs/results/queue.sh postgresql-15-matrix-shards@3        # shard 3 of 6
#   bash docs/results/queue.sh postgresql-15-matrix-shards@native   # the -march=native builds' cost, on a CPU without AVX-512
#   bash docs/results/queue.sh postgresql-15-matrix-shards@merge
. "$(dirname "$0")/../proof-env.sh"
N=6
STEP=${PROOF_STEPS:-1}
if [[ $STEP == merge ]]; then
  FILES=()
  for piece in $(seq -f 'shard%g.run.gz' 1 $N); do
    if f=$(piece_file $piece); then FILES+=("$f"); else echo "$piece: not run yet, left out" >&2; fi
  done
  if [ ${#FILES[@]} -lt 2 ]; then echo "fewer than 2 shards, nothing to merge" >&2; exit 0; fi
  # The native piece adds only the -march=native builds' cost that the shards left out.
  FILL=(); if f=$(piece_file shard-native.run.gz); then FILL=(--fill "$f"); fi
  rm -f "$OUT/merged.sqlite"   # made anew from every shard so far: a merge of other shards is another run identity
  $P merge "${FILES[@]}" "${FILL[@]}" --name pg15-matrix-cost-merged --store $OUT/merged.sqlite --out $OUT/merged </dev/null > $OUT/merged.txt
  exit
fi
# The -march=native builds' cost, on a CPU without AVX-512 (valgrind 3.19 cannot run it, so a shard on
# such a CPU leaves them out of cost; merge takes this piece's builds of those labels instead).
if [[ $STEP == native ]]; then
  if grep -qw avx512f /proc/cpuinfo; then
    echo "native: this CPU has AVX-512, which valgrind 3.19 cannot run; run this piece on one without" >&2; exit 0
  fi
  if f=$(piece_file shard-native.run.gz); then echo "native: done ($f), skipped"; exit 0; fi
  NATIVE=$($P variants --json | python3 -c 'import json,sys; print(",".join(v["name"] for v in json.load(sys.stdin) if "native" in v["name"]))')
  $P matrix postgresql=15 --variants "rel_o2nofp,$NATIVE" --base rel_o2nofp --measure cost --suite full \
    --run "pg15-shard-native-{binaries}" --store $OUT/results.sqlite --out $OUT/shard-native </dev/null > $OUT/shard-native.txt
  RUN=$($P report --store $OUT/results.sqlite --list | grep -o "pg15-shard-native-[0-9a-f]*" | tail -1)
  $P export "$RUN" --store $OUT/results.sqlite -o $OUT/shard-native.run.gz
  $P builds --markdown --server postgresql-15 > $OUT/builds-shard-native.md
  exit
fi
# A shard whose run file is committed is done: the queue goes on to the next piece.
if f=$(piece_file shard$STEP.run.gz); then echo "shard $STEP of $N: done ($f), skipped"; exit 0; fi
$P matrix postgresql=15 --variants published --bolt --base rel_o2nofp --measure cost --suite full \
  --shard $STEP/$N --run "pg15-shard$STEP-of-$N-{binaries}" --store $OUT/results.sqlite --out $OUT/shard$STEP \
  </dev/null > $OUT/shard$STEP.txt
RUN=$($P report --store $OUT/results.sqlite --list | grep -o "pg15-shard$STEP-of-$N-[0-9a-f]*" | tail -1)
$P export "$RUN" --store $OUT/results.sqlite -o $OUT/shard$STEP.run.gz
$P builds --markdown --server postgresql-15 > $OUT/builds-shard$STEP.md
