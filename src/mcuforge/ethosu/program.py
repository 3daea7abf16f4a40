"""A partially delegated program: :func:`delegate` (partition an already compiled all-CPU program) and the
NPU's ops as a frame; ``prog.ops`` and ``prog.delegates`` are mcuforge.records'."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ..plan import plan_arena
from ..records import DelegateRecord, delegate_records

if TYPE_CHECKING:
    from ..compiled import Program

__all__ = ["DelegateRecord", "delegate", "npu_op_frame"]


def delegate(prog: Program, npu: str = "ethos-u55-128", *, keep_tosa: bool = True) -> Program:
    """A copy of an all-CPU program with the ops ``npu`` can run delegated to it (no recompiling).

    ``keep_tosa=False`` leaves each subgraph's TOSA flatbuffer out of the program (smaller flash: the
    device needs only the command stream and Vela's weights), but the host can then no longer run it."""
    from ..compiled import Program
    from .partition import partition_graph

    if any(op.kind == "delegate" for op in prog.graph.ops):
        raise ValueError("the program is delegated already")
    graph, _ = partition_graph(prog.graph, npu, keep_tosa=keep_tosa)
    plan_arena(graph)
    meta = {**copy.deepcopy(prog.meta), "target": f"{prog.graph.target}+{npu}"}
    return Program(graph, compile_seconds=prog.compile_seconds, meta=meta, reference=prog.reference)


def npu_op_frame(prog: Program):
    """One row per op that runs on the NPU: its delegate (program op index), NPU, kind, module, MACs,
    and the subgraph's Vela estimates."""
    import pandas as pd

    ops = prog.ops
    rows = []
    for d in delegate_records(prog.graph):
        for i in d.ops:
            op = ops[i]
            rows.append({"op": i, "delegate_op": d.op_index, "partition": d.index, "npu": d.npu, "kind": op.kind,
                         "module": op.module, "macs": op.macs, "npu_cycles": op.npu_cycles,
                         "partition_npu_cycles": d.npu_cycles,
                         "partition_sram_bytes": d.sram_bytes, "partition_flash_bytes": d.flash_bytes})
    return pd.DataFrame(rows)
