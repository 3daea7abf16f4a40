"""The A16W8 C kernels (int16 activations) against the host Python kernels, bit for bit.

Random one-op cases per kind (shapes, geometry, the whole legal parameter ranges, saturating values)
run in one program per kind with the C runtime built for the host (the portable paths); the same cases
run on the cortex-m4 board (DSP paths: SMLALD in mf_dot_s16) and the cortex-m55 board (MVE: VMLALDAVA),
all kinds in one boot per board (tests/board_sweep.py); conv2d_s16 takes its im2col path there (with the
scratch kernel_scratch_bytes plans) or, without scratch, the portable one; depthwise_conv2d_s16 with depth
multiplier 1 its DSP (4 channels) and MVE (8 channels) paths, with channel tails. The Python kernels equal
the independent statement of CMSIS-NN's arithmetic (tests/test_kernels_s16.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from board_sweep import BoardSweep

from mcuforge.ir import Tensor
from mcuforge.kernels import (
    add_s16_params,
    conv_output_hw,
    make_lut_s16,
    mul_quant_params,
    quantize_multiplier,
    softmax_s16_params,
    softmax_s16_tables,
)

I16_MIN, I16_MAX = -32768, 32767
DTYPE_NAMES = {np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.int32): "int32",
               np.dtype(np.int64): "int64"}


def act(name: str, shape, dtype: str = "int16") -> Tensor:
    return Tensor(name, tuple(shape), dtype)


def const(name: str, data: np.ndarray) -> Tensor:
    return Tensor(name, data.shape, DTYPE_NAMES[data.dtype], data=data)


def int16(rng, shape) -> np.ndarray:
    if rng.random() < 0.2:  # the ends of the range: saturation, the largest products
        return rng.choice(np.array([I16_MIN, I16_MIN + 1, -1, 0, 1, I16_MAX], np.int16), size=shape)
    return rng.integers(I16_MIN, I16_MAX + 1, size=shape, dtype=np.int16)


def int8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def act_range(rng) -> dict:
    if rng.random() < 0.5:
        return {"act_min": I16_MIN, "act_max": I16_MAX}
    lo = int(rng.integers(I16_MIN, I16_MAX + 1))
    return {"act_min": lo, "act_max": int(rng.integers(lo, I16_MAX + 1))}


def s64_requant(rng, channels: int) -> list[Tensor]:
    """Multipliers (REDUCE_MULTIPLIER's edges among them) and shifts over [-31, 14]."""
    n = channels if rng.random() < 0.7 else 1
    mult = rng.integers(1 << 30, 1 << 31, size=n, dtype=np.int64)
    mult[rng.random(n) < 0.15] = 0x7FFF0000
    if rng.random() < 0.2:
        mult = rng.integers(-(1 << 31) + 1, 1 << 31, size=n, dtype=np.int64)
    shift = rng.integers(-31, 15, size=n) if rng.random() < 0.3 else rng.integers(-22, 1, size=n)
    return [const("m", mult.astype(np.int32)), const("s", shift.astype(np.int8))]  # int8 shifts: format 2.0


def s32_requant(rng) -> tuple[int, int]:
    if rng.random() < 0.8:
        return int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(-20, 2))
    return int(rng.integers(-(1 << 31), 1 << 31)), int(rng.integers(-31, 31))


def weighted(rng, weight: np.ndarray, oc: int) -> tuple[list[Tensor], list[str]]:
    bias = None
    if rng.random() < 0.8:
        limit = 1 << int(rng.choice([16, 32, 45]))
        bias = rng.integers(-limit, limit, size=oc, dtype=np.int64)
    consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else []) + s64_requant(rng, oc)
    return consts, ["x", "w", "b" if bias is not None else "", "m", "s"]


def geometry(rng, max_hw: int = 9):
    for _ in range(100):
        h, w = int(rng.integers(1, max_hw)), int(rng.integers(1, max_hw))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        st = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pd = [int(rng.integers(0, 3)), int(rng.integers(0, 3))]
        dl = [1, 1] if rng.random() < 0.7 else [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        oh, ow = conv_output_hw((h, w), (kh, kw), st, pd, dl)
        if oh >= 1 and ow >= 1:
            return h, w, kh, kw, st, pd, dl, oh, ow
    raise AssertionError("no geometry")


# Each case generator adds one random case of its kind to a sweep.

def conv_case(rng, sweep: BoardSweep, case: str) -> None:
    h, w, kh, kw, st, pd, dl, oh, ow = geometry(rng)
    wc = int(rng.choice([1, 2, 3, 4, 5, 8, 9, 16]))
    groups = 1 if rng.random() < 0.8 else int(rng.integers(2, 4))
    oc = groups * int(rng.integers(1, 7))
    n = int(rng.integers(1, 3))
    consts, names = weighted(rng, int8(rng, (oc, kh, kw, wc)), oc)
    x = act("x", (n, h, w, wc * groups))
    # on the boards with its scratch the im2col path runs, without it (one case in five) the portable one
    sweep.add(case, "conv2d_s16", {"stride": st, "padding": pd, "dilation": dl, **act_range(rng)},
              [(x, int16(rng, x.shape))], [act("y", (n, oh, ow, oc))], consts, names, scratch=rng.random() < 0.8)


def conv_int32_bias_case(rng, sweep: BoardSweep, case: str) -> None:
    """arm_convolve_s16's int32-bias form: int32 bias, any int32 multiplier, shifts in [-31, 30]; extreme
    inputs and weights overflow the int32 sum (it wraps, as CMSIS-NN's)."""
    h, w, kh, kw, st, pd, dl, oh, ow = geometry(rng)
    wc = int(rng.choice([1, 3, 4, 8, 9, 16]))
    oc, n = int(rng.integers(1, 7)), int(rng.integers(1, 3))
    extreme = rng.random() < 0.3
    weight = rng.choice(np.array([-128, 127], np.int8), (oc, kh, kw, wc)) if extreme else int8(rng, (oc, kh, kw, wc))
    bias = rng.integers(-(1 << 31), 1 << 31, size=oc).astype(np.int32)
    pc = rng.random() < 0.7
    mult = rng.integers(-(1 << 31), 1 << 31, size=oc if pc else 1).astype(np.int32)
    shift = rng.integers(-31, 31, size=oc if pc else 1).astype(np.int8)
    consts = [const("w", weight), const("b", bias), const("m", mult), const("s", shift)]
    x = act("x", (n, h, w, wc))
    xv = rng.choice(np.array([I16_MIN, I16_MAX], np.int16), x.shape) if extreme else int16(rng, x.shape)
    sweep.add(case, "conv2d_s16", {"stride": st, "padding": pd, "dilation": dl, **act_range(rng)},
              [(x, xv)], [act("y", (n, oh, ow, oc))], consts, ["x", "w", "b", "m", "s"],
              scratch=rng.random() < 0.8)


def depthwise_case(rng, sweep: BoardSweep, case: str) -> None:
    h, w, kh, kw, st, pd, dl, oh, ow = geometry(rng)
    c = int(rng.integers(1, 20))
    dm = 1 if rng.random() < 0.6 else int(rng.integers(2, 4))  # multiplier 1: the DSP / MVE paths
    consts, names = weighted(rng, int8(rng, (1, kh, kw, c * dm)), c * dm)
    x = act("x", (1, h, w, c))
    sweep.add(case, "depthwise_conv2d_s16", {"stride": st, "padding": pd, "dilation": dl, "depth_multiplier": dm,
                                             **act_range(rng)},
              [(x, int16(rng, x.shape))], [act("y", (1, oh, ow, c * dm))], consts, names)


def fully_connected_case(rng, sweep: BoardSweep, case: str) -> None:
    rows, oc = int(rng.integers(1, 4)), int(rng.integers(1, 20))
    depth = int(rng.choice([1, 3, 4, 7, 8, 9, 16, 17, 33, 100, 600]))  # around the 4- and 8-lane widths
    consts, names = weighted(rng, int8(rng, (oc, depth)), oc)
    x = act("x", (rows, depth))
    sweep.add(case, "fully_connected_s16", act_range(rng), [(x, int16(rng, x.shape))], [act("y", (rows, oc))],
              consts, names)


def add_case(rng, sweep: BoardSweep, case: str) -> None:
    p = add_s16_params(*rng.uniform(1e-5, 1e-2, size=3))
    if rng.random() < 0.3:
        p["b_multiplier"] = -p["b_multiplier"]  # a subtraction
    if rng.random() < 0.2:
        for key in ("a", "b", "output"):
            p[f"{key}_multiplier"], p[f"{key}_shift"] = s32_requant(rng)
    sa, sb = ((2, 3, 4), (2, 3, 4)) if rng.random() < 0.5 else ((2, 1, 4), (3, 1))
    so = tuple(np.broadcast_shapes(sa, sb))
    a, b = act("a", sa), act("b", sb)
    sweep.add(case, "add_s16", {**p, **act_range(rng)}, [(a, int16(rng, sa)), (b, int16(rng, sb))], [act("y", so)])


def mul_case(rng, sweep: BoardSweep, case: str) -> None:
    mult, shift = mul_quant_params(*rng.uniform(1e-5, 1e-2, size=3)) if rng.random() < 0.7 else s32_requant(rng)
    sa, sb = ((5, 7), (5, 7)) if rng.random() < 0.5 else ((1, 7), (5, 1))
    a, b = act("a", sa), act("b", sb)
    sweep.add(case, "mul_s16", {"output_multiplier": mult, "output_shift": shift, **act_range(rng)},
              [(a, int16(rng, sa)), (b, int16(rng, sb))], [act("y", np.broadcast_shapes(sa, sb))])


def pool_case(rng, sweep: BoardSweep, case: str, kind: str) -> None:
    for _ in range(100):
        h, w, c = int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 6))
        k = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        st = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pd = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))]
        oh, ow = conv_output_hw((h, w), k, st, pd)
        if oh >= 1 and ow >= 1:
            break
    x = act("x", (1, h, w, c))
    sweep.add(case, kind, {"kernel": k, "stride": st, "padding": pd, **act_range(rng), "output_hw": [oh, ow]},
              [(x, int16(rng, x.shape))], [act("y", (1, oh, ow, c))])


def softmax_case(rng, sweep: BoardSweep, case: str) -> None:
    exp_lut, one_by_one = softmax_s16_tables()
    if rng.random() < 0.3:  # any tables the kernel accepts
        exp_lut = rng.integers(0, I16_MAX + 1, size=513).astype(np.int16)
        exp_lut[510:] = rng.integers(2, I16_MAX + 1, size=3)
        one_by_one = rng.integers(I16_MIN, I16_MAX + 1, size=513).astype(np.int16)
    mult, shift = softmax_s16_params(float(rng.uniform(1e-5, 3e-3)))
    if rng.random() < 0.2:
        mult, shift = int(rng.integers(1, 1 << 31)), int(rng.integers(-31, 31))
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 70)))
    x = act("x", shape)
    sweep.add(case, "softmax_s16", {"multiplier": mult, "shift": shift}, [(x, int16(rng, shape))], [act("y", shape)],
              [const("e", exp_lut), const("r", one_by_one)])


def batch_matmul_case(rng, sweep: BoardSweep, case: str) -> None:
    m, k, n = (int(v) for v in rng.integers(1, 9, size=3))
    adj_x, adj_y = int(rng.random() < 0.5), int(rng.random() < 0.5)
    bl, br = ((2,), (2,)) if rng.random() < 0.5 else ((2, 1), (1, 3))
    ls = (*bl, k, m) if adj_x else (*bl, m, k)
    rs = (*br, n, k) if adj_y else (*br, k, n)
    (mult,), (shift,) = (t.data for t in s64_requant(rng, 1))
    lhs, rhs = act("l", ls), act("r", rs)
    sweep.add(case, "batch_matmul_s16", {"output_multiplier": int(mult), "output_shift": int(shift),
                                         **act_range(rng), "adj_x": adj_x, "adj_y": adj_y},
              [(lhs, int16(rng, ls)), (rhs, int16(rng, rs))], [act("y", (*np.broadcast_shapes(bl, br), m, n))])


def lut_case(rng, sweep: BoardSweep, case: str) -> None:
    if rng.random() < 0.5:
        table = rng.integers(I16_MIN, I16_MAX + 1, size=513).astype(np.int16)  # slopes that wrap int16
    else:
        import torch

        fn = [torch.sigmoid, torch.tanh, torch.nn.functional.gelu][int(rng.integers(0, 3))]
        table = make_lut_s16(fn, input_scale=float(rng.uniform(1e-5, 1e-3)), output_scale=1 / 32768)
    shape = (int(rng.integers(1, 300)),)
    x = act("x", shape)
    sweep.add(case, "lut_s16", {}, [(x, int16(rng, shape))], [act("y", shape)], [const("t", table)])


def activation_case(rng, sweep: BoardSweep, case: str) -> None:
    shape = (int(rng.integers(1, 300)),)
    x = act("x", shape)
    attrs = {"function": int(rng.integers(0, 2)), "left_shift": int(rng.choice([-31, -3, -2, -1, 0, 1, 2, 5, 14]))}
    sweep.add(case, "activation_s16", attrs, [(x, int16(rng, shape))], [act("y", shape)])


def clamp_case(rng, sweep: BoardSweep, case: str) -> None:
    x = act("x", (3, 17))
    sweep.add(case, "clamp_s16", act_range(rng), [(x, int16(rng, x.shape))], [act("y", x.shape)])


def convert_case(rng, sweep: BoardSweep, case: str) -> None:
    s8, s16 = float(rng.uniform(1e-3, 1e-1)), float(rng.uniform(1e-6, 1e-3))
    zp = int(rng.integers(-128, 128))
    if rng.random() < 0.5:
        mult, shift = quantize_multiplier(s8 / s16)
        x = act("x", (256,), "int8")
        sweep.add(case, "convert_s8_s16", {"input_offset": -zp, "multiplier": mult, "shift": shift},
                  [(x, np.arange(-128, 128, dtype=np.int8))], [act("y", (256,))])
    else:
        mult, shift = quantize_multiplier(s16 / s8) if rng.random() < 0.8 else s32_requant(rng)
        x = act("x", (300,))
        sweep.add(case, "convert_s16_s8", {"output_offset": zp, "multiplier": mult, "shift": shift},
                  [(x, int16(rng, x.shape))], [act("y", (300,), "int8")])


def quantize_case(rng, sweep: BoardSweep, case: str) -> None:
    """The fp32 boundaries of an A16W8 program: float32 -> int16 (saturating, ties to even) and back."""
    scale = float(rng.uniform(1e-5, 1e-2))
    zp = 0 if rng.random() < 0.7 else int(rng.integers(-100, 100))
    x = (rng.standard_normal(200) * scale * 40000).astype(np.float32)
    x[:20] = (np.arange(20) - 10 + 0.5).astype(np.float32) * np.float32(scale)  # ties
    f, q = act("f", (200,), "float32"), act("q", (200,))
    if rng.random() < 0.5:
        sweep.add(case, "quantize", {"scale": scale, "zero_point": zp}, [(f, x)], [q], backend="fp32")
    else:
        sweep.add(case, "dequantize", {"scale": scale, "zero_point": zp}, [(q, int16(rng, (200,)))],
                  [act("f", (200,), "float32")], backend="fp32")


CASES: dict[str, Callable] = {
    "conv2d_s16": conv_case,
    "conv2d_s16_int32_bias": conv_int32_bias_case,
    "depthwise_conv2d_s16": depthwise_case,
    "fully_connected_s16": fully_connected_case,
    "add_s16": add_case,
    "mul_s16": mul_case,
    "avgpool_s16": lambda rng, sweep, case: pool_case(rng, sweep, case, "avgpool_s16"),
    "maxpool_s16": lambda rng, sweep, case: pool_case(rng, sweep, case, "maxpool_s16"),
    "softmax_s16": softmax_case,
    "batch_matmul_s16": batch_matmul_case,
    "lut_s16": lut_case,
    "activation_s16": activation_case,
    "clamp_s16": clamp_case,
    "convert_s16": convert_case,
    "quantize_s16": quantize_case,
}


def sweep_of(kinds, count: int, seed: int) -> BoardSweep:
    sweep = BoardSweep()
    for k, kind in enumerate(kinds):
        rng = np.random.default_rng(seed + 1000 * k)
        for i in range(count):
            CASES[kind](rng, sweep, f"{kind}_{i}")
    return sweep


@pytest.mark.parametrize("kind", list(CASES))
def test_s16_kernels_host_c_bit_exact(kind):
    sweep_of([kind], 60, seed=1).assert_same_on_host_c("cortex-m55", flags=())


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_s16_kernels_on_boards(target):
    """Every s16 kind on the DSP and MVE boards, one boot: the optimized dot products and every portable
    kernel as the cross compiler builds it."""
    sweep_of(list(CASES), 12, seed=2).assert_same_on_board(target)
