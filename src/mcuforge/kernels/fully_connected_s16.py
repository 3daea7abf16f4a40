"""int16-activation matrix products: CMSIS-NN ``arm_fully_connected_s16`` (int8 weights, int64 bias) and
``arm_batch_matmul_s16`` (two int16 operands). Exact int64 accumulators, ``requantize_s64`` output stage."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .conv_s16 import check_weighted_s16, output_stage_s16
from .quant_s16 import check_activation_range_s16, check_int16, check_requant_s64
from .quant_utils import check_int8

#: Largest batch-matmul depth: products of two int16 are at most 2^30, partial sums exact in float64 and
#: the accumulator within arm_nn_requantize_s64's 2^47 input range.
BMM_S16_MAX_DEPTH = 1 << 17


def fully_connected_s16(
    x: np.ndarray,
    w_oi: np.ndarray,
    bias: np.ndarray | None,
    *,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    act_min: int = -32768,
    act_max: int = 32767,
) -> np.ndarray:
    """int16 x int8 fully connected, bit-exact with CMSIS-NN ``arm_fully_connected_s16``.

    ``acc[n, o] = bias[o] + sum_i x[n, i] * w[o, i]`` (exact, int64), ``requantize_s64(acc,
    REDUCE_MULTIPLIER(multiplier), shift)``, clamp. CMSIS-NN's kernel is per tensor (multipliers and shifts of
    length 1); length-O ones requantize each output channel with its own pair, the same arithmetic per
    channel (the per-channel form of ``arm_convolve_s16``'s output stage). x (N, I) or (I,) int16, w (O, I)
    int8, bias (O,) int64 or None. Returns int16 (N, O) (or (O,)).
    """
    x = check_int16("x", x, (1, 2))
    return prepare_fully_connected_s16(w_oi, bias, multipliers=multipliers, shifts=shifts, act_min=act_min,
                                       act_max=act_max)(x)


def prepare_fully_connected_s16(
    w_oi: np.ndarray,
    bias: np.ndarray | None,
    *,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    act_min: int = -32768,
    act_max: int = 32767,
) -> Callable[[np.ndarray], np.ndarray]:
    """``fully_connected_s16`` with its parameters checked and its weights converted once."""
    w = check_int8("w_oi", w_oi, 2)
    oc, depth = w.shape
    b, reduced, shift = check_weighted_s16(bias, oc, multipliers, shifts, act_min, act_max, depth)
    w_t = w.T.astype(np.float64)  # products < 2^22, depth <= 2^24: exact float64 sums

    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.int16 or x.ndim not in (1, 2) or x.shape[-1] != depth:
            raise ValueError(f"fully_connected_s16: x must be int16 (N, {depth}) or ({depth},), "
                             f"got {x.dtype}{list(x.shape)}")
        acc = x.reshape(-1, depth).astype(np.float64) @ w_t
        return output_stage_s16(acc, b, reduced, shift, act_min, act_max).reshape(x.shape[:-1] + (oc,))
    return run


def batch_matmul_s16(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -32768,
    act_max: int = 32767,
    adj_x: bool = False,
    adj_y: bool = False,
) -> np.ndarray:
    """int16 batched matmul, bit-exact with CMSIS-NN ``arm_batch_matmul_s16``:

    ``acc[..., m, n] = sum_k lhs[..., m, k] * rhs[..., k, n]`` (exact, int64; no offsets: both operands are
    symmetric), per-tensor ``requantize_s64(acc, REDUCE_MULTIPLIER(output_multiplier), output_shift)``,
    clamp. lhs (..., M, K) or with ``adj_x`` (..., K, M); rhs (..., K, N) or with ``adj_y`` (..., N, K), CMSIS's
    own order. Batch dimensions broadcast by numpy rules. Returns int16 (..., M, N).
    """
    return prepare_batch_matmul_s16(output_multiplier=output_multiplier, output_shift=output_shift,
                                    act_min=act_min, act_max=act_max, adj_x=adj_x, adj_y=adj_y)(lhs, rhs)


def prepare_batch_matmul_s16(
    *,
    output_multiplier: int,
    output_shift: int,
    act_min: int = -32768,
    act_max: int = 32767,
    adj_x: bool = False,
    adj_y: bool = False,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``batch_matmul_s16`` with its parameters checked once; returns ``(lhs, rhs) -> batch_matmul_s16(...)``."""
    check_activation_range_s16(act_min, act_max)
    reduced, shift = check_requant_s64(output_multiplier, output_shift, 1)

    def run(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        check_int16("lhs", lhs, None)
        check_int16("rhs", rhs, None)
        if lhs.ndim < 2 or rhs.ndim < 2:
            raise ValueError(f"batch_matmul_s16: operands need rank >= 2, got {lhs.shape} and {rhs.shape}")
        a = np.swapaxes(lhs, -1, -2) if adj_x else lhs
        b = np.swapaxes(rhs, -1, -2) if adj_y else rhs
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(f"batch_matmul_s16: inner dimensions differ: lhs {lhs.shape} (adj_x={adj_x}), "
                             f"rhs {rhs.shape} (adj_y={adj_y})")
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError as err:
            raise ValueError(f"batch_matmul_s16: batch dims of {lhs.shape} and {rhs.shape} do not broadcast") from err
        if a.shape[-1] > BMM_S16_MAX_DEPTH:
            raise ValueError(f"batch_matmul_s16: depth {a.shape[-1]} exceeds {BMM_S16_MAX_DEPTH}")
        acc = np.matmul(a.astype(np.float64), b.astype(np.float64))  # exact: |sum| < 2^47
        zero = np.zeros(1, dtype=np.int64)
        return output_stage_s16(acc, zero, reduced, shift, act_min, act_max)
    return run
