"""A flatten of an NHWC image before a linear layer costs no run-time transpose: the layer's weight
columns are reordered at compile time instead, and the result is unchanged."""

import warnings

import numpy as np
import torch
from torch import nn

import mcuforge


def _compile(model, x):
    calibration = [(torch.randn(x.shape, generator=torch.Generator().manual_seed(i)),) for i in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mcuforge.compile(model.eval(), x, calibration=calibration, progress=False)


def test_flatten_before_linear_reads_the_nhwc_bytes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 6 * 6, 5))
    x = torch.randn(2, 3, 8, 8)
    prog = _compile(model, x)
    assert [op.kind for op in prog.graph.ops] == ["conv2d_s8", "reshape", "fully_connected_s8"]
    fc = prog.graph.ops[-1]
    assert prog.graph.tensors[prog.graph.ops[0].outputs[0]].layout == "nhwc"
    # The stored weight is PT2E's int8 weight with its columns in the stored (H, W, C) order.
    (pt2e_weight,) = [v for v in prog.reference.state_dict().values() if v.dtype == torch.int8 and v.dim() == 2]
    stored = prog.graph.tensors[fc.inputs[1]].data
    np.testing.assert_array_equal(stored.reshape(5, 6, 6, 6).transpose(0, 3, 1, 2).reshape(5, 216),
                                  pt2e_weight.numpy())
    # The int8 program follows the PT2E float simulation (within the usual 1 LSB) and C == Python.
    scale = prog.graph.tensors[fc.outputs[0]].qparams.scale
    for seed in range(3):
        xs = torch.randn(x.shape, generator=torch.Generator().manual_seed(100 + seed))
        ours, c_out = prog.run(xs)[0], prog.run(xs, backend="c")[0]
        np.testing.assert_array_equal(ours, c_out)
        assert np.abs(ours - prog.reference(xs).detach().numpy()).max() <= scale * 1.001


def test_flatten_of_a_view_that_is_not_the_nchw_order_keeps_its_transpose():
    """flatten(start_dim=2) keeps (N, C, H*W): not the classifier-head pattern, nothing is reordered."""
    torch.manual_seed(0)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.fc = nn.Linear(36, 5)

        def forward(self, x):
            return self.fc(torch.flatten(self.conv(x), 2))

    x = torch.randn(1, 3, 8, 8)
    prog = _compile(M(), x)
    assert "transpose" in [op.kind for op in prog.graph.ops]
    np.testing.assert_array_equal(prog.run(x)[0], prog.run(x, backend="c")[0])
