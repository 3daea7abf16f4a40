#!/usr/bin/env bash
# Set up everything mcuforge needs, idempotently: a virtual environment in .venv, the CPU build
# of torch 2.13.0 first (a bare `torch` requirement would pull a multi-GB CUDA build), then the
# package with its test tools and the ethos-u extra; then the Arm toolchain and QEMU when missing.
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
# ethos-u: tosa-tools and ethos-u-vela, for the Ethos-U path (mcuforge.tosa, mcuforge.ethosu) and its tests.
pip install --quiet --disable-pip-version-check -e ".[dev,ethos-u]"
# torchvision's model zoo for tests/test_public_models.py (a test dependency). 0.28.0 is the release
# that pairs with torch 2.13.0; --no-deps so that pip never swaps the CPU torch for another build.
# Its C extension does not load with the CPU torch (the tests stub it: tests/torchvision_zoo.py); the
# model definitions need only pillow besides torch.
if ! python -c "import importlib.metadata as m, sys; sys.exit(m.version('torchvision') != '0.28.0')" 2>/dev/null; then
    pip install --quiet --disable-pip-version-check --no-deps torchvision==0.28.0
fi
# The Arm cross compiler and QEMU for the firmware (apt-get, only when missing).
bash scripts/toolchain.sh
# The QEMU plugin behind the estimated cycles (mcuforge.cycles), built from our source with the host gcc
# and cached under ~/.cache/mcuforge (it is also built on first use).
python -c "from mcuforge.cycles import plugin; print('cycle plugin:', plugin.build())"
