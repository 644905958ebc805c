#!/usr/bin/env bash
# Sets up the machine, checks the import graph (scripts/check_imports.py), then runs the whole
# test suite (unit tests, then the slow end-to-end ones: MariaDB configure per variant axis, the
# PostgreSQL PGO pipeline with gcc and clang, the lifecycle of Debian's mariadbd).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The machine first: the suite's time is mostly compiles, and it has taken from 25 to 76 minutes on
# the machines here (README), so a duration is read with the machine it ran on.
.venv/bin/python -c 'from pgolab.host import Host; print("tests on:", Host.this().describe())'
# The import graph first (a second): no cycle, no upward import between layers, every module placed.
.venv/bin/python scripts/check_imports.py
# Two workers, one file each at a time: the PostgreSQL pipeline file on one, the rest on the other
# (each worker has its own pgolab home; see LONGEST_FIRST in tests/conftest.py).
exec .venv/bin/python -m pytest -v -p no:cacheprovider --durations=15 -n 2 --dist loadfile --no-loadscope-reorder "$@"
