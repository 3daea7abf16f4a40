"""clamp_s8: a standalone ReLU/ReLU6/hardtanh/clamp on an int8 tensor whose output keeps the
input's quantization (activation_min/max in the int8 domain, as CMSIS-NN's fused activations)."""

from __future__ import annotations

import numpy as np


def clamp_s8(x: np.ndarray, *, act_min: int = -128, act_max: int = 127) -> np.ndarray:
    if x.dtype != np.int8:
        raise ValueError(f"clamp_s8: x must be int8, got {x.dtype}")
    if not -128 <= act_min <= act_max <= 127:
        raise ValueError(f"clamp_s8: need -128 <= act_min <= act_max <= 127, got [{act_min}, {act_max}]")
    return np.clip(x, act_min, act_max).astype(np.int8)
