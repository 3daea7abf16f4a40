"""int8 fully connected layers: CMSIS-NN ``arm_fully_connected_s8``, ``arm_fully_connected_per_channel_s8``
and ``arm_fully_connected_s4`` (int4 weights)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from . import jit
from .conv import check_float64_exact, prepare_weights, unpacked_filter, with_ones_column
from .quant_utils import (
    OUTPUT_OFFSET_RANGE,
    S4_OUTPUT_OFFSET_RANGE,
    check_int8,
    check_weighted_params,
    requantize_output,
    wrap_int32,
)


def fully_connected_s8(
    x: np.ndarray,
    w_oi: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    act_min: int = -128,
    act_max: int = 127,
    output_offset_range: tuple[int, int] = OUTPUT_OFFSET_RANGE,
    filter_offset: int = 0,
) -> np.ndarray:
    """int8 fully connected, bit-exact with CMSIS-NN ``arm_fully_connected_s8`` (per-tensor: multipliers and
    shifts of length 1) or ``arm_fully_connected_per_channel_s8`` (length O).

    ``acc[n, o] = bias[o] + sum_i (x[n, i] + input_offset) * (w[o, i] + filter_offset)`` (int32, wrapping), then
    ``requantize``, ``+ output_offset``, clamp to [act_min, act_max]. x is (N, I) or (I,) (one row; the result
    then has shape (O,)); w is (O, I); bias (O,) int32 or None; ``filter_offset`` is CMSIS-NN's
    ``fc_params->filter_offset``, the negated weight zero point, in [-127, 128]. The dot products are an exact
    float32/float64 matmul (an int64 one with a filter offset).
    """
    x = check_int8("x", x, (1, 2))
    return prepare_fully_connected_s8(w_oi, bias, input_offset=input_offset, output_offset=output_offset,
                                      multipliers=multipliers, shifts=shifts, act_min=act_min, act_max=act_max,
                                      output_offset_range=output_offset_range, filter_offset=filter_offset)(x)


def prepare_fully_connected_s8(
    w_oi: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    act_min: int = -128,
    act_max: int = 127,
    output_offset_range: tuple[int, int] = OUTPUT_OFFSET_RANGE,
    filter_offset: int = 0,
) -> Callable[[np.ndarray], np.ndarray]:
    """``fully_connected_s8`` with its parameters checked and its weights and requantizer prepared once;
    returns ``x -> fully_connected_s8(x, w_oi, bias, ...)``."""
    w = check_int8("w_oi", w_oi, 2)
    oc, depth = w.shape
    b, mult, shift = check_weighted_params(bias, oc, multipliers, shifts, act_min, act_max, input_offset, output_offset,
                                          output_offset_range)
    check_float64_exact(depth, input_offset)
    if not isinstance(filter_offset, int | np.integer) or not -127 <= filter_offset <= 128:
        raise ValueError(f"filter_offset must be an int in [-127, 128], got {filter_offset!r}")
    if filter_offset:
        return _with_filter_offset(w, b, mult, shift, int(input_offset), int(filter_offset), int(output_offset),
                                   int(act_min), int(act_max))

    # As conv2d_s8: acc = (bias + input_offset * sum(w)) + x . w, an exact float32 (or float64) matmul of the
    # int8 rows, wrapped to int32 and requantized by the cached requantizer of these parameters.
    dtype, w_mat, requant = prepare_weights(w, b, mult, shift, input_offset, output_offset, act_min, act_max)
    # (K, O) operands stored C-contiguous: BLAS multiplies small matrices faster in that layout.
    w_t = np.ascontiguousarray(w_mat.T)
    # With few inputs per output, folding the requantizer's multiply and add into a float64 matmul
    # (Requantizer.scaled_weights) saves more passes over the output than the wider matmul costs.
    # (With the compiled requantizer, jit, the plain matmul and its one pass are faster.)
    w_scaled = (np.ascontiguousarray(requant.scaled_weights(w).T)
                if requant.float_path and depth < 2 * oc and not jit.ENABLED else None)

    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.int8 or x.ndim not in (1, 2) or x.shape[-1] != depth:
            raise ValueError(f"x has {x.shape[-1] if x.ndim else 0} features but w_oi expects {depth}"
                             if x.dtype == np.int8 and x.ndim in (1, 2) else
                             f"x must be an int8 array of rank 1 or 2, got {x.dtype}{list(x.shape)}")
        rows = x.reshape(-1, depth)
        if w_scaled is not None:
            return requant(with_ones_column(rows) @ w_scaled, scaled=True).reshape(x.shape[:-1] + (oc,))
        return requant(rows.astype(dtype) @ w_t).reshape(x.shape[:-1] + (oc,))
    return run


def _with_filter_offset(w: np.ndarray, bias: np.ndarray, mult: np.ndarray, shift: np.ndarray, input_offset: int,
                        filter_offset: int, output_offset: int, act_min: int, act_max: int
                        ) -> Callable[[np.ndarray], np.ndarray]:
    """The kernel of a nonzero filter offset: ``(x + input_offset) @ (w + filter_offset).T + bias`` in int64 (exact:
    |each term| <= 256 * 255 and the depth at most 65536), wrapped to int32, then CMSIS-NN's requantization."""
    oc, depth = w.shape
    w_t = np.ascontiguousarray((w.astype(np.int64) + filter_offset).T)
    b64 = bias.astype(np.int64)

    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.int8 or x.ndim not in (1, 2) or x.shape[-1] != depth:
            raise ValueError(f"x must be int8 of rank 1 or 2 with {depth} features, got {x.dtype}{list(x.shape)}")
        rows = x.reshape(-1, depth).astype(np.int64) + input_offset
        acc = wrap_int32(rows @ w_t + b64)
        return requantize_output(acc, mult, shift, output_offset, act_min, act_max).reshape(x.shape[:-1] + (oc,))
    return run


def fully_connected_per_channel_s8(
    x: np.ndarray,
    w_oi: np.ndarray,
    bias: np.ndarray | None,
    *,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    **params,
) -> np.ndarray:
    """int8 fully connected with per-output-channel requantization, bit-exact with CMSIS-NN
    ``arm_fully_connected_per_channel_s8``: ``fully_connected_s8``'s arithmetic with output o requantized by
    (multipliers[o], shifts[o]); both must have length O. ``params``: fully_connected_s8's other keywords."""
    oc = np.shape(w_oi)[0] if np.ndim(w_oi) == 2 else -1
    for name, values in (("multipliers", multipliers), ("shifts", shifts)):
        if np.ndim(values) != 1 or np.shape(values)[0] != oc:
            raise ValueError(f"fully_connected_per_channel_s8: {name} must have one value per output channel "
                             f"({oc}), got shape {np.shape(values)}")
    return fully_connected_s8(x, w_oi, bias, multipliers=multipliers, shifts=shifts, **params)


def fully_connected_s4(
    x: np.ndarray,
    w_packed: np.ndarray,
    filter_shape: tuple[int, int],
    bias: np.ndarray | None,
    layout: str = "plain",
    **params,
) -> np.ndarray:
    """int8 fully connected with int4 weights, bit-exact with CMSIS-NN ``arm_fully_connected_s4``.

    ``w_packed``: the (O, I) weights of ``filter_shape`` packed two per byte (``pack_int4``), rows one after
    the other, so with an odd I every other row starts in a high nibble. The arithmetic is
    ``fully_connected_s8``'s with those weights; multipliers and shifts of length 1 are
    ``arm_fully_connected_s4``'s per-tensor requantization, of length O per channel (CMSIS-NN has no
    per-channel s4 fully connected: that is ``arm_fully_connected_per_channel_s8``'s output stage). The output
    offset may be any int32, as arm_fully_connected_s4 takes it. ``layout="s4_halves"``: the bytes are in
    ``int4.S4_HALVES`` (a Helium program's), the arithmetic the same.
    """
    return fully_connected_s8(x, unpacked_filter("fully_connected_s4", w_packed, filter_shape, 2, layout), bias,
                              output_offset_range=S4_OUTPUT_OFFSET_RANGE, **params)
