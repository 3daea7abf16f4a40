#!/usr/bin/env bash
# Set up everything mcuforge needs, idempotently: a virtual environment in .venv, the CPU build
# of torch 2.13.0 first (a bare `torch` requirement would pull a multi-GB CUDA build), then the
# package with its test tools; then the Arm toolchain and QEMU when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
if ! python -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
    pip install --quiet --disable-pip-version-check torch==2.13.0
fi
pip install --quiet --disable-pip-version-check -e ".[dev]"
# The Arm cross compiler and QEMU for the firmware (apt-get, only when missing).
bash scripts/toolchain.sh
