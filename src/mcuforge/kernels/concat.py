"""int8 concatenation (CMSIS-NN ``arm_concatenation_s8_{x,y,z,w}``): pure data movement."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .quant_utils import check_int8


def concat_s8(inputs: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """Join int8 tensors along ``axis`` (negative counts from the end).

    The CMSIS functions copy bytes, so every input must already have the output's quantization (the lowering
    inserts a requantize where they differ). All inputs share the rank and every dimension except ``axis``.
    """
    arrays = [check_int8(f"inputs[{i}]", a, None) for i, a in enumerate(inputs)]
    if not arrays:
        raise ValueError("concat_s8: need at least one input")
    ndim = arrays[0].ndim
    if ndim == 0 or any(a.ndim != ndim for a in arrays):
        raise ValueError(f"concat_s8: inputs must share a rank >= 1, got shapes {[a.shape for a in arrays]}")
    if not isinstance(axis, int | np.integer) or not -ndim <= axis < ndim:
        raise ValueError(f"concat_s8: axis must be an int in [{-ndim}, {ndim - 1}], got {axis!r}")
    axis = int(axis) % ndim
    rest = [a.shape[:axis] + a.shape[axis + 1 :] for a in arrays]
    if any(r != rest[0] for r in rest):
        raise ValueError(f"concat_s8: shapes {[a.shape for a in arrays]} differ outside axis {axis}")
    return np.concatenate(arrays, axis=axis)
