"""The vectorized requantizer: CMSIS-NN's requantization (:mod:`.requant`) applied to whole int32 tensors fast --
blocked int64 pipelines, channels-last tiling, the compiled loops of :mod:`.jit` where available -- and the byte
pair tables of binary int8 ops. Same bytes as the contract's plain functions (tests/test_kernels_quant_utils.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import jit
from .requant import INT32_MAX, INT32_MIN, SHIFT_MAX, SHIFT_MIN, requantize, wrap_int32

#: Elements per block in the elementwise int64 pipelines (keeps temporaries in cache).
BLOCK_ELEMENTS = 1 << 16
#: Shortest row the channels-last requantizer works on (parameters tiled to this width).
TILE_WIDTH = 512
#: Elements per int64 block of ``Requantizer`` (larger blocks: fewer numpy calls; smaller: cache).
REQUANT_BLOCK_ELEMENTS = 1 << 17

def requantize_output(
    acc_int32: ArrayLike,
    multiplier: ArrayLike,
    shift: ArrayLike,
    output_offset: int,
    act_min: int,
    act_max: int,
    *,
    acc_bound: int | None = None,
) -> np.ndarray:
    """The common CMSIS-NN epilogue: ``clamp(requantize(acc) + output_offset, act_min, act_max)`` -> int8.

    The offset is added in int32 (wrapping, as the C code does) before the clamp. ``multiplier``/``shift``
    are scalars or per-channel arrays along the last axis of ``acc``. Large inputs run the fused pipeline of
    ``Requantizer`` (the same results as ``requantize`` followed by the offset and the clamp); ``acc_bound``,
    a bound on ``|acc|`` the caller guarantees, lets it take its shortcuts (see ``Requantizer``).
    """
    acc = np.asarray(acc_int32)
    m = np.asarray(multiplier)
    s = np.asarray(shift)
    channels = acc.shape[-1] if acc.ndim else 1
    if (acc.size < FUSED_MIN_ELEMENTS or m.ndim > 1 or s.ndim > 1 or m.size not in (1, channels)
            or s.size not in (1, channels)):
        return _requantize_output_unfused(acc, m, s, output_offset, act_min, act_max)
    if np.any((s < SHIFT_MIN) | (s > SHIFT_MAX)):
        raise ValueError(f"requantize: shift must be in [{SHIFT_MIN}, {SHIFT_MAX}]")
    if np.any((m < INT32_MIN) | (m > INT32_MAX)):
        raise ValueError("requantize: multiplier must fit in int32")
    rows = acc.reshape(-1, channels)
    if not np.issubdtype(rows.dtype, np.integer) and acc_bound is None:
        # as wrap_int32 does: a float accumulator is truncated (with a bound, the caller's float accumulator
        # holds exact integers, which the requantizer takes as they are)
        rows = np.asarray(rows, dtype=np.int64)
    m64, s64 = m.astype(np.int64).reshape(-1), s.astype(np.int64).reshape(-1)
    bound = None if acc_bound is None else int(acc_bound)
    key = (m64.tobytes(), s64.tobytes(), int(output_offset), int(act_min), int(act_max), bound)
    req = _REQUANTIZERS.get(key)
    if req is None:
        if len(_REQUANTIZERS) >= 256:
            _REQUANTIZERS.clear()  # a program has far fewer parameter sets; this only bounds the memory
        req = _REQUANTIZERS[key] = Requantizer(m64, s64, output_offset, act_min, act_max, acc_bound=bound)
    return req(rows).reshape(acc.shape)


#: Below this many values ``requantize_output`` runs step by step: building a ``Requantizer`` costs more.
FUSED_MIN_ELEMENTS = 1 << 14
#: ``requantize_output``'s requantizers by parameter bytes (no bias, no bound: they depend on nothing else).
_REQUANTIZERS: dict[tuple, Requantizer] = {}


def _requantize_output_unfused(
    acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, output_offset: int, act_min: int, act_max: int
) -> np.ndarray:
    """``requantize_output`` step by step (parameters of any broadcastable shape)."""
    rows = acc.reshape(-1, acc.shape[-1]) if acc.ndim else acc.reshape(1, 1)
    out = np.empty(rows.shape, dtype=np.int8)
    step = max(1, BLOCK_ELEMENTS // max(1, rows.shape[1]))
    for start in range(0, rows.shape[0], step):
        block = rows[start : start + step]
        shifted = wrap_int32(requantize(block, multiplier, shift).astype(np.int64) + output_offset)
        out[start : start + step] = np.clip(shifted, act_min, act_max)
    return out.reshape(acc.shape)


#: The clip ufunc itself: ``np.clip`` adds a Python-level wrapper that costs as much as a pass on small arrays.
try:
    _clip = np._core.umath.clip
except AttributeError:  # numpy 1.x
    _clip = np.core.umath.clip


def _wrap_int32_inplace(a: np.ndarray) -> None:
    """``a = wrap_int32(a)`` for an int64 array, without temporaries."""
    np.add(a, 1 << 31, out=a)
    np.bitwise_and(a, 0xFFFFFFFF, out=a)
    np.subtract(a, 1 << 31, out=a)


class Requantizer:
    """``clamp(requantize(wrap_int32(acc + bias)) + output_offset, act_min, act_max)`` -> int8, fused.

    The same integers as ``requantize`` (CMSIS-NN double rounding) in fewer passes over int64 blocks.
    With ``x = acc + bias`` (no left shift), ``p = x * m``, ``y = (p + 2^30) >> 31`` and a right shift
    ``e >= 1``:

    - ``y + 2^(e-1) + off * 2^e == (acc * m + K) >> 31`` with ``K = bias * m + 2^30 + 2^(e+30) +
      off * 2^(e+31)``, exactly: the added terms are multiples of 2^31. One multiply, one add and one shift
      give ``u = y + 2^(e-1) + off * 2^e``;
    - ``divide_by_power_of_two`` rounds half away from zero: ``(y + 2^(e-1) - [y < 0]) >> e``, and
      ``y < 0`` iff ``u < 2^(e-1) + off * 2^e``; so ``(u - [u < c]) >> e`` is the result plus the offset.
    - The correction ``[y < 0]`` changes a result only at a tie of a negative y, and then only between two
      values <= 0 (before the offset). When the clamp's lower bound is ``act_min - off >= 0`` (a fused ReLU)
      both clamp to the same value, so it is dropped, and the two shifts merge: ``(acc * m + K) >> (31+e)``.
    - When ``|acc * m| < 2^53`` the product of a float accumulator (exact integers) and m is exact in
      float64, so converting the accumulator and multiplying is one pass.
    - When moreover ``|acc * m| + |K| < 2^53`` (``float_path``) every step runs in float64, which numpy
      does several times faster than int64 shifts: ``acc * m + K`` is then an exact float64 sum of exact
      terms, scaling by a power of two is exact, and ``floor`` is the arithmetic shift. So
      ``floor(acc * (m * 2^-(31+e)) + K * 2^-(31+e))`` is ``(acc * m + K) >> (31+e)``, bit for bit, and
      with the tie correction ``u = floor(acc * m * 2^-31 + K * 2^-31)``, ``(u - [u < c]) >> e``. That tail
      runs on int32 (|u| < 2^53 / 2^31 = 2^22: the conversion is exact), whose passes are cheaper than
      float64 ones; a threshold beyond +-2^23 compares like one at +-2^23.

    Each folding is only done where the bounds (``acc_bound``: per-channel bound on |acc|, None = any int)
    prove that no int32 wrap of the C code can occur (acc + bias, the left shift, + offset) and that the
    int64 sums stay below 2^62; otherwise that step runs as its own wrapping pass.
    Per-channel parameters run along the last axis of acc (L, C); short rows are tiled (see ``_tile``).
    """

    _ARRAYS = ("bias", "multipliers", "shifts", "consts", "left", "right", "thresholds", "total_shift",
               "float_multipliers", "float_consts", "int_thresholds", "int_right")

    def __init__(self, multipliers: ArrayLike, shifts: ArrayLike, output_offset: int, act_min: int,
                 act_max: int, *, bias: ArrayLike | None = None, acc_bound: ArrayLike | None = None) -> None:
        m = np.asarray(multipliers, dtype=np.int64).reshape(-1)
        s = np.asarray(shifts, dtype=np.int64).reshape(-1)
        b = np.zeros(1, np.int64) if bias is None else np.asarray(bias, dtype=np.int64).reshape(-1)
        channels = max(m.size, s.size, b.size)
        m, s, b = (np.broadcast_to(v, (channels,)) for v in (m, s, b))
        off = int(output_offset)
        self.act_min, self.act_max = int(act_min), int(act_max)
        self.offset = off
        # The decisions below compare float64 upper bounds, inflated by SAFE to cover their rounding: a bound
        # that errs high only keeps a (harmless) wrap pass or an unfolded step. Exact constants are int64.
        safe = 1.0 + 2.0**-30
        acc_b = np.full(channels, np.inf) if acc_bound is None else np.broadcast_to(
            np.asarray(acc_bound, dtype=np.float64), (channels,))
        m_abs = np.abs(m.astype(np.float64))
        b_abs = np.abs(b.astype(np.float64))
        x_b = (acc_b + b_abs) * safe
        self.wrap_acc = bool(np.any(x_b > INT32_MAX))  # acc + bias wraps to int32 as the C accumulator
        x_b = np.minimum(x_b, 2.0**31)
        left = np.maximum(s, 0)
        right = np.maximum(-s, 0)
        x_b = x_b * np.exp2(left)
        self.wrap_left = bool(np.any(x_b > INT32_MAX))  # the wrapping 32-bit multiply by 2^left
        x_b = np.minimum(x_b, 2.0**31)
        # x = m = INT32_MIN is the one doubling-high-mult overflow: such parameters take the plain route
        self.plain = bool(np.any(m == INT32_MIN))
        # |result| <= (|x| * |m| + 2^30) / 2^31 + 1, divided by 2^e, + 1
        r_b = ((x_b * m_abs + 2.0**30) / 2.0**31 + 1.0) / np.exp2(right) * safe + 1.0
        self.wrap_offset = bool(np.max(r_b) + max(abs(off), 128) > INT32_MAX)  # any int32 offset (s4 kinds)
        fold_bias = not (self.plain or self.wrap_acc or self.wrap_left or bool(np.any(left)))
        fold_offset = not (self.plain or self.wrap_offset)

        def fits(with_bias: bool, with_offset: bool) -> bool:
            """|acc * m + K| < 2^62 for the constants K with these foldings."""
            k = 2.0**30 + np.where(right > 0, np.exp2(right + 30.0), 0.0)
            if with_bias:
                k = k + b_abs * m_abs
            if with_offset:
                k = k + abs(off) * np.exp2(right + 31.0)
            return bool(np.all(((acc_b if with_bias else x_b) * m_abs + k) * safe < 2.0**62))

        self.fold_bias = fold_bias and fits(True, fold_offset)
        self.fold_offset = fold_offset and fits(self.fold_bias, True)
        # Exact int64 constants: every term and partial sum is below 2^62 (fits).
        one = np.int64(1)
        k = np.full(channels, 1 << 30, dtype=np.int64) + np.where(right > 0, one << (right + 30), 0)
        if self.fold_bias:
            k = k + b * m
        if self.fold_offset:
            k = k + np.int64(off) * (one << (right + 31))
        # Ties of negative y only matter above the clamp's lower bound (see the class notes).
        self.tie_correction = bool(np.any(right)) and not (self.fold_offset and self.act_min - off >= 0)
        # Convert-and-multiply in one float64 pass: exact while |acc * m| < 2^53.
        self.multiply_on_load = self.fold_bias and bool(np.all(acc_b * m_abs * safe < 2.0**53))
        sentinel = -(1 << 62)  # e == 0: u is never below it, no rounding correction
        half = np.where(right > 0, one << np.maximum(right - 1, 0), 0)
        thresholds = np.where(right > 0, half + (np.int64(off) << right if self.fold_offset else 0), sentinel)
        def column(values: np.ndarray) -> np.ndarray | int:
            values = np.asarray(values, dtype=np.int64)
            if np.all(values == values[0]):
                return int(values[0])  # a scalar operand keeps numpy's fastest loops
            return values

        def icolumn(values: np.ndarray) -> np.ndarray | np.int32:
            values = np.broadcast_to(np.asarray(values, dtype=np.int32), (channels,))
            if np.all(values == values[0]):
                return np.int32(values[0])  # an int32 scalar: the int32 loops, never a (weak) Python int
            return np.ascontiguousarray(values)

        def fcolumn(values: np.ndarray) -> np.ndarray | np.float64:
            values = np.broadcast_to(np.asarray(values, dtype=np.float64), (channels,))
            if np.all(values == values[0]):
                return np.float64(values[0])  # a float64 scalar: never a (weak) Python float
            return np.ascontiguousarray(values)

        self.channels = channels
        # The compiled loop's parameters (jit.requantize_rows): the C arithmetic itself, per channel.
        self._jit_params = tuple(np.ascontiguousarray(v, dtype=np.int64) for v in (b, m, left, right))
        self._jit_wide: dict[int, tuple[np.ndarray, ...]] = {}
        self.bias = None if self.fold_bias or bias is None else column(b)
        self.multipliers = column(m)
        self.shifts = column(s)
        self.consts = column(k)
        self.left = column(left) if np.any(left) else None
        self.right = column(right) if np.any(right) else None
        self.thresholds = column(thresholds)
        self.total_shift = column(right + 31)
        # The float64 route: exact while every integer of the folded pipeline is below 2^53 (see the notes).
        self.float_path = (self.fold_bias and self.fold_offset and not self.plain
                           and bool(np.all((acc_b * m_abs + np.abs(k.astype(np.float64))) * safe < 2.0**53)))
        self.float_multipliers = self.float_consts = self.int_thresholds = self.int_right = None
        if self.float_path:
            # Scalings by powers of two of exact integers (|m| < 2^31, |K| < 2^53): exact float64 values.
            first = -31 - (0 if self.tie_correction else right)
            self.float_multipliers = fcolumn(np.ldexp(m.astype(np.float64), first))
            self.float_consts = fcolumn(np.ldexp(k.astype(np.float64), first))
            if self.tie_correction:
                # |u| < 2^22 (see the notes): a threshold clipped to +-2^23 gives the same comparisons
                self.int_thresholds = icolumn(np.clip(thresholds, -(1 << 23), 1 << 23))
                self.int_right = icolumn(right)
        self.clip_bounds = (np.int32(self.act_min), np.int32(self.act_max))
        # Every parameter a scalar: the passes need no per-channel layout (no tiling, any shape).
        self.uniform = not any(isinstance(getattr(self, name), np.ndarray) for name in self._ARRAYS)
        self.uniform_tail = not any(isinstance(v, np.ndarray) for v in (self.int_thresholds, self.int_right))
        self.float_clip_bounds = (np.float64(self.act_min), np.float64(self.act_max))
        self._tiled: dict[int, Requantizer] = {}

    def _tile(self, times: int) -> Requantizer:
        """The same requantizer for channels-last rows of ``times * C`` values (per-channel parameters
        repeated): numpy's inner loops then run over long rows instead of C values."""
        if times not in self._tiled:
            tiled = object.__new__(Requantizer)
            tiled.__dict__.update(self.__dict__)
            for name in self._ARRAYS:
                value = getattr(self, name)
                if isinstance(value, np.ndarray):
                    setattr(tiled, name, np.tile(value, times))
            tiled.channels, tiled._tiled = self.channels * times, {}
            self._tiled[times] = tiled
        return self._tiled[times]

    def scaled_weights(self, w_rows: np.ndarray) -> np.ndarray:
        """For the float route (``float_path``) and int8 weights ``w_rows`` (C, K): the float64 (C, K + 1)
        matrix ``[w * M | K']`` of the route's per-channel factor M and constant K'. With the input rows
        extended by a 1, a matmul with it gives ``acc * M + K'`` itself, exactly: every product and every
        partial sum, in any order, is an integer multiple of the same power of two whose integer is below
        2^53 (the float route's bound on ``|acc * m| + |K|``). ``self(t, scaled=True)`` finishes it."""
        if not self.float_path:
            raise ValueError("scaled_weights: this requantizer has no exact float route")
        m = np.broadcast_to(self.float_multipliers, (self.channels,))[:, np.newaxis]
        k = np.broadcast_to(self.float_consts, (self.channels,))[:, np.newaxis]
        scaled = np.concatenate([w_rows.astype(np.float64) * m, k], axis=1)  # 8-bit w times 31-bit M: exact
        scaled.flags.writeable = False
        return scaled

    def __call__(self, acc: np.ndarray, out: np.ndarray | None = None, *, scaled: bool = False) -> np.ndarray:
        """Requantize ``acc`` ((L, C): integers, or floats holding exact integers below 2^53) into ``out``
        (int8, same shape; allocated if None). ``scaled``: ``acc`` is already ``acc * M + K'`` (float64,
        from ``scaled_weights``), and is overwritten."""
        if out is None:
            out = np.empty(acc.shape, dtype=np.int8)
        if acc.size == 0:
            return out
        if jit.ENABLED and not scaled and acc.ndim == 2:
            return self._jit(acc, out)
        if (self.uniform or (scaled and self.uniform_tail)) and self.float_path and acc.size <= REQUANT_BLOCK_ELEMENTS:
            # Per-tensor parameters (or, for a scaled accumulator, a per-tensor tail): every pass runs over
            # the whole array at once, whatever its shape.
            a = acc if scaled else np.empty(acc.shape, dtype=np.float64)
            tail = (np.empty(acc.shape, dtype=np.int32), np.empty(acc.shape, dtype=bool)) if self.tie_correction \
                else None
            self._float_pipeline(acc, a, out, tail, scaled)
            return out
        times = -(-TILE_WIDTH // acc.shape[1])
        if times > 1 and acc.shape[0] >= times and acc.flags.c_contiguous and out.flags.c_contiguous:
            whole = acc.shape[0] // times * times  # rows that make whole tiled rows; the rest below
            tiled = self if self.channels == 1 else self._tile(times)
            width = times * acc.shape[1]
            tiled(acc[:whole].reshape(-1, width), out[:whole].reshape(-1, width), scaled=scaled)
            if whole < acc.shape[0]:
                self(acc[whole:], out[whole:], scaled=scaled)
            return out
        step = max(1, REQUANT_BLOCK_ELEMENTS // max(1, acc.shape[1]))
        blocks = [slice(i, i + step) for i in range(0, acc.shape[0], step)]
        first = acc[blocks[0]].shape
        if self.float_path:
            buf = None if scaled else np.empty(first, dtype=np.float64)
            tail = (np.empty(first, dtype=np.int32), np.empty(first, dtype=bool)) if self.tie_correction else None
            for block in blocks:
                src = acc[block]
                part = slice(0, src.shape[0])
                a = src if scaled else buf[part]
                self._float_pipeline(src, a, out[block], None if tail is None else (tail[0][part], tail[1][part]),
                                     scaled)
            return out
        if scaled:
            raise ValueError("scaled accumulators need the float route")
        buf = np.empty(first, dtype=np.int64)
        neg = np.empty(first, dtype=bool) if self.tie_correction else None
        float_acc = not np.issubdtype(acc.dtype, np.integer)
        for block in blocks:
            src = acc[block]
            part = slice(0, src.shape[0])  # the last block may be smaller
            a = buf[part]
            if self.multiply_on_load and float_acc:
                # float64 product (also for a float32 acc and a scalar m), exact below 2^53
                np.multiply(src, self.multipliers, out=a, dtype=np.float64, casting="unsafe")
                self._pipeline(a, None if neg is None else neg[part], multiplied=True)
            else:
                np.copyto(a, src, casting="unsafe")  # exact: integers, or integral floats below 2^53
                self._pipeline(a, None if neg is None else neg[part], multiplied=False)
            np.clip(a, self.act_min, self.act_max, out=out[block], casting="unsafe")
        return out

    def _jit(self, acc: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``self(acc, out)`` by the compiled loop: one pass of the C arithmetic."""
        width = acc.shape[1]
        params = self._jit_params
        if self.channels != width:  # per-tensor parameters on rows of any width
            if self.channels != 1:
                raise ValueError(f"requantizer of {self.channels} channels given rows of {width}")
            params = self._jit_wide.get(width)
            if params is None:
                params = self._jit_wide[width] = tuple(np.repeat(v, width) for v in self._jit_params)
        dst = out if out.flags.c_contiguous else np.empty(out.shape, np.int8)
        jit.requantize_rows(np.ascontiguousarray(acc), *params, self.offset, self.act_min, self.act_max, dst)
        if dst is not out:
            out[...] = dst
        return out

    def _float_pipeline(self, src: np.ndarray, a: np.ndarray, out: np.ndarray,
                        tail: tuple[np.ndarray, np.ndarray] | None, scaled: bool) -> None:
        """int8 ``out`` = the clamped result of ``src`` (the accumulator: integers, or floats holding exact
        integers; or, if ``scaled``, ``a`` itself holding ``acc * M + K'``), by the float route through the
        float64 buffer ``a`` (and, with the tie correction, the int32 and bool buffers ``tail``)."""
        if not scaled:
            # The product of a float32 (or integer) accumulator is formed in float64, exactly; converting
            # first (exact: integers below 2^53) is faster than numpy's mixed-type multiply.
            if src.dtype == np.float64:
                np.multiply(src, self.float_multipliers, out=a)
            else:
                np.copyto(a, src, casting="unsafe")
                np.multiply(a, self.float_multipliers, out=a)
            np.add(a, self.float_consts, out=a)
        np.floor(a, out=a)
        if tail is None:
            _clip(a, *self.float_clip_bounds, out=a)
            np.copyto(out, a, casting="unsafe")  # integers in [act_min, act_max]
            return
        u, below = tail
        np.copyto(u, a, casting="unsafe")  # |u| < 2^22: exact
        np.less(u, self.int_thresholds, out=below)
        np.subtract(u, below, out=u)
        np.right_shift(u, self.int_right, out=u)
        _clip(u, *self.clip_bounds, out=u)
        np.copyto(out, u, casting="unsafe")  # integers in [act_min, act_max]

    def _pipeline(self, a: np.ndarray, below: np.ndarray | None, multiplied: bool) -> None:
        """In place on int64 ``a`` (the accumulator, or its product by m if ``multiplied``): everything up to
        the clamp."""
        if not multiplied:
            if self.bias is not None:
                np.add(a, self.bias, out=a)
            if self.wrap_acc:
                _wrap_int32_inplace(a)
            if self.plain:
                a[...] = wrap_int32(requantize(a, self.multipliers, self.shifts).astype(np.int64) + self.offset)
                return
            if self.left is not None:
                np.left_shift(a, self.left, out=a)
                if self.wrap_left:
                    _wrap_int32_inplace(a)
            np.multiply(a, self.multipliers, out=a)
        np.add(a, self.consts, out=a)
        if self.tie_correction:
            np.right_shift(a, 31, out=a)
            np.less(a, self.thresholds, out=below)
            np.subtract(a, below, out=a)
            np.right_shift(a, self.right, out=a)
        else:
            np.right_shift(a, self.total_shift, out=a)  # floor(floor(q / 2^31) / 2^e) = floor(q / 2^(31+e))
        if not self.fold_offset:
            np.add(a, self.offset, out=a)
            if self.wrap_offset:
                _wrap_int32_inplace(a)


def byte_pair_table(direct: Any, params: tuple[int, ...]) -> np.ndarray:
    """int8 (2, 256, 256) tables of a binary int8 op whose result depends only on the byte pair (a, b):
    ``[0, ua, ub]`` (and ``[1, ub, ua]``) is ``direct`` (the op's elementwise pipeline over flat int8 arrays,
    then ``params``) applied to the int8 values with bytes ua and ub. Read-only: callers cache it per
    parameter set and read it with ``byte_pair_lookup``."""
    values = np.arange(256, dtype=np.uint8).view(np.int8)
    pairs = direct(np.repeat(values, 256), np.tile(values, 256), *params).reshape(256, 256)
    table = np.stack([pairs, pairs.T])
    table.flags.writeable = False
    return table


def byte_pair_lookup(table: np.ndarray, a: np.ndarray, b: np.ndarray,
                     maps: dict[tuple[int, int], ByteMap] | None = None) -> np.ndarray:
    """The entries of a ``byte_pair_table`` for the pairs of ``a`` and ``b``, broadcasting like ``a op b``.
    ``maps``: where to keep the ``ByteMap`` of a scalar operand's column (the caller's, one per table)."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    for order, scalar, other in ((1, b, a), (0, a, b)):
        if scalar.size == 1:  # one operand fixed (a constant scalar): its column of the table is a 256-entry LUT
            key = (order, int(scalar.reshape(-1).view(np.uint8)[0]))
            column = table[key]
            if maps is None:
                return np.take(column, other.view(np.uint8)).reshape(shape)
            byte_map = maps.get(key)
            if byte_map is None:
                byte_map = maps[key] = ByteMap(column)
            return byte_map(other).reshape(shape)
    if jit.ENABLED and a.shape == b.shape:
        out = np.empty(shape, np.int8)
        jit.gather_pairs(table[0].reshape(-1), np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                         np.ascontiguousarray(b).reshape(-1).view(np.uint8), out.reshape(-1))
        return out
    # The smaller operand's bytes give the high byte of the index, so the larger one is read once (by the OR).
    big, small, order = (b, a, 0) if a.size <= b.size else (a, b, 1)
    index = np.bitwise_or(np.left_shift(small.view(np.uint8), 8, dtype=np.uint16), big.view(np.uint8),
                          dtype=np.uint16)
    return np.take(table[order].reshape(-1), index)


#: From this many values a ``ByteMap`` gathers two bytes at a time (its pair table costs 65536 entries once).
PAIR_MIN_ELEMENTS = 4096


class ByteMap:
    """An int8 -> int8 map given by its 256 entries indexed by the input byte (``by_byte[u]`` is the image of
    the int8 value whose byte is u), applied by gathering. On larger inputs it gathers two bytes at a time:
    the uint16 table of all 65536 byte pairs (built on first use) maps a pair's uint16 to the uint16 of its
    two images, so an input seen as uint16 takes half as many gathers. The table's low byte comes from the
    index's low byte and its high byte from the high byte, so it holds whatever the byte order."""

    def __init__(self, by_byte: np.ndarray) -> None:
        if by_byte.shape != (256,):
            raise ValueError(f"ByteMap: need 256 entries, got shape {by_byte.shape}")
        self.by_byte = np.ascontiguousarray(by_byte).view(np.int8)
        self._pairs: np.ndarray | None = None

    def pairs(self) -> np.ndarray:
        """The uint16 (65536,) table of byte pairs."""
        if self._pairs is None:
            images = self.by_byte.view(np.uint8).astype(np.uint16)
            index = np.arange(1 << 16)
            pairs = images[index & 0xFF] | (images[index >> 8] << 8)
            pairs.flags.writeable = False
            self._pairs = pairs
        return self._pairs

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The image of int8 ``x`` (any shape): a new int8 array of its shape."""
        if jit.ENABLED:
            out = np.empty(x.shape, np.int8)
            jit.gather(self.by_byte, np.ascontiguousarray(x).reshape(-1).view(np.uint8), out.reshape(-1))
            return out
        if x.size >= PAIR_MIN_ELEMENTS and x.size % 2 == 0 and x.flags.c_contiguous:
            return np.take(self.pairs(), x.reshape(-1).view(np.uint16)).view(np.int8).reshape(x.shape)
        return np.take(self.by_byte, x.view(np.uint8))
