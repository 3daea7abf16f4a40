"""int8 constant padding (CMSIS-NN ``arm_pad_s8``, generalised from 4-D NHWC to any rank)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .quant_utils import check_int8


def pad_s8(x: np.ndarray, pads: Sequence[tuple[int, int]], *, pad_value: int) -> np.ndarray:
    """Pad ``x`` with ``pad_value``: ``pads[d] = (before, after)`` elements on each side of dimension d.

    ``arm_pad_s8`` takes a 4-D NHWC tensor with pre/post pads per dimension and writes ``pad_value`` (the
    quantized zero, i.e. the zero point, for a zero pad) everywhere outside the copied input. Pads must be
    non-negative (a negative pad, i.e. a crop, is a slice, not a pad).
    """
    x = check_int8("x", x, None)
    pads = [tuple(p) for p in pads]
    if len(pads) != x.ndim:
        raise ValueError(f"pad_s8: need one (before, after) pair per dimension ({x.ndim}), got {len(pads)}")
    for pair in pads:
        if len(pair) != 2 or not all(isinstance(v, int | np.integer) and v >= 0 for v in pair):
            raise ValueError(f"pad_s8: pads must be pairs of ints >= 0, got {pads!r}")
    if not isinstance(pad_value, int | np.integer) or not -128 <= pad_value <= 127:
        raise ValueError(f"pad_s8: pad_value must be an int in [-128, 127], got {pad_value!r}")
    return np.pad(x, pads, mode="constant", constant_values=np.int8(pad_value))
