#!/bin/bash
# Issue 30: the same binaries measured in cost mode on different machines (AMD EPYC and Intel Xeon),
# from the runs other proofs committed. `pgolab machines` refuses unless the label is one binary
# (sha256) in every run and the runs share their cost options; the tables go to this folder.
# Each comparison runs once its runs are committed (the MySQL and PostgreSQL ones come from proofs of
# 2026-11-27); a missing store is skipped with a line saying so.
# PROOF_STEPS=measure measures here what the comparisons lack: Debian's mariadbd on the suite and at
# the events the Intel run used (the AMD run it was compared with ran the full suite, so the write
# tests differed in what ran before them too). compare (the default) writes the tables.
. "$(dirname "$0")/../proof-env.sh"
proof_steps compare
R=docs/results
if [[ $STEPS == *" measure "* ]]; then
  # bench needs two targets: the same binary twice (an A/A pair, which also shows this run's own spread).
  $P bench --base distro --binary distro=/usr/sbin/mariadbd --binary distro-again=/usr/sbin/mariadbd \
    --measure cost --suite quick --cost-jobs 2 --cost-scale 0.25 \
    --run 'mariadb-distro-{binaries}' --store "$OUT/results.sqlite" --out "$OUT/distro-quick" </dev/null > "$OUT/distro-quick.txt"
  grep -m1 'model name' /proc/cpuinfo > "$OUT/distro-quick-host.txt"
fi
[[ $STEPS == *" compare "* ]] || exit 0
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
compare() {   # NAME LABEL FOLDER:RUN... (RUN "newest": the store's newest run)
  local name=$1 label=$2 files=(); shift 2
  for ref in "$@"; do
    local folder=${ref%%:*} run=${ref#*:}
    if [ ! -f "$R/$folder/results.sqlite" ]; then echo "$name: no store in $R/$folder yet, skipped"; return 0; fi
    [ "$run" = newest ] && run=$(sqlite3 "$R/$folder/results.sqlite" 'SELECT name FROM runs ORDER BY id DESC LIMIT 1')
    $P export "$run" --store "$R/$folder/results.sqlite" -o "$TMP/$folder-$run.json" >/dev/null 2>&1
    files+=("$TMP/$folder-$run.json")
  done
  # A refusal (not one binary, other options) is written to the table file, and the next comparison runs.
  $P machines "${files[@]}" --label "$label" --store "$TMP/scratch.sqlite" --out "$OUT/$name" > "$OUT/$name.txt" 2>&1 \
    || echo "$name: refused, see $name.txt"
}
# Debian's mariadbd 10.11.19 (9b44b62ca595): the BOLT proof (AMD EPYC, full suite) and the .deb proof
# (Intel Xeon, quick suite), both at a quarter of the events.
compare mariadb-distro distro mariadb-10.11-bolt:mariadb-bolt-870196ce mariadb-10.11-deb:mariadb-deb-8269fc0c
# The same binary on the same suite on both vendors: this folder's own run (PROOF_STEPS=measure, AMD
# EPYC) against the .deb proof's (Intel Xeon).
compare mariadb-distro-quick distro cost-across-machines:newest mariadb-10.11-deb:mariadb-deb-8269fc0c
# PostgreSQL 15.18 rel_o2nofp (gcc, 7efa1c992194) and its replicates: compared in
# ../postgresql-15-across-machines/ (its run.sh's compare step), on the same suite.
# MySQL 9.7.2 rel_o2nofp (gcc, ac35a5624eb5): the clang PGO proof's run (AMD EPYC family 25) and the
# clang PGO+LTO and gcc PGO proofs' runs (Intel Xeon), full suite, a quarter of the events. (The LTO
# proof's rel_o2nofp, 229fe636df6d, was built before the reproducible-build changes: another binary.)
compare mysql-rel_o2nofp rel_o2nofp mysql-9.7-pgo-clang-nolto:newest mysql-9.7-pgo-clang:newest \
  mysql-9.7-pgo-gcc:newest
