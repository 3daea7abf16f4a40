"""Grouped convolution and ceil_mode pooling: host kernels against independent references, C kernels
against the host kernels.

- Grouped conv2d_s8 (arm_convolve_s8 with input channels = groups x filter channels) against a plain
  integer loop where output channel o reads input channels ``g * Cf .. (g + 1) * Cf - 1`` of its group
  ``g = o // (O / G)`` (C int32 wrap, CMSIS-NN requantization from cmsis_reference.py).
- Pooling with an explicit output size (``output_hw``, as CMSIS-NN takes it) against torch's own
  ``max_pool2d`` / ``avg_pool2d`` with ``ceil_mode=True``: the output size, the windows torch drops and
  the divisor of the overhanging windows all come from torch, not from mcuforge.
- The C runtime built for the host gives the same bytes as the host kernels on random grouped and
  ceil-mode programs, and rejects at load time an output size whose last window misses the input.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_c_kernels import (
    act,
    act_range,
    assert_same_bytes,
    assert_sweep_on_board,
    const,
    int8,
    one_op_program,
    requant_params,
    run_both,
)

from mcuforge import cruntime
from mcuforge.kernels import avgpool_s8, conv2d_s8, conv_output_hw, maxpool_s8

from cmsis_reference import INT32_MAX, c_output, c_wrap32

# ---------------------------------------------------------------------------------------------------------
# Grouped convolution
# ---------------------------------------------------------------------------------------------------------


def ref_grouped_conv(x, w, bias, groups, in_off, out_off, mults, shifts, stride, pad, dil, act_min, act_max,
                     out_hw):
    """arm_convolve_s8 over groups: filter o of group g = o // (O / G) reads input channels of group g."""
    n, h, wd, _c = x.shape
    oc, kh, kw, cf = w.shape
    per_group = oc // groups
    oh, ow = out_hw
    out = np.zeros((n, oh, ow, oc), dtype=np.int8)
    xl, wl = x.tolist(), w.tolist()
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for o in range(oc):
                    first = (o // per_group) * cf
                    acc = int(bias[o]) if bias is not None else 0
                    for i in range(kh):
                        for j in range(kw):
                            iy, ix = oy * stride[0] - pad[0] + i * dil[0], ox * stride[1] - pad[1] + j * dil[1]
                            if 0 <= iy < h and 0 <= ix < wd:
                                for ch in range(cf):
                                    acc = c_wrap32(acc + (xl[b][iy][ix][first + ch] + in_off) * wl[o][i][j][ch])
                    k = o if len(mults) > 1 else 0
                    out[b, oy, ox, o] = c_output(acc, int(mults[k]), int(shifts[k]), out_off, act_min, act_max)
    return out


def grouped_case(rng: np.random.Generator) -> dict:
    while True:
        groups, cf, per_group = int(rng.integers(2, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        n, h, wd = int(rng.integers(1, 3)), int(rng.integers(1, 8)), int(rng.integers(1, 8))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pad = (int(rng.integers(0, 2)), int(rng.integers(0, 2)))
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        oh, ow = conv_output_hw((h, wd), (kh, kw), stride, pad, dil)
        if oh >= 1 and ow >= 1:
            break
    oc = groups * per_group
    mults, shifts = requant_params(rng, oc)
    lo, hi = act_range(rng)
    return dict(
        x=int8(rng, (n, h, wd, groups * cf)), w=int8(rng, (oc, kh, kw, cf)), groups=groups,
        bias=rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32) if rng.random() < 0.8 else None,
        in_off=int(rng.integers(-127, 129)), out_off=int(rng.integers(-128, 128)), mults=mults, shifts=shifts,
        stride=stride, pad=pad, dil=dil, act_min=lo, act_max=hi, out_hw=(oh, ow),
    )  # fmt: skip


def run_grouped(case: dict) -> np.ndarray:
    return conv2d_s8(case["x"], case["w"], case["bias"], input_offset=case["in_off"], output_offset=case["out_off"],
                     multipliers=case["mults"], shifts=case["shifts"], stride=case["stride"], padding=case["pad"],
                     dilation=case["dil"], act_min=case["act_min"], act_max=case["act_max"])


@pytest.mark.parametrize("seed", range(25))
def test_grouped_conv_against_loops(seed: int) -> None:
    case = grouped_case(np.random.default_rng(9000 + seed))
    got = run_grouped(case)
    assert got.shape == case["x"].shape[:1] + case["out_hw"] + (case["w"].shape[0],)
    expected = ref_grouped_conv(case["x"], case["w"], case["bias"], case["groups"], case["in_off"], case["out_off"],
                                case["mults"], case["shifts"], case["stride"], case["pad"], case["dil"],
                                case["act_min"], case["act_max"], case["out_hw"])
    np.testing.assert_array_equal(got, expected)


def test_grouped_conv_reads_only_its_group() -> None:
    # 2 groups of 2 channels, one filter each, all weights 1, multiplier 0.5 (x2 by shift 1 -> x1):
    # filter 0 sums channels 0 + 1, filter 1 sums channels 2 + 3
    x = np.array([[[[1, 2, 30, 40]]]], dtype=np.int8)
    w = np.ones((2, 1, 1, 2), dtype=np.int8)
    got = conv2d_s8(x, w, None, input_offset=0, output_offset=0, multipliers=[1 << 30], shifts=[1])
    assert got.ravel().tolist() == [3, 70]
    # with 2 filters per group the per-channel parameters follow the output channel, not the group
    w4 = np.ones((4, 1, 1, 2), dtype=np.int8)
    got = conv2d_s8(x, w4, None, input_offset=0, output_offset=0, multipliers=[1 << 30] * 4, shifts=[1, 2, 1, 2])
    assert got.ravel().tolist() == [3, 6, 70, 127]


def test_grouped_conv_accumulator_wraps_per_group() -> None:
    x = np.full((1, 1, 1, 4), 127, dtype=np.int8)
    w = np.full((2, 1, 1, 2), 127, dtype=np.int8)
    bias = np.array([INT32_MAX - 10, 1 << 30], dtype=np.int32)
    got = conv2d_s8(x, w, bias, input_offset=128, output_offset=0, multipliers=[1 << 30], shifts=[-24])
    expected = ref_grouped_conv(x, w, bias, 2, 128, 0, [1 << 30], [-24], (1, 1), (0, 0), (1, 1), -128, 127, (1, 1))
    np.testing.assert_array_equal(got, expected)
    assert got[0, 0, 0, 0] < 0 < got[0, 0, 0, 1]  # group 0 wrapped negative, group 1 did not


@pytest.mark.parametrize(("x_channels", "w_shape"), [(6, (3, 1, 1, 4)), (6, (5, 1, 1, 3)), (4, (3, 1, 1, 2))])
def test_grouped_conv_uneven_groups_rejected(x_channels: int, w_shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="groups"):
        conv2d_s8(np.zeros((1, 2, 2, x_channels), np.int8), np.zeros(w_shape, np.int8), None, input_offset=0,
                  output_offset=0, multipliers=[1 << 30], shifts=[0])


def conv_program(case: dict) -> bytes:
    oc = case["w"].shape[0]
    consts = [const("w", case["w"])] + ([const("b", case["bias"])] if case["bias"] is not None else [])
    consts += [const("m", case["mults"]), const("s", case["shifts"])]
    attrs = {"input_offset": case["in_off"], "output_offset": case["out_off"], "stride": list(case["stride"]),
             "padding": list(case["pad"]), "dilation": list(case["dil"]), "act_min": case["act_min"],
             "act_max": case["act_max"]}
    out_shape = case["x"].shape[:1] + case["out_hw"] + (oc,)
    return one_op_program([act("x", case["x"].shape)], [act("y", out_shape)], "conv2d_s8", attrs, consts,
                          op_inputs=["x", "w", "b" if case["bias"] is not None else "", "m", "s"])


def test_grouped_conv_c_kernel_bit_exact() -> None:
    rng = np.random.default_rng(91)
    for i in range(60):
        case = grouped_case(rng)
        expected, got = run_both(conv_program(case), [case["x"]])
        assert_same_bytes(expected, got, f"grouped case {i} (groups {case['groups']})")


def test_grouped_conv_c_rejects_uneven_groups() -> None:
    case = grouped_case(np.random.default_rng(92))
    case["x"] = int8(np.random.default_rng(0), case["x"].shape[:3] + (case["x"].shape[3] + 1,))
    with pytest.raises(cruntime.CRuntimeError, match=r"MF_ERR_SHAPE at op 0 \(conv2d_s8\)"):
        cruntime.run_program(conv_program(case), [case["x"]])


# ---------------------------------------------------------------------------------------------------------
# ceil_mode pooling
# ---------------------------------------------------------------------------------------------------------


def ceil_pool_case(rng: np.random.Generator) -> dict:
    """A pooling whose ceil_mode output is larger than the floor one (an overhanging last window)."""
    while True:
        h, w = int(rng.integers(2, 10)), int(rng.integers(2, 10))
        kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        pad = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)  # torch: pad <= kernel / 2
        if min(h + 2 * pad[0], w + 2 * pad[1]) < max(kernel):
            continue
        probe = torch.zeros(1, 1, h, w)
        ceil = F.max_pool2d(probe, kernel, stride, pad, ceil_mode=True).shape[2:]
        floor = F.max_pool2d(probe, kernel, stride, pad).shape[2:]
        if ceil != floor:
            break
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    x = int8(rng, (n, h, w, c)) if rng.random() < 0.7 else rng.integers(-2, 3, (n, h, w, c)).astype(np.int8)
    return dict(x=x, kernel=kernel, stride=stride, pad=pad, out_hw=tuple(ceil))


def torch_pool(case: dict, kind: str) -> np.ndarray:
    """torch's ceil_mode pooling of the int8 values, in float64, rounded half away from zero (avg)."""
    x = torch.from_numpy(case["x"].astype(np.float64)).permute(0, 3, 1, 2)
    if kind == "max":
        y = F.max_pool2d(x, case["kernel"], case["stride"], case["pad"], ceil_mode=True)
    else:
        y = F.avg_pool2d(x, case["kernel"], case["stride"], case["pad"], ceil_mode=True, count_include_pad=False)
        y = torch.sign(y) * torch.floor(torch.abs(y) + 0.5)
    return y.permute(0, 2, 3, 1).numpy().astype(np.int8)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_ceil_mode_pooling_matches_torch(kind: str) -> None:
    rng = np.random.default_rng(93 if kind == "max" else 94)
    fn = maxpool_s8 if kind == "max" else avgpool_s8
    for i in range(40):
        case = ceil_pool_case(rng)
        got = fn(case["x"], kernel=case["kernel"], stride=case["stride"], padding=case["pad"],
                 output_hw=case["out_hw"])
        np.testing.assert_array_equal(got, torch_pool(case, kind), err_msg=f"case {i}: {case['out_hw']}")


def test_avg_pool_without_padding_counts_in_bounds_with_count_include_pad() -> None:
    # torch's count_include_pad only counts declared padding: without it, an overhanging ceil_mode window
    # divides by its in-bounds elements, which is what avgpool_s8 does (the lowering relies on it)
    x = torch.arange(25, dtype=torch.float64).reshape(1, 1, 5, 5)
    with_pad = F.avg_pool2d(x, 2, 2, ceil_mode=True, count_include_pad=True)
    without = F.avg_pool2d(x, 2, 2, ceil_mode=True, count_include_pad=False)
    assert with_pad.shape == (1, 1, 3, 3) and torch.equal(with_pad, without)
    got = avgpool_s8(x.to(torch.int8).permute(0, 2, 3, 1).numpy(), kernel=2, stride=2, padding=0, output_hw=(3, 3))
    assert got[0, :, 2, 0].tolist() == [7, 17, 24]  # (4+9)/2 = 6.5 -> 7, (14+19)/2 = 16.5 -> 17, 24


def pool_program(case: dict, kind: str, out_hw=None) -> bytes:
    n, _, _, c = case["x"].shape
    out_hw = out_hw or case["out_hw"]
    attrs = {"kernel": list(case["kernel"]), "stride": list(case["stride"]), "padding": list(case["pad"]),
             "act_min": -128, "act_max": 127, "output_hw": list(out_hw)}
    return one_op_program([act("x", case["x"].shape)], [act("y", (n, *out_hw, c))], kind, attrs)


@pytest.mark.parametrize("kind", ["maxpool_s8", "avgpool_s8"])
def test_ceil_mode_pooling_c_kernel_bit_exact(kind: str) -> None:
    rng = np.random.default_rng(95)
    for i in range(60):
        case = ceil_pool_case(rng)
        assert_same_bytes(*run_both(pool_program(case, kind), [case["x"]]), f"{kind} ceil case {i}")
        if i < 5:  # and against torch, through the C kernel
            _, got = run_both(pool_program(case, kind), [case["x"]])
            np.testing.assert_array_equal(got[0], torch_pool(case, kind[:3]))


def test_pooling_c_rejects_window_past_the_input() -> None:
    # 4 columns, kernel 2, stride 2: a third output column would start at column 4, past the input
    case = dict(x=np.zeros((1, 4, 4, 1), np.int8), kernel=(2, 2), stride=(2, 2), pad=(0, 0), out_hw=(2, 2))
    cruntime.run_program(pool_program(case, "maxpool_s8"), [case["x"]])  # the valid size loads
    for kind in ("maxpool_s8", "avgpool_s8"):
        with pytest.raises(cruntime.CRuntimeError, match=rf"MF_ERR_SHAPE at op 0 \({kind}\)"):
            cruntime.run_program(pool_program(case, kind, out_hw=(2, 3)), [case["x"]])
    with pytest.raises(ValueError, match="padding"):
        maxpool_s8(case["x"], kernel=2, stride=2, padding=0, output_hw=(2, 3))


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_grouped_conv_and_ceil_pooling_on_the_boards(target: str) -> None:
    """The DSP (M4) and MVE (M55) kernel paths: random grouped convs and ceil_mode pools in one firmware run,
    the same bytes as the host Python kernels and the host C runtime."""
    rng = np.random.default_rng(96)
    cases = []
    for i in range(16):
        case = grouped_case(rng)
        cases.append((f"grouped conv {i} (groups {case['groups']})", conv_program(case), [case["x"]]))
    for kind in ("maxpool_s8", "avgpool_s8"):
        for i in range(8):
            case = ceil_pool_case(rng)
            cases.append((f"{kind} ceil {i}", pool_program(case, kind), [case["x"]]))
    assert_sweep_on_board(cases, target)
