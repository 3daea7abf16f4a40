"""Calibration quality: int8 SQNR against the fp32 model, per zoo model and observer choice.

    python benchmarks/calibration_sqnr.py      # prints the table and writes results/calibration_sqnr.md

mcuforge's default observers are those of ExecuTorch's Cortex-M quantizer (histogram observers
for activations, per-channel min/max for weights); the min/max activation column is the common
cheaper alternative, for comparison. Calibration: 32 random normal inputs; evaluation: 16 other
inputs of the same distribution.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import torch

import mcuforge
from mcuforge.quantize import ObserverConfig
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish


def sqnr_db(reference: np.ndarray, test: np.ndarray) -> float:
    noise = np.sum((reference - test) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(reference**2) / noise))


def inputs(example, count, seed):
    gen = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(count)]


def model_sqnr(model, example, observers) -> tuple[float, float]:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=inputs(example, 32, 1), progress=False,
                                observers=observers)
    seconds = time.perf_counter() - start
    ref, got = [], []
    for x in inputs(example, 16, 2):
        with torch.no_grad():
            ref.append(model(*x).numpy().ravel())
        got.append(prog.run(*x)[0].ravel())
    return sqnr_db(np.concatenate(ref), np.concatenate(got)), seconds


def main() -> None:
    from torchao.quantization.pt2e import MinMaxObserver  # after mcuforge, which quiets torchao's import noise

    configs = {
        "mcuforge (histogram act, per-channel min/max w)": ObserverConfig(),
        "min/max act, per-channel min/max w": ObserverConfig(activation=MinMaxObserver),
    }
    rows = []
    for name, make in MODELS.items():
        model, example = make()
        row: list[object] = [name]
        for config in configs.values():
            sqnr, seconds = model_sqnr(model, example, config)
            row += [round(sqnr, 2)]
        row.append(round(seconds, 2))
        rows.append(row)
    text = table(["model", *[f"SQNR dB: {c}" for c in configs], "compile s (last)"], rows)
    publish("calibration_sqnr", "int8 SQNR vs fp32", text)

if __name__ == "__main__":
    main()
