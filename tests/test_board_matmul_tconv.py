"""The optimized batch matmul and transposed convolution paths on the boards, against the host kernels.

cortex-m4 runs the DSP paths, cortex-m55 the MVE paths (csrc/kernels/batch_matmul_s8.c,
transpose_conv2d_s8.c); the host Python kernels equal the portable C path bit for bit
(tests/test_c_kernels_ops.py). The shapes hit every path and tail:

- batch_matmul_s8: every (adj_x, adj_y) -- rows (Q K^T), columns (P V), and the portable layouts --
  with depths K around the 4- and 16-lane steps, output counts N around the 2-, 4- and 16-output blocks,
  broadcast batches, offsets at their extremes, INT32_MIN multipliers (the scalar requantization), and a
  depth of 34,000 extreme values that wraps the int32 accumulator;
- transpose_conv2d_s8: channels around the 4- and 16-lane steps, filter counts around the 2- and
  4-filter blocks, strides, padding, output padding, kernels larger than the stride (overlapping taps)
  and smaller, batches, per-tensor and per-channel requantization over the legal range.

All cases of a kind run in one program: one QEMU boot per board and kind.
"""

from __future__ import annotations

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_board_conv_fc import offsets, weighted_consts
from test_c_kernels import act, act_range, int8
from test_c_kernels_ops import scalar_requant

BOARDS = ("cortex-m4", "cortex-m55")
INT32_MIN = -(1 << 31)


def bmm_case(rng, sweep: BoardSweep, m: int, k: int, n: int, adj_x: int, adj_y: int, batch=((), ()),
             extreme: bool = False, mult: int | None = None) -> None:
    lb, rb = batch
    l_shape = (*lb, *((k, m) if adj_x else (m, k)))
    r_shape = (*rb, *((n, k) if adj_y else (k, n)))
    out_shape = (*np.broadcast_shapes(tuple(lb), tuple(rb)), m, n)
    # Outputs spread over the int8 range (so that a wrong sum shows), now and then any legal pair.
    multiplier, shift = int(rng.integers(1 << 30, (1 << 31) - 1)), -8 - int(np.log2(k) / 2) - int(rng.integers(0, 2))
    if rng.random() < 0.15:
        multiplier, shift = scalar_requant(rng)
    lo, hi = (-128, 127) if rng.random() < 0.7 else act_range(rng)
    edge = rng.random() < 0.2
    off = [int(rng.choice([-127, 128])) if edge else int(rng.integers(-127, 129)) for _ in range(2)]
    attrs = {"lhs_offset": off[0], "rhs_offset": off[1], "output_offset": int(rng.integers(-128, 128)),
             "output_multiplier": multiplier if mult is None else mult, "output_shift": shift, "act_min": lo,
             "act_max": hi, "adj_x": adj_x, "adj_y": adj_y}
    if extreme:  # every product (127 + 128)^2: the sum wraps past 2^31
        attrs.update(lhs_offset=128, rhs_offset=128)
        values = [np.full(l_shape, 127, np.int8), np.full(r_shape, 127, np.int8)]
    else:
        values = [int8(rng, l_shape), int8(rng, r_shape)]
    case = f"bmm_x{adj_x}y{adj_y}_m{m}k{k}n{n}_{len(sweep)}"
    sweep.add(case, "batch_matmul_s8", attrs, [(act("l", l_shape), values[0]), (act("r", r_shape), values[1])],
              [act("y", out_shape)])


def bmm_sweep(seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    for adj_x, adj_y in ((0, 1), (0, 0), (1, 0), (1, 1)):
        for k in (1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 64, 65):
            bmm_case(rng, sweep, int(rng.integers(1, 4)), k, int(rng.integers(1, 6)), adj_x, adj_y)
        for n in (1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 20, 31, 33):
            bmm_case(rng, sweep, int(rng.integers(1, 4)), int(rng.integers(1, 40)), n, adj_x, adj_y)
        bmm_case(rng, sweep, 3, 24, 16, adj_x, adj_y, batch=((2, 3), (3,)))  # broadcast batches
        bmm_case(rng, sweep, 2, 9, 7, adj_x, adj_y, batch=((1, 2), (4, 1)))
        bmm_case(rng, sweep, 16, 16, 16, adj_x, adj_y, batch=((1, 2), (1, 2)))  # the transformer block's
        bmm_case(rng, sweep, 2, 19, 6, adj_x, adj_y, mult=INT32_MIN)
        bmm_case(rng, sweep, 1, 34_000, 2, adj_x, adj_y, extreme=True)
    return sweep


def tconv_case(rng, sweep: BoardSweep, ch: int, oc: int, kernel: tuple[int, int], stride: tuple[int, int],
               pad: tuple[int, int], hw: tuple[int, int], extra: tuple[int, int] = (0, 0), batch: int = 1) -> None:
    (h, w), (kh, kw) = hw, kernel
    oh = (h - 1) * stride[0] - 2 * pad[0] + kh + extra[0]
    ow = (w - 1) * stride[1] - 2 * pad[1] + kw + extra[1]
    consts, names = weighted_consts(rng, int8(rng, (oc, kh, kw, ch)), oc)
    o = offsets(rng)
    attrs = {"input_offset": o["input_offset"], "output_offset": o["output_offset"], "stride": list(stride),
             "padding": list(pad), "act_min": o["act_min"], "act_max": o["act_max"]}
    x = act("x", (batch, h, w, ch))
    sweep.add(f"tconv_c{ch}_o{oc}_k{kh}x{kw}_s{stride[0]}{stride[1]}_{len(sweep)}", "transpose_conv2d_s8", attrs,
              [(x, int8(rng, x.shape))], [act("y", (batch, oh, ow, oc))], consts, op_inputs=names)


def tconv_sweep(seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    for ch in (1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33):
        for oc in (1, 2, 3, 4, 5, 7, 8, 9):
            kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
            stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
            pad = (int(rng.integers(0, kernel[0])), int(rng.integers(0, kernel[1]))) if rng.random() < 0.4 else (0, 0)
            hw = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
            if any((hw[a] - 1) * stride[a] - 2 * pad[a] + kernel[a] < 1 for a in (0, 1)):
                pad = (0, 0)
            tconv_case(rng, sweep, ch, oc, kernel, stride, pad, hw)
    tconv_case(rng, sweep, 32, 16, (2, 2), (2, 2), (0, 0), (8, 8))  # the U-Net's upsampling layers
    tconv_case(rng, sweep, 16, 8, (2, 2), (2, 2), (0, 0), (6, 5), batch=2)
    tconv_case(rng, sweep, 6, 5, (3, 3), (2, 2), (1, 1), (4, 3), extra=(1, 1))  # output padding
    tconv_case(rng, sweep, 9, 3, (1, 1), (3, 2), (0, 0), (3, 3), extra=(2, 1))  # taps never overlap, gaps
    tconv_case(rng, sweep, 4, 6, (5, 4), (1, 1), (2, 1), (3, 4))  # stride 1: every output many taps
    return sweep


@pytest.mark.parametrize("target", BOARDS)
def test_batch_matmul_fast_paths_on_board(target):
    sweep = bmm_sweep(seed=41)
    assert len(sweep) > 120
    sweep.assert_same_on_board(target)


@pytest.mark.parametrize("target", BOARDS)
def test_transpose_conv_fast_paths_on_board(target):
    sweep = tconv_sweep(seed=42)
    assert len(sweep) > 100
    sweep.assert_same_on_board(target)
