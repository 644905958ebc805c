#!/bin/bash
# Issue 31: the published table (MySQL 8.0.28 built 20 ways) on MySQL 9.7.2, in pieces that each fit one
# 3-hour session on whatever machine it has. The 4 PGO builds are their own proofs (one per session or
# two, from committed profiles): ../mysql-9.7-pgo-gcc, ../mysql-9.7-pgo-clang-nolto, ../mysql-9.7-pgo-clang,
# ../mysql-9.7-lto-pgo-gcc. The 15 others are 15 shards of `pgolab matrix --shard K/15`, one build each; every piece
# measures rel_o2nofp beside its builds with the PGO proofs' options (full suite, 1 thread; cost at a
# quarter of the events, two servers at once; QPS 2 instances of 3 paired 1-second blocks), so
# `pgolab merge` takes them all: rel_o2nofp is one binary wherever it is built (ac35a5624eb5 on AMD
# EPYC and Intel Xeon), its anchor; QPS is merged per CPU model.
#   bash docs/results/queue.sh mysql-9.7-table@3       # shard 3 of 15: its build, rel_o2nofp, the run,
#                                                       # exported to shard3.run.gz (commit it)
#   bash docs/results/queue.sh mysql-9.7-table@merge   # every piece committed so far, merged
. "$(dirname "$0")/../proof-env.sh"
N=15
NON_PGO=rel_o2nofp_clang,rel_o2nofp_lto,rel_o2nofp_lto_clang,rel,rel_clang,rel_lto,rel_lto_clang,rel_o2nofp_native
NON_PGO+=,rel_o2nofp_native_clang,rel_o2nofp_native_lto,rel_o2nofp_native_lto_clang,rel_native,rel_native_clang
NON_PGO+=,rel_native_lto,rel_native_lto_clang
STEP=${PROOF_STEPS:-1}
if [[ $STEP == merge ]]; then
  # A fixed folder: the pieces' paths are in the merged run's commands, and stay the same from one merge to the next.
  TMP=/tmp/pgolab-mysql-9.7-table-pieces; rm -rf "$TMP"; mkdir -p "$TMP"; trap 'rm -rf "$TMP"' EXIT
  rm -f "$OUT/merged.sqlite"   # made anew from every piece so far: a merge of other pieces is another run identity
  PIECES=()
  for proof in mysql-9.7-pgo-gcc mysql-9.7-pgo-clang-nolto mysql-9.7-pgo-clang mysql-9.7-lto-pgo-gcc; do
    store=docs/results/$proof/results.sqlite
    run=$([ ! -f "$store" ] || sqlite3 "$store" "SELECT name FROM runs WHERE status = 'finished' ORDER BY id DESC LIMIT 1")
    if [ -z "$run" ]; then echo "$proof: no finished run yet, left out" >&2; continue; fi
    $P export "$run" --store "$store" -o "$TMP/$proof.json" >/dev/null
    PIECES+=("$TMP/$proof.json")
  done
  for k in $(seq 1 $N); do
    if f=$(piece_file shard$k.run.gz); then PIECES+=("$f"); else echo "shard $k of $N: not run yet, left out" >&2; fi
  done
  $P merge "${PIECES[@]}" --name mysql-9.7.2-table --store "$OUT/merged.sqlite" --out "$OUT/merged" </dev/null > "$OUT/merged.txt"
  exit
fi
[[ $STEP =~ ^[0-9]+$ && $STEP -ge 1 && $STEP -le $N ]] || { echo "error: PROOF_STEPS is a shard 1 to $N, or merge" >&2; exit 2; }
# A shard whose run file is committed is done: the queue goes on to the next piece.
if f=$(piece_file shard$STEP.run.gz); then echo "shard $STEP of $N: done ($f), skipped"; exit 0; fi
# A -march=native build's cost cannot be measured on a CPU with AVX-512 (valgrind 3.19): there its
# shard measures its QPS, and its cost is reported unavailable with the reason (every machine so far
# had AVX-512; a CPU without it may never come).
S=$($P source mysql --version 9.7.2)
$P matrix "$S" --variants "$NON_PGO" --base rel_o2nofp --measure cost,qps --suite full --instances 2 --blocks 3 \
  --seconds 1 --cost-jobs 2 --cost-scale 0.25 --shard "$STEP/$N" --run "mysql-table-shard$STEP-of-$N-{binaries}" \
  --store "$OUT/results.sqlite" --out "$OUT/shard$STEP" </dev/null > "$OUT/shard$STEP.txt"
export_newest_run "mysql-table-shard$STEP-of-$N" "$OUT/shard$STEP.run.gz"
$P builds --markdown --server mysql-9.7.2 > "$OUT/builds-shard$STEP.md"
