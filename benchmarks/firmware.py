"""Instructions per inference on the emulated Cortex-M boards, with the flash and RAM it takes.

    python benchmarks/firmware.py            # cortex-m4 and cortex-m55
    python benchmarks/firmware.py --all      # every board (m3, m4, m7, m33, m55)

Instructions: executed instructions of one mf_invoke under QEMU `-icount shift=0`, counted by
SysTick (exact to one SysTick period: 40 instructions, 50 on the M33, 31.25 on the M55) and
identical run to run. Not cycles: QEMU models no pipeline. Runtime code = text of the runtime's
objects (tracing compiled out); stack = the firmware's stack high-water mark during the run.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import torch

import mcuforge
from mcuforge import firmware
from mcuforge.ir import DTYPES
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish

MODELS_MLPERF_TINY = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder")


def compile_for(name: str, target: str) -> mcuforge.Program:
    model, example = MODELS[name]()
    gen = torch.Generator().manual_seed(1)
    calibration = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(16)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mcuforge.compile(model, example, calibration=calibration, target=target, progress=False)


def random_inputs(prog: mcuforge.Program) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for name in prog.graph.inputs:
        t = prog.graph.tensors[name]
        dtype = DTYPES[t.dtype]
        out.append(rng.integers(-128, 128, t.shape).astype(dtype) if np.issubdtype(dtype, np.integer)
                   else rng.standard_normal(t.shape).astype(dtype))
    return out


def main(argv: list[str]) -> None:
    targets = list(firmware.BOARDS) if "--all" in argv else ["cortex-m4", "cortex-m55"]
    rows = []
    for target in targets:
        code = firmware.size_report(target).runtime_code_bytes
        for name in MODELS_MLPERF_TINY:
            prog = compile_for(name, target)
            start = time.perf_counter()
            _outs, _trace, facts = firmware.run_on_qemu(prog.to_bytes(), random_inputs(prog), target)
            seconds = time.perf_counter() - start
            rows.append([target, name, len(prog.ops), sum(op.macs for op in prog.ops), facts["instructions"],
                         code, prog.constant_bytes, facts["arena_bytes"], facts["stack_bytes"],
                         facts["invoke_stack_bytes"], round(seconds, 1)])
    text = table(["target", "model", "ops", "MACs", "instructions", "runtime code B", "constants B", "arena B",
                  "stack B", "invoke stack B", "QEMU s"], rows)
    publish("firmware", "Instructions per inference on QEMU boards", text,
            ", portable C kernels, arm-none-eabi-gcc -O2; instructions exact to one SysTick period")


if __name__ == "__main__":
    main(sys.argv[1:])
