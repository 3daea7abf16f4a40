"""The optimized convolution, fully connected and dot product paths on the boards, against the host kernels.

cortex-m4 runs the DSP paths, cortex-m55 the MVE paths (csrc/kernels/conv2d_s8.c, fully_connected_s8.c,
dot_s8.c); the host Python kernels equal the portable C path bit for bit (tests/test_c_kernels.py).
Random shapes hit every path and tail: conv2d_s8 through im2col (patch sizes around the 4- and 16-lane
widths, padding, strides, dilation, groups, odd filter and pixel counts, batches), the 1x1 path (strided,
grouped, and 1x1 with padding, which takes im2col), the few-input-channel first layers (one run per kernel
row), a conv without scratch (the portable path on the board, its dot product the DSP/MVE mf_dot_s8);
fully_connected_s8 with depths and output counts around the lane widths and several rows; transposed
convolution (its fast paths: tests/test_board_matmul_tconv.py); per-tensor and per-channel requantization
over the whole legal range (INT32_MIN multipliers take the scalar requantization). All cases of a kind
run in one program: one QEMU boot per board.
"""

from __future__ import annotations

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_c_kernels import act, act_range, const, int8, requant_params

from mcuforge.ir import kernel_scratch_bytes
from mcuforge.kernels import conv_output_hw

BOARDS = ("cortex-m4", "cortex-m55")


def weighted_consts(rng, weight: np.ndarray, oc: int, bias_bits: int = 16) -> tuple[list, list[str]]:
    bias = rng.integers(-(1 << bias_bits), 1 << bias_bits, size=oc).astype(np.int32) if rng.random() < 0.8 else None
    mult, shift = requant_params(rng, oc)
    consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else [])
    consts += [const("m", mult), const("s", shift)]
    return consts, ["x", "w", "b" if bias is not None else "", "m", "s"]


def offsets(rng) -> dict:
    lo, hi = act_range(rng)
    return {"input_offset": int(rng.integers(-127, 129)), "output_offset": int(rng.integers(-128, 128)),
            "act_min": lo, "act_max": hi}


def conv_case(rng, sweep: BoardSweep, case: str, wc: int, kernel: tuple[int, int], groups: int = 1,
              oc_per_group: int | None = None, stride=None, pad=None, dil=None, hw=None, batch: int = 1,
              scratch: bool = True) -> None:
    for _ in range(100):
        h, w = hw or (int(rng.integers(1, 10)), int(rng.integers(1, 10)))
        st = stride or [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pd = pad if pad is not None else [int(rng.integers(0, 3)), int(rng.integers(0, 3))]
        dl = dil or ([1, 1] if rng.random() < 0.7 else [int(rng.integers(1, 3)), int(rng.integers(1, 3))])
        oh, ow = conv_output_hw((h, w), kernel, st, pd, dl)
        if oh >= 1 and ow >= 1:
            break
    opg = oc_per_group or int(rng.integers(1, 10))
    oc = opg * groups
    consts, names = weighted_consts(rng, int8(rng, (oc, *kernel, wc)), oc)
    o = offsets(rng)
    attrs = {"input_offset": o["input_offset"], "output_offset": o["output_offset"], "stride": st, "padding": pd,
             "dilation": dl, "act_min": o["act_min"], "act_max": o["act_max"]}
    x = act("x", (batch, h, w, wc * groups))
    sweep.add(case, "conv2d_s8", attrs, [(x, int8(rng, x.shape))], [act("y", (batch, oh, ow, oc))], consts,
              op_inputs=names)
    if scratch:
        sweep.ops[-1].scratch_bytes = kernel_scratch_bytes("conv2d_s8", (oc, *kernel, wc))


def conv_sweep(seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    # im2col + matrix multiply: patch sizes around 4 and 16, all window parameters
    for wc in (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33):
        for kernel in ((3, 3), (2, 3), (1, 3), (5, 2)):
            conv_case(rng, sweep, f"conv_c{wc}_k{kernel[0]}x{kernel[1]}_{len(sweep)}", wc, kernel)
    # 1x1: in place (stride 1 and 2, batches), with padding (im2col), grouped
    for wc in (1, 3, 4, 8, 15, 16, 17, 32, 33, 64):
        conv_case(rng, sweep, f"pw_c{wc}_{len(sweep)}", wc, (1, 1), pad=[0, 0], stride=[1, 1], dil=[1, 1],
                  batch=int(rng.integers(1, 3)))
        conv_case(rng, sweep, f"pw_s2_c{wc}_{len(sweep)}", wc, (1, 1), pad=[0, 0], stride=[2, int(rng.integers(1, 3))])
    conv_case(rng, sweep, "pw_pad", 8, (1, 1), pad=[1, 2])
    conv_case(rng, sweep, "pw_64x64", 64, (1, 1), pad=[0, 0], stride=[1, 1], oc_per_group=64, hw=(5, 5))
    # groups (input channels = groups x filter channels)
    for groups, wc, kernel in ((2, 3, (3, 3)), (3, 4, (1, 1)), (4, 2, (3, 1)), (2, 16, (1, 1)), (2, 5, (2, 2))):
        conv_case(rng, sweep, f"grouped_g{groups}_c{wc}_{len(sweep)}", wc, kernel, groups=groups,
                  pad=[0, 0] if kernel == (1, 1) else None)
    # first layers: few input channels, large kernels, strides, padding (DS-CNN, MobileNet, ResNet shapes)
    conv_case(rng, sweep, "first_dscnn", 1, (10, 4), stride=[2, 2], pad=[4, 1], dil=[1, 1], hw=(49, 10),
              oc_per_group=16)
    conv_case(rng, sweep, "first_rgb_s2", 3, (3, 3), stride=[2, 2], pad=[1, 1], dil=[1, 1], hw=(12, 12),
              oc_per_group=8)
    conv_case(rng, sweep, "first_rgb_s1", 3, (3, 3), stride=[1, 1], pad=[1, 1], dil=[1, 1], hw=(8, 8),
              oc_per_group=16)
    conv_case(rng, sweep, "first_c2_7x7", 2, (7, 7), stride=[2, 2], pad=[3, 3], dil=[1, 1], hw=(11, 9))
    # larger filter counts and patches (several matrix blocks)
    conv_case(rng, sweep, "deep_3x3", 32, (3, 3), oc_per_group=19, hw=(6, 5))
    # no scratch: the portable path, its dot product the optimized mf_dot_s8
    for wc in (3, 17, 20):
        conv_case(rng, sweep, f"no_scratch_c{wc}", wc, (3, 3), scratch=False)
    return sweep


def fc_sweep(seed: int, sweep: BoardSweep) -> BoardSweep:
    rng = np.random.default_rng(seed)
    depths = (1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 640)
    for depth in depths:
        for oc in (1, 2, 3, 4, 5, 8, 9, 13):
            rows = int(rng.integers(1, 4))
            consts, names = weighted_consts(rng, int8(rng, (oc, depth)), oc, bias_bits=20)
            x_shape = (rows, depth) if rng.random() < 0.5 else (rows, 1, depth)
            sweep.add(f"fc_d{depth}_o{oc}_r{rows}", "fully_connected_s8", offsets(rng),
                      [(act("x", x_shape), int8(rng, x_shape))], [act("y", (rows, oc))], consts, op_inputs=names)
    return sweep


def tconv_sweep(seed: int, sweep: BoardSweep) -> BoardSweep:
    """Transposed convolutions (their DSP/MVE paths: tests/test_board_matmul_tconv.py sweeps every tail)."""
    rng = np.random.default_rng(seed)
    for ch in (1, 3, 4, 5, 15, 16, 17, 33):
        h, w = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        st = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pd = [int(rng.integers(0, min(kh, 2))), int(rng.integers(0, min(kw, 2)))]
        oh, ow = (h - 1) * st[0] - 2 * pd[0] + kh, (w - 1) * st[1] - 2 * pd[1] + kw
        if oh < 1 or ow < 1:
            continue
        oc = int(rng.integers(1, 6))
        consts, names = weighted_consts(rng, int8(rng, (oc, kh, kw, ch)), oc)
        o = offsets(rng)
        attrs = {"input_offset": o["input_offset"], "output_offset": o["output_offset"], "stride": st,
                 "padding": pd, "act_min": o["act_min"], "act_max": o["act_max"]}
        x = act("x", (1, h, w, ch))
        sweep.add(f"tconv_c{ch}_{len(sweep)}", "transpose_conv2d_s8", attrs, [(x, int8(rng, x.shape))],
                  [act("y", (1, oh, ow, oc))], consts, op_inputs=names)
    return sweep


@pytest.mark.parametrize("target", BOARDS)
def test_conv2d_fast_paths_on_board(target):
    sweep = conv_sweep(seed=21)
    assert len(sweep) > 80
    sweep.assert_same_on_board(target)


@pytest.mark.parametrize("target", BOARDS)
def test_fully_connected_and_dot_fast_paths_on_board(target):
    sweep = tconv_sweep(seed=23, sweep=fc_sweep(seed=22, sweep=BoardSweep()))
    assert len(sweep) > 150
    sweep.assert_same_on_board(target)
