"""Float-graph clean-up before quantization (float_passes/cleanup.py, float_passes/fold_bn.py) and the two compile
crashes of issue 9: identities removed, training-mode models compiled in eval mode with a warning,
BatchNorm that cannot fold made an int8 depthwise conv, shared quantization of chunk + cat."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import mcuforge
from mcuforge.capture import capture
from mcuforge.float_passes.cleanup import prepare_float_graph, remove_identities


def compile_quiet(model, example, runs=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    calibration = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(runs)]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(deprecated|TypedStorage).*")
        return mcuforge.compile(model, example, calibration=calibration, progress=False), calibration


def randomize_bn(model):
    gen = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.rand(m.num_features, generator=gen) * 2 - 1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.bias.data.copy_(torch.rand(m.num_features, generator=gen) - 0.5)
    return model


def targets(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


class Identities(nn.Module):
    """Every op that is an identity in inference, in the forms torch.export produces."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.drops = nn.Sequential(nn.Dropout(0.2), nn.Identity())
        self.drops2d = nn.Sequential(nn.Dropout2d(0.1), nn.AlphaDropout(0.1), nn.FeatureAlphaDropout(0.1))

    def forward(self, x):
        y = self.drops(self.fc(x)).contiguous().clone().detach()
        y = y.to(torch.float32).view(1, 6).reshape(1, 6).expand(1, 6).type_as(x)
        y = F.dropout(y, 0.3, training=False, inplace=True)
        z = self.drops2d(y.unsqueeze(-1).unsqueeze(-1))
        z = z.permute(0, 1, 2, 3).transpose(2, 3).flatten(1)  # transpose of two size-1 dims
        z = torch.ops.aten.native_dropout(z, 0.5, False)[0]
        return torch.relu(z + torch.ops.aten.alias(x))


def test_identities_are_removed_and_the_function_kept():
    torch.manual_seed(0)
    model = Identities().eval()
    x = torch.randn(1, 6)
    gm = capture(model, (x,))
    before = targets(gm)
    assert any("dropout" in t for t in before) and "aten.clone.default" in before
    removed = remove_identities(gm)
    after = targets(gm)
    # What computes stays: linear, the two unsqueezes, the flatten (4-D -> 2-D), add, relu.
    assert sorted(after) == sorted(["aten.linear.default", "aten.unsqueeze.default", "aten.unsqueeze.default",
                                    "aten.flatten.using_ints", "aten.add.Tensor", "aten.relu.default"]), after
    not_ops = before.count("aten._assert_tensor_metadata.default") + before.count("<built-in function getitem>")
    assert removed == len(before) - len(after) - not_ops
    torch.testing.assert_close(gm(x), model(x))


def test_identity_ops_that_change_something_stay():
    class M(nn.Module):
        def forward(self, x):
            return x.view(2, 3).to(torch.float64).float(), x.transpose(0, 1).contiguous(), x[:, 1:]

    gm = capture(M().eval(), (torch.randn(3, 2),))
    remove_identities(gm)
    kept = targets(gm)
    assert "aten.view.default" in kept and "aten.transpose.int" in kept and "aten.slice.Tensor" in kept
    assert prepare_float_graph(gm) and "aten.permute.default" in targets(gm)  # transpose written as permute
    assert kept.count("aten.to.dtype") == 2  # float64 and back: both change the dtype


def test_a_copy_written_in_place_stays():
    class M(nn.Module):
        def forward(self, x):
            y = torch.sigmoid(x)
            z = y.clone()
            z.div_(0.5)  # must not write into y
            return y + z

    x = torch.randn(1, 5)
    gm = prepare_float_graph(capture(M().eval(), (x,)))
    assert "aten.clone.default" in targets(gm)
    torch.testing.assert_close(gm(x), 3 * torch.sigmoid(x))


def test_no_dropout_op_reaches_the_program():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 4), nn.Dropout(0.2)).eval()
    prog, calibration = compile_quiet(model, (torch.randn(1, 8),))
    assert len(prog.ops) == 2  # two linear layers, per tensor or per channel as their weights say
    assert {op.kind for op in prog.ops} <= {"fully_connected_s8", "fully_connected_per_channel_s8"}
    assert all(op.backend == "int8" for op in prog.ops)


def test_training_mode_model_compiles_in_eval_mode_with_a_warning_and_keeps_its_mode():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Dropout(0.5), nn.ReLU())
    randomize_bn(model)
    model[0].eval()  # mixed modes: each module's own mode must come back
    x = torch.randn(1, 3, 6, 6)
    with pytest.warns(UserWarning, match=r"Sequential is in training mode .*'1'.* compiled in eval mode"):
        prog = mcuforge.compile(model, (x,), calibration=[(x,)], progress=False)
    assert [m.training for m in model.modules()] == [True, False, True, True, True]
    assert [op.kind for op in prog.ops] == ["conv2d_s8"]  # BN folded (eval statistics), dropout gone
    expected = model.eval()(x).detach().numpy()  # eval: the running statistics, no dropout
    np.testing.assert_allclose(prog.run(x)[0], expected, atol=0.03 * np.abs(expected).max())


def test_eval_model_compiles_without_a_mode_warning():
    model = nn.Sequential(nn.Linear(4, 4)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mcuforge.compile(model, (torch.randn(1, 4),), calibration=[(torch.randn(1, 4),)], progress=False)


# -- crash (a): two conv + BN branches of a re-parameterizable (RepGhost-style) block -----------------------


class RepGhostBlock(nn.Module):
    """A conv + BN whose output feeds a cheap depthwise conv + BN and a fusion BN (re-parameterizable).
    The fusion BN directly follows the already folded conv, whose output has two users: PT2E's own
    conv + BN folding took it, wrote the normalized values into the conv that the depthwise branch reads,
    and collided with the folded weight (KeyError: attribute 'primary_0_weight_bnfolded' already exists)."""

    def __init__(self, c=8):
        super().__init__()
        self.primary = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))
        self.cheap = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), nn.BatchNorm2d(c))
        self.fusion_bn = nn.BatchNorm2d(c)

    def forward(self, x):
        x1 = self.primary(x)
        return torch.relu(torch.cat([x1, self.cheap(x1) + self.fusion_bn(x1)], 1))


def test_repghost_block_compiles_all_int8_and_matches_the_model():
    torch.manual_seed(0)
    model = randomize_bn(RepGhostBlock()).eval()
    x = torch.randn(1, 8, 6, 6)
    prog, calibration = compile_quiet(model, (x,))
    kinds = [op.kind for op in prog.ops]
    assert all(op.backend == "int8" for op in prog.ops), [(op.kind, op.reason) for op in prog.ops]
    assert kinds.count("depthwise_conv2d_s8") == 2  # the cheap conv and the fusion BN
    fusion = next(op for op in prog.ops if op.module == "fusion_bn")
    assert fusion.kind == "depthwise_conv2d_s8"
    for (xs,) in calibration[:3]:
        ours = prog.run(xs)[0]
        expected = model(xs).detach().numpy()
        np.testing.assert_allclose(ours, prog.reference(xs).detach().numpy(), atol=0.06)  # int8 == simulation
        # and the simulation is the model: the depthwise branch reads the primary conv, not its fusion BN
        span = np.abs(expected).max()
        assert np.abs(ours - expected).max() < 0.05 * span


def test_prepare_float_graph_leaves_no_batch_norm_for_pt2e():
    gm = prepare_float_graph(capture(randomize_bn(RepGhostBlock()).eval(), (torch.randn(1, 8, 6, 6),)))
    assert not any("batch_norm" in t for t in targets(gm))


# -- crash (b): chunk, conv of one part, cat back (ShuffleNetV2 style) -----------------------------------


def channel_shuffle_flatten(x, groups=2):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).flatten(1, 2)


def channel_shuffle_view(x, groups=2):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous().view(n, c, h, w)


class ShuffleUnit(nn.Module):
    """Channel shuffle of the input, chunk, conv of one half, cat back with the shuffled other half first.
    The cat's first input is an unobserved value (data movement of the model input): its edge was listed
    after the shared edges that refer to it, and prepare_pt2e asserted
    "please make sure only refer to edge or node that has observer/fake_quant inserted: '(flatten_1, cat)'"."""

    def __init__(self, shuffle, c=8):
        super().__init__()
        self.shuffle = shuffle
        h = c // 2
        self.branch = nn.Sequential(nn.Conv2d(h, h, 1), nn.ReLU(), nn.Conv2d(h, h, 3, padding=1, groups=h),
                                    nn.Conv2d(h, h, 1))

    def forward(self, x):
        a, b = self.shuffle(x).chunk(2, dim=1)
        return self.shuffle(torch.cat([self.shuffle(a), self.branch(b)], 1))


class NormShuffleCat(nn.Module):
    """Chunk, normalize each half in fp32 (group_norm), channel-shuffle one half, cat the halves back,
    conv. Neither input of the cat is observed before it (both come from the fp32 island) and its first
    input's edge was listed after the shared edge that refers to it: prepare_pt2e asserted "please make
    sure only refer to edge or node that has observer/fake_quant inserted: '(flatten_1, cat)'"."""

    def __init__(self):
        super().__init__()
        self.norm_a, self.norm_b = nn.GroupNorm(2, 4), nn.GroupNorm(2, 4)
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return self.conv(torch.cat([channel_shuffle_flatten(self.norm_a(a)), self.norm_b(b)], 1))


def test_cat_of_unobserved_values_compiles_and_matches_the_simulation():
    torch.manual_seed(0)
    model = NormShuffleCat().eval()
    x = torch.randn(1, 8, 6, 6)
    prog, calibration = compile_quiet(model, (x,))
    kinds = [op.kind for op in prog.ops]
    assert "concat_s8" in kinds and "conv2d_s8" in kinds
    fp32 = [op for op in prog.ops if op.backend == "fp32"]
    assert all(op.reason for op in fp32)
    assert {op.aten[0] for op in fp32 if op.kind == "aten_fp32"} <= {"group_norm.default", "view.default",
                                                                      "permute.default", "flatten.using_ints"}
    for (xs,) in calibration[:3]:
        np.testing.assert_allclose(prog.run(xs)[0], prog.reference(xs).detach().numpy(), atol=0.05)
    np.testing.assert_array_equal(prog.run_raw(x)[0], prog.run_raw(x, backend="c")[0])


@pytest.mark.parametrize("shuffle", [channel_shuffle_flatten, channel_shuffle_view], ids=["flatten", "view"])
def test_chunk_conv_cat_block_is_all_int8_and_runs(shuffle):
    torch.manual_seed(0)
    model = nn.Sequential(ShuffleUnit(shuffle), ShuffleUnit(shuffle)).eval()
    x = torch.randn(1, 8, 6, 6)
    prog, calibration = compile_quiet(model, (x,))
    assert all(op.backend == "int8" for op in prog.ops), [(op.kind, op.aten, op.reason) for op in prog.ops]
    assert prog.graph.tensors[prog.graph.inputs[0]].dtype == "int8"
    for (xs,) in calibration[:3]:
        np.testing.assert_allclose(prog.run(xs)[0], prog.reference(xs).detach().numpy(), atol=0.05)
    np.testing.assert_array_equal(prog.run_raw(x)[0], prog.run_raw(x, backend="c")[0])


# -- BatchNorm that cannot fold: an int8 depthwise 1x1 conv ----------------------------------------------


class MixedKernelBN(nn.Module):
    """MixNet-style: per-group convs concatenated, then one BN, then split + SiLU + ReLU neighbours."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(4, 4, k, padding=k // 2) for k in (1, 3)])
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        y = self.bn(torch.cat([conv(part) for conv, part in zip(self.convs, x.split(4, 1), strict=True)], 1))
        a, b = y.split(4, 1)
        return torch.cat([F.silu(a), torch.relu(b)], 1)


class LinearBN1d(nn.Module):
    """BatchNorm1d after a linear whose output has another user, on (N, C) and (N, C, L)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6)
        self.bn = nn.BatchNorm1d(6)
        self.bn_seq = nn.BatchNorm1d(3)

    def forward(self, x):
        y = self.fc(x.flatten(1))
        return torch.relu(self.bn(y)) + y, self.bn_seq(x.view(1, 3, 4)).relu()


class StandaloneBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(self.bn(x))


@pytest.mark.parametrize("make,shape", [(MixedKernelBN, (1, 8, 6, 6)), (LinearBN1d, (1, 12)),
                                        (StandaloneBN, (1, 3, 6, 6))], ids=["after-cat", "batchnorm1d", "standalone"])
def test_batch_norm_that_cannot_fold_is_an_int8_depthwise_conv(make, shape):
    torch.manual_seed(0)
    model = randomize_bn(make()).eval()
    x = torch.randn(shape)
    prog, calibration = compile_quiet(model, (x,))
    assert all(op.backend == "int8" for op in prog.ops), [(op.kind, op.aten, op.reason) for op in prog.ops]
    bn_modules = {name for name, m in model.named_modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)}
    bn_ops = [op for op in prog.ops if op.module in bn_modules]
    assert {op.module for op in bn_ops} == bn_modules
    assert all(op.kind in ("depthwise_conv2d_s8", "reshape", "transpose") for op in bn_ops)
    as_tuple = lambda v: v if isinstance(v, tuple) else (v,)  # noqa: E731
    for (xs,) in calibration[:3]:
        for ours, ref, fp in zip(prog.run(xs), as_tuple(prog.reference(xs)), as_tuple(model(xs)), strict=True):
            np.testing.assert_allclose(ours, ref.detach().numpy(), atol=0.06)
            fp = fp.detach().numpy()
            assert np.abs(ours - fp).max() < 0.06 * np.abs(fp).max()
    for ours, c in zip(prog.run_raw(x), prog.run_raw(x, backend="c"), strict=True):
        np.testing.assert_array_equal(ours, c)
