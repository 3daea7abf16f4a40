"""batch_matmul_s8 and transpose_conv2d_s8 against the integer loops in cmsis_reference_ops.py
(arm_batch_matmul_s8's row-by-row vec_mat_mult, arm_transpose_conv_s8's scatter), and the transposed
convolution against torch's float conv_transpose2d within 1 LSB."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mcuforge.kernels import batch_matmul_s8, quantize_multipliers, transpose_conv2d_s8

from cmsis_reference_ops import ref_matmul, ref_transpose_conv

INT32_MAX = (1 << 31) - 1

# ---------------------------------------------------------------------------------------------------------
# batch matmul
# ---------------------------------------------------------------------------------------------------------


def ref_batch_matmul(lhs, rhs, p, adj_x, adj_y):
    """Broadcast the batch dims by index, then CMSIS's per-batch call with rhs as (N, K) rows."""
    a = np.swapaxes(lhs, -1, -2) if adj_x else lhs
    b_t = rhs if adj_y else np.swapaxes(rhs, -1, -2)  # rows of K, as arm_batch_matmul_s8 takes it
    batch = np.broadcast_shapes(a.shape[:-2], b_t.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b_t = np.broadcast_to(b_t, batch + b_t.shape[-2:])
    out = np.zeros(batch + (a.shape[-2], b_t.shape[-2]), dtype=np.int8)
    for idx in np.ndindex(batch):
        out[idx] = ref_matmul(a[idx].tolist(), b_t[idx].tolist(), p["lhs_offset"], p["rhs_offset"],
                              p["output_offset"], p["output_multiplier"], p["output_shift"], p["act_min"],
                              p["act_max"])  # fmt: skip
    return out


def random_matmul_params(rng: np.random.Generator) -> dict:
    p = dict(lhs_offset=int(rng.integers(-127, 129)), rhs_offset=int(rng.integers(-127, 129)),
             output_offset=int(rng.integers(-128, 128)), output_multiplier=int(rng.integers(1 << 30, INT32_MAX)),
             output_shift=int(rng.integers(-16, -6)), act_min=-128, act_max=127)  # fmt: skip
    if rng.random() < 0.2:
        p.update(output_shift=int(rng.choice([-31, 0, 5, 30])), output_multiplier=int(rng.choice([1, INT32_MAX])))
    if rng.random() < 0.3:
        p.update(act_min=int(rng.integers(-128, 0)), act_max=int(rng.integers(0, 128)))
    return p


@pytest.mark.parametrize("seed", range(60))
def test_batch_matmul_random_against_reference(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    m, k, n = (int(v) for v in rng.integers(1, 7, size=3))
    batch_rank = int(rng.integers(0, 3))
    full = [int(v) for v in rng.integers(1, 4, size=batch_rank)]
    lhs_batch = tuple(d if rng.random() < 0.6 else 1 for d in full)
    rhs_batch = tuple(d if rng.random() < 0.6 else 1 for d in full)[int(rng.integers(0, batch_rank + 1)):]
    adj_x, adj_y = bool(rng.random() < 0.4), bool(rng.random() < 0.4)
    lhs = rng.integers(-128, 128, size=lhs_batch + ((k, m) if adj_x else (m, k)), dtype=np.int8)
    rhs = rng.integers(-128, 128, size=rhs_batch + ((n, k) if adj_y else (k, n)), dtype=np.int8)
    p = random_matmul_params(rng)
    got = batch_matmul_s8(lhs, rhs, **p, adj_x=adj_x, adj_y=adj_y)
    assert got.dtype == np.int8 and got.shape == np.broadcast_shapes(lhs_batch, rhs_batch) + (m, n)
    np.testing.assert_array_equal(got, ref_batch_matmul(lhs, rhs, p, adj_x, adj_y))


def test_batch_matmul_broadcast_and_adjoint_equivalences() -> None:
    rng = np.random.default_rng(7)
    p = random_matmul_params(rng)
    lhs = rng.integers(-128, 128, size=(2, 3, 4, 5), dtype=np.int8)
    rhs = rng.integers(-128, 128, size=(1, 3, 5, 6), dtype=np.int8)  # shared across the leading batch
    got = batch_matmul_s8(lhs, rhs, **p)
    assert got.shape == (2, 3, 4, 6)
    for i in range(2):
        np.testing.assert_array_equal(got[i], batch_matmul_s8(lhs[i], rhs[0], **p))
    rhs_t = np.ascontiguousarray(np.swapaxes(rhs, -1, -2))
    np.testing.assert_array_equal(batch_matmul_s8(lhs, rhs_t, **p, adj_y=True), got)
    lhs_t = np.ascontiguousarray(np.swapaxes(lhs, -1, -2))
    np.testing.assert_array_equal(batch_matmul_s8(lhs_t, rhs_t, **p, adj_x=True, adj_y=True), got)
    # a rank-2 rhs against a batched lhs (attention-style weight sharing)
    np.testing.assert_array_equal(batch_matmul_s8(lhs, rhs[0, 1], **p)[:, 1], got[:, 1])


def test_batch_matmul_saturation_and_wrap() -> None:
    lhs = np.full((1, 1, 4), 127, np.int8)
    rhs = np.full((1, 4, 1), 127, np.int8)
    p = dict(lhs_offset=128, rhs_offset=128, output_offset=0, output_multiplier=INT32_MAX, output_shift=0)
    assert batch_matmul_s8(lhs, rhs, **p).item() == 127  # 4 * 255^2 saturates
    assert batch_matmul_s8(lhs, rhs, **{**p, "output_offset": -128, "output_shift": -31}).item() == -128
    assert batch_matmul_s8(-lhs - 1, rhs, **{**p, "output_offset": 3}).item() == 3  # (-128 + 128) * x = 0
    assert batch_matmul_s8(lhs, rhs, **p, act_min=-5, act_max=5).item() == 5
    # the left shift by 30 wraps the int32 value exactly as the C code does
    p_wrap = {**p, "lhs_offset": 0, "rhs_offset": 0, "output_shift": 30, "act_min": -128, "act_max": 127}
    x, y = np.int8([[[3], [-3]]]), np.int8([[[1]]])
    got = batch_matmul_s8(x, y, **p_wrap)
    np.testing.assert_array_equal(got, ref_batch_matmul(x, y, p_wrap, False, False))
    assert got.ravel().tolist() == [-128, 127]  # 3 << 30 wraps negative, -3 << 30 wraps positive


def test_batch_matmul_validation() -> None:
    p = dict(lhs_offset=0, rhs_offset=0, output_offset=0, output_multiplier=1 << 30, output_shift=0)
    with pytest.raises(ValueError, match="inner"):
        batch_matmul_s8(np.zeros((2, 3), np.int8), np.zeros((4, 2), np.int8), **p)
    with pytest.raises(ValueError, match="broadcast"):
        batch_matmul_s8(np.zeros((2, 2, 3), np.int8), np.zeros((3, 3, 2), np.int8), **p)
    with pytest.raises(ValueError, match="rank"):
        batch_matmul_s8(np.zeros(3, np.int8), np.zeros((3, 2), np.int8), **p)
    with pytest.raises(ValueError, match="rhs_offset"):
        batch_matmul_s8(np.zeros((2, 3), np.int8), np.zeros((3, 2), np.int8), **{**p, "rhs_offset": -128})


# ---------------------------------------------------------------------------------------------------------
# transposed convolution
# ---------------------------------------------------------------------------------------------------------


def random_tconv_case(rng: np.random.Generator) -> dict:
    while True:
        n, c, oc = int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 5))
        h, w = (int(v) for v in rng.integers(1, 6, size=2))
        kernel = tuple(int(v) for v in rng.integers(1, 5, size=2))
        stride = tuple(int(v) for v in rng.integers(1, 4, size=2))
        pad = tuple(int(rng.integers(0, k)) for k in kernel)
        base = tuple((i - 1) * s - 2 * p + k for i, s, p, k in zip((h, w), stride, pad, kernel, strict=True))
        if min(base) < 1:
            continue
        out_hw = tuple(b + int(rng.integers(0, s)) for b, s in zip(base, stride, strict=True))  # output_padding
        break
    mult, shift = quantize_multipliers(np.exp(rng.uniform(np.log(1e-4), np.log(2e-2), size=oc)))
    if rng.random() < 0.2:  # raw per-channel parameters over the whole shift range
        mult = rng.integers(1, INT32_MAX, size=oc).astype(np.int32)
        shift = rng.integers(-31, 31, size=oc).astype(np.int32)
    p = dict(input_offset=int(rng.integers(-127, 129)), output_offset=int(rng.integers(-128, 128)),
             multipliers=mult, shifts=shift, stride=stride, padding=pad, act_min=-128, act_max=127,
             output_hw=out_hw)  # fmt: skip
    if rng.random() < 0.3:
        p.update(act_min=int(rng.integers(-128, 0)), act_max=int(rng.integers(0, 128)))
    x = rng.integers(-128, 128, size=(n, h, w, c), dtype=np.int8)
    wt = rng.integers(-127, 128, size=(oc, kernel[0], kernel[1], c), dtype=np.int8)
    bias = None if rng.random() < 0.2 else rng.integers(-5000, 5000, size=oc).astype(np.int32)
    return dict(x=x, w=wt, bias=bias, p=p)


def ref_tconv_case(case: dict) -> np.ndarray:
    p = case["p"]
    out = ref_transpose_conv(case["x"].tolist(), case["w"].tolist(), case["bias"], p["input_offset"],
                             p["output_offset"], [int(v) for v in p["multipliers"]], [int(v) for v in p["shifts"]],
                             p["stride"], p["padding"], p["output_hw"], p["act_min"], p["act_max"])  # fmt: skip
    return np.array(out, dtype=np.int8)


@pytest.mark.parametrize("seed", range(60))
def test_transpose_conv_random_against_reference(seed: int) -> None:
    case = random_tconv_case(np.random.default_rng(600 + seed))
    got = transpose_conv2d_s8(case["x"], case["w"], case["bias"], **case["p"])
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, ref_tconv_case(case))


def float_tconv_reference(x, w, bias, in_scale, in_zp, w_scales, out_scale, out_zp, stride, pad, out_pad):
    """torch float ConvTranspose2d on dequantized values (float64), quantized back (round half even)."""
    xf = torch.from_numpy((x.astype(np.float64) - in_zp) * in_scale).permute(0, 3, 1, 2)
    wf = torch.from_numpy(w.astype(np.float64) * w_scales[:, None, None, None]).permute(3, 0, 1, 2)  # (C, O, KH, KW)
    bf = torch.from_numpy(bias.astype(np.float64) * in_scale * w_scales)
    y = torch.nn.functional.conv_transpose2d(xf, wf, bf, stride=stride, padding=pad, output_padding=out_pad)
    q = torch.round(y / out_scale) + out_zp
    return q.clamp(-128, 127).permute(0, 2, 3, 1).numpy()


TORCH_CASES = [  # (stride, padding, output_padding, kernel)
    ((2, 2), (1, 1), (1, 1), (3, 3)),
    ((2, 2), (0, 0), (0, 1), (2, 2)),
    ((1, 1), (1, 0), (0, 0), (3, 2)),
    ((3, 2), (2, 1), (2, 0), (4, 3)),
]


@pytest.mark.parametrize("stride,pad,out_pad,kernel", TORCH_CASES)
def test_transpose_conv_against_torch_float(stride, pad, out_pad, kernel) -> None:
    rng = np.random.default_rng(sum(stride) * 10 + sum(out_pad))
    n, h, w, c, oc = 2, 5, 4, 6, 5
    in_scale, in_zp, out_scale, out_zp = 0.05, -7, 0.2, 4
    w_scales = rng.uniform(0.002, 0.02, size=oc)
    x = rng.integers(-128, 128, size=(n, h, w, c), dtype=np.int8)
    wt = rng.integers(-127, 128, size=(oc, *kernel, c), dtype=np.int8)
    bias = rng.integers(-3000, 3000, size=oc).astype(np.int32)
    out_hw = tuple((i - 1) * s - 2 * p + k + o for i, s, p, k, o in zip((h, w), stride, pad, kernel, out_pad,
                                                                        strict=True))  # fmt: skip
    mult, shift = quantize_multipliers(in_scale * w_scales / out_scale)
    got = transpose_conv2d_s8(x, wt, bias, input_offset=-in_zp, output_offset=out_zp, multipliers=mult,
                              shifts=shift, stride=stride, padding=pad, output_hw=out_hw)  # fmt: skip
    expected = float_tconv_reference(x, wt, bias, in_scale, in_zp, w_scales, out_scale, out_zp, stride, pad, out_pad)
    assert got.shape == expected.shape == (n, *out_hw, oc)
    diff = np.abs(got.astype(np.int64) - expected)
    assert diff.max() <= 1
    assert (diff == 0).mean() > 0.9  # mostly identical: off-by-one only near rounding ties
    # and the exact integer statement agrees bit for bit
    p = dict(input_offset=-in_zp, output_offset=out_zp, multipliers=mult, shifts=shift, stride=stride, padding=pad,
             output_hw=out_hw, act_min=-128, act_max=127)  # fmt: skip
    np.testing.assert_array_equal(got, ref_tconv_case(dict(x=x, w=wt, bias=bias, p=p)))


def test_transpose_conv_stride2_output_padding_rows_get_bias_only() -> None:
    # 1x1 kernel, stride 2: output rows/cols at odd positions receive no input, only the bias
    x = np.full((1, 2, 2, 1), 10, np.int8)
    w = np.full((1, 1, 1, 1), 3, np.int8)
    bias = np.array([7], np.int32)
    got = transpose_conv2d_s8(x, w, bias, input_offset=0, output_offset=0, multipliers=[1 << 30], shifts=[1],
                              stride=2, padding=0, output_hw=(4, 4))  # fmt: skip
    # (10 * 3 + 7) = 37 where an input lands, 7 elsewhere (multiplier 0.5 * 2^1 = 1)
    expected = np.array([[37, 7, 37, 7], [7, 7, 7, 7], [37, 7, 37, 7], [7, 7, 7, 7]])
    np.testing.assert_array_equal(got[0, :, :, 0], expected)
    assert transpose_conv2d_s8(x, w, bias, input_offset=0, output_offset=0, multipliers=[1 << 30], shifts=[1],
                               stride=2, padding=0).shape == (1, 3, 3, 1)  # fmt: skip


def test_transpose_conv_saturation_and_validation() -> None:
    x = np.full((1, 2, 2, 4), 127, np.int8)
    w = np.full((2, 3, 3, 4), 127, np.int8)
    p = dict(input_offset=128, output_offset=0, multipliers=[INT32_MAX, INT32_MAX], shifts=[0, -31], stride=2,
             padding=1)  # fmt: skip
    got = transpose_conv2d_s8(x, w, None, **p)
    assert (got[..., 0] == 127).all() and (got[..., 1] == 0).all()
    with pytest.raises(ValueError, match="output_hw"):
        transpose_conv2d_s8(x, w, None, **p, output_hw=(5, 5))  # output_padding 2 >= stride 2
    with pytest.raises(ValueError, match="input channels"):
        transpose_conv2d_s8(x, w[..., :3], None, **p)
    with pytest.raises(ValueError, match="bias"):
        transpose_conv2d_s8(x, w, np.zeros(2, np.int64), **p)
    with pytest.raises(ValueError, match="multipliers"):
        transpose_conv2d_s8(x, w, None, **{**p, "multipliers": [1, 2, 3]})
