"""The public API: compile a model, save/load the program, run it on the host."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .backends import run_backend
from .capture import as_input_tuple, capture, check_compilable
from .fit import check_fit
from .ir import QUANTIZED_RANGES, Graph, Op, op_precision
from .kernels import dequantize_per_tensor, quantize_per_tensor
from .kinds import KIND
from .lower import lower_to_ir
from .lower.builder import NCHW_TO_NHWC, NHWC_TO_NCHW
from .lower.cleanup import prepare_float_graph
from .lower.decompose import decompose
from .plan import choose_concat_placement, plan_arena
from .program import deserialize, serialize
from .quantize import ObserverConfig, Scheme, get_scheme, quantize
from .targets import get_target

DEBUG_SUFFIX = ".dbg.json"
#: The quantized dtypes of program inputs and outputs, with their ranges: float values in and out are
#: quantized and dequantized by their qparams (torch's quantize_per_tensor).


@dataclass(frozen=True)
class OpRecord:
    """One op of a program, as ``prog.ops`` and ``mcuforge info`` show it."""

    index: int
    kind: str
    backend: str  # "int8" kernel or "fp32" fallback
    reason: str  # why the op is not int8 (empty for int8 ops)
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    module: str = ""
    aten: tuple[str, ...] = ()
    macs: int = 0
    npu_cycles: int = 0  # Vela's estimate for an op delegated to an NPU (its TOSA layers' NPU cycles)
    # What the op computes in (mcuforge.ir.PRECISIONS): "a8w8" (int8 activations and weights), "a8w4" (int4
    # weights), "a8" (int8, no weights: add, pooling, int8 data movement), "fp32" (fallback and its boundaries).
    precision: str = ""


def _macs(graph: Graph, op: Op) -> int:
    """The op's multiply-accumulates, by its kind's MAC rule (mcuforge.kinds: KindSpec.macs)."""
    rule, t = KIND[op.kind].macs if op.kind in KIND else "", graph.tensors
    if rule in ("conv", "depthwise"):
        kh, kw = t[op.inputs[1]].shape[1:3]
        return t[op.outputs[0]].numel * kh * kw * (t[op.inputs[1]].shape[3] if rule == "conv" else 1)
    if rule == "fully_connected":
        return t[op.outputs[0]].numel * t[op.inputs[1]].shape[1]
    if rule == "transpose_conv":  # every input pixel meets every tap of every output channel
        oc, kh, kw, _cin = t[op.inputs[1]].shape
        return t[op.inputs[0]].numel * kh * kw * oc
    if rule == "batch_matmul":  # one K-long dot product per output element
        return t[op.outputs[0]].numel * t[op.inputs[0]].shape[-2 if op.attrs.get("adj_x") else -1]
    if rule == "recurrent":  # every step: 4H (3H) dot products over the input and the state
        features = t[op.inputs[0]].shape[2]
        return t[op.outputs[0]].numel * KIND[op.kind].recurrent_gates * (features + t[op.inputs[2]].shape[1])
    if rule == "aten":
        return _aten_macs(graph, op)
    return 0


def _aten_macs(graph: Graph, op: Op) -> int:
    """MACs of an fp32 aten op, as torch's FLOP counter counts them (FLOPs / 2): the op runs on
    meta tensors of its input shapes, so conv, linear, matmul, attention... in fp32 are counted
    like their int8 forms. Ops the counter does not know (pointwise, data movement) count 0."""
    from torch.utils.flop_counter import FlopCounterMode

    from .ir import DTYPES
    from .runtime.fp32 import _decode, resolve_aten

    tensors = [torch.empty(graph.tensors[n].shape, device="meta",
                           dtype=getattr(torch, str(DTYPES[graph.tensors[n].dtype])))
               for n in op.inputs]
    try:
        with FlopCounterMode(display=False) as counter:
            resolve_aten(op.attrs["target"])(*_decode(op.attrs["args"], tensors),
                                             **{k: _decode(v, tensors) for k, v in op.attrs["kwargs"].items()})
    except Exception:  # noqa: BLE001 - an op without a meta kernel: nothing that multiplies
        return 0
    return counter.get_total_flops() // 2


@dataclass
class Program:
    """A compiled program: the IR graph with its arena plan, plus the debug record."""

    graph: Graph
    compile_seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    # The PT2E-converted model this program was lowered from (in memory only, not saved): the
    # float simulation that the int8 program must match.
    reference: Any = field(default=None, repr=False)

    # -- facts known before flashing -------------------------------------------------------------
    @property
    def target(self) -> str:
        return self.graph.target

    @property
    def arena_bytes(self) -> int:
        """Bytes of RAM the program needs at run time (activations and scratch), exactly."""
        return self.graph.ram_bytes

    @property
    def constant_bytes(self) -> int:
        return self.graph.constant_bytes

    @property
    def patch_plan(self) -> Any:
        """What patch-based execution did (:class:`mcuforge.patches.PatchPlan`: split, grid, arena before and
        after, MAC overhead), or None for a program compiled without ``ram_budget`` / ``patches``."""
        from .patches import PatchPlan

        plan = self.meta.get("patch_plan")
        return PatchPlan.from_dict(plan) if plan else None

    @property
    def program_bytes(self) -> int:
        return len(self.to_bytes())

    @property
    def int8_mac_share(self) -> float:
        """The share of the program's MACs (every op's, fp32 ones included) that run on int8 kernels;
        1.0 for a program without MACs."""
        ops = self.ops
        total = sum(op.macs for op in ops)
        return sum(op.macs for op in ops if op.backend == "int8") / total if total else 1.0

    @property
    def input_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shapes ``run`` takes, in torch's order (NCHW for images; the program stores NHWC)."""
        shapes = []
        for name in self.graph.inputs:
            t = self.graph.tensors[name]
            shapes.append(tuple(t.shape[j] for j in NHWC_TO_NCHW) if t.layout == "nhwc" else t.shape)
        return tuple(shapes)

    @property
    def ops(self) -> list[OpRecord]:
        """The model's ops; with NPU delegation, each delegate op lists the ops it covers (``backend``
        = the NPU configuration) and CPU ops say why they stayed on the CPU (``reason``)."""
        g = self.graph
        if any(op.kind == "delegate" or "cpu_reason" in op.debug for op in g.ops):  # partitioned for an NPU
            from .ethosu.program import op_records

            return op_records(self)
        return [
            OpRecord(
                index=i, kind=op.kind, backend=op.backend, reason=op.reason,
                input_shapes=tuple(g.tensors[n].shape for n in op.inputs if not g.tensors[n].is_constant),
                output_shapes=tuple(g.tensors[n].shape for n in op.outputs),
                module=op.debug.get("module", ""), aten=tuple(op.debug.get("aten", ())), macs=_macs(g, op),
                precision=op_precision(op, g.tensors),
            )
            for i, op in enumerate(g.ops)
        ]

    @property
    def delegates(self) -> list[Any]:
        """The NPU-delegated subgraphs: NPU config, Vela's estimates, the ``ops`` indices they cover."""
        from .ethosu.program import delegate_records

        return delegate_records(self)

    # -- files -------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        return serialize(self.graph)

    def debug_record(self, program_bytes: bytes | None = None) -> dict[str, Any]:
        """The debug record (``<program>.dbg.json``): per op its debug handle, module, source line,
        aten ops, fp32 reference node and quantized tensors; the program's payload CRC.
        ``program_bytes``: ``to_bytes()`` when the caller has it already (spares serializing again)."""
        from .trace.debug_record import build_debug_record

        return build_debug_record(self.graph, program_bytes or self.to_bytes(), self.meta)

    def save(self, path: str | Path) -> Path:
        """Write the program file and, beside it, the debug record (``<path>.dbg.json``)."""
        path = Path(path)
        data = self.to_bytes()
        path.write_bytes(data)
        Path(str(path) + DEBUG_SUFFIX).write_text(json.dumps(self.debug_record(data), indent=1))
        return path

    # -- running -----------------------------------------------------------------------------------
    def _program_inputs(self, inputs: Sequence[Any]) -> tuple[list[np.ndarray], int, bool]:
        """Inputs in the program's dtype and layout, with a leading run axis; the number of runs;
        whether the caller gave exactly one run (no batch beyond the compiled one)."""
        g = self.graph
        if len(inputs) != len(g.inputs):
            raise ValueError(f"the program takes {len(g.inputs)} input(s), got {len(inputs)}")
        arrays = [value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
                  for value in inputs]
        runs = _run_count(arrays, self.input_shapes, g.inputs)
        out = []
        for arr, name, logical in zip(arrays, g.inputs, self.input_shapes, strict=True):
            t = g.tensors[name]
            arr = arr.reshape((runs, *logical))
            if t.layout == "nhwc":
                arr = np.transpose(arr, (0, *(p + 1 for p in NCHW_TO_NHWC)))
            if t.dtype in QUANTIZED_RANGES and t.qparams is not None and arr.dtype != np.dtype(t.dtype):
                qmin, qmax = QUANTIZED_RANGES[t.dtype]  # int8, or int16 (an A16W8 program's input)
                arr = quantize_per_tensor(arr.astype(np.float32), t.qparams.scale, t.qparams.zero_point, qmin, qmax,
                                          np.dtype(t.dtype))
            out.append(np.ascontiguousarray(arr, dtype=t.dtype))
        single = all(a.shape == s for a, s in zip(arrays, self.input_shapes, strict=True))
        return out, runs, single

    def _user_outputs(self, values: list[np.ndarray], single: bool) -> tuple[np.ndarray, ...]:
        """Program outputs (with a run axis) -> float NCHW outputs; runs merged into the batch axis."""
        results = []
        for name, value in zip(self.graph.outputs, values, strict=True):
            t = self.graph.tensors[name]
            if t.qparams is not None and t.dtype in QUANTIZED_RANGES:
                value = dequantize_per_tensor(value, t.qparams.scale, t.qparams.zero_point)
            if t.layout == "nhwc":
                value = np.transpose(value, (0, *(p + 1 for p in NHWC_TO_NCHW)))
            if single:
                value = value[0]
            elif len(t.shape) > 0 and t.shape[0] == self.graph.tensors[self.graph.inputs[0]].shape[0]:
                value = value.reshape((-1, *value.shape[2:]))  # runs x batch -> one batch axis
            results.append(np.ascontiguousarray(value))  # float32, or the integer/bool dtype of an fp32 op
        return tuple(results)

    def run_raw(self, *inputs: Any, backend: str = "python", target: str | None = None) -> list[np.ndarray]:
        """Outputs as the program stores them (int8 or int16 for quantized outputs, program layout), for
        exactly one run of the compiled shapes."""
        prepared, runs, single = self._program_inputs(inputs)
        if not single:
            raise ValueError(f"run_raw takes the compiled input shapes {list(self.input_shapes)}")
        outputs, _trace = run_backend(self, prepared, runs, backend=backend, target=target, trace=False)
        return [o[0] for o in outputs]

    def run(self, *inputs: Any, backend: str = "python", target: str | None = None,
            trace: bool | str = False, measured: dict[str, Any] | None = None,
            board: dict[str, Any] | None = None) -> Any:
        """Run the program: float (NCHW) inputs in, float outputs out, one per model output.

        Inputs may carry any batch along the first dimension (a multiple of the compiled batch):
        the runs are computed together, vectorized. ``backend``: "python" (host runtime), "c"
        (the C runtime built for the host) or "qemu" (firmware on the emulated board of
        ``target``, by default the program's). ``trace=True`` also returns the trace (per-op
        times); ``trace="full"`` adds every op's output. ``measured``: a dict that a "qemu" run
        fills with the board's figures (instructions, stack high-water bytes, ...). ``board``: options
        of a "qemu" run (:func:`mcuforge.firmware.run_on_qemu`): ``via="uart"`` sends the trace over
        the board's UART, ``timer`` chooses the trace's clock.
        """
        prepared, runs, single = self._program_inputs(inputs)
        outputs, recorded = run_backend(self, prepared, runs, backend=backend, target=target, trace=trace,
                                        measured=measured, board=board)
        results = self._user_outputs(outputs, single)
        return (results, recorded) if trace else results


def _run_count(arrays: list[np.ndarray], shapes: tuple[tuple[int, ...], ...], names: list[str]) -> int:
    """How many runs of the compiled shapes ``arrays`` hold (batch along the first dimension)."""
    runs = set()
    for i, (arr, shape, name) in enumerate(zip(arrays, shapes, names, strict=True)):
        if tuple(arr.shape) == shape:
            runs.add(1)
        elif len(shape) > 0 and arr.ndim == len(shape) and tuple(arr.shape[1:]) == shape[1:] \
                and shape[0] > 0 and arr.shape[0] % shape[0] == 0 and arr.shape[0] > 0:
            runs.add(arr.shape[0] // shape[0])
        else:
            batch = f" (or a batch of a multiple of {shape[0]} along the first dimension)" if shape else ""
            raise ValueError(f"input {i} ({name}): expected shape {list(shape)}{batch}, got {list(arr.shape)}")
    if len(runs) != 1:
        raise ValueError(f"the inputs hold different batch sizes: {sorted(runs)} run(s)")
    return runs.pop()


def _random_calibration(example: tuple[torch.Tensor, ...], count: int = 16) -> list[tuple[torch.Tensor, ...]]:
    gen = torch.Generator().manual_seed(0)
    # Integer inputs (indices) cannot be drawn from a normal: the example itself stands in for them.
    return [tuple(torch.randn(x.shape, generator=gen, dtype=x.dtype) if x.is_floating_point() else x
                  for x in example) for _ in range(count)]


def compile(  # noqa: A001 - the public name the flow reads as
    model: nn.Module,
    example_inputs: torch.Tensor | Sequence[torch.Tensor],
    calibration: Iterable[Any] | None = None,
    target: str = "cortex-m55",
    *,
    progress: bool = True,
    observers: ObserverConfig | None = None,
    quantization: str | Scheme = "int8",
    flash_bytes: int | None = None,
    ram_bytes: int | None = None,
    fit_check: bool = True,
    equalization: bool | None = None,
    bias_correction: bool | None = None,
    guard: bool = False,
    precision: str | None = None,
    flash_budget: int | None = None,
    ram_budget: int | None = None,
    patches: int | tuple[int, int] | None = None,
) -> Program:
    """Capture, quantize (PT2E, calibrated on ``calibration``), lower, plan: a :class:`Program`.

    ``calibration`` is any iterable of input tuples (a DataLoader works; extra items such as
    labels are ignored). Without it, random normal inputs are used and a warning says so.
    ``observers`` overrides the calibration observers (histogram activations, per-channel
    min/max weights by default). ``quantization``: the scheme, uniform over the model -- "int8"
    (int8 activations and weights, the default), "w4a8" (int4 weights for convolutions and
    linear layers, packed two per byte: about half the flash) or "a16w8" (int16 activations with int8
    weights and int64 bias on CMSIS-NN's s16 kernels, for the ops that have one; the others stay int8
    between inserted int8 <-> int16 conversions); each op's ``precision`` says what it runs in. ``target``: a Cortex-M
    ("cortex-m55"), or a Cortex-M with an Ethos-U NPU ("cortex-m55+ethos-u55-128"): the ops the
    NPU can run are then delegated to it, compiled by Vela (``prog.delegates``; needs the
    ``ethos-u`` extra).

    ``equalization``: cross-layer equalization of consecutive layers with a ReLU (or nothing) between
    (Nagel et al. 2019; scales from the calibration ranges of the activation between); ``bias_correction``:
    empirical bias correction -- each layer's mean output error per channel against the fp32 model, measured
    on the calibration data with the layers before it quantized and corrected, taken out of its int32 bias
    (``mcuforge.accuracy.equalize``). None, the defaults: what lost on no model of
    benchmarks/results/equalization.md -- no equalization, bias correction of the layers with 4-bit weights.
    ``guard=True``: the configurations asked for (without; with each correction) are scored by
    cross-validation on the calibration data and the best is kept (``prog.meta["corrections"]`` gives the
    scores); off by default: with a few calibration items its choice is noisy (docs/accuracy.md has the
    figures).

    ``precision``: the same as ``quantization`` for one scheme everywhere; ``"auto"`` chooses each weighted
    layer's precision (int8, W4A8 or A16W8) from a sensitivity analysis on the calibration data
    (``mcuforge.accuracy``) to meet ``flash_budget`` (program bytes) and ``ram_budget`` (arena bytes; both
    default to ``flash_bytes`` / ``ram_bytes``) with the least loss of output SQNR; ``prog.meta
    ["precision_choice"]`` (and ``mcuforge info``) gives each layer's precision and why. A budget no choice
    meets raises ``mcuforge.accuracy.auto.BudgetError`` naming the smallest program.

    Without ``precision="auto"``, ``ram_budget`` is met by patch-based execution (``mcuforge.patches``, MCUNetV2)
    when the whole program's arena exceeds it: the leading ops run over a grid of spatial patches (split point and
    grid chosen for the fewest extra MACs); a program that fits is left whole. ``patches`` (n, or (rows, cols))
    forces that grid. ``prog.patch_plan`` (and ``mcuforge info``) gives the arena before and after and the MAC
    overhead. Without either, the plan is today's exactly.

    ``model`` may also be a model from :func:`mcuforge.prepare_qat`, trained: its frozen fake quants give the
    qparams (``calibration`` and the quantization options are then not used; ``mcuforge.qat``).

    The program must fit the target's reference board (``mcuforge.targets``: its QEMU board, or a named
    part) or the part given by ``flash_bytes`` / ``ram_bytes``: else :class:`mcuforge.fit.FitError` says by
    how much and which constants or activations are the largest. ``fit_check=False`` skips the check.
    """
    from .ethosu.npu import split_target  # "cortex-m55+ethos-u55-128": the CPU, then the NPU to delegate to

    cpu_target, npu = split_target(target)
    get_target(cpu_target)
    from .qat.prepare import is_qat_model

    if is_qat_model(model):  # trained with fake quantization: its own qparams, no calibration
        return _compile_qat(model, example_inputs, calibration, target, flash_bytes=flash_bytes, ram_bytes=ram_bytes,
                            fit_check=fit_check)
    if precision == "auto":
        return _compile_auto(model, example_inputs, calibration, target, progress=progress, observers=observers,
                             flash_bytes=flash_bytes, ram_bytes=ram_bytes, fit_check=fit_check,
                             equalization=equalization, bias_correction=bias_correction,
                             flash_budget=flash_budget, ram_budget=ram_budget)
    if precision is not None:
        quantization = precision
    scheme = get_scheme(quantization)
    start = time.perf_counter()
    example = as_input_tuple(example_inputs)
    if calibration is None:
        warnings.warn("no calibration data given: calibrating on random normal inputs; int8 accuracy "
                      "will suffer. Give representative inputs (calibration= in Python, --calibration "
                      "in the CLI).", stacklevel=2)
        calibration = _random_calibration(example)
    captured = capture(model, example)
    check_compilable(captured)  # data-dependent shapes, complex or float64 values: one line, before quantizing
    decompose(captured)  # fused ops (scaled_dot_product_attention) -> ops with int8 kernels
    prepare_float_graph(captured)  # identities out; BatchNorm folded, or else a depthwise conv
    from .accuracy.equalize import DEFAULT_EQUALIZATION, FOUR_BIT_LAYERS

    equalization = DEFAULT_EQUALIZATION if equalization is None else equalization
    correct: bool | str = bias_correction
    if bias_correction is None:  # by default the layers with 4-bit weights (there it never lost)
        correct = FOUR_BIT_LAYERS if scheme.any_four_bit else False
    corrections: dict[str, Any] = {}
    if equalization or correct:
        from .accuracy import equalize
        from .quantize import calibration_batches

        calibration = list(calibration_batches(calibration, len(example)))
        converted, corrections = equalize.quantize_corrected(
            captured, calibration, scheme, observers, equalization=equalization, bias_correction=correct,
            guard=guard, progress=progress)
    else:
        converted = quantize(captured, calibration, len(example), progress=progress, observers=observers,
                             scheme=scheme)
    graph = lower_to_ir(converted, cpu_target)
    if npu is not None:
        from .ethosu.partition import partition_graph

        graph, _subgraphs = partition_graph(graph, npu)
    plan_arena(graph)
    choose_concat_placement(graph)  # producers write into a concat's output where that lowers the arena
    patch_plan = None
    if ram_budget is not None or patches is not None:  # patch-based execution to meet the budget
        from .patches import choose

        graph, patch_plan = choose(graph, ram_budget, patches)
    if fit_check:
        check_fit(graph, len(serialize(graph)), target, flash_bytes, ram_bytes)
    return Program(graph, compile_seconds=time.perf_counter() - start,
                   meta={"model": type(model).__name__, "target": target, "quantization": scheme.name,
                         **({"corrections": corrections} if corrections else {}),
                         **({"patch_plan": patch_plan.to_dict()} if patch_plan else {})},
                   reference=converted)


def _compile_qat(model: Any, example_inputs: Any, calibration: Iterable[Any] | None, target: str, *,
                 flash_bytes: int | None, ram_bytes: int | None, fit_check: bool) -> Program:
    """A model from :func:`mcuforge.prepare_qat`, trained: its frozen fake quants' qparams become the program's
    (``mcuforge.qat.convert``); calibration, scheme and corrections were fixed when it was prepared."""
    from .ethosu.npu import split_target
    from .qat.convert import convert_qat
    from .qat.prepare import META_KEY

    if calibration is not None:
        warnings.warn("compiling a QAT model: its qparams come from training, the calibration data is not used",
                      stacklevel=3)
    start = time.perf_counter()
    cpu_target, npu = split_target(target)
    converted = convert_qat(model, as_input_tuple(example_inputs))
    graph = lower_to_ir(converted, cpu_target)
    if npu is not None:
        from .ethosu.partition import partition_graph

        graph, _subgraphs = partition_graph(graph, npu)
    plan_arena(graph)
    if fit_check:
        check_fit(graph, len(serialize(graph)), target, flash_bytes, ram_bytes)
    scheme = model.meta[META_KEY].scheme
    return Program(graph, compile_seconds=time.perf_counter() - start,
                   meta={"model": "qat", "target": target, "quantization": scheme.name, "qat": True,
                         **({"qat_layers": [list(layer) for layer in scheme.layers]} if scheme.layers else {})},
                   reference=converted)


def _compile_auto(model: nn.Module, example_inputs: Any, calibration: Iterable[Any] | None, target: str, *,
                  progress: bool, observers: ObserverConfig | None, flash_bytes: int | None, ram_bytes: int | None,
                  fit_check: bool, equalization: bool, bias_correction: bool, flash_budget: int | None,
                  ram_budget: int | None) -> Program:
    from .accuracy.auto import compile_auto
    from .quantize import calibration_batches

    start = time.perf_counter()
    example = as_input_tuple(example_inputs)
    if calibration is None:
        warnings.warn("no calibration data given: calibrating (and choosing precisions) on random normal "
                      "inputs; give representative inputs (calibration=).", stacklevel=3)
        calibration = _random_calibration(example)
    items = list(calibration_batches(calibration, len(example)))
    options: dict[str, Any] = {"equalization": equalization, "bias_correction": bias_correction}
    if observers is not None:
        options["observers"] = observers
    prog = compile_auto(model, example, items, target, flash_budget if flash_budget is not None else flash_bytes,
                        ram_budget if ram_budget is not None else ram_bytes, progress, options)
    if fit_check:
        check_fit(prog.graph, prog.program_bytes, target, flash_bytes, ram_bytes)
    prog.compile_seconds = time.perf_counter() - start
    prog.meta.update({"model": type(model).__name__, "quantization": "auto"})
    return prog


def load(path: str | Path) -> Program:
    """Read a program file (validated) and its debug record if one lies beside it."""
    path = Path(path)
    graph = deserialize(path.read_bytes())
    prog = Program(graph)
    debug_path = Path(str(path) + DEBUG_SUFFIX)
    if debug_path.exists():
        record = json.loads(debug_path.read_text())
        ops = record.get("ops", [])
        if len(ops) == len(graph.ops):
            for op, info in zip(graph.ops, ops, strict=True):
                op.backend = info.get("backend", op.backend)
                op.reason = info.get("reason", "")
                op.debug = {k: v for k, v in info.items()
                            if k not in ("index", "kind", "backend", "reason", "precision")}
        prog.meta = record.get("meta", {})
    return prog
