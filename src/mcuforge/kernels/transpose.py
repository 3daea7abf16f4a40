"""Axis permutation (CMSIS-NN ``arm_transpose_s8``): pure data movement, any dtype."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: arm_transpose_s8 handles up to 4 dimensions (its cmsis_nn_dims is N, H, W, C).
MAX_RANK = 4


def transpose_s8(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """``out = x.transpose(perm)`` as a new C-contiguous array: ``out.shape[i] = x.shape[perm[i]]``.

    ``perm`` must be a permutation of ``range(x.ndim)`` and the rank at most 4. Any dtype (the data is only
    moved, so the same kernel serves int8, int32 and float tensors).
    """
    if not isinstance(x, np.ndarray):
        raise ValueError(f"transpose_s8: x must be a numpy array, got {type(x).__name__}")
    if not 1 <= x.ndim <= MAX_RANK:
        raise ValueError(f"transpose_s8: rank must be in [1, {MAX_RANK}], got shape {x.shape}")
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose_s8: perm {perm} is not a permutation of range({x.ndim})")
    return np.ascontiguousarray(np.transpose(x, perm))
