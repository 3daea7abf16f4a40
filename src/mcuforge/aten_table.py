"""The C runtime's fp32 table: the aten ops its fallback kernels implement, in the order by which an aten_fp32 op's
``table_index`` dispatches (``csrc/kernels/fp32/aten_list.h``: the names sorted). Read from the C sources; a leaf
module, so the program writer and the lowering check indices without importing the C runtime's bindings."""

from __future__ import annotations

import bisect
import re
from functools import cache
from pathlib import Path

FP32_KERNELS = Path(__file__).parent / "csrc" / "kernels" / "fp32"


@cache
def c_aten_table() -> tuple[str, ...]:
    """The C runtime's fp32 table in its order (``kernels/fp32/aten_list.h``): the aten names sorted."""
    return tuple(sorted({name for src in FP32_KERNELS.glob("*.c")
                         for name in re.findall(r'"(aten\.[\w.]+)"', src.read_text())}))


def aten_table_index(name: str) -> int:
    """Position of the aten op ``name`` in the C runtime's fp32 table (an aten_fp32 op's
    ``table_index``, by which the runtime dispatches it); -1 when the table does not have it."""
    table = c_aten_table()
    i = bisect.bisect_left(table, name)
    return i if i < len(table) and table[i] == name else -1
