"""int8 batched matrix multiply (CMSIS-NN ``arm_batch_matmul_s8``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .quant_utils import (
    Requantizer,
    check_activation_range,
    check_int8,
    check_offsets,
    check_requant_params,
    wrap_int32,
)


def batch_matmul_s8(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    lhs_offset: int,
    rhs_offset: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -128,
    act_max: int = 127,
    adj_x: bool = False,
    adj_y: bool = False,
) -> np.ndarray:
    """int8 batched matmul, bit-exact with CMSIS-NN ``arm_batch_matmul_s8``:

    ``acc[..., m, n] = sum_k (lhs[..., m, k] + lhs_offset) * (rhs[..., k, n] + rhs_offset)`` (int32, wrapping),
    then per-tensor ``requantize``, ``+ output_offset``, clamp to [act_min, act_max]. lhs is (..., M, K) or,
    with ``adj_x``, (..., K, M); rhs is (..., K, N) or, with ``adj_y``, (..., N, K). The batch dimensions
    broadcast by numpy rules; both operands need rank >= 2. Returns int8 (..., M, N).

    CMSIS takes rhs as (N, K) rows, i.e. already transposed (TFLite BATCH_MATMUL with adj_y); the lowering
    transposes a plain rhs for the device. Offsets are -zero_point for the inputs (rhs_offset is CMSIS's
    filter_offset). The dot products are an exact float64 matmul.
    """
    lhs = check_int8("lhs", lhs, None)
    rhs = check_int8("rhs", rhs, None)
    return prepare_batch_matmul_s8(lhs_offset=lhs_offset, rhs_offset=rhs_offset, output_offset=output_offset,
                                   output_multiplier=output_multiplier, output_shift=output_shift,
                                   act_min=act_min, act_max=act_max, adj_x=adj_x, adj_y=adj_y)(lhs, rhs)


def prepare_batch_matmul_s8(
    *,
    lhs_offset: int,
    rhs_offset: int,
    output_offset: int,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -128,
    act_max: int = 127,
    adj_x: bool = False,
    adj_y: bool = False,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``batch_matmul_s8`` with its parameters checked once; returns ``(lhs, rhs) -> batch_matmul_s8(...)``."""
    check_offsets({"lhs_offset": lhs_offset, "rhs_offset": rhs_offset}, output_offset)
    check_activation_range(act_min, act_max)
    check_requant_params(output_multiplier, output_shift, 1)
    #: The requantizer by inner dimension (its accumulator bound), built on first use.
    requantizers: dict[int, Requantizer] = {}

    def run(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        if lhs.dtype != np.int8 or rhs.dtype != np.int8:
            raise ValueError(f"batch_matmul_s8: operands must be int8, got {lhs.dtype} and {rhs.dtype}")
        if lhs.ndim < 2 or rhs.ndim < 2:
            raise ValueError(f"batch_matmul_s8: operands need rank >= 2, got {lhs.shape} and {rhs.shape}")
        a = np.swapaxes(lhs, -1, -2) if adj_x else lhs
        b = np.swapaxes(rhs, -1, -2) if adj_y else rhs
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(
                f"batch_matmul_s8: inner dimensions differ: lhs {lhs.shape} (adj_x={adj_x}), "
                f"rhs {rhs.shape} (adj_y={adj_y})"
            )
        if a.shape[:-2] != b.shape[:-2]:
            try:
                np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            except ValueError as err:
                raise ValueError(f"batch_matmul_s8: batch dims of {lhs.shape} and {rhs.shape} do not broadcast") \
                    from err
        depth = a.shape[-1]
        # Each product is at most 255 * 255 in magnitude, so every partial sum of ``depth`` of them is an exact
        # integer in float32 while depth * 255^2 < 2^24 (attention's short rows), in float64 below 2^53.
        if depth * 255 * 255 >= 1 << 53:
            raise ValueError(f"batch_matmul_s8: {depth} terms may not sum exactly in float64")
        dtype = np.float32 if depth * 255 * 255 < 1 << 24 else np.float64
        acc = np.matmul(np.add(a, dtype(lhs_offset), dtype=dtype), np.add(b, dtype(rhs_offset), dtype=dtype))
        bound = depth * 255 * 255  # |lhs + lhs_offset|, |rhs + rhs_offset| <= 255
        if bound >= 1 << 31:  # only then can the C int32 accumulator wrap
            acc, bound = wrap_int32(acc.astype(np.int64)), 1 << 31
        requant = requantizers.get(bound)
        if requant is None:
            requant = requantizers[bound] = Requantizer(output_multiplier, output_shift, output_offset, act_min,
                                                        act_max, acc_bound=bound)
        # A float accumulator holding exact integers is taken as it is (below 2^53: see above).
        return requant(acc.reshape(-1, acc.shape[-1]) if acc.ndim > 2 else acc).reshape(acc.shape)
    return run
