#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite (unit tests, then the slow
# end-to-end ones: MariaDB configure per variant axis, the PostgreSQL PGO
# pipeline with gcc and clang, the lifecycle of Debian's mariadbd).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -v -p no:cacheprovider --durations=15 "$@"
