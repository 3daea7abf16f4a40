"""Partial delegation: group the ops an Ethos-U can run into subgraphs, compile each with Vela, and
replace each by one ``delegate`` op whose constants are Vela's command stream and weights.

Grouping: ``graph.ops`` is in topological order; a delegated subgraph is a maximal run of
consecutive supported ops in that order. A run of consecutive ops can never form a cycle with the
rest of the graph (every path between two of its ops passes only through ops between them, all in
the run), so the partitioned graph is acyclic by construction. Every op left on the CPU gets a
reason (``op.debug["cpu_reason"]``): no TOSA lowering, an NPU constraint, Vela's own refusal, or a
run that holds no compute (a lone data-movement op is cheaper on the CPU than a round trip).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir import Graph, Op, Tensor, op_precision
from ..kinds import kinds_where
from ..records import op_macs
from ..tosa import boundary, lower_ops, unsupported_reason
from .npu import get_npu, npu_reason
from .vela import VelaError, VelaResult, compile_tosa

#: Op kinds that do arithmetic; a delegated run must hold at least one.
COMPUTE_KINDS = set(kinds_where(npu_compute=True))


@dataclass
class Subgraph:
    ops: list[int]
    inputs: list[str]
    outputs: list[str]
    tosa: bytes
    vela: VelaResult
    owners: dict[str, int] = field(default_factory=dict)  # TOSA tensor -> IR op index
    covers: list[dict[str, Any]] = field(default_factory=list)


def _runs(n_ops: int, reasons: dict[int, str]) -> list[list[int]]:
    runs: list[list[int]] = []
    current: list[int] = []
    for i in range(n_ops):
        if i in reasons:
            if current:
                runs.append(current)
            current = []
        else:
            current.append(i)
    if current:
        runs.append(current)
    return runs


def _compile_run(graph: Graph, run: list[int], npu):
    tosa = lower_ops(graph, run)
    return tosa, compile_tosa(tosa.flatbuffer, npu)


def plan_partitions(graph: Graph, npu_name: str) -> tuple[list[Subgraph], dict[int, str]]:
    """The delegated subgraphs (compiled) and the reason for every op left on the CPU."""
    npu = get_npu(npu_name)
    reasons: dict[int, str] = {}
    for i, op in enumerate(graph.ops):
        why = unsupported_reason(graph, op) or npu_reason(npu, graph, op)
        if why:
            reasons[i] = why if op.backend == "int8" or not op.reason else f"{why} ({op.reason})"
    while True:
        subgraphs: list[Subgraph] = []
        retry = False
        for run in _runs(len(graph.ops), reasons):
            if not any(graph.ops[i].kind in COMPUTE_KINDS for i in run):
                for i in run:
                    reasons[i] = ("a run of data movement only (no compute to offload): cheaper on the CPU than an "
                                  "NPU round trip")
                continue
            try:
                tosa, result = _compile_run(graph, run, npu)
            except VelaError as exc:
                # Find the op(s) Vela refuses on their own; the rest is partitioned again.
                culprits = []
                for i in run:
                    try:
                        _compile_run(graph, [i], npu)
                    except VelaError as single:
                        culprits.append(i)
                        reasons[i] = f"Vela ({npu.name}): {single}"
                if not culprits:  # only the combination fails: keep the whole run on the CPU
                    for i in run:
                        reasons[i] = f"Vela ({npu.name}) rejected the subgraph: {exc}"
                retry = True
                break
            inputs, outputs = boundary(graph, run)
            subgraphs.append(Subgraph(run, inputs, outputs, tosa.flatbuffer, result, tosa.owners))
        if not retry:
            return subgraphs, reasons


def _op_record(graph: Graph, index: int, op: Op) -> dict[str, Any]:
    t = graph.tensors
    return {
        "index": index, "kind": op.kind, "module": op.debug.get("module", ""), "aten": list(op.debug.get("aten", [])),
        "input_shapes": [list(t[n].shape) for n in op.inputs if n and not t[n].is_constant],
        "output_shapes": [list(t[n].shape) for n in op.outputs], "macs": int(op_macs(graph, op)),
        "precision": op_precision(op, t),
    }


def _blob(name: str, data: bytes) -> Tensor:
    return Tensor(name, (len(data),), "int8", data=np.frombuffer(data, np.int8).copy())


def partition_graph(graph: Graph, npu_name: str, *, keep_tosa: bool = True) -> tuple[Graph, list[Subgraph]]:
    """A copy of ``graph`` with each delegated subgraph replaced by one ``delegate`` op (before
    planning: activations get their offsets from ``plan_arena`` afterwards)."""
    subgraphs, reasons = plan_partitions(graph, npu_name)
    first = {sg.ops[0]: k for k, sg in enumerate(subgraphs)}
    covered = {i for sg in subgraphs for i in sg.ops}
    ops: list[Op] = []
    tensors: dict[str, Tensor] = {}
    for i, op in enumerate(graph.ops):
        if i in first:
            k = first[i]
            sg = subgraphs[k]
            sg.covers = [_op_record(graph, j, graph.ops[j]) for j in sg.ops]
            per_op: dict[int, list[int]] = {}
            for name, (npu_cycles, op_cycles, _macs) in sg.vela.layers.items():
                owner = sg.owners.get(name, sg.owners.get(name.rsplit("_", 1)[0]))  # Vela's "<tensor>_int32"...
                if owner is not None:
                    acc = per_op.setdefault(owner, [0, 0])
                    acc[0] += npu_cycles
                    acc[1] += op_cycles
            for c in sg.covers:  # Vela's per-layer estimate of the TOSA ops lowered from this op
                c["npu_cycles"], c["op_cycles"] = per_op.get(c["index"], [0, 0])
            # The NPU's I/O, in Vela's order, must be the subgraph's (same count, same sizes).
            if sg.vela.input_bytes != [graph.tensors[n].nbytes for n in sg.inputs] or \
                    sg.vela.output_bytes != [graph.tensors[n].nbytes for n in sg.outputs]:
                raise VelaError(f"Vela's subgraph {k} has inputs of {sg.vela.input_bytes} and outputs of "
                                f"{sg.vela.output_bytes} bytes, expected {[graph.tensors[n].nbytes for n in sg.inputs]}"
                                f" and {[graph.tensors[n].nbytes for n in sg.outputs]}")
            blobs = [_blob(f"npu{k}.command_stream", sg.vela.command_stream), _blob(f"npu{k}.weights", sg.vela.weights)]
            if keep_tosa:
                blobs.append(_blob(f"npu{k}.tosa", sg.tosa))
            for b in blobs:
                tensors[b.name] = b
            modules = [c["module"] for c in sg.covers if c["module"]]
            ops.append(Op(
                "delegate", [*sg.inputs, *(b.name for b in blobs)], list(sg.outputs),
                attrs={"npu": npu_name, "input_count": len(sg.inputs), "input_offsets": sg.vela.input_offsets,
                       "output_offsets": sg.vela.output_offsets, "npu_cycles": sg.vela.npu_cycles,
                       "sram_bytes": sg.vela.sram_bytes, "flash_bytes": sg.vela.flash_bytes, "macs": sg.vela.macs},
                backend="npu", scratch_bytes=sg.vela.scratch_bytes,
                debug={"module": f"{npu_name} subgraph {k}" + (f" ({modules[0]} .. {modules[-1]})" if modules else ""),
                       "covers": sg.covers, "delegate": k, "total_cycles": sg.vela.total_cycles,
                       "command_stream_bytes": len(sg.vela.command_stream), "weights_bytes": len(sg.vela.weights),
                       "aten": sorted({a for c in sg.covers for a in c["aten"]})},
            ))
        if i in covered:
            continue
        new = copy.copy(op)
        new.debug = {**op.debug, "cpu_reason": reasons.get(i, "")}
        ops.append(new)
    used = {n for op in ops for n in [*op.inputs, *op.outputs] if n} | set(graph.inputs) | set(graph.outputs)
    for name, t in graph.tensors.items():
        if name in used:
            tensors[name] = copy.copy(t)
    out = Graph(tensors=tensors, ops=ops, inputs=list(graph.inputs), outputs=list(graph.outputs), target=graph.target)
    return out, subgraphs
