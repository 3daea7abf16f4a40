"""Memory known before flashing, and compile time, per zoo model and target.

    python benchmarks/memory.py      # prints the table and writes results/memory.md

Arena = the exact RAM for activations; constants = weights, biases and requantization
parameters read in place from flash; program = the whole program file.
"""

from __future__ import annotations

import time
import warnings

import torch

import mcuforge
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish


def main() -> None:
    rows = []
    for name, make in MODELS.items():
        model, example = make()
        gen = torch.Generator().manual_seed(1)
        calibration = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(16)]
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = mcuforge.compile(model, example, calibration=calibration, target="cortex-m55", progress=False)
        seconds = time.perf_counter() - start
        n_int8 = sum(op.backend == "int8" for op in prog.ops)
        rows.append([name, len(prog.ops), n_int8, sum(op.macs for op in prog.ops), prog.arena_bytes,
                     prog.constant_bytes, prog.program_bytes, round(seconds, 2)])
    text = table(["model", "ops", "int8 ops", "MACs", "arena B", "constants B", "program B", "compile s"], rows)
    publish("memory", "Memory and compile time", text, ", 16 calibration inputs")

if __name__ == "__main__":
    main()
