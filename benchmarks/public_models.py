"""The torchvision networks of tests/test_public_models.py, end to end, one row per model.

    python benchmarks/public_models.py                     # all eight; writes results/public_models.md
    python benchmarks/public_models.py resnet18 mnasnet0_5 # some only (prints, does not publish)

Columns: MACs counted by PyTorch (FlopCounterMode, FLOPs / 2: independent of mcuforge); the share of
them that mcuforge runs on int8 kernels (its int8 ops' ``macs`` over PyTorch's count); arena and
constant bytes (cortex-m55); SQNR of the int8 program's logits against the fp32 model on random
normal inputs; compile seconds (wall, 16 calibration inputs: noisy on a shared machine); whether
the C runtime on the host gives the host Python runtime's bytes on those inputs; fp32 ops left.
A model that fails to compile or run gets its error in the last column instead of figures.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

import mcuforge
from mcuforge import cruntime
from mcuforge.report import table
from mcuforge.runtime import execute

from results_file import publish

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the tested models, one definition
from torchvision_zoo import INPUT_HW, NAMES, build, reference_macs  # noqa: E402

HEADERS = ["model", "MACs (torch)", "int8 MAC share", "arena B", "constants B", "SQNR dB", "compile s",
           "C == Python", "fp32 ops", "note"]


def sqnr_db(reference: np.ndarray, test: np.ndarray) -> float:
    reference, test = reference.astype(np.float64), test.astype(np.float64)
    noise = np.sum((reference - test) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(reference**2) / noise))


def measure(name: str, calibration_count: int, eval_count: int) -> list[object]:
    model, example = build(name)
    macs = reference_macs(model, example)
    gen = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(example[0].shape, generator=gen),) for _ in range(calibration_count)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = mcuforge.compile(model, example, calibration=calibration, target="cortex-m55", progress=False)
    except Exception as exc:  # noqa: BLE001 - the table says which model fails and why
        return [name, macs, "", "", "", "", "", "", "", f"compile: {type(exc).__name__}: {str(exc)[:80]}"]
    int8_macs = sum(op.macs for op in prog.ops if op.backend == "int8")
    fp32_ops = sum(op.backend != "int8" and op.kind not in ("quantize", "dequantize") for op in prog.ops)

    data = torch.randn((eval_count, *example[0].shape[1:]), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        reference = model(data).numpy()
    (logits,) = prog.run(data)
    sqnr = round(sqnr_db(reference, logits), 1)

    # C == Python on the quantized evaluation inputs, one run at a time, byte for byte.
    program = prog.to_bytes()
    graph = prog.graph
    same, note = True, ""
    try:
        for i in range(eval_count):
            (x,), _, _ = prog._program_inputs([data[i:i + 1]])
            inputs = [x[0]]
            python = execute(graph, inputs)
            c_host, _ = cruntime.run_program(program, inputs)
            same &= all(p.tobytes() == c.tobytes() for p, c in zip(python, c_host, strict=True))
    except Exception as exc:  # noqa: BLE001 - e.g. MF_ERR_UNSUPPORTED_OP: an fp32 op without a C kernel
        same, note = False, f"C runtime: {str(exc)[:80]}"
    return [name, macs, f"{int8_macs / macs:.2%}", prog.arena_bytes, prog.constant_bytes, sqnr,
            round(prog.compile_seconds, 2), "yes" if same else "NO", fp32_ops, note]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"models (default: all of {', '.join(NAMES)})")
    parser.add_argument("--calibration", type=int, default=16, help="calibration inputs per model")
    parser.add_argument("--inputs", type=int, default=4, help="random inputs for SQNR and C == Python")
    args = parser.parse_args()
    names = args.models or list(NAMES)
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        parser.error(f"unknown models {unknown}")
    rows = []
    for name in names:
        rows.append(measure(name, args.calibration, args.inputs))
        print(f"{name}: {rows[-1][6]} s {rows[-1][-1]}", flush=True)
    text = table(HEADERS, rows)
    note = (f", cortex-m55, torchvision models with random weights and randomized BatchNorm statistics, "
            f"{INPUT_HW}x{INPUT_HW} inputs, 10 classes, {args.calibration} calibration and {args.inputs} "
            "evaluation inputs (random normal). int8 MAC share = MACs of mcuforge's int8 ops / MACs counted "
            "by torch.utils.flop_counter.")
    if args.models:
        print(text)
    else:
        publish("public_models", "torchvision networks end to end", text, note)


if __name__ == "__main__":
    main()
