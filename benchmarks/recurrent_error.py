"""Where kws_lstm's fused LSTM loses accuracy: the last hidden state's error, source by source, beside the
fp32-recurrent (ExecuTorch) flow's.

    python benchmarks/recurrent_error.py      # prints the table and writes results/recurrent_error.md

On the first sets of benchmarks/recurrent.py (the same calibration and evaluation clips), per set: SQNR
against the fp32 layer of the last hidden state h_n (what the classifier reads) of

- the fused layer, the program's lstm_s8 op run on the host (the integer kernel);
- a float model of that kernel with one of its roundings at a time: the int8 input (at the program's input
  quantization), the int8 weights (one scale per gate matrix, as the lowering makes them), the int16 Q3.12
  gate inputs with Q0.15 gates, the int16 cell state (at the op's power-of-two scale), and the int8 hidden
  state fed back every step (at the op's output quantization); then all of them at once, which the kernel
  matches within a few hundredths of a dB;
- the fp32-recurrent flow: the fp32 layer's h_n quantized to int8 as its classifier's input observer
  calibrated it (on the last states of the 32 calibration clips), and the share of h_n values that scale
  clips.

The last two columns are the SQNR of the model's logits with each flow's h_n through the fp32 classifier: the
error the recurrent part alone adds, below the int8 classifier and logits both flows share.
"""

from __future__ import annotations

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

from mcuforge.capture import capture
from mcuforge.kernels.lstm import lstm_s8
from mcuforge.lower.int8.recurrent import _per_gate_int8
from mcuforge.quantize import CortexMQuantizer
from mcuforge.quantize.patterns import LINEAR_OPS
from mcuforge.report import table
from mcuforge.zoo import MODELS

from recurrent import SETS, calibration_and_clips, compiled, fp32_outputs, sqnr
from results_file import publish

#: The float model's roundings, by column: one at a time, then all.
SOURCES = ("input", "weights", "gates", "cell", "hidden")


def fake_quant(v: np.ndarray, scale: float, zero_point: int = 0, bits: int = 8) -> np.ndarray:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return (np.clip(np.round(v / scale) + zero_point, lo, hi) - zero_point) * scale


def float_lstm_h_n(rnn: torch.nn.LSTM, x: np.ndarray, rounded: set[str], qin, qout, cell_power: int) -> np.ndarray:
    """The last hidden state of a float model of lstm_s8, with the roundings named in ``rounded``."""
    w_ih, w_hh = (getattr(rnn, f"weight_{k}_l0").detach().double().numpy() for k in ("ih", "hh"))
    bias = (rnn.bias_ih_l0 + rnn.bias_hh_l0).detach().double().numpy()
    hidden = w_hh.shape[1]
    if "weights" in rounded:
        w_ih, w_hh = (q * np.repeat(s, hidden)[:, None] for q, s in map(_per_gate_int8, (w_ih, w_hh)))
    if "input" in rounded:
        x = fake_quant(x, qin.scale, qin.zero_point)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h = c = np.zeros((x.shape[0], hidden))
    for t in range(x.shape[1]):
        pre = x[:, t] @ w_ih.T + bias + h @ w_hh.T
        if "gates" in rounded:
            pre = fake_quant(pre, 2.0**-12, bits=16)
        i, f, g, o = np.split(pre, 4, axis=1)
        i, f, g, o = sigmoid(i), sigmoid(f), np.tanh(g), sigmoid(o)
        if "gates" in rounded:
            i, f, g, o = (fake_quant(v, 2.0**-15, bits=16) for v in (i, f, g, o))
        c = f * c + i * g
        if "cell" in rounded:
            c = fake_quant(c, 2.0**cell_power, bits=16)
        h = o * np.tanh(c)
        if "hidden" in rounded:
            h = fake_quant(h, qout.scale, qout.zero_point)
    return h


def kernel_h_n(prog, x: np.ndarray) -> np.ndarray:
    """h_n of the program's lstm_s8 op (the host kernel) on float input ``x``, dequantized."""
    op = next(o for o in prog.graph.ops if o.kind == "lstm_s8")
    tensors = prog.graph.tensors
    qin, qout = tensors[op.inputs[0]].qparams, tensors[op.outputs[0]].qparams
    xq = np.clip(np.round(x / qin.scale) + qin.zero_point, -128, 127).astype(np.int8)
    out = lstm_s8(xq, *(tensors[n].data for n in op.inputs[1:]), **op.attrs)
    return (out[:, -1].astype(np.float64) - qout.zero_point) * qout.scale


def reference_h_n_qparams(model, example, calibration) -> tuple[float, int]:
    """The int8 quantization the fp32-recurrent flow gives h_n: its classifier input observer's."""
    prepared = prepare_pt2e(capture(model, (example,)), CortexMQuantizer(fp32_recurrent=True))
    with torch.no_grad():
        for x in calibration:
            prepared(x.unsqueeze(0))
    linear = next(n for n in prepared.graph.nodes if n.target in LINEAR_OPS)
    scale, zero_point = getattr(prepared, linear.args[0].target).calculate_qparams()
    return float(scale), int(zero_point)


def measure(name: str = "kws_lstm") -> list[list[object]]:
    model, (example,) = MODELS[name]()
    model.eval()
    rows = []
    for index in range(SETS):
        calibration, clips = calibration_and_clips(example, index)
        prog = compiled(model, example, calibration)
        op = next(o for o in prog.graph.ops if o.kind == "lstm_s8")
        qin, qout = prog.graph.tensors[op.inputs[0]].qparams, prog.graph.tensors[op.outputs[0]].qparams
        x = clips.double().numpy()
        with torch.inference_mode():
            h_n = model.rnn(clips)[1][0][-1].double().numpy()
        budget = [float_lstm_h_n(model.rnn, x, {s}, qin, qout, op.attrs["cell_scale_power"]) for s in SOURCES]
        every = float_lstm_h_n(model.rnn, x, set(SOURCES), qin, qout, op.attrs["cell_scale_power"])
        fused = kernel_h_n(prog, x)
        scale, zero_point = reference_h_n_qparams(model, example, calibration)
        reference = fake_quant(h_n, scale, zero_point)
        codes = np.round(h_n / scale) + zero_point
        want = fp32_outputs(model, clips)
        classify = lambda h: model.classifier(torch.tensor(h, dtype=torch.float32)).detach().numpy()  # noqa: E731
        rows.append([index, round(sqnr(h_n, fused), 2), *(round(sqnr(h_n, b), 2) for b in budget),
                     round(sqnr(h_n, every), 2), round(sqnr(h_n, reference), 2),
                     f"{100 * np.mean((codes < -128) | (codes > 127)):.2f}%",
                     round(sqnr(want, classify(fused)), 2), round(sqnr(want, classify(reference)), 2)])
    return rows


def main() -> None:
    torch.set_num_threads(1)
    with threadpool_limits(1):
        rows = measure()
    headers = ["set", "fused h_n (kernel)", *(f"{s} alone" for s in SOURCES), "all (float model)",
               "fp32 recurrent h_n", "h_n clipped", "logits via fp32 classifier: fused", "fp32 recurrent"]
    publish("recurrent_error", "kws_lstm: the last hidden state's SQNR vs fp32, dB, source by source",
            table(headers, rows), f", sets 0 to {SETS - 1} of benchmarks/recurrent.py")


if __name__ == "__main__":
    main()
