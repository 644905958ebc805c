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
