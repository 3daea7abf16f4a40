"""The int16-activation, int4-weight and LSTM kernels against Arm's CMSIS-NN itself.

Every case is a one-op program; all of them (320, seeded) make one BoardSweep. Each is run by our Python
kernels, our host C runtime and CMSIS-NN built for the host (``mcuforge.cmsis_nn``: ``case_for_op`` +
``run_host``; conv2d_s16 and depthwise_conv2d_s16 also through arm_convolve_s16 / arm_depthwise_conv_s16
directly: 404 CMSIS-NN calls): all byte-identical. Then on Cortex-M4 (CMSIS-NN's DSP build vs our DSP paths)
and Cortex-M55 (MVE): one QEMU boot per board for CMSIS-NN (``run_board``) and one for ours (``BoardSweep``),
compared byte for byte.

Differences on purpose (docs/numerics.md, "Against CMSIS-NN itself: the s16, s4 and LSTM kinds"), where the
cases are made:
odd-channel depthwise_conv2d_s4 through CMSIS-NN's generic path only without padding and with multiplier 1
(``s4_case``); s4 output offsets not at the int32 ends (``s4_offsets``); on cortex-m55 the
arm_depthwise_conv_s4_opt cases against CMSIS-NN's host build (``gcc12_mve_miscompiled``).

Families: conv2d_s16 (int64 and int32 bias, through arm_convolve_wrapper_s16 and arm_convolve_s16),
depthwise_conv2d_s16 (the wrapper: its fast path for multiplier 1, and the generic one), fully_connected_s16,
batch_matmul_s16, avg/max pool s16, add/mul s16, softmax_s16 (our tables and random ones), activation_s16
(sigmoid/tanh, negative left shifts included), conv2d_s4 (1x1, 1xN, even and generic paths), depthwise_conv2d_s4,
fully_connected_s4 and lstm_s8 (vs arm_lstm_unidirectional_s8, cell scales 2^-16 .. 2^2 and 2^-43); and
sigmoid/tanh of every int16 code at eight left shifts.

Where mcuforge's form is wider or narrower than CMSIS-NN's arguments, the converter (cmsis_nn/ops_s16.py)
widens ours to the exact int32 values they stand for: the s4 kinds' int16 bias and 16-bit multipliers
(``m << 16``), our int8 shifts. Forms without a counterpart are left out, not compared: grouped conv2d_s16
and conv2d_s4 (CMSIS-NN's have no groups), per-channel fully_connected_s16 / fully_connected_s4 (CMSIS-NN's
are per tensor), gru_s8 (CMSIS-NN has no GRU), an s16 LSTM (mcuforge has none; arm_lstm_unidirectional_s16
is not compared), lut_s16 / clamp_s16 / the converting kinds (no CMSIS-NN function).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from board_sweep import BoardSweep
from cmsis_reference_s16 import read_sigmoid_table, sigmoid_table_q16
from test_c_kernels_s4 import as_halves
from test_c_kernels_s4 import conv_case as s4_conv_case
from test_c_kernels_s4 import fc_case as s4_fc_case
from test_c_kernels_s16 import (
    I16_MAX,
    I16_MIN,
    act,
    act_range,
    activation_case,
    add_case,
    batch_matmul_case,
    const,
    depthwise_case,
    geometry,
    int8,
    int16,
    mul_case,
    pool_case,
    s64_requant,
    softmax_case,
)
from test_lstm import lstm_case

from mcuforge import cruntime
from mcuforge.cmsis_nn import harness, ops
from mcuforge.ir import Tensor
from mcuforge.kernels.lut_s16 import SIGMOID_TABLE_U16, activation_s16
from mcuforge.kinds.scratch import SCRATCH
from mcuforge.program import deserialize
from mcuforge.runtime import execute

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
BOARDS = ("cortex-m4", "cortex-m55")


def test_sigmoid_table_is_cmsis_nns(cmsis_nn_root):
    """Our table (the rounded definition and Arm's 44 one-LSB corrections) is arm_nntables.c's, entry for entry."""
    table = read_sigmoid_table(cmsis_nn_root)
    assert table == SIGMOID_TABLE_U16.tolist() == sigmoid_table_q16()


@pytest.mark.parametrize("left_shift", [-31, -13, -3, -1, 0, 1, 3, 14])
def test_sigmoid_and_tanh_of_every_code_equal_cmsis_nn(cmsis_nn_root, left_shift):
    """activation_s16 of all 65536 int16 codes, sigmoid and tanh, against arm_nn_activation_s16 (host build):
    every table entry and every interpolation, the rounding right shifts of negative left shifts included."""
    codes = np.arange(I16_MIN, I16_MAX + 1, dtype=np.int16)
    cases = [harness.Case("mfcmp_activation_s16", [codes.size, left_shift, function], [codes], codes.shape,
                          np.dtype(np.int16), f"{name} << {left_shift}")
             for function, name in enumerate(("sigmoid", "tanh"))]
    sigmoid, tanh = harness.run_host(cases, cmsis_nn_root)
    assert activation_s16(codes, left_shift=left_shift, function="sigmoid").tolist() == sigmoid.tolist()
    assert activation_s16(codes, left_shift=left_shift, function="tanh").tolist() == tanh.tolist()


# ------------------------------------------------------------------------------------- case generators

def conv_s16_case(rng, sweep: BoardSweep, case: str, int32_bias: bool) -> None:
    """conv2d_s16 without groups: the int64 form (bias below 2^46 or none; REDUCE_MULTIPLIER's edges,
    shifts over [-31, 14]) or the int32 one (any bias, multiplier and shift in [-31, 30]; extreme inputs
    and weights wrap the int32 sum)."""
    h, w, kh, kw, st, pd, dl, oh, ow = geometry(rng)
    c = int(rng.choice([1, 2, 3, 4, 5, 8, 9, 16, 17]))  # every tail of the 2-, 4- and 8-lane loops
    oc, n = int(rng.integers(1, 10)), int(rng.integers(1, 3))
    extreme = rng.random() < 0.25
    weight = rng.choice(np.array([-128, 127], np.int8), (oc, kh, kw, c)) if extreme else int8(rng, (oc, kh, kw, c))
    if int32_bias:
        bias = rng.integers(INT32_MIN, INT32_MAX + 1, size=oc).astype(np.int32)
        pc = rng.random() < 0.7
        mult = rng.integers(INT32_MIN, INT32_MAX + 1, size=oc if pc else 1).astype(np.int32)
        if rng.random() < 0.5:
            mult = rng.integers(1 << 30, INT32_MAX, size=oc if pc else 1).astype(np.int32)
        shift = (rng.integers(-31, 31, size=oc if pc else 1) if rng.random() < 0.4
                 else rng.integers(-20, 2, size=oc if pc else 1)).astype(np.int8)
        consts, names = [const("w", weight), const("b", bias), const("m", mult), const("s", shift)], "xwbms"
    else:
        bias = None if rng.random() < 0.15 else rng.integers(-(1 << 45), 1 << 45, size=oc, dtype=np.int64)
        consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else []) + s64_requant(rng, oc)
        names = ["x", "w", "b" if bias is not None else "", "m", "s"]
    x = act("x", (n, h, w, c))
    xv = rng.choice(np.array([I16_MIN, I16_MAX], np.int16), x.shape) if extreme else int16(rng, x.shape)
    sweep.add(case, "conv2d_s16", {"stride": st, "padding": pd, "dilation": dl, **act_range(rng)}, [(x, xv)],
              [act("y", (n, oh, ow, oc))], consts, list(names), scratch=rng.random() < 0.8)


def per_tensor(consts: list[Tensor]) -> list[Tensor]:
    """The multipliers and shifts as one value each (CMSIS-NN's fully connected s16 / s4 are per tensor)."""
    return [const(t.name, np.asarray(t.data)[:1].copy()) if t.name in ("m", "s") else t for t in consts]


def fc_s16_case(rng, sweep: BoardSweep, case: str) -> None:
    rows, oc = int(rng.integers(1, 4)), int(rng.integers(1, 20))
    depth = int(rng.choice([1, 3, 4, 7, 8, 9, 16, 17, 33, 100, 600]))  # around the 2-, 4- and 8-lane widths
    bias = None if rng.random() < 0.2 else rng.integers(-(1 << 45), 1 << 45, size=oc, dtype=np.int64)
    consts = [const("w", int8(rng, (oc, depth)))] + ([const("b", bias)] if bias is not None else [])
    consts += per_tensor(s64_requant(rng, oc))
    x = act("x", (rows, depth))
    sweep.add(case, "fully_connected_s16", act_range(rng), [(x, int16(rng, x.shape))], [act("y", (rows, oc))],
              consts, ["x", "w", "b" if bias is not None else "", "m", "s"])


def s4_offsets(rng, attrs: dict) -> dict:
    """Input offsets at the ends of [-127, 128] often; output offsets over the int8 range, its ends, and past
    it (the s4 kinds take any int32). Not at the int32 ends: there ``requantized + offset`` overflows, which
    CMSIS-NN's C leaves undefined (signed overflow: the compiled code is free to clamp either way) and ours
    defines as a wrap; the Python and C kernels' own tests cover those."""
    attrs = dict(attrs)
    if rng.random() < 0.3:
        attrs["input_offset"] = int(rng.choice([-127, 128]))
    attrs["output_offset"] = int(rng.integers(-128, 128)) if rng.random() < 0.6 else int(
        rng.choice([-128, 127, 128, -129, 5000, -5000, 1 << 20, -(1 << 20)]))
    return attrs


def s4_case(rng, sweep: BoardSweep, case: str, kind: str) -> None:
    if kind == "conv2d_s4":
        kernel = [(1, 1), (1, 3), (3, 3), (2, 2), (3, 1)][int(rng.integers(0, 5))]
        wc = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 16, 17]))  # odd and even depths: the even (MVE) path
        c = s4_conv_case(rng, kind, wc, kernel)
        x, _ = c["inputs"][0]
        n, h, w, ch = x.shape
        a = c["attrs"]
        if kernel == (1, 1) and rng.random() < 0.7:  # the 1x1 paths: no padding, unit dilation (fast: stride 1)
            a.update(padding=[0, 0], dilation=[1, 1], stride=[1, 1] if rng.random() < 0.6 else a["stride"])
        elif kernel[0] == 1 and rng.random() < 0.6:  # 1xN: input height 1, no vertical padding, unit dilation
            h = 1
            a.update(padding=[0, a["padding"][1]], dilation=[1, 1])
        (sh, sw), (ph, pw), (dh, dw) = a["stride"], a["padding"], a["dilation"]
        oh, ow = (h + 2 * ph - dh * (kernel[0] - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kernel[1] - 1) - 1) // sw + 1
        if oh >= 1 and ow >= 1:
            x = act("x", (n, h, w, ch), "int8")
            c["inputs"] = [(x, int8(rng, x.shape))]
            c["outputs"] = [act("y", (n, oh, ow, c["outputs"][0].shape[3]), "int8")]
        else:  # the generator's own geometry
            c = s4_conv_case(rng, kind, wc, kernel)
    elif kind == "depthwise_conv2d_s4":
        wc, kernel = int(rng.integers(1, 18)), (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        c = s4_conv_case(rng, kind, wc, kernel, dm=1 if wc % 2 or rng.random() < 0.6 else None)
        a = c["attrs"]
        if wc % 2 and (c["inputs"][0][0].shape[0] > 1 or a["dilation"] != [1, 1]) and a["padding"] != [0, 0]:
            # CMSIS-NN's generic arm_depthwise_conv_s4 (batch > 1 or dilation) misreads the nibbles of an odd
            # channel count when padding clips a window (docs/numerics.md): compared without padding
            c = s4_conv_case(rng, kind, wc, kernel, dm=1, pad=[0, 0])
    else:
        c = s4_fc_case(rng, kind, int(rng.choice([1, 2, 3, 7, 8, 16, 17, 33, 64])), int(rng.integers(1, 12)),
                       int(rng.integers(1, 4)))
        c["constants"] = per_tensor(c["constants"])
    c["attrs"] = s4_offsets(rng, c["attrs"])
    sweep.add(case, c["kind"], c["attrs"], c["inputs"], c["outputs"], c["constants"], c["op_inputs"],
              scratch=c.get("scratch", True))


def s4_halves_case(rng, sweep: BoardSweep, case: str) -> None:
    """conv2d_s4 with S4_HALVES weights (a Helium program's order; CMSIS-NN gets its own packing of the same
    weights): on cortex-m55 run_halves -- halves_rows' asm on blocks of four pixels from 32 taps on (patches
    copied, or a 1x1's read in place; a last block of 2..30 taps or none), mf_s4_halves_row below -- with the
    packed plan's scratch, else the unpacked path; elsewhere the portable reader."""
    wc, kernel, pad, stride = [(16, (3, 3), [1, 1], None), (32, (1, 1), [0, 0], [1, 1]), (48, (1, 1), [0, 0], None),
                               (4, (3, 3), None, None), (64, (3, 3), [1, 1], [1, 1]), (6, (1, 3), None, None),
                               (20, (1, 1), [0, 0], [1, 1])][int(rng.integers(0, 7))]
    c = as_halves(s4_conv_case(rng, "conv2d_s4", wc, kernel, pad=pad, stride=stride, opg=int(rng.integers(1, 10))))
    depth = kernel[0] * kernel[1] * wc
    scratch = SCRATCH["conv2d_s4_im2col"](depth=depth) if rng.random() < 0.7 else True  # packed plan or planned
    sweep.add(case, c["kind"], s4_offsets(rng, c["attrs"]), c["inputs"], c["outputs"], c["constants"],
              c["op_inputs"], scratch=scratch)


def lstm_sweep_case(rng, sweep: BoardSweep, case: str, edge: str) -> None:
    """lstm_s8 (test_lstm's generator: saturating, clipped and extreme edges; cell scales 2^-16 .. 2^2 and
    2^-43), often at the cell scales 2^-13 .. 2^-15 that take a negative tanh shift."""
    a, p = lstm_case(rng, edge)
    if rng.random() < 0.4:
        p["cell_scale_power"] = int(rng.choice([-15, -14, -13]))
    x = a.pop("x")
    consts = [const(k, v) for k, v in a.items()]
    hidden = a["w_hh"].shape[1]
    sweep.add(case, "lstm_s8", p, [(act("x", x.shape, "int8"), x)], [act("y", (*x.shape[:2], hidden), "int8")],
              consts, ["x", *a])


#: kind (or form) -> (case generator, cases per sweep)
GENERATORS = {
    "conv2d_s16 int64 bias": (functools.partial(conv_s16_case, int32_bias=False), 28),
    "conv2d_s16 int32 bias": (functools.partial(conv_s16_case, int32_bias=True), 28),
    "depthwise_conv2d_s16": (depthwise_case, 28),
    "fully_connected_s16": (fc_s16_case, 24),
    "batch_matmul_s16": (batch_matmul_case, 16),
    "avgpool_s16": (functools.partial(pool_case, kind="avgpool_s16"), 16),
    "maxpool_s16": (functools.partial(pool_case, kind="maxpool_s16"), 16),
    "add_s16": (add_case, 16),
    "mul_s16": (mul_case, 16),
    "softmax_s16": (softmax_case, 16),
    "activation_s16": (activation_case, 24),
    "conv2d_s4": (functools.partial(s4_case, kind="conv2d_s4"), 32),
    "depthwise_conv2d_s4": (functools.partial(s4_case, kind="depthwise_conv2d_s4"), 24),
    "fully_connected_s4": (functools.partial(s4_case, kind="fully_connected_s4"), 20),
    "lstm_s8": (lambda rng, sweep, case: lstm_sweep_case(rng, sweep, case, ["", "saturate", "clip", "extremes"][
        int(rng.integers(0, 4))]), 16),
    "conv2d_s4 s4_halves": (s4_halves_case, 20),  # last: the families before keep their seeds
}


@functools.cache
def the_sweep() -> BoardSweep:
    sweep = BoardSweep()
    for k, (family, (make, count)) in enumerate(GENERATORS.items()):
        rng = np.random.default_rng(1600 + k)
        for i in range(count):
            make(rng, sweep, f"{family.replace(' ', '_')}_{i}")
    return sweep


#: Kinds whose cases also run through a CMSIS-NN path the wrapper would not pick for them everywhere.
EXTRA_PATHS = {"conv2d_s16": "mfcmp_conv_s16", "depthwise_conv2d_s16": "mfcmp_dw_s16"}


def cmsis_cases(program: bytes, sweep: BoardSweep) -> tuple[list[harness.Case], list[int]]:
    """Each op of the sweep's program as its CMSIS-NN call (named by its case), and for the kinds of
    EXTRA_PATHS once more through that path; with the index of the sweep output each case computes."""
    graph = deserialize(program)
    values = dict(zip(sweep.inputs, sweep.values, strict=True))
    cases, outputs = [], []
    for i, op in enumerate(graph.ops):
        acts = [values[n] for n in op.inputs if n and not graph.tensors[n].is_constant]
        name = op.outputs[0].split(".")[0]
        cases.append(ops.case_for_op(graph, op, acts, name=name))
        outputs.append(i)
        if op.kind in EXTRA_PATHS:
            cases.append(ops.case_for_op(graph, op, acts, function=EXTRA_PATHS[op.kind], name=name))
            outputs.append(i)
    return cases, outputs


def assert_same(where: str, names: list[str], ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    bad = []
    for case, a, b in zip(names, ours, theirs, strict=True):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            n = int(np.count_nonzero(a.reshape(-1) != b.reshape(-1))) if a.shape == b.shape else -1
            bad.append(f"{case} ({n} of {a.size} differ)")
    assert not bad, f"{where}: {len(bad)} of {len(ours)} cases differ: " + "; ".join(bad[:20])


def assert_same_as_cmsis(where: str, cases: list[harness.Case], outputs: list[int], ours: list[np.ndarray],
                         theirs: list[np.ndarray]) -> None:
    assert_same(where, [c.label for c in cases], [ours[i] for i in outputs], theirs)


def test_every_family_is_covered():
    kinds = {op.kind for op in the_sweep().ops}
    assert kinds == {f.split()[0] for f in GENERATORS}
    assert all(k in ops.CONVERTERS for k in kinds)


def test_host_python_c_and_cmsis_nn_are_identical(cmsis_nn_root):
    sweep = the_sweep()
    program = sweep.program("cortex-m55")
    ours = execute(deserialize(program), sweep.values)
    host_c, _ = cruntime.LoadedProgram(program).run(sweep.values)
    assert_same("host C vs Python", sweep.case_of_output, ours, host_c)
    cases, outputs = cmsis_cases(program, sweep)
    theirs = harness.run_host(cases, cmsis_nn_root)
    assert_same_as_cmsis("CMSIS-NN (host) vs ours", cases, outputs, ours, theirs)


def gcc12_mve_miscompiled(case: harness.Case) -> bool:
    """A depthwise_conv2d_s4 case that CMSIS-NN's wrapper sends to arm_depthwise_conv_s4_opt (batch 1, multiplier
    1, no dilation). Its MVE code selects the high-nibble lanes with the predicate constant 0x0F0F
    (``vrshlq_m_n_s32`` / ``vshrq_m_n_s32``); Debian's arm-none-eabi-gcc 12.2.1 loads that predicate as
    0xFFFFFFFF (``mov.w r4, #-1; vmsr p0, r4`` before the two VPST blocks), so on the cortex-m55 build every
    odd channel is weighted by its even neighbour's nibble. The C source is right (its host and DSP builds
    equal ours); the m55 build is not CMSIS-NN's arithmetic, so ours is compared with the host build there."""
    k = case.ints
    return case.function == "mfcmp_dw_wrapper_s4" and k[0] == 1 and k[11] == 1 and k[16] == k[17] == 1


@pytest.mark.parametrize("target", BOARDS)
def test_boards_equal_cmsis_nn_on_the_board(cmsis_nn_root, target):
    sweep = the_sweep()
    ours_host, ours_board, _ = sweep.run(target)
    assert_same(f"our firmware on {target} vs host", sweep.case_of_output, ours_host, ours_board)
    cases, outputs = cmsis_cases(sweep.program(target), sweep)
    theirs, _ = harness.run_board(cases, target, cmsis_nn_root)
    if target == "cortex-m55":
        miscompiled = [i for i, case in enumerate(cases) if gcc12_mve_miscompiled(case)]
        host = harness.run_host([cases[i] for i in miscompiled], cmsis_nn_root)
        for i, value in zip(miscompiled, host, strict=True):
            theirs[i] = value
    assert_same_as_cmsis(f"CMSIS-NN on {target} vs ours", cases, outputs, ours_board, theirs)
