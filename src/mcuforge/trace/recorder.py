"""HostTraceRecorder: the host Python runtime's trace, an ExecutionObserver of ``runtime.execute``.

It emits exactly the stream the C runtime and the firmware emit (docs/trace.md), with the host
wall clock (``time.perf_counter_ns``) as the time unit. One recorder covers several runs one after
another; ``finish`` closes the stream. Tracing off means no recorder: the executor then reads no
timer and records nothing.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..ir import Graph, Op
from ..plan import lifetimes
from ..program.layout import DTYPE_CODES
from .debug_record import program_crc
from .writer import TraceWriter


class HostTraceRecorder:
    def __init__(self, graph: Graph, program_bytes: bytes, full: bool) -> None:
        self.graph = graph
        self.full = full
        self._index_of = {name: i for i, name in enumerate(graph.tensors)}  # the program file's tensor order
        self._writer = TraceWriter(unit="ns", full=full, program_crc=program_crc(program_bytes),
                                   op_count=len(graph.ops))
        self._write_allocs()
        self._run_index = 0

    def _write_allocs(self) -> None:
        """The arena, every activation with its lifetime (graph inputs live from op 0, outputs to
        the last op) and every op's scratch buffer (its op only), as the C runtime writes them."""
        last = max(len(self.graph.ops) - 1, 0)
        self._writer.alloc("arena", 0, 0, self.graph.arena_bytes, 0, last)
        for name, (first, end) in lifetimes(self.graph).items():
            t = self.graph.tensors[name]
            self._writer.alloc("tensor", self._index_of[name], t.offset, t.nbytes,
                               min(max(first, 0), last), min(end, last))
        for i, op in enumerate(self.graph.ops):
            if op.scratch_bytes:
                self._writer.alloc("scratch", i, op.scratch_offset, op.scratch_bytes, i, i)

    # -- ExecutionObserver ---------------------------------------------------------------------------
    def run_start(self, arena: Any) -> None:
        if getattr(arena, "runs", 1) != 1:
            raise ValueError("a trace records one run at a time (execute without runs=)")
        self._writer.run_start(self._run_index, time.perf_counter_ns())

    def op_start(self, index: int, op: Op) -> None:
        # The timer is read last, so the op's time does not include recording its start.
        self._writer.op_start(index, index, time.perf_counter_ns())

    def op_end(self, index: int, op: Op, outputs: list[np.ndarray]) -> None:
        now = time.perf_counter_ns()  # read first: dumping the outputs is not the op's time
        if self.full:
            for slot, (name, value) in enumerate(zip(op.outputs, outputs, strict=True)):
                t = self.graph.tensors[name]
                data = np.ascontiguousarray(value[0]).astype(value.dtype.newbyteorder("<"), copy=False).tobytes()
                self._writer.tensor(index, slot, self._index_of[name], DTYPE_CODES[t.dtype], data)
        self._writer.op_end(index, index, now)

    def run_end(self, status: int) -> None:
        self._writer.run_end(self._run_index, time.perf_counter_ns(), status)
        self._run_index += 1

    def finish(self) -> bytes:
        """Close the stream (STREAM_END) and return its bytes."""
        return self._writer.finish()
