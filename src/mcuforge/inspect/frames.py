"""Trace + debug record -> tables: one row per executed op per run, totals per module and kind."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..trace import Trace

OP_COLUMNS = [
    "run", "op_index", "debug_handle", "kind", "backend", "precision", "module", "module_type", "source", "aten",
    "start", "end", "duration", "unit", "output_shape", "output_dtype", "bytes", "macs",
]


def trace_attrs(trace: Trace) -> dict[str, Any]:
    """What every table carries about its trace (``df.attrs``): a partial trace says so."""
    return {"unit": trace.unit, "program_crc": trace.program_crc, "truncated": trace.truncated,
            "truncation_reason": trace.truncation_reason, "truncation_offset": trace.truncation_offset,
            "gaps": len(trace.gaps), "records_lost": trace.records_lost, "dropped_records": trace.dropped_records}


def op_frame(record: dict[str, Any], trace: Trace, macs: dict[int, int] | None = None) -> pd.DataFrame:
    """One row per complete op event; ``start``/``end`` count from the run's start (from its first
    op read when a gap took the RUN_START)."""
    ops = record["ops"]
    run_start = {run.index: run.start for run in trace.runs}
    for event in trace.ops:
        if run_start.get(event.run) is None:
            run_start[event.run] = event.start  # ops of a run come in order: the first one read
    rows = []
    for event in trace.ops:
        info = ops[event.op_index] if event.op_index < len(ops) else {}
        outputs = info.get("outputs", [])
        rows.append({
            "run": event.run, "op_index": event.op_index, "debug_handle": event.debug_handle,
            "kind": info.get("kind", "?"), "backend": info.get("backend", "?"),
            "precision": info.get("precision", "?"), "module": info.get("module", ""),
            "module_type": info.get("module_type", ""), "source": info.get("source", ""),
            "aten": ", ".join(info.get("aten", [])),
            "start": event.start - run_start[event.run], "end": event.end - run_start[event.run],
            "duration": event.duration, "unit": trace.unit,
            "output_shape": "; ".join("x".join(map(str, o["shape"])) for o in outputs),
            "output_dtype": "; ".join(o["dtype"] for o in outputs),
            "bytes": sum(o["nbytes"] for o in outputs),
            "macs": (macs or {}).get(event.op_index, 0),
        })
    df = pd.DataFrame(rows, columns=OP_COLUMNS)
    df.attrs.update(trace_attrs(trace))
    return add_cycle_estimate(df, trace.cycles)


def add_cycle_estimate(df: pd.DataFrame, estimate: Any) -> pd.DataFrame:
    """The op table with ``est_cycles`` and ``est_ms`` (at the estimate's clock) when the run was
    costed by a core's timing model (:mod:`mcuforge.cycles`): ESTIMATES, labelled so in ``attrs``."""
    op_cycles = getattr(estimate, "op_cycles", None)
    if op_cycles is None:
        return df
    cycles = df["op_index"].map(lambda i: op_cycles[i] if i < len(op_cycles) else float("nan"))
    out = df.assign(est_cycles=cycles, est_ms=cycles * 1e3 / estimate.clock_hz)
    out.attrs.update(df.attrs, cycle_model=estimate.core, cycle_clock_hz=estimate.clock_hz,
                     cycle_note=estimate.note)
    return out


def module_prefix(path: str, depth: int | None) -> str:
    """``features.3.conv.0`` at depth 2 -> ``features.3``; the top module is ``<top>``."""
    if not path:
        return "<top>"
    return path if depth is None else ".".join(path.split(".")[:depth])


def totals(df: pd.DataFrame, by: str = "module", depth: int | None = None) -> pd.DataFrame:
    """Time per group: ``by`` is "module" (path prefix of ``depth`` parts), "kind", "backend" or "precision".
    ``total`` sums every run, ``per_run`` is the mean per run, ``share`` the fraction of all op time."""
    if by not in ("module", "kind", "backend", "precision"):
        raise ValueError(f"totals by 'module', 'kind', 'backend' or 'precision', not {by!r}")
    key = df["module"].map(lambda p: module_prefix(p, depth)) if by == "module" else df[by]
    runs = max(df["run"].nunique(), 1)
    grouped = df.assign(group=key).groupby("group", sort=False)
    out = pd.DataFrame({
        "ops": grouped["op_index"].count() // runs,
        "first_op": grouped["op_index"].min(),
        "total": grouped["duration"].sum(),
        "per_run": grouped["duration"].sum() / runs,
        "macs": grouped["macs"].sum() // runs,
    })
    all_time = out["total"].sum()
    out["share"] = out["total"] / all_time if all_time else 0.0
    out = out.sort_values("first_op").drop(columns="first_op")
    out.index.name = by
    out.attrs.update(df.attrs)
    return out
