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
- per MAC, the speedup over the portable kernels (the cortex-m3 portable count of the same program);
- beside CMSIS-NN, measured in the same run: Arm's CMSIS-NN built from its sources on disk (``--cmsis-nn
  DIR``, default ``mcuforge.cmsis_nn.default_location()``; without it the column says why and the rest
  runs) for each board's core (cortex-m3 plain C, cortex-m4 DSP, cortex-m55 MVE), each op of the program
  as the CMSIS-NN call computing it (``mcuforge.cmsis_nn.ops.case_for_op``) on the op's real inputs from
  a host run, all of a program's calls in one QEMU boot (``mcuforge.cmsis_nn.layers``): its instructions
  per call, and its output bytes against ours (``outputs equal`` or the first op that differs). Whole
  inference against whole inference: CMSIS-NN's calls summed over the ops (0 for an op it has no call
  for, listed) plus our runtime's own overhead (our whole mf_invoke minus the sum of our per-op counts
  from the traced run), against our whole mf_invoke; kernel against kernel: our per-op counts summed
  over the ops CMSIS-NN has a call for, against its calls;
- arena (the RAM mf_init asks: activations and op scratch buffers) against the lower bound (the
  largest sum of live tensors at any op, ``mcuforge.plan.arena_lower_bound``; also with each op's
  scratch) and TFLite Micro's published arena; runtime code (text + rodata of the runtime objects,
  tracing compiled out), constants and program file beside ExecuTorch's .pte;
- per op kind, the instructions of its ops from a traced run (the trace's per-op counts: the
  kernel and one timer read; the op's trace records are written after it), so a kernel regression
  shows.
"""

from __future__ import annotations

import argparse
import platform
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

import mcuforge
from mcuforge import cmsis_nn, firmware
from mcuforge.cmsis_nn.build import DEFAULT_LOCATION
from mcuforge.cmsis_nn.layers import LayerRun, harness_missing, run_layers
from mcuforge.firmware.builder import COMMON_FLAGS
from mcuforge.firmware.toolchain import version
from mcuforge.ir import DTYPES
from mcuforge.plan import arena_lower_bound
from mcuforge.report import table
from mcuforge.trace import Trace
from mcuforge.zoo import MODELS

from results_file import marked_sections, publish

MODELS_MLPERF_TINY = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder")
TARGETS = ("cortex-m3", "cortex-m4", "cortex-m55")
PORTABLE = "cortex-m3 portable"
# (label, target, firmware build flags): the portable C kernels measured on cortex-m3, then each target's
# optimized paths
CONFIGS = ((PORTABLE, "cortex-m3", ("-DMF_PORTABLE=1",)), *((t, t, ()) for t in TARGETS))

TFLM_ARENA = {"ds_cnn": 21_424, "mobilenet_v1_025": 156_424, "resnet8": 53_972, "fc_autoencoder": 9_396}
EXECUTORCH_PTE = {"ds_cnn": 54_240, "mobilenet_v1_025": 313_432, "resnet8": 99_208, "fc_autoencoder": 284_864}

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def source_label(root: Path | None) -> str:
    """Where CMSIS-NN came from, without this machine's folders: the project's default copy by its place beside
    the project, another tree by its last two path components."""
    if root is None:
        return "absent"
    if root.resolve() == DEFAULT_LOCATION.resolve():
        return "shared/third_party/cmsis-nn beside the project"
    return "/".join(root.parts[-2:])


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
    per_op = [0] * len(prog.ops)
    for ev in Trace.from_bytes(recorded).ops:
        op = prog.ops[ev.op_index]
        row = per_kind[op.kind]
        row[0] += 1
        row[1] += op.macs
        row[2] += ev.duration
        per_op[ev.op_index] += ev.duration
    return {"program_obj": prog, "inputs": inputs, "per_op": per_op,
            "instructions": facts["instructions"], "arena": facts["arena_bytes"], "stack": facts["stack_bytes"],
            "macs": sum(op.macs for op in prog.ops), "ops": len(prog.ops), "activations": prog.arena_bytes,
            "lower_bound": arena_lower_bound(prog.graph, scratch=False),
            "exact_bound": arena_lower_bound(prog.graph), "constants": prog.constant_bytes,
            "program": prog.program_bytes, "per_kind": dict(per_kind)}


def millions(n: float) -> str:
    return f"{n / 1e6:.2f} M"


def cmsis_nn_runs(results: dict, root: Path | None) -> dict[tuple[str, str], LayerRun | str]:
    """Each model's program for each target through CMSIS-NN on that target's board (one boot per program);
    a string says why a program was not measured."""
    runs: dict[tuple[str, str], LayerRun | str] = {}
    for name in MODELS_MLPERF_TINY:
        for target in TARGETS:
            r = results[name, target]
            try:
                runs[name, target] = run_layers(r["program_obj"].graph, r["inputs"], target, root)
            except Exception as err:  # noqa: BLE001 -- one failing program must not stop the benchmark
                runs[name, target] = f"failed: {type(err).__name__}: {err}"
            print(f"CMSIS-NN {name} {target}: {describe(runs[name, target])}", flush=True)
    return runs


def describe(run: LayerRun | str) -> str:
    return run if isinstance(run, str) else run.verdict()


def accounting(r: dict, run: LayerRun) -> dict[str, int]:
    """Our side and CMSIS-NN's, whole inference and kernels, for one row (see the module docstring)."""
    ours_ops = sum(r["per_op"])
    overhead = r["instructions"] - ours_ops
    matched = [la.index for la in run.matched]
    return {"ours_kernels": sum(r["per_op"][i] for i in matched), "theirs_kernels": run.kernel_instructions,
            "ours_whole": r["instructions"], "overhead": overhead,
            "theirs_whole": run.kernel_instructions + overhead,
            "unmatched": sum(r["per_op"][la.index] for la in run.unmatched)}


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b > 0 else "n/a"


def instruction_table(results: dict, runs: dict) -> str:
    rows = []
    for name in MODELS_MLPERF_TINY:
        for label, target, _ in CONFIGS:
            r = results[name, label]
            run = runs.get((name, target), "not measured")
            speedup = results[name, PORTABLE]["instructions"] / r["instructions"]
            theirs, vs = ("n/a", "n/a")
            if isinstance(run, LayerRun):
                a = accounting(r, run)
                theirs, vs = millions(a["theirs_whole"]), ratio(a["ours_whole"], a["theirs_whole"])
            rows.append([name, label, f"{r['macs']:,}", f"{r['instructions']:,}",
                         f"{r['instructions'] / r['macs']:.2f}", f"{speedup:.2f}x", theirs, vs])
    return table(["model", "kernels", "MACs", "instructions", "per MAC", "speedup vs portable",
                  "CMSIS-NN whole", "ratio to CMSIS-NN"], rows)


def cmsis_nn_table(results: dict, runs: dict) -> str:
    rows, missing = [], []
    for name in MODELS_MLPERF_TINY:
        for label, target, _ in CONFIGS:
            r, run = results[name, label], runs.get((name, target), "not measured")
            if not isinstance(run, LayerRun):
                rows.append([name, label, "", "", "", "", f"{r['instructions']:,}", "", "", "", run])
                continue
            a = accounting(r, run)
            rows.append([name, label, f"{len(run.matched)} of {len(run.layers)}", f"{a['ours_kernels']:,}",
                         f"{a['theirs_kernels']:,}", ratio(a["ours_kernels"], a["theirs_kernels"]),
                         f"{a['ours_whole']:,}", f"{a['overhead']:,}", f"{a['theirs_whole']:,}",
                         ratio(a["ours_whole"], a["theirs_whole"]), run.verdict()])
        missing += unmatched_summary(name, results, runs)
    text = table(["model", "kernels", "ops with a CMSIS-NN call", "ours: those ops", "CMSIS-NN calls",
                  "kernel ratio", "ours: whole", "our overhead", "CMSIS-NN + overhead", "whole ratio", "outputs"],
                 rows)
    text += "\n\nops without a CMSIS-NN call (0 on its side), and what they cost us:\n" + \
        ("\n".join(missing) if missing else "none")
    return text


def unmatched_summary(name: str, results: dict, runs: dict) -> list[str]:
    """One line per model: its op kinds CMSIS-NN has no call for (and how many ops), our instructions on
    them per target."""
    measured = {t: run for t in TARGETS if isinstance(run := runs.get((name, t)), LayerRun)}
    counts: dict[str, int] = defaultdict(int)
    for la in next(iter(measured.values())).unmatched if measured else []:
        counts[la.kind] += 1
    if not counts:
        return []
    kinds = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in counts.items())
    cost = ", ".join(f"{millions(sum(results[name, t]['per_op'][la.index] for la in run.unmatched))} on {t}"
                     for t, run in measured.items())
    return [f"  {name}: {kinds}: ours {cost}"]


def cmsis_nn_kind_table(results: dict, runs: dict) -> str:
    """Per model and op kind, our per-op counts beside CMSIS-NN's calls, each target's optimized row."""
    rows = []
    for name in MODELS_MLPERF_TINY:
        measured = {t: runs.get((name, t)) for t in TARGETS}
        if not all(isinstance(run, LayerRun) for run in measured.values()):
            continue
        kinds: dict[str, set[str]] = defaultdict(set)
        for run in measured.values():
            for la in run.layers:
                kinds[la.kind].add(la.function or "none")
        for kind, functions in kinds.items():
            row = [name, kind, ", ".join(sorted(functions))]
            for target, run in measured.items():
                ours = sum(results[name, target]["per_op"][la.index] for la in run.layers if la.kind == kind)
                theirs = sum(la.instructions for la in run.layers if la.kind == kind)
                row += [f"{ours:,}", f"{theirs:,}", ratio(ours, theirs)]
            rows.append(row)
    header = ["model", "op kind", "CMSIS-NN call"]
    for target in TARGETS:
        header += [f"{target} ours", "CMSIS-NN", "ratio"]
    return table(header, rows) if rows else "not measured"


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmsis-nn", metavar="DIR", default=None,
                        help="Arm CMSIS-NN source tree (default: mcuforge.cmsis_nn.default_location())")
    args = parser.parse_args(argv)
    results = {(name, label): measure(name, target, flags) for label, target, flags in CONFIGS
               for name in MODELS_MLPERF_TINY}
    root, why = cmsis_nn.locate(args.cmsis_nn), cmsis_nn.missing_reason(args.cmsis_nn)
    why = why or harness_missing()
    runs = cmsis_nn_runs(results, root) if why is None else \
        {(n, t): f"not measured: {why}" for n in MODELS_MLPERF_TINY for t in TARGETS}
    code = {t: firmware.size_report(t).runtime_code_bytes for t in TARGETS}
    flags = " ".join(f for f in COMMON_FLAGS if f.startswith("-O"))
    context = (f"mcuforge {mcuforge.__version__}, torch {torch.__version__}, {platform.machine()}; "
               f"{version('arm-none-eabi-gcc')} {flags}; {version('qemu-system-arm')}")
    sections = [
        ("Instructions per inference", instruction_table(results, runs),
         "Whole mf_invoke, runtime included. Kernels: cortex-m3 portable is the cortex-m3 program on its "
         "firmware built with -DMF_PORTABLE=1 (every optimized kernel path off: the portable C kernels); "
         "the other rows run each target's optimized paths (cortex-m3: scalar, cortex-m4: DSP, cortex-m55: "
         "MVE). Speedup: the cortex-m3 portable count over this row's. CMSIS-NN whole: measured in this run "
         "(next section): its calls on the same layers and board plus our runtime's own overhead (the "
         "cortex-m3 calls for both cortex-m3 rows, each with its own overhead); ratio: ours over it."),
        ("Beside CMSIS-NN, measured", cmsis_nn_table(results, runs),
         "CMSIS-NN built from its sources (" + source_label(root) + ") for each board's core "
         "(cortex-m3: plain C, cortex-m4: DSP, cortex-m55: MVE) with the firmware's flags; each op of the "
         "program as the CMSIS-NN call computing it, on the op's real inputs (one host run of the program), "
         "all of a program's calls in one QEMU boot, each call's instructions counted by SysTick as ours are. "
         "Kernel ratio: our per-op counts (traced run) summed over the ops CMSIS-NN has a call for, over its "
         "calls. Whole ratio: our whole mf_invoke over CMSIS-NN's calls plus our overhead (our whole "
         "mf_invoke minus the sum of all our per-op counts: dispatch, argument checks, the loop), an op "
         "CMSIS-NN has no call for counting 0 on its side. Our overhead is below the per-op counts' "
         "resolution (one SysTick period each, and each traced op also reads the timer), so it can come out "
         "negative: the whole ratio then equals the kernel ratio with the ops CMSIS-NN has no call for "
         "charged to us. Outputs: every call's output bytes against our op's, or the first op that differs. "
         "The calls are the harness's (mcuforge.cmsis_nn, c/cases_s8.c), each with its small wrapper (CMSIS-NN's "
         "structs filled, its *_get_buffer_size); on cortex-m55 a fully connected call also runs "
         "arm_vector_sum_s8, the kernel sums its MVE path needs, which TensorFlow Lite Micro computes once at "
         "prepare time: those counts include that per-model cost (ours takes the weight sums inside its loop, "
         "every inference)."),
        ("Instructions per op kind beside CMSIS-NN", cmsis_nn_kind_table(results, runs),
         "Per model and op kind, each target's optimized row: our per-op counts (traced run) and CMSIS-NN's "
         "calls on the same ops, summed over the ops of the kind."),
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
    others = marked_sections(DOCS)  # the sections other benchmarks keep on this page (benchmarks/memory.py)
    DOCS.write_text(f"# Benchmarks: MLPerf Tiny on the QEMU boards\n\nRegenerate with `python benchmarks/firmware.py` "
                    f"(deterministic: one run suffices).\n\n{context}\n\n{text}\n" + (f"\n{others}" if others else ""))
    publish("firmware", "Instructions per inference on QEMU boards", "\n\n".join(body for _, body, _ in sections),
            f"; {version('arm-none-eabi-gcc')} {flags}; instructions exact to one SysTick period")
    print(f"wrote {DOCS}")


if __name__ == "__main__":
    main(sys.argv[1:])
