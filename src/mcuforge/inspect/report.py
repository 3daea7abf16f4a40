"""The self-contained HTML report: plots as embedded PNGs, tables, a banner for a partial trace.

Figures are built with ``matplotlib.figure.Figure`` (the Agg canvas, no pyplot state), so
writing a report never touches the caller's matplotlib backend.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..trace import Trace

BACKEND_COLORS = {"int8": "#2f6db3", "fp32": "#d9822b", "npu": "#3a9a4a"}

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; }
.banner { padding: 1em; margin: 1em 0; font-weight: bold; }
.truncated { background: #fde2e2; border: 2px solid #c0392b; color: #8b1a10; }
.intact { background: #e3f4e1; border: 1px solid #4c9a45; }
img { max-width: 100%; }
"""


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def op_time_figure(per_op: pd.DataFrame, unit: str) -> Figure:
    """Mean time per op (over runs), one horizontal bar per op, colored by backend."""
    fig = Figure(figsize=(9, max(2.5, 0.22 * len(per_op) + 1)))
    ax = fig.add_subplot()
    labels = [f"{i} {k} {m}" for i, k, m in zip(per_op.index, per_op["kind"], per_op["module"], strict=True)]
    colors = [BACKEND_COLORS.get(b, "#777") for b in per_op["backend"]]
    scale, shown = (1000.0, "µs") if unit == "ns" else (1.0, unit)  # host times read better in µs
    ax.barh(range(len(per_op)), per_op["duration"] / scale, color=colors)
    ax.set_yticks(range(len(per_op)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"time per run ({shown}); blue int8, orange fp32")
    ax.set_title("Time per op")
    return fig


def arena_figure(trace: Trace, op_labels: int, region: tuple[str, int, int] | None = None) -> Figure:
    """Arena offset (y) against op index (x): one box per activation over its lifetime. With ``region``
    ((name, start, bytes) of one RAM region of a split program, ``Graph.regions``): that region's buffers only,
    at their offsets in the region."""
    fig = Figure(figsize=(9, 4))
    ax = fig.add_subplot()
    arena = next((a.size for a in trace.allocs if a.kind == "arena"), 0)
    tensors = [a for a in trace.allocs if a.kind != "arena"]
    start = 0
    if region is not None:
        name, start, arena = region
        tensors = [a for a in tensors if start <= a.offset < start + arena]
    for i, a in enumerate(tensors):
        ax.add_patch(Rectangle((a.first_op - 0.4, a.offset - start), a.last_op - a.first_op + 0.8, max(a.size, 1),
                               facecolor=f"C{i % 10}", edgecolor="black", linewidth=0.4, alpha=0.8))
    top = max([arena] + [a.offset - start + a.size for a in tensors] + [1])
    what = "arena" if region is None else f"region {region[0]}"
    ax.axhline(arena, color="#c0392b", linestyle="--", linewidth=1, label=f"{what} {arena:,} bytes")
    ax.set_xlim(-1, max(op_labels, 1))
    ax.set_ylim(0, top * 1.05)
    ax.set_xlabel("op index")
    ax.set_ylabel(f"{what} offset (bytes)")
    ax.set_title("Arena timeline (activation placement and lifetime)" if region is None else
                 f"Region {region[0]} timeline ({len(tensors)} buffers)")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def sqnr_figure(gap: pd.DataFrame) -> Figure:
    fig = Figure(figsize=(9, 3.5))
    ax = fig.add_subplot()
    ax.plot(range(len(gap)), gap["sqnr_db"], marker="o")
    # Ops without a module of their own (a reshape between blocks) are named by index and kind.
    labels = [m or f"op {i} {k}" for i, k, m in zip(gap["op_index"], gap["kind"], gap["module"], strict=True)]
    ax.set_xticks(range(len(gap)), labels, rotation=70, fontsize=7)
    ax.set_ylabel("SQNR vs fp32 (dB)")
    ax.set_title("Numeric gap per layer")
    ax.grid(alpha=0.3)
    return fig


def isolated_figure(gap: pd.DataFrame) -> Figure:
    """Per layer: SQNR as the program runs, in isolation (the error the layer adds by itself), and its
    worst and median output channel in isolation -- a crushed layer shows as a low median channel."""
    fig = Figure(figsize=(9, 3.5))
    ax = fig.add_subplot()
    x = range(len(gap))
    ax.plot(x, gap["sqnr_db"], marker="o", color="#888", label="in the program (inherited + own)")
    ax.plot(x, gap["isolated_sqnr_db"], marker="s", color="#2f6db3", label="in isolation, whole tensor")
    ax.plot(x, gap["isolated_channel_median_sqnr_db"], marker="^", color="#d9822b",
            label="in isolation, median channel")
    ax.plot(x, gap["isolated_channel_worst_sqnr_db"], marker="v", linestyle=":", color="#c0392b",
            label="in isolation, worst channel")
    labels = [m or f"op {i} {k}" for i, k, m in zip(gap["op_index"], gap["kind"], gap["module"], strict=True)]
    ax.set_xticks(range(len(gap)), labels, rotation=70, fontsize=7)
    ax.set_ylabel("SQNR vs fp32 (dB)")
    ax.set_title("Error each layer adds by itself (isolation) and per channel")
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return fig


def _table(df: pd.DataFrame) -> str:
    return df.to_html(border=0, float_format=lambda v: f"{v:,.4g}", escape=True)


def _section(title: str, body: str) -> str:
    slug = title.lower().replace(" ", "-")
    return f'<section id="{html.escape(slug)}"><h2>{html.escape(title)}</h2>\n{body}\n</section>'


def _image(fig: Figure, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{_png(fig)}">'


def render_html(title: str, trace: Trace, df: pd.DataFrame, by_module: pd.DataFrame, by_kind: pd.DataFrame,
                gap: pd.DataFrame | None, npu: pd.DataFrame | None = None, memory: str | None = None,
                regions: tuple[tuple[str, int, int], ...] = ()) -> str:
    unit = trace.unit
    per_op = df.groupby("op_index").agg(
        kind=("kind", "first"), backend=("backend", "first"), module=("module", "first"),
        source=("source", "first"), output_shape=("output_shape", "first"), bytes=("bytes", "first"),
        duration=("duration", "mean"))
    estimate = trace.cycles
    if "est_cycles" in df.columns:  # a core's timing model costed the run: estimated cycles and ms per op
        est = df.groupby("op_index").agg(est_cycles=("est_cycles", "mean"), est_ms=("est_ms", "mean"))
        per_op = per_op.join(est.rename(columns={"est_cycles": "estimated cycles",
                                                 "est_ms": f"estimated ms at {estimate.clock_hz / 1e6:g} MHz"}))
    banner_class = "intact" if trace.intact else "truncated"
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f'<div class="banner {banner_class}" id="trace-status">{html.escape(trace.status_line)}</div>',
        f"<p>program CRC 0x{trace.program_crc:08x}; {trace.op_count} ops in the program; time unit "
        f"<b>{html.escape(unit)}</b>; {len(trace.runs)} run(s).</p>",
    ]
    if memory:  # patch-based execution: the arena before and after, the MAC overhead
        parts.append(f'<p id="patch-plan">{html.escape(memory)}</p>')
    if estimate is not None:
        parts.append(f'<p id="cycle-estimate"><b>Estimated</b> (not measured): {html.escape(estimate.summary())}. '
                     f"{html.escape(estimate.note)}.</p>")
    if len(per_op):
        parts.append(_section("Time per op", _image(op_time_figure(per_op, unit), "time per op")))
    if trace.gaps:  # where records were lost, and the runs they fall in
        from .gaps import gap_frame

        parts.append(_section("Gaps", _table(gap_frame(trace))))
    if trace.allocs and regions:  # a program split across RAM regions: one timeline per region
        parts.append(_section("Arena timeline", "".join(
            _image(arena_figure(trace, trace.op_count, r), f"arena timeline {r[0]}") for r in regions)))
    elif trace.allocs:
        parts.append(_section("Arena timeline", _image(arena_figure(trace, trace.op_count), "arena timeline")))
    if gap is not None and len(gap):
        images = _image(sqnr_figure(gap), "SQNR per layer")
        if gap["isolated_sqnr_db"].notna().any():
            images += _image(isolated_figure(gap), "error per layer in isolation")
        parts.append(_section("Numeric gap", images + _table(gap)))
    if npu is not None and len(npu):  # a partially delegated program: the ops each NPU subgraph ran
        parts.append(_section("Ops on the NPU", _table(npu)))
    parts.append(_section("Totals per module", _table(by_module)))
    parts.append(_section("Totals per kind", _table(by_kind)))
    parts.append(_section("Ops", _table(per_op.rename(columns={"duration": f"mean time ({unit})"}))))
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def write_html(path: str | Path, *args: object, **kwargs: object) -> Path:
    path = Path(path)
    path.write_text(render_html(*args, **kwargs), encoding="utf-8")
    return path
