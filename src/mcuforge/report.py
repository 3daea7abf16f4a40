"""Plain-text tables for the CLI: the op table of a program and its memory summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ir import WIDTH_CONVERSIONS


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned text table (numbers right-aligned)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def fmt(row: list[str], raw: Sequence[Any]) -> str:
        parts = []
        for i, cell in enumerate(row):
            numeric = raw is not None and isinstance(raw[i], (int, float))
            parts.append(cell.rjust(widths[i]) if numeric else cell.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    lines = [fmt(cells[0], None), "  ".join("-" * w for w in widths)]
    lines += [fmt(c, r) for c, r in zip(cells[1:], rows, strict=True)]
    return "\n".join(lines)


def _shapes(shapes: Sequence[Sequence[int]]) -> str:
    return " ".join("x".join(str(d) for d in s) for s in shapes)


def op_table(prog: Any) -> str:
    rows = []
    for op in prog.ops:
        integer = "int16 kernel" if op.precision.startswith("a16") else "int8 kernel"  # backend "int8": integer
        where = {"int8": integer, "fp32": "fp32 fallback"}.get(op.backend, f"NPU {op.backend}")
        rows.append([op.index, op.kind, where, op.precision, op.module or "-", _shapes(op.input_shapes),
                     _shapes(op.output_shapes), op.macs, op.reason])
    npu = any(op.backend not in ("int8", "fp32") for op in prog.ops)
    if npu:  # Vela's estimate per delegated op
        for row, op in zip(rows, prog.ops, strict=True):
            row.insert(8, f"{op.npu_cycles:,}" if op.backend not in ("int8", "fp32") else "-")
    return table(["#", "kind", "runs as", "precision", "module", "inputs", "outputs", "MACs",
                  *(["NPU cycles"] if npu else []), "why on the CPU" if npu else "why not int8"], rows)


def precision_choice_table(prog: Any) -> str | None:
    """Each weighted layer's precision and why, for a program compiled with ``precision="auto"`` (None
    otherwise): the choice as made, beside what each op runs in."""
    choice = prog.meta.get("precision_choice")
    if not choice:
        return None
    runs_in: dict[str, set[str]] = {}
    for op in prog.ops:
        if op.module and op.kind not in WIDTH_CONVERSIONS:  # a conversion at a layer's edge is not what it runs in
            runs_in.setdefault(op.module, set()).add(op.precision)
    rows = [[c["module"], c["precision"], ",".join(sorted(runs_in.get(c["module"], {"-"}))), c["reason"]]
            for c in choice]
    budgets = prog.meta.get("budgets", {})
    head = (f"precision=\"auto\": flash budget {_budget(budgets.get('flash_budget'))}, RAM budget "
            f"{_budget(budgets.get('ram_budget'))}; program {prog.program_bytes:,} B, arena {prog.arena_bytes:,} B")
    return head + "\n" + table(["layer", "precision", "ops run in", "why"], rows)


def _budget(value: Any) -> str:
    return "none" if value is None else f"{int(value):,} B"


def _arena_bound(graph: Any) -> str:
    """The arena against the lower bounds no plan can beat (mcuforge.plan.arena_lower_bound)."""
    from .plan import arena_lower_bound

    tensors, exact = arena_lower_bound(graph, scratch=False), arena_lower_bound(graph)
    ratio = f"arena {graph.arena_bytes / tensors:.3f}x" if tensors else "no tensors"
    return f"{tensors:,} bytes of tensors live at one op ({ratio}); {exact:,} with that op's scratch"


def _region_lines(prog: Any) -> list[str]:
    """One line per RAM region of a program split across a board's regions (none for one arena)."""
    def constants(r: Any) -> str:
        n = sum(b[2] for b in r.buffers if b[0] == "constants")
        return f"; {n:,} of them the constants copied from flash at mf_init" if n else ""

    return [f"  region {r.name:<8} {r.bytes:,} bytes at arena offset {r.start:,} ({len(r.buffers)} buffers"
            f"{constants(r)})"
            for r in prog.memory_plan] if prog.graph.regions or prog.graph.constants_at >= 0 else []


def memory_summary(prog: Any) -> str:
    n_int8 = sum(op.backend == "int8" for op in prog.ops)
    n_npu = sum(op.backend not in ("int8", "fp32") for op in prog.ops)
    precisions: dict[str, int] = {}
    for op in prog.ops:
        precisions[op.precision] = precisions.get(op.precision, 0) + 1
    return "\n".join([
        f"target          {prog.meta.get('target', prog.target) if n_npu else prog.target}",
        f"ops             {len(prog.ops)} ({n_int8} int8, {len(prog.ops) - n_int8 - n_npu} fp32"
        + (f", {n_npu} on the NPU)" if n_npu else ")"),
        "precisions      " + ", ".join(f"{n} {p}" for p, n in sorted(precisions.items())),
        f"arena (RAM)     {prog.arena_bytes:,} bytes (activations and op scratch)",
        *_region_lines(prog),
        f"lower bound     {_arena_bound(prog.graph)}",
        f"constants       {prog.constant_bytes:,} bytes",
        f"program file    {prog.program_bytes:,} bytes (flash)",
        f"MACs            {sum(op.macs for op in prog.ops):,}",
        *([f"patches         {_patches(prog)}"] if prog.meta.get("patch_plan") else []),
    ])


def _patches(prog: Any) -> str:
    """The patch plan's line (mcuforge.patches.PatchPlan.summary), without its leading "patches: "."""
    return prog.patch_plan.summary().removeprefix("patches: ")
