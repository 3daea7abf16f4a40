"""Where a trace lost records, per run: the gaps the reader reported and the runs they fall in.

A damaged or dropped stretch does not end the Inspector's tables: the ops read after it are
there, and every op row says how many gaps its run has (``run_gaps``), so a run with missing
ops is never mistaken for a complete one.
"""

from __future__ import annotations

import pandas as pd

from ..trace import Trace

GAP_COLUMNS = ["offset", "skipped", "records_lost", "exact", "device", "run", "reason"]
RUN_COLUMNS = ["run", "start", "end", "duration", "status", "complete", "gaps", "ops"]


def mark_runs(df: pd.DataFrame, trace: Trace) -> pd.DataFrame:
    """The op table with a ``run_gaps`` column: the gaps in each row's run (0: nothing lost there)."""
    gaps = {run.index: run.gaps for run in trace.runs}
    return df.assign(run_gaps=df["run"].map(gaps).fillna(0).astype(int))


def gap_frame(trace: Trace) -> pd.DataFrame:
    """One row per gap: byte offset, bytes skipped, records lost (device: dropped by its sink)."""
    rows = [{"offset": g.offset, "skipped": g.skipped, "records_lost": g.records_lost, "exact": g.exact,
             "device": g.device, "run": g.run, "reason": g.reason} for g in trace.gaps]
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


def run_frame(trace: Trace) -> pd.DataFrame:
    """One row per run: its times (None where a gap took its RUN_START or RUN_END), status, gaps, ops."""
    ops = pd.Series([e.run for e in trace.ops], dtype="int64").value_counts()
    rows = [{"run": r.index, "start": r.start, "end": r.end, "duration": r.duration, "status": r.status,
             "complete": r.complete, "gaps": r.gaps, "ops": int(ops.get(r.index, 0))} for r in trace.runs]
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def gap_lines(trace: Trace) -> list[str]:
    """A line per gap, for the CLI."""
    lines = []
    for g in trace.gaps:
        where = f"run {g.run}" if g.run is not None else "outside a run"
        if g.device:
            lines.append(f"  {where}: {g.records_lost} records dropped by the device (before byte {g.offset})")
            continue
        lost = "? records" if g.records_lost is None else f"{g.records_lost}{'' if g.exact else '+'} records"
        lines.append(f"  {where}: byte {g.offset}, {g.skipped} bytes skipped, {lost} lost: {g.reason}")
    return lines
