#!/usr/bin/env bash
# The test suite from a fresh clone: set up, lint, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/python -m pytest -q "$@"
