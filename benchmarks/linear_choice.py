"""A linear layer's weights: one scale per output channel or one for the tensor, chosen per layer by the
error on its output over the calibration inputs (mcuforge's default, ``quantize/linear_choice.py``), against
the rule it replaced (the weights' own rounding error, 1 dB), always per channel and always per tensor.

    python benchmarks/linear_choice.py            # 20 seeds; writes results/linear_choice.md
    python benchmarks/linear_choice.py --seeds 3  # fewer (prints, does not publish)

Models: the four MLPerf Tiny models made input-dependent (tests/input_dependent.py: BatchNorm statistics of
their own inputs, a random affine; weights drawn per seed), int8. Calibration: 16 random normal inputs;
SQNR of the outputs against the fp32 model on 32 other ones (held out). Per model: mean and standard
deviation over the seeds, the worst seed's difference from always-per-channel, and the flash the rule saves
against always-per-channel (mean bytes). One seed is a rounding draw: the means are the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import mcuforge
from mcuforge.accuracy.sensitivity import fp32_outputs, output_sqnr, stacked
from mcuforge.quantize import Scheme, linear_choice, weight_observers
from mcuforge.report import table

from results_file import publish

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from input_dependent import NAMES, build, items  # noqa: E402

quantize = importlib.import_module("mcuforge.quantize")  # (the package's own input_grams, patched below)
RULES = {"by output error": "int8", "by weight error (before)": "int8",
         "per channel": Scheme("int8", linear_per_channel=True), "per tensor": Scheme("int8", linear_per_channel=False)}


@contextlib.contextmanager
def rule_before() -> Iterator[None]:
    """The rule this one replaced: per channel where the weights' own rounding error (``G = I``: the quantizer's
    fallback when it is given no calibration inputs) falls by at least 1 dB."""
    saved = (quantize.input_grams, weight_observers.PER_CHANNEL_MIN_GAIN_DB, linear_choice.PER_CHANNEL_MIN_GAIN_DB)
    quantize.input_grams = lambda *_args: {}  # the layers' inputs withheld
    weight_observers.PER_CHANNEL_MIN_GAIN_DB = linear_choice.PER_CHANNEL_MIN_GAIN_DB = 1.0
    try:
        yield
    finally:
        quantize.input_grams, weight_observers.PER_CHANNEL_MIN_GAIN_DB, linear_choice.PER_CHANNEL_MIN_GAIN_DB = saved


def measure(name: str, seed: int) -> dict[str, tuple[float, int]]:
    """Per rule: (held-out output SQNR dB, program bytes)."""
    model, example = build(name, seed)
    calibration, held = items(example, 16, 100 + seed), items(example, 32, 200 + seed)
    batch = stacked(held)
    reference = fp32_outputs(model, batch)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rule, scheme in RULES.items():
            with rule_before() if rule.endswith("(before)") else contextlib.nullcontext():
                prog = mcuforge.compile(model, example, calibration=calibration, progress=False, quantization=scheme)
            out[rule] = (output_sqnr(prog, reference, batch), prog.program_bytes)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    rows, summary = [], []
    for name in NAMES:
        runs = [measure(name, seed) for seed in range(args.seeds)]
        sqnr = {r: np.array([run[r][0] for run in runs]) for r in RULES}
        size = {r: np.array([run[r][1] for run in runs]) for r in RULES}
        for r in RULES:
            diff = sqnr[r] - sqnr["per channel"]
            saved = (size["per channel"] - size[r]).mean()
            rows.append([name, r, f"{sqnr[r].mean():.2f}", f"{sqnr[r].std():.2f}", f"{diff.mean():+.2f}",
                         f"{diff.min():+.2f}", int(np.sum(diff < -0.05)), f"{saved:.0f}"])
        summary.append(sqnr["by output error"].mean() - sqnr["per channel"].mean())
    text = table(["model", "linear weights", "SQNR dB mean", "std", "vs per channel: mean", "worst seed",
                  "seeds lower", "flash saved B"], rows)
    text += (f"\n\n{args.seeds} seeds per model; 'seeds lower': by more than 0.05 dB than per channel. Mean over the "
             f"models of (by output error - per channel): {np.mean(summary):+.3f} dB.")
    if args.seeds == 20:
        publish("linear_choice", "Linear weights per channel or per tensor", text,
                "; int8, held-out SQNR against fp32")
    else:
        print(text)


if __name__ == "__main__":
    main()
