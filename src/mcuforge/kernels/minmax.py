"""int8 elementwise maximum and minimum (CMSIS-NN ``arm_maximum_s8`` / ``arm_minimum_s8``).

Neither requantizes: both inputs and the output share one scale and zero point, and quantization is
monotonic, so the larger (smaller) int8 code is the code of the larger (smaller) real value. CMSIS-NN
takes two ``cmsis_nn_dims`` (N, H, W, C) of which either may be 1 along any dim (broadcast); here that
is numpy broadcasting of two arrays of rank <= 4 (the runtime adds a leading run axis of its own).
"""

from __future__ import annotations

import numpy as np

from .quant_utils import check_int8_broadcast


def maximum_s8(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``out[i] = a[i] if a[i] >= b[i] else b[i]`` over the broadcast shape (CMSIS-NN's statement)."""
    a, b, shape = check_int8_broadcast("maximum_s8", a, b)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    return np.where(a >= b, a, b).astype(np.int8)


def minimum_s8(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``out[i] = a[i] if a[i] <= b[i] else b[i]`` over the broadcast shape (CMSIS-NN's statement)."""
    a, b, shape = check_int8_broadcast("minimum_s8", a, b)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    return np.where(a <= b, a, b).astype(np.int8)
