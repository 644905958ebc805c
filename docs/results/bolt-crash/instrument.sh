# Sourced by run.sh and threads.sh (after `set -uo pipefail`): OUT (this folder), INPUT (the script's
# first argument, or this machine's rel_lto_pgo_use_clang_bolt of MariaDB 10.11.18, the linked server
# BOLT starts from: the queue's 2026-11-28 crash), a scratch folder WORK removed on exit, and
# `instrument OPTION...`: one llvm-bolt-16 -instrument run of INPUT into $WORK/out, its log in $WORK/log.
OUT=$(cd "$(dirname "$0")" && pwd)
INPUT=${1:-$(ls -d ${PGOLAB_HOME:-/var/cache/pgolab}/builds/mariadb-10.11.18-*/rel_lto_pgo_use_clang_bolt/final/bolt/input | head -1)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
instrument() {
  rm -f "$WORK/out"
  llvm-bolt-16 "$INPUT" -o "$WORK/out" -instrument --instrumentation-file="$WORK/prof" \
    --instrumentation-file-append-pid --runtime-instrumentation-lib=llvm-16/lib/libbolt_rt_instr.a \
    "$@" > "$WORK/log" 2>&1
}
