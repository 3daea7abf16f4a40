"""W4A8 against int8 on the Cortex-M55 (Helium) in estimated cycles: the MLPerf Tiny zoo models compiled both ways
for cortex-m55 (W4A8's conv2d_s4 / fully_connected_s4 weights then in the S4_HALVES layout, docs/format.md), one
inference each on the QEMU board with the cycle model (docs/cycles.md), and the ratio (issue 27's goal: at most
1.2). Prints the table; writes no results file.

    python benchmarks/w4a8_cycles.py [model ...]
"""

from __future__ import annotations

import sys
import warnings

import torch

import mcuforge
from mcuforge.report import table
from mcuforge.zoo import MODELS

MLPERF_TINY = ("fc_autoencoder", "ds_cnn", "resnet8", "mobilenet_v1_025")
TARGET = "cortex-m55"


def compile_model(name: str, quantization: str) -> tuple[mcuforge.Program, tuple]:
    """The zoo model compiled as benchmarks/firmware.py does (16 random calibration inputs, seed 1)."""
    model, example = MODELS[name]()
    gen = torch.Generator().manual_seed(1)
    calibration = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(16)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(
            model, example, calibration=calibration, target=TARGET, progress=False, quantization=quantization
        )
    return prog, example


def estimated_cycles(prog: mcuforge.Program, example: tuple) -> float:
    facts: dict = {}
    prog.run(*example, backend="qemu", measured=facts, board={"cycles": True})
    return facts["cycles"].cycles


def main(names: list[str]) -> None:
    rows = []
    for name in names:
        int8, example = compile_model(name, "int8")
        w4a8, _ = compile_model(name, "w4a8")
        c8, c4 = estimated_cycles(int8, example), estimated_cycles(w4a8, example)
        rows.append(
            [name, f"{c8:,.0f}", f"{c4:,.0f}", f"{c4 / c8:.3f}", f"{int8.constant_bytes:,}", f"{w4a8.constant_bytes:,}"]
        )
        print(f"{name}: {c4 / c8:.3f}", flush=True)
    print(
        table(
            ["model", "int8 est. cycles", "W4A8 est. cycles", "W4A8 / int8", "int8 constants", "W4A8 constants"], rows
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:] or list(MLPERF_TINY))
