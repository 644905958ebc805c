#!/bin/bash
# How often llvm-bolt 16 crashes instrumenting one MariaDB server, with its default threads and with
# --no-threads, and whether the two write the same binary. INPUT: the linked server BOLT starts from
# (default: this machine's rel_lto_pgo_use_clang_bolt of MariaDB 10.11.18, the queue's 2026-11-28
# crash); RUNS each way (default 10). Output: crashes.txt (exit code, seconds, sha256 of the output).
set -uo pipefail
. "$(dirname "$0")/instrument.sh"
RUNS=${RUNS:-10}
{
  echo "# input $INPUT sha256 $(sha256sum "$INPUT" | cut -c1-12); $(llvm-bolt-16 --version | grep -m1 -i 'llvm version')"
  echo "# threads|run|exit|seconds|output sha256"
  for threads in default no-threads; do
    extra=(); [ $threads = no-threads ] && extra=(--no-threads)
    for i in $(seq 1 "$RUNS"); do
      start=$(date +%s.%N)
      instrument "${extra[@]}"
      rc=$?
      digest=-; [ $rc = 0 ] && digest=$(sha256sum "$WORK/out" | cut -c1-12)
      echo "$threads|$i|$rc|$(echo "$(date +%s.%N) - $start" | bc | cut -c1-5)|$digest"
    done
  done
} > "$OUT/crashes.txt"
awk -F'|' '!/^#/ {n[$1]++; if ($3 != 0) c[$1]++} END {for (t in n) printf "%s: %d of %d runs crashed\n", t, c[t], n[t]}' "$OUT/crashes.txt" >> "$OUT/crashes.txt"
