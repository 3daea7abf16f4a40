"""The Cortex-M quantizer and BatchNorm folding."""

import pytest
import torch
from torch import nn

from mcuforge.capture import capture
from mcuforge.float_passes import fold_batch_norm
from mcuforge.quantize import Scheme, quantize
from mcuforge.zoo.common import randomize_batch_norm

qd = torch.ops.quantized_decomposed


class LinearBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6)
        self.bn = nn.BatchNorm1d(6)
        self.conv = nn.Conv2d(2, 4, 3)
        self.bn2 = nn.BatchNorm2d(4)

    def forward(self, x, img):
        return torch.relu(self.bn(self.fc(x))), self.bn2(self.conv(img))


def test_fold_batch_norm_preserves_the_function():
    torch.manual_seed(0)
    model = randomize_batch_norm(LinearBN(), 3)
    inputs = (torch.randn(4, 12), torch.randn(4, 2, 6, 6))
    gm = capture(model, inputs)
    assert fold_batch_norm(gm) == 2
    assert not any(n.target == torch.ops.aten.batch_norm.default for n in gm.graph.nodes)
    for a, b in zip(gm(*inputs), model(*inputs), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_quantizer_weights_per_channel_symmetric_bias_int32():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 5)).eval()
    x = torch.randn(1, 3, 6, 6)
    # the linear layer per channel too (by default it would be per tensor: its random rows share one range)
    converted = quantize(capture(model, (x,)), [(torch.randn(1, 3, 6, 6),) for _ in range(4)], 1,
                         progress=False, scheme=Scheme("int8", linear_per_channel=True))
    per_channel = [n for n in converted.graph.nodes if n.target == qd.dequantize_per_channel.default]
    weights = [n for n in per_channel if n.args[-1] == torch.int8]
    biases = [n for n in per_channel if n.args[-1] == torch.int32]
    assert len(weights) == 2 and len(biases) == 2
    for w in weights:
        zp = getattr(converted, w.args[2].target)
        assert (zp == 0).all() and w.args[4:6] == (-127, 127)
    weighted = [n for n in converted.graph.nodes if n.target in (torch.ops.aten.conv2d.default,
                                                                  torch.ops.aten.linear.default)]
    assert len(weighted) == 2
    for op in weighted:
        x_dq, w_dq, b_dq = op.args
        assert w_dq in weights and b_dq in biases and x_dq.target == qd.dequantize_per_tensor.default
        input_scale = x_dq.args[1]
        w_scale = getattr(converted, w_dq.args[1].target)
        b_scale = getattr(converted, b_dq.args[1].target)
        out_channels = 8 if op.target == torch.ops.aten.conv2d.default else 5
        assert b_scale.shape == w_scale.shape == (out_channels,)  # per output channel
        # bias scale = input scale x weight scale[c], exactly (float32, as the int32 bias is computed)
        assert torch.equal(b_scale, w_scale * input_scale), (b_scale, w_scale * input_scale)
        assert (getattr(converted, b_dq.args[2].target) == 0).all()
    # conv + ReLU fused: no quantize between them.
    relu = next(n for n in converted.graph.nodes if n.target == torch.ops.aten.relu.default)
    assert relu.args[0].target == torch.ops.aten.conv2d.default


def test_calibration_accepts_a_labelled_dataloader():
    model = nn.Sequential(nn.Linear(4, 3)).eval()
    data = torch.utils.data.TensorDataset(torch.randn(8, 4), torch.arange(8))
    loader = torch.utils.data.DataLoader(data, batch_size=1)
    converted = quantize(capture(model, (torch.randn(1, 4),)), loader, 1, progress=False)
    assert any(n.target == qd.quantize_per_tensor.default for n in converted.graph.nodes)


def test_calibration_errors_are_clear():
    model = nn.Sequential(nn.Linear(4, 3)).eval()
    with pytest.raises(ValueError, match="calibration data is empty"):
        quantize(capture(model, (torch.randn(1, 4),)), [], 1, progress=False)
    with pytest.raises(ValueError, match=r"calibration item 1 \(input shapes \[1, 5\]\)"):
        quantize(capture(model, (torch.randn(1, 4),)), [torch.randn(1, 4), torch.randn(1, 5)], 1, progress=False)
