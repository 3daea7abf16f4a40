"""Memory known before flashing, and compile time, per zoo model and target.

    python benchmarks/memory.py      # prints the table and writes results/memory.md

Arena = the exact RAM for activations and op scratch buffers; lower bound = the largest sum of
tensors live at one op, which no plan can beat (``mcuforge.plan.arena_lower_bound``); constants =
weights, biases and requantization parameters read in place from flash; program = the whole
program file.
"""

from __future__ import annotations

import time
import warnings

import torch

import mcuforge
from mcuforge.plan import arena_lower_bound
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
        bound = arena_lower_bound(prog.graph, scratch=False)
        rows.append([name, len(prog.ops), n_int8, sum(op.macs for op in prog.ops), prog.arena_bytes, bound,
                     f"{prog.arena_bytes / bound:.3f}", prog.constant_bytes, prog.program_bytes, round(seconds, 2)])
    text = table(["model", "ops", "int8 ops", "MACs", "arena B", "lower bound B", "arena / bound", "constants B",
                  "program B", "compile s"], rows)
    publish("memory", "Memory and compile time", text, ", 16 calibration inputs")

if __name__ == "__main__":
    main()
