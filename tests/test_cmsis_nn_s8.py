"""The int8 kernels against Arm's CMSIS-NN itself, not our transcription of it.

Each case is a one-op program (the random generators of test_c_kernels.py and test_c_kernels_ops.py, and
targeted ones here that reach each CMSIS-NN path: the conv wrapper's 1x1 / 1xN / generic paths and groups,
the depthwise 3x3 / opt / generic paths and depth multipliers, per-tensor and per-channel fully connected with
and without a weight zero point, transposed conv's direct and reverse-conv paths, ...). Every case is run by
our Python kernels, our host C runtime and CMSIS-NN built for the host (``mcuforge.cmsis_nn``:
``case_for_op`` + ``run_host``): all three byte-identical. Then on the boards, Cortex-M4 (CMSIS-NN's DSP
build vs our firmware's DSP paths) and Cortex-M55 (MVE): one QEMU boot per board for CMSIS-NN
(``run_board``) and one for ours (``BoardSweep``), compared byte for byte.

Differences on purpose, named where the cases are made:

- softmax_s8 rows of 512 or more entries: once the sum of exps reaches 2^28, CMSIS-NN's C shifts an int32 by
  32 or more (undefined; x86 and Arm give different bytes); ours rounds exactly (kernels/softmax.py).
- transpose_conv2d_s8 geometries outside what CMSIS-NN computes (``ops_s8.transpose_conv_problem``: torch's
  padding and output padding beyond TFLite's; arm_transpose_conv_s8 writes past its output or leaves rows
  unwritten there); ``case_for_op`` refuses them.
- add_s8 with a left_shift below 16 on the DSP board: CMSIS-NN's DSP path widens two (x + offset) lanes into a
  word and shifts each out of it as ``(word & 0xFFFF) << left_shift``, zero-extending a negative lane, which only
  the wrap of a shift by 16 or more undoes; its own C path (the host) and MVE path, and ours, shift the signed
  value. TensorFlow Lite's int8 ADD always has left_shift 20; ``board_difference`` names these cases, which the
  host test and the MVE board still compare.
- fully_connected_per_channel_s8 with a filter offset on the MVE board: arm_nn_vec_mat_mult_t_per_ch_s8's MVE path
  for a nonzero rhs_offset requantizes each block of four channels with the first one's multiplier and shift, and
  steps them by one channel per block (the per-tensor loop's code); its C and DSP paths, and ours, requantize per
  channel. Named by ``board_difference``; the host and the DSP board compare them.
- pad_s8 padding more than 4 dims, batch_matmul_s8 broadcasting more than 2 batch dims, transpose of more than 4
  dims (once size-1 dims are dropped and dims that stay together merged): arm_pad_s8, arm_batch_matmul_s8 and
  arm_transpose_s8 have 4 dims; no counterpart.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest
from board_sweep import BoardSweep
from test_c_kernels import (
    act,
    act_range,
    add_sweep,
    clamp_reshape_transpose_sweep,
    const,
    int8,
    merged_program,
    one_op_program,
    pooling_sweep,
)
from test_c_kernels_ops import (
    batch_matmul_case,
    concat_sweep,
    mul_case,
    pad_case,
    softmax_case,
    sweep,
    transpose_conv_program,
)

from mcuforge import cruntime, firmware
from mcuforge.cmsis_nn import harness, ops
from mcuforge.cmsis_nn.ops_s8 import conv_1xn_padding_ok, transpose_conv_problem
from mcuforge.ir import Tensor
from mcuforge.kernels import conv_output_hw
from mcuforge.kernels.fc_pairs import S8_PAIRS, pack_pairs
from mcuforge.kernels.transpose_conv import transpose_conv_output_hw
from mcuforge.program import deserialize, read_header
from mcuforge.runtime import execute

from conftest import compiled, op_outputs, program_inputs

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


@dataclass
class Item:
    family: str
    what: str
    program: bytes
    values: list
    function: str | None = None  # a specific CMSIS-NN path instead of the converter's default

    @property
    def name(self) -> str:
        return f"{self.family}: {self.what}" + (f" [{self.function}]" if self.function else "")


# ------------------------------------------------------------------------------------- random parameters

def requant(rng, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Multipliers and shifts (program dtypes), per tensor or per channel, reaching every requantization
    path: realistic right shifts, unsaturated left shifts, left shifts that overflow (wrap) the shifted
    accumulator, and extreme multipliers and shifts."""
    n = channels if rng.random() < 0.7 else 1
    r = rng.random()
    mult = rng.integers(1 << 30, INT32_MAX, size=n, dtype=np.int64)
    if r < 0.45:
        shift = rng.integers(-12, 1, size=n)
    elif r < 0.6:
        shift = rng.integers(1, 5, size=n)
    elif r < 0.75:
        shift = rng.integers(5, 31, size=n)
    else:
        mult = rng.choice([INT32_MIN, INT32_MAX, 0, 1, -1, 1 << 30, int(rng.integers(INT32_MIN, INT32_MAX))], size=n)
        shift = rng.choice([-31, -20, -1, 0, 1, 12, 30], size=n)
    return np.asarray(mult, np.int64).astype(np.int32), np.asarray(shift).astype(np.int8)


def in_offset(rng) -> int:
    """[-127, 128], the extremes (zero points 127 and -128) often."""
    return int(rng.choice([-127, 128])) if rng.random() < 0.25 else int(rng.integers(-127, 129))


def out_offset(rng) -> int:
    return int(rng.choice([-128, 127])) if rng.random() < 0.2 else int(rng.integers(-128, 128))


def channels(rng) -> int:
    """1..17: every tail of the 4-, 8- and 16-lane loops."""
    return int(rng.integers(1, 18))


def maybe_bias(rng, oc: int) -> np.ndarray | None:
    if rng.random() < 0.15:
        return None
    if rng.random() < 0.1:  # accumulators near the int32 ends: the sums wrap
        return rng.choice([INT32_MIN, INT32_MAX - 1000, INT32_MAX], size=oc).astype(np.int32)
    return rng.integers(-(1 << 18), 1 << 18, size=oc).astype(np.int32)


def weighted(kind, rng, x_shape, out_shape, weight, attrs) -> tuple[bytes, list]:
    oc = out_shape[-1]
    bias = maybe_bias(rng, oc)
    mult, shift = requant(rng, oc)
    consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else [])
    consts += [const("m", mult), const("s", shift)]
    names = ["x", "w", "b" if bias is not None else "", "m", "s"]
    program = one_op_program([act("x", x_shape)], [act("y", out_shape)], kind, attrs, consts, op_inputs=names)
    return program, [int8(rng, x_shape)]


# ------------------------------------------------------------------------------------------- conv2d_s8

#: conv geometries: the wrapper's paths (1x1 unit stride, 1x1 strided, 1xN, generic) and what only the generic
#: path takes (groups, dilation); each case runs through the wrapper and through the path it names.
CONV_PATHS = {"1x1": ["mfcmp_conv_1x1_s8_fast", "mfcmp_conv_1x1_s8"], "1x1 strided": ["mfcmp_conv_1x1_s8"],
              "1xN": ["mfcmp_conv_1_x_n_s8"], "generic": ["mfcmp_conv_s8"], "grouped": ["mfcmp_conv_s8"],
              "dilated": ["mfcmp_conv_s8"]}


def conv_case(rng, geometry: str) -> tuple[bytes, list, str]:
    n, groups, dil, pad, stride = int(rng.integers(1, 3)), 1, [1, 1], [0, 0], [1, 1]
    c, oc = channels(rng), channels(rng)
    h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    kh, kw = 1, 1
    if geometry == "1x1 strided":
        stride = [int(rng.integers(1, 4)), int(rng.integers(2, 4))]
    elif geometry == "1xN":  # with TFLite's padding (conv_1xn_padding_ok), which the MVE path needs
        h, kw = 1, int(rng.integers(2, 5))
        stride = [1, int(rng.integers(1, 3))]
        c = int(rng.choice([4, 8, 12, 16])) if stride[1] % 4 else c  # stride_w * c % 4 == 0
        c = c if (stride[1] * c) % 4 == 0 else 4
        while True:
            w, pad = int(rng.integers(kw, 12)), [0, int(rng.integers(0, 2))]
            oh, ow = conv_output_hw((h, w), (kh, kw), stride, pad, dil)
            if conv_1xn_padding_ok(pad, w, kw, stride[1], oh, ow):
                break
    elif geometry in ("generic", "grouped", "dilated"):
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        h, w = int(rng.integers(kh, 8)), int(rng.integers(kw, 8))
        stride = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pad = [int(rng.integers(0, 2)), int(rng.integers(0, 2))]
        if geometry == "grouped":
            groups = int(rng.integers(2, 4))
            c, oc = groups * int(rng.integers(1, 5)), groups * int(rng.integers(1, 4))
        if geometry == "dilated":
            dil = [int(rng.integers(1, 3)), int(rng.integers(2, 4))]
            h, w = h + 2 * dil[0], w + 2 * dil[1]
    oh, ow = conv_output_hw((h, w), (kh, kw), stride, pad, dil)
    lo, hi = act_range(rng)
    attrs = {"input_offset": in_offset(rng), "output_offset": out_offset(rng), "stride": stride, "padding": pad,
             "dilation": dil, "act_min": lo, "act_max": hi}
    program, values = weighted("conv2d_s8", rng, (n, h, w, c), (n, oh, ow, oc), int8(rng, (oc, kh, kw, c // groups)),
                               attrs)
    return program, values, f"{geometry} x{(n, h, w, c)} k{(kh, kw)} oc{oc} s{stride} p{pad} d{dil} g{groups}"


# ------------------------------------------------------------------------------------- depthwise_conv2d_s8

#: depthwise geometries: the generic path (depth multiplier > 1, batch, dilation), the 3x3 path (DSP cores),
#: the opt path, a one-channel input with many outputs (a convolution, on MVE), and small maps at stride 1 (the
#: DSP cores' row pairs, dwv: at most 6 x 6 outputs) and at stride 2 across (dw3_small's whole padded map, up to
#: 13 x 13 words: MobileNet's 12 x 12 to 6 x 6 and 6 x 6 to 3 x 3, channel groups that share its padding).
DW_PATHS = {"generic": ["mfcmp_dw_s8"], "3x3": ["mfcmp_dw_3x3_s8", "mfcmp_dw_s8_opt"], "opt": ["mfcmp_dw_s8_opt"],
            "one channel": ["mfcmp_dw_s8"], "dilated": ["mfcmp_dw_s8"],
            "small": ["mfcmp_dw_3x3_s8", "mfcmp_dw_s8_opt"],
            "small stride 2": ["mfcmp_dw_3x3_s8", "mfcmp_dw_s8_opt"]}


def depthwise_case(rng, geometry: str) -> tuple[bytes, list, str]:
    n, dm, dil = 1, 1, [1, 1]
    c = channels(rng)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    stride = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
    pad = [int(rng.integers(0, 3)), int(rng.integers(0, 3))]
    if geometry == "generic":
        n, dm = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    elif geometry == "3x3":
        kh, kw, pad = 3, 3, [int(rng.integers(0, 2)), int(rng.integers(0, 2))]
    elif geometry == "one channel":
        c, dm = 1, int(rng.integers(2, 18))
    elif geometry == "dilated":
        dil = [int(rng.integers(1, 3)), int(rng.integers(2, 4))]
    elif geometry == "small":
        kh, kw, stride, pad = 3, 3, [1, 1], [1, 1]
    elif geometry == "small stride 2":
        kh, kw, stride, pad = 3, 3, [int(rng.integers(1, 3)), 2], [int(rng.integers(0, 2)), int(rng.integers(0, 2))]
    pad = [min(pad[0], (kh - 1) * dil[0]), min(pad[1], (kw - 1) * dil[1])]
    h, w = int(rng.integers((kh - 1) * dil[0] + 1, 10)), int(rng.integers((kw - 1) * dil[1] + 1, 10))
    if geometry == "small":
        h, w, c = int(rng.integers(2, 7)), int(rng.integers(2, 7)), 4 * int(rng.integers(1, 5))
    if geometry == "small stride 2":
        h, w, c = int(rng.integers(3, 14)), int(rng.integers(3, 14)), 4 * int(rng.integers(1, 9))
    oh, ow = conv_output_hw((h, w), (kh, kw), stride, pad, dil)
    oc = c * dm
    lo, hi = act_range(rng)
    attrs = {"input_offset": in_offset(rng), "output_offset": out_offset(rng), "stride": stride, "padding": pad,
             "dilation": dil, "depth_multiplier": dm, "act_min": lo, "act_max": hi}
    program, values = weighted("depthwise_conv2d_s8", rng, (n, h, w, c), (n, oh, ow, oc), int8(rng, (1, kh, kw, oc)),
                               attrs)
    return program, values, f"{geometry} x{(n, h, w, c)} k{(kh, kw)} dm{dm} s{stride} p{pad} d{dil}"


# ------------------------------------------------------------------------------------------ fully connected

def fully_connected_case(rng, kind: str, filter_offset: bool, pairs: bool = False) -> tuple[bytes, list, str]:
    """``pairs``: O and I multiples of 4, the weights stored as S8_PAIRS (a DSP core's program), the input offset
    0 (the DSP pairs loop) in half the cases."""
    rows, depth, oc = int(rng.integers(1, 4)), int(rng.integers(1, 40)), channels(rng)
    if rng.random() < 0.1:
        depth = int(rng.integers(100, 600))
    if pairs:
        depth, oc = 4 * (depth // 4 + 1), 4 * (oc // 4 + 1)
    mult, shift = requant(rng, oc)
    if kind == "fully_connected_s8":  # one multiplier and shift: arm_fully_connected_s8
        mult, shift = mult[:1], shift[:1]
    else:  # one per channel (the kind requires length O)
        mult, shift = np.resize(mult, oc), np.resize(shift, oc)
    bias = maybe_bias(rng, oc)
    lo, hi = act_range(rng)
    attrs = {"input_offset": in_offset(rng), "output_offset": out_offset(rng), "act_min": lo, "act_max": hi}
    if pairs and rng.random() < 0.5:
        attrs["input_offset"] = 0
    if filter_offset:
        attrs["filter_offset"] = in_offset(rng)
    w = int8(rng, (oc, depth))
    w_const = Tensor("w", w.shape, "int8", data=pack_pairs(w), layout=S8_PAIRS) if pairs else const("w", w)
    consts = [w_const] + ([const("b", bias)] if bias is not None else [])
    consts += [const("m", mult), const("s", shift)]
    x_shape = (rows, depth) if rng.random() < 0.5 else (rows, 1, depth)
    program = one_op_program([act("x", x_shape)], [act("y", (rows, oc))], kind, attrs, consts,
                             op_inputs=["x", "w", "b" if bias is not None else "", "m", "s"])
    return program, [int8(rng, x_shape)], f"{kind} {x_shape} -> {oc} {attrs}{' s8_pairs' if pairs else ''}"


# -------------------------------------------------------------------------------------- transpose conv

def transpose_conv_case(rng, reverse: bool) -> tuple[bytes, list, str]:
    """A geometry CMSIS-NN computes (``transpose_conv_problem``): the direct path's, or with ``reverse`` the
    wrapper's reverse-conv path (strides <= 2, more than 16 input channels)."""
    while True:
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
        c = int(rng.integers(17, 24)) if reverse else channels(rng)
        oc, kh, kw = channels(rng), int(rng.integers(1, 5)), int(rng.integers(1, 5))
        top = 3 if reverse else 4
        stride = (int(rng.integers(1, top)), int(rng.integers(1, top)))
        pad = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        base = transpose_conv_output_hw((h, w), (kh, kw), stride, pad)
        extra = (int(rng.integers(0, stride[0])), int(rng.integers(0, stride[1])))
        out = (base[0] + extra[0], base[1] + extra[1])
        paths = (True,) if reverse else (True, False)  # direct cases run through the wrapper and the direct path
        if min(base) >= 1 and all(transpose_conv_problem(wrapper, (h, w), c, (kh, kw), stride, pad, out) is None
                                  for wrapper in paths):
            break
    program = transpose_conv_program(rng, n, h, w, c, oc, kh, kw, stride, pad, extra)
    return program, [int8(rng, (n, h, w, c))], f"{(n, h, w, c)} k{(kh, kw)} oc{oc} s{stride} p{pad} +{extra}"


# ------------------------------------------------------------------------------------------ all families

def _items(family: str, cases, functions=(None,)) -> list[Item]:
    return [Item(family, what, program, values, fn) for what, program, values in cases for fn in functions]


def _made(maker, seed: int, count: int, *args) -> list[tuple[str, bytes, list]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        program, values, what = maker(rng, *args)
        out.append((f"case {i}: {what}", program, values))
    return out


def _short_softmax_rows(cases):
    """softmax_s8 cases whose rows are shorter than 512 entries (see the module's docstring)."""
    return [c for c in cases if deserialize(c[1]).tensors["x"].shape[-1] < 512]


def _cmsis_convertible(cases):
    """The cases whose op has a CMSIS-NN counterpart (more than 4 dims: see the module's docstring)."""
    kept = []
    for case in cases:
        g = deserialize(case[1])
        try:
            ops.case_for_op(g, g.ops[0], case[2])
        except NotImplementedError:
            continue
        kept.append(case)
    return kept


@functools.cache
def families() -> dict[str, list[Item]]:
    """Every int8 family's cases, by family (seeded: the host and board tests run the same ones)."""
    fam: dict[str, list[Item]] = {}
    fam["conv2d_s8"] = [item for seed, geometry in enumerate(CONV_PATHS)
                        for item in _items("conv2d_s8", _made(conv_case, 1000 + seed, 24, geometry),
                                           (None, *CONV_PATHS[geometry]))]
    fam["depthwise_conv2d_s8"] = [item for seed, geometry in enumerate(DW_PATHS)
                                  for item in _items("depthwise_conv2d_s8",
                                                     _made(depthwise_case, 1100 + seed, 24, geometry),
                                                     (None, *DW_PATHS[geometry]))]
    fc = []
    for seed, (kind, offset) in enumerate([("fully_connected_s8", False), ("fully_connected_per_channel_s8", False),
                                           ("fully_connected_s8", True), ("fully_connected_per_channel_s8", True)]):
        fc += _items("fully_connected_s8", _made(fully_connected_case, 1200 + seed, 40, kind, offset),
                     (None, "mfcmp_fc_wrapper_s8"))
    for seed, (kind, offset) in enumerate([("fully_connected_s8", False), ("fully_connected_per_channel_s8", True)]):
        fc += _items("fully_connected_s8", _made(fully_connected_case, 1210 + seed, 20, kind, offset, True))
    fam["fully_connected_s8"] = fc
    fam["batch_matmul_s8"] = _items("batch_matmul_s8", _cmsis_convertible(sweep(batch_matmul_case, 501, 100)))
    fam["transpose_conv2d_s8"] = (
        _items("transpose_conv2d_s8", _made(transpose_conv_case, 1300, 60, False),
               (None, "mfcmp_transpose_conv_s8"))
        + _items("transpose_conv2d_s8", _made(transpose_conv_case, 1301, 30, True)))
    fam["avgpool_s8"] = _items("avgpool_s8", pooling_sweep("avgpool_s8")[:100])
    fam["maxpool_s8"] = _items("maxpool_s8", pooling_sweep("maxpool_s8")[:100])
    fam["add_s8"] = _items("add_s8", add_sweep()[:100])
    fam["mul_s8"] = _items("mul_s8", sweep(mul_case, 101, 100))
    fam["softmax_s8"] = _items("softmax_s8", _short_softmax_rows(sweep(softmax_case, 201, 100)))
    fam["pad_s8"] = _items("pad_s8", _cmsis_convertible(sweep(pad_case, 301, 100)))
    fam["concat_s8"] = _items("concat_s8", [c for rank in range(1, 6) for c in concat_sweep(rank)[::3]])
    moves = clamp_reshape_transpose_sweep()
    fam["transpose"] = _items("transpose", _cmsis_convertible(
        [c for c in moves if c[0].startswith("transpose") and deserialize(c[1]).tensors["x"].dtype == "int8"]))
    fam["reshape"] = _items("reshape", [c for c in moves if c[0].startswith("reshape")][:40])
    return fam


def all_items() -> list[Item]:
    return [item for items in families().values() for item in items]


def board_difference(item: Item, target: str) -> str | None:
    """Why CMSIS-NN's build for ``target`` gives other bytes than its C path (and ours) on this case, or None (see
    the module's docstring)."""
    if item.family == "add_s8" and target == "cortex-m4":
        op = deserialize(item.program).ops[0]
        if op.attrs["left_shift"] < 16:
            return "arm_elementwise_add_s8's DSP path zero-extends negative 16-bit lanes (left_shift < 16)"
    if item.family == "fully_connected_s8" and target == "cortex-m55":
        g = deserialize(item.program)
        op = g.ops[0]
        mult, shift = (g.tensors[op.inputs[i]].data for i in (3, 4))
        per_channel = len(set(mult.tolist())) > 1 or len(set(shift.tolist())) > 1
        if op.attrs.get("filter_offset", 0) and per_channel and g.tensors[op.inputs[1]].shape[0] >= 4:
            return "arm_nn_vec_mat_mult_t_per_ch_s8's MVE path with a filter offset requantizes per 4 channels"
    return None


def cmsis_cases(items: list[Item]) -> list[harness.Case]:
    cases = []
    for item in items:
        g = deserialize(item.program)
        options = {"function": item.function} if item.function else {}
        cases.append(ops.case_for_op(g, g.ops[0], item.values, name=item.name, **options))
    return cases


def assert_same(items: list[Item], expected: list[np.ndarray], got: list[np.ndarray], what: str) -> None:
    bad = []
    for item, e, g in zip(items, expected, got, strict=True):
        if e.dtype != g.dtype or e.shape != g.shape or e.tobytes() != g.tobytes():
            diff = int(np.count_nonzero(e != g)) if e.shape == g.shape else -1
            bad.append(f"{item.name} ({diff} of {e.size} differ)")
    assert not bad, f"{what}: {len(bad)} of {len(items)} cases differ: " + "; ".join(bad[:10])


def test_every_int8_family_reaches_cmsis_nn():
    """The tier covers each family, and each CMSIS-NN path named, with a real number of cases."""
    fam = families()
    counts = {name: len(items) for name, items in fam.items()}
    print("cases per family:", counts)
    assert all(n >= 20 for n in counts.values()), counts
    functions = {c.function for c in cmsis_cases(all_items())}
    defined = {f for f in harness.functions() if f.startswith("mfcmp_") and f in {
        *(f for fs in CONV_PATHS.values() for f in fs), *(f for fs in DW_PATHS.values() for f in fs)}}
    assert defined <= functions
    assert {"mfcmp_conv_wrapper_s8", "mfcmp_dw_wrapper_s8", "mfcmp_fc_s8", "mfcmp_fc_per_channel_s8",
            "mfcmp_fc_wrapper_s8", "mfcmp_transpose_conv_wrapper_s8", "mfcmp_transpose_conv_s8",
            "mfcmp_batch_matmul_s8", "mfcmp_avgpool_s8", "mfcmp_max_pool_s8", "mfcmp_add_s8", "mfcmp_mul_s8",
            "mfcmp_softmax_s8", "mfcmp_pad_s8", "mfcmp_concat_s8", "mfcmp_transpose_s8",
            "mfcmp_reshape_s8"} <= functions


@functools.cache
def merged() -> tuple[bytes, list, list]:
    """Every case as one program of independent ops (test_c_kernels.merged_program)."""
    return merged_program([(i.name, i.program, i.values) for i in all_items()], "cortex-m55")


@functools.cache
def python_outputs() -> list[np.ndarray]:
    """Each case's output from our Python kernels, in case order."""
    program, values, owners = merged()
    python = execute(deserialize(program), values)
    return [python[indices[0]] for _, indices in owners]


def test_int8_families_match_cmsis_nn_on_host(cmsis_nn_root):
    """Python kernels, host C runtime and CMSIS-NN's host build: the same bytes, case by case."""
    items = all_items()
    program, values, owners = merged()
    host_c, _ = cruntime.run_program(program, values)
    ours = python_outputs()
    assert_same(items, ours, [host_c[indices[0]] for _, indices in owners], "host C vs Python kernels")
    got = harness.run_host(cmsis_cases(items), cmsis_nn_root)
    assert_same(items, ours, got, "CMSIS-NN (host) vs Python kernels")


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_int8_families_match_cmsis_nn_on_board(cmsis_nn_root, target):
    """CMSIS-NN's DSP (Cortex-M4) or MVE (Cortex-M55) build and our firmware on the same board, one boot each:
    the same bytes as each other and as the host Python kernels."""
    items = all_items()
    board_sweep = BoardSweep()
    for i, item in enumerate(items):
        g = deserialize(item.program)
        (op,) = g.ops
        board_sweep.add(f"c{i}", op.kind, op.attrs, [(g.tensors[n], v) for n, v in zip(g.inputs, item.values,
                                                                                        strict=True)],
                        [g.tensors[n] for n in g.outputs], [t for t in g.tensors.values() if t.is_constant],
                        op_inputs=op.inputs)
    ours, _trace, _facts = firmware.run_on_qemu(board_sweep.program(target), board_sweep.values, target)
    assert_same(items, python_outputs(), ours, f"mcuforge on {target} vs host Python")
    cmsis, instructions = harness.run_board(cmsis_cases(items), target, cmsis_nn_root)
    assert len(instructions) == len(items) and all(n >= 0 for n in instructions)
    kept = [i for i, item in enumerate(items) if board_difference(item, target) is None]
    print(f"{target}: {len(kept)} of {len(items)} cases compared with CMSIS-NN ({len(items) - len(kept)} named "
          f"differences of its {target} build)")
    assert_same([items[i] for i in kept], [ours[i] for i in kept], [cmsis[i] for i in kept],
                f"CMSIS-NN on {target} vs mcuforge on {target}")


@pytest.mark.parametrize("model, target", [("ds_cnn", "cortex-m55"), ("mobilenet_v1_025", "cortex-m55"),
                                           ("resnet8", "cortex-m55"), ("fc_autoencoder", "cortex-m55"),
                                           ("fc_autoencoder", "cortex-m4")])
def test_zoo_model_int8_ops_match_cmsis_nn_on_host(cmsis_nn_root, model, target):
    """Every op of a compiled MLPerf Tiny model converts to its CMSIS-NN call, and CMSIS-NN's host build gives
    each op's output from the op's inputs in the model's own run (on cortex-m4 the fully connected weights are
    S8_PAIRS, converted back to CMSIS-NN's order)."""
    _, _, prog = compiled(model, target)
    if target == "cortex-m4":
        assert any(t.layout == S8_PAIRS for t in prog.graph.tensors.values())
    graph = prog.graph
    xs = program_inputs(graph, np.random.default_rng(7))
    values = op_outputs(graph, xs)
    cases, expected = [], []
    for index, op in enumerate(graph.ops):
        inputs = [values[n] for n in op.inputs if n and not graph.tensors[n].is_constant]
        cases.append(ops.case_for_op(graph, op, inputs, name=f"{model} op {index} ({op.kind})"))
        expected.append(values[op.outputs[0]])
    got = harness.run_host(cases, cmsis_nn_root)
    for case, e, g in zip(cases, expected, got, strict=True):
        assert e.tobytes() == g.tobytes(), f"{case.name}: {int(np.count_nonzero(e != g))} of {e.size} values differ"


def test_no_counterpart_names_the_kind():
    g = deserialize(one_op_program([act("x", (2, 3))], [act("y", (2, 3))], "clamp_s8", {"act_min": 0, "act_max": 9}))
    with pytest.raises(NotImplementedError, match="clamp_s8"):
        ops.case_for_op(g, g.ops[0], [np.zeros((2, 3), np.int8)])


def test_filter_offset_is_an_optional_trailing_attribute():
    """fully_connected_s8's filter_offset (format 3.1): stored only when nonzero (a program without one has the
    bytes of one that says 0), read back as 0 when absent, refused outside [-127, 128] by both readers' checks."""
    rng = np.random.default_rng(5)
    attrs = {"input_offset": 3, "output_offset": -2, "act_min": -128, "act_max": 127}
    consts = [const("w", int8(rng, (4, 6))), const("m", np.full(4, 1 << 30, np.int32)),
              const("s", np.full(4, -12, np.int8))]

    def program(extra):
        return one_op_program([act("x", (2, 6))], [act("y", (2, 4))], "fully_connected_s8", {**attrs, **extra}, consts,
                              op_inputs=["x", "w", "", "m", "s"])

    assert program({}) == program({"filter_offset": 0})
    assert deserialize(program({})).ops[0].attrs["filter_offset"] == 0
    with_offset = program({"filter_offset": 100})
    words = read_header(with_offset).attr_word_count - read_header(program({})).attr_word_count
    assert words == 2 and deserialize(with_offset).ops[0].attrs["filter_offset"] == 100  # one int: tag and value
    x = int8(rng, (2, 6))
    python = execute(deserialize(with_offset), [x])[0]
    host_c, _ = cruntime.run_program(with_offset, [x])
    assert python.tobytes() == host_c[0].tobytes()
    assert python.tobytes() != execute(deserialize(program({})), [x])[0].tobytes()
    with pytest.raises(cruntime.CRuntimeError, match=r"MF_ERR_SHAPE at op 0 \(fully_connected_s8\)"):
        cruntime.run_program(program({"filter_offset": 129}), [x])
