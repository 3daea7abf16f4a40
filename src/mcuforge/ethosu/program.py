"""Views of a partially delegated program: ``prog.ops`` with the delegated ops expanded, ``prog.delegates``,
and :func:`delegate` (partition an already compiled all-CPU program)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..plan import plan_arena

if TYPE_CHECKING:
    from ..api import OpRecord, Program


@dataclass(frozen=True)
class DelegateRecord:
    """One NPU-delegated subgraph, as ``prog.delegates`` and ``mcuforge info`` show it."""

    index: int  # the delegate's number
    op_index: int  # its op in the program file (and in traces)
    npu: str  # "ethos-u55-128"
    ops: tuple[int, ...]  # the indices in ``prog.ops`` it covers
    macs: int  # Vela's MAC count
    npu_cycles: int
    total_cycles: int
    sram_bytes: int
    flash_bytes: int
    command_stream_bytes: int
    weights_bytes: int
    scratch_bytes: int


def op_records(prog: Program) -> list[OpRecord]:
    from ..api import OpRecord, _macs
    from ..ir import op_precision

    g = prog.graph
    records: list[OpRecord] = []
    for op in g.ops:
        if op.kind == "delegate" and op.debug.get("covers"):
            for c in op.debug["covers"]:
                records.append(OpRecord(
                    index=len(records), kind=c["kind"], backend=op.attrs["npu"], reason="",
                    input_shapes=tuple(tuple(s) for s in c["input_shapes"]),
                    output_shapes=tuple(tuple(s) for s in c["output_shapes"]), module=c["module"],
                    aten=tuple(c["aten"]), macs=int(c["macs"]), npu_cycles=int(c.get("npu_cycles", 0)),
                    precision=c.get("precision", "a8w8")))
            continue
        records.append(OpRecord(
            index=len(records), kind=op.kind, backend=op.backend if op.kind != "delegate" else op.attrs["npu"],
            reason=op.debug.get("cpu_reason") or op.reason,
            input_shapes=tuple(g.tensors[n].shape for n in op.inputs if n and not g.tensors[n].is_constant),
            output_shapes=tuple(g.tensors[n].shape for n in op.outputs),
            module=op.debug.get("module", ""), aten=tuple(op.debug.get("aten", ())),
            macs=op.attrs["macs"] if op.kind == "delegate" else _macs(g, op), precision=op_precision(op, g.tensors)))
    return records


def delegate_records(prog: Program) -> list[DelegateRecord]:
    out = []
    position = 0
    for i, op in enumerate(prog.graph.ops):
        covers = len(op.debug.get("covers", ())) if op.kind == "delegate" else 1
        covers = max(covers, 1)
        if op.kind == "delegate":
            a, d = op.attrs, op.debug
            blobs = [prog.graph.tensors[n] for n in op.inputs[a["input_count"]:]]
            out.append(DelegateRecord(
                index=len(out), op_index=i, npu=a["npu"], ops=tuple(range(position, position + covers)),
                macs=a["macs"], npu_cycles=a["npu_cycles"], total_cycles=d.get("total_cycles", a["npu_cycles"]),
                sram_bytes=a["sram_bytes"], flash_bytes=a["flash_bytes"], command_stream_bytes=blobs[0].nbytes,
                weights_bytes=blobs[1].nbytes, scratch_bytes=op.scratch_bytes))
        position += covers
    return out


def delegate(prog: Program, npu: str = "ethos-u55-128", *, keep_tosa: bool = True) -> Program:
    """A copy of an all-CPU program with the ops ``npu`` can run delegated to it (no recompiling).

    ``keep_tosa=False`` leaves each subgraph's TOSA flatbuffer out of the program (smaller flash: the
    device needs only the command stream and Vela's weights), but the host can then no longer run it."""
    from ..api import Program
    from .partition import partition_graph

    if any(op.kind == "delegate" for op in prog.graph.ops):
        raise ValueError("the program is delegated already")
    graph, _ = partition_graph(prog.graph, npu, keep_tosa=keep_tosa)
    plan_arena(graph)
    meta = {**copy.deepcopy(prog.meta), "target": f"{prog.graph.target}+{npu}"}
    return Program(graph, compile_seconds=prog.compile_seconds, meta=meta, reference=prog.reference)


def graph_op_macs(prog: Program) -> list[int]:
    """MACs per op of the program file (a delegate op: Vela's count for its subgraph)."""
    from ..api import _macs

    return [op.attrs["macs"] if op.kind == "delegate" else _macs(prog.graph, op) for op in prog.graph.ops]


def npu_op_frame(prog: Program):
    """One row per op that runs on the NPU: its delegate (program op index), NPU, kind, module, MACs,
    and the subgraph's Vela estimates."""
    import pandas as pd

    ops = prog.ops
    rows = []
    for d in delegate_records(prog):
        for i in d.ops:
            op = ops[i]
            rows.append({"op": i, "delegate_op": d.op_index, "partition": d.index, "npu": d.npu, "kind": op.kind,
                         "module": op.module, "macs": op.macs, "npu_cycles": op.npu_cycles,
                         "partition_npu_cycles": d.npu_cycles,
                         "partition_sram_bytes": d.sram_bytes, "partition_flash_bytes": d.flash_bytes})
    return pd.DataFrame(rows)
