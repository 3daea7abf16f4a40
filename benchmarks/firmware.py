"""MLPerf Tiny on the emulated Cortex-M boards: instructions, memory and per-kernel counts, beside
CMSIS-NN, TFLite Micro and ExecuTorch.

    python benchmarks/firmware.py         # writes docs/benchmarks.md and benchmarks/results/firmware.md

One command regenerates both files. Per model (ds_cnn, mobilenet_v1_025, resnet8, fc_autoencoder)
and configuration (cortex-m3 portable: the cortex-m3 firmware built with -DMF_PORTABLE=1, every
optimized kernel path off, the portable C kernels; cortex-m3: the scalar paths; cortex-m4: DSP paths;
cortex-m55: MVE paths):

- instructions of one whole mf_invoke (runtime included) under QEMU ``-icount shift=0``, counted by
  SysTick: exact to one SysTick period (40 instructions; 31.25 on the M55) and identical run to run,
  so one run suffices; instructions, not cycles (QEMU models no pipeline, an MVE instruction counts
  once whatever its beats);
- per MAC, the speedup over the portable kernels (the cortex-m3 portable count of the same program), and the
  ratio to CMSIS-NN's kernels on exactly these layers on the same boards (issue 10: v7.0.0+,
  arm-none-eabi-gcc 12.2 -O3, kernel calls only);
- arena (the RAM mf_init asks: activations and op scratch buffers) against the lower bound (the
  largest sum of live tensors at any op, ``mcuforge.plan.arena_lower_bound``; also with each op's
  scratch) and TFLite Micro's published arena; runtime code (text + rodata of the runtime objects,
  tracing compiled out), constants and program file beside ExecuTorch's .pte;
- per op kind, the instructions of its ops from a traced run (the trace's per-op counts: the
  kernel and one timer read; the op's trace records are written after it), so a kernel regression
  shows.
"""

from __future__ import annotations

import platform
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

import mcuforge
from mcuforge import firmware
from mcuforge.firmware.builder import COMMON_FLAGS
from mcuforge.firmware.toolchain import version
from mcuforge.ir import DTYPES
from mcuforge.plan import arena_lower_bound
from mcuforge.report import table
from mcuforge.trace import Trace
from mcuforge.zoo import MODELS

from results_file import publish

MODELS_MLPERF_TINY = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder")
TARGETS = ("cortex-m3", "cortex-m4", "cortex-m55")
PORTABLE = "cortex-m3 portable"
# (label, target, firmware build flags): the portable C kernels measured on cortex-m3, then each target's
# optimized paths
CONFIGS = ((PORTABLE, "cortex-m3", ("-DMF_PORTABLE=1",)), *((t, t, ()) for t in TARGETS))

# CMSIS-NN kernels on the layers of each model, same boards, instructions per inference (issue 10)
CMSIS_NN = {
    "ds_cnn": {"cortex-m3": 10.54e6, "cortex-m4": 7.85e6, "cortex-m55": 1.79e6},
    "mobilenet_v1_025": {"cortex-m3": 32.08e6, "cortex-m4": 24.71e6, "cortex-m55": 6.42e6},
    "resnet8": {"cortex-m3": 41.75e6, "cortex-m4": 29.85e6, "cortex-m55": 4.81e6},
    "fc_autoencoder": {"cortex-m3": 0.95e6, "cortex-m4": 0.58e6, "cortex-m55": 0.15e6},
}
TFLM_ARENA = {"ds_cnn": 21_424, "mobilenet_v1_025": 156_424, "resnet8": 53_972, "fc_autoencoder": 9_396}
EXECUTORCH_PTE = {"ds_cnn": 54_240, "mobilenet_v1_025": 313_432, "resnet8": 99_208, "fc_autoencoder": 284_864}

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


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


def measure(name: str, target: str, flags: tuple[str, ...] = ()) -> dict:
    """One untraced run (whole-inference instructions) and one traced run (per-op instructions), the
    firmware built with ``flags``."""
    prog = compile_for(name, target)
    program, inputs = prog.to_bytes(), random_inputs(prog)
    _outs, _trace, facts = firmware.run_on_qemu(program, inputs, target, build_flags=flags)
    _outs, recorded, _ = firmware.run_on_qemu(program, inputs, target, trace=True, build_flags=flags)
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # ops, MACs, instructions
    for ev in Trace.from_bytes(recorded).ops:
        op = prog.ops[ev.op_index]
        row = per_kind[op.kind]
        row[0] += 1
        row[1] += op.macs
        row[2] += ev.duration
    return {"instructions": facts["instructions"], "arena": facts["arena_bytes"], "stack": facts["stack_bytes"],
            "macs": sum(op.macs for op in prog.ops), "ops": len(prog.ops), "activations": prog.arena_bytes,
            "lower_bound": arena_lower_bound(prog.graph, scratch=False),
            "exact_bound": arena_lower_bound(prog.graph), "constants": prog.constant_bytes,
            "program": prog.program_bytes, "per_kind": dict(per_kind)}


def millions(n: float) -> str:
    return f"{n / 1e6:.2f} M"


def instruction_table(results: dict) -> str:
    rows = []
    for name in MODELS_MLPERF_TINY:
        for label, target, _ in CONFIGS:
            r = results[name, label]
            cmsis = CMSIS_NN[name][target]
            speedup = results[name, PORTABLE]["instructions"] / r["instructions"]
            rows.append([name, label, f"{r['macs']:,}", f"{r['instructions']:,}",
                         f"{r['instructions'] / r['macs']:.2f}", f"{speedup:.2f}x", millions(cmsis),
                         f"{r['instructions'] / cmsis:.2f}"])
    return table(["model", "kernels", "MACs", "instructions", "per MAC", "speedup vs portable", "CMSIS-NN",
                  "ratio to CMSIS-NN"], rows)


def memory_table(results: dict, code: dict[str, int]) -> str:
    rows = []
    for name in MODELS_MLPERF_TINY:
        r = results[name, TARGETS[-1]]
        arenas = {results[name, t]["arena"] for t in TARGETS}
        arena = "/".join(f"{a:,}" for a in sorted(arenas))
        rows.append([name, arena, f"{r['lower_bound']:,}", f"{max(arenas) / r['lower_bound']:.3f}",
                     f"{r['exact_bound']:,}", f"{TFLM_ARENA[name]:,}", f"{r['constants']:,}", f"{r['program']:,}",
                     f"{EXECUTORCH_PTE[name]:,}", f"{r['program'] / EXECUTORCH_PTE[name]:.3f}"])
    text = table(["model", "arena B", "lower bound B", "arena / bound", "+ scratch B", "TFLM arena B", "constants B",
                  "program B", "ExecuTorch .pte B", "program / .pte"], rows)
    text += "\n\nruntime code (text + rodata, tracing compiled out): " + \
        ", ".join(f"{t} {code[t]:,} B" for t in TARGETS)
    return text


def kernel_table(results: dict) -> str:
    rows = []
    for name in MODELS_MLPERF_TINY:
        portable = results[name, PORTABLE]["per_kind"]
        for kind in sorted(portable, key=lambda k: -portable[k][2]):
            ops, macs, _ = portable[kind]
            row = [name, kind, ops, f"{macs:,}"]
            for label, _, _ in CONFIGS:
                n = results[name, label]["per_kind"].get(kind, [0, 0, 0])[2]
                row += [f"{n:,}", f"{n / macs:.2f}" if macs else ""]
            rows.append(row)
    header = ["model", "op kind", "ops", "MACs"]
    for label, _, _ in CONFIGS:
        header += [label, "per MAC"]
    return table(header, rows)


def main(argv: list[str]) -> None:
    del argv
    results = {(name, label): measure(name, target, flags) for label, target, flags in CONFIGS
               for name in MODELS_MLPERF_TINY}
    code = {t: firmware.size_report(t).runtime_code_bytes for t in TARGETS}
    flags = " ".join(f for f in COMMON_FLAGS if f.startswith("-O"))
    context = (f"mcuforge {mcuforge.__version__}, torch {torch.__version__}, {platform.machine()}; "
               f"{version('arm-none-eabi-gcc')} {flags}; {version('qemu-system-arm')}")
    sections = [
        ("Instructions per inference", instruction_table(results),
         "Whole mf_invoke, runtime included. Kernels: cortex-m3 portable is the cortex-m3 program on its "
         "firmware built with -DMF_PORTABLE=1 (every optimized kernel path off: the portable C kernels); "
         "the other rows run each target's optimized paths (cortex-m3: scalar, cortex-m4: DSP, cortex-m55: "
         "MVE). Speedup: the cortex-m3 portable count over this row's. CMSIS-NN: its kernels alone on the "
         "same layers and boards (issue 10; the cortex-m3 figure for both cortex-m3 rows)."),
        ("Memory", memory_table(results, code),
         "Arena: what mf_init asks per target (activations and op scratch buffers, planned together; one "
         "value when the targets agree). Lower bound: the largest sum of live tensors at any op (an op "
         "writing in place counted once); + scratch: the same with each op's scratch buffer, the least "
         "any plan can reach. Constants and program: the cortex-m55 program file (flash)."),
        ("Instructions per op kind", kernel_table(results),
         "From one traced run per model and row of the first table: the sum over the ops of a kind of "
         "their per-op instruction counts (the kernel and one timer read; the trace records are written "
         "between ops)."),
    ]
    text = "\n\n".join(f"## {title}\n\n{note}\n\n```\n{body}\n```" for title, body, note in sections)
    DOCS.write_text(f"# Benchmarks: MLPerf Tiny on the QEMU boards\n\nRegenerate with `python benchmarks/firmware.py` "
                    f"(deterministic: one run suffices).\n\n{context}\n\n{text}\n")
    publish("firmware", "Instructions per inference on QEMU boards", "\n\n".join(body for _, body, _ in sections),
            f"; {version('arm-none-eabi-gcc')} {flags}; instructions exact to one SysTick period")
    print(f"wrote {DOCS}")


if __name__ == "__main__":
    main(sys.argv[1:])
