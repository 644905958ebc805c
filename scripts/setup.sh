#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for pgolab: system packages, then a virtualenv
# in .venv with pgolab installed. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-system.sh
# pip, not python: an interrupted `python3 -m venv` leaves a python without pip (seen here).
if [ ! -x .venv/bin/pip ]; then
  python3 -m venv --clear .venv
fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'
echo "pgolab: ready (.venv/bin/pgolab)"
