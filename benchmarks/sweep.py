"""The example sweep (examples/sweep_dscnn.yaml: DS-CNN width 0.5/1.0/1.5 x int8/W4A8/A16W8/auto x
cortex-m4/cortex-m55, 24 points) run locally (2 worker processes) and on a local Ray cluster (2 CPUs):
wall time of each, whether the two tables are identical (all but the timing columns), the table, the
Pareto front and the best point per board.

    python benchmarks/sweep.py            # writes results/sweep.md
    python benchmarks/sweep.py --no-ray   # the local run only (prints, does not publish)

Each run starts cold: its own empty $MCUFORGE_CACHE, so the firmware builds (one per board) and auto's
sensitivity analyses (cached on disk by default, keyed by model, data and target) are redone and counted,
and the second run cannot reuse the first's. Wall seconds depend on the machine's load (printed with
them); "point seconds" sums what each task measured for itself (its compile, evaluation and board runs),
the work done whatever the parallelism.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from mcuforge import sweep

from results_file import publish

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweep_dscnn.yaml"
SHOWN = ["param_width", "precision", "board", "status", "sqnr_db", "agreement", "est_ms", "instructions",
         "arena_bytes", "program_bytes", "op_precisions"]


def _timed(label: str, fn, cache: Path):  # noqa: ANN001, ANN202
    os.environ["MCUFORGE_CACHE"] = str(cache)  # inherited by the worker processes and the Ray cluster
    load = os.getloadavg()[0]
    start = time.perf_counter()
    table = fn()
    wall = time.perf_counter() - start
    work = table["point_s"].sum()  # each task's seconds, shared out over its rows
    return table, f"{label}: {wall:.0f} s wall for {len(table)} points ({work:.0f} point seconds; load {load:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        local, line = _timed("local, 2 processes", lambda: sweep.run(EXAMPLE, Path(tmp) / "local", workers=2,
                                                                       progress=False), Path(tmp) / "cache-local")
        lines.append(line)
        if not args.no_ray:
            import ray

            os.environ["MCUFORGE_CACHE"] = str(Path(tmp) / "cache-ray")  # before the cluster starts
            start = time.perf_counter()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            lines.append(f"ray.init(num_cpus=2): {time.perf_counter() - start:.1f} s")
            try:
                remote, line = _timed("Ray, local cluster of 2 CPUs", lambda: sweep.run(
                    EXAMPLE, Path(tmp) / "ray", ray="local", progress=False), Path(tmp) / "cache-ray")
            finally:
                ray.shutdown()
            lines.append(line)
            columns = [c for c in local.columns if c not in sweep.VOLATILE_COLUMNS]
            same = local[columns].equals(remote[columns])
            lines.append(f"identical tables (all columns but {', '.join(sweep.VOLATILE_COLUMNS)}; program sha256 "
                         f"included): {same}")
        done = sweep.report(Path(tmp) / "local")
        with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 40):
            lines += ["", local[SHOWN].to_string(index=False, float_format=lambda v: f"{v:.4g}"), "",
                      f"Pareto front ({done['quality']}): {len(done['front'])} points", "best per board and budget:",
                      sweep.report_module.best_text(done["best"], done["quality"])]
    text = "\n".join(lines)
    if args.no_ray:
        print(text)
    else:
        publish("sweep", "Design-space sweep of the example, locally and on Ray", text)


if __name__ == "__main__":
    main()
