"""The result table: Parquet files under the sweep's output folder, one per finished task.

Each task's rows are written to ``results/<task key>-<n>.parquet`` (a temporary file renamed into place, so
a killed sweep leaves whole files only) as soon as the task finishes; reading the folder gives the table.
A point is done when a row with its key is there: a restarted sweep computes only the others. A point
written twice (``retry_failed``) keeps its last row.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

RESULTS = "results"


class ResultStore:
    def __init__(self, out: str | Path) -> None:
        self.folder = Path(out) / RESULTS
        self.folder.mkdir(parents=True, exist_ok=True)
        self._count = len(list(self.folder.glob("*.parquet")))

    def append(self, rows: list[dict[str, Any]]) -> Path:
        """Write one task's rows as a new Parquet file (atomically)."""
        self._count += 1
        path = self.folder / f"{rows[0]['key']}-{self._count:05d}.parquet"
        tmp = path.with_suffix(".tmp")
        pd.DataFrame(rows).to_parquet(tmp, index=False)
        os.replace(tmp, path)
        return path

    def table(self) -> pd.DataFrame:
        """Every recorded point (the last row of each key), in the order they were written."""
        files = sorted(self.folder.glob("*.parquet"), key=lambda p: (p.stat().st_mtime_ns, p.name))
        if not files:
            return pd.DataFrame()
        df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        return df.drop_duplicates("key", keep="last").reset_index(drop=True)

    def done(self, retry_failed: bool = False) -> set[str]:
        """Keys of the recorded points (without the failed ones when ``retry_failed``)."""
        df = self.table()
        if df.empty:
            return set()
        if retry_failed:
            df = df[df["status"] == "ok"]
        return set(df["key"])
