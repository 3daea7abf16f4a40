"""precision="auto" on DS-CNN and the digits CNN under three pairs of budgets: flash halfway between the
all-W4A8 and all-int8 programs (no RAM budget); the same flash and a RAM budget halfway between the all-int8
and all-A16W8 arenas; room: the all-A16W8 program's flash and that RAM budget. Each program's flash, arena
and output SQNR on the calibration data, and the per-layer choice with its reasons.

    python benchmarks/auto_precision.py      # prints the tables and writes results/auto_precision.md

DS-CNN: random weights, 16 random normal calibration inputs. Digits CNN: trained (12 epochs, seed 0),
32 training images for calibration. SQNR of the logits against the fp32 model on the calibration data
(what the choice optimizes).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import torch

import mcuforge
from mcuforge.accuracy.sensitivity import fp32_outputs, output_sqnr, stacked
from mcuforge.examples.digits import load_digits_data, train_digits_cnn
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import calibration_set  # noqa: E402


def ds_cnn() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], list]:
    model, example = MODELS["ds_cnn"]()
    return model, example, calibration_set(example, 16, seed=1)


def digits() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], list]:
    data = load_digits_data()
    model = train_digits_cnn(data, progress=False)
    return model, (data.x_test[:1],), [(data.x_train[i:i + 1],) for i in range(0, 320, 10)]


def measure(name: str, make) -> str:  # noqa: ANN001 - a factory of (model, example, calibration)
    model, example, calibration = make()
    batch = stacked(calibration)
    reference = fp32_outputs(model, batch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        programs = {q: mcuforge.compile(model, example, calibration=calibration, progress=False, quantization=q)
                    for q in ("int8", "w4a8", "a16w8")}
        int8, a16w8 = programs["int8"], programs["a16w8"]
        flash = (int8.program_bytes + programs["w4a8"].program_bytes) // 2
        ram = (int8.arena_bytes + a16w8.arena_bytes) // 2
        cases = {"auto, flash": (flash, None), "auto, flash+RAM": (flash, ram),
                 "auto, room": (a16w8.program_bytes, ram)}
        budgets = {q: (None, None) for q in programs} | cases
        programs |= {case: mcuforge.compile(model, example, calibration=calibration, progress=False,
                                            precision="auto", flash_budget=f, ram_budget=r)
                     for case, (f, r) in cases.items()}
    rows = []
    for q, p in programs.items():
        f, r = budgets[q]
        within = "-" if f is None else ("yes" if p.program_bytes <= f and (r is None or p.arena_bytes <= r) else "no")
        rows.append([q, "-" if f is None else f"{f:,}", "-" if r is None else f"{r:,}", p.program_bytes,
                     p.arena_bytes, round(output_sqnr(p, reference, batch), 2), within])
    out = [f"{name}: flash budget {flash:,} B (halfway between all-W4A8 and all-int8), RAM budget {ram:,} B "
           f"(halfway between the all-int8 and all-A16W8 arenas), room: {a16w8.program_bytes:,} B of flash\n"
           + table(["program", "flash budget", "RAM budget", "flash B", "arena B", "output SQNR dB", "within budgets"],
                   rows)]
    for case in cases:
        choice = [[c["module"], c["precision"], c["reason"]] for c in programs[case].meta["precision_choice"]]
        out.append(f"{name}, {case}:\n" + table(["layer", "precision", "why"], choice))
    return "\n\n".join(out)


def main() -> None:
    text = "\n\n".join(measure(name, make) for name, make in (("DS-CNN", ds_cnn), ("digits CNN", digits)))
    publish("auto_precision", 'precision="auto" under flash and RAM budgets', text,
            "; SQNR on the calibration data against fp32")


if __name__ == "__main__":
    main()
