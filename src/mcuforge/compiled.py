"""A compiled program (:class:`Program`): its facts, its files, its runs; :func:`load` reads one back.

``mcuforge.compile`` (``mcuforge.api``) makes one; the layers under the public API (the NPU delegation, the
inspector, the precision search) take one from here without importing ``mcuforge.api``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .backends import run_backend
from .ir import QUANTIZED_RANGES, Graph
from .kernels import dequantize_per_tensor, quantize_per_tensor
from .lower.builder import NCHW_TO_NHWC, NHWC_TO_NCHW
from .program import deserialize, serialize
from .records import DelegateRecord, OpRecord, delegate_records, op_records

DEBUG_SUFFIX = ".dbg.json"


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
    def memory_plan(self) -> list[Any]:
        """Each RAM region's arena (one "arena" for a single-region program) with the buffers placed in it
        (``mcuforge.regions.RegionPlan``)."""
        from .regions import memory_plan

        return memory_plan(self.graph)

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
        return op_records(self.graph)

    @property
    def delegates(self) -> list[DelegateRecord]:
        """The NPU-delegated subgraphs: NPU config, Vela's estimates, the ``ops`` indices they cover."""
        return delegate_records(self.graph)

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
