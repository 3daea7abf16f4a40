"""The int4-weight C kernels and fully_connected_per_channel_s8: host C == host Python, and the same on the
Cortex-M4 (DSP paths) and Cortex-M55 (MVE paths) boards; both program readers on the int4 packing and the
op precision byte.

The sweeps' shapes hit every path of the C kernels: patch sizes and depths around the 8 (DSP) and 16
(MVE) weights of a step, odd ones (filters starting in a high nibble), groups, strides, padding,
dilation, batches, per-tensor and per-channel requantization over the whole legal range, and convs
without scratch (the portable path on a board). All cases of a sweep run as one program: one QEMU boot
per board.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_c_kernels import (
    act,
    act_range,
    assert_same_bytes,
    const,
    conv_like_case,
    int8,
    one_op_program,
    requant_params,
    run_both,
)
from test_c_validation import fix_crcs
from test_kernels_s4 import random_packed

from mcuforge import cruntime, fuzz
from mcuforge.ir import KIND_PRECISIONS, OP_KINDS, Tensor, kernel_scratch_bytes, kind_precisions
from mcuforge.kernels import conv_output_hw
from mcuforge.kernels.fc_pairs import S8_PAIRS, pack_pairs, unpack_pairs
from mcuforge.kinds.scratch import SCRATCH
from mcuforge.program import ProgramFormatError, deserialize, read_header
from mcuforge.program.layout import PRECISION_CODES

BOARDS = ("cortex-m4", "cortex-m55")


def int4(name: str, shape, packed: np.ndarray) -> Tensor:
    return Tensor(name, tuple(shape), "int4", data=packed)


def compact_params(rng, bias: np.ndarray | None, mult: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The s4 kinds' compact form (format 3.0): an int16 bias over its whole range, 16-bit multipliers over
    theirs, [0, 32767] (the Q31 multipliers m << 16), edges included."""
    if bias is not None:
        bias = rng.integers(-(1 << 15), 1 << 15, size=bias.size).astype(np.int16)
        bias[rng.random(bias.size) < 0.1] = rng.choice([-(1 << 15), (1 << 15) - 1])
    m16 = rng.integers(1 << 14, 1 << 15, size=mult.size) if rng.random() < 0.8 else rng.integers(0, 1 << 15,
                                                                                                  size=mult.size)
    m16[rng.random(mult.size) < 0.1] = rng.choice([0, 1, (1 << 15) - 1])
    # int16 and int32 mixed: each of the two may be either
    return (bias if rng.random() < 0.8 else (None if bias is None else bias.astype(np.int32)),
            m16.astype(np.int16) if rng.random() < 0.8 else (m16.astype(np.int64) << 16).astype(np.int32))


def weighted(rng, weight: Tensor, oc: int, per_channel_only: bool = False) -> tuple[list[Tensor], list[str]]:
    bias = rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32) if rng.random() < 0.8 else None
    mult, shift = requant_params(rng, oc)
    if per_channel_only and mult.size != oc:
        mult, shift = np.resize(mult, oc), np.resize(shift, oc)
    if weight.dtype == "int4" and rng.random() < 0.5:
        bias, mult = compact_params(rng, bias, mult)
    consts = [weight] + ([const("b", bias)] if bias is not None else []) + [const("m", mult), const("s", shift)]
    return consts, ["x", "w", "b" if bias is not None else "", "m", "s"]


def output_offset(rng) -> int:
    """The s4 kinds take any int32 output offset (as arm_*_s4 do; added wrapping before the clamp): mostly a
    zero point, else past int8 or at the int32 ends."""
    if rng.random() < 0.6:
        return int(rng.integers(-128, 128))
    return int(rng.choice([128, -129, 1000, -1000, -(1 << 31), (1 << 31) - 1]))


def offsets(rng) -> dict:
    lo, hi = act_range(rng)
    return {"input_offset": int(rng.integers(-127, 129)), "output_offset": output_offset(rng),
            "act_min": lo, "act_max": hi}


def conv_case(rng, kind: str, wc: int, kernel: tuple[int, int], groups: int = 1, scratch: bool = True,
              dm: int | None = None, pad: list[int] | None = None, opg: int | None = None,
              stride: list[int] | None = None) -> dict:
    """One conv2d_s4 / depthwise_conv2d_s4 case as the arguments of BoardSweep.add (``opg``: conv2d_s4's
    filters per group, else drawn; ``stride``: else drawn)."""
    for _ in range(100):
        h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        st = stride if stride is not None else [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pd = pad if pad is not None else [int(rng.integers(0, 3)), int(rng.integers(0, 3))]
        dl = [1, 1] if rng.random() < 0.7 else [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        oh, ow = conv_output_hw((h, w), kernel, st, pd, dl)
        if oh >= 1 and ow >= 1:
            break
    n = int(rng.integers(1, 3))
    attrs = {**offsets(rng), "stride": st, "padding": pd, "dilation": dl}
    if kind == "depthwise_conv2d_s4":
        dm = dm or int(rng.integers(1, 4))
        oc, in_c, shape = wc * dm, wc, (1, *kernel, wc * dm)
        attrs["depth_multiplier"] = dm
    else:
        oc = (opg or int(rng.integers(1, 10))) * groups
        in_c, shape = wc * groups, (oc, *kernel, wc)
    consts, names = weighted(rng, int4("w", shape, random_packed(rng, int(np.prod(shape)))), oc)
    order = ["input_offset", "output_offset", "stride", "padding", "dilation", "depth_multiplier", "act_min", "act_max"]
    x = act("x", (n, h, w, in_c))
    return {"kind": kind, "attrs": {k: attrs[k] for k in order if k in attrs}, "inputs": [(x, int8(rng, x.shape))],
            "outputs": [act("y", (n, oh, ow, oc))], "constants": consts, "op_inputs": names,
            "scratch": scratch}


def fc_case(rng, kind: str, depth: int, oc: int, rows: int) -> dict:
    if kind == "fully_connected_s4":
        weight = int4("w", (oc, depth), random_packed(rng, oc * depth))
    else:
        weight = const("w", int8(rng, (oc, depth)))
    consts, names = weighted(rng, weight, oc, per_channel_only=kind == "fully_connected_per_channel_s8")
    x = act("x", (rows, depth))
    attrs = offsets(rng)
    if kind != "fully_connected_s4":  # the s8 kind's output offset is an int8 zero point
        attrs["output_offset"] = min(max(attrs["output_offset"], -128), 127)
    return {"kind": kind, "attrs": attrs, "inputs": [(x, int8(rng, x.shape))],
            "outputs": [act("y", (rows, oc))], "constants": consts, "op_inputs": names,
            "scratch": True}


def sweep_cases(seed: int) -> list[tuple[str, dict]]:
    rng = np.random.default_rng(seed)
    cases = []
    for wc in (1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 33):
        for kernel in ((3, 3), (1, 1), (2, 3)):
            cases.append((f"conv_c{wc}_k{kernel[0]}x{kernel[1]}", conv_case(rng, "conv2d_s4", wc, kernel)))
    for wc in (1, 5, 8, 31, 32, 33, 64):  # 1x1 without padding: the input read in place
        cases.append((f"pw_c{wc}", conv_case(rng, "conv2d_s4", wc, (1, 1), pad=[0, 0])))
    cases.append(("pw_groups2", conv_case(rng, "conv2d_s4", 6, (1, 1), groups=2, pad=[0, 0])))
    cases.append(("conv_groups3", conv_case(rng, "conv2d_s4", 3, (3, 3), groups=3)))
    cases.append(("conv_groups2_c5", conv_case(rng, "conv2d_s4", 5, (1, 3), groups=2)))
    cases.append(("conv_no_scratch", conv_case(rng, "conv2d_s4", 7, (3, 3), scratch=False)))
    # MVE: the filters unpacked to int8 into the planned scratch (mf_scratch_conv2d_s4_mve_unpacked: up to 4 KB of
    # whole filters, at most 64) a chunk at a time for conv2d_s8's path: depth 576 (7 filters a chunk: 7, 7, 3),
    # odd depth 315 (13 a chunk; filters from high nibbles) in 2 groups, 27 taps (64 filters a chunk: 64 + 6)
    cases.append(("conv_chunks_c64", conv_case(rng, "conv2d_s4", 64, (3, 3), opg=17, pad=[1, 1])))
    cases.append(("conv_chunks_c35_g2", conv_case(rng, "conv2d_s4", 35, (3, 3), groups=2, opg=15)))
    cases.append(("conv_chunks_c3", conv_case(rng, "conv2d_s4", 3, (3, 3), opg=70, pad=[1, 1])))
    # patches of 1..8 taps over a multiple of 16 (20, 72): conv2d_s8's im2col plan, larger than the packed paths';
    # filters beyond 4096 taps (4104, a 4100-channel 1x1): the packed-weight MVE paths
    cases.append(("conv_borrowed_c1_k5x4", conv_case(rng, "conv2d_s4", 1, (5, 4), opg=9, pad=[2, 1])))
    cases.append(("conv_borrowed_c8", conv_case(rng, "conv2d_s4", 8, (3, 3), opg=5, pad=[1, 1])))
    cases.append(("conv_packed_c456", conv_case(rng, "conv2d_s4", 456, (3, 3), opg=3, pad=[1, 1])))
    cases.append(("pw_packed_c4100", conv_case(rng, "conv2d_s4", 4100, (1, 1), opg=3, pad=[0, 0])))
    # the DSP plan (5 patches rounded up to 8) on every core: on cortex-m55 too small for the unpacked path, so a
    # program planned that way runs the packed-weight MVE paths (3x3 and 1x1), never beyond its scratch
    for name, wc, kernel, pad in (("conv_dsp_plan_c16", 16, (3, 3), [1, 1]), ("pw_dsp_plan_c24", 24, (1, 1), [0, 0])):
        case = conv_case(np.random.default_rng(seed + 100), "conv2d_s4", wc, kernel, opg=6, pad=pad)
        cases.append((name, {**case, "scratch": SCRATCH["conv2d_s4_im2col"](depth=kernel[0] * kernel[1] * wc)}))
    for c in (1, 3, 4, 8, 9, 16, 17):  # any depth multiplier: the portable path beyond 1
        cases.append((f"dw_c{c}", conv_case(rng, "depthwise_conv2d_s4", c, (3, 3))))
    for c in (1, 3, 4, 5, 7, 8, 9, 12, 16, 17, 24, 64):  # multiplier 1: the DSP / MVE paths
        cases.append((f"dw1_c{c}", conv_case(rng, "depthwise_conv2d_s4", c, (3, 3), dm=1)))
    cases.append(("dw1_k1x5", conv_case(rng, "depthwise_conv2d_s4", 5, (1, 5), dm=1)))
    cases.append(("dw1_k4x4", conv_case(rng, "depthwise_conv2d_s4", 6, (4, 4), dm=1)))  # 16 taps
    cases.append(("dw1_k5x5", conv_case(rng, "depthwise_conv2d_s4", 6, (5, 5), dm=1)))  # 25 taps
    cases.append(("dw1_no_scratch", conv_case(rng, "depthwise_conv2d_s4", 9, (3, 3), dm=1, scratch=False)))
    for c in (4, 8):  # 16-bit multipliers with left shifts, outputs mostly inside the range: the shifts must count
        case = conv_case(rng, "depthwise_conv2d_s4", c, (3, 3), dm=1, pad=[1, 1])
        consts = [case["constants"][0], const("b", rng.integers(-300, 300, c).astype(np.int16)),
                  const("m", rng.integers(1, 64, c).astype(np.int16)),
                  const("s", rng.integers(1, 4, c).astype(np.int8))]
        case["attrs"].update(act_min=-128, act_max=127)
        case.update(constants=consts, op_inputs=["x", "w", "b", "m", "s"])
        cases.append((f"dw1_c{c}_m16_left_shift", case))
    for depth in (1, 7, 8, 9, 15, 16, 17, 31, 33, 64, 67):
        for oc in (1, 3, 5):
            rows = int(rng.integers(1, 4))
            cases.append((f"fc4_d{depth}_o{oc}", fc_case(rng, "fully_connected_s4", depth, oc, rows)))
    cases.append(("fc4_no_scratch", {**fc_case(rng, "fully_connected_s4", 37, 4, 2), "scratch": False}))
    for depth in (40, 48, 640):  # MVE even depths: 32-weight steps with and without a 16-weight tail, pairs of rows
        for oc in (2, 4, 7):
            cases.append((f"fc4_even_d{depth}_o{oc}", fc_case(rng, "fully_connected_s4", depth, oc, 2)))
    for depth in (5, 16, 33):
        cases.append((f"fcpc_d{depth}", fc_case(rng, "fully_connected_per_channel_s8", depth, 6, 2)))
    cases += halves_cases(rng)
    cases.append(("fc8_per_tensor", fc_case(rng, "fully_connected_s8", 9, 4, 2)))
    return cases


def as_halves(case: dict) -> dict:
    """The case with its int4 weights read as S4_HALVES (the same random bytes: any byte is valid there)."""
    w = case["constants"][0]
    halves = Tensor(w.name, w.shape, "int4", data=w.data, layout="s4_halves")
    return {**case, "constants": [halves, *case["constants"][1:]]}


def halves_cases(rng) -> list[tuple[str, dict]]:
    """conv2d_s4 and fully_connected_s4 with S4_HALVES weights (a Helium program's; rows of an even length): on
    cortex-m55 run_halves (with the packed paths' scratch: blocks of four pixels, halves_rows' asm from 32 taps on,
    halves_4cols below or with a multiplier of INT32_MIN; 32-tap blocks, a last block of 2..30; odd pixel and
    filter counts, groups; 1x1 read in place), the unpacked path (the planned scratch) and the portable one (none);
    mf_s4_halves_row for the fully connected; elsewhere the portable statement."""
    im2col = SCRATCH["conv2d_s4_im2col"]
    cases = []
    for wc, kernel, opg, pad in ((2, (3, 3), 5, None), (16, (3, 3), 7, [1, 1]), (64, (3, 3), 3, [1, 1]),
                                 (6, (1, 5), 30, None), (1, (5, 4), 9, [2, 1]), (40, (1, 1), 5, [0, 0]),
                                 (32, (1, 1), 4, [0, 0]), (30, (1, 1), 3, [0, 0]), (64, (1, 1), 9, [0, 0]),
                                 (2, (1, 1), 2, [0, 0])):
        depth = kernel[0] * kernel[1] * wc
        case = as_halves(conv_case(rng, "conv2d_s4", wc, kernel, opg=opg, pad=pad))
        cases.append((f"halves_c{wc}_k{kernel[0]}x{kernel[1]}_packed", {**case, "scratch": im2col(depth=depth)}))
        cases.append((f"halves_c{wc}_k{kernel[0]}x{kernel[1]}_planned", as_halves(
            conv_case(rng, "conv2d_s4", wc, kernel, opg=opg, pad=pad))))
    for wc, kernel, groups in ((4, (3, 3), 2), (8, (1, 1), 3)):
        depth = kernel[0] * kernel[1] * wc
        case = as_halves(conv_case(rng, "conv2d_s4", wc, kernel, groups=groups, opg=3))
        cases.append((f"halves_groups{groups}_c{wc}", {**case, "scratch": im2col(depth=depth)}))
    cases.append(("halves_no_scratch", as_halves(conv_case(rng, "conv2d_s4", 4, (3, 3), scratch=False))))
    # 30 filters of 18 taps: the packed plan (120 bytes) holds the patch but not the offset table (20 + 120)
    case = as_halves(conv_case(rng, "conv2d_s4", 2, (3, 3), opg=30, pad=[1, 1]))
    case["attrs"]["input_offset"] = 77
    cases.append(("halves_c2_k3x3_no_table", {**case, "scratch": im2col(depth=18)}))
    # the packed plan's asm rows loop (halves_rows: 32 taps or more, the vector requantization): the four patches in
    # the scratch or, a 1x1 of unit stride, in place; a last block of 2..30 taps or none; more than 64 filters (the
    # table a chunk at a time); groups; odd pixel counts (a last block of 1..3 pixels); each shape three times
    # (per-tensor / per-channel, int16 / int32 parameters, input offsets and left shifts as drawn)
    for wc, kernel, opg, pad, stride, groups in ((16, (3, 3), 6, [1, 1], [1, 1], 1), (36, (1, 1), 5, [0, 0], [1, 1], 1),
                                                 (64, (1, 1), 3, [0, 0], [1, 1], 1), (48, (1, 1), 70, [0, 0], None, 1),
                                                 (16, (3, 3), 66, [1, 1], None, 1), (40, (1, 1), 4, [0, 0], [2, 1], 1),
                                                 (34, (1, 1), 3, [0, 0], [1, 1], 2), (8, (3, 3), 4, None, None, 2),
                                                 (12, (1, 3), 5, None, None, 1), (4, (3, 3), 7, [1, 1], [1, 1], 1)):
        for i in range(3):
            depth, tag = kernel[0] * kernel[1] * wc, f"c{wc}_k{kernel[0]}x{kernel[1]}_g{groups}_o{opg}_{i}"
            case = as_halves(conv_case(rng, "conv2d_s4", wc, kernel, groups=groups, opg=opg, pad=pad, stride=stride))
            cases.append((f"halves_rows_{tag}", {**case, "scratch": im2col(depth=depth)}))
    # a multiplier of INT32_MIN: halves_4cols' scalar requantization
    case = as_halves(conv_case(rng, "conv2d_s4", 16, (3, 3), opg=5, pad=[1, 1]))
    consts = [t for t in case["constants"] if t.name != "m"]
    mult = rng.integers(1 << 30, (1 << 31) - 1, size=5).astype(np.int32)
    mult[2] = -(1 << 31)
    consts.insert(len(consts) - 1, const("m", mult))
    shift = const("s", rng.integers(-8, 2, size=5).astype(np.int8))
    case.update(constants=[*consts[:-1], shift])
    cases.append(("halves_rows_c16_int32_min", {**case, "scratch": im2col(depth=144)}))
    for depth in (2, 16, 30, 32, 40, 48, 64, 94, 640):
        for oc in (1, 3, 6):
            case = as_halves(fc_case(rng, "fully_connected_s4", depth, oc, int(rng.integers(1, 4))))
            cases.append((f"halves_fc_d{depth}_o{oc}", case))
    return cases


def test_halves_weights_are_the_plain_ones_they_stand_for():
    """Python's reading of S4_HALVES: the op on S4_HALVES bytes gives the bytes of the same op on the same weights
    packed CMSIS-NN's way (pack_int4 of unpack_int4_halves), for every halves case (host Python and C)."""
    from mcuforge.kernels.int4 import pack_int4, unpack_int4_halves

    for name, case in halves_cases(np.random.default_rng(31)):
        w = case["constants"][0]
        plain = Tensor(w.name, w.shape, "int4", data=pack_int4(unpack_int4_halves(w.data, w.shape)))
        python, c = run_both(*one_op(case))
        plain_python, plain_c = run_both(*one_op({**case, "constants": [plain, *case["constants"][1:]]}))
        assert_same_bytes(python, plain_python, name)
        assert_same_bytes(c, plain_c, name)


def test_conv2d_s4_mve_plan_holds_the_unpacked_filters():
    """On cortex-m55 a conv2d_s4 plans conv2d_s8's im2col patches and then its filters unpacked to int8, as many
    as 4 KB holds, at most 64 and all of them (the kernel's buffer: nothing of it on the stack); beyond 4096 taps
    only the patches (the packed-weight paths run). The DSP cores keep the packed paths' plan."""
    for (oc, kh, kw, ic), filters in (((17, 3, 3, 64), 7), ((70, 3, 3, 3), 64), ((5, 3, 3, 8), 5),
                                      ((9, 5, 4, 1), 9), ((3, 1, 1, 4096), 1), ((3, 1, 1, 4100), 0)):
        depth = kh * kw * ic
        im2col = 5 * -(-depth // 16) * 16
        assert kernel_scratch_bytes("conv2d_s4", (oc, kh, kw, ic), "cortex-m55") == im2col + filters * depth
        assert filters * depth <= 4096
        assert kernel_scratch_bytes("conv2d_s4", (oc, kh, kw, ic), "cortex-m4") == 5 * -(-depth // 8) * 8


def one_op(case: dict) -> tuple[bytes, list[np.ndarray]]:
    program = one_op_program([t for t, _ in case["inputs"]], case["outputs"], case["kind"], case["attrs"],
                             case["constants"], op_inputs=case["op_inputs"])
    return program, [v for _, v in case["inputs"]]


def test_host_c_equals_python():
    for name, case in sweep_cases(21):
        program, values = one_op(case)
        assert_same_bytes(*run_both(program, values), name)


@pytest.mark.parametrize("target", BOARDS)
def test_board_equals_host(target):
    sweep = BoardSweep()
    for name, case in sweep_cases(22):
        sweep.add(name, case["kind"], case["attrs"], case["inputs"], case["outputs"], case["constants"],
                  op_inputs=case["op_inputs"], scratch=case["scratch"])  # the target's planned scratch, or none
    sweep.assert_same_on_board(target)


def widened(case: dict) -> dict:
    """The case with its compact parameters stored as the int32 ones they stand for."""
    consts = []
    for t in case["constants"]:
        if t.dtype == "int16":
            data = t.data.astype(np.int64) << (16 if t.name == "m" else 0)
            t = const(t.name, data.astype(np.int32))
        consts.append(t)
    return {**case, "constants": consts}


def test_compact_parameters_are_the_int32_ones_they_stand_for():
    """An int16 bias and 16-bit multipliers give, on both hosts, the bytes of the same op with the int32 bias
    and the multipliers m << 16; the sweep holds the compact form in about half its s4 cases."""
    compact = [(name, case) for name, case in sweep_cases(23)
               if any(t.dtype == "int16" for t in case["constants"])]
    assert len(compact) > 30
    for name, case in compact:
        program, values = one_op(case)
        python, c = run_both(program, values)
        assert_same_bytes(python, c, name)
        wide_python, wide_c = run_both(one_op(widened(case))[0], values)
        assert_same_bytes(python, wide_python, name)
        assert_same_bytes(c, wide_c, name)


def test_readers_keep_compact_parameters_to_the_s4_kinds():
    """int16 multipliers must be constants in [0, 32767], and only the s4 kinds take int16 ones (an s8 kind
    would read them as int32): both readers reject either."""
    rng = np.random.default_rng(8)
    case = fc_case(rng, "fully_connected_s4", 9, 4, 1)
    bias, mult = compact_params(rng, np.zeros(4, np.int32), np.zeros(4, np.int32))
    consts = [case["constants"][0], const("b", bias.astype(np.int16)), const("m", np.resize(mult, 4).astype(np.int16)),
              const("s", np.full(4, -3, np.int8))]
    case = {**case, "constants": consts, "op_inputs": ["x", "w", "b", "m", "s"]}
    program, values = one_op(case)
    assert_same_bytes(*run_both(program, values), "valid as written")
    m_at = h_at = read_header(program)
    data_at = m_at.constants_offset + struct.unpack_from("<I", program, tensor_field(program, "m", 44))[0]
    damaged = bytearray(program)
    struct.pack_into("<h", damaged, data_at + 2, -5)  # a negative 16-bit multiplier
    both_reject(fix_crcs(damaged), "negative", "MF_ERR_SHAPE")
    int8_case = {**fc_case(rng, "fully_connected_s8", 9, 4, 1)}
    int8_case["constants"] = [int8_case["constants"][0], *consts[1:]]
    int8_case["op_inputs"] = ["x", "w", "b", "m", "s"]
    with pytest.raises(ValueError, match="only the s4 kinds"):
        one_op(int8_case)  # the writer refuses it
    damaged = bytearray(program)
    struct.pack_into("<H", damaged, h_at.ops_offset, OP_KINDS["fully_connected_s8"]["id"])
    struct.pack_into("<B", damaged, h_at.ops_offset + 3, PRECISION_CODES["a8w8"])
    both_reject(fix_crcs(damaged), "is int4|only the s4 kinds", "MF_ERR_FORMAT")


# -- the readers: packing, sizes, precision ------------------------------------------------------

def fc4_program(depth: int = 5, oc: int = 3) -> bytes:
    rng = np.random.default_rng(3)
    program, _ = one_op(widened(fc_case(rng, "fully_connected_s4", depth, oc, 1)))  # int32 parameters
    return program


def tensor_field(program: bytes, name: str, field_offset: int) -> int:
    h = read_header(program)
    index = list(deserialize(program).tensors).index(name)
    return h.tensors_offset + index * h.tensor_record_size + field_offset


def both_reject(data: bytes, python_match: str, c_status: str = "MF_ERR_FORMAT") -> None:
    with pytest.raises(ProgramFormatError, match=python_match):
        deserialize(data)
    with pytest.raises(cruntime.CRuntimeError) as err:
        cruntime.LoadedProgram(data)
    assert err.value.status == c_status


def test_readers_check_the_int4_packing():
    program = fc4_program()  # 15 weights: an odd count, 8 bytes, the last high nibble the pad
    h = read_header(program)
    w = deserialize(program).tensors["w"]
    assert w.nbytes == 8 and w.data.size == 8
    cruntime.LoadedProgram(program)  # valid as written
    data_at = h.constants_offset + struct.unpack_from("<I", program, tensor_field(program, "w", 44))[0]
    damaged = bytearray(program)
    damaged[data_at + 7] |= 0x10  # a non-zero pad nibble
    both_reject(fix_crcs(damaged), "unused high nibble")
    for nbytes in (7, 9, 15):  # not ceil(15 / 2)
        damaged = bytearray(program)
        struct.pack_into("<I", damaged, tensor_field(program, "w", 48), nbytes)
        both_reject(fix_crcs(damaged), "nbytes")


def test_readers_keep_int4_to_the_s4_weights():
    program = fc4_program()
    x_dtype = tensor_field(program, "x", 8)
    damaged = bytearray(program)
    damaged[x_dtype] = 6  # the activation as int4 (its nbytes disagree too: either check rejects)
    both_reject(fix_crcs(damaged), "int4|nbytes")
    h = read_header(program)
    damaged = bytearray(program)
    struct.pack_into("<H", damaged, h.ops_offset, OP_KINDS["fully_connected_s8"]["id"])  # int4 weights, s8 kind
    struct.pack_into("<B", damaged, h.ops_offset + 3, PRECISION_CODES["a8w8"])
    both_reject(fix_crcs(damaged), "is int4")


def test_readers_keep_s4_halves_to_its_kinds():
    """Layout code 2 (S4_HALVES) only on the int4 weights, rows of an even length, of conv2d_s4 / fully_connected_s4;
    an unknown layout code refused: both readers."""
    rng = np.random.default_rng(12)
    program, values = one_op(as_halves(fc_case(rng, "fully_connected_s4", 6, 3, 1)))
    assert deserialize(program).tensors["w"].layout == "s4_halves"
    assert_same_bytes(*run_both(program, values), "valid as written")
    layout_at = tensor_field(program, "w", 10)
    assert program[layout_at] == 2
    damaged = bytearray(program)
    damaged[layout_at] = 4  # no such layout
    both_reject(fix_crcs(damaged), "unknown layout code 4")
    damaged = bytearray(program)
    damaged[tensor_field(program, "x", 10)] = 2  # an int8 activation
    both_reject(fix_crcs(damaged), "only int4 weights take it")
    odd, _ = one_op(fc_case(rng, "fully_connected_s4", 7, 3, 1))  # rows of 7: no halves
    damaged = bytearray(odd)
    damaged[tensor_field(odd, "w", 10)] = 2
    both_reject(fix_crcs(damaged), "even length")
    dw, _ = one_op(conv_case(rng, "depthwise_conv2d_s4", 4, (3, 3), dm=1))  # 36 taps: even, but not its kind
    damaged = bytearray(dw)
    damaged[tensor_field(dw, "w", 10)] = 2
    both_reject(fix_crcs(damaged), "is s4_halves, which only")


def test_readers_keep_s8_pairs_to_its_kinds():
    """Layout code 3 (S8_PAIRS, format 3.5) only on the constant int8 (O, I) weights, O and I multiples of 4, of
    the fully connected kinds: both readers; a program with one is written as 3.5 and runs the same as with the
    plain weights on the host C runtime."""
    rng = np.random.default_rng(13)
    w = rng.integers(-128, 128, size=(8, 12), dtype=np.int8)
    x = rng.integers(-128, 128, size=(2, 12), dtype=np.int8)
    attrs = {"input_offset": 0, "output_offset": 3, "act_min": -128, "act_max": 127}
    mult, shift = np.array([1 << 30], np.int32), np.array([-3], np.int8)

    def program(weight: Tensor) -> bytes:
        return one_op_program([act("x", (2, 12))], [act("y", (2, 8))], "fully_connected_s8", attrs,
                              [weight, const("m", mult), const("s", shift)], op_inputs=["x", "w", "", "m", "s"])

    pairs = program(Tensor("w", w.shape, "int8", data=pack_pairs(w), layout=S8_PAIRS))
    assert deserialize(pairs).tensors["w"].layout == S8_PAIRS and read_header(pairs).version_minor == 5
    assert (unpack_pairs(deserialize(pairs).tensors["w"].data, w.shape) == w).all()
    plain = program(const("w", w))
    assert_same_bytes(run_both(plain, [x])[0], run_both(pairs, [x])[1], "S8_PAIRS on the host C runtime")
    layout_at = tensor_field(pairs, "w", 10)
    assert pairs[layout_at] == 3
    damaged = bytearray(pairs)
    damaged[tensor_field(pairs, "x", 10)] = 3  # an activation
    both_reject(fix_crcs(damaged), "layout s8_pairs on int8")
    damaged = bytearray(pairs)
    damaged[tensor_field(pairs, "m", 10)] = 3  # int32, and the wrong input
    both_reject(fix_crcs(damaged), "s8_pairs")
    odd = program(const("w", rng.integers(-128, 128, size=(8, 12), dtype=np.int8)))
    for shape in ((6, 16), (16, 6)):  # O or I not a multiple of 4 (the 96 bytes kept: the layout check rejects)
        damaged = bytearray(odd)
        damaged[tensor_field(odd, "w", 10)] = 3
        struct.pack_into("<2I", damaged, tensor_field(odd, "w", 12), *shape)
        both_reject(fix_crcs(damaged), "multiples of 4")
    with pytest.raises(ValueError, match="multiples of 4"):
        program(Tensor("w", (6, 16), "int8", data=rng.integers(-128, 128, size=(6, 16), dtype=np.int8),
                       layout=S8_PAIRS))


def precision_case_programs() -> list[bytes]:
    """Programs holding every kind the readers' precision tables name, but delegate (its own tests)."""
    from conftest import compiled

    rng = np.random.default_rng(6)
    programs = [one_op(case)[0] for _name, case in sweep_cases(5)]
    programs.append(conv_like_case(rng, depthwise=True)[0])
    programs.append(one_op_program([act("x", (2, 6))], [act("y", (2, 3))], "slice",
                                   {"begin": [0, 1], "end": [2, 6], "step": [1, 2]}))
    programs += [compiled(name)[2].to_bytes() for name in ("custom_fallback", "transformer_block")]
    programs.append(fuzz.seed_programs_of("every_s16_kernel"))  # the s16 kinds and the int8 <-> int16 conversions
    programs.append(fuzz.seed_programs_of("recurrent"))  # lstm_s8, gru_s8
    programs.append(fuzz.seed_programs_of("every_int8_kernel"))  # clamp_s8, maximum_s8, minimum_s8 among others
    programs += [fuzz.seed_programs_of(name) for name in fuzz.kind_seed_names()]  # embedding_s8, ... (own seeds)
    programs.append(fuzz.seed_programs_of("patch_chain"))  # insert_tile
    return programs


def test_readers_check_the_precision_byte():
    """Each op's precision byte against the kind's precisions (mcuforge.ir.KIND_PRECISIONS): every code on every
    op, C and Python readers agreeing (the C loader's, csrc/runtime/kind_table.h mf_kind_precisions)."""
    seen = set()
    for program in precision_case_programs():
        h = read_header(program)
        graph = deserialize(program)
        for i, op in enumerate(graph.ops):
            if op.kind in seen:
                continue
            seen.add(op.kind)
            for precision, code in [*PRECISION_CODES.items(), ("unknown", 7), ("unknown", 255)]:
                damaged = bytearray(program)
                struct.pack_into("<B", damaged, h.ops_offset + i * h.op_record_size + 3, code)
                damaged = fix_crcs(damaged)
                if precision in kind_precisions(op.kind):
                    deserialize(damaged)
                    cruntime.LoadedProgram(damaged)
                else:
                    both_reject(damaged, "precision code")
            # 0: not recorded (a format 1.0 file): both readers derive it
            damaged = bytearray(program)
            struct.pack_into("<B", damaged, h.ops_offset + i * h.op_record_size + 3, 0)
            assert deserialize(fix_crcs(damaged)).ops[i].precision == ""
            cruntime.LoadedProgram(fix_crcs(damaged))
    # the kinds whose precision the table fixes were all checked against the C loader
    missing = {k for k in KIND_PRECISIONS if k not in ("delegate", "transpose_conv2d_s8")} - seen
    assert not missing, sorted(missing)
