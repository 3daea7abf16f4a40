"""Text summaries of a delegated program for ``mcuforge info``."""

from __future__ import annotations

from typing import Any


def npu_mac_share(prog: Any) -> tuple[float, int, int]:
    """(share, NPU MACs, all MACs) of a program's ops."""
    ops = prog.ops
    total = sum(op.macs for op in ops)
    npu = sum(op.macs for op in ops if op.backend not in ("int8", "fp32"))
    return (npu / total if total else 0.0), npu, total


def scratch_place(graph: Any, op_index: int) -> str:
    """Where a delegate op's NPU scratch sits: its RAM region (a program split across a board's regions,
    which the planner kept to the regions the NPU reaches) or the one arena, and its bytes."""
    from ..regions import region_of

    op = graph.ops[op_index]
    if not op.scratch_bytes:
        return "NPU scratch   none"
    region = region_of(graph, op.scratch_offset)
    where = "the arena (one region)" if region == "arena" else f"region {region}"
    start = next((s for n, s, _b in graph.regions if n == region), 0)
    return f"NPU scratch   {op.scratch_bytes:,} B in {where} at offset {op.scratch_offset - start:,}"


def _span(ops: tuple[int, ...]) -> str:
    return f"op {ops[0]}" if len(ops) == 1 else f"ops {ops[0]}-{ops[-1]}"


def npu_summary(prog: Any) -> str:
    """Partitions with Vela's estimates, then every CPU op with the reason it stayed on the CPU."""
    delegates = prog.delegates
    if not delegates:
        return ""
    share, npu, total = npu_mac_share(prog)
    ops = prog.ops
    n_npu = sum(len(d.ops) for d in delegates)
    lines = [
        f"NPU             {delegates[0].npu}: {len(delegates)} partition(s), {n_npu} of {len(ops)} ops, "
        f"{share:.1%} of MACs ({npu:,} of {total:,})",
        f"NPU estimates   {sum(d.npu_cycles for d in delegates):,} NPU cycles (Vela), "
        f"SRAM {max(d.sram_bytes for d in delegates):,} bytes (peak), "
        f"flash {sum(d.flash_bytes for d in delegates):,} bytes weights + "
        f"{sum(d.command_stream_bytes for d in delegates):,} bytes command streams",
    ]
    for d in delegates:
        lines.append(f"  partition {d.index}: {_span(d.ops)} ({len(d.ops)} ops) on {d.npu}: "
                     f"{d.npu_cycles:,} NPU cycles ({d.total_cycles:,} total), {d.macs:,} MACs, "
                     f"SRAM {d.sram_bytes:,} B, flash {d.flash_bytes:,} B "
                     f"+ command stream {d.command_stream_bytes:,} B")
        lines.append(f"    {scratch_place(prog.graph, d.op_index)}")
    cpu = [op for op in ops if op.backend in ("int8", "fp32")]
    lines.append(f"CPU ops         {len(cpu)}" + (":" if cpu else ""))
    for op in cpu:
        lines.append(f"  #{op.index} {op.kind} ({op.backend}{', ' + op.module if op.module else ''}): "
                     f"{op.reason or '-'}")
    return "\n".join(lines)
