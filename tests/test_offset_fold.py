"""The lowering's input-offset fold: where no tap is ever padding (fully connected layers, convolutions
with padding 0) it stores input_offset 0 and the bias ``bias + offset * sum(w)`` wrapped to int32
(``mcuforge.lower.int8.common.fold_input_offset``). The op must give the same bytes as the unfolded
one, for any bias (wrap-around included); padded convolutions keep their offset.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge.kernels import conv2d_s8, fully_connected_s8
from mcuforge.lower.int8.common import fold_input_offset, reads_no_padding


def random_requant(rng, oc):
    return (rng.integers(1 << 30, (1 << 31) - 1, size=oc).astype(np.int32),
            rng.integers(-20, 1, size=oc).astype(np.int32))


@pytest.mark.parametrize("seed", range(20))
def test_fold_gives_the_same_bytes(seed):
    rng = np.random.default_rng(seed)
    oc, depth, off = int(rng.integers(1, 9)), int(rng.integers(1, 80)), int(rng.integers(-127, 129))
    bias = rng.integers(-(1 << 31), 1 << 31, size=oc, dtype=np.int64).astype(np.int32)
    if seed % 4 == 0:  # biases at the int32 limits: the fold wraps as the kernels' accumulators do
        bias[:] = np.int32(2**31 - 1) if off > 0 else np.int32(-(2**31))
    mult, shift = random_requant(rng, oc)
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, size=2))
    common = {"output_offset": int(rng.integers(-128, 128)), "multipliers": mult, "shifts": shift,
              "act_min": lo, "act_max": hi}

    w = rng.integers(-128, 128, size=(oc, depth), dtype=np.int8)
    x = rng.integers(-128, 128, size=(3, depth), dtype=np.int8)
    plain = fully_connected_s8(x, w, bias, input_offset=off, **common)
    folded = fully_connected_s8(x, w, fold_input_offset(bias, w, off), input_offset=0, **common)
    assert plain.tobytes() == folded.tobytes()

    kh, kw, ic = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 6))
    wc = rng.integers(-128, 128, size=(oc, kh, kw, ic), dtype=np.int8)
    xc = rng.integers(-128, 128, size=(1, kh + 3, kw + 2, ic), dtype=np.int8)
    plain = conv2d_s8(xc, wc, bias, input_offset=off, **common)
    folded = conv2d_s8(xc, wc, fold_input_offset(bias, wc, off), input_offset=0, **common)
    assert plain.tobytes() == folded.tobytes()
    # with padding the fold would be wrong (a padded tap reads nothing, not -offset): not applied there
    assert not reads_no_padding("conv2d_s8", {"padding": [1, 0]})
    assert reads_no_padding("conv2d_s8", {"padding": [0, 0]}) and reads_no_padding("fully_connected_s8", {})


def test_lowering_folds_only_where_no_tap_is_padding():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 1), nn.Flatten(), nn.Linear(8 * 36, 5))
    gen = torch.Generator().manual_seed(1)
    calib = [(torch.rand(1, 3, 6, 6, generator=gen) * 4 + 1,) for _ in range(8)]  # zero points far from 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model.eval(), calib[0], calibration=calib, progress=False)
    ops = [op for op in prog.graph.ops if op.kind == "conv2d_s8" or op.kind.startswith("fully_connected")]
    assert [op.kind for op in ops][:2] == ["conv2d_s8", "conv2d_s8"] and ops[2].kind.startswith("fully_connected")
    padded, pointwise, linear = ops
    assert padded.attrs["padding"] == [1, 1] and padded.attrs["input_offset"] != 0
    assert pointwise.attrs["input_offset"] == 0 and linear.attrs["input_offset"] == 0
    # the folded program still matches its float reference
    x = calib[0][0]
    got = prog.run(x)
    want = model(x).detach().numpy()
    assert np.abs(np.asarray(got) - want).max() < 0.1 * np.abs(want).max() + 0.05
