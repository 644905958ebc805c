#!/bin/bash
# Issue 34, training concurrency: PostgreSQL 15.18 (Debian's tree) rel_lto_pgo_use_clang trained by
# the mix at 1 connection, at the core count (2 here) and at 4x the core count (8), beside the build
# trained at the mix's own 4 connections (no --train-connections) and rel_o2nofp as the base. Cost
# mode (callgrind counts do not depend on the machine's load), quick suite, at 1 and at 4 sysbench
# threads. The three new builds share the instrumented build; each trains and compiles once.
# Resumable: finished builds are found up to date, the run resumes by its name.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
$P build "$S" --variant rel_o2nofp --variant rel_lto_pgo_use_clang </dev/null
for n in 1 2 8; do
  $P build "$S" --variant rel_lto_pgo_use_clang --train-connections $n --label train-c$n </dev/null
done
$P builds --markdown --server postgresql-15 > $OUT/builds.md
# One thread first (a run of its own, so that it stands if the session ends), then four.
for t in 1 4; do
  $P bench --source "$S" --base rel_o2nofp --variant rel_lto_pgo_use_clang \
    --variant train-c1 --variant train-c2 --variant train-c8 \
    --measure cost --suite quick --threads $t --cost-jobs 2 \
    --run "pg15-train-connections-${t}t-{binaries}" --store $OUT/results.sqlite --out $OUT/report-${t}t \
    </dev/null > $OUT/report-${t}t.txt
done
# Each training against the default one (4 connections), and what each training ran (its log).
for t in 1 4; do
  run=$(sqlite3 $OUT/results.sqlite "SELECT name FROM runs WHERE name LIKE 'pg15-train-connections-${t}t-%' ORDER BY id DESC LIMIT 1")
  $P report "$run" --store $OUT/results.sqlite --base rel_lto_pgo_use_clang </dev/null > $OUT/vs-default-${t}t.txt
done
# The builds of Debian's tree (the folder train-c1 is in), each training's log: every attempt, in order.
D=$(dirname "$(ls -d "${PGOLAB_HOME:-/var/cache/pgolab}"/builds/postgresql-15.18-*/train-c1 | head -1)")
for label in rel_lto_pgo_use_clang train-c1 train-c2 train-c8; do
  grep -h "training mix on postgresql\|ddl=\|errors:" "$D/$label/logs/train.log" | sed "s/^/$label: /"
done > $OUT/trainings.txt

