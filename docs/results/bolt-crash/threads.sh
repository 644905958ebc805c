#!/bin/bash
# Whether llvm-bolt 16's -instrument output depends on its thread count: the input of run.sh,
# --thread-count 1, 2, 4 and 8, and --no-threads with and without --thread-count=4; a run killed by a
# signal is run again (up to 4 times). Output: thread-counts.txt (options, attempts, sha256 of the
# output without its .note.bolt_info section, which holds llvm-bolt's command line, and sha256 of
# that note alone).
set -uo pipefail
. "$(dirname "$0")/instrument.sh"
{
  echo "# input $INPUT sha256 $(sha256sum "$INPUT" | cut -c1-12); machine: $(nproc) CPUs"
  echo "# options|runs (killed ones included)|output sha256 without .note.bolt_info|the note's sha256"
  for opts in "--thread-count=1" "--thread-count=2" "--thread-count=4" "--thread-count=8" "--no-threads" \
              "--no-threads --thread-count=4"; do
    for attempt in 1 2 3 4; do
      instrument $opts && break
    done
    digest=-; note=-
    if [ -f "$WORK/out" ]; then
      # objcopy warns that BOLT's extra sections fit no segment; the copy still serves for a digest
      objcopy --remove-section=.note.bolt_info "$WORK/out" "$WORK/code" 2>/dev/null
      digest=$(sha256sum "$WORK/code" | cut -c1-12)
      note=$(objcopy --dump-section .note.bolt_info=/dev/stdout "$WORK/out" "$WORK/note-copy" 2>/dev/null | sha256sum | cut -c1-12)
    fi
    echo "$opts|$attempt|$digest|$note"
  done
} > "$OUT/thread-counts.txt" 2>&1
