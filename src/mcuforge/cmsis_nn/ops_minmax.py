"""maximum_s8 / minimum_s8 as CMSIS-NN calls (arm_maximum_s8 / arm_minimum_s8, c/cases_minmax.c).

Our operands (rank <= 4, numpy broadcasting) become cmsis_nn_dims with leading 1s, which is how numpy aligns
them. CMSIS-NN walks broadcast inputs with pointers; for one family of dims the walk reads past an input
(:func:`walk_overruns`: an input with one value per row, H > 1 and W = C = 1, beside an input with W > 1, where
the row shortcut advances that input's pointer twice per row). Those cases have no CMSIS-NN counterpart:
the converter refuses them with NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Op
from .harness import Case
from .ops import converts, output_tensor

I8 = np.dtype(np.int8)
Dims = tuple[int, int, int, int]


def nhwc_dims(shape: tuple[int, ...]) -> Dims:
    """A stored shape of rank <= 4 as cmsis_nn_dims (N, H, W, C): leading 1s, numpy's alignment."""
    if len(shape) > 4:
        raise NotImplementedError(f"rank {len(shape)}: cmsis_nn_dims has 4 dims")
    n, h, w, c = (1,) * (4 - len(shape)) + tuple(int(d) for d in shape)
    return n, h, w, c


def walk_overruns(d1: Dims, d2: Dims) -> bool:
    """Whether arm_maximum_s8 / arm_minimum_s8's broadcast walk reads past an input for these dims."""
    return any(x[1] > 1 and x[2] == 1 and x[3] == 1 and y[2] > 1 for x, y in ((d1, d2), (d2, d1)))


@converts("maximum_s8", "minimum_s8")
def minmax_s8(graph: Graph, op: Op, values: list, function: str = "", name: str = "") -> Case:
    """arm_maximum_s8 (maximum_s8) or arm_minimum_s8 (minimum_s8) on the two operands as they are."""
    a, b = (np.ascontiguousarray(v, I8) for v in values)
    out = output_tensor(graph, op)
    da, db, do = nhwc_dims(a.shape), nhwc_dims(b.shape), nhwc_dims(tuple(out.shape))
    if walk_overruns(da, db):
        raise NotImplementedError(f"{op.kind} of dims {da} and {db}: CMSIS-NN's broadcast walk reads past an input")
    ints = [*da, *db, *do]
    return Case(function or f"mfcmp_{op.kind}", ints, [a, b], tuple(out.shape), I8, name)
