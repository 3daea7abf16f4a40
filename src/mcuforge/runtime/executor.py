"""The op loop over one arena, as on the device, for one run or many runs at once.

Every activation is a view of the arena at its planned offset, exactly as on the device, so a
planning error shows up here as wrong numbers, not only on the board.

Many runs at once (evaluating a data set): the arena is scaled by the number of runs ``G`` and a
tensor planned at ``[offset, offset + nbytes)`` lives at ``[G*offset, G*(offset + nbytes))``,
holding its ``G`` copies one after the other. Which tensors overlap, and when, is then exactly
the single-run plan, so batched runs check the plan as strictly as single runs do, while every
kernel call computes all ``G`` runs vectorized.

Adapter convention (``ops.KERNELS``): every input array carries a leading run axis -- of size
``G`` for activations, of size 1 for constants -- and every output has shape ``(G, *shape)``.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ..ir import DTYPES, INT4, Graph, Op
from ..kernels.fc_pairs import S8_PAIRS, unpack_pairs
from .ops import KERNELS, PackedWeights


class OpExecutionError(RuntimeError):
    """An op failed at run time; the message names the op index, kind and module."""


class ExecutionObserver(Protocol):
    """Receives the events of a run (tracing). Without an observer nothing is recorded."""

    def run_start(self, arena: Arena) -> None: ...
    def op_start(self, index: int, op: Op) -> None: ...
    def op_end(self, index: int, op: Op, outputs: list[np.ndarray]) -> None: ...
    def run_end(self, status: int) -> None: ...


class Arena:
    """Views of one byte buffer at the planned offsets (activations) and the constants."""

    def __init__(self, graph: Graph, runs: int = 1) -> None:
        self.graph = graph
        self.runs = runs
        self.buffer = np.zeros(max(graph.arena_bytes, 1) * runs, np.uint8)
        # A tensor's view never changes during a run: built once, not once per op that touches it
        # (on small graphs building views was a large share of the host runtime's time).
        self._views: dict[str, np.ndarray] = {}

    def view(self, name: str) -> np.ndarray:
        """The tensor with a leading run axis: ``(runs, *shape)``; ``(1, *shape)`` for constants."""
        view = self._views.get(name)
        if view is None:
            t = self.graph.tensors[name]
            if t.dtype == INT4:  # packed weights: the bytes and the shape they hold (no run axis)
                view = PackedWeights(t.data, tuple(t.shape), t.layout)
            elif t.layout == S8_PAIRS:  # fully connected weights in the DSP cores' order: the plain values
                view = unpack_pairs(t.data, tuple(t.shape))[np.newaxis]
            elif t.is_constant:
                view = t.data[np.newaxis]
            elif t.pitch:
                view = self._pitched(t)
            else:
                dtype = DTYPES[t.dtype]
                start = t.offset * self.runs
                nbytes = math.prod(t.shape) * dtype.itemsize  # t.nbytes, without numpy's per-call cost
                view = self.buffer[start:start + nbytes * self.runs].view(dtype).reshape((self.runs, *t.shape))
            self._views[name] = view
        return view

    def _pitched(self, t) -> np.ndarray:
        """A pitched tensor (``Tensor.pitch``, int8 NHWC, its channels in a slice of a concat's output): pixel p's
        C channels at ``offset + p * pitch``. With G runs each pixel's G copies lie side by side at ``G * (offset +
        p * pitch)`` (every run of a pixel's bytes scaled as a whole tensor is): the slices of one concat output
        interleave in its G-scaled bytes as they do in one run's."""
        n, h, w, c = t.shape
        g = self.runs
        start, span = t.offset * g, ((n * h * w - 1) * t.pitch + c) * g if t.numel else 0
        base = self.buffer[start:start + span].view(np.int8)
        pix = t.pitch * g
        return np.lib.stride_tricks.as_strided(base, (g, n, h, w, c), (c, h * w * pix, w * pix, pix, 1))


class _Plan:
    """An arena and every op's input and output views, kept between runs of one graph (evaluating a
    data set runs the same graph many times: building the views was a large share of a small
    graph's time). ``fingerprint`` is what the views were built from; a plan whose graph has changed
    since (a tensor or op replaced, re-planned, given new data or new operands) is rebuilt."""

    def __init__(self, graph: Graph, runs: int) -> None:
        self.arena = Arena(graph, runs)
        self.fingerprint = _fingerprint(graph)
        # The objects whose ids the fingerprint holds, kept alive so that no id can be reused.
        self.held = (list(graph.ops), [(t, t.data) for t in graph.tensors.values()])
        self.steps = [(op, [self.arena.view(n) if n else None for n in op.inputs],
                       [self.arena.view(n) for n in op.outputs]) for op in graph.ops]
        self.lock = threading.Lock()  # held by the run using the arena (another thread, or a re-entrant run,
        # gets a fresh plan instead)


def _fingerprint(graph: Graph) -> tuple:
    """Everything a plan's views depend on, as ids and plain values (one tuple comparison checks it)."""
    return (graph.arena_bytes,
            tuple((id(op), tuple(op.inputs), tuple(op.outputs)) for op in graph.ops),
            tuple((id(t), id(t.data), t.offset, t.pitch, tuple(t.shape), t.dtype) for t in graph.tensors.values()))


#: Plans by graph (id, dropped when the graph is collected) and number of runs.
_PLANS: dict[int, dict[int, _Plan]] = {}
_PLAN_RUNS_KEPT = 4  # run counts kept per graph (a data set has one batch size, and a last batch)


def _plan(graph: Graph, runs: int) -> _Plan | None:
    """The kept plan of ``graph`` for ``runs`` runs (built on first use), locked for the caller; None if
    it is in use."""
    plans = _PLANS.get(id(graph))
    if plans is None:
        plans = _PLANS[id(graph)] = {}
        weakref.finalize(graph, _PLANS.pop, id(graph), None)
    plan = plans.get(runs)
    if plan is None or plan.fingerprint != _fingerprint(graph):
        if len(plans) >= _PLAN_RUNS_KEPT:
            plans.clear()
        plan = plans[runs] = _Plan(graph, runs)
    return plan if plan.lock.acquire(blocking=False) else None


def execute(graph: Graph, inputs: Sequence[np.ndarray], observer: ExecutionObserver | None = None,
            *, runs: int | None = None) -> list[np.ndarray]:
    """Run ``graph`` on inputs already in the program's dtype and layout; returns copies of the
    outputs.

    With ``runs=None`` the inputs have exactly the program's input shapes (one run). With
    ``runs=G`` every input and output carries a leading axis of ``G`` independent runs.
    """
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"program takes {len(graph.inputs)} inputs, got {len(inputs)}")
    single = runs is None
    plan = _plan(graph, 1 if single else runs) if observer is None else None
    if plan is None:  # traced (the observer sees a fresh arena) or already running: a fresh plan
        return _run(graph, _Plan(graph, 1 if single else runs), inputs, observer, single)
    try:
        return _run(graph, plan, inputs, observer, single)
    finally:
        plan.lock.release()


def _run(graph: Graph, plan: _Plan, inputs: Sequence[np.ndarray], observer: ExecutionObserver | None,
         single: bool) -> list[np.ndarray]:
    arena = plan.arena
    for name, value in zip(graph.inputs, inputs, strict=True):
        dst = arena.view(name)
        value = np.asarray(value)
        expected = dst.shape[1:] if single else dst.shape
        if value.shape != expected or value.dtype != dst.dtype:
            raise ValueError(f"input {name!r}: expected {dst.dtype}{list(expected)}, got "
                             f"{value.dtype}{list(value.shape)}")
        dst[...] = value.reshape(dst.shape)
    if observer is not None:
        observer.run_start(arena)
    for index, (op, ins, outs) in enumerate(plan.steps):  # ins: None for an absent optional input
        if observer is not None:
            observer.op_start(index, op)
        try:
            result = KERNELS[op.kind](op, ins, outs)
            results = result if isinstance(result, list) else [result]
            for dst, value in zip(outs, results, strict=True):
                value = np.asarray(value)
                if value.size != dst.size:
                    raise ValueError(f"kernel gave {value.size} values for an output of shape {list(dst.shape)}")
                if value.shape == dst.shape:
                    np.copyto(dst, value, casting="unsafe")  # the same bytes as astype, without a temporary
                else:
                    dst[...] = value.astype(dst.dtype, copy=False).reshape(dst.shape)
        except Exception as exc:  # noqa: BLE001 - re-raised with the op's identity
            if observer is not None:
                observer.run_end(1)
            where = op.debug.get("module") or "?"
            raise OpExecutionError(f"op {index} ({op.kind}, module '{where}') failed: {exc}") from exc
        if observer is not None:
            observer.op_end(index, op, outs)
    if observer is not None:
        observer.run_end(0)
    outputs = [np.array(arena.view(n)) for n in graph.outputs]
    return [o[0] for o in outputs] if single else outputs
