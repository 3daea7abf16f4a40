"""Recurrent keyword spotting (kws_lstm, kws_gru): fused recurrent kernels vs the unrolled int8 graph vs the
recurrent layer kept in fp32 (ExecuTorch's Cortex-M flow), on ONE thread.

    python benchmarks/recurrent.py            # prints the tables and writes results/recurrent.md
    python benchmarks/recurrent.py --no-publish --repeat 5
    python benchmarks/recurrent.py --clock cpu    # CPU time of this process: steadier on a shared machine

Per model and flow: the program's ops, its integer kernels' share of the MACs, SQNR against the fp32 model
on three fixed-seed sets of 128 generated clips, each after its own 32 generated calibration clips (nothing
downloads; the mean and each set's figure), and host speed at batch 32 beside fp32 eager at batch 32 on the
first set (best of ``--repeat``; the machine may be shared), and the instructions of one inference on the
QEMU cortex-m4 and cortex-m55 boards (-icount, deterministic).

Flows: "fused" is mcuforge.compile (a layer is one lstm_s8 / gru_s8 op with int8 input and output; an
LSTM feeds back its int8 hidden state, its gates and cell state int16; a GRU keeps its state in int16);
"unrolled" compiles the model after mcuforge.rnn.rewrite_recurrent without fusion (the graph of FC + LUT +
mul + add int8 ops, int8 state); "fp32 recurrent" is ExecuTorch's flow, which leaves the recurrent layers in
fp32 and quantizes the rest to int8: measured as mcuforge's PT2E quantization with the fused LSTM / GRU ops
left unannotated (CortexMQuantizer(fp32_recurrent=True)), the converted reference model run in torch (q/dq
around the int8 layers, the recurrent layer in fp32).

Three sets cannot tell the fused and the fp32-recurrent flows apart: per set either leads by up to a few dB.
Both share the int8 classifier and its int8 logits, which dominate the error. Beyond them the fused layer's
last hidden state carries a steady error (the int8 input and, for the LSTM, the int8 state fed back), while
the fp32 layer's last hidden state is quantized to int8 at a scale calibrated on the last states of 32 clips
only, which clips more or less of the held-out data from set to set. The second table compares the two flows
over PAIRED_SETS sets (the first three are the first table's): each flow's mean SQNR, the mean of the per-set
differences (fused - fp32 recurrent) with its standard error, their range, and the sets where the fused flow
is at least as accurate.
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Callable

import numpy as np
import torch
from host_speed import CLOCKS, best_rate
from threadpoolctl import threadpool_limits
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import mcuforge
from mcuforge import firmware
from mcuforge.capture import capture
from mcuforge.lstm_op import fusable, fusable_gru
from mcuforge.quantize import CortexMQuantizer
from mcuforge.report import table
from mcuforge.rnn import rewrite_recurrent
from mcuforge.zoo import MODELS

from results_file import publish

MODELS_RECURRENT = ("kws_lstm", "kws_gru")
BATCH = 32
BOARDS = ("cortex-m4", "cortex-m55")  # QEMU -icount: instructions of one inference (deterministic)
SETS = 3  # generated calibration / evaluation sets: the SQNR column is their mean (each set's in brackets)
PAIRED_SETS = 20  # sets of the fused vs fp32-recurrent comparison (only those two flows: quick to compile)


def data(example: torch.Tensor, count: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn((count, *example.shape[1:]), generator=gen)


def calibration_and_clips(example: torch.Tensor, index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Set ``index``: 32 calibration clips and 128 evaluation clips, generated from fixed seeds."""
    return data(example, 32, seed=10 * index + 1), data(example, 128, seed=10 * index + 2)


def sqnr(want: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10((want.astype(np.float64) ** 2).sum() / ((got - want).astype(np.float64) ** 2).sum()))


def fp32_recurrent_outputs(model, example, calibration, evaluation) -> np.ndarray | None:
    captured = capture(model, (example,))
    if not any(getattr(n.target, "namespace", "") == "mcuforge" for n in captured.graph.nodes):
        return None  # no fused recurrent op to leave in fp32
    prepared = prepare_pt2e(captured, CortexMQuantizer(fp32_recurrent=True))
    with torch.no_grad():
        for x in calibration:
            prepared(x.unsqueeze(0))
        converted = convert_pt2e(prepared)
        return torch.cat([converted(x.unsqueeze(0)) for x in evaluation]).numpy()


def compiled(model, example, calibration, target: str = "cortex-m55"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mcuforge.compile(model, (example,), calibration=[(x.unsqueeze(0),) for x in calibration],
                                target=target, progress=False)


def int8_input(prog, x: torch.Tensor) -> np.ndarray:
    """``x`` as the program's int8 input (its quantization), what the board reads."""
    qp = prog.graph.tensors[prog.graph.inputs[0]].qparams
    return np.clip(np.round(x.numpy() / qp.scale) + qp.zero_point, -128, 127).astype(np.int8)


def sqnr_cell(values: list[float]) -> str:
    return f"{np.mean(values):.2f} ({', '.join(f'{v:.2f}' for v in values)})"


def fp32_outputs(model, clips: torch.Tensor) -> np.ndarray:
    with torch.inference_mode():
        return model(clips).numpy()


def paired(name: str) -> list[object]:
    """The fused flow against the fp32-recurrent one over PAIRED_SETS sets (the second table's row)."""
    model, (example,) = MODELS[name]()
    model.eval()
    fused, reference = [], []
    for index in range(PAIRED_SETS):
        calibration, clips = calibration_and_clips(example, index)
        want = fp32_outputs(model, clips)
        prog = compiled(model, example, calibration)
        fused.append(sqnr(want, np.asarray(prog.run(clips.numpy())).reshape(want.shape)))
        reference.append(sqnr(want, fp32_recurrent_outputs(model, example, calibration, clips)))
    diff = np.subtract(fused, reference)
    return [name, round(float(np.mean(fused)), 2), round(float(np.mean(reference)), 2),
            f"{diff.mean():+.2f} +- {diff.std(ddof=1) / np.sqrt(diff.size):.2f}",
            f"{diff.min():+.2f} .. {diff.max():+.2f}", f"{int((diff >= 0).sum())} of {diff.size}"]


def measure(name: str, repeat: int, clock: Callable[[], float]) -> list[list[object]]:
    model, (example,) = MODELS[name]()
    model.eval()
    sets = [calibration_and_clips(example, s) for s in range(SETS)]
    evaluation = sets[0][1]
    batches = [evaluation[i:i + BATCH] for i in range(0, len(evaluation), BATCH)]
    batches_np = [b.numpy() for b in batches]

    def eager() -> None:
        with torch.inference_mode():
            for b in batches:
                model(b)

    eager_rate = best_rate(eager, len(evaluation), repeat, clock)
    fused_kernel = any(fusable(m) or fusable_gru(m) for m in model.modules())
    flows = {"fused": model} if fused_kernel else {}
    flows["unrolled"] = rewrite_recurrent(model, fused_lstm=False)
    rows = []
    for flow, m in flows.items():
        sqnrs = []
        for calibration, clips in sets:
            prog = compiled(m, example, calibration)
            want = fp32_outputs(model, clips)
            sqnrs.append(sqnr(want, np.asarray(prog.run(clips.numpy())).reshape(want.shape)))
        prog = compiled(m, example, sets[0][0])
        rate = best_rate(lambda: [prog.run(b) for b in batches_np], len(evaluation), repeat, clock)  # noqa: B023
        kinds = [op.kind for op in prog.ops]
        recurrent = sum(k in ("lstm_s8", "gru_s8") for k in kinds)
        board = []
        for target in BOARDS:
            board_prog = compiled(m, example, sets[0][0], target)
            _got, _trace, facts = firmware.run_on_qemu(board_prog.to_bytes(), [int8_input(board_prog, clips[:1])],
                                                       target)
            board.append(f"{facts['instructions']:,}")
        rows.append([name, flow, len(kinds), recurrent, round(prog.int8_mac_share, 3), sqnr_cell(sqnrs),
                     round(rate, 1), round(eager_rate, 1), round(rate / eager_rate, 3), *board])
    references = [sqnr(fp32_outputs(model, clips), fp32_recurrent_outputs(model, example, calibration, clips))
                  for calibration, clips in sets]
    rows.append([name, "fp32 recurrent (ExecuTorch flow)", "-", "-", "-", sqnr_cell(references), "-", "-", "-",
                 *("-" for _ in BOARDS)])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS_RECURRENT), choices=list(MODELS_RECURRENT))
    parser.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is kept (default 3)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time, steadier on a busy machine")
    parser.add_argument("--no-publish", action="store_true", help="print only; do not write results/recurrent.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load = os.getloadavg()[0]  # the machine may be shared: the results file says how busy it was
    rows, pairs = [], []
    with threadpool_limits(1):
        for name in args.models:
            rows += measure(name, args.repeat, CLOCKS[args.clock])
            pairs.append(paired(name))
    headers = ["model", "flow", "ops", "fused recurrent ops", "integer MAC share", "SQNR vs fp32, dB (per set)",
               "host inf/s (batch 32)", "fp32 eager inf/s (batch 32)", "host / eager",
               *(f"{t} instructions" for t in BOARDS)]
    text = table(headers, rows)
    text += (f"\n\nfused vs fp32 recurrent (ExecuTorch flow) over {PAIRED_SETS} sets (the first {SETS} are the "
             f"table's above): SQNR vs fp32, dB\n\n")
    text += table(["model", "fused, mean", "fp32 recurrent, mean", "fused - fp32 recurrent, mean +- s.e.",
                   "per set, min .. max", "sets fused >= fp32 recurrent"], pairs)
    note = (f", one thread, SQNR: mean (and each) of {SETS} sets of 128 generated clips, each calibrated on 32 other "
            f"generated clips; speed: best of {args.repeat} ({args.clock} clock), load average {load:.1f} on "
            f"{os.cpu_count()} cores at the start; "
            f"numpy {np.__version__}, torch {torch.__version__}")
    if args.no_publish:
        print(text)
    else:
        publish("recurrent", "Recurrent keyword spotting: fused vs unrolled vs fp32 recurrent layers", text, note)


if __name__ == "__main__":
    main()
