"""GPTQ weight rounding (mcuforge.quantize.gptq): int8 levels on the observer's grid, a smaller layer-output
error than rounding to nearest where the inputs are correlated, and the user's model left untouched."""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from mcuforge.capture import capture
from mcuforge.float_passes.cleanup import prepare_float_graph
from mcuforge.quantize.gptq import QMAX, gptq_round, gptq_weights
from mcuforge.quantize.observers import PerChannelMinMaxObserver


def correlated_inputs(count: int, features: int, seed: int) -> torch.Tensor:
    """Rows with a common offset and a low-rank structure, as spectrogram frames or hidden features are."""
    gen = torch.Generator().manual_seed(seed)
    basis = torch.randn(4, features, generator=torch.Generator().manual_seed(99))
    return 3.0 + torch.randn(count, 4, generator=gen) @ basis + 0.05 * torch.randn(count, features, generator=gen)


def output_error_db(w: torch.Tensor, levels: torch.Tensor, x: torch.Tensor) -> float:
    scale = w.double().abs().amax(dim=1, keepdim=True) / QMAX
    ref = x.double() @ w.double().T
    err = x.double() @ (levels * scale - w.double()).T
    return float(10 * np.log10((ref**2).sum() / (err**2).sum()))


def test_gptq_levels_lie_on_the_observer_grid():
    w = torch.randn(24, 40, generator=torch.Generator().manual_seed(1))
    x = correlated_inputs(200, 40, 2)
    levels = gptq_round(w, x.double().T @ x.double() / len(x))
    assert levels.abs().max() <= QMAX and torch.equal(levels, levels.round())
    assert torch.all(levels.abs().amax(dim=1) == QMAX)  # the observer finds the scale it was rounded for
    written = (levels * (w.double().abs().amax(dim=1, keepdim=True) / QMAX)).float()
    obs = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.int8, quant_min=-QMAX, quant_max=QMAX,
                                   qscheme=torch.per_channel_symmetric)
    obs(written)
    scale, zero_point = obs.calculate_qparams()
    assert torch.all(zero_point == 0)
    assert torch.equal(torch.round(written.double() / scale.double()[:, None]), levels)


def test_gptq_beats_nearest_rounding_on_correlated_inputs():
    w = torch.randn(32, 64, generator=torch.Generator().manual_seed(3))
    calibration, held_out = correlated_inputs(256, 64, 4), correlated_inputs(256, 64, 5)
    scale = w.double().abs().amax(dim=1, keepdim=True) / QMAX
    nearest = torch.round(w.double() / scale)
    levels = gptq_round(w, calibration.double().T @ calibration.double() / len(calibration))
    gain = output_error_db(w, levels, held_out) - output_error_db(w, nearest, held_out)
    assert gain > 10.0, gain


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = nn.Linear(8 * 6 * 6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.dw(torch.relu(self.conv(x)))).flatten(1))


def test_gptq_weights_rounds_linear_and_conv_layers_and_leaves_the_model_alone():
    torch.manual_seed(0)
    model = Net().eval()
    before = copy.deepcopy(model.state_dict())
    example = (torch.randn(1, 3, 6, 6),)
    gm = capture(model, example)
    prepare_float_graph(gm)
    calibration = [(torch.randn(1, 3, 6, 6) + 1.0,) for _ in range(16)]
    assert gptq_weights(gm, calibration) == 2  # conv and linear; the depthwise conv keeps its weights
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    rounded = 0
    for node in gm.graph.nodes:
        if node.op == "get_attr" and str(node.target).endswith("_gptq"):
            value = getattr(gm, str(node.target))
            scale = value.reshape(value.shape[0], -1).abs().amax(dim=1) / QMAX
            levels = value.reshape(value.shape[0], -1) / scale[:, None]
            assert torch.allclose(levels, levels.round(), atol=1e-4)
            rounded += 1
    assert rounded == 2
    with torch.no_grad():  # the graph still computes the model, with weights a quantization step away
        got, ref = gm(*example), model(*example)
        got = got[0] if isinstance(got, tuple | list) else got
    assert torch.allclose(got, ref, atol=0.05)
