"""A compiled program's layers run through CMSIS-NN on a board, beside our own run of them.

Each op of the program becomes the CMSIS-NN call computing the same thing
(:func:`mcuforge.cmsis_nn.ops.case_for_op`), fed the op's real inputs from one host run of the program
(the Python runtime: its bytes are the C runtime's and the boards', the three-way contract). All the
calls run in one QEMU boot (:func:`mcuforge.cmsis_nn.harness.run_board`), which counts each call's
instructions; each call's output bytes are compared with our op's. An op CMSIS-NN has no call for
(a reshape, a quantize from fp32...) costs 0 on its side and is listed.

    run = run_layers(program.graph, inputs, "cortex-m4")     # LayerRun: per op, instructions and equality
    run.kernel_instructions, run.verdict()                    # "outputs equal" or the first op that differs
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..ir import Graph, Op


@dataclass
class Layer:
    """One op of the program on CMSIS-NN's side."""

    index: int                 # the op's index in the program
    kind: str                  # our op kind
    function: str | None       # the CMSIS-NN comparison function (harness ``mfcmp_*``); None: no counterpart
    instructions: int = 0      # CMSIS-NN's call on the board (0 without counterpart)
    equal: bool | None = None  # its output bytes equal ours (None without counterpart)
    why_none: str = ""         # why the op has no CMSIS-NN counterpart


@dataclass
class LayerRun:
    """Every op of one program through CMSIS-NN on one board."""

    target: str
    layers: list[Layer] = field(default_factory=list)

    @property
    def matched(self) -> list[Layer]:
        return [la for la in self.layers if la.function is not None]

    @property
    def unmatched(self) -> list[Layer]:
        return [la for la in self.layers if la.function is None]

    @property
    def kernel_instructions(self) -> int:
        """CMSIS-NN's calls summed over the program's ops (0 for an op it has no call for)."""
        return sum(la.instructions for la in self.layers)

    @property
    def first_difference(self) -> Layer | None:
        return next((la for la in self.layers if la.equal is False), None)

    def verdict(self) -> str:
        """``"outputs equal"`` (every op with a CMSIS-NN call gave our bytes) or the first op that differs."""
        if not self.matched:
            return "no op has a CMSIS-NN call"
        bad = self.first_difference
        if bad is None:
            return "outputs equal"
        differ = sum(la.equal is False for la in self.layers)
        return f"op {bad.index} ({bad.kind}, {bad.function}) differs first ({differ} of {len(self.matched)} differ)"


def harness_missing() -> str | None:
    """Why the comparison harness (``harness``, ``ops``) cannot be imported, or None."""
    try:
        from . import harness, ops  # noqa: F401
    except ImportError as err:
        return f"the CMSIS-NN comparison harness is not in this tree ({err})"
    return None


def op_values(graph: Graph, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor's value in one host run of ``graph`` (its inputs, then each op's outputs, copied as
    they are written: the arena reuses their bytes later)."""
    from ..runtime import execute

    values = {name: np.asarray(x) for name, x in zip(graph.inputs, inputs, strict=True)}

    class Recorder:
        def run_start(self, arena: object) -> None: ...
        def op_start(self, index: int, op: Op) -> None: ...
        def run_end(self, status: int) -> None: ...

        def op_end(self, index: int, op: Op, outs: list[np.ndarray]) -> None:
            for name, out in zip(op.outputs, outs, strict=True):
                values[name] = np.array(out[0])  # the run axis dropped

    execute(graph, inputs, Recorder())
    return values


def activation_inputs(graph: Graph, op: Op, values: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The values of ``op``'s activation inputs from the run, in ``op.inputs`` order (what
    ``case_for_op`` takes: it reads the constants from the graph itself)."""
    return [values[name] for name in op.inputs if name and not graph.tensors[name].is_constant]


def same_bytes(ours: np.ndarray, theirs: np.ndarray) -> bool:
    """Byte equality of two outputs (a layout both sides agree on: the case's output is our tensor's
    bytes, whatever shape it is viewed as)."""
    a, b = np.ascontiguousarray(ours), np.ascontiguousarray(theirs)
    return a.dtype == b.dtype and a.nbytes == b.nbytes and a.tobytes() == b.tobytes()


def layer_cases(graph: Graph, values: dict[str, np.ndarray]) -> tuple[list[Layer], list[object]]:
    """One :class:`Layer` per op and the harness cases of those with a CMSIS-NN call, in op order."""
    from .ops import case_for_op

    layers, cases = [], []
    for index, op in enumerate(graph.ops):
        try:
            case = case_for_op(graph, op, activation_inputs(graph, op, values))
        except NotImplementedError as err:  # no CMSIS-NN call computes this op
            case, why = None, str(err) or f"no CMSIS-NN counterpart for {op.kind}"
        else:
            why = "" if case is not None else f"no CMSIS-NN counterpart for {op.kind}"
        if case is not None:
            case.name = f"op {index} ({op.kind})"  # for the harness's messages
        layers.append(Layer(index, op.kind, case.function if case is not None else None, why_none=why))
        if case is not None:
            cases.append(case)
    return layers, cases


def run_layers(graph: Graph, inputs: Sequence[np.ndarray], target: str, root: Path | None = None) -> LayerRun:
    """Every op of ``graph`` as CMSIS-NN's call on ``target``'s QEMU board, in one boot: its instructions
    per op and whether its output bytes equal ours (from a host run of ``graph`` on ``inputs``)."""
    from .harness import run_board

    values = op_values(graph, inputs)
    layers, cases = layer_cases(graph, values)
    outputs, counts = run_board(cases, target, root) if cases else ([], [])
    with_case = [la for la in layers if la.function is not None]
    for layer, theirs, n in zip(with_case, outputs, counts, strict=True):
        op = graph.ops[layer.index]
        layer.instructions = int(n)
        layer.equal = same_bytes(values[op.outputs[0]], theirs)
    return LayerRun(target, layers)
