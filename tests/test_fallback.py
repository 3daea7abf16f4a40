"""Anything a user writes compiles: ops without int8 kernels run in fp32, with the reason shown."""

import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import mcuforge


class Odd(nn.Module):
    """Ops the int8 kernels do not cover, in the forms torch.export produces for them."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.conv1d = nn.Conv1d(8, 8, 3, padding=1)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y = self.conv(x)
        y.relu_()                                    # in-place activation
        a, b = torch.chunk(y, 2, dim=1)              # multi-output op
        y = torch.cat([a * torch.sigmoid(b), b / 2.0], dim=1)
        y = y[:, :, 1:-1, ::2]                       # slicing
        y = y.mean(dim=2)                            # (N, C, W): 3-D
        y = self.conv1d(y)
        y = y.view(y.size(0), -1)[:, :16]
        y = self.norm(torch.exp(-y.abs()))
        return F.softmax(self.fc(y), dim=-1), y


def test_unsupported_ops_fall_back_and_match_the_reference(tmp_path):
    torch.manual_seed(0)
    model = Odd().eval()
    x = torch.randn(1, 3, 6, 10)
    calib = [(torch.randn(1, 3, 6, 10),) for _ in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, (x,), calibration=calib, progress=False)
    fp32_ops = [op for op in prog.ops if op.kind == "aten_fp32"]
    assert fp32_ops and all(op.backend == "fp32" and op.reason for op in fp32_ops)
    assert any(op.kind == "conv2d_s8" for op in prog.ops)
    targets = [op.attrs["target"] for op in prog.graph.ops if op.kind == "aten_fp32"]
    assert not any(t.endswith("_.default") for t in targets)
    for xs in calib[:3]:
        ours = prog.run(*xs)
        ref = prog.reference(*xs)
        for o, r in zip(ours, ref, strict=True):
            np.testing.assert_allclose(o, r.detach().numpy(), atol=0.05, rtol=0.05)
    prog2 = mcuforge.load(prog.save(tmp_path / "odd.mfp"))
    for o, r in zip(prog.run(x), prog2.run(x), strict=True):
        np.testing.assert_array_equal(o, r)


def test_inplace_fallback_op_does_not_clobber_its_input():
    class M(nn.Module):
        def forward(self, x):
            y = torch.sigmoid(x)
            z = y.clone()
            z.div_(0.5)  # division has no int8 kernel: an in-place fp32 op
            return y + z, z

    x = torch.randn(1, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(M(), (x,), calibration=[(x,)], progress=False)
    targets = [op.attrs["target"] for op in prog.graph.ops if op.kind == "aten_fp32"]
    assert "aten.div.Tensor" in targets  # div_ stored in its functional form
    total, doubled = prog.run(x)
    np.testing.assert_allclose(total, (3 * torch.sigmoid(x)).numpy(), atol=0.05)
    np.testing.assert_allclose(doubled, (2 * torch.sigmoid(x)).numpy(), atol=0.05)


class ConstantsAndMixedUses(nn.Module):
    """Buffers and parameters used as activations, scalars, a float input used by int8 and fp32 ops."""

    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.randn(1, 4, 5, 5))
        self.conv = nn.Conv2d(4, 4, 1)
        self.proj = nn.Parameter(torch.randn(4, 5))

    def forward(self, x):
        y = self.conv(x) + self.offset  # int8 add with a constant operand
        y = y + 1.0
        z = torch.cat([y, x], 1)
        w = F.linear(z.mean((2, 3)), torch.ones(3, 8))
        return w, z.flatten(1) @ torch.ones(200, 2), x[:, :, 0, :] @ self.proj.T


def test_constants_as_operands_and_mixed_input_uses():
    torch.manual_seed(0)
    model = ConstantsAndMixedUses().eval()
    calib = [(torch.randn(1, 4, 5, 5),) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, calib[0], calibration=calib, progress=False)
    add = next(op for op in prog.graph.ops if op.kind == "add_s8")
    assert prog.graph.tensors[add.inputs[1]].is_constant  # the buffer, quantized at compile time
    assert not any(op.kind == "transpose" and prog.graph.tensors[op.inputs[0]].is_constant for op in prog.graph.ops)
    # The int8 conv's requantization may differ from the fp32 simulation by 1 LSB (0.03 here) in an
    # element; the int8 cat (shared quantization) carries such an element into the fp32 matmul.
    for (x,) in calib:
        for ours, ref in zip(prog.run(x), prog.reference(x), strict=True):
            np.testing.assert_allclose(ours, ref.detach().numpy(), rtol=1e-5, atol=0.05)


def test_integer_and_bool_tensors_in_fp32_ops():
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 8)
            self.fc = nn.Linear(8, 3)

        def forward(self, tokens):
            y = self.fc(self.embed(tokens))
            return torch.where(y > 0, y, torch.zeros_like(y)), y.argmax(-1)

    torch.manual_seed(0)
    model = Tagger().eval()
    tokens = torch.tensor([[1, 4, 7, 9]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, (tokens,), calibration=[(torch.randint(0, 10, (1, 4)),) for _ in range(4)],
                                progress=False)
    assert any(op.kind in ("fully_connected_s8", "fully_connected_per_channel_s8") for op in prog.ops)
    masked, labels = prog.run(tokens)
    ref_masked, ref_labels = prog.reference(tokens)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, ref_labels.numpy())
    np.testing.assert_allclose(masked, ref_masked.detach().numpy(), atol=1e-6)
