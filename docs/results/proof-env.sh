# The start every queued proof's run.sh shares (sourced as its first command): strict mode, the
# checkout's root as working folder, pgolab set up. OUT is the proof's folder, or PROOF_OUT (the
# queue keeps stores outside the work tree, see queue.sh); P is the pgolab to run, or PGOLAB.
set -euo pipefail
PROOF_DIR=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
cd "$PROOF_DIR/../../.."
OUT=${PROOF_OUT:-docs/results/$(basename "$PROOF_DIR")}
P=${PGOLAB:-.venv/bin/pgolab}
mkdir -p "$OUT"
bash scripts/setup.sh >/dev/null

# The lifecycle and training-mix tests against a built mysqld of VERSION's rel_o2nofp, output in
# $OUT/server-tests.txt (CI has none: Debian 12 packages no MySQL server, and a build takes longer
# than CI's budget). A failure is recorded there; the proof goes on.
mysql_server_tests() {   # VERSION
  PGOLAB_MYSQLD=$(ls -d "${PGOLAB_HOME:-/var/cache/pgolab}"/builds/mysql-"$1"-*/rel_o2nofp/final/install/bin/mysqld | head -1) \
    "$(dirname "$P")/python" -m pytest -v -p no:cacheprovider tests/test_mysql_server.py > "$OUT/server-tests.txt" 2>&1 || true
}

# A run.sh made of steps: STEPS is PROOF_STEPS (default: every step, in order) padded with spaces,
# for [[ $STEPS == *" name "* ]]. A misspelt step would otherwise run nothing and report success.
proof_steps() {   # KNOWN_STEP...
  STEPS=" ${PROOF_STEPS:-$*} "
  local s
  for s in $STEPS; do
    [[ " $* " == *" $s "* ]] || { echo "error: unknown PROOF_STEPS step '$s'; the steps are: $*" >&2; exit 2; }
  done
}

# A piece's output file, from this machine's $OUT or else as committed beside run.sh (under the queue
# $OUT outlives a session on a machine that stays, and is not refreshed from the checkout: a shard
# committed from another machine is only there). Prints the path; fails if neither has it.
piece_file() {   # NAME
  if [ -f "$OUT/$1" ]; then echo "$OUT/$1"; elif [ -f "$PROOF_DIR/$1" ]; then echo "$PROOF_DIR/$1"; else return 1; fi
}

# The newest run of $OUT/results.sqlite named PREFIX-{binaries}, exported to FILE.
export_newest_run() {   # PREFIX FILE
  local run
  run=$($P report --store "$OUT/results.sqlite" --list | grep -o "$1-[0-9a-f]*" | tail -1)
  $P export "$run" --store "$OUT/results.sqlite" -o "$2"
}

# Whether this CPU has AVX-512: valgrind 3.19 cannot run a -march=native build made here in cost mode.
cpu_has_avx512() { grep -qw avx512f /proc/cpuinfo; }

# A matrix's -march=native piece: rel_o2nofp and every published -march=native variant, cost only, on a
# CPU without AVX-512 (a shard on a CPU with it leaves those builds out of cost; the merge takes this
# piece as a --fill run). Output $OUT/STEM.run.gz (skipped once there), .txt, report folder and the
# builds of SERVER (as `pgolab builds --server` takes it) in builds-STEM.md.
native_piece() {   # STEM RUN_PREFIX SOURCE SERVER MATRIX_OPTION...
  local stem=$1 prefix=$2 source=$3 server=$4 f native
  shift 4
  if cpu_has_avx512; then
    echo "native: this CPU has AVX-512, which valgrind 3.19 cannot run; run this piece on one without" >&2; return 0
  fi
  if f=$(piece_file "$stem.run.gz"); then echo "native: done ($f), skipped"; return 0; fi
  native=$($P variants --json | python3 -c 'import json,sys; print(",".join(v["name"] for v in json.load(sys.stdin) if "native" in v["name"]))')
  # Each step ends the piece if it fails, also where set -e is off (a caller's `native_piece ... || rc=$?`):
  # a run cut short must not be exported as the piece's file, which marks it done.
  $P matrix "$source" --variants "rel_o2nofp,$native" --base rel_o2nofp --measure cost "$@" --run "$prefix-{binaries}" \
    --store "$OUT/results.sqlite" --out "$OUT/$stem" </dev/null > "$OUT/$stem.txt" || return
  export_newest_run "$prefix" "$OUT/$stem.run.gz" || return
  $P builds --markdown --server "$server" > "$OUT/builds-$stem.md"
}

# One server's axis table (`pgolab axes`) from committed runs, into $OUT/report and $OUT/axes.txt. Each
# piece is PROOF/STORE:RUN (docs/results/PROOF/STORE.sqlite's run, exported first) or a run file.
axes_table() {   # PIECE...
  local tmp=/tmp/pgolab-axes-$(basename "$OUT") piece files=()
  rm -rf "$tmp"; mkdir -p "$tmp"
  for piece in "$@"; do
    if [ -f "$piece" ]; then files+=("$piece"); continue; fi
    $P export "${piece#*:}" --store "docs/results/${piece%%:*}.sqlite" -o "$tmp/${piece#*:}.run.gz" 2>/dev/null || return
    files+=("$tmp/${piece#*:}.run.gz")
  done
  rm -rf "$OUT/report"
  COLUMNS=400 $P axes "${files[@]}" --out "$OUT/report" </dev/null > "$OUT/axes.txt"; local rc=$?
  rm -rf "$tmp"
  return $rc
}
