#!/bin/bash
# Issue 30: the MariaDB 10.11.18 matrix, the 20 published variants plus rel_pgo_use_bolt and
# rel_lto_pgo_use_clang_bolt, with Debian's mariadbd beside them, in 7 shards of one working session
# each, on whatever machine that session has. Shard K builds its share (matrix.shard_of, about 5 plain
# builds) and the base rel_o2nofp, then makes two stored runs: cost on the full suite (a quarter of the
# events: MariaDB's read-only A/A pairs agreed within 0.04 % in instructions at that scale,
# ../mariadb-10.11-measurement/README.md) and QPS on the quick suite. Both runs are exported to
# shardK-cost.run.gz and shardK-qps.run.gz as each is done, to be committed: no later shard needs
# this machine.
#   bash docs/results/queue.sh mariadb-10.11-matrix@3       # shard 3 of 7
#   bash docs/results/queue.sh mariadb-10.11-matrix@native  # the -march=native builds' cost, on a CPU without AVX-512
#   bash docs/results/queue.sh mariadb-10.11-matrix@merge   # every shard committed so far
# merge: the cost shards into one run (one anchor: rel_o2nofp by digest, or per-test cost within the
# bound), the QPS shards into one run per CPU model (pgolab merge keeps them apart).
. "$(dirname "$0")/../proof-env.sh"
N=7
STEP=${PROOF_STEPS:-1}
if [[ $STEP == merge ]]; then
  for m in cost qps; do
    FILES=()
    for piece in $(seq -f "shard%g-$m.run.gz" 1 $N); do
      if f=$(piece_file $piece); then FILES+=("$f"); else echo "$piece: not run yet, left out" >&2; fi
    done
    if [ ${#FILES[@]} -lt 2 ]; then echo "$m: fewer than 2 shards, nothing to merge" >&2; continue; fi
    # The native piece adds only the -march=native builds' cost that the shards left out.
    FILL=()
    for h in 1 2; do if [ $m = cost ] && f=$(piece_file shard-native$h-cost.run.gz); then FILL+=(--fill "$f"); fi; done
    rm -f "$OUT/merged-$m.sqlite"   # made anew from every shard so far: a merge of other shards is another run identity
    # The QPS shards hold no cost: pgolab merge takes them only if their rel_o2nofp is one binary (digest).
    $P merge "${FILES[@]}" "${FILL[@]}" --name "mariadb-matrix-$m" --store "$OUT/merged-$m.sqlite" --out "$OUT/merged-$m" \
      </dev/null > "$OUT/merged-$m.txt" || echo "$m: merge refused, see $OUT/merged-$m.txt and the error above" >&2
  done
  exit
fi
[[ $STEP == native || ( $STEP =~ ^[0-9]+$ && $STEP -ge 1 && $STEP -le $N ) ]] || {
  echo "error: PROOF_STEPS is a shard 1 to $N, native or merge" >&2; exit 2; }
S=$($P source mariadb --version 10.11.18)
if [[ $STEP == native ]]; then
  # Two halves, each four -march=native builds beside the base (matrix.shard_of, balanced by build
  # cost): nine MariaDB builds are more than one session, and a half done is committed on its own,
  # so a half that fails does not keep the other from running. Debian's mariadbd is left out: every
  # shard measures it, and the merge would take nothing of it from here.
  rc=0
  for h in 1 2; do
    native_piece shard-native$h-cost mariadb-matrix-cost-native$h "$S" mariadb-10.11.18 \
      --cost-scale 0.25 --cost-jobs 2 --suite full --shard $h/2 || rc=$?
  done
  exit $rc
fi
V=$($P variants --json | python3 -c 'import json,sys; print(",".join(v["name"] for v in json.load(sys.stdin)))')
V="$V,rel_pgo_use_bolt,rel_lto_pgo_use_clang_bolt"
# profiles/: each PGO build's profile, kept as it is trained (commit it with the store): a shard this
# machine did not finish goes on on another, whose PGO builds compile from these files (the same
# binaries, so the same run) instead of training again, and a _bolt build lays out from BOLT's kept profile.
COMMON=(--variants "$V" --base rel_o2nofp --binary distro=/usr/sbin/mariadbd --shard "$STEP/$N" --store "$OUT/results.sqlite"
        --profiles "$OUT/profiles")
# Each measure's run is exported as soon as it is done, and a measure whose file is committed is
# skipped: a session that ends in the QPS run keeps the cost run, and the next machine measures QPS only.
# QPS wants the machine to itself: the report says THE MACHINE WAS NOT IDLE otherwise.
RAN=
for m in cost qps; do
  if f=$(piece_file shard$STEP-$m.run.gz); then echo "shard $STEP of $N ($m): done ($f), skipped"; continue; fi
  RAN=1
  if [ $m = cost ]; then
    HOW=(--measure cost --cost-scale 0.25 --cost-jobs 2 --suite full)
  else
    HOW=(--measure qps --suite quick --instances 2 --blocks 3 --seconds 2)
  fi
  $P matrix "$S" "${COMMON[@]}" "${HOW[@]}" --run "mariadb-matrix-$m-shard$STEP-of-$N-{binaries}" \
    --out "$OUT/shard$STEP-$m" </dev/null > "$OUT/shard$STEP-$m.txt"
  export_newest_run "mariadb-matrix-$m-shard$STEP-of-$N" "$OUT/shard$STEP-$m.run.gz"
done
# Only after a measure ran here: a machine that skipped both has no builds of the shard, and an empty
# table overwrote shard 1's on 2026-12-05 (restored from git).
[ -z "$RAN" ] || $P builds --markdown --server mariadb-10.11.18 > "$OUT/builds-shard$STEP.md"
