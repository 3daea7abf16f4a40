"""Design-space sweeps: model variants x precisions x budgets x boards, measured (docs/sweeps.md).

    table = mcuforge.sweep("examples/sweep_dscnn.yaml", out="sweep-out")              # = mcuforge.sweep.run
    table = mcuforge.sweep.run("examples/sweep_dscnn.yaml", out="sweep-out")          # local processes
    table = mcuforge.sweep.run("examples/sweep_dscnn.yaml", out="sweep-out", ray="local")  # a Ray cluster
    mcuforge.sweep.report("sweep-out")                                                  # Pareto plot + HTML
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from . import report as report_module
from .point import VOLATILE_COLUMNS, run_task
from .report import best_points, pareto_front, report
from .spec import SpecError, Sweep, Task, load, parse
from .store import ResultStore

__all__ = ["VOLATILE_COLUMNS", "ResultStore", "SpecError", "Sweep", "Task", "best_points", "load", "pareto_front",
           "parse", "report", "report_module", "run", "run_task"]


def _spec(spec: str | Path | dict[str, Any] | Sweep) -> Sweep:
    if isinstance(spec, Sweep):
        return spec
    return parse(spec) if isinstance(spec, dict) else load(spec)


def run(spec: str | Path | dict[str, Any] | Sweep, out: str | Path, *, ray: str | None = None,
        workers: int | None = None, progress: bool = True, retry_failed: bool = False) -> pd.DataFrame:
    """Run a sweep: every point not already in ``out``'s table is computed and appended as its task finishes.

    ``spec``: a YAML file, its mapping, or a :class:`Sweep`. ``ray``: a Ray address ("local" starts a local
    cluster; None runs on local processes); ``workers``: processes (or the local Ray cluster's CPUs), by
    default one per core. ``retry_failed``: compute failed points again. Returns this sweep's rows (done
    before and now), one per point, in the description's order."""
    sweep = _spec(spec)
    store = ResultStore(out)
    (Path(out) / "sweep.json").write_text(json.dumps(sweep.__dict__, indent=1, default=str))
    tasks = sweep.tasks()
    done = store.done(retry_failed)
    todo = [t for t in tasks if not set(t.keys) <= done]
    if todo:
        from .execute import run_local, run_ray

        results = run_ray(todo, ray, workers) if ray else run_local(todo, workers)
        with tqdm(total=sum(len(t.boards) for t in todo), desc="sweep", unit="point", disable=not progress) as bar:
            for task, rows in results:
                store.append(rows)
                bar.update(len(rows))
                bar.set_postfix_str(task.label, refresh=False)
    table = store.table()
    order = {key: i for i, key in enumerate(k for t in tasks for k in t.keys)}
    table = table[table["key"].isin(order)]
    return table.sort_values("key", key=lambda s: s.map(order)).reset_index(drop=True)


class _CallableModule(types.ModuleType):
    """``mcuforge.sweep(...)`` is ``mcuforge.sweep.run(...)``: the package is the entry point."""

    def __call__(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return run(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
