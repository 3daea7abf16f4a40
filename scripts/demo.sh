#!/usr/bin/env bash
# The built-in example from a fresh clone: set up, then train, compile, run and report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/mcuforge demo "$@"
