"""Compiled loops (numba) for the host kernels' elementwise stages: one pass where numpy needs many.

Each loop states the C kernel's integer arithmetic element by element, in int64 with explicit int32 wraps
where the C code wraps (as ``quant_utils`` does with whole arrays), so it needs none of the bounds that the
numpy float routes rest on. Used where they are faster than numpy (everywhere but the matmuls); the numpy
paths stay, and run when numba is absent or ``MCUFORGE_JIT=0`` (tests run both).

numba is imported and each loop compiled on first use (``cache=True``: compiled code is kept on disk for
later processes); ``ENABLED`` says whether the loops are used (tests switch it).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

import numpy as np

#: Whether the kernels use the compiled loops (numba importable and not switched off by MCUFORGE_JIT=0).
ENABLED = importlib.util.find_spec("numba") is not None and os.environ.get("MCUFORGE_JIT", "1") != "0"


@functools.cache
def _numba() -> Any:
    import numba

    return numba


class _Loop:
    """A loop compiled by numba on first call (no GIL held, no bounds checks: every index is in range by
    construction). ``callees``: the loops it calls, compiled first and put in place of their Python text
    (numba compiles a call only to a compiled function)."""

    def __init__(self, fn: Any, *callees: _Loop) -> None:
        self.fn, self.callees, self._compiled = fn, callees, None

    def compiled(self) -> Any:
        if self._compiled is None:
            for callee in self.callees:
                globals()[callee.fn.__name__] = callee.compiled()
            try:
                self._compiled = _numba().njit(nogil=True, cache=True, boundscheck=False)(self.fn)
            except RuntimeError:  # no writable place for numba's cache: compile in memory only
                self._compiled = _numba().njit(nogil=True, boundscheck=False)(self.fn)
        return self._compiled

    def __call__(self, *args: Any) -> Any:
        return self.compiled()(*args)


# ----------------------------------------------------------------------------------------------------------
# The loops (plain Python over numpy arrays: numba compiles them; numpy semantics if run as they are)
# ----------------------------------------------------------------------------------------------------------


def _requantize_rows(acc, bias, mult, left, right, offset, act_min, act_max, out):  # noqa: ANN001, ANN202
    """``out[i, c] = clamp(requantize(wrap32(int64(acc[i, c]) + bias[c])) + offset)`` with per-channel
    ``mult``, ``left`` (= max(shift, 0)) and ``right`` (= max(-shift, 0)): ``arm_nn_requantize`` (double
    rounding) as ``quant_utils.requantize`` states it. A float accumulator is truncated (it holds integers)."""
    rows, channels = acc.shape
    for i in range(rows):
        for c in range(channels):
            x = np.int64(acc[i, c]) + bias[c]
            x = ((x + 2147483648) & 0xFFFFFFFF) - 2147483648  # the int32 accumulator
            x = (((x << left[c]) + 2147483648) & 0xFFFFFFFF) - 2147483648  # wrapping 32-bit multiply
            # doubling_high_mult_no_sat: |x * m| <= 2^62, then the int32 cast
            y = (x * mult[c] + 1073741824) >> 31
            y = ((y + 2147483648) & 0xFFFFFFFF) - 2147483648
            # divide_by_power_of_two: shift, +1 if the remainder exceeds the threshold
            e = right[c]
            mask = (np.int64(1) << e) - 1
            r = y >> e
            r += (y & mask) > ((mask >> 1) - (r >> 63))  # r >> 63 is -1 for a negative result
            r = ((r + offset + 2147483648) & 0xFFFFFFFF) - 2147483648
            out[i, c] = min(max(r, act_min), act_max)


def _row_scales(totals, scales, exponents):  # noqa: ANN001, ANN202
    """Per row, from the sum of exps (in [2^19, 2^31)): the reciprocal ``scale`` and the divide exponent, the
    integer steps of ``softmax._row_scales`` (which says why they are those of the C text)."""
    for i in range(totals.size):
        total = totals[i]
        bits = np.int64(0)  # bit length of total
        while (total >> bits) != 0:
            bits += 1
        d = total << (31 - bits)  # the half denominator, in [2^30, 2^31)
        r = 1515870810 + ((d * -1010580540 + 1073741824) >> 31)
        for _ in range(3):
            residual = 536870912 - ((d * r + 1073741824) >> 31)
            r = r + 4 * ((r * residual + 1073741824) >> 31)
        scales[i] = min(r * 2, 2147483647)
        exponents[i] = bits + 3


def _softmax_rows(x, exp_table, sum_terms, out):  # noqa: ANN001, ANN202
    """``softmax_s8`` of the rows of ``x`` (R, S) into ``out``, for exps >= 0 (``softmax._tables``): per
    row the sum of the terms of ``diff = x - max``, the reciprocal (``_row_scales``), then
    ``min((e * scale + 2^30 + 2^(n-1) * 2^31) >> (n + 31), 255) - 128``, 0 where the exponent exceeds 31
    (see ``softmax._softmax_block``)."""
    rows, size = x.shape
    tops = np.empty(rows, np.int64)
    totals = np.empty(rows, np.int64)
    for i in range(rows):
        top = np.int64(x[i, 0])
        for j in range(1, size):
            top = max(top, np.int64(x[i, j]))
        total = np.int64(0)
        for j in range(size):
            total += sum_terms[np.int64(x[i, j]) - top + 255]
        tops[i], totals[i] = top, total
    scales = np.empty(rows, np.int64)
    exponents = np.empty(rows, np.int64)
    _row_scales(totals, scales, exponents)
    for i in range(rows):
        exponent, scale, top = exponents[i], scales[i], tops[i]
        n = min(exponent, 31)
        rounding = 1073741824 + (((np.int64(1) << n) >> 1) << 31)
        for j in range(size):
            if exponent > 31:
                p = np.int64(0)
            else:
                p = min((exp_table[np.int64(x[i, j]) - top + 255] * scale + rounding) >> (n + 31), 255)
            out[i, j] = p - 128


def _quantize(x, inv_scale, zero_point, qmin, qmax, out):  # noqa: ANN001, ANN202
    """``clamp(rint(x * inv_scale) + zero_point, qmin, qmax)`` in float32, as ``quantize_per_tensor``."""
    for i in range(x.size):
        q = np.rint(x[i] * inv_scale) + zero_point
        out[i] = min(max(q, qmin), qmax)


def _dequantize(q, zero_point, scale, out):  # noqa: ANN001, ANN202
    """``(float32(q) - zero_point) * scale`` in float32, as ``dequantize_per_tensor``."""
    for i in range(q.size):
        out[i] = (np.float32(q[i]) - zero_point) * scale


def _gather(table, index, out):  # noqa: ANN001, ANN202
    """``out[i] = table[index[i]]`` (uint8 indices)."""
    for i in range(index.size):
        out[i] = table[index[i]]


def _gather_pairs(table, high, low, out):  # noqa: ANN001, ANN202
    """``out[i] = table[high[i] * 256 + low[i]]`` (uint8 operands of one size)."""
    for i in range(high.size):
        out[i] = table[(np.int64(high[i]) << 8) | low[i]]


requantize_rows = _Loop(_requantize_rows)
row_scales = _Loop(_row_scales)
softmax_rows = _Loop(_softmax_rows, row_scales)
quantize = _Loop(_quantize)
dequantize = _Loop(_dequantize)
gather = _Loop(_gather)
gather_pairs = _Loop(_gather_pairs)
