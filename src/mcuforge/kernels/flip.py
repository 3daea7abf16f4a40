"""flip_s8: an int8 tensor reversed along some of its dims (torch.flip), a byte copy in the input's quantization."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .registry import TensorLike, python_kernel


def flip_s8(x: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """``x`` reversed along each of ``dims`` (distinct, in [0, x.ndim))."""
    if x.dtype != np.int8:
        raise ValueError(f"flip_s8: x must be int8, got {x.dtype}")
    if len(set(dims)) != len(dims) or any(not 0 <= d < x.ndim for d in dims):
        raise ValueError(f"flip_s8: dims {list(dims)} are not distinct dims of a rank-{x.ndim} tensor")
    return np.flip(x, tuple(dims)) if dims else x


def flip_shapes(attrs: dict[str, Any], inputs: Sequence[TensorLike], outputs: Sequence[TensorLike]) -> str | None:
    """The C kernel's load-time check (csrc/kernels/flip_s8.c): int8 input and output of one shape, dims distinct
    dims of it."""
    if len(inputs) != 1 or len(outputs) != 1:
        return "flip_s8 takes one input and one output"
    x, out = inputs[0], outputs[0]
    if x.dtype != "int8" or out.dtype != "int8" or tuple(x.shape) != tuple(out.shape):
        return f"flip_s8: input {x.dtype}{list(x.shape)} and output {out.dtype}{list(out.shape)} must be int8 alike"
    dims = list(attrs["dims"])
    if len(set(dims)) != len(dims) or any(not 0 <= d < len(x.shape) for d in dims):
        return f"flip_s8: dims {dims} are not distinct dims of a rank-{len(x.shape)} tensor"
    return None


@python_kernel("flip_s8", shapes=flip_shapes)
def _flip(op: Any, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return flip_s8(ins[0], [d + 1 for d in op.attrs["dims"]])  # past the run axis
