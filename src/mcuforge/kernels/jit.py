"""Compiled loops (numba) for the host kernels' elementwise stages: one pass where numpy needs many.

Each loop states the C kernel's integer arithmetic element by element, in int64 with explicit int32 wraps
where the C code wraps (as ``quant_utils`` does with whole arrays), so it needs none of the bounds that the
numpy float routes rest on. Used where they are faster than numpy (everywhere but the matmuls); the numpy
paths stay, and run when numba is absent or ``MCUFORGE_JIT=0`` (tests run both). The recurrent layers'
loops (``lstm_layer``, ``gru_layer``) run their step recurrence whole, with one BLAS product per step
(``np.dot``, which numba runs through SciPy's BLAS; SciPy comes with scikit-learn).

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


def _wrap32(x):  # noqa: ANN001, ANN202
    """The int64 ``x`` taken modulo 2^32 as an int32 value (C's wrapping int32 arithmetic)."""
    return ((x + 2147483648) & 0xFFFFFFFF) - 2147483648


def _requantize(x, mult, left, right):  # noqa: ANN001, ANN202
    """``arm_nn_requantize`` (double rounding) of the int32 value ``x`` (an int64) with ``left`` = max(shift, 0)
    and ``right`` = max(-shift, 0), as ``quant_utils.requantize`` states it."""
    x = _wrap32(x << left)  # wrapping 32-bit multiply
    y = _wrap32((x * mult + 1073741824) >> 31)  # doubling_high_mult_no_sat: |x * m| <= 2^62, the int32 cast
    # divide_by_power_of_two: shift, +1 if the remainder exceeds the threshold
    mask = (np.int64(1) << right) - 1
    r = y >> right
    return r + ((y & mask) > ((mask >> 1) - (r >> 63)))  # r >> 63 is -1 for a negative result


def _requantize_rows(acc, bias, mult, left, right, offset, act_min, act_max, out):  # noqa: ANN001, ANN202
    """``out[i, c] = clamp(requantize(wrap32(int64(acc[i, c]) + bias[c])) + offset)`` with per-channel
    ``mult``, ``left`` (= max(shift, 0)) and ``right`` (= max(-shift, 0)): ``arm_nn_requantize`` (double
    rounding) as ``quant_utils.requantize`` states it. A float accumulator is truncated (it holds integers)."""
    rows, channels = acc.shape
    for i in range(rows):
        for c in range(channels):
            x = _wrap32(np.int64(acc[i, c]) + bias[c])  # the int32 accumulator
            r = _wrap32(_requantize(x, mult[c], left[c], right[c]) + offset)
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


def _clamp16(x):  # noqa: ANN001, ANN202
    return min(max(x, -32768), 32767)


def _term(dot, bias, rq, j):  # noqa: ANN001, ANN202
    """``requantize(wrap32(dot + bias[j]))`` with column ``j`` of ``rq`` (multiplier, left, right shift): a
    gate's input or hidden term from its float64 dot product (an exact integer)."""
    return _requantize(_wrap32(np.int64(dot) + bias[j]), rq[0, j], rq[1, j], rq[2, j])


def _lstm_layer(x_dots, h, wh, bx, bh, rq_x, rq_h, rq_cell, tables, clip, offset, out):  # noqa: ANN001, ANN202
    """``lstm_s8`` (``kernels.lstm``, whose docstring states the math) into ``out`` (N, T, H), from the input's
    dot products with the weights ``x_dots`` (N T, 4H) (exact integers in floats, ``lstm.Layer.input_dots``).
    ``h`` (N, H) zeros to hold the previous step's output, of the float type of ``wh`` (H, 4H), the recurrent
    weights (one BLAS product per step, exact); int64 effective biases; ``rq_x`` / ``rq_h`` (3, 4H) the gates'
    multiplier, left and right shift per column, ``rq_cell`` (3, 3) those of forget-to-cell, input-to-cell and
    output; ``tables`` (3, 65536) int16: sigmoid, tanh and the cell state's tanh of every int16 code
    (code + 32768), one load each. All batch rows step by step."""
    n, steps, hidden = out.shape
    gates = wh.shape[1]
    h_dots = np.zeros((n, gates), wh.dtype)
    cell = np.zeros((n, hidden), np.int64)
    pre = np.empty(gates, np.int64)  # one row's gate pre-activations
    act = np.empty(gates, np.int64)  # and activations
    tanh_cell = np.empty(hidden, np.int64)
    for t in range(steps):
        if t > 0:  # no hidden term at step 0: there is no hidden state yet
            h_dots = np.dot(h, wh)
        for b in range(n):
            row = b * steps + t
            for j in range(gates):
                pre[j] = _clamp16(_term(x_dots[row, j], bx, rq_x, j))
            if t > 0:
                for j in range(gates):
                    pre[j] = _clamp16(_wrap32(pre[j] + _term(h_dots[b, j], bh, rq_h, j)))
            # separate passes: the lookups apart, the requantizations vectorize
            for j in range(2 * hidden):
                act[j] = tables[0, pre[j] + 32768]
            for j in range(2 * hidden, 3 * hidden):
                act[j] = tables[1, pre[j] + 32768]
            for j in range(3 * hidden, gates):
                act[j] = tables[0, pre[j] + 32768]
            for j in range(hidden):
                c = _clamp16(_requantize(act[hidden + j] * cell[b, j], rq_cell[0, 0], rq_cell[0, 1], rq_cell[0, 2]))
                c = _wrap32(c + _requantize(act[j] * act[2 * hidden + j], rq_cell[1, 0], rq_cell[1, 1], rq_cell[1, 2]))
                cell[b, j] = min(max(c, -clip), clip)
            for j in range(hidden):
                tanh_cell[j] = tables[2, cell[b, j] + 32768]
            for j in range(hidden):
                y = _requantize(act[3 * hidden + j] * tanh_cell[j], rq_cell[2, 0], rq_cell[2, 1], rq_cell[2, 2])
                y = min(max(_wrap32(y + offset), -128), 127)
                out[b, t, j] = y
                h[b, j] = y


def _gru_layer(x_dots, wh, bx, bh, rq_x, rq_h, rq_out, tables, offset, out):  # noqa: ANN001, ANN202
    """``gru_s8`` (``kernels.gru``, whose docstring states the math) into ``out`` (N, T, H), from the input's
    dot products with the weights ``x_dots`` (N T, 3H) (exact integers in floats, ``lstm.Layer.input_dots``).
    ``wh`` (H, 3H) the float64 recurrent weights (one BLAS product per step, exact for the int16 state), int64
    effective biases; ``rq_x`` / ``rq_h`` (3, 3H) the gates' multiplier, left and right shift per column,
    ``rq_out`` the output's (3,); ``tables`` (2, 65536) int16: sigmoid and tanh of every int16 code
    (code + 32768), one load each. All batch rows step by step."""
    n, steps, hidden = out.shape
    two = 2 * hidden
    h = np.zeros((n, hidden))  # the Q0.15 state
    pre = np.empty(two, np.int64)  # one row's r and z pre-activations, then the candidate's
    act = np.empty(two, np.int64)  # r and z, then the candidate
    for t in range(steps):
        h_dots = np.dot(h, wh)
        for b in range(n):
            row = b * steps + t
            # separate passes: the lookups apart, the requantizations vectorize
            for j in range(two):
                xj = _clamp16(_term(x_dots[row, j], bx, rq_x, j))
                pre[j] = _clamp16(_wrap32(xj + _term(h_dots[b, j], bh, rq_h, j)))
            for j in range(two):
                act[j] = tables[0, pre[j] + 32768]
            for j in range(hidden):
                k = two + j
                xn = _clamp16(_term(x_dots[row, k], bx, rq_x, k))
                hn = _clamp16(_term(h_dots[b, k], bh, rq_h, k))
                pre[j] = _clamp16(xn + _clamp16(_requantize(act[j] * hn, 1073741824, 0, 14)))  # + q15(r hn)
            for j in range(hidden):
                act[j] = tables[1, pre[j] + 32768]  # the candidate, where r was
            for j in range(hidden):
                cand = act[j]
                v = _clamp16(cand + _requantize(act[hidden + j] * (np.int64(h[b, j]) - cand), 1073741824, 0, 14))
                h[b, j] = v
                y = _requantize(v, rq_out[0], rq_out[1], rq_out[2])
                out[b, t, j] = min(max(_wrap32(y + offset), -128), 127)


wrap32 = _Loop(_wrap32)
requantize = _Loop(_requantize, wrap32)
requantize_rows = _Loop(_requantize_rows, wrap32, requantize)
row_scales = _Loop(_row_scales)
softmax_rows = _Loop(_softmax_rows, row_scales)
quantize = _Loop(_quantize)
dequantize = _Loop(_dequantize)
gather = _Loop(_gather)
gather_pairs = _Loop(_gather_pairs)
clamp16 = _Loop(_clamp16)
term = _Loop(_term, wrap32, requantize)
lstm_layer = _Loop(_lstm_layer, wrap32, requantize, clamp16, term)
gru_layer = _Loop(_gru_layer, wrap32, requantize, clamp16, term)
