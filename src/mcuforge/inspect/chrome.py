"""Chrome trace JSON (chrome://tracing, Perfetto): one complete ("X") event per op.

Chrome traces count microseconds. A nanosecond trace converts exactly (ns / 1000). A cycle or
instruction trace has no wall time: one cycle/instruction is drawn as one nanosecond tick, so the
timeline's "µs" read as thousands of cycles/instructions; every event's args give the raw counts
and the unit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..trace import Trace

RUN_GAP_TICKS = 1000  # space between runs on the timeline


def chrome_trace(df: pd.DataFrame, trace: Trace) -> dict[str, Any]:
    unit = trace.unit
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 0, "name": "process_name", "args": {"name": f"mcuforge program 0x{trace.program_crc:08x}"}},
    ]
    offset = 0  # runs are laid out one after another, each from its own start
    for run in trace.runs:
        rows = df[df["run"] == run.index]
        length = run.duration if run.complete else int(rows["end"].max()) if len(rows) else 0
        events.append({"ph": "M", "pid": 0, "tid": run.index, "name": "thread_name",
                       "args": {"name": f"run {run.index}"}})
        events.append({"ph": "X", "pid": 0, "tid": run.index, "cat": "run", "name": f"run {run.index}",
                       "ts": offset / 1000, "dur": length / 1000,
                       "args": {"unit": unit, "duration": length, "status": run.status, "complete": run.complete}})
        estimated = "est_cycles" in df.columns  # a core's timing model costed the run (estimates)
        for row in rows.itertuples():
            args = {"module": row.module, "source": row.source, "aten": row.aten, "unit": unit,
                    "start": int(row.start), "duration": int(row.duration), "output_shape": row.output_shape}
            if estimated:
                args.update(estimated_cycles=float(row.est_cycles), estimated_ms=float(row.est_ms))
            events.append({
                "ph": "X", "pid": 0, "tid": run.index, "cat": row.backend,
                "name": f"{row.op_index} {row.kind}", "ts": (offset + row.start) / 1000, "dur": row.duration / 1000,
                "args": args,
            })
        offset += length + RUN_GAP_TICKS
    tick = "1 ns" if unit == "ns" else f"1 {unit.rstrip('s')} drawn as 1 ns"
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"unit": unit, "tick": tick, "truncated": trace.truncated, "gaps": len(trace.gaps),
                          "truncation_reason": trace.truncation_reason, "program_crc": f"0x{trace.program_crc:08x}"}}


def write_chrome_trace(df: pd.DataFrame, trace: Trace, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(chrome_trace(df, trace)))
    return path
