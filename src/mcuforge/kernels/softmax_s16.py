"""int16 softmax (CMSIS-NN ``arm_softmax_s16``) and its TFLite prepare (input scaling, the exp and
1/(1+x) tables). Output scale 1/32768, zero point 0."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .quant_s16 import (
    INT16_MAX,
    INT16_MIN,
    LUT_S16_ENTRIES,
    check_int16,
    check_requant_s32,
    gen_lut_s16,
    table_lookup_s16,
)
from .quant_utils import quantize_multiplier, requantize, wrap_int32

#: Output quantization of the s16 softmax (TFLite's int16 SOFTMAX requires it).
SOFTMAX_S16_OUTPUT_SCALE = 1.0 / 32768.0
#: Longest row: the int32 sum of up to 65536 exp values (each <= 32767) cannot overflow.
SOFTMAX_S16_MAX_ROW = 65536


def softmax_s16_params(input_scale: float, beta: float = 1.0) -> tuple[int, int]:
    """TFLite's int16 softmax prepare: the input difference is scaled so that [-65535, 0] spans [-10, 0]
    (where the exp table lives): ``QuantizeMultiplier(input_scale * beta / (10 / 65535))`` -> (multiplier,
    shift)."""
    if not np.isfinite(input_scale) or input_scale <= 0 or beta <= 0:
        raise ValueError("softmax_s16_params: the input scale and beta must be positive")
    return quantize_multiplier(float(input_scale) * float(beta) / (10.0 / 65535.0))


def softmax_s16_tables() -> tuple[np.ndarray, np.ndarray]:
    """The two int16[513] tables of ``arm_softmax_s16``: exp(x) for x in [-10, 0] and 1/(1+x) for x in
    [0, 1], both as Q0.15, by ``gen_lut<float>`` as TFLite Micro's softmax prepare builds them (CMSIS-NN's
    test data comes from it). The float32 arithmetic matters: ``gen_lut<double>`` gives two different
    entries of the 1/(1+x) table (160: 24967, 294: 20815 instead of 24966 and 20816)."""
    f32 = np.float32

    def exp(v: np.ndarray) -> np.ndarray:  # expf: exp correctly rounded to float32
        return np.exp(v.astype(np.float64)).astype(f32)

    def one_by_one_plus(v: np.ndarray) -> np.ndarray:  # 1.0f / (1.0f + v), float32 at every step
        return f32(1.0) / (f32(1.0) + v)

    return (gen_lut_s16(exp, -10.0, 0.0, dtype=f32),
            gen_lut_s16(one_by_one_plus, 0.0, 1.0, dtype=f32))


def check_softmax_s16_tables(exp_lut: object, one_by_one_lut: object) -> tuple[np.ndarray, np.ndarray]:
    """Tables the kernel can run safely with: int16[513] each; the exp entries in [0, 32767] with the
    entries for a zero difference (510, 511, 512) at least 2, so that every row's exp sum is in [2, 2^31)."""
    for name, t in (("exp_lut", exp_lut), ("one_by_one_lut", one_by_one_lut)):
        check_int16(name, t, 1)
        if t.shape != (LUT_S16_ENTRIES,):
            raise ValueError(f"softmax_s16: {name} must have {LUT_S16_ENTRIES} entries, got {t.shape}")
    if np.any(exp_lut < 0) or exp_lut[511] < 2 or exp_lut[512] < 2:
        raise ValueError("softmax_s16: exp_lut entries must be >= 0, and entries 511 and 512 >= 2")
    return exp_lut, one_by_one_lut


def softmax_s16(x: np.ndarray, *, multiplier: int, shift: int, exp_lut: np.ndarray,
                one_by_one_lut: np.ndarray) -> np.ndarray:
    """int16 softmax over the last axis, bit-exact with CMSIS-NN ``arm_softmax_s16``. Per row:

    1. ``diff = x - max(row)``; ``d = sat16(requantize(diff, multiplier, shift) + 32767)``;
       ``e = table_lookup_s16(d, exp_lut)``; ``sum = sum(e)`` (int32);
    2. ``headroom = clz(sum)``; ``s = int16(((sum << (headroom - 1)) + 2^13 >> 14) - 98304)`` (the sum
       normalised to [1, 2), less one, recentred for the table; the int16 cast wraps as in C, so a sum that
       normalises to exactly 2 reads the table's first entry);
       ``r = table_lookup_s16(s, one_by_one_lut)``;
    3. ``out = int16(((e * r) >> (30 - headroom)) + 1 >> 1)``.

    x int16 (..., row); returns int16 of the same shape (scale 1/32768).
    """
    return prepare_softmax_s16(multiplier=multiplier, shift=shift, exp_lut=exp_lut,
                               one_by_one_lut=one_by_one_lut)(x)


def prepare_softmax_s16(*, multiplier: int, shift: int, exp_lut: np.ndarray,
                        one_by_one_lut: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``softmax_s16`` with its parameters and tables checked once."""
    check_requant_s32("input", multiplier, shift)
    exp_lut, one_by_one_lut = check_softmax_s16_tables(exp_lut, one_by_one_lut)

    def run(x: np.ndarray) -> np.ndarray:
        x = check_int16("x", x, None)
        if x.ndim == 0 or not 1 <= x.shape[-1] <= SOFTMAX_S16_MAX_ROW:
            raise ValueError(f"softmax_s16: rows must have 1..{SOFTMAX_S16_MAX_ROW} elements, got shape {x.shape}")
        rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
        diff = rows - rows.max(axis=1, keepdims=True)
        scaled = wrap_int32(requantize(diff, multiplier, shift).astype(np.int64) + INT16_MAX)  # int32, as CMSIS
        e = table_lookup_s16(np.clip(scaled, INT16_MIN, INT16_MAX).astype(np.int16), exp_lut).astype(np.int64)
        total = e.sum(axis=1)  # in [2, 2^31): checked tables, row <= 65536
        headroom = 32 - np.array([int(v).bit_length() for v in total], dtype=np.int64)
        shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
        recentred = (shifted - 98304).astype(np.int16)  # C's int16_t conversion: wraps
        r = table_lookup_s16(recentred, one_by_one_lut).astype(np.int64)
        out = ((e * r[:, None]) >> (30 - headroom)[:, None]) + 1 >> 1
        return out.astype(np.int16).reshape(x.shape)
    return run
