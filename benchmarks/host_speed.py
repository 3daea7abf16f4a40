"""Host int8 runtime speed beside fp32 PyTorch eager, per zoo model, on ONE thread.

    python benchmarks/host_speed.py                 # prints the table and writes results/host_speed.md
    python benchmarks/host_speed.py --models resnet8 mobilenet_v1_025 --repeat 5
    python benchmarks/host_speed.py --clock cpu     # CPU time of this process: steadier on a shared machine

Evaluating a data set is the use case: ``prog.run(x)`` takes a whole batch and computes all its
runs vectorized, so the int8 figure is batched; fp32 eager is run the way users evaluate a PyTorch
model on a data set (batched, same batch size, ``torch.inference_mode``), and also one sample at a
time for reference. Every figure is the best of ``--repeat`` timings: the machine may be shared, and
the best run is the one least disturbed by other work. The target is int8/fp32 >= 0.3 at batch 32,
for every zoo model (the recurrent ones, kws_lstm and kws_gru, included: their fused lstm_s8 / gru_s8 op
runs its steps in one compiled loop, mcuforge.kernels.jit, against torch's fused LSTM / GRU call).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch
from threadpoolctl import threadpool_limits

import mcuforge
from mcuforge.kernels import jit
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
TARGET = 0.3


def best_rate(fn: Callable[[], None], samples: int, repeat: int, clock: Callable[[], float]) -> float:
    """Samples per second of the fastest of ``repeat`` calls of ``fn`` (after one warm-up call)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return samples / best


def measure(name: str, samples: int, batch: int, repeat: int, clock: Callable[[], float]) -> list[object]:
    model, example = MODELS[name]()
    model.eval()
    gen = torch.Generator().manual_seed(1)
    calibration = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=calibration, progress=False)
    # One sample per compiled run (the zoo compiles batch 1); the data set is `samples` of them.
    data = torch.randn((samples, *example[0].shape[1:]), generator=gen)
    batches = [data[i:i + batch] for i in range(0, samples, batch)]
    batches_np = [b.numpy() for b in batches]

    def int8() -> None:
        for b in batches_np:
            prog.run(b)

    def eager_batched() -> None:
        with torch.inference_mode():
            for b in batches:
                model(b)

    def eager_single() -> None:
        with torch.inference_mode():
            for i in range(samples):
                model(data[i:i + 1])

    int8_rate = best_rate(int8, samples, repeat, clock)
    eager_rate = best_rate(eager_batched, samples, repeat, clock)
    single_rate = best_rate(eager_single, samples, repeat, clock)
    ratio = int8_rate / eager_rate
    meets = "yes" if ratio >= TARGET else "NO"
    return [name, round(int8_rate, 1), round(eager_rate, 1), round(single_rate, 1), round(ratio, 3), meets]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--samples", type=int, default=256, help="samples per timing (default 256)")
    parser.add_argument("--batch", type=int, default=32, help="samples per prog.run / model call (default 32)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per figure; the best is kept (default 3)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time, steadier on a busy machine "
                             "(everything runs on one thread, so both measure one core)")
    parser.add_argument("--no-publish", action="store_true", help="print only; do not write results/")
    args = parser.parse_args()

    torch.set_num_threads(1)
    load = os.getloadavg()[0]  # the machine may be shared: the results file says how busy it was
    rows = []
    with threadpool_limits(1):  # numpy's BLAS on one thread too: the comparison is one core against one
        for name in args.models:
            rows.append(measure(name, args.samples, args.batch, args.repeat, CLOCKS[args.clock]))
    headers = ["model", "int8 host inf/s", f"fp32 eager inf/s (batch {args.batch})", "fp32 eager inf/s (batch 1)",
               "int8 / fp32 batched", f">= {TARGET}"]
    text = table(headers, rows)
    loops = f"numba {importlib.metadata.version('numba')}" if jit.ENABLED else "numpy routes only (no numba)"
    note = (f", one thread, {args.samples} samples in batches of {args.batch}, best of {args.repeat} "
            f"({args.clock} clock), numpy {np.__version__}, host kernels' loops: {loops}; load average "
            f"{load:.1f} on {os.cpu_count()} cores at the start; "
            f"target int8 / fp32 batched >= {TARGET}")
    if args.no_publish:
        print(text)
    else:
        publish("host_speed", "Host int8 runtime speed vs fp32 eager", text, note)


if __name__ == "__main__":
    main()
