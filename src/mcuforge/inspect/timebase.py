"""Trace times in milliseconds: exact for a host trace (ns), at a given clock for a cycle count.

An instruction count (QEMU) is not a time, whatever the clock: it converts to nothing.
"""

from __future__ import annotations

import pandas as pd


def ms_per_count(unit: str, clock_hz: float | None) -> float | None:
    """Milliseconds per count of ``unit``; None when the trace's counts are not time (instructions,
    or cycles without a clock)."""
    if clock_hz is not None and clock_hz <= 0:
        raise ValueError(f"the clock must be positive, not {clock_hz} Hz")
    if unit == "ns":
        return 1e-6
    if unit == "cycles":
        return None if clock_hz is None else 1e3 / clock_hz
    if clock_hz is not None:
        raise ValueError(f"the trace counts {unit}, not cycles: a clock converts the cycles of a DWT or SysTick "
                         f"trace to time")
    return None


def add_milliseconds(df: pd.DataFrame, unit: str, clock_hz: float | None) -> pd.DataFrame:
    """The op table with ``ms`` (each op's time in milliseconds) when its unit converts."""
    scale = ms_per_count(unit, clock_hz)
    if scale is None:
        return df
    out = df.assign(ms=df["duration"] * scale)
    out.attrs.update(df.attrs, clock_hz=clock_hz)
    return out
