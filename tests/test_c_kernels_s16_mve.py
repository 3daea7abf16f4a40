"""The Helium (MVE) int32 paths of the A16W8 weighted kernels on the cortex-m55 board, bit for bit with the
host Python kernels.

tests/test_c_kernels_s16.py draws its requantization over the whole legal range (biases up to 2^45, shifts
over [-31, 14]), where the MVE int32 path rarely applies. These cases are drawn where it does (kernels/dot_s16.c,
mf_s16_mve_ok: no int32-bias form, shifts in [-17, -1], |sum + bias| < 2^31) and at its edges: shifts -17 and
-1 and just outside, multipliers at REDUCE_MULTIPLIER's cap and near INT32_MIN, biases near the int32 limit,
the most negative products (-32768 x -128), depths past 504 with small weights (the sum-of-|w| test) and with
full ones (the fallback), depths and pixel counts off the 8-lane and 4-pixel widths, in-place 1 x 1 and 1 x kw
patches, padded and strided windows, groups. One boot of the cortex-m55 board runs them all
(tests/board_sweep.py); the host C runtime runs them through the portable paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_c_kernels_s16 import I16_MAX, I16_MIN, act, act_range, const, int8, int16

from mcuforge.kernels import add_s16_params, conv_output_hw


def fast_requant(rng, channels: int) -> list:
    """Multipliers (edges among them), shifts mostly inside [-17, -1] (a few just outside), biases whose
    magnitude stays below the int32 bound for the weights drawn (or, one case in ten, crosses it)."""
    n = channels if rng.random() < 0.7 else 1
    mult = rng.integers(1 << 30, 1 << 31, size=n, dtype=np.int64)
    edges = np.array([0x7FFF0000, 0x7FFF7FFF, (1 << 31) - 1, -(1 << 31) + 1, -(1 << 30), 1 << 30, 1], np.int64)
    pick = rng.random(n) < 0.3
    mult[pick] = rng.choice(edges, size=int(pick.sum()))
    shift = rng.integers(-17, 0, size=n)
    ends = rng.random(n)
    shift[ends < 0.15] = -17
    shift[(ends >= 0.15) & (ends < 0.3)] = -1
    if rng.random() < 0.1:
        shift[0] = int(rng.choice([-18, 0]))  # outside: the whole op falls back
    return [const("m", mult.astype(np.int32)), const("s", shift.astype(np.int8))]


def fast_bias(rng, channels: int, depth: int, wmax: int) -> np.ndarray | None:
    if rng.random() < 0.15:
        return None
    room = (1 << 31) - 1 - depth * 32768 * wmax  # |sum| <= 2^15 * sum|w| <= depth * 2^15 * wmax
    limit = max(1, min(room, 1 << int(rng.choice([8, 20, 30]))))
    if rng.random() < 0.1:
        limit = 1 << 40  # past the bound: the fallback
    bias = rng.integers(-limit, limit + 1, size=channels, dtype=np.int64)
    if rng.random() < 0.2 and room > 0:
        bias[0] = int(rng.choice([room, -room]))  # at the bound exactly
    return bias


def weights(rng, shape, wmax: int) -> np.ndarray:
    if wmax < 128:
        return rng.integers(-wmax, wmax + 1, size=shape, dtype=np.int8)
    if rng.random() < 0.2:
        return rng.choice(np.array([-128, 127], np.int8), size=shape)
    return int8(rng, shape)


def extreme_int16(rng, shape) -> np.ndarray:
    if rng.random() < 0.25:
        return rng.choice(np.array([I16_MIN, I16_MAX], np.int16), size=shape)
    return int16(rng, shape)


def conv_geometry(rng):
    """(h, w, kh, kw, stride, padding, dilation, oh, ow, wc, groups): 1 x 1 and 1 x kw in place, windows
    with padding, strides, dilation; deep patches past 504."""
    for _ in range(100):
        style = rng.choice(["pointwise", "row", "window", "deep"], p=[0.35, 0.15, 0.35, 0.15])
        h, w = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        st = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pd, dl, groups = [0, 0], [1, 1], 1
        if style == "pointwise":
            kh = kw = 1
            wc = int(rng.choice([1, 3, 8, 9, 16, 17, 40, 64]))
            groups = 1 if rng.random() < 0.8 else 2
        elif style == "row":
            kh, kw, wc = 1, int(rng.integers(2, 5)), int(rng.choice([1, 3, 8, 13]))
            pd = [0, int(rng.integers(0, 2))]
        elif style == "window":
            kh, kw, wc = int(rng.integers(2, 5)), int(rng.integers(1, 5)), int(rng.choice([1, 2, 5, 8, 16]))
            pd = [int(rng.integers(0, 3)), int(rng.integers(0, 3))]
            if rng.random() < 0.2:
                dl = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
            groups = 1 if rng.random() < 0.85 else 3
        else:
            kh, kw, wc = 3, 3, int(rng.choice([57, 67, 72]))  # 513, 603, 648 values a patch
            pd = [1, 1]
        oh, ow = conv_output_hw((h, w), (kh, kw), st, pd, dl)
        if oh >= 1 and ow >= 1:
            return h, w, kh, kw, st, pd, dl, oh, ow, wc, groups
    raise AssertionError("no geometry")


def conv_fast_case(rng, sweep: BoardSweep, case: str) -> None:
    h, w, kh, kw, st, pd, dl, oh, ow, wc, groups = conv_geometry(rng)
    oc = groups * int(rng.integers(1, 7))
    n = int(rng.integers(1, 3))
    depth = kh * kw * wc
    wmax = int(rng.choice([3, 127])) if depth > 504 else 127
    bias = fast_bias(rng, oc, depth, wmax)
    consts = [const("w", weights(rng, (oc, kh, kw, wc), wmax))] + ([const("b", bias)] if bias is not None else [])
    consts += fast_requant(rng, oc)
    x = act("x", (n, h, w, wc * groups))
    sweep.add(case, "conv2d_s16", {"stride": st, "padding": pd, "dilation": dl, **act_range(rng)},
              [(x, extreme_int16(rng, x.shape))], [act("y", (n, oh, ow, oc))], consts,
              ["x", "w", "b" if bias is not None else "", "m", "s"])


def depthwise_fast_case(rng, sweep: BoardSweep, case: str) -> None:
    """Depth multiplier 1 (the MVE path; another multiplier, one case in ten, the portable one): channel counts
    around the 4- and 8-lane blocks, windows at the input's edges, strides, dilation."""
    for _ in range(100):
        h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        kh, kw = int(rng.choice([1, 2, 3, 5])), int(rng.choice([1, 3, 4, 5]))
        st = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pd = [int(rng.integers(0, kh)), int(rng.integers(0, kw))]
        dl = [1, 1] if rng.random() < 0.8 else [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        oh, ow = conv_output_hw((h, w), (kh, kw), st, pd, dl)
        if oh >= 1 and ow >= 1:
            break
    c = int(rng.choice([1, 3, 4, 5, 7, 8, 9, 12, 16, 17, 24]))
    dm = 1 if rng.random() < 0.9 else 2
    bias = fast_bias(rng, c * dm, kh * kw, 127)
    consts = [const("w", weights(rng, (1, kh, kw, c * dm), 127))] + ([const("b", bias)] if bias is not None else [])
    consts += fast_requant(rng, c * dm)
    x = act("x", (int(rng.integers(1, 3)), h, w, c))
    sweep.add(case, "depthwise_conv2d_s16", {"stride": st, "padding": pd, "dilation": dl, "depth_multiplier": dm,
                                             **act_range(rng)},
              [(x, extreme_int16(rng, x.shape))], [act("y", (x.shape[0], oh, ow, c * dm))], consts,
              ["x", "w", "b" if bias is not None else "", "m", "s"])


def add_fast_case(rng, sweep: BoardSweep, case: str) -> None:
    """Inputs of the output's shape (the MVE path; one case in five broadcasts: the portable one), lengths off
    the 4-lane width, TFLite's parameters or any int32 multiplier (INT32_MIN among them: the fallback), shifts
    over [-31, 30], left shifts that wrap."""
    p = add_s16_params(*rng.uniform(1e-5, 1e-2, size=3))
    if rng.random() < 0.4:
        for key in ("a", "b", "output"):
            p[f"{key}_multiplier"] = int(rng.choice([rng.integers(-(1 << 31) + 1, 1 << 31), (1 << 31) - 1, 1 << 30,
                                                     -(1 << 31) + 1]))
            p[f"{key}_shift"] = int(rng.integers(-31, 31))
        p["left_shift"] = int(rng.integers(0, 31))
    if rng.random() < 0.05:
        p["output_multiplier"] = -(1 << 31)
    n = int(rng.choice([1, 3, 4, 5, 7, 8, 13, 64, 67]))
    sa, sb = ((2, n), (2, n)) if rng.random() < 0.8 else ((2, n), (1, n))
    a, b = act("a", sa), act("b", sb)
    sweep.add(case, "add_s16", {**p, **act_range(rng)}, [(a, extreme_int16(rng, sa)), (b, extreme_int16(rng, sb))],
              [act("y", sa)])


def fully_connected_fast_case(rng, sweep: BoardSweep, case: str) -> None:
    """1 row (4 filters a pass), 2..7 rows (4 rows a pass, then 1), output channels around 4, depths around 8
    and past 504."""
    rows, oc = int(rng.choice([1, 1, 2, 3, 4, 5, 7])), int(rng.choice([1, 2, 3, 4, 5, 8, 13]))
    depth = int(rng.choice([1, 7, 8, 9, 16, 33, 100, 600, 640]))
    wmax = int(rng.choice([3, 127])) if depth > 504 else 127
    bias = fast_bias(rng, oc, depth, wmax)
    consts = [const("w", weights(rng, (oc, depth), wmax))] + ([const("b", bias)] if bias is not None else [])
    consts += fast_requant(rng, oc)
    x = act("x", (rows, depth))
    sweep.add(case, "fully_connected_s16", act_range(rng), [(x, extreme_int16(rng, x.shape))], [act("y", (rows, oc))],
              consts, ["x", "w", "b" if bias is not None else "", "m", "s"])


CASES = {"conv2d_s16": conv_fast_case, "depthwise_conv2d_s16": depthwise_fast_case, "add_s16": add_fast_case,
         "fully_connected_s16": fully_connected_fast_case}


def sweep_of(count: int, seed: int) -> BoardSweep:
    sweep = BoardSweep()
    for k, (kind, make) in enumerate(CASES.items()):
        rng = np.random.default_rng(seed + 1000 * k)
        for i in range(count):
            make(rng, sweep, f"{kind}_mve_{i}")
    return sweep


def test_s16_mve_cases_host_c_bit_exact():
    sweep_of(40, seed=11).assert_same_on_host_c("cortex-m55", flags=())


@pytest.mark.parametrize("target", ["cortex-m55"])
def test_s16_mve_paths_on_the_board(target):
    """The MVE int32 paths (and, for the cases outside them, the paths they fall back to) on the board."""
    sweep_of(40, seed=12).assert_same_on_board(target)


def fully_connected_batch1_case(rng, sweep: BoardSweep, case: str) -> None:
    """One input row (mf_s16_mve_rows4 without mf_s16_mve_ok): whole groups of 4 filters and a last partial one,
    depths to 504 (the int32 lanes) and past it (int64 blocks), biases at and across the int32 edges so that
    sum + bias leaves int32 in some lanes (VQADD differs from VADD) or a bias has a high word of its own."""
    oc = int(rng.choice([4, 8, 12, 16, 5, 13]))
    depth = int(rng.choice([1, 7, 8, 9, 64, 128, 503, 504, 505, 640]))
    wmax = int(rng.choice([3, 127]))
    bias = fast_bias(rng, oc, depth, wmax)
    if bias is not None and rng.random() < 0.5:
        edge = np.array([(1 << 31) - 1, -(1 << 31) + 1, -(1 << 31), 1 << 31, -(1 << 31) - 1, (1 << 32) + 5,
                         -(1 << 32) - 5, (1 << 31) - 100, -(1 << 31) + 100], np.int64)
        pick = rng.random(oc) < 0.3
        bias = np.where(pick, rng.choice(edge, size=oc), bias)
    consts = [const("w", weights(rng, (oc, depth), wmax))] + ([const("b", bias)] if bias is not None else [])
    consts += fast_requant(rng, oc)
    x = act("x", (1, depth))
    sweep.add(case, "fully_connected_s16", act_range(rng), [(x, extreme_int16(rng, x.shape))], [act("y", (1, oc))],
              consts, ["x", "w", "b" if bias is not None else "", "m", "s"])


def batch1_sweep(count: int, seed: int) -> BoardSweep:
    sweep, rng = BoardSweep(), np.random.default_rng(seed)
    for i in range(count):
        fully_connected_batch1_case(rng, sweep, f"fully_connected_s16_batch1_{i}")
    return sweep


def test_s16_mve_fc_batch1_host_c_bit_exact():
    batch1_sweep(80, seed=21).assert_same_on_host_c("cortex-m55", flags=())


@pytest.mark.parametrize("target", ["cortex-m55"])
def test_s16_mve_fc_batch1_on_the_board(target):
    batch1_sweep(80, seed=22).assert_same_on_board(target)
