"""precision="auto" on DS-CNN and the digits CNN under three pairs of budgets: flash halfway between the
all-W4A8 and all-int8 programs (no RAM budget); the same flash and a RAM budget halfway between the all-int8
and all-A16W8 arenas; room: the all-A16W8 program's flash and that RAM budget. Each program's flash, arena
and output SQNR on the calibration data, and the per-layer choice with its reasons.

    python benchmarks/auto_precision.py      # prints the tables and writes results/auto_precision.md

DS-CNN: random weights, 16 random normal calibration inputs. Digits CNN: trained (12 epochs, seed 0),
32 training images for calibration. SQNR of the logits against the fp32 model on the calibration data
(what the choice optimizes).

    python benchmarks/auto_precision.py --seeds 5   # adds the spread over models: the table below, per seed

Over seeds (the figure tests used to assert on one model, "auto with room beats int8 by 1 dB"): DS-CNN made
input-dependent (tests/input_dependent.py, weights per seed) and the digits CNN trained with seeds 0.. (fewer:
training takes seconds); per seed the auto program with room (the all-A16W8 program's flash, RAM halfway) and
the flash-halfway one against int8 and W4A8, on the calibration data and on held-out inputs; mean, standard
deviation and worst over the seeds.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

import mcuforge
from mcuforge.accuracy.sensitivity import fp32_outputs, output_sqnr, stacked
from mcuforge.examples.digits import load_digits_data, train_digits_cnn
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import input_dependent  # noqa: E402
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


def seeded(name: str, seed: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], list, list]:
    """(model, example, calibration, held-out items) of seed ``seed``."""
    if name == "digits CNN":
        data = load_digits_data()
        model = train_digits_cnn(data, seed=seed, progress=False)
        return (model, (data.x_test[:1],), [(data.x_train[i:i + 1],) for i in range(0, 320, 10)],
                [(data.x_test[i:i + 1],) for i in range(0, 360, 6)])
    model, example = input_dependent.build("ds_cnn", seed)
    items = input_dependent.items
    return model, example, items(example, 16, 100 + seed), items(example, 32, 200 + seed)


def gains(name: str, seed: int) -> dict[str, float]:
    """Per seed: SQNR differences (dB) of the auto programs from int8 and W4A8, on calibration and held-out data."""
    model, example, calibration, held = seeded(name, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        programs = {q: mcuforge.compile(model, example, calibration=calibration, progress=False, quantization=q)
                    for q in ("int8", "w4a8", "a16w8")}
        int8, a16w8, w4a8 = programs["int8"], programs["a16w8"], programs["w4a8"]
        ram = (int8.arena_bytes + a16w8.arena_bytes) // 2
        programs["room"] = mcuforge.compile(model, example, calibration=calibration, progress=False,
                                            precision="auto", flash_budget=a16w8.program_bytes, ram_budget=ram)
        programs["flash"] = mcuforge.compile(model, example, calibration=calibration, progress=False,
                                             precision="auto",
                                             flash_budget=(int8.program_bytes + w4a8.program_bytes) // 2)
    out = {}
    for data, items in (("calibration", calibration), ("held out", held)):
        batch = stacked(items)
        reference = fp32_outputs(model, batch)
        sqnr = {k: output_sqnr(p, reference, batch) for k, p in programs.items()}
        out[f"room - int8, {data}"] = sqnr["room"] - sqnr["int8"]
        out[f"flash - w4a8, {data}"] = sqnr["flash"] - sqnr["w4a8"]
    return out


def spread(seeds: int) -> str:
    rows = []
    for name, count in (("DS-CNN", seeds), ("digits CNN", max(2, seeds // 2))):
        runs = [gains(name, seed) for seed in range(count)]
        for key in runs[0]:
            values = np.array([r[key] for r in runs])
            rows.append([name, count, key, f"{values.mean():+.2f}", f"{values.std():.2f}", f"{values.min():+.2f}"])
    return table(["model", "seeds", "auto against (dB)", "mean", "std", "worst"], rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=0, help="also the spread over this many seeds")
    args = parser.parse_args()
    text = "\n\n".join(measure(name, make) for name, make in (("DS-CNN", ds_cnn), ("digits CNN", digits)))
    if args.seeds:
        text += "\n\nOver seeds (auto with room: the all-A16W8 flash, RAM halfway; flash: halfway to all-W4A8):\n"
        text += spread(args.seeds)
    publish("auto_precision", 'precision="auto" under flash and RAM budgets', text,
            "; SQNR on the calibration data against fp32" + (f"; `--seeds {args.seeds}`" if args.seeds else ""))


if __name__ == "__main__":
    main()
