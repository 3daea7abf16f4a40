"""A sweep's report: the Pareto front (quality vs estimated ms vs RAM and flash), a plot, an HTML page and
the best point per board and budget.

A point is on the front when no other finished point is at least as good in all four objectives (quality
higher, estimated ms, arena bytes and program bytes lower) and better in one. Quality is the task accuracy
when the data has labels, else the output SQNR against the fp32 model (or any numeric column named: the top-1
``agreement`` with the fp32 model, for one).
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..inspect.report import STYLE, _png

#: Lower is better for these; the quality column is higher-is-better.
COSTS = ("est_ms", "arena_bytes", "program_bytes")
PRECISION_COLORS = {"int8": "#2f6db3", "w4a8": "#3a9a4a", "a16w8": "#d9822b", "auto": "#8e44ad"}
BOARD_MARKERS = ["o", "s", "^", "D", "v", "P"]
SHOWN = ("model", "params", "precision", "flash_budget", "ram_budget", "board", "status", "accuracy", "agreement",
         "sqnr_db", "est_ms", "instructions", "arena_bytes", "program_bytes", "board_exact", "message")


def quality_column(table: pd.DataFrame, objective: str | None = None) -> str:
    """The column the report maximises: ``objective``, else accuracy when the data had labels, else SQNR."""
    if objective:
        if objective not in table.columns:
            raise ValueError(f"objective {objective!r} is not a column of the table")
        return objective
    if "accuracy" in table.columns and table["accuracy"].notna().any():
        return "accuracy"
    return "sqnr_db"


def _costs(table: pd.DataFrame) -> list[str]:
    """The cost columns measured (``est_ms`` is absent when the sweep ran no board or no cycle model)."""
    return [c for c in COSTS if c in table.columns and table[c].notna().any()]


def _ok(table: pd.DataFrame, quality: str) -> pd.DataFrame:
    if table.empty or "status" not in table.columns:
        return table.iloc[0:0]
    cols = [quality, *_costs(table)]
    ok = table[table["status"] == "ok"]
    return ok[ok[cols].notna().all(axis=1)]


def pareto_front(table: pd.DataFrame, objective: str | None = None) -> pd.DataFrame:
    """The finished points no other point dominates (see the module notes), best quality first."""
    quality = quality_column(table, objective) if not table.empty else "sqnr_db"
    ok = _ok(table, quality)
    costs = _costs(ok)
    values = np.column_stack([-ok[quality].to_numpy(float), *(ok[c].to_numpy(float) for c in costs)]) \
        if len(ok) else np.zeros((0, 1))
    keep = []
    for v in values:
        dominated = np.any(np.all(values <= v, axis=1) & np.any(values < v, axis=1))
        keep.append(not dominated)
    front = ok[np.array(keep, dtype=bool)] if len(ok) else ok
    return front.sort_values([quality, *costs], ascending=[False, *[True] * len(costs)])


def best_points(table: pd.DataFrame, objective: str | None = None) -> pd.DataFrame:
    """Per board and budget, the finished point of highest quality (ties: fewer ms, then RAM, then flash)."""
    quality = quality_column(table, objective) if not table.empty else "sqnr_db"
    ok = _ok(table, quality)
    if ok.empty:
        return ok
    costs = _costs(ok)
    ranked = ok.sort_values([quality, *costs], ascending=[False, *[True] * len(costs)])
    groups = ranked.fillna({"flash_budget": -1, "ram_budget": -1}).groupby(
        ["board", "flash_budget", "ram_budget"], sort=True)
    return ranked.loc[[g.index[0] for _k, g in groups]]


def pareto_figure(table: pd.DataFrame, front: pd.DataFrame, quality: str) -> Figure:
    """Quality against estimated ms, and against arena bytes: every finished point (color: precision,
    marker: board), the Pareto points ringed."""
    fig = Figure(figsize=(11, 4.5))
    ok = _ok(table, quality)
    boards = sorted(ok["board"].unique()) if len(ok) else []
    panels = [(x, label) for x, label in (("est_ms", "estimated ms per inference (lower is better)"),
                                          ("arena_bytes", "arena (RAM) bytes (lower is better)"))
              if x in _costs(table)]
    for i, (x, label) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        for b, board in enumerate(boards):
            for precision, color in PRECISION_COLORS.items():
                part = ok[(ok["board"] == board) & (ok["precision"] == precision)]
                if len(part):
                    ax.scatter(part[x], part[quality], c=color, marker=BOARD_MARKERS[b % len(BOARD_MARKERS)],
                               s=36, alpha=0.75, label=f"{precision} {board}")
        if len(front):
            ax.scatter(front[x], front[quality], facecolors="none", edgecolors="black", s=140, linewidths=1.2,
                       label="Pareto front")
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel(f"{quality} (higher is better)")
        ax.grid(alpha=0.3)
    if fig.axes:  # below the panels, clear of the points
        handles, labels = fig.axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=min(5, max(1, len(labels))),
                   bbox_to_anchor=(0.5, -0.12))
    fig.suptitle(f"Pareto front: {quality} vs estimated ms, RAM and flash ({len(front)} of {len(ok)} points)")
    return fig


def _html_table(df: pd.DataFrame) -> str:
    cols = [c for c in SHOWN if c in df.columns]
    return df[cols].to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4g}", escape=True)


def report(out: str | Path, objective: str | None = None, html_path: str | Path | None = None) -> dict[str, object]:
    """Read the sweep folder ``out``'s table; write ``pareto.png`` and ``report.html`` there (or at
    ``html_path``). Returns the table, the front, the best points, the quality column and the paths."""
    from .store import ResultStore

    out = Path(out)
    table = ResultStore(out).table()
    if table.empty:
        raise ValueError(f"{out}: no results yet (run the sweep first)")
    quality = quality_column(table, objective)
    front, best = pareto_front(table, quality), best_points(table, quality)
    fig = pareto_figure(table, front, quality)
    png = out / "pareto.png"
    fig.savefig(png, dpi=100, bbox_inches="tight")
    counts = table["status"].value_counts().to_dict()
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>mcuforge sweep</title><style>{STYLE}</style>"
            f"</head><body><h1>mcuforge sweep: {html.escape(str(out.name))}</h1>"
            f"<p>{len(table)} points: {html.escape(summary)}. Quality: <b>{quality}</b>. Milliseconds are "
            "estimated from QEMU instruction streams by a per-core timing model (not measured).</p>"
            f"<section id='pareto'><h2>Pareto front</h2>"
            f"<img alt='pareto' src='data:image/png;base64,{_png(fig)}'>{_html_table(front)}</section>"
            f"<section id='best'><h2>Best point per board and budget</h2>{_html_table(best)}</section>"
            f"<section id='points'><h2>Every point</h2>{_html_table(table)}</section></body></html>")
    target = Path(html_path) if html_path else out / "report.html"
    target.write_text(page)
    return {"table": table, "front": front, "best": best, "quality": quality, "png": png, "html": target}


def best_text(best: pd.DataFrame, quality: str) -> str:
    """The best points as lines for the terminal."""
    lines = []
    for _i, r in best.iterrows():
        budget = ", ".join(f"{n} <= {int(v):,} B" for n, v in (("flash", r.get("flash_budget")),
                                                                ("ram", r.get("ram_budget"))) if pd.notna(v))
        lines.append(f"{r['board']} [{budget or 'no budget'}]: {r['model'].rpartition(':')[2]} {r['params']} "
                     f"{r['precision']}: {quality} {r[quality]:.4g}, "
                     + (f"{r['est_ms']:.4g} ms (est.), " if pd.notna(r.get("est_ms")) else "")
                     + f"arena {int(r['arena_bytes']):,} B, program {int(r['program_bytes']):,} B")
    return "\n".join(lines)
