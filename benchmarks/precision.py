"""Precisions side by side: int8 and W4A8 (int4 weights) on the MLPerf Tiny models and the digits demo; int8 and
A16W8 (int16 activations) on trained models.

    python benchmarks/precision.py      # prints the tables and writes results/precision.md

Per model (int8, W4A8 and A16W8): constant bytes (weights, then bias + requantization constants: per output channel;
A16W8's bias is int64; W4A8's an int16 bias where it fits and 16-bit multipliers, format 3.0), the ratio to int8
(for W4A8 beside the ratio it would have with CMSIS-NN's widths: int32 bias and multipliers), the arena, SQNR of the
output against the fp32 model (16 random normal inputs, calibration on 16 others: the zoo models have random
weights, so SQNR is the measure), and instructions per inference on the emulated cortex-m4 (DSP paths) and
cortex-m55 (MVE paths), exact under QEMU -icount (one run each).
The digits demo (a trained CNN): test accuracy of fp32, int8 and W4A8.
Linear layers (int8): one scale per tensor, one per output channel, and mcuforge's choice per layer.
A16W8 on the trained FC autoencoder and sensor-curve regression MLP (mcuforge.zoo.trained: random weights
would make the SQNR meaningless: the zoo's random FC autoencoder gives nearly the same output for every input,
its variance across inputs 1e-6 of its mean square): SQNR on held-out data (``trained_task``), the gain over
int8, and two references: A16W8 with weights rounded to nearest (without GPTQ), and the fp32 model with only its
weights rounded to nearest int8 per channel (fp32 activations: what nearest-rounded int8 weights allow; GPTQ's
rounding, fitted on the calibration data, goes beyond it).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import torch

import mcuforge
from mcuforge.examples.digits import fp32_accuracy, load_digits_data, train_digits_cnn
from mcuforge.quantize import Scheme
from mcuforge.report import table
from mcuforge.sweep.retarget import RetargetError, retarget
from mcuforge.zoo import MODELS
from mcuforge.zoo.trained import trained_task

from results_file import publish

MLPERF_TINY = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder")
BOARDS = ("cortex-m4", "cortex-m55")
WEIGHTED = ("conv2d", "depthwise_conv2d", "fully_connected", "transpose_conv2d")


def inputs(example, count: int, seed: int) -> list[tuple[torch.Tensor, ...]]:
    gen = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(count)]


def compile_model(model, example, quantization, target: str | None = None) -> mcuforge.Program:
    options = {} if target is None else {"target": target}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mcuforge.compile(model, example, calibration=inputs(example, 16, 1), progress=False,
                                quantization=quantization, **options)


def sqnr_db(model, prog, example) -> float:
    ref, got = [], []
    for x in inputs(example, 16, 2):
        with torch.no_grad():
            ref.append(model(*x).numpy().ravel())
        got.append(prog.run(*x)[0].ravel())
    ref, got = np.concatenate(ref), np.concatenate(got)
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - got) ** 2)))


def weight_bytes(prog) -> int:
    g = prog.graph
    return sum(g.tensors[op.inputs[1]].nbytes for op in g.ops if op.kind.startswith(WEIGHTED))


def instructions(prog, model, example, quantization, target: str) -> int:
    """One inference on ``target``'s board of the program a compile for ``target`` gives: the program compiled once,
    retargeted (mcuforge.sweep.retarget: the same bytes as a compile there), or compiled for ``target`` where its
    int4 weights take another layout there (S4_HALVES on Helium: an M55 program's int4 weights read on an M4 go
    through the portable reader, ~10x the instructions)."""
    try:
        prog = retarget(prog, target)
    except RetargetError:
        prog = compile_model(model, example, quantization, target)
    measured: dict = {}
    prog.run(*example, backend="qemu", measured=measured)
    return int(measured["instructions"])


def cmsis_widths_ratio(int8: mcuforge.Program) -> str:
    """The constants ratio of 4-bit weights in CMSIS-NN's argument widths: the weights halve, the per-output-channel
    bias (int32), multiplier (int32) and shift do not (what W4A8 stored before format 3.0)."""
    weights = weight_bytes(int8)
    return f"{(weights / 2 + int8.constant_bytes - weights) / int8.constant_bytes:.3f}"


def model_rows() -> list[list[object]]:
    rows = []
    for name in MLPERF_TINY:
        model, example = MODELS[name]()
        progs = {q: compile_model(model, example, q) for q in ("int8", "w4a8", "a16w8")}
        for q, prog in progs.items():
            other = prog.constant_bytes - weight_bytes(prog)
            ratio = prog.constant_bytes / progs["int8"].constant_bytes
            counts = [instructions(prog, model, example, q, t) for t in BOARDS]
            rows.append([name, q, prog.constant_bytes, weight_bytes(prog), other, f"{ratio:.3f}",
                         cmsis_widths_ratio(progs["int8"]) if q == "w4a8" else "-", prog.arena_bytes,
                         round(sqnr_db(model, prog, example), 2), *counts])
    return rows


def digits_rows() -> list[list[object]]:
    data = load_digits_data()
    model = train_digits_cnn(data, progress=False)
    calibration = [(data.x_train[i:i + 1],) for i in range(128)]
    batches = [(data.x_test[i:i + 60], data.y_test[i:i + 60]) for i in range(0, len(data.x_test), 60)]
    fp32 = fp32_accuracy(model, data.x_test, data.y_test)
    rows = [["fp32", f"{100 * fp32:.2f}", "-", "-"]]
    for q in ("int8", "w4a8"):
        prog = mcuforge.compile(model, (data.x_test[:1],), calibration=calibration, progress=False, quantization=q)
        acc = mcuforge.evaluate(prog, batches, progress=False)
        rows.append([q, f"{100 * acc:.2f}", f"{100 * (acc - fp32):+.2f}", prog.constant_bytes])
    return rows


def linear_rows() -> list[list[object]]:
    """Linear layers per tensor, per channel, and as mcuforge chooses (per channel where the rounding error of
    the layer's weights drops by at least 1 dB)."""
    rows = []
    schemes = {"per tensor": Scheme("int8", linear_per_channel=False),
               "per channel": Scheme("int8", linear_per_channel=True), "mcuforge": "int8"}
    for name in ("ds_cnn", "fc_autoencoder"):
        model, example = MODELS[name]()
        for label, scheme in schemes.items():
            prog = compile_model(model, example, scheme)
            per_channel = sum(op.kind == "fully_connected_per_channel_s8" for op in prog.ops)
            linears = sum(op.kind.startswith("fully_connected") for op in prog.ops)
            rows.append([name, label, f"{per_channel} of {linears}", round(sqnr_db(model, prog, example), 2),
                         prog.constant_bytes])
    return rows


def sqnr_on(ref: np.ndarray, got: np.ndarray) -> float:
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    return float(10 * np.log10(np.sum(ref**2) / np.sum((ref - got) ** 2)))


def int8_weights_only(model: torch.nn.Module) -> torch.nn.Module:
    """The fp32 model with each linear / conv weight rounded to int8 per output channel (max |w| / 127)."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
                w = m.weight.reshape(m.weight.shape[0], -1)
                scale = (w.abs().amax(dim=1) / 127).clamp_min(1e-30).reshape(-1, *[1] * (m.weight.dim() - 1))
                m.weight.copy_(torch.round(m.weight / scale) * scale)
    return model


def a16w8_rows() -> list[list[object]]:
    rows = []
    nearest = Scheme("a16w8 (nearest)", activation_bits=16, linear_per_channel=True)
    for name in ("fc_autoencoder", "sensor_regression"):
        model, example, calibration, test = trained_task(name)
        with torch.no_grad():
            ref = model(test).numpy()
            ceiling = sqnr_on(ref, int8_weights_only(model)(test).numpy())
        progs = {}
        for scheme in ("int8", "a16w8", nearest):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                progs[getattr(scheme, "name", scheme)] = mcuforge.compile(
                    model, example, calibration=calibration, progress=False, quantization=scheme)
        base = sqnr_on(ref, progs["int8"].run(test)[0])
        for label, prog in progs.items():
            sqnr = sqnr_on(ref, prog.run(test)[0])
            skip = label == nearest.name
            counts = ["-", "-"] if skip else [instructions(prog, model, example, label, t) for t in BOARDS]
            rows.append([name, label, round(sqnr, 2), f"{sqnr - base:+.2f}", prog.constant_bytes, prog.arena_bytes,
                         *counts])
        rows.append([name, "fp32 act., int8 weights", round(ceiling, 2), f"{ceiling - base:+.2f}", "-", "-", "-", "-"])
    return rows


def main() -> None:
    models = table(["model", "scheme", "constants B", "weights B", "bias+requant B", "vs int8",
                    "with int32 bias+mult", "arena B", "SQNR dB",
                    *[f"{t} instr" for t in BOARDS]], model_rows())
    digits = table(["digits CNN", "test accuracy %", "vs fp32 (points)", "constants B"], digits_rows())
    linear = table(["model", "linear weights", "per-channel layers", "SQNR dB (int8)", "constants B"], linear_rows())
    a16w8 = table(["trained model", "scheme", "SQNR dB", "vs int8 dB", "constants B", "arena B",
                   *[f"{t} instr" for t in BOARDS]], a16w8_rows())
    publish("precision", "Precisions: int8, W4A8 and A16W8", "\n\n".join([models, digits, linear, a16w8]),
            ", MLPerf Tiny (random weights): 16 calibration inputs, 16 evaluation inputs; trained models: "
            "mcuforge.zoo.trained.trained_task's data; instructions: QEMU -icount, one run")


if __name__ == "__main__":
    main()
