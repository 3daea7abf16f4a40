"""MLPerf Tiny in ESTIMATED cycles and milliseconds: mcuforge, CMSIS-NN's kernels on the same layers, and
the published silicon results.

    python benchmarks/cycles.py          # writes benchmarks/results/cycles.md
    python benchmarks/cycles.py --zoo    # every zoo model on every board, traced: every op gets an estimate
    python benchmarks/cycles.py --ops mobilenet_v1_025 cortex-m4   # one model on one core, per op (prints)

Per model (ds_cnn, mobilenet_v1_025, resnet8, fc_autoencoder, compiled as benchmarks/firmware.py does)
and core (cortex-m3, m4, m7, m33, m55; each its own build: scalar, DSP or MVE paths): one untraced
inference on the core's QEMU board with the cycle plugin (mcuforge.cycles), costed by the core's timing
model (docs/cycles.md). Beside it, in the same run, CMSIS-NN's kernels on exactly the same layers and
inputs (mcuforge.cmsis_nn's comparison firmware, kernel calls only) through the same plugin and model;
and the published MLPerf Tiny v1.x closed-division results on silicon (other engines, flash wait
states, real memories), converted to cycles at their clock. Every cycle figure of ours is an ESTIMATE.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from firmware import compile_for
from firmware import random_inputs as program_inputs

import mcuforge
from mcuforge.cmsis_nn import build as cmsis_build
from mcuforge.cmsis_nn import harness, ops
from mcuforge.cmsis_nn.layers import op_values
from mcuforge.cycles import plugin
from mcuforge.cycles import run as cycle_run
from mcuforge.cycles.model import Memory
from mcuforge.firmware import qemu
from mcuforge.firmware.builder import build
from mcuforge.ir import input_bytes
from mcuforge.report import table
from mcuforge.zoo import MODELS

from results_file import publish

MODELS_MLPERF_TINY = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder")
TASK = {"ds_cnn": "KWS", "mobilenet_v1_025": "VWW", "resnet8": "IC", "fc_autoencoder": "AD"}
TARGETS = ("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")

# MLPerf Tiny closed division, best latency per task on each board (ms), with the board's core and clock.
# v1.x results tables, mlcommons.org/benchmarks/inference-tiny; silicon, other engines.
PUBLISHED = {
    "cortex-m4": ("STM32L4R5 (NUCLEO-L4R5ZI)", 120e6, {
        "ds_cnn": (43.19, "ST X-CUBE-AI"), "mobilenet_v1_025": (88.93, "ST X-CUBE-AI"),
        "resnet8": (165.13, "ST X-CUBE-AI"), "fc_autoencoder": (4.05, "Plumerai")}),
    "cortex-m7": ("STM32H7A3 (NUCLEO-H7A3ZI-Q)", 280e6, {
        "ds_cnn": (11.32, "ST X-CUBE-AI"), "mobilenet_v1_025": (23.80, "ST X-CUBE-AI"),
        "resnet8": (40.85, "ST X-CUBE-AI"), "fc_autoencoder": (1.08, "Bosch")}),
    "cortex-m33": ("STM32U575 (NUCLEO-U575ZI-Q)", 160e6, {
        "ds_cnn": (28.99, "ST X-CUBE-AI"), "mobilenet_v1_025": (59.27, "ST X-CUBE-AI"),
        "resnet8": (104.29, "Plumerai"), "fc_autoencoder": (3.09, "Bosch")}),
}
# MLPerf Tiny v1.0 closed, OctoML "microtvm_cmsis_nn" on NUCLEO-L4R5ZI (Cortex-M4, 120 MHz): microTVM with
# CMSIS-NN kernels (CMSIS-NN SHA 51263182), Zephyr 2.7.3; median throughput (inferences/s) from
# github.com/mlcommons/tiny_results_v1.0, closed/OctoML/results/microtvm_cmsis_nn/NUCLEO_L4R5ZI/*/performance/
# results.txt. The validation case: the same CMSIS-NN kernels on silicon.
OCTOML_CMSIS_NN_M4 = {"ds_cnn": 10.019, "mobilenet_v1_025": 3.320, "resnet8": 2.567, "fc_autoencoder": 116.212}
# ExecuTorch's Cortex-M backend (CMSIS-NN kernels) running torchvision's MobileNetV2 (224x224) on an Alif
# Ensemble E8, HP Cortex-M55 core, per-op cycles from its ETDump: github.com/pytorch/executorch issue 17651
# (comment of 2026-03-03), events 3-10 = features[0] .. features[3].conv[1]. Silicon; the memory system
# (SRAM over AXI with caches, MRAM) and the compiler are the board's, not modelled.
ALIF_E8_M55_MV2 = (("features.0 conv 3->32 3x3 s2", 13_754_047), ("features.1 depthwise 3x3, 32", 13_715_766),
                   ("features.1 pointwise 32->16", 4_915_937), ("features.2 pointwise 16->96", 24_249_462),
                   ("features.2 depthwise 3x3 s2, 96", 10_286_711), ("features.2 pointwise 96->24", 2_791_555),
                   ("features.3 pointwise 24->144", 10_329_014), ("features.3 depthwise 3x3, 144", 15_319_785))
L4R5_HZ = 120e6
L4R5_FLASH_WAIT_STATES = 5  # RM0432 §3.3.3: 5 wait states at 120 MHz (range 1 boost), behind the ART accelerator


def mcuforge_counts(prog: mcuforge.Program, xs: list[np.ndarray], target: str) -> tuple[plugin.Counts, Path]:
    """One untraced inference of ``prog`` on ``target``'s board under the plugin."""
    elf = build(target, trace=False)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        args = plugin.qemu_args(folder / "counts.txt", cycle_run.marks(elf, traced=False))
        qemu.boot(folder, target, prog.to_bytes(), input_bytes(prog.graph, xs), qemu_args=args)
        return plugin.parse(folder / "counts.txt"), elf


def cmsis_nn_cases(prog: mcuforge.Program, xs: list[np.ndarray]) -> tuple[list, int]:
    """Each op of the program as its CMSIS-NN call on the op's inputs in this run; (cases, ops without one)."""
    graph = prog.graph
    values = op_values(graph, xs)
    cases, missing = [], 0
    for index, op in enumerate(graph.ops):
        inputs = [values[n] for n in op.inputs if n and not graph.tensors[n].is_constant]
        try:
            cases.append(ops.case_for_op(graph, op, inputs, name=f"op {index} ({op.kind})"))
        except NotImplementedError:
            missing += 1
    return cases, missing


def cmsis_nn_counts(cases: list, target: str, root: Path) -> tuple[plugin.Counts, Path]:
    """CMSIS-NN's comparison firmware running ``cases`` in one boot under the plugin, segmented at its
    clock reads around each case."""
    elf, names = harness.build_firmware(target, root)
    checked = harness._check_cases(cases, set(names))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "cases.bin").write_bytes(harness.case_stream(checked, names))
        done, counts = plugin.run_qemu(target, elf, folder, [cycle_run.symbols(elf)[cycle_run.CLOCK]], 900.0)
        if done.returncode != 0:
            raise RuntimeError(f"CMSIS-NN firmware on {target}: QEMU exit {done.returncode}: {done.stderr[-500:]}")
        return counts, elf


def measure(name: str, target: str, root: Path | None) -> dict:
    prog = compile_for(name, target)
    xs = program_inputs(prog)
    macs = sum(op.macs for op in prog.ops)
    counts, elf = mcuforge_counts(prog, xs, target)
    ours = cycle_run.estimate_run(counts, elf, target)
    result = {"macs": macs, "instructions": ours.instructions, "cycles": ours.cycles}
    if target == "cortex-m4":  # the L4R5's flash: every refill from 5 wait states (no ART) as an upper bound
        slow = cycle_run.estimate_run(counts, elf, target, memory=Memory(fetch_wait_states=L4R5_FLASH_WAIT_STATES))
        result["cycles_ws5"] = slow.cycles
    if root is not None:
        cases, missing = cmsis_nn_cases(prog, xs)
        ccounts, celf = cmsis_nn_counts(cases, target, root)
        spans = cycle_run.timed_calls(ccounts, celf, target)
        result.update(cmsis_cycles=sum(s.cycles for s in spans), cmsis_instructions=sum(s.instructions for s in spans),
                      cmsis_missing=missing)
        if target == "cortex-m4":
            slow = cycle_run.timed_calls(ccounts, celf, target,
                                         memory=Memory(fetch_wait_states=L4R5_FLASH_WAIT_STATES))
            result["cmsis_cycles_ws5"] = sum(s.cycles for s in slow)
    print(f"{name} {target}: {result}", file=sys.stderr)
    return result


def mv2_validation(root: Path) -> str:
    """CMSIS-NN's kernels on the first eight layers of torchvision's MobileNetV2 (224x224, random weights),
    estimated for the Cortex-M55, against the same kernels' cycles on silicon (ALIF_E8_M55_MV2)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # torchvision without its C part
    import torchvision_zoo  # its torchvision.models, imported after the stub

    torch.manual_seed(0)
    model = torchvision_zoo.models.mobilenet_v2().features[:4].eval()
    example = (torch.randn(1, 3, 224, 224),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=[example], target="cortex-m55", progress=False)
    xs = program_inputs(prog)
    cases, _missing = cmsis_nn_cases(prog, xs)
    counts, elf = cmsis_nn_counts(cases, "cortex-m55", root)
    spans = cycle_run.timed_calls(counts, elf, "cortex-m55")
    kinds = ("conv2d_s8", "depthwise_conv2d_s8")
    convs = [(op, sp) for op, sp in zip(prog.ops, spans, strict=True) if op.kind in kinds]
    rows, total_si, total_est = [], 0, 0.0
    for (label, silicon), (op, sp) in zip(ALIF_E8_M55_MV2, convs[: len(ALIF_E8_M55_MV2)], strict=True):
        rows.append([label, f"{op.macs / 1e6:.2f} M", f"{silicon / 1e6:.2f} M", f"{sp.cycles / 1e6:.2f} M",
                     f"{(sp.cycles - silicon) / silicon:+.0%}"])
        total_si += silicon
        total_est += sp.cycles
    rows.append(["all eight", "", f"{total_si / 1e6:.2f} M", f"{total_est / 1e6:.2f} M",
                 f"{(total_est - total_si) / total_si:+.0%}"])
    return table(["layer", "MACs", "silicon cycles (Alif E8 HP M55, ExecuTorch + CMSIS-NN)",
                  "CMSIS-NN kernel, est. cycles (cortex-m55 model)", "error"], rows)


def m(n: float) -> str:
    return f"{n / 1e6:.2f} M"


def estimate_table(results: dict, models: list[str]) -> str:
    rows = []
    for name in models:
        for target in TARGETS:
            r = results[name, target]
            cm = r.get("cmsis_cycles")
            published = PUBLISHED.get(target)
            pub = published[2][name] if published else None
            clock = published[1] if published else None
            rows.append([
                f"{TASK[name]} {name}", target, m(r["instructions"]), m(r["cycles"]), f"{r['cycles'] / r['macs']:.2f}",
                f"{r['cycles'] / clock * 1e3:.2f} @ {clock / 1e6:g}" if clock else "-",
                m(cm) if cm else "n/a", f"{cm / r['macs']:.2f}" if cm else "n/a",
                f"{r['cycles'] / cm:.2f}" if cm else "n/a",
                f"{pub[0]:.2f} ({pub[1]}; {m(pub[0] * clock / 1e3)})" if pub else "-",
            ])
    return table(["model", "core", "instructions", "est. cycles", "est. cycles/MAC", "est. ms @ MHz",
                  "CMSIS-NN est. cycles", "CMSIS-NN cycles/MAC", "mcuforge / CMSIS-NN",
                  "published ms (engine; cycles)"], rows)


def validation_table(results: dict, models: list[str]) -> str:
    rows = []
    for name in models:
        r = results[name, "cortex-m4"]
        silicon_ms = 1e3 / OCTOML_CMSIS_NN_M4[name]
        silicon = silicon_ms * L4R5_HZ / 1e3
        if "cmsis_cycles" not in r:
            rows.append([name, f"{silicon_ms:.2f}", m(silicon), "n/a", "n/a", "n/a", "n/a"])
            continue
        est, est5 = r["cmsis_cycles"], r["cmsis_cycles_ws5"]
        rows.append([f"{TASK[name]} {name}", f"{silicon_ms:.2f}", m(silicon), m(est),
                     f"{(est - silicon) / silicon:+.0%}", m(est5), f"{(est5 - silicon) / silicon:+.0%}"])
    return table(["model", "silicon ms (OctoML microTVM + CMSIS-NN, L4R5 @ 120 MHz)", "silicon cycles",
                  "CMSIS-NN kernels, est. cycles (0 wait states)", "error",
                  "est. cycles (5 wait states on every refill)", "error"], rows)


def zoo_check() -> int:
    """Every zoo model on every board, traced with cycles: each op has an estimate in the trace and the
    Inspector, and its plugin-counted instructions agree with the trace's SysTick count (to its resolution
    plus the clock read). Prints one line per run; returns the number of failures."""
    from mcuforge.inspect import Inspector

    failures = 0
    for name in MODELS:
        for target in TARGETS:
            try:
                model, example = MODELS[name]()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    prog = mcuforge.compile(model, example, calibration=[example], target=target, progress=False)
                facts: dict = {}
                _out, trace = prog.run(*example, backend="qemu", trace=True, measured=facts, board={"cycles": True})
                est = facts["cycles"]
                df = Inspector(prog, trace).to_dataframe()
                ok = len(est.op_cycles) == len(prog.graph.ops) == len(df) and bool(df["est_cycles"].notna().all())
                worst = max(abs(n - ev.duration) for ev, n in zip(trace.ops, est.op_instructions, strict=True))
                print(f"{name} {target}: {len(df)} ops, estimates {'ok' if ok else 'MISSING'}, "
                      f"{est.cycles / 1e6:.2f} M cycles, worst op instruction difference {worst}")
                failures += not ok
            except Exception as exc:  # noqa: BLE001 (a check over many runs reports each failure)
                print(f"{name} {target}: FAILED {type(exc).__name__}: {exc}")
                failures += 1
    return failures


def op_table(name: str, target: str) -> str:
    """One traced inference of ``name`` on ``target``'s board: each op's estimated cycles, instructions and
    cycles per MAC, the slowest first (where a kernel change pays off)."""
    prog = compile_for(name, target)
    _model, example = MODELS[name]()
    facts: dict = {}
    prog.run(*example, backend="qemu", trace=True, measured=facts, board={"cycles": True})
    est = facts["cycles"]
    rows = []
    for index, (op, cycles, count) in enumerate(zip(prog.ops, est.op_cycles, est.op_instructions, strict=True)):
        rows.append((cycles, [str(index), op.kind, f"{op.macs:,}", f"{count:,}", f"{cycles:,.0f}",
                              f"{cycles / op.macs:.2f}" if op.macs else "-", f"{cycles / est.cycles:.1%}"]))
    rows.sort(key=lambda r: -r[0])
    return (f"{name} on {target}: {est.cycles:,.0f} estimated cycles ({est.instructions:,} instructions), traced\n\n"
            + table(["op", "kind", "MACs", "instructions", "est. cycles", "cycles/MAC", "share"], [r[1] for r in rows]))


def main(argv: list[str]) -> None:
    if "--zoo" in argv:
        sys.exit(1 if zoo_check() else 0)
    if "--ops" in argv:
        model, target = (argv[argv.index("--ops") + 1:] + ["", ""])[:2]
        if model not in MODELS or target not in TARGETS:
            sys.exit(f"--ops MODEL CORE: MODEL one of {', '.join(sorted(MODELS))}, CORE one of {', '.join(TARGETS)} "
                     f"(got {model or 'nothing'!r} and {target or 'nothing'!r})")
        print(op_table(model, target))
        return
    root = cmsis_build.locate(None)
    if root is None:
        print(f"CMSIS-NN not found ({cmsis_build.missing_reason(None)}): its column is left out", file=sys.stderr)
    models = [a for a in argv if a in MODELS_MLPERF_TINY] or list(MODELS_MLPERF_TINY)
    results = {(name, target): measure(name, target, root) for name in models for target in TARGETS}
    body = ("Estimated cycles per inference (timing model over QEMU's executed instructions; not measured)\n\n"
            + estimate_table(results, models)
            + "\n\nValidation: CMSIS-NN's kernels on the same layers, estimated for the Cortex-M4, against the same "
              "kernels measured on silicon\n\n" + validation_table(results, models))
    if root is not None:
        body += ("\n\nValidation, per layer: CMSIS-NN's kernels on MobileNetV2's first layers, estimated for the "
                 "Cortex-M55, against the same kernels on silicon\n\n" + mv2_validation(root))
    note = ("\n\nEstimates: mcuforge.cycles timing models (docs/cycles.md), zero wait states unless stated; one "
            "untraced inference per model and core (cortex-m3/m4/m7/m33/m55 builds: scalar, DSP, DSP, DSP, MVE "
            "paths), random int8 inputs. CMSIS-NN: its kernels on exactly these layers and inputs "
            "(mcuforge.cmsis_nn comparison firmware, kernel calls only, no runtime), same plugin and model. "
            "Published: MLPerf Tiny v1.x closed division, best latency on silicon (other engines; flash wait "
            "states and real memories), cycles = ms x the board's clock. Validation: MLPerf Tiny v1.0 closed, "
            "OctoML microtvm_cmsis_nn on NUCLEO-L4R5ZI (median throughput, tiny_results_v1.0); it runs microTVM's "
            "own code between the CMSIS-NN calls and the MLPerf runner's per-inference overhead, which the "
            "estimate leaves out. Per layer (M55): ExecuTorch's Cortex-M backend (CMSIS-NN) on an Alif Ensemble E8 HP "
            "Cortex-M55, torchvision MobileNetV2 224x224, per-op cycles from pytorch/executorch issue 17651.")
    publish("cycles", "Estimated cycles per inference, MLPerf Tiny", body, note)


if __name__ == "__main__":
    main(sys.argv[1:])
