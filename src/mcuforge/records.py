"""What ``prog.ops`` and ``prog.delegates`` show of a compiled graph: one record per op (with its MAC count,
by its kind's MAC rule) and one per NPU-delegated subgraph.

It reads the IR graph only, so the layers under the public API (the NPU partitioner, the inspector) use it
without importing ``mcuforge.api``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Graph, Op, op_precision
from .kinds import KIND


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


def op_macs(graph: Graph, op: Op) -> int:
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
    import torch
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


def op_records(graph: Graph) -> list[OpRecord]:
    """The graph's ops as records; with NPU delegation, each delegate op lists the ops it covers (``backend``
    = the NPU configuration) and CPU ops say why they stayed on the CPU (``reason``)."""
    g = graph
    if not any(op.kind == "delegate" or "cpu_reason" in op.debug for op in g.ops):  # all on the CPU
        return [
            OpRecord(
                index=i, kind=op.kind, backend=op.backend, reason=op.reason,
                input_shapes=tuple(g.tensors[n].shape for n in op.inputs if not g.tensors[n].is_constant),
                output_shapes=tuple(g.tensors[n].shape for n in op.outputs),
                module=op.debug.get("module", ""), aten=tuple(op.debug.get("aten", ())), macs=op_macs(g, op),
                precision=op_precision(op, g.tensors),
            )
            for i, op in enumerate(g.ops)
        ]
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
            macs=op.attrs["macs"] if op.kind == "delegate" else op_macs(g, op), precision=op_precision(op, g.tensors)))
    return records


def delegate_records(graph: Graph) -> list[DelegateRecord]:
    """The graph's NPU-delegated subgraphs: NPU config, Vela's estimates, the ``op_records`` indices they cover."""
    out = []
    position = 0
    for i, op in enumerate(graph.ops):
        covers = len(op.debug.get("covers", ())) if op.kind == "delegate" else 1
        covers = max(covers, 1)
        if op.kind == "delegate":
            a, d = op.attrs, op.debug
            blobs = [graph.tensors[n] for n in op.inputs[a["input_count"]:]]
            out.append(DelegateRecord(
                index=len(out), op_index=i, npu=a["npu"], ops=tuple(range(position, position + covers)),
                macs=a["macs"], npu_cycles=a["npu_cycles"], total_cycles=d.get("total_cycles", a["npu_cycles"]),
                sram_bytes=a["sram_bytes"], flash_bytes=a["flash_bytes"], command_stream_bytes=blobs[0].nbytes,
                weights_bytes=blobs[1].nbytes, scratch_bytes=op.scratch_bytes))
        position += covers
    return out


def graph_op_macs(graph: Graph) -> list[int]:
    """MACs per op of the program file (a delegate op: Vela's count for its subgraph)."""
    return [op.attrs["macs"] if op.kind == "delegate" else op_macs(graph, op) for op in graph.ops]
