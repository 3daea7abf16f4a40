"""lut_s8 against the element-by-element statement in cmsis_reference_ops.py, and make_lut_s8 against torch's
fp32 simulation of a quantized activation (quantized_decomposed dequantize -> fn -> quantize), exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers torch.ops.quantized_decomposed)
import torch.nn.functional as F

from mcuforge.kernels import lut_s8, make_lut_s8

from cmsis_reference_ops import ref_lut

ACTIVATIONS = {
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "hardswish": F.hardswish,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "silu": F.silu,
    "hardsigmoid": F.hardsigmoid,
}


def torch_fp32_simulation(fn, in_scale, in_zp, out_scale, out_zp) -> np.ndarray:
    q = torch.arange(-128, 128, dtype=torch.int8)
    ops = torch.ops.quantized_decomposed
    x = ops.dequantize_per_tensor(q, in_scale, in_zp, -128, 127, torch.int8)
    return ops.quantize_per_tensor(fn(x), out_scale, out_zp, -128, 127, torch.int8).numpy()


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_make_lut_matches_torch_simulation(name: str) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    fn = ACTIVATIONS[name]
    for _ in range(25):
        in_scale = float(np.float32(np.exp(rng.uniform(np.log(1e-3), np.log(0.5)))))
        out_scale = float(np.float32(np.exp(rng.uniform(np.log(1e-3), np.log(0.1)))))
        in_zp, out_zp = (int(v) for v in rng.integers(-128, 128, size=2))
        table = make_lut_s8(fn, input_scale=in_scale, input_zero_point=in_zp, output_scale=out_scale,
                            output_zero_point=out_zp)  # fmt: skip
        assert table.dtype == np.int8 and table.shape == (256,)
        np.testing.assert_array_equal(table, torch_fp32_simulation(fn, in_scale, in_zp, out_scale, out_zp))
    # the usual fixed output quantization of sigmoid (1/256, -128) and tanh (1/128, 0)
    for fn2, out_scale, out_zp in ((torch.sigmoid, 1 / 256, -128), (torch.tanh, 1 / 128, 0)):
        table = make_lut_s8(fn2, input_scale=0.1, input_zero_point=3, output_scale=out_scale,
                            output_zero_point=out_zp)  # fmt: skip
        np.testing.assert_array_equal(table, torch_fp32_simulation(fn2, 0.1, 3, out_scale, out_zp))


def test_make_lut_round_half_even_ties_and_saturation() -> None:
    # identity at half the resolution: q / 2 lands exactly on .5 for every odd q
    table = make_lut_s8(lambda t: t, input_scale=1.0, input_zero_point=0, output_scale=2.0, output_zero_point=0)
    for q, expected in [(1, 0), (3, 2), (5, 2), (7, 4), (-1, 0), (-3, -2), (-5, -2), (2, 1), (-128, -64), (127, 64)]:
        assert table[q + 128] == expected, q
    np.testing.assert_array_equal(table, torch_fp32_simulation(lambda t: t, 1.0, 0, 2.0, 0))
    # ties after the zero point are resolved before it is added (round(x / s) + zp)
    shifted = make_lut_s8(lambda t: t, input_scale=1.0, input_zero_point=0, output_scale=2.0, output_zero_point=1)
    assert shifted[1 + 128] == 1 and shifted[3 + 128] == 3
    big = make_lut_s8(lambda t: t * 1000, input_scale=0.5, input_zero_point=0, output_scale=0.01,
                      output_zero_point=0)  # fmt: skip
    assert big[0] == -128 and big[255] == 127 and big[128] == 0


def test_make_lut_validation() -> None:
    kw = dict(input_scale=0.1, input_zero_point=0, output_scale=0.1, output_zero_point=0)
    with pytest.raises(ValueError, match="float32"):
        make_lut_s8(lambda t: t.double(), **kw)
    with pytest.raises(ValueError, match="float32"):
        make_lut_s8(lambda t: t.sum(), **kw)
    with pytest.raises(ValueError, match="zero_point"):
        make_lut_s8(torch.sigmoid, **{**kw, "output_zero_point": 128})
    with pytest.raises(ValueError, match="scale"):
        make_lut_s8(torch.sigmoid, **{**kw, "input_scale": 0.0})


@pytest.mark.parametrize("seed", range(20))
def test_lut_random_against_reference(seed: int) -> None:
    rng = np.random.default_rng(900 + seed)
    table = rng.integers(-128, 128, size=256, dtype=np.int8)
    shape = tuple(int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 5))))
    x = rng.integers(-128, 128, size=shape, dtype=np.int8)
    got = lut_s8(x, table)
    assert got.dtype == np.int8 and got.shape == x.shape
    np.testing.assert_array_equal(got.ravel(), np.array(ref_lut(x.ravel().tolist(), table.tolist()), np.int8))


def test_lut_every_index_and_strided_input() -> None:
    table = np.arange(127, -129, -1, dtype=np.int8)  # reversed: entry i holds 127 - i
    x = np.arange(-128, 128, dtype=np.int8)
    np.testing.assert_array_equal(lut_s8(x, table), table)  # x + 128 walks 0..255 in order
    assert lut_s8(np.int8([-128, 127]), table).tolist() == [127, -128]
    grid = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    np.testing.assert_array_equal(lut_s8(grid[:, ::3].T, table), table[grid[:, ::3].T.astype(np.int64) + 128])
    with pytest.raises(ValueError, match="256"):
        lut_s8(x, table[:255])
    with pytest.raises(ValueError, match="int8"):
        lut_s8(x.astype(np.int16), table)
