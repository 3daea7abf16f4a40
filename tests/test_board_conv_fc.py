"""The optimized convolution, fully connected and dot product paths on the boards, against the host kernels.

cortex-m3 runs the scalar paths (mf_scalar.h), cortex-m4 the DSP paths, cortex-m55 the MVE paths
(csrc/kernels/conv2d_s8.c, fully_connected_s8.c, dot_s8.c); the host Python kernels equal the portable C
path bit for bit (tests/test_c_kernels.py), and the scalar paths' C form runs on the host too.
Random shapes hit every path and tail: conv2d_s8 through im2col (patch sizes around the 4- and 16-lane
widths, padding, strides, dilation, groups, odd filter and pixel counts, batches), the 1x1 path (strided,
grouped, and 1x1 with padding, which takes im2col), the few-input-channel first layers (one run per kernel
row), a conv without scratch (the portable path on the board, its dot product the DSP/MVE mf_dot_s8);
fully_connected_s8 with depths and output counts around the lane widths and several rows (input offset 0:
the lowering folds it into the bias where no tap is padding, and the MVE loops then skip the weight sums);
every bias / offset / requantization variant of the MVE rows loop, and its output-stage table's chunks of
64 filters (offsets folded into int32 biases); transposed convolution (its fast
paths: tests/test_board_matmul_tconv.py); per-tensor and per-channel requantization over the whole legal
range (INT32_MIN multipliers take the scalar requantization). All cases of a kind run in one program: one QEMU
boot per board.
"""

from __future__ import annotations

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_c_kernels import act, act_range, const, int8, requant_params

from mcuforge import firmware
from mcuforge.ir import Tensor
from mcuforge.kernels import conv_output_hw
from mcuforge.kernels.fc_pairs import S8_PAIRS, pack_pairs
from mcuforge.kinds.scratch import SCRATCH
from mcuforge.program import deserialize
from mcuforge.runtime import execute

BOARDS = ("cortex-m3", "cortex-m4", "cortex-m55")


def weighted_consts(rng, weight: np.ndarray, oc: int, bias_bits: int = 16, bias: bool | None = None,
                    per_channel: bool | None = None, shifts: tuple[int, ...] = ()) -> tuple[list, list[str]]:
    """Weights, bias (``bias`` None: 80 % of the cases) and requantization (``per_channel`` None: either;
    ``shifts``: the shifts drawn from these values)."""
    with_bias = rng.random() < 0.8 if bias is None else bias
    bias = rng.integers(-(1 << bias_bits), 1 << bias_bits, size=oc).astype(np.int32) if with_bias else None
    mult, shift = requant_params(rng, oc)
    if shifts:
        shift = rng.choice(shifts, size=len(shift)).astype(np.int8)
    if per_channel is not None and (len(mult) == oc) != per_channel:
        mult, shift = (np.resize(mult, oc), np.resize(shift, oc)) if per_channel else (mult[:1], shift[:1])
    consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else [])
    consts += [const("m", mult), const("s", shift)]
    return consts, ["x", "w", "b" if bias is not None else "", "m", "s"]


def offsets(rng, input_offset: int | None = None) -> dict:
    lo, hi = act_range(rng)
    in_off = int(rng.integers(-127, 129)) if input_offset is None else input_offset
    return {"input_offset": in_off, "output_offset": int(rng.integers(-128, 128)), "act_min": lo, "act_max": hi}


def conv_case(rng, sweep: BoardSweep, case: str, wc: int, kernel: tuple[int, int], groups: int = 1,
              oc_per_group: int | None = None, stride=None, pad=None, dil=None, hw=None, batch: int = 1,
              scratch: bool | int | dict[str, int] = True, input_offset: int | None = None, bias: bool | None = None,
              per_channel: bool | None = None, shifts: tuple[int, ...] = (), out_off: int | None = None,
              bias_bits: int = 16, mult_bits: int | None = None) -> None:
    """``out_off``: this output offset and the full int8 clamp (else both drawn); ``bias_bits``: the biases'
    range (31: the whole int32 range); ``mult_bits``: positive multipliers below 2^mult_bits (small ones keep the
    outputs of a shift of -1 off the clamp, where the output stages' rounding of negative sums shows)."""
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
    consts, names = weighted_consts(rng, int8(rng, (oc, *kernel, wc)), oc, bias_bits=bias_bits, bias=bias,
                                    per_channel=per_channel, shifts=shifts)
    if mult_bits is not None:  # consts: w, (b), m, s
        consts[-2] = const("m", rng.integers(1 << (mult_bits - 1), 1 << mult_bits, size=oc).astype(np.int32))
    o = offsets(rng, input_offset)
    if out_off is not None:
        o.update(output_offset=out_off, act_min=-128, act_max=127)
    attrs = {"input_offset": o["input_offset"], "output_offset": o["output_offset"], "stride": st, "padding": pd,
             "dilation": dl, "act_min": o["act_min"], "act_max": o["act_max"]}
    x = act("x", (batch, h, w, wc * groups))
    sweep.add(case, "conv2d_s8", attrs, [(x, int8(rng, x.shape))], [act("y", (batch, oh, ow, oc))], consts,
              op_inputs=names, scratch=scratch)


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
    # larger filter counts and patches (several matrix blocks; on the scalar path patches of more than 128
    # taps split into chunks)
    conv_case(rng, sweep, "deep_3x3", 32, (3, 3), oc_per_group=19, hw=(6, 5))
    for wc in (127, 128, 129, 256, 257):
        conv_case(rng, sweep, f"deep_pw_c{wc}", wc, (1, 1), pad=[0, 0], stride=[1, 1], dil=[1, 1], hw=(3, 3))
    # every variant of the MVE rows loop: input offset 0 (folded into the bias by the lowering) or not,
    # bias or none, per-channel or per-tensor requantization; 1x1 in place and im2col
    for in_off in (0, 37):
        for bias in (True, False):
            for per_channel in (True, False):
                for wc, kernel in ((16, (1, 1)), (5, (3, 3))):
                    conv_case(rng, sweep, f"variant_o{in_off}_b{bias:d}_pc{per_channel:d}_c{wc}_{len(sweep)}", wc,
                              kernel, pad=[0, 0], oc_per_group=int(rng.integers(1, 7)), input_offset=in_off, bias=bias,
                              per_channel=per_channel)
    for wc in (1, 3, 8, 17, 33, 64):  # offset 0: the lowering's 1x1 and unpadded layers
        conv_case(rng, sweep, f"folded_pw_c{wc}_{len(sweep)}", wc, (1, 1), pad=[0, 0], input_offset=0)
        conv_case(rng, sweep, f"folded_3x3_c{wc}_{len(sweep)}", wc, (3, 3), pad=[0, 0], input_offset=0)
    # the DSP 2 x 2 tile (depth a multiple of 8, per-channel requantization with a bias, the short
    # requantization): 2 and 4 groups of taps per loop iteration, odd filter and pixel counts, both clamps
    for wc, kernel in ((8, (1, 1)), (16, (1, 1)), (24, (1, 1)), (64, (1, 1)), (2, (2, 2)), (1, (10, 4))):
        for opg in (2, 5):
            conv_case(rng, sweep, f"tile_c{wc}_k{kernel[0]}x{kernel[1]}_o{opg}_{len(sweep)}", wc, kernel,
                      pad=[0, 0] if kernel == (1, 1) else None, oc_per_group=opg, bias=True, per_channel=True)
    # the tile's rounding at the ends of the shifts' range (0: none; -31: 2^30 added before the shift)
    for wc in (8, 16):
        conv_case(rng, sweep, f"tile_shift_ends_c{wc}_{len(sweep)}", wc, (1, 1), pad=[0, 0], oc_per_group=6,
                  bias=True, per_channel=True, shifts=(0, -1, -30, -31))
    # the tile's shorter output stage: every shift in [-22, -1] (its ends), and with one -23 (the other)
    for i, (wc, kernel) in enumerate(((8, (1, 1)), (16, (1, 1)), (64, (1, 1)), (24, (1, 1)), (1, (10, 4)),
                                      (64, (1, 1)), (32, (1, 1)), (8, (1, 1)))):
        conv_case(rng, sweep, f"tile_neg_shifts_c{wc}_{i}_{len(sweep)}", wc, kernel, pad=[0, 0], oc_per_group=4 + i,
                  hw=(12, 7), bias=True, per_channel=True, shifts=(-1, -22, -9) if i < 6 else (-1, -23, -9))
    # the tile rows in one asm block (full clamp, shifts in [-22, -1]): the output offset's ends, one and
    # several filter pairs, an odd filter count (the last filter in C), 2, 4, 10 and 16 groups of taps an
    # iteration (one and several iterations), odd pixels (the last one's copy: outputs to the staging patch
    # when the filters fit there, 64 of 64 taps; else the C loop, 9 of 8)
    for i, (wc, kernel, opg, off) in enumerate(((64, (1, 1), 64, -128), (64, (1, 1), 3, 127), (8, (1, 1), 2, 127),
                                                (24, (1, 1), 7, -128), (1, (10, 4), 9, 127), (16, (1, 1), 1, 0),
                                                (128, (1, 1), 4, 127), (120, (1, 1), 5, -128), (5, (2, 4), 6, 0),
                                                (8, (1, 1), 9, 127))):
        conv_case(rng, sweep, f"tile_rows_asm_c{wc}_{i}_{len(sweep)}", wc, kernel, pad=[0, 0], oc_per_group=opg,
                  hw=(5, 5) if kernel == (1, 1) else (13, 7), bias=True, per_channel=True, shifts=(-1, -22, -9),
                  out_off=off)
    # the DSP path's patches widened straight from the input rows (kernel rows of whole groups of 4,
    # windows inside the input; the padding's windows through im2col in the same run): vertical dilation,
    # strides, batches, an odd pixel count, an input offset of 0 and at its ends
    for i, (wc, kernel, st, dl, in_off) in enumerate(((4, (3, 3), [1, 2], [2, 1], None), (2, (2, 2), [2, 1], [1, 1], 0),
                                                      (1, (10, 4), [2, 2], [1, 1], -127),
                                                      (8, (1, 3), [1, 1], [3, 1], 128),
                                                      # kernel rows of whole groups of 16 (4 groups a step)
                                                      (16, (3, 3), [2, 1], [2, 1], -127),
                                                      (8, (2, 2), [1, 2], [1, 1], 0),
                                                      (32, (3, 3), [1, 1], [1, 1], 128))):
        conv_case(rng, sweep, f"widen_rows_c{wc}_{i}_{len(sweep)}", wc, kernel, stride=st, dil=dl, pad=[1, 1],
                  hw=(13, 9) if wc > 1 else (25, 9), batch=1 + i % 2, input_offset=in_off)
    few_channel_cases(rng, sweep)
    # the shallow pointwise path (conv2d_s8.c pw_run, cortex-m4: 1x1 without stride or padding, 8 or 16
    # channels, the tiles' output stage): even and odd filter counts (the last one in C), odd pixel counts (the
    # last pixel's outputs written twice), batches, the offsets' ends; and a per-tensor case (another path)
    for i, (wc, opg, hw) in enumerate(((8, 16, (5, 7)), (16, 32, (3, 3)), (8, 3, (1, 1)), (16, 5, (2, 5)),
                                       (8, 2, (4, 4)), (16, 9, (3, 7)))):
        conv_case(rng, sweep, f"pw_shallow_c{wc}_o{opg}_{i}_{len(sweep)}", wc, (1, 1), stride=[1, 1], pad=[0, 0],
                  dil=[1, 1], hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True,
                  shifts=(-1, -22, -7), out_off=(-128, 127, 0)[i % 3], input_offset=(-127, 128, 0, None)[i % 4])
    conv_case(rng, sweep, "pw_shallow_per_tensor", 8, (1, 1), stride=[1, 1], pad=[0, 0], dil=[1, 1], hw=(3, 5),
              oc_per_group=6, bias=True, per_channel=False, shifts=(-3,), out_off=5)
    # no scratch: the portable path, its dot product the optimized mf_dot_s8
    for wc in (3, 17, 20):
        conv_case(rng, sweep, f"no_scratch_c{wc}", wc, (3, 3), scratch=False)
    # the MVE output-stage table, 64 filters (MVE_TABLE) at a time: 65, 67 and 130 filters (a last chunk of
    # 1 and 3, two full chunks and 2) and exactly 64; input offsets with padding (the weights' sums folded
    # into the table's biases), biases over the whole int32 range (the fold wraps as the sums do),
    # per-tensor and per-channel, mixed-sign and all-negative shifts, groups, odd pixel counts
    for i, (wc, kernel, opg, groups, per_channel, shifts) in enumerate((
            (16, (3, 3), 65, 1, True, (-1, -9, -22)), (3, (1, 1), 130, 1, False, ()),
            (8, (3, 3), 67, 2, True, (2, -3, 0)), (5, (2, 2), 64, 1, False, ()))):
        conv_case(rng, sweep, f"table_chunks_c{wc}_o{opg}_{i}_{len(sweep)}", wc, kernel, groups=groups,
                  oc_per_group=opg, pad=[1, 0] if kernel == (1, 1) else [1, 1], stride=[1, 1], dil=[1, 1],
                  hw=(3, 5), input_offset=(-127, 128, 37, -5)[i], bias=True, per_channel=per_channel,
                  shifts=shifts, bias_bits=31)
    # the 3 x 2 pointwise tiles (conv2d_s8.c mf_pw3_rows32/64/128/256: three filters x two pixels at 32, 64, 128
    # and 256 taps, the 1 or 2 filters left to the 2 x 2 tiles and the C loop): one and many triples, 1 and 2
    # filters left, odd pixel counts (the last pixel's copy: its outputs written to out0 again, its triples by
    # mf_pw3s_rows, three filters x one pixel, with fewer or more filters than taps), stride 2, groups (each
    # group's filters from its own channel), batches, the offsets' ends
    for i, (wc, opg, hw, st, groups) in enumerate(((32, 3, (3, 3), [1, 1], 1), (32, 35, (3, 3), [1, 1], 1),
                                                   (64, 4, (3, 5), [1, 1], 1), (64, 8, (3, 4), [2, 1], 1),
                                                   (128, 5, (3, 3), [1, 1], 1), (128, 9, (2, 3), [1, 1], 2),
                                                   (256, 7, (3, 1), [1, 1], 1), (256, 6, (1, 3), [1, 1], 1),
                                                   (32, 64, (3, 3), [1, 1], 1), (64, 67, (1, 2), [1, 1], 1),
                                                   (128, 133, (1, 3), [1, 1], 1), (256, 7, (1, 1), [1, 1], 1))):
        conv_case(rng, sweep, f"pw3_c{wc}_o{opg}_g{groups}_{i}_{len(sweep)}", wc, (1, 1), groups=groups,
                  stride=st, pad=[0, 0], dil=[1, 1], hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True,
                  per_channel=True, shifts=(-1, -22, -9, -14), out_off=(-128, 127, 0)[i % 3],
                  input_offset=(-127, 128, 0, None)[i % 4])
    # the pointwise 2 x 3 tiles (conv2d_s8.c pw23_run on cortex-m4/m33: two filters x three pixels, an even filter
    # count a group; with conv2d_s8_dsp's plan, the board's default here, on the filters widened to int16,
    # mf_pw23w_rows64/128/256): pixel counts 3 k, 3 k + 1 and 3 k + 2 (the last one or two pixels in a triple of
    # their own, the last one repeated), exactly 3, fewer than 3, one filter pair and 65, groups, strides,
    # batches, biases up to 2^29 (the short output stage's reach), the offsets' ends; then with
    # conv2d_s8_pw23's plan (the int8 filters: mf_pw23_rows64/128/256), with one byte less (the 3 x 2 tiles
    # instead), and one byte short of conv2d_s8_dsp's (the int8 filters); rounding ties at each depth
    for i, (wc, opg, hw, st, groups) in enumerate(((64, 2, (1, 3), [1, 1], 1), (64, 10, (3, 4), [1, 1], 1),
                                                   (64, 6, (4, 4), [1, 1], 2), (128, 2, (3, 3), [1, 1], 1),
                                                   (128, 12, (2, 4), [1, 1], 1), (128, 4, (5, 5), [2, 1], 1),
                                                   (256, 2, (3, 3), [1, 1], 1), (256, 8, (2, 5), [1, 1], 1),
                                                   (256, 4, (5, 4), [2, 2], 1), (128, 130, (1, 3), [1, 1], 1),
                                                   (64, 4, (2, 7), [1, 1], 1), (256, 6, (1, 2), [1, 1], 1))):
        conv_case(rng, sweep, f"pw23_c{wc}_o{opg}_g{groups}_{i}_{len(sweep)}", wc, (1, 1), groups=groups,
                  stride=st, pad=[0, 0], dil=[1, 1], hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True,
                  per_channel=True, shifts=(-1, -22, -9, -14), out_off=(-128, 127, 0)[i % 3],
                  input_offset=(-127, 128, 0, None)[i % 4], bias_bits=(16, 24, 29)[i % 3])
    for i, wc in enumerate((64, 128, 256)):
        mid = SCRATCH["conv2d_s8_pw23"](depth=wc, window=1)
        assert SCRATCH["conv2d_s8_im2col"](depth=wc) <= mid - 1 < mid < SCRATCH["conv2d_s8_dsp"](depth=wc, filters=6,
                                                                                               window=1) - 1
        for plan in (mid, mid - 1, SCRATCH["conv2d_s8_dsp"](depth=wc, filters=6, window=1) - 1):
            conv_case(rng, sweep, f"pw23_scratch{plan}_c{wc}_{i}_{len(sweep)}", wc, (1, 1), stride=[1, 1],
                      pad=[0, 0], dil=[1, 1], hw=(2, 4), oc_per_group=6, bias=True, per_channel=True,
                      shifts=(-1, -22, -9), out_off=(-128, 127, 0)[i], scratch={"dsp": plan})
        tie_case(rng, sweep, f"pw23_ties_c{wc}_{i}", wc, (1, 1), 2 + 2 * i, (3, 3 + i), shifts=(-1, -2, -3))
    # a negative multiplier (the widened filters' output stage takes the sum's sign: pw23_run keeps int8 filters)
    w = rng.integers(-1, 2, size=(6, 1, 1, 128)).astype(np.int8)
    x = act("x", (1, 3, 3, 128))
    consts = [const("w", w), const("b", rng.integers(-40, 41, size=6).astype(np.int32)),
              const("m", np.array([1 << 30, -(1 << 30), 1 << 29, 1 << 30, 3 << 28, 1 << 30], np.int32)),
              const("s", rng.choice((-1, -2), size=6).astype(np.int8))]
    attrs = {"input_offset": 0, "output_offset": 3, "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1],
             "act_min": -128, "act_max": 127}
    sweep.add("pw23_negative_mult", "conv2d_s8", attrs, [(x, rng.integers(-4, 5, size=x.shape).astype(np.int8))],
              [act("y", (1, 3, 3, 6))], consts, op_inputs=["x", "w", "b", "m", "s"])
    # the 2 x 3 tiles on 3x3 layers of 16, 32, 64 channels (conv2d_s8.c pw23_run3x3, mf_pw23w_rows144/288/576 on
    # cortex-m4/m33, conv2d_s8_dsp's plan: the filters widened): triples of windows inside the input (read from
    # its rows: mf_pw23_cols2 on three rows) and with a window across the padding (all three by im2col_s8),
    # strides, vertical and horizontal dilation, pixel counts 3 k + 1 and 3 k + 2, one filter pair and 9, batches,
    # the offsets' ends; then with conv2d_s8_pw23's plan (the int8 filters, mf_pw23_rows144/288/576), one byte
    # short of it (the 3 x 2 tiles) and one byte short of conv2d_s8_dsp's (the int8 filters)
    for i, (wc, opg, hw, st, dl) in enumerate(((16, 2, (5, 5), [1, 1], [1, 1]), (16, 8, (7, 6), [2, 2], [1, 1]),
                                               (32, 4, (6, 7), [1, 1], [2, 1]), (32, 18, (4, 4), [1, 2], [1, 1]),
                                               (64, 2, (5, 4), [1, 1], [1, 2]), (64, 6, (3, 3), [1, 1], [1, 1]),
                                               (16, 4, (9, 8), [1, 1], [2, 2]))):
        conv_case(rng, sweep, f"pw23_3x3_c{wc}_o{opg}_{i}_{len(sweep)}", wc, (3, 3), stride=st, pad=[1, 1], dil=dl,
                  hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True, shifts=(-1, -22, -9, -14),
                  out_off=(-128, 127, 0)[i % 3], input_offset=(-127, 128, 0, None)[i % 4],
                  bias_bits=(16, 24, 29)[i % 3])
    for i, wc in enumerate((16, 32, 64)):
        mid = SCRATCH["conv2d_s8_pw23"](depth=9 * wc, window=9)
        for plan in (mid, mid - 1, SCRATCH["conv2d_s8_dsp"](depth=9 * wc, filters=4, window=9) - 1):
            conv_case(rng, sweep, f"pw23_3x3_scratch{plan}_c{wc}_{i}_{len(sweep)}", wc, (3, 3), stride=[1, 1],
                      pad=[1, 1], dil=[1, 1], hw=(4, 5), oc_per_group=4, bias=True, per_channel=True,
                      shifts=(-1, -22, -9), out_off=(-128, 127, 0)[i], scratch={"dsp": plan})
        tie_case(rng, sweep, f"pw23_3x3_ties_c{wc}_{i}", wc, (3, 3), 4, (4, 4), pad=[1, 1], shifts=(-1, -2, -3))
    # the 3 x 2 tiles on 3x3 patches (mf_pw3_rows144/288/576: resnet's 3x3 layers on 16, 32, 64 channels, a
    # loop of 12 or 16 groups): 16 filters (five triples and one filter left to the C loop), 1, 2, 3, 4, 5, 7
    # filters (the pairs and the C loop), stride 2, padding (the border windows through im2col), odd pixel
    # counts, batches, the offsets' ends; and the paths beside them: a shift outside [-22, -1], a narrower
    # clamp
    for i, (wc, opg, hw, st) in enumerate(((16, 16, (5, 5), [1, 1]), (16, 4, (4, 3), [2, 2]), (32, 5, (3, 4), [1, 1]),
                                           (32, 7, (5, 3), [2, 1]), (64, 3, (3, 3), [1, 1]), (64, 16, (4, 4), [2, 2]),
                                           (16, 1, (3, 3), [1, 1]), (32, 2, (2, 3), [1, 1]),
                                           (64, 10, (1, 3), [1, 1]), (16, 32, (3, 5), [1, 1]))):
        conv_case(rng, sweep, f"pw3_3x3_c{wc}_o{opg}_{i}_{len(sweep)}", wc, (3, 3), stride=st, pad=[1, 1],
                  dil=[1, 1], hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True,
                  shifts=(-1, -22, -9, -14), out_off=(-128, 127, 0)[i % 3], input_offset=(-127, 128, 0, None)[i % 4])
    for i, (wc, shifts, out_off) in enumerate(((16, (-1, -23, -9), 3), (32, (-2, -8), None), (64, (-23, -30, -5), -7))):
        conv_case(rng, sweep, f"pw3_3x3_other_c{wc}_{i}_{len(sweep)}", wc, (3, 3), stride=[1, 1], pad=[1, 1],
                  dil=[1, 1], hw=(3, 4), oc_per_group=7 + i, bias=True, per_channel=True, shifts=shifts,
                  out_off=out_off)
    # the shallow pointwise path's 3 x 2 tiles (pw_run: mf_pw3_rows8/16, then the pairs left): 7 filters (a
    # triple and two pairs), 4 (pairs only), 13 (three triples and two pairs), odd and even pixel counts
    for i, (wc, opg, hw) in enumerate(((8, 7, (3, 3)), (16, 4, (1, 3)), (16, 13, (2, 2)), (8, 11, (1, 5)))):
        conv_case(rng, sweep, f"pw3_shallow_c{wc}_o{opg}_{i}_{len(sweep)}", wc, (1, 1), stride=[1, 1], pad=[0, 0],
                  dil=[1, 1], hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True,
                  shifts=(-1, -22, -7), out_off=(127, 0, -128)[i % 3], input_offset=(128, None, -127, 0)[i % 4])
    # the shallow pointwise image path (conv2d_s8.c pwimg_run: mf_pwimg8/16/32, 1x1 without stride or padding at
    # 8, 16 or 32 channels, an even filter count, 2 x 2 tiles over the whole op): one filter pair, more than the
    # table's 16 pairs (a second and third chunk of filters), odd pixel counts (the last pixel twice, its outputs
    # written once), batches, the offsets' ends, the extreme shifts; strides (a call per output row: odd and even
    # row widths, the last pixel of each odd row twice)
    for i, (wc, opg, hw, st) in enumerate(((8, 2, (1, 1), [1, 1]), (8, 34, (3, 3), [1, 1]), (16, 6, (2, 3), [1, 1]),
                                           (16, 36, (1, 4), [1, 1]), (32, 2, (3, 3), [1, 1]),
                                           (32, 66, (1, 3), [1, 1]), (32, 64, (2, 2), [1, 1]),
                                           (8, 16, (5, 5), [1, 1]), (16, 32, (5, 7), [2, 2]),
                                           (32, 4, (4, 9), [1, 2]), (8, 36, (6, 4), [2, 1]),
                                           (16, 2, (3, 3), [3, 3]))):
        conv_case(rng, sweep, f"pwimg_c{wc}_o{opg}_{i}_{len(sweep)}", wc, (1, 1), stride=st, pad=[0, 0],
                  dil=[1, 1], hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True,
                  shifts=(-1, -22, -5, -12), out_off=(0, -128, 127)[i % 3], input_offset=(0, 128, None, -127)[i % 4])
    # rounding ties of the 3x3 layers' tiles (mf_pw3_rows144/288/576, the pairs, mf_pw1_rows on cortex-m7): as
    # fc_rows4_ties, multiplier 2^30 and shifts of -1..-3 with small weights and inputs of both signs, so that
    # ties of either sign reach the int8 outputs; 16, 10, 7, 4 and 1 filters (triples, pairs, a filter left)
    for i, (wc, oc, hw) in enumerate(((16, 16, (4, 5)), (32, 10, (3, 3)), (64, 7, (3, 2)), (16, 4, (2, 3)),
                                      (64, 1, (2, 2)))):
        tie_case(rng, sweep, f"pw3_3x3_ties_c{wc}_o{oc}_{i}", wc, (3, 3), oc, hw, pad=[1, 1], shifts=(-1, -2, -3))
    # the same ties on the pointwise output stages, whose sign term (the -1 of a negative sum's rounding) the
    # random cases above never decide (their outputs saturate or miss the ties): mf_pwimg8/16/32 (even filter
    # counts, stride 1 and 2), pw_run (odd counts at 8 and 16 channels: mf_pw3_rows8/16, mf_pw_rows8/16, the C
    # filter), mf_pw3_rows32..256 with the pairs after them (mf_pw_rows64, cortex-m7's DSP_ROWS_OUT) or a filter
    # left (mf_pw1_rows on cortex-m7), mf_pw_rows40, DSP_ROWS_OUT at a depth of its own (24); then a shift of 0
    # beside them (not every shift in [-22, -1]: the tiles' general output stage, DSP_TILE_OUT_FILTER)
    for i, (wc, oc, hw, st) in enumerate(((8, 6, (3, 3), [1, 1]), (16, 4, (2, 3), [1, 1]), (32, 6, (3, 2), [2, 1]),
                                          (8, 7, (3, 3), [1, 1]), (16, 5, (2, 3), [1, 1]), (32, 7, (3, 2), [1, 1]),
                                          (64, 5, (3, 3), [1, 1]), (128, 4, (3, 4), [1, 1]),
                                          (256, 5, (2, 2), [1, 1]), (40, 4, (3, 3), [1, 1]),
                                          (24, 4, (3, 3), [1, 1]))):
        tie_case(rng, sweep, f"pw_ties_c{wc}_o{oc}_{i}", wc, (1, 1), oc, hw, stride=st, shifts=(-1, -2))
    tie_case(rng, sweep, "pw_ties_general_c24_o6", 24, (1, 1), 6, (3, 3), shifts=(0, -1, -2))
    # the 4 x 2 tiles of the shallow pointwise image path (mf_pwq8/16/32: a filter count a multiple of 4, the
    # filters widened into a table of 32 at a time): the sign term of every filter of the quad on both pixels
    # (ties, and small multipliers keeping a shift of -1 off the clamp), a last chunk of 1 and 2 quads, odd pixel
    # counts, strides, batches, the offsets' ends
    for i, (wc, oc, hw, st) in enumerate(((8, 8, (3, 5), [1, 1]), (16, 12, (3, 3), [1, 1]), (32, 8, (3, 3), [1, 1]),
                                          (16, 8, (3, 4), [2, 1]), (32, 36, (2, 3), [1, 1]))):
        tie_case(rng, sweep, f"pwq_ties_c{wc}_o{oc}_{i}", wc, (1, 1), oc, hw, stride=st, shifts=(-1, -2))
    for i, (wc, opg, hw, st) in enumerate(((8, 40, (3, 3), [1, 1]), (32, 40, (1, 5), [1, 1]), (16, 68, (2, 3), [1, 2]),
                                           (32, 12, (3, 5), [2, 2]), (8, 4, (1, 1), [1, 1]), (16, 64, (3, 3), [1, 1]))):
        conv_case(rng, sweep, f"pwq_c{wc}_o{opg}_{i}_{len(sweep)}", wc, (1, 1), stride=st, pad=[0, 0], dil=[1, 1],
                  hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True, shifts=(-1, -22, -3, -9),
                  out_off=(127, 0, -128)[i % 3], input_offset=(-127, 0, 128, None)[i % 4],
                  mult_bits=(None, 21)[i % 2])
    # the Cortex-M4's 2 x 4 tiles on the same table (mf_pwq<D>x4: a quad's filters as two pairs over 4 pixels,
    # the 1..3 pixels left on mf_pwq<D>): every pixel count mod 4 (whole images and strided rows of 5..7), 1, 2,
    # 8 quads and a second chunk of filters; ties on the 16 outputs of a tile (the sign term of each)
    for i, (wc, oc, hw, st) in enumerate(((8, 8, (4, 5), [1, 1]), (16, 8, (2, 7), [1, 1]), (32, 4, (3, 4), [1, 2]),
                                          (8, 12, (3, 7), [2, 1]))):
        tie_case(rng, sweep, f"pwqx4_ties_c{wc}_o{oc}_{i}", wc, (1, 1), oc, hw, stride=st, shifts=(-1, -2))
    for i, (wc, opg, hw, st) in enumerate(((8, 4, (1, 4), [1, 1]), (16, 8, (1, 5), [1, 1]), (32, 32, (3, 3), [1, 1]),
                                           (8, 12, (3, 5), [1, 1]), (16, 36, (4, 7), [2, 1]),
                                           (32, 8, (3, 12), [1, 2]), (8, 64, (2, 9), [1, 2]))):
        conv_case(rng, sweep, f"pwqx4_c{wc}_o{opg}_{i}_{len(sweep)}", wc, (1, 1), stride=st, pad=[0, 0],
                  dil=[1, 1], hw=hw, oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True,
                  shifts=(-1, -22, -3, -9), out_off=(127, 0, -128)[i % 3], input_offset=(-127, 0, 128, None)[i % 4],
                  mult_bits=(None, 21)[i % 2])
    return sweep


def tie_case(rng, sweep: BoardSweep, case: str, wc: int, kernel: tuple[int, int], oc: int, hw: tuple[int, int],
             stride=(1, 1), pad=(0, 0), shifts: tuple[int, ...] = (-1, -2)) -> None:
    """A conv2d_s8 case on rounding ties (per-channel, a bias, the full clamp, input offset 0): multiplier 2^30
    (the doubling high multiply halves the sum, a tie at every odd one), right shifts tying at every odd
    multiple of 2^(n - 1), weights in [-1, 1] and inputs in [-4, 4] keeping the outputs off the clamp."""
    w = rng.integers(-1, 2, size=(oc, *kernel, wc)).astype(np.int8)
    x = act("x", (1, *hw, wc))
    consts = [const("w", w), const("b", rng.integers(-40, 41, size=oc).astype(np.int32)),
              const("m", np.full(oc, 1 << 30, np.int32)), const("s", rng.choice(shifts, size=oc).astype(np.int8))]
    attrs = {"input_offset": 0, "output_offset": int(rng.integers(-20, 21)), "stride": list(stride),
             "padding": list(pad), "dilation": [1, 1], "act_min": -128, "act_max": 127}
    oh, ow = conv_output_hw(hw, kernel, list(stride), list(pad), [1, 1])
    sweep.add(case, "conv2d_s8", attrs, [(x, rng.integers(-4, 5, size=x.shape).astype(np.int8))],
              [act("y", (1, oh, ow, oc))], consts, op_inputs=["x", "w", "b", "m", "s"])


def few_channel_cases(rng, sweep: BoardSweep) -> None:
    """The DSP few-input-channel path (conv2d_s8.c few_run: patches of at most 64 taps and not a multiple of 8,
    rows reordered and padded with zero weights to 28 or a multiple of 8, the 2 x 2 tiles' asm; it needs
    per-channel requantization with a bias, shifts in [-22, -1], the full clamp and conv2d_s8_dsp's scratch):
    the RGB 3x3 layer's straight-line patches (stride 1 and 2, padding on every border, odd widths, windows
    all inside and all crossing the border), the other patch sizes' gathered row ends (1 to 3 bytes a row,
    none, 4..64 taps), vertical and horizontal dilation (the border patch for every window), odd filter counts
    (the last filter in C), an odd pixel count (its outputs written twice), batches, the output offset's and the
    input offset's ends; the 2 x 3 tiles' pixel counts not a multiple of 3; and with the scratch
    one byte short of that plan, the im2col path (still the im2col plan's bytes or more on every board)."""
    shapes = (  # (filter channels, kernel, stride, padding, dilation, (h, w), filters)
        (3, (3, 3), [1, 1], [1, 1], [1, 1], (9, 7), 8), (3, (3, 3), [2, 2], [1, 1], [1, 1], (12, 11), 8),
        (3, (3, 3), [1, 2], [0, 1], [1, 1], (7, 13), 5), (3, (3, 3), [2, 1], [1, 0], [1, 1], (11, 6), 3),
        (3, (3, 3), [1, 1], [2, 2], [1, 1], (2, 3), 9), (3, (3, 3), [1, 1], [0, 0], [1, 1], (3, 3), 2),
        (1, (5, 5), [2, 2], [2, 2], [1, 1], (13, 9), 6), (1, (3, 3), [1, 1], [1, 1], [1, 1], (8, 5), 7),
        (2, (3, 3), [1, 1], [1, 1], [1, 1], (6, 7), 4), (3, (2, 2), [2, 2], [1, 1], [1, 1], (7, 9), 16),
        (4, (3, 3), [1, 1], [1, 1], [1, 1], (5, 6), 6), (3, (7, 1), [1, 1], [3, 0], [1, 1], (9, 4), 4),
        (5, (3, 3), [2, 2], [1, 1], [1, 1], (9, 9), 5), (1, (7, 7), [2, 2], [3, 3], [1, 1], (11, 10), 3),
        (7, (3, 3), [1, 1], [1, 1], [1, 1], (5, 5), 2), (3, (1, 1), [1, 1], [1, 1], [1, 1], (4, 5), 6),
        (3, (3, 3), [1, 1], [2, 1], [2, 1], (9, 8), 4), (3, (3, 3), [1, 1], [1, 2], [1, 2], (7, 9), 5),
        (1, (1, 3), [1, 1], [0, 1], [1, 1], (3, 11), 8), (3, (2, 3), [1, 1], [1, 2], [1, 1], (6, 7), 3),
    )
    for i, (wc, kernel, st, pd, dl, hw, opg) in enumerate(shapes):
        conv_case(rng, sweep, f"few_c{wc}_k{kernel[0]}x{kernel[1]}_o{opg}_{i}_{len(sweep)}", wc, kernel, stride=st,
                  pad=pd, dil=dl, hw=hw, oc_per_group=opg, batch=1 + i % 3 // 2, bias=True, per_channel=True,
                  shifts=(-1, -22, -9, -14), out_off=(-128, 127, 0, 31)[i % 4],
                  input_offset=(None, -127, 128, 0)[i % 4])
    # the DSP cores' 2 x 3 tiles (mf_few3_rows28: 25..28 taps, an even filter count): pixel counts of 3 k + 1
    # and 3 k + 2 (the last pixel repeated into the columns left), one pixel, 1 and 8 filter pairs, batches,
    # windows inside and across the borders, the generic patch (5x5, one channel) and the RGB one
    few3 = (  # (filter channels, kernel, stride, padding, (h, w), filters, batch)
        (3, (3, 3), [1, 1], [1, 1], (5, 5), 10, 1), (3, (3, 3), [1, 1], [1, 1], (4, 5), 6, 2),
        (3, (3, 3), [1, 1], [1, 1], (2, 2), 2, 1), (1, (5, 5), [1, 1], [2, 2], (4, 4), 4, 2),
        (3, (3, 3), [2, 2], [1, 1], (8, 7), 16, 1), (3, (3, 3), [1, 1], [0, 0], (3, 3), 4, 2),
    )
    for i, (wc, kernel, st, pd, hw, opg, batch) in enumerate(few3):
        conv_case(rng, sweep, f"few3_c{wc}_o{opg}_{i}_{len(sweep)}", wc, kernel, stride=st, pad=pd, dil=[1, 1],
                  hw=hw, oc_per_group=opg, batch=batch, bias=True, per_channel=True, shifts=(-1, -22, -9, -14),
                  out_off=(-128, 127, 0)[i % 3], input_offset=(-127, 128, 0, None)[i % 4])
    for i, (wc, kernel, opg) in enumerate(((3, (3, 3), 8), (1, (5, 5), 5), (3, (2, 2), 8))):
        depth = wc * kernel[0] * kernel[1]
        short = SCRATCH["conv2d_s8_dsp"](depth=depth, filters=opg, window=kernel[0] * kernel[1]) - 1
        assert short >= max(SCRATCH["conv2d_s8_im2col"](depth=depth), SCRATCH["conv2d_s8_scalar"](depth=depth))
        conv_case(rng, sweep, f"few_short_scratch_c{wc}_{i}_{len(sweep)}", wc, kernel, stride=[1, 2], pad=[1, 1],
                  dil=[1, 1], hw=(7, 8), oc_per_group=opg, bias=True, per_channel=True, shifts=(-1, -22, -9),
                  out_off=-128, scratch=short)
    # mf_few3t_rows28 (the 2 x 3 tiles' output stage from a per-op table, up to 32 filters): exactly 32 filters,
    # 34 (mf_few3_rows28's), padding on every border, the offsets' ends
    for i, (opg, hw, st) in enumerate(((32, (5, 4), [1, 1]), (34, (4, 4), [2, 1]), (12, (7, 6), [1, 2]))):
        conv_case(rng, sweep, f"few3t_o{opg}_{i}_{len(sweep)}", 3, (3, 3), stride=st, pad=[1, 1], dil=[1, 1], hw=hw,
                  oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True, shifts=(-1, -22, -6, -13),
                  out_off=(127, -128, 0)[i], input_offset=(128, -127, None)[i])
    # mf_few3t_rows28 on the filters widened and doubled once (few_widen16) and the biases doubled in its table:
    # biases near the small output stage's bound (|acc| < 2^30), one pair, 30 filters; the RGB windows three at a
    # time on one row (odd and even widths, stride 1 and 2, rows of 3 k + 1 and 3 k + 2 pixels), the border
    # patches by rows (padding on every side, a single-row input), an odd filter count (the 2 x 2 tiles); long
    # rows of many three-pixel runs that mf_few3t_rows28 widens (FEW3X_PIXEL) and loops over in one call, stride
    # 1 and 2, with and without padding, odd and even widths, run ends 0, 1 and 2 pixels before the row's
    for i, (opg, hw, st, pd, bits) in enumerate(((2, (6, 13), [1, 1], [1, 1], 29), (30, (9, 17), [2, 2], [1, 1], 28),
                                                  (6, (5, 11), [1, 2], [1, 1], 16), (8, (1, 8), [1, 1], [1, 1], 29),
                                                  (7, (7, 10), [1, 1], [1, 1], 16), (4, (8, 9), [2, 1], [0, 1], 20),
                                                  (4, (3, 40), [1, 1], [0, 0], 29), (8, (5, 29), [2, 2], [1, 1], 24),
                                                  (10, (4, 26), [2, 2], [0, 0], 20), (2, (3, 35), [1, 2], [1, 0], 28))):
        conv_case(rng, sweep, f"few3w_o{opg}_{i}_{len(sweep)}", 3, (3, 3), stride=st, pad=pd, dil=[1, 1], hw=hw,
                  oc_per_group=opg, batch=1 + i % 2, bias=True, per_channel=True, shifts=(-1, -22, -4, -17),
                  out_off=(-128, 127, 0)[i % 3], input_offset=(-127, 128, 3, None)[i % 4], bias_bits=bits)
    # few_border_widen's RGB windows one pixel across the left edge or one row across the top (widened from the
    # input's rows, the outside taps zeroed): random heights, widths down to 2, strides, vertical dilation (the top
    # row from row 1, padding 2 with dilation 2), filter counts (the 2 x 2 and 2 x 3 tiles), batches
    for i in range(6):
        dy = int(rng.integers(1, 3))
        pd = [int(rng.integers(1, dy + 1)), 1]
        hw = (int(rng.integers(2 * dy + 1, 12)), int(rng.integers(2, 14)))
        conv_case(rng, sweep, f"few_edge_{i}_{len(sweep)}", 3, (3, 3), stride=[int(rng.integers(1, 3)) for _ in "yx"],
                  pad=pd, dil=[dy, 1], hw=hw, oc_per_group=int(rng.integers(2, 11)), batch=1 + i % 2, bias=True,
                  per_channel=True, shifts=(-1, -22, -5, -12), out_off=(-128, 127, 0)[i % 3],
                  input_offset=(-127, 128, None)[i % 3])
    # small multipliers and shifts of -1 and -2: outputs off the clamp, whose rounding of negative sums (the
    # output stage's sign term, each of the three outputs' own) decides about half of them
    for i, (opg, hw) in enumerate(((8, (6, 7)), (32, (4, 5)))):
        conv_case(rng, sweep, f"few3w_round_o{opg}_{i}_{len(sweep)}", 3, (3, 3), stride=[1, 1], pad=[1, 1],
                  dil=[1, 1], hw=hw, oc_per_group=opg, bias=True, per_channel=True, shifts=(-1, -2), out_off=0,
                  input_offset=(5, -60)[i], mult_bits=21)


def pairs_const(name: str, w: np.ndarray) -> Tensor:
    """int8 fully connected weights stored as S8_PAIRS (what a DSP core's program holds)."""
    return Tensor(name, w.shape, "int8", data=pack_pairs(w), layout=S8_PAIRS)


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
    for depth in (1, 15, 16, 17, 33, 64, 100, 640):  # offset 0 (the lowering folds it into the bias)
        for oc in (3, 4, 8, 13):
            rows = int(rng.integers(1, 3))
            consts, names = weighted_consts(rng, int8(rng, (oc, depth)), oc, bias_bits=20)
            sweep.add(f"fc_folded_d{depth}_o{oc}_r{rows}", "fully_connected_s8", offsets(rng, 0),
                      [(act("x", (rows, depth)), int8(rng, (rows, depth)))], [act("y", (rows, oc))], consts,
                      op_inputs=names)
    # offset 0 with every requantization form (the MVE whole-group loop, rows4_requant, and its tail):
    # bias or none, per-tensor or per-channel, a filter offset, the autoencoder's shapes
    for depth, oc in ((8, 128), (128, 20), (1, 5), (17, 17), (33, 7), (640, 8)):
        for with_bias in (True, False):
            for per_channel in (True, False):
                consts, names = weighted_consts(rng, int8(rng, (oc, depth)), oc, bias_bits=20, bias=with_bias,
                                                per_channel=per_channel)
                attrs = offsets(rng, 0) | {"filter_offset": int(rng.integers(-127, 129)) if with_bias else 0}
                sweep.add(f"fc_rq_d{depth}_o{oc}_b{int(with_bias)}_pc{int(per_channel)}", "fully_connected_s8",
                          attrs, [(act("x", (2, depth)), int8(rng, (2, depth)))], [act("y", (2, oc))], consts,
                          op_inputs=names)
    # one INT32_MIN multiplier in the last lane group only (the vector scan's tail must see it: scalar output stage)
    for oc in (7, 9, 17):
        mult, shift = requant_params(np.random.default_rng(oc), oc)
        mult = np.resize(mult, oc).astype(np.int32)
        shift = np.resize(shift, oc).astype(np.int8)
        mult[:] = np.abs(mult.astype(np.int64)).clip(1 << 30, (1 << 31) - 1).astype(np.int32)
        mult[-1] = np.int32(-(1 << 31))
        shift[-1] = -1
        w, x = int8(rng, (oc, 24)), int8(rng, (2, 24))
        # the bias makes row 0's last sum INT32_MIN: there VQRDMULH saturates where CMSIS-NN's multiply wraps
        bias = rng.integers(-(1 << 20), 1 << 20, size=oc).astype(np.int64)
        bias[-1] = -(1 << 31) - int(x[0].astype(np.int64) @ w[-1].astype(np.int64))
        consts = [const("w", w), const("b", bias.astype(np.int32)), const("m", mult), const("s", shift)]
        sweep.add(f"fc_rq_int32min_o{oc}", "fully_connected_s8", offsets(rng, 0), [(act("x", (2, 24)), x)],
                  [act("y", (2, oc))], consts, op_inputs=["x", "w", "b", "m", "s"])
    # offset 0 in whole groups of 4 channels (the DSP rows4 path: its asm loop over groups of 8 features, the
    # depth's tail in C, its own output stage) and 1-3 channels past them (rows3, rows2, one row); depths
    # with no tail, a tail of 4 and odd tails; every shift sign (left shifts, 0, the whole right range)
    for depth in (8, 9, 12, 13, 24, 31):
        for oc in (4, 5, 6, 7):
            rows = int(rng.integers(1, 4))
            consts, names = weighted_consts(rng, int8(rng, (oc, depth)), oc, bias_bits=24,
                                            shifts=(-31, -20, -7, -1, 0, 1, 5, 30))
            sweep.add(f"fc_rows4_d{depth}_o{oc}_r{rows}", "fully_connected_s8", offsets(rng, 0),
                      [(act("x", (rows, depth)), int8(rng, (rows, depth)))], [act("y", (rows, oc))], consts,
                      op_inputs=names)
    # rounding ties of the DSP rows4 output stage (fc_out4_asm): multiplier 2^30 makes the doubling high
    # multiply (x + 1) >> 1, a tie at every odd x, and right shifts 1-3 tie at every odd multiple of
    # 2^(shift - 1); small weights and inputs of both signs keep most outputs inside the int8 range, so
    # both roundings' ties of either sign reach the output; per-channel and per-tensor
    for depth, oc, per_channel in ((8, 8, True), (16, 12, True), (9, 4, True), (24, 8, False)):
        w = rng.integers(-3, 4, size=(oc, depth)).astype(np.int8)
        x = rng.integers(-20, 21, size=(3, depth)).astype(np.int8)
        n = oc if per_channel else 1
        mult = np.full(n, 1 << 30, np.int32)
        shift = rng.choice((0, -1, -2, -3, 1), size=n).astype(np.int8)
        bias = rng.integers(-40, 41, size=oc).astype(np.int32)
        consts = [const("w", w), const("b", bias), const("m", mult), const("s", shift)]
        attrs = {"input_offset": 0, "output_offset": int(rng.integers(-20, 21)), "act_min": -128, "act_max": 127}
        sweep.add(f"fc_rows4_ties_d{depth}_o{oc}_pc{int(per_channel)}", "fully_connected_s8", attrs,
                  [(act("x", (3, depth)), x)], [act("y", (3, oc))], consts, op_inputs=["x", "w", "b", "m", "s"])
    # S8_PAIRS weights (kernels/fc_pairs.py, the DSP cores' pairs loop; the portable path elsewhere and with an
    # input offset): 1, 2, 4 groups of 4 features and the 8-group loop in every combination, 1-3 rows, every
    # requantization form and a filter offset; then extreme values whose pair sums wrap int32 (256 * sum(x * b)
    # overflows at depth 640) and biases over the whole int32 range
    for depth, oc in ((4, 4), (8, 8), (12, 4), (16, 12), (28, 8), (32, 4), (36, 8), (60, 4), (128, 16), (640, 8),
                      (128, 128)):
        for variant in range(3):
            rows = int(rng.integers(1, 4))
            w = int8(rng, (oc, depth))
            consts, names = weighted_consts(rng, w, oc, bias_bits=20, bias=variant != 1, per_channel=variant != 2)
            consts[0] = pairs_const("w", w)
            attrs = offsets(rng, 0 if variant < 2 else None) | {"filter_offset": int(rng.integers(-127, 129))
                                                                 if variant == 1 else 0}
            sweep.add(f"fc_pairs_d{depth}_o{oc}_v{variant}", "fully_connected_s8", attrs,
                      [(act("x", (rows, depth)), int8(rng, (rows, depth)))], [act("y", (rows, oc))], consts,
                      op_inputs=names)
    for depth, fill in ((640, -128), (640, 127), (256, -128), (12, -128)):
        oc = 8
        w = np.where(rng.random((oc, depth)) < 0.9, np.int8(fill), int8(rng, (oc, depth))).astype(np.int8)
        x = np.full((2, depth), -128, np.int8)
        x[1, ::3] = 127
        consts, names = weighted_consts(rng, w, oc, bias_bits=31, bias=True, per_channel=True)
        consts[0] = pairs_const("w", w)
        sweep.add(f"fc_pairs_wrap_d{depth}_f{fill}", "fully_connected_s8", offsets(rng, 0),
                  [(act("x", (2, depth)), x)], [act("y", (2, oc))], consts, op_inputs=names)
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


def test_conv2d_fast_paths_on_cortex_m7():
    """The DSP tiles (the tile rows' asm without its loop at depth 64 included) as cortex-m7's build compiles
    them."""
    conv_sweep(seed=21).assert_same_on_board("cortex-m7")


def test_conv2d_fast_paths_on_cortex_m33():
    """The DSP paths as cortex-m33's build compiles them (Armv8-M: the Cortex-M4's choices, mf_pw_rows and the
    few-channel path's mf_pw_rows28 included)."""
    conv_sweep(seed=21).assert_same_on_board("cortex-m33")


@pytest.mark.parametrize("target", BOARDS)
def test_fully_connected_and_dot_fast_paths_on_board(target):
    sweep = tconv_sweep(seed=23, sweep=fc_sweep(seed=22, sweep=BoardSweep()))
    assert len(sweep) > 150
    sweep.assert_same_on_board(target)


@pytest.mark.parametrize("target", ("cortex-m7", "cortex-m33"))
def test_fully_connected_fast_paths_on_dsp_cores(target):
    """The DSP paths (rows4's asm sums and output stage, rows3, rows2) as cortex-m7's and cortex-m33's builds
    compile them."""
    fc_sweep(seed=22, sweep=BoardSweep()).assert_same_on_board(target)


def test_fully_connected_c_forms_on_board():
    """The DSP paths' C forms (a firmware built at -O0, which leaves the asm loops too few registers: the
    S8_PAIRS loop, rows4 and rows3 in C) on the fully connected sweep: the same bytes as the reference."""
    sweep = fc_sweep(seed=22, sweep=BoardSweep())
    program = sweep.program("cortex-m4")
    graph = deserialize(program)
    got, _trace, _facts = firmware.run_on_qemu(program, sweep.values, "cortex-m4", graph=graph, build_flags=("-O0",))
    sweep._assert_same("cortex-m4 at -O0", execute(graph, sweep.values), got)


def test_scalar_paths_on_host_c(tmp_path):
    """The cortex-m3 programs of both sweeps on the host C runtime built with the optimized scalar paths
    (their C form; the board runs their assembly), also under ASan and UBSan."""
    conv_sweep(seed=21).assert_same_on_host_c("cortex-m3", sanitize_dir=tmp_path)
    tconv_sweep(seed=23, sweep=fc_sweep(seed=22, sweep=BoardSweep())).assert_same_on_host_c(
        "cortex-m3", sanitize_dir=tmp_path)
