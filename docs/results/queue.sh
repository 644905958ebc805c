#!/bin/bash
# Every proof run still open, in the order the issues rank them; each step resumes where it stopped.
# Start it early in a session, and let it run while you work:
#   nohup bash docs/results/queue.sh >> /var/cache/pgolab/queue.log 2>&1 &
# Stop it with SIGTERM to its process group (kill -TERM -- -PGID): pgolab stops its servers and keeps
# what it stored. A background job ignores SIGINT, so Ctrl-C's signal does nothing to it.
# Copy what it has so far (finished or partial) into this checkout, to commit it:
#   bash docs/results/queue.sh --collect [FOLDER...]
# It runs a copy of this checkout's committed code under pgolab's home (proof-code, refreshed at each
# start), and keeps stores and reports under $PGOLAB_HOME/proofs/<folder>, seeded from docs/results:
# both outlive the work tree, which a new session lays anew, but not a new machine (2026-11-25 brought
# one: builds and the unstored part of a run were lost). Collect and commit often.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export PGOLAB_HOME=${PGOLAB_HOME:-/var/cache/pgolab}
CODE=$PGOLAB_HOME/proof-code
PROOFS=$PGOLAB_HOME/proofs
# The open pieces, each sized to one 3-hour session on a new machine, in this order: the MariaDB
# matrix in shards (issue 30); then issue 35's two proofs left, the MariaDB layout axes
# and the `pgolab best` search on MariaDB (PostgreSQL's finished on 2026-12-05) (a search goes on from its last finished
# round on another machine given the committed store, where that machine can measure the same
# candidates and the source tree is the same; an unfinished round starts again there, its PGO builds
# made from the committed profiles/ without training), put before the MySQL table because they are two
# pieces where the table is sixteen; then the MySQL table's shards and MySQL training (issue 31). A
# shard whose run file is committed is skipped, so a bare `queue.sh` goes on where the committed work
# stops; a MariaDB shard that is not finished goes on from its committed store and profiles/ (its cost
# run, where its binaries come out the same: not a shard with a _bolt build); remove a finished proof
# from this list (on a new machine it would build and measure anew).
# A piece that needs a CPU without AVX-512 (the -march=native builds' cost) says so and is passed over;
# the MariaDB one is two halves of four builds, each its own file.
# FOLDER@STEPS runs only those steps of a folder's run.sh (PROOF_STEPS).
# The PostgreSQL matrix (postgresql-15-matrix-shards) is finished (2026-12-02) and left out.
ORDER=(mariadb-10.11-matrix@{1..7} mariadb-10.11-matrix@native mariadb-10.11-matrix@merge
       mariadb-10.11-layout mariadb-10.11-best
       mysql-9.7-table@{1..15} mysql-9.7-table@merge mysql-9.7-training)
# A CPU without AVX-512 is rare here (every machine until 2026-11-29 had it; 2026-12-01's had not):
# on one, the piece only it can run comes first (MariaDB's -march=native builds' cost).
if ! grep -qw avx512f /proc/cpuinfo; then
  ORDER=(mariadb-10.11-matrix@native "${ORDER[@]}")
fi
# Entries named on the command line run (or, after --collect, are collected) instead, in that order:
# a proof that fits one session, such as mariadb-10.11-bolt, is run by name and left out of ORDER, so
# that a queue on a later new machine does not rebuild and measure it again.
# Pause a running queue while you measure by hand, and let it go on after:
#   bash docs/results/queue.sh --pause      (SIGSTOP to every process of its CPU cgroup)
#   bash docs/results/queue.sh --resume     (SIGCONT)
# Its low CPU share does not keep an idle build off the CPUs a QPS measurement leaves idle; a
# stopped build holds its files and continues where it was.
case "${1:-}" in
  --pause|--resume)
    sig=STOP; [ "$1" = --resume ] && sig=CONT
    for procs in /sys/fs/cgroup/cpu/pgolab-queue/cgroup.procs /sys/fs/cgroup/pgolab-queue/cgroup.procs; do
      [ -f "$procs" ] && xargs -r kill -s "$sig" < "$procs"
    done
    echo "queue: sent SIG$sig to $(cat /sys/fs/cgroup/cpu/pgolab-queue/cgroup.procs /sys/fs/cgroup/pgolab-queue/cgroup.procs 2>/dev/null | wc -l) process(es)"
    exit 0;;
esac
COLLECT=; [ "${1:-}" = --collect ] && { COLLECT=1; shift; }
[ $# -gt 0 ] && ORDER=("$@")
FOLDERS=($(printf '%s\n' "${ORDER[@]%%@*}" | awk '!seen[$0]++'))

# What belongs to the checkout, not to a run: written there, run from proof-code, never copied into
# proofs or back (a copy under proofs would be as old as the folder's first run; a collect once put a
# stale run.sh back into the checkout).
CHECKOUT_ONLY=(--exclude=README.md --exclude='*.sh' --exclude='*.py')
copy_outputs() {   # FROM TO [more tar options]
  mkdir -p "$2" && tar -C "$1" "${CHECKOUT_ONLY[@]}" "${@:3}" -cf - . | tar -C "$2" -xf -
}

collect() {   # SQLite files through the backup API: a run may be writing to them.
  for d in "${FOLDERS[@]}"; do
    [ -d "$PROOFS/$d" ] || continue
    copy_outputs "$PROOFS/$d" "$REPO/docs/results/$d" --exclude='*.sqlite*'
    for db in "$PROOFS/$d"/*.sqlite; do
      [ -f "$db" ] || continue
      python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d); d.close()' \
        "$db" "$REPO/docs/results/$d/$(basename "$db")"
    done
    echo "collected $d"
  done
}
if [ -n "$COLLECT" ]; then collect; exit 0; fi

mkdir -p "$PROOFS"
# Give way to a CI run or a hand measurement beside the queue. Under autogroup scheduling nice only
# ranks the processes of one session, and every server pgolab starts, and every PostgreSQL backend
# (postmaster children call setsid), opens a session of its own at nice 0: lowering the queue's
# autogroup still let two callgrind'd servers take 71 % and 59 % of a core beside a nice-0 build's 29 %
# and 24 % (top). A CPU cgroup holds every descendant whatever its session; the autogroup is the
# fallback without one.
low_priority() {
  local v1=/sys/fs/cgroup/cpu v2=/sys/fs/cgroup
  if [ -w "$v1" ] && mkdir -p "$v1/pgolab-queue" 2>/dev/null; then
    echo 2 > "$v1/pgolab-queue/cpu.shares" && echo $$ > "$v1/pgolab-queue/cgroup.procs" && return
  fi
  if grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null && mkdir -p "$v2/pgolab-queue" 2>/dev/null; then
    echo 1 > "$v2/pgolab-queue/cpu.weight" && echo $$ > "$v2/pgolab-queue/cgroup.procs" && return
  fi
  echo 19 > /proc/self/autogroup 2>/dev/null || true
}
low_priority
if [ -d "$CODE/.git" ]; then
  git -C "$CODE" fetch -q "$REPO" HEAD && git -C "$CODE" checkout -qf FETCH_HEAD
else
  git clone -q "$REPO" "$CODE"
fi
echo "=== $(date -Is) queue at $(git -C "$CODE" log --oneline -1)"
for entry in "${ORDER[@]}"; do
  d=${entry%%@*}; steps=
  [[ $entry == *@* ]] && steps=${entry#*@}
  [ -d "$PROOFS/$d" ] || copy_outputs "$REPO/docs/results/$d" "$PROOFS/$d"   # stores too: a run resumes
  echo "=== $(date -Is) $entry"
  PROOF_STEPS=$steps PROOF_OUT=$PROOFS/$d PGOLAB=$CODE/.venv/bin/pgolab bash "$CODE/docs/results/$d/run.sh"
  rc=$?   # taken at once: the $(date) below would reset $? before the message read it
  if [ $rc = 0 ]; then
    echo "=== $(date -Is) $entry finished"
  else
    echo "=== $(date -Is) $entry stopped (exit $rc): see its output above; the next one starts"
  fi
done
