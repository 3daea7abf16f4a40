"""The optimized depthwise convolution, add, mul and average pool paths on the boards, against the host
kernels.

cortex-m3 runs the scalar paths (mf_scalar.h), cortex-m4 the DSP paths, cortex-m55 the MVE paths
(csrc/kernels/depthwise_conv2d_s8.c, add_s8.c, mul_s8.c, pooling_s8.c); the host Python kernels equal
the portable C path bit for bit (tests/test_c_kernels.py), and the scalar paths' C form runs on the host
too. Random shapes hit every path and tail: channel counts around the vector widths (4, 8, 16), the
unrolled 3x3 window and other kernels, strides, padding, dilation, depth multiplier > 1 (the portable
fallback on DSP/MVE), rows along either axis and the scalar path's limits, per-tensor and per-channel
requantization with the whole legal parameter range, and for add/mul equal shapes (the fast path,
lengths around 4 and 16) and broadcasting, every shift pattern of the MVE add loop; average pools with
windows below and above 255 inputs (the MVE int16 sums). All cases of a kind run in one program: one
QEMU boot per board.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_c_kernels import act, act_range, const, int8, requant_params

from mcuforge import firmware
from mcuforge.ir import kernel_scratch_bytes
from mcuforge.kernels import add_quant_params, conv_output_hw
from mcuforge.program import deserialize
from mcuforge.runtime import execute

BOARDS = ("cortex-m3", "cortex-m4", "cortex-m55")
CHANNELS = (1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 40, 64)


def depthwise_case(rng, sweep: BoardSweep, case: str, channels: int, kernel: tuple[int, int], dm: int = 1,
                   negative_shifts: bool = False, hw: tuple[int, int] | None = None,
                   dil: list[int] | None = None, shifts: tuple[int, ...] = (),
                   stride_hw: tuple[int, int] | None = None, scratch: bool = True, short: int = 0,
                   pad_hw: tuple[int, int] | None = None, batch: int | None = None, big_bias: bool = False) -> None:
    """``scratch=False``: the op asks no scratch; ``short``: it asks that many bytes less than cortex-m4's
    kernel plans (kept on every target); ``big_bias``: a bias, with one channel of a random group at or near
    2^30 - 9 * 255 * 128 (the DSP 3x3 path's per-group test of its short output stage, dw_bias_small)."""
    for _ in range(100):
        n = batch or (1 if rng.random() < 0.8 else 2)
        h, w = hw or (int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        stride = list(stride_hw) if stride_hw else [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pad = [int(rng.integers(0, 3)), int(rng.integers(0, 3))]
        pad = list(pad_hw) if pad_hw else pad
        dil = dil or ([1, 1] if rng.random() < 0.7 else [int(rng.integers(1, 3)), int(rng.integers(1, 3))])
        oh, ow = conv_output_hw((h, w), kernel, stride, pad, dil)
        if oh >= 1 and ow >= 1:
            break
    oc = channels * dm
    weight = int8(rng, (1, *kernel, oc))
    bias = rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32) if rng.random() < 0.8 else None
    if big_bias:
        lim = (1 << 30) - 9 * 255 * 128
        bias = rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32) if bias is None else bias
        bias[4 * int(rng.integers(0, max(1, oc // 4))) + int(rng.integers(0, min(4, oc)))] = int(
            rng.choice([lim - 1, -(lim - 1), lim, -lim, (1 << 29) + 5]))
    mult, shift = requant_params(rng, oc)
    if negative_shifts:  # the MVE loops' shorter requantization (every shift < 0)
        shift = np.minimum(shift, -1).astype(np.int8)
    if shifts:  # the shifts drawn from these values
        shift = rng.choice(shifts, size=len(shift)).astype(np.int8)
    lo, hi = act_range(rng)
    attrs = {"input_offset": int(rng.integers(-127, 129)), "output_offset": int(rng.integers(-128, 128)),
             "stride": stride, "padding": pad, "dilation": dil, "depth_multiplier": dm, "act_min": lo,
             "act_max": hi}
    consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else [])
    consts += [const("m", mult), const("s", shift)]
    x = act("x", (n, h, w, channels))
    sweep.add(case, "depthwise_conv2d_s8", attrs, [(x, int8(rng, x.shape))], [act("y", (n, oh, ow, oc))], consts,
              op_inputs=["x", "w", "b" if bias is not None else "", "m", "s"], scratch=scratch)
    if short:
        need = kernel_scratch_bytes("depthwise_conv2d_s8", weight.shape, "cortex-m4", (n, oh, ow, oc), attrs)
        assert need > short, need
        sweep.ops[-1] = replace(sweep.ops[-1], scratch_bytes=need - short, debug={"case": case, "scratch": "keep"})


def depthwise_sweep(seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    for c in CHANNELS:
        for kernel in ((3, 3), (3, 3), (1, 1), (5, 5), (2, 3), (4, 1)):
            depthwise_case(rng, sweep, f"dw_c{c}_k{kernel[0]}x{kernel[1]}_{len(sweep)}", c, kernel)
    for i in range(12):
        c, dm = int(rng.integers(1, 20)), int(rng.integers(2, 4))
        depthwise_case(rng, sweep, f"dw_c{c}_m{dm}_{i}", c, (3, 3), dm)
    # the scalar path's limits and views: long rows either way (DS-CNN's tall 25 x 5), more than 128 taps
    # and a 17-row window (both portable), wide and tall dilated 3x3
    for i, hw in enumerate(((25, 5), (5, 25), (12, 3), (2, 17))):
        depthwise_case(rng, sweep, f"dw_long_{i}", 5 + i, (3, 3), hw=hw)
    depthwise_case(rng, sweep, "dw_taps_132", 3, (12, 11), hw=(12, 12))
    depthwise_case(rng, sweep, "dw_span_17", 3, (9, 1), hw=(18, 4), dil=[2, 1])
    depthwise_case(rng, sweep, "dw_span_17_tall", 3, (1, 9), hw=(4, 18), dil=[1, 2])
    depthwise_case(rng, sweep, "dw_dil_3x3", 6, (3, 3), hw=(9, 7), dil=[2, 1])
    depthwise_case(rng, sweep, "dw_dil_3x3_tall", 6, (3, 3), hw=(7, 9), dil=[1, 2])
    # 3x3 on whole channel groups (the MVE asm loops): every shift negative or not, inputs from 1x1 (only
    # edge windows) to images with an inside block, and the DS-CNN / MobileNet shapes
    for i, c in enumerate((8, 16, 24, 64, 8, 16, 40, 64)):
        for negative in (True, False):
            hw = (int(rng.integers(1, 13)), int(rng.integers(1, 13))) if i < 6 else ((25, 5) if c == 64 else (12, 12))
            depthwise_case(rng, sweep, f"dw3x3_c{c}_n{negative:d}_{len(sweep)}", c, (3, 3), negative_shifts=negative,
                           hw=hw)
    # the DSP 3x3 output stage's rounding at the ends of the shifts' range (0: none; -31: 2^30 added)
    for c in (8, 16):
        depthwise_case(rng, sweep, f"dw3x3_shift_ends_c{c}_{len(sweep)}", c, (3, 3), hw=(6, 5),
                       shifts=(0, -1, -30, -31))
    # the DSP 3x3 assembly (16 output pixels or more): the pair loop's buffer with whole rows in the ring
    # (strides 1 and 2, odd and even widths, rows along either axis, the DS-CNN shape), rows past its 40
    # columns in runs, dilation along the run (rows refilled); dilation or stride 3 both ways (one window
    # per pass on the image, patches at the padding); shifts -1 and -21 (the ends of its output stage's
    # range) and -22 (the C loop), every activation range
    for i, (c, hw, st, dl) in enumerate(((8, (6, 45), (1, 1), [1, 1]), (12, (5, 44), (2, 2), [1, 1]),
                                         (4, (7, 9), (1, 2), [1, 1]), (16, (9, 7), (2, 1), [2, 1]),
                                         (8, (4, 38), (1, 1), [1, 1]), (20, (5, 37), (2, 1), [1, 1]),
                                         (64, (25, 5), (1, 1), [1, 1]), (8, (20, 3), (1, 1), [2, 1]),
                                         (8, (12, 12), (1, 1), [2, 2]), (12, (13, 14), (3, 3), [1, 1]))):
        depthwise_case(rng, sweep, f"dw3x3_buffer_{i}", c, (3, 3), hw=hw, dil=dl, stride_hw=st,
                       shifts=(-1, -21, -7) if i % 2 else (-1, -21, -22, -5))
    # the DSP channel-planar 3x3 windows (dwp: stride 1 along the view's rows, 8 windows or more; shorter rows
    # dw3_pairs): rows of 1 to 53 windows (every count of single windows after the passes of four), the
    # longest the ring takes and one past it, either axis, a vertical stride, odd channel counts (the last
    # channels elsewhere), every activation range
    for i, (c, hw, st) in enumerate(((4, (6, 4), (1, 1)), (8, (7, 5), (1, 1)), (5, (8, 3), (1, 1)),
                                     (12, (9, 4), (2, 1)), (4, (4, 10), (1, 1)), (16, (5, 11), (1, 2)),
                                     (7, (13, 6), (1, 1)), (8, (30, 2), (1, 1)), (4, (51, 3), (1, 1)),
                                     (4, (52, 3), (1, 1)), (8, (53, 4), (1, 1)), (4, (55, 3), (1, 1)),
                                     (9, (3, 56), (1, 1)), (4, (2, 17), (1, 1)), (4, (18, 18), (2, 1)),
                                     (6, (16, 5), (1, 1)))):
        depthwise_case(rng, sweep, f"dw3x3_planar_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=st,
                       shifts=(-1, -21, -6, -13))
    # dwp's rings in the planned scratch (mf_scratch_depthwise_conv2d_s8_dwp): none or 4 bytes short of them,
    # dw3_buffered instead (the same bytes)
    for i, (c, hw, short) in enumerate(((8, (6, 27), 0), (4, (30, 5), 4), (8, (5, 53), 4), (12, (12, 9), 4))):
        depthwise_case(rng, sweep, f"dw3x3_planar_noring_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=(1, 1),
                       shifts=(-1, -21, -6, -13), scratch=bool(short), short=short)
    # (drawn after the cases above, which keep their draws) the channel-planar windows at stride 2 along the
    # rows (dwp2: 19 to 27 windows here, 12 to 18 below): odd and even widths (the right padding read or not),
    # padding 0 to 2, rows along either axis, a vertical stride of 1 or 2, odd channel counts, the widest row (27
    # windows) and one past it, a group whose output stage is not the table's; then dwp2's rings short
    for i, (c, hw, st, pd) in enumerate(((4, (5, 40), (1, 2), (1, 1)), (8, (7, 41), (2, 2), (1, 1)),
                                         (5, (6, 53), (1, 2), (0, 1)), (4, (4, 55), (1, 2), (1, 1)),
                                         (8, (45, 6), (2, 1), (1, 1)), (12, (9, 42), (2, 2), (2, 0)),
                                         (7, (5, 39), (1, 2), (0, 2)), (16, (47, 9), (2, 2), (1, 1)),
                                         (8, (11, 48), (2, 2), (2, 2)), (4, (3, 54), (1, 2), (1, 0)))):
        depthwise_case(rng, sweep, f"dw3x3_planar2_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=st, pad_hw=pd,
                       shifts=(-1, -21, -6, -13) if i != 7 else (-1, -22, -6, 0))
    for i, (c, hw, short) in enumerate(((8, (5, 45), 4), (4, (47, 5), 1))):
        depthwise_case(rng, sweep, f"dw3x3_planar2_noring_{i}", c, (3, 3), hw=hw, dil=[1, 1],
                       stride_hw=(1, 2) if hw[1] > hw[0] else (2, 1), pad_hw=(1, 1), shifts=(-1, -21, -6, -13),
                       short=short)
    # (drawn after the cases above) small maps (dw3_small: the whole padded map, at most 8 rows x 12 columns at
    # stride 1 across, in one buffer): MobileNet's 6 x 6 and 3 x 3 maps with padding 1 and 0, stride 2 to 3 x 3
    # and smaller, odd and even widths, a vertical stride alone, padding 2, the buffer's last row and column and
    # one past each (the other paths), channel counts not a multiple of 4, two images, a group whose output stage
    # is not the table's
    for i, (c, hw, st, pd, n) in enumerate(((12, (6, 6), (1, 1), (1, 1), 1), (13, (6, 6), (1, 1), (1, 1), 1),
                                            (8, (3, 3), (1, 1), (1, 1), 1), (7, (3, 3), (1, 1), (0, 0), 1),
                                            (8, (6, 6), (1, 1), (0, 0), 1), (16, (6, 6), (2, 2), (1, 1), 1),
                                            (6, (6, 6), (2, 2), (0, 0), 1), (9, (12, 12), (2, 2), (1, 1), 1),
                                            (8, (6, 10), (1, 1), (1, 1), 1), (8, (6, 11), (1, 1), (1, 1), 1),
                                            (8, (7, 6), (1, 1), (1, 1), 1), (4, (5, 9), (1, 2), (1, 1), 1),
                                            (12, (6, 4), (2, 1), (1, 2), 1), (8, (6, 6), (1, 1), (1, 1), 2),
                                            (5, (4, 5), (1, 1), (2, 2), 1), (12, (3, 3), (1, 1), (1, 1), 2),
                                            # dwv's row pairs: an odd last row, rows of two windows, padding 2
                                            (8, (5, 6), (1, 1), (1, 1), 1), (4, (6, 5), (1, 1), (1, 1), 2),
                                            (8, (4, 6), (1, 1), (2, 1), 1), (8, (4, 2), (1, 1), (1, 1), 1))):
        depthwise_case(rng, sweep, f"dw3x3_small_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=st, pad_hw=pd,
                       batch=n, shifts=(-1, -21, -6, -13) if i != 3 else (-1, -22, -6, 0))
    # (drawn after the cases above) dw3_small's map of 13 x 13 words at stride 2 across (MobileNet's 12 x 12 to
    # 6 x 6): the largest map and one past it each way, padding 0 to 2, a vertical stride of 1, odd widths,
    # channel tails, two images, groups whose output stage is not the table's between groups that take it (the
    # padding written once for all groups)
    for i, (c, hw, st, pd, n) in enumerate(((16, (12, 12), (2, 2), (1, 1), 1), (8, (12, 12), (2, 2), (0, 0), 1),
                                            (9, (11, 13), (2, 2), (1, 1), 2), (12, (14, 12), (2, 2), (1, 1), 1),
                                            (8, (12, 14), (2, 2), (1, 1), 1), (8, (11, 12), (1, 2), (0, 1), 1),
                                            (8, (12, 12), (1, 2), (1, 1), 1), (13, (10, 9), (2, 2), (2, 2), 1),
                                            (20, (12, 12), (2, 2), (1, 1), 1), (24, (6, 6), (2, 2), (1, 1), 2))):
        depthwise_case(rng, sweep, f"dw3x3_small13_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=st, pad_hw=pd,
                       batch=n, shifts=(-1, -21, -6, -13) if i < 8 else (-1, -22, -6, -21))
    # (drawn after the cases above) dwp2 from 12 windows a row (DWP2_MIN): MobileNet's 24 x 24 to 12 x 12, rows of 12
    # to 18 windows either axis, odd and even widths, padding 0 to 2, and one window short of the path (dw3_buffered)
    for i, (c, hw, st, pd) in enumerate(((8, (24, 24), (2, 2), (1, 1)), (4, (5, 25), (1, 2), (1, 1)),
                                         (12, (7, 30), (2, 2), (0, 2)), (8, (35, 6), (2, 1), (1, 1)),
                                         (5, (6, 27), (1, 2), (2, 0)), (8, (5, 22), (1, 2), (1, 1)))):
        depthwise_case(rng, sweep, f"dw3x3_planar2_short_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=st, pad_hw=pd,
                       shifts=(-1, -21, -6, -13))
    # (drawn after the cases above) rounding ties of the DSP 3x3 output stages, whose sign term (the -1 of a
    # negative product's rounding) the random cases never decide (their outputs saturate or miss the ties):
    # dw3_run (one window a pass: dilation 2), dw3_pairs (dw3_buffered: no scratch for the rings), dwp, dwp2,
    # dwv's row pairs, dw3_small (dw3s_pairs, stride 2)
    ties = ((8, (9, 9), (1, 1), [2, 2], True), (8, (6, 27), (1, 1), [1, 1], False), (8, (7, 12), (1, 1), [1, 1], True),
            (8, (7, 41), (2, 2), [1, 1], True), (8, (5, 6), (1, 1), [1, 1], True), (16, (12, 12), (2, 2), [1, 1], True))
    for i, (c, hw, st, dl, scratch) in enumerate(ties):
        depthwise_tie_case(rng, sweep, f"dw3x3_ties_c{c}_{i}", c, hw, st, dl, scratch)
    # (drawn after the cases above) dw3_rows: a group's output rows in one asm call, a row's odd last window in it
    # (no pairs when a row is one window): random small maps (dw3_small's, and dw3_buffered's rows where the op
    # has no scratch) of 1 to 7 windows a row, strides 1 and 2, padding 0 to 2, one or two images, channel tails;
    # every third case a bias at dw_bias_small's limit in one group (that group the general output stage, the
    # others the table)
    for i in range(18):
        c = int(rng.choice((4, 8, 12, 13, 16)))
        st = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pd = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        hw = (int(rng.integers(max(1, 3 - 2 * pd[0]), 10)), int(rng.integers(max(1, 3 - 2 * pd[1]), 15)))
        depthwise_case(rng, sweep, f"dw3x3_rows_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=st, pad_hw=pd,
                       batch=1 + i % 2, scratch=i % 4 != 3, shifts=(-1, -21, -6, -13), big_bias=i % 3 == 2)
    # (drawn after the cases above) dwp's ring fill (mf_dwp_fill_in: the inside column pairs two an iteration, an odd
    # pair first): random rows of 8 to 53 windows at stride 1 and 12 to 27 at stride 2 along them, either axis,
    # padding 0 to 2 (odd and even counts of inside pairs), vertical strides 1 and 2, channel tails
    for i in range(10):
        c = int(rng.choice((4, 8, 5, 12)))
        s2 = i % 3 == 2
        pd = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        ow = int(rng.integers(12, 28)) if s2 else int(rng.integers(8, 54))
        w = 2 * (ow - 1) + 3 - 2 * pd[1] if s2 else ow + 2 - 2 * pd[1]
        h = int(rng.integers(max(3 - 2 * pd[0], 1), 7))
        st = (int(rng.integers(1, 3)), 2 if s2 else 1)
        hw, st, pd = ((h, w), st, pd) if i % 2 else ((w, h), st[::-1], pd[::-1])
        depthwise_case(rng, sweep, f"dw3x3_planar_fill_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=st, pad_hw=pd,
                       shifts=(-1, -21, -6, -13))
    # (drawn after the cases above) dwv3: 3 x 3 outputs at stride 1 on dwv's maps (MobileNet's 3 x 3 x 256): padding
    # 0, 1 and 2 (5 x 5, 3 x 3, 1 x 1 inputs) and mixed, channel tails, two images, every activation range, a bias at
    # dw_bias_small's limit in one group (that group and the next ones the other paths)
    for i, (c, hw, pd, n) in enumerate(((8, (3, 3), (1, 1), 1), (12, (5, 5), (0, 0), 1), (4, (1, 1), (2, 2), 1),
                                        (13, (3, 5), (1, 0), 2), (7, (5, 1), (0, 2), 1), (16, (3, 3), (1, 1), 2),
                                        (24, (3, 3), (1, 1), 1), (9, (1, 3), (2, 1), 1))):
        depthwise_case(rng, sweep, f"dw3x3_dwv3_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=(1, 1), pad_hw=pd,
                       batch=n, shifts=(-1, -21, -6, -13), big_bias=i == 6)
    # (drawn after the cases above) dwv3s2: 3 x 3 outputs at stride 2 on dwv's maps (MobileNet's 6 x 6 x 128 to 3 x 3):
    # padding 0 to 2 and mixed, inputs the windows read to the last row and column or one short of them (the map's
    # last row and column, 7 and 8 rows), channel tails, two images, every activation range, a bias at
    # dw_bias_small's limit in one group; then rounding ties of dwv3 and dwv3s2
    for i, (c, hw, pd, n) in enumerate(((8, (6, 6), (1, 1), 1), (12, (5, 5), (1, 1), 1), (4, (7, 8), (0, 0), 1),
                                        (13, (3, 4), (2, 2), 2), (7, (6, 7), (1, 0), 1), (16, (4, 8), (2, 0), 2),
                                        (24, (6, 6), (1, 1), 1), (9, (8, 5), (0, 1), 1))):
        depthwise_case(rng, sweep, f"dw3x3_dwv3s2_{i}", c, (3, 3), hw=hw, dil=[1, 1], stride_hw=(2, 2), pad_hw=pd,
                       batch=n, shifts=(-1, -21, -6, -13), big_bias=i == 6)
    depthwise_tie_case(rng, sweep, "dw3x3_ties_dwv3", 8, (3, 3), (1, 1), [1, 1], True)
    depthwise_tie_case(rng, sweep, "dw3x3_ties_dwv3s2", 8, (6, 6), (2, 2), [1, 1], True)
    return sweep


def depthwise_tie_case(rng, sweep: BoardSweep, case: str, channels: int, hw: tuple[int, int], stride: tuple[int, int],
                       dil: list[int], scratch: bool) -> None:
    """A 3x3 depthwise case on rounding ties (padding 1, per-channel, a bias, the full clamp, input offset 0):
    multiplier 2^30 (the doubling high multiply halves the sum, a tie at every odd one) and shifts -1 and -2,
    weights in [-1, 1] and inputs in [-4, 4] keeping the outputs off the clamp."""
    oh, ow = conv_output_hw(hw, (3, 3), list(stride), [1, 1], dil)
    consts = [const("w", rng.integers(-1, 2, size=(1, 3, 3, channels)).astype(np.int8)),
              const("b", rng.integers(-40, 41, size=channels).astype(np.int32)),
              const("m", np.full(channels, 1 << 30, np.int32)),
              const("s", rng.choice((-1, -2), size=channels).astype(np.int8))]
    attrs = {"input_offset": 0, "output_offset": int(rng.integers(-20, 21)), "stride": list(stride),
             "padding": [1, 1], "dilation": dil, "depth_multiplier": 1, "act_min": -128, "act_max": 127}
    x = act("x", (1, *hw, channels))
    sweep.add(case, "depthwise_conv2d_s8", attrs, [(x, rng.integers(-4, 5, size=x.shape).astype(np.int8))],
              [act("y", (1, oh, ow, channels))], consts, op_inputs=["x", "w", "b", "m", "s"], scratch=scratch)


def in_place_case(rng, sweep: BoardSweep, case: str, channels: int, hw: tuple[int, int], stride: tuple[int, int],
                  pad: tuple[int, int], shifts: tuple[int, ...] = (-1, -21, -6, -13), short: int = 0,
                  wide: bool = True) -> None:
    """A 3x3 depthwise case written over its input (``Op.in_place``, as plan.choose_in_place marks it) with the
    scratch of both in-place paths: the DSP channel-planar path's rings as cortex-m4 plans them for the channels
    rounded up to 4 (less ``short`` bytes), at least the portable in-place path's channel buffer (Ho x Wo).
    ``wide``: int8's whole activation range (a narrow drawn one can clamp most outputs to one value)."""
    depthwise_case(rng, sweep, case, channels, (3, 3), hw=hw, dil=[1, 1], stride_hw=stride, pad_hw=pad, batch=1,
                   shifts=shifts)
    op = sweep.ops[-1]
    if wide:
        op.attrs.update(act_min=-128, act_max=127)
    _, oh, ow, _ = sweep.tensors[op.outputs[0]].shape
    c4 = (channels + 3) // 4 * 4
    ring = kernel_scratch_bytes("depthwise_conv2d_s8", (1, 3, 3, c4), "cortex-m4", (1, oh, ow, c4), op.attrs)
    scratch = max(ring - short, (oh * ow + 15) // 16 * 16)
    sweep.ops[-1] = replace(op, in_place=True, scratch_bytes=scratch, debug={"case": case, "scratch": "keep"})


def depthwise_in_place_sweep(seed: int) -> BoardSweep:
    """In-place depthwise (TinyEngine's; plan.choose_in_place) where the DSP cores run the channel-planar path
    over the input (depthwise_conv2d_s8.c dw_dsp_in_place) and where they do not (the portable in-place kernel):
    DS-CNN's shape, rows along either axis, valid padding (an output smaller than the input: rows along the
    image's rows take dwp, along its columns the portable kernel), padding 2 across the rows with stride 2, a
    vertical stride, the longest ring rows and one past, channel counts not a multiple of 4 (the last channels
    portable), groups whose output stage is not the table's (shift 0 or -22: those four channels portable),
    the rings' scratch one byte short (all portable); then random legal geometries."""
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    fixed = ((64, (25, 5), (1, 1), (1, 1)), (8, (5, 25), (1, 1), (1, 1)), (8, (6, 20), (1, 1), (0, 0)),
             (8, (20, 6), (1, 1), (0, 0)), (12, (9, 12), (2, 1), (1, 1)), (8, (9, 10), (2, 1), (2, 1)),
             (7, (13, 9), (1, 1), (1, 1)), (13, (9, 13), (1, 1), (1, 1)), (4, (53, 3), (1, 1), (1, 1)),
             (4, (3, 54), (1, 1), (1, 1)), (8, (8, 6), (1, 1), (1, 1)), (8, (10, 12), (1, 1), (0, 1)),
             (8, (12, 10), (1, 1), (1, 0)), (8, (10, 14), (1, 1), (1, 0)), (12, (16, 16), (1, 1), (1, 1)),
             (20, (11, 9), (1, 2), (1, 1)), (8, (9, 45), (2, 2), (1, 1)), (12, (6, 50), (1, 2), (1, 1)),
             (8, (45, 9), (2, 2), (1, 1)), (5, (7, 43), (1, 2), (0, 1)))
    for i, (c, hw, st, pd) in enumerate(fixed):
        in_place_case(rng, sweep, f"dw_in_place_{i}", c, hw, st, pd)
    in_place_case(rng, sweep, "dw_in_place_shift_ends", 16, (25, 5), (1, 1), (1, 1), shifts=(-1, -21, -22, 0))
    in_place_case(rng, sweep, "dw_in_place_ring_short", 8, (25, 5), (1, 1), (1, 1), short=1)
    in_place_case(rng, sweep, "dw_in_place_ring_short_rows", 8, (5, 25), (1, 1), (1, 1), short=1)
    for i in range(16):
        while True:
            c = int(rng.choice((4, 5, 8, 12, 16, 24, 3)))
            hw = (int(rng.integers(3, 30)), int(rng.integers(3, 30)))
            st = ((1, 1), (1, 1), (2, 1), (1, 2))[int(rng.integers(0, 4))]
            pd = (int(rng.integers(0, 2)), int(rng.integers(0, 2)))
            oh, ow = conv_output_hw(hw, (3, 3), list(st), list(pd), [1, 1])
            if oh >= 1 and ow >= 1 and oh * ow <= hw[0] * hw[1]:
                break
        in_place_case(rng, sweep, f"dw_in_place_rand_{i}", c, hw, st, pd, wide=False)
    return sweep


def add_mul_attrs(rng, kind: str) -> dict:
    lo, hi = act_range(rng)
    attrs = {"a_offset": int(rng.integers(-127, 129)), "b_offset": int(rng.integers(-127, 129)),
             "output_offset": int(rng.integers(-128, 128)), "act_min": lo, "act_max": hi}
    if kind == "add_s8":
        if rng.random() < 0.7:
            params = add_quant_params(*(10.0 ** rng.uniform(-3, 0, size=3)))
        else:
            params = {"left_shift": int(rng.integers(0, 31))}
            for key in ("a", "b", "output"):
                params[f"{key}_multiplier"] = int(rng.integers(-(1 << 31), 1 << 31))
                params[f"{key}_shift"] = int(rng.integers(-31, 31))
            if rng.random() < 0.3:
                params["output_multiplier"] = -(1 << 31)
    else:
        if rng.random() < 0.7:
            params = {"output_multiplier": int(rng.integers(1 << 30, (1 << 31) - 1)),
                      "output_shift": int(rng.integers(-20, -5))}
        else:
            params = {"output_multiplier": int(rng.integers(-(1 << 31), 1 << 31)),
                      "output_shift": int(rng.integers(-31, 31))}
            if rng.random() < 0.3:
                params["output_multiplier"] = -(1 << 31)
    return {**attrs, **params}


def add_variants(rng, sweep: BoardSweep) -> None:
    """add_s8's MVE asm loop on every shift pattern it takes (input shifts < 0 or 0, output shift < 0),
    and the patterns it leaves to the C loop (a positive shift)."""
    for a_shift, b_shift, out_shift in ((-1, 0, -19), (0, -2, -18), (-3, -1, -20), (0, 0, -17), (2, -1, -19),
                                        (-1, 0, 1), (-31, 0, -31)):
        for numel in (1, 5, 16, 67):
            lo, hi = act_range(rng)
            attrs = {"a_offset": int(rng.integers(-127, 129)), "b_offset": int(rng.integers(-127, 129)),
                     "output_offset": int(rng.integers(-128, 128)), "act_min": lo, "act_max": hi, "left_shift": 20,
                     "a_multiplier": int(rng.integers(1 << 30, (1 << 31) - 1)), "a_shift": a_shift,
                     "b_multiplier": int(rng.integers(1 << 30, (1 << 31) - 1)), "b_shift": b_shift,
                     "output_multiplier": int(rng.integers(1 << 30, (1 << 31) - 1)), "output_shift": out_shift}
            a, b = act("a", (1, numel)), act("b", (1, numel))
            sweep.add(f"add_shifts_{a_shift}_{b_shift}_{out_shift}_{numel}", "add_s8", attrs,
                      [(a, int8(rng, a.shape)), (b, int8(rng, b.shape))], [act("y", (1, numel))])


def add_residual_sweep(seed: int) -> BoardSweep:
    """add_s8's DSP residual-add loop (add_dsp4: left shift 20, one input of multiplier 2^30 and shift 0, the
    other's shift < 0, output shift < 0, activation range [-128, 127]) and the parameters just outside it:
    either input the general one, lengths around its 4-element passes, the ends of the multipliers (2^10 + 1,
    2^31 - 1; the output's 2^30 + 1) and shifts (-1 .. -24, the bounds its int32 sums allow, and -25),
    output offset -128 (the loop without the sign term) and any other, extreme input offsets and inputs
    (every byte -128 or 127: the saturation at both ends)."""
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    lengths = (1, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 67, 258, 1027)
    for i in range(70):
        numel = lengths[i % len(lengths)]
        inside = i < 50  # the loop's parameters; then their ends and just past them
        n_g = int(rng.choice([1, 1, 2, 3, 4, 6, 9] if inside else [1, 12, 20, 24, 25]))
        n_o = int(rng.choice([1, 2, 17, 18, 19, 22] if inside else [1, 19, 24, 25]))
        m_g = int(rng.choice([(1 << 10) + 1, (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31))] +
                             ([] if inside else [1 << 10, 1000])))
        m_o = int(rng.choice([(1 << 30) + 1, (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31))] +
                             ([] if inside else [1 << 30])))
        offs = [int(rng.choice([-127, 128, int(rng.integers(-127, 129))])) for _ in range(2)]
        out_off = int(rng.choice([-128, -128, 127, int(rng.integers(-128, 128))]))
        lo, hi = (-128, 127) if inside or i % 3 else act_range(rng)
        general, exact = (("a", "b") if i % 2 else ("b", "a"))
        attrs = {"a_offset": offs[0], "b_offset": offs[1], "output_offset": out_off, "act_min": lo, "act_max": hi,
                 "left_shift": 20, f"{general}_multiplier": m_g, f"{general}_shift": -n_g,
                 f"{exact}_multiplier": 1 << 30, f"{exact}_shift": 0, "output_multiplier": m_o,
                 "output_shift": -n_o}
        if not inside and i % 5 == 0:  # both exact, or a left shift of 19: the older loops
            attrs.update({f"{general}_multiplier": 1 << 30, f"{general}_shift": 0} if i % 10 == 0 else
                         {"left_shift": 19})
        shape = (1, numel)
        xs = [int8(rng, shape) for _ in range(2)]
        if i % 7 == 3:
            xs = [np.full(shape, v, np.int8) for v in ((-128, 127), (127, -128), (127, 127))[i % 3]]
        sweep.add(f"add_residual_{i}_{numel}", "add_s8", attrs, [(act("a", shape), xs[0]), (act("b", shape), xs[1])],
                  [act("y", shape)])
    # every rounding step visible in the output: the exact input all at its zero point (its scaled value 0),
    # the general one's shift large (its scaled values small), the output's shift small, so that a scaled
    # value off by one changes the output byte; multipliers just above 2^30 put many values on exact ties
    # (the [X < 0] and [S < 0] terms decide them)
    for i in range(24):
        tie = i % 3 != 2
        numel = int(rng.integers(1, 8) if i % 4 == 3 else rng.integers(8, 70))
        general, exact = (("a", "b") if i % 2 else ("b", "a"))
        out_off = int(rng.integers(-20, 21)) if tie else int(rng.choice([-128, int(rng.integers(-128, 128))]))
        attrs = {f"{general}_offset": int(rng.integers(-127, 129)), f"{exact}_offset": 0,
                 "output_offset": out_off, "act_min": -128,
                 "act_max": 127, "left_shift": 20, f"{exact}_multiplier": 1 << 30, f"{exact}_shift": 0,
                 f"{general}_multiplier": (1 << 30) + int(rng.integers(1, 4)) if tie else
                 int(rng.integers((1 << 10) + 1, 1 << 31)),
                 f"{general}_shift": -int(rng.integers(20, 22) if tie else rng.integers(12, 25)),
                 "output_multiplier": (1 << 30) + int(rng.integers(1, 4)) if tie else
                 int(rng.integers((1 << 30) + 1, 1 << 31)),
                 "output_shift": -int(rng.integers(1, 3))}
        shape = (1, numel)
        xs = {general: int8(rng, shape), exact: np.zeros(shape, np.int8)}
        sweep.add(f"add_residual_fine_{i}_{numel}", "add_s8", attrs,
                  [(act("a", shape), xs["a"]), (act("b", shape), xs["b"])], [act("y", shape)])
    # the DSP cores' table path (add_tab: 512 elements and more): its loops for an output shift of 18 and 19
    # without the sign term (output offset -128) and the one for any shift, tails of 0-3 elements, either input
    # the general one; exact ties (general shift 1 and multipliers just above 2^30: its scaled values odd
    # multiples of 2^18, half an output step at shift 18) decided by the [X < 0] and [S < 0] terms; sums S
    # odd multiples of 2^17 (general multiplier 2^30, shift -2) under an output multiplier of 2^31 - 1 (2 S m_o
    # just below S 2^32: SMMLAR's rounding puts the result on the tie)
    for i in range(36):
        numel = (512, 513, 514, 515, 516, 519, 1027, 2050)[i % 8]
        n_o = (18, 19, 18, 19, 17, 20, 1, 24, 22)[i % 9]
        tie, below = i % 4 == 1, i % 4 == 3
        general, exact = (("a", "b") if i % 2 else ("b", "a"))
        out_off = -128 if i % 3 else int(rng.choice([127, int(rng.integers(-128, 128))]))
        attrs = {f"{general}_offset": int(rng.choice([-127, 128, int(rng.integers(-127, 129))])),
                 f"{exact}_offset": int(rng.choice([-127, 128, int(rng.integers(-127, 129))])),
                 "output_offset": out_off, "act_min": -128, "act_max": 127, "left_shift": 20,
                 f"{exact}_multiplier": 1 << 30, f"{exact}_shift": 0,
                 f"{general}_multiplier": (1 << 30) + int(rng.integers(1, 4)) if tie else 1 << 30 if below else
                 int(rng.choice([(1 << 10) + 1, (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31))])),
                 f"{general}_shift": -1 if tie else -2 if below else -int(rng.choice([1, 2, 3, 9, 24])),
                 "output_multiplier": (1 << 30) + int(rng.integers(1, 4)) if tie else (1 << 31) - 1 if below else
                 int(rng.choice([(1 << 30) + 1, (1 << 31) - 1, int(rng.integers(1 << 30, 1 << 31))])),
                 "output_shift": -n_o}
        shape = (1, numel) if i % 5 else (1, 2, numel // 2, 1) if numel % 2 == 0 else (1, numel)
        xs = [int8(rng, shape) for _ in range(2)]
        if i % 7 == 3:
            xs = [np.full(shape, v, np.int8) for v in ((-128, 127), (127, -128), (127, 127))[i % 3]]
        sweep.add(f"add_residual_table_{i}_{numel}", "add_s8", attrs,
                  [(act("a", shape), xs[0]), (act("b", shape), xs[1])], [act("y", shape)])
    return sweep


@pytest.mark.parametrize("target", ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "cortex-m3"))
def test_add_residual_loop_on_board(target):
    add_residual_sweep(seed=31).assert_same_on_board(target)


def test_add_residual_c_form_on_board():
    """add_dsp4's C form (the firmware built at -O0, without the asm loop) on the same sweep: the same bytes."""
    sweep = add_residual_sweep(seed=31)
    program = sweep.program("cortex-m4")
    graph = deserialize(program)
    got, _trace, _facts = firmware.run_on_qemu(program, sweep.values, "cortex-m4", graph=graph, build_flags=("-O0",))
    sweep._assert_same("cortex-m4 at -O0", execute(graph, sweep.values), got)


def elementwise_sweep(kind: str, seed: int) -> BoardSweep:
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    if kind == "add_s8":
        add_variants(rng, sweep)
    lengths = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 100, 257, 1024]
    for i, numel in enumerate(lengths * 3):
        shape = (1, numel) if i % 3 else (1, 2, 1, numel)
        a, b = act("a", shape), act("b", shape)
        sweep.add(f"{kind}_same_{numel}_{i}", kind, add_mul_attrs(rng, kind),
                  [(a, int8(rng, shape)), (b, int8(rng, shape))], [act("y", shape)])
    for i in range(30):  # broadcasting: the portable walker on every core
        rank = int(rng.integers(1, 5))
        full = [int(rng.integers(1, 6)) for _ in range(rank)]
        sa = tuple(d if rng.random() < 0.7 else 1 for d in full)
        sb = tuple(d if rng.random() < 0.7 else 1 for d in full)
        if rng.random() < 0.3:
            sb = sb[int(rng.integers(0, rank)):]
        out = tuple(np.broadcast_shapes(sa, sb))
        sweep.add(f"{kind}_bcast_{i}", kind, add_mul_attrs(rng, kind),
                  [(act("a", sa), int8(rng, sa)), (act("b", sb), int8(rng, sb))], [act("y", out)])
    return sweep


def avgpool_sweep(seed: int, kind: str = "avgpool_s8") -> BoardSweep:
    """avgpool_s8 (or maxpool_s8): windows of at most 255 inputs (the DSP and MVE int16 sums) and more,
    channel counts around 4, 8 and 16 (the DSP words, the MVE vectors and their tails), padding (fewer
    inputs in the edge windows), strides, global pools."""
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    for i in range(40):
        c = int(rng.choice([1, 3, 4, 7, 8, 9, 16, 17, 33, 64]))
        if i < 6:  # global: 25 x 5 (DS-CNN), 8 x 8, and windows past 255 inputs
            h, w = [(25, 5), (8, 8), (16, 16), (17, 16), (3, 3), (1, 1)][i]
            k, st, pd = [h, w], [h, w], [0, 0]
        else:
            h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
            k = [int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))]
            st = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
            pd = [int(rng.integers(0, (k[0] + 1) // 2)), int(rng.integers(0, (k[1] + 1) // 2))]
        oh, ow = (h + 2 * pd[0] - k[0]) // st[0] + 1, (w + 2 * pd[1] - k[1]) // st[1] + 1
        lo, hi = act_range(rng)
        attrs = {"kernel": k, "stride": st, "padding": pd, "act_min": lo, "act_max": hi, "output_hw": [oh, ow]}
        x = act("x", (1, h, w, c))
        sweep.add(f"{kind[:7]}_{h}x{w}_k{k[0]}x{k[1]}_c{c}_{i}", kind, attrs, [(x, int8(rng, x.shape))],
                  [act("y", (1, oh, ow, c))])
    return sweep


@pytest.mark.parametrize("target", BOARDS)
def test_avgpool_fast_path_on_board(target):
    sweep = avgpool_sweep(seed=14)
    sweep.assert_same_on_board(target)


@pytest.mark.parametrize("target", BOARDS)
def test_maxpool_fast_path_on_board(target):
    sweep = avgpool_sweep(seed=15, kind="maxpool_s8")
    sweep.assert_same_on_board(target)


@pytest.mark.parametrize("target", BOARDS)
def test_depthwise_fast_paths_on_board(target):
    sweep = depthwise_sweep(seed=11)
    assert len(sweep) > 100
    sweep.assert_same_on_board(target)


@pytest.mark.parametrize("target", ["cortex-m3", "cortex-m4", "cortex-m7"])
def test_depthwise_in_place_on_board(target):
    """Every case of the in-place sweep planned in place (its output at its input's offset) and equal to the
    host's out-of-place bytes: the DSP cores' channel-planar path over the input, and the portable in-place
    kernel (cortex-m3, and the DSP cores' shapes the channel-planar path does not take)."""
    sweep = depthwise_in_place_sweep(seed=21)
    graph = deserialize(sweep.program(target))
    assert all(graph.tensors[op.outputs[0]].offset == graph.tensors[op.inputs[0]].offset for op in graph.ops)
    sweep.assert_same_on_board(target)


def test_depthwise_fast_paths_on_cortex_m7():
    """The DSP paths (the channel-planar 3x3 windows' assembly included) as cortex-m7's build compiles them."""
    depthwise_sweep(seed=11).assert_same_on_board("cortex-m7")


def test_depthwise_dsp_c_form_on_board():
    """The DSP 3x3 path's C form (dw3_run / dw3_pairs without their assembly: a firmware built at -O0)
    on the same sweep: the same bytes."""
    sweep = depthwise_sweep(seed=11)
    program = sweep.program("cortex-m4")
    graph = deserialize(program)
    got, _trace, _facts = firmware.run_on_qemu(program, sweep.values, "cortex-m4", graph=graph, build_flags=("-O0",))
    sweep._assert_same("cortex-m4 at -O0", execute(graph, sweep.values), got)


def test_scalar_paths_on_host_c(tmp_path):
    """The cortex-m3 programs of the sweeps on the host C runtime built with the optimized scalar paths
    (their C form; the board runs their assembly), also under ASan and UBSan."""
    depthwise_sweep(seed=11).assert_same_on_host_c("cortex-m3", sanitize_dir=tmp_path)
    for kind in ("add_s8", "mul_s8"):
        elementwise_sweep(kind, seed=12 + (kind == "mul_s8")).assert_same_on_host_c("cortex-m3", sanitize_dir=tmp_path)


@pytest.mark.parametrize("target", BOARDS)
@pytest.mark.parametrize("kind", ["add_s8", "mul_s8"])
def test_add_mul_fast_paths_on_board(kind, target):
    sweep = elementwise_sweep(kind, seed=12 + (kind == "mul_s8"))
    sweep.assert_same_on_board(target)


def test_dwp_ring_scratch_is_planned_per_layer():
    """The DSP targets plan the channel-planar 3x3 path's rings as scratch sized by the layer's view rows
    (kinds/scratch.py depthwise_conv2d_s8_dwp): KWS's 25 x 5 outputs take 2 x 28 columns of each 56-halfword
    ring row (672 bytes), rows of 53 windows the most (1344), none where dwp does not run (no host run here: the
    board sweeps above run the kernel on these sizes, and on 4 bytes less)."""
    dw = {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "depth_multiplier": 1}
    w = (1, 3, 3, 64)
    for target in ("cortex-m4", "cortex-m7", "cortex-m33"):
        assert kernel_scratch_bytes("depthwise_conv2d_s8", w, target, (1, 25, 5, 64), dw) == 672
    assert kernel_scratch_bytes("depthwise_conv2d_s8", w, "cortex-m4", (1, 5, 53, 64), dw) == 1344
    assert kernel_scratch_bytes("depthwise_conv2d_s8", w, "cortex-m4", (1, 12, 12, 64), dw) == 592
    assert kernel_scratch_bytes("depthwise_conv2d_s8", w, "cortex-m4", (1, 48, 48, 8), dw) == 1336
    s2 = {**dw, "stride": [2, 1]}
    assert kernel_scratch_bytes("depthwise_conv2d_s8", w, "cortex-m4", (1, 25, 5, 64), s2) == 1336  # 52 columns
    assert kernel_scratch_bytes("depthwise_conv2d_s8", w, "cortex-m4", (1, 5, 27, 64), {**dw, "stride": [1, 2]}) == 1344
    assert kernel_scratch_bytes("depthwise_conv2d_s8", w, "cortex-m4", (1, 12, 5, 64), s2) > 0  # DWP2_MIN: 12
    for out, attrs in (((1, 6, 6, 64), dw), ((1, 5, 54, 64), dw), ((1, 11, 5, 64), s2), ((1, 28, 5, 64), s2),
                       ((1, 25, 5, 64), {**dw, "dilation": [1, 2]})):
        assert kernel_scratch_bytes("depthwise_conv2d_s8", w, "cortex-m4", out, attrs) == 0, (out, attrs)
    assert kernel_scratch_bytes("depthwise_conv2d_s8", (1, 3, 3, 62), "cortex-m4", (1, 25, 5, 62), dw) == 0
    assert kernel_scratch_bytes("depthwise_conv2d_s8", (1, 5, 5, 64), "cortex-m4", (1, 25, 5, 64), dw) == 0


def test_dwp_in_place_where_it_costs_no_speed():
    """DS-CNN on the DSP cores: its four depthwise layers are written over their input by default
    (plan.choose_free_in_place: their in-place kernel is the channel-planar path, ir.depthwise_in_place_fast),
    so the rings no longer sit beside each layer's input and output: the arena is no larger than cortex-m55's
    (no rings, nothing in place), and re-planned out of place it would be. The predicate: only on the DSP
    path, where the rings are planned, rows along the image's columns only at the input's size."""
    from mcuforge.ir import depthwise_in_place_fast
    from mcuforge.plan import plan_arena

    from conftest import compiled

    _, _, m55 = compiled("ds_cnn")
    assert not any(op.in_place for op in m55.graph.ops)
    for target in ("cortex-m4", "cortex-m7"):
        _, _, prog = compiled("ds_cnn", target)
        dw = [op for op in prog.graph.ops if op.kind == "depthwise_conv2d_s8"]
        assert len(dw) == 4 and all(op.in_place for op in dw) and prog.arena_bytes <= m55.arena_bytes
        for op in dw:
            op.in_place = False
        assert plan_arena(prog.graph) > m55.arena_bytes
    dw = {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "depth_multiplier": 1}
    w, x = (1, 3, 3, 64), (1, 25, 5, 64)
    assert depthwise_in_place_fast(w, x, x, dw, "cortex-m4") and depthwise_in_place_fast(w, x, x, dw, "cortex-m33")
    assert not depthwise_in_place_fast(w, x, x, dw, "cortex-m55") and not depthwise_in_place_fast(w, x, x, dw,
                                                                                                   "cortex-m3")
    assert not depthwise_in_place_fast((1, 3, 3, 62), (1, 25, 5, 62), (1, 25, 5, 62), dw, "cortex-m4")
    valid = {**dw, "padding": [0, 0]}
    assert not depthwise_in_place_fast(w, (1, 27, 7, 64), (1, 25, 5, 64), valid, "cortex-m4")  # column rows
    assert depthwise_in_place_fast(w, (1, 7, 27, 64), (1, 5, 25, 64), valid, "cortex-m4")  # image rows
