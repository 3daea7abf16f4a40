"""Quantization-aware training (mcuforge.qat): prepare_qat reuses the PTQ quantizer (before training, the int8
QAT program is the PTQ program byte for byte; W4A8's has PTQ's activation qparams and kernels), the helper
freezes observers when it says, BatchNorm is folded (its statistics trained then frozen on request, the program
still exact), a per-layer plan (precision="auto"'s) carries over and goes end to end within its flash budget, the
compiled program computes the frozen fake-quant forward's codes exactly (conv / linear / pooling chains; within
one code past a residual add), and a QAT program gives the same bytes on host Python, host C and the cortex-m4
board.

Accuracy gains are benchmark figures (benchmarks/qat.py), not assertions here."""

import copy
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge import cruntime, firmware
from mcuforge.qat import fake_quants, freeze, prepare_qat, scheme_of, train_qat
from mcuforge.runtime import execute

aten = torch.ops.aten


class Tiny(nn.Module):
    """conv+BN+ReLU, a residual add, a concatenation, pooling, a linear head: the shared-qparams cases."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.branch = nn.Conv2d(8, 8, 3, padding=1)
        self.side = nn.Conv2d(8, 4, 1)
        self.head = nn.Linear(12, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        y = torch.relu(self.branch(x) + x)
        z = torch.cat([y, self.side(y)], 1)
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(nn.functional.max_pool2d(z, 2), 1), 1))


def _tiny_task(seed: int = 0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """A Tiny with randomized BatchNorm statistics (outputs depend on inputs) and a learnable 4-class task."""
    torch.manual_seed(seed)
    model = Tiny()
    bn = model.stem[1]
    bn.running_mean.uniform_(-0.3, 0.3)
    bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(96, 1, 8, 8)
    y = (x[:, 0, :4].mean((1, 2)) > 0).long() * 2 + (x[:, 0, :, :4].mean((1, 2)) > 0).long()
    return model.eval(), x, y


def _calibration(x: torch.Tensor) -> list[tuple[torch.Tensor]]:
    return [(x[i:i + 16],) for i in range(0, 64, 16)]


def _batches(x: torch.Tensor, y: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(x[i:i + 32], y[i:i + 32]) for i in range(0, len(x), 32)]


@pytest.mark.parametrize("scheme", ["w4a8", "int8"])
def test_untrained_qat_program_is_the_ptq_program(scheme):
    """Same annotations, observers and calibration: before any training step, compiling the QAT model gives
    the PTQ program's bytes (scales, zero points, per-channel axes, 4-bit ranges, shared concat/add qparams)."""
    model, x, _y = _tiny_task()
    example = x[:1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ptq = mcuforge.compile(model, example, _calibration(x), target="cortex-m4", quantization=scheme,
                               progress=False, bias_correction=False)
    qat = prepare_qat(model, example, _calibration(x), scheme, progress=False)
    prog = mcuforge.compile(qat, example, target="cortex-m4")
    assert prog.meta["qat"] and prog.meta["quantization"] == scheme
    assert [op.kind for op in prog.ops] == [op.kind for op in ptq.ops]
    if scheme == "int8":
        assert prog.to_bytes() == ptq.to_bytes()
        return
    # 4-bit layers: weight scales moved by less than 2^-15 (relative) to make the 16-bit multipliers exact
    # (mcuforge.qat.snap); activations' qparams and every layer's kernel are PTQ's.
    for name, t in ptq.graph.tensors.items():
        if t.qparams is not None and not t.is_constant:
            assert prog.graph.tensors[name].qparams == t.qparams, name


def test_batch_norm_folded_and_parameters_are_the_folded_weights():
    model, x, _y = _tiny_task()
    qat = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    targets = {n.target for n in qat.graph.nodes if n.op == "call_function"}
    assert not any("batch_norm" in str(t) for t in targets)
    names = [n for n, _ in qat.named_parameters()]
    # copies: training the QAT model leaves the user's model as it was
    originals = {id(p) for p in model.parameters()} | {p.data_ptr() for p in model.parameters()}
    assert not any(id(p) in originals or p.data_ptr() in originals for p in qat.parameters())
    assert not any("running" in n or n.startswith("stem.1") for n in names)
    # the layers' folded weights and biases, and the BatchNorm's gamma and beta (trained while its statistics are)
    assert len(names) == 10 and sorted(n for n in names if n.startswith("mcuforge_bnstats_")) == [
        "mcuforge_bnstats_0.bias", "mcuforge_bnstats_0.weight"]
    # 4-bit weights for every conv and the linear layer, fake-quantized to [-7, 7]
    weights = [fq for fq in fake_quants(qat) if fq.weight]
    assert len(weights) == 4 and all((fq.quant_min, fq.quant_max) == (-7, 7) for fq in weights)


def test_train_qat_freezes_observers_when_it_says():
    model, x, y = _tiny_task()
    qat = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    acts = [fq for fq in fake_quants(qat) if not fq.weight]
    assert all(fq.frozen for fq in acts) and not any(fq.frozen for fq in fake_quants(qat) if fq.weight)
    act_scales = [fq.scale.clone() for fq in acts]
    before = {id(fq): fq.scale.clone() for fq in fake_quants(qat) if fq.weight}
    log = train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=2, lr=1e-2, freeze_epoch=1,
                    progress=False)
    assert log.frozen_at_epoch == 1 and log.steps == 6 and len(log.losses) == 2
    assert all(fq.frozen for fq in fake_quants(qat))
    # epoch 0 moved the weights and their observers followed; the activations kept the calibrated qparams
    assert any(not torch.equal(before[id(fq)], fq.scale) for fq in fake_quants(qat) if fq.weight)
    assert all(torch.equal(s, fq.scale) for s, fq in zip(act_scales, acts, strict=True))
    # frozen from the start: no scale moves, the weights do
    qat2 = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    scales = {id(fq): fq.scale.clone() for fq in fake_quants(qat2)}  # by module: train() may reorder them
    weights = [p.detach().clone() for p in qat2.parameters()]
    train_qat(qat2, _batches(x, y), nn.functional.cross_entropy, epochs=1, lr=1e-2, freeze_epoch=0, progress=False)
    assert all(torch.equal(scales[id(fq)], fq.scale) for fq in fake_quants(qat2))
    assert any(not torch.equal(w, p) for w, p in zip(weights, qat2.parameters(), strict=True))


def test_per_layer_plan_carries_over():
    """A program's precision plan (precision="auto" writes it in meta) becomes the QAT scheme."""
    choice = [{"module": "branch", "precision": "w4a8", "reason": ""},
              {"module": "head", "precision": "int8", "reason": ""}]
    plan = mcuforge.Program(graph=None, meta={"precision_choice": choice})
    scheme = scheme_of(plan)
    assert scheme.layers == (("branch", "w4a8"),)
    model, x, _y = _tiny_task()
    qat = prepare_qat(model, x[:1], _calibration(x), plan, progress=False)
    bits = sorted(fq.quant_max for fq in fake_quants(qat) if fq.weight)
    assert bits == [7, 127, 127, 127]
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    assert not any(fq.frozen for fq in fake_quants(qat) if fq.weight)  # compile froze a copy, not the model
    assert sorted(op.kind for op in prog.ops if op.kind.startswith("conv2d")) == ["conv2d_s4", "conv2d_s8",
                                                                                  "conv2d_s8"]


def _codes_differ(prog: mcuforge.Program, qat: torch.fx.GraphModule, x: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        fq = freeze(copy.deepcopy(qat))(x).numpy()
    out = prog.run(x)[0]
    scale = prog.graph.tensors[prog.graph.outputs[0]].qparams.scale
    return np.rint((out - fq) / scale).astype(np.int64)


class Chain(nn.Module):
    """conv+ReLU, conv+ReLU, max pool, global average pool, linear: the digits CNN's ops, nothing else."""

    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = nn.functional.adaptive_avg_pool2d(nn.functional.max_pool2d(self.convs(x), 2), 1)
        return self.head(torch.flatten(pooled, 1))


@pytest.mark.parametrize("scheme", ["w4a8", "int8"])
def test_program_equals_frozen_fake_quant_forward(scheme):
    """Conv / linear outputs requantized as arm_nn_requantize does (double rounding, the s4 kernels' 16-bit
    multipliers), the int32 bias fake-quantized, global average pooling rounded as arm_avgpool_s8: the frozen
    fake-quant forward computes the program's codes exactly (mcuforge.qat.requant), after training too."""
    torch.manual_seed(3)
    model = Chain().eval()
    x = torch.randn(128, 1, 8, 8)
    y = (x[:, 0, :4].mean((1, 2)) > 0).long() * 2 + (x[:, 0, :, :4].mean((1, 2)) > 0).long()
    qat = prepare_qat(model, x[:1], _calibration(x), scheme, progress=False)
    train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=2, lr=1e-2, progress=False)
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    diff = _codes_differ(prog, qat, x)
    assert not diff.any(), f"{(diff != 0).mean():.2%} of the codes differ"


def test_learned_scales_train_then_freeze_snapped_and_program_stays_exact():
    """prepare_qat(learn_scales=True): each 4-bit weight scale is a parameter (log domain) that the loss moves
    until the observers freeze; frozen, the scale the program reads is the learned one, snapped to an exact
    16-bit multiplier (< 2^-15 relative), and the program computes the frozen fake-quant forward's codes."""
    torch.manual_seed(3)
    model = Chain().eval()
    x = torch.randn(128, 1, 8, 8)
    y = (x[:, 0, :4].mean((1, 2)) > 0).long() * 2 + (x[:, 0, :, :4].mean((1, 2)) > 0).long()
    observed = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    assert not any("log_scale" in n for n, _ in observed.named_parameters())  # off by default
    qat = prepare_qat(model, x[:1], _calibration(x), "w4a8", learn_scales=True, progress=False)
    weights = [fq for fq in fake_quants(qat) if fq.weight]
    learned = {id(p) for p in qat.parameters()} & {id(fq.log_scale) for fq in weights}
    assert len(learned) == len(weights) == 3  # two convs and the linear layer: parameters the optimizer sees
    calibrated = [fq.scale.clone() for fq in weights]
    assert all(torch.allclose(fq.log_scale.exp(), s) for fq, s in zip(weights, calibrated, strict=True))
    train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=3, lr=1e-2, freeze_epoch=2, progress=False)
    assert all(fq.frozen for fq in weights)
    assert any(not torch.allclose(fq.scale, s) for fq, s in zip(weights, calibrated, strict=True))
    for fq in weights:
        assert (fq.scale / fq.log_scale.detach().exp() - 1).abs().max() < 2 ** -15
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    diff = _codes_differ(prog, qat, x)
    assert not diff.any(), f"{(diff != 0).mean():.2%} of the codes differ"


def test_program_within_one_code_of_fake_quant_with_add_and_concat():
    """The residual add is not emulated (the fake quant rounds the float sum once; arm_elementwise_add_s8 works
    on left-shifted integers): at a rounding boundary it may differ by one code, which later layers carry."""
    model, x, y = _tiny_task()
    qat = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=2, lr=1e-2, progress=False)
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    diff = _codes_differ(prog, qat, x)
    assert np.abs(diff).max() <= 1


def test_trained_qat_program_same_bytes_host_python_c_and_board():
    model, x, y = _tiny_task()
    qat = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=2, lr=1e-2, progress=False)
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    assert any(op.kind == "conv2d_s4" for op in prog.ops)
    program = prog.to_bytes()
    for sample in (x[:1], x[5:6]):
        inputs = [a[0] for a in prog._program_inputs((sample,))[0]]  # one run: drop the run axis
        python = execute(prog.graph, inputs)
        c_host, _ = cruntime.run_program(program, inputs)
        board, _, _ = firmware.run_on_qemu(program, inputs, "cortex-m4")
        for p, c, b in zip(python, c_host, board, strict=True):
            assert p.tobytes() == c.tobytes() == b.tobytes()


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 8)
        self.rnn = nn.LSTM(8, 8, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.rnn(torch.relu(self.proj(x)))
        return torch.softmax(h[:, -1], -1)


def test_lstm_and_softmax_train_and_compile():
    """The fused LSTM op has a backward under QAT (mcuforge.qat.recurrent): its weights train; the program keeps
    the int16-state lstm_s8 kernel and softmax's fixed output quantization."""
    torch.manual_seed(0)
    model = Recurrent().eval()
    x = torch.randn(64, 5, 16)
    qat = prepare_qat(model, x[:1], [(x[:32],)], "w4a8", progress=False)
    before = {n: p.detach().clone() for n, p in qat.named_parameters()}
    targets = torch.softmax(torch.randn(64, 8), -1)
    train_qat(qat, [(x[i:i + 16], targets[i:i + 16]) for i in range(0, 64, 16)], nn.functional.mse_loss, epochs=1,
              lr=1e-2, progress=False)
    moved = {n for n, p in qat.named_parameters() if not torch.equal(before[n], p)}
    assert len(moved) == len(before)  # the LSTM's weights and bias included
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    assert [op.kind for op in prog.ops if op.kind in ("lstm_s8", "softmax_s8")] == ["lstm_s8", "softmax_s8"]
    out = prog.graph.tensors[prog.graph.outputs[0]].qparams
    assert (out.scale, out.zero_point) == (1 / 256, -128)


def test_auto_plan_to_qat_end_to_end():
    """"Fit the flash budget, then fine-tune": compile(precision="auto", flash budget) -> its plan -> prepare_qat ->
    train -> compile. Each layer of the QAT program runs in the plan's precision and the program fits the budget.
    Its codes are the frozen fake-quant forward's within one code: int8 and 4-bit layers are emulated exactly
    (test_program_equals_frozen_fake_quant_forward), A16W8 layers are not (on this CPU the plan puts the head in
    A16W8: int16 activations fit the int8 arena; 1.8% of the codes then differ by one)."""
    torch.manual_seed(3)
    model = Chain().eval()
    x = torch.randn(128, 1, 8, 8)
    y = (x[:, 0, :4].mean((1, 2)) > 0).long() * 2 + (x[:, 0, :, :4].mean((1, 2)) > 0).long()
    example, calibration = x[:1], _calibration(x)[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        uniform = {q: mcuforge.compile(model, example, calibration, target="cortex-m4", quantization=q,
                                       progress=False) for q in ("int8", "w4a8")}
        budget = (uniform["int8"].program_bytes + uniform["w4a8"].program_bytes) // 2
        auto = mcuforge.compile(model, example, calibration, target="cortex-m4", precision="auto", progress=False,
                                flash_budget=budget, ram_budget=uniform["int8"].arena_bytes)
    plan = {c["module"]: c["precision"] for c in auto.meta["precision_choice"]}
    assert len(plan) == 3 and "w4a8" in plan.values()  # by construction: all-int8 exceeds the budget
    qat = prepare_qat(model, example, calibration, auto, progress=False)
    four_bit = sum(fq.quant_max == 7 for fq in fake_quants(qat) if fq.weight)
    assert four_bit == list(plan.values()).count("w4a8")
    train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=2, lr=1e-2, progress=False)
    prog = mcuforge.compile(qat, example, target="cortex-m4")
    runs_in = {"int8": "a8w8", "w4a8": "a8w4", "a16w8": "a16w8"}
    layers = {op.module: op.precision for op in prog.ops if op.module in plan}
    assert layers == {m: runs_in[p] for m, p in plan.items()}
    assert prog.program_bytes <= budget < uniform["int8"].program_bytes
    diff = _codes_differ(prog, qat, x)
    assert np.abs(diff).max() <= 1


class ChainBN(nn.Module):
    """Chain with a BatchNorm after each conv (folded by prepare_qat; its statistics may train)."""

    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                   nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = nn.functional.adaptive_avg_pool2d(nn.functional.max_pool2d(self.convs(x), 2), 1)
        return self.head(torch.flatten(pooled, 1))


def test_batch_norm_statistics_train_then_freeze_and_program_stays_exact():
    """The freeze-BN-stats schedule (mcuforge.qat.batchnorm): before ``freeze_bn_epoch`` each step moves the folded
    BatchNorms' running statistics toward the batch's and refolds the layer (the unfolded weight W_f * sigma / gamma
    is unchanged by a refold); from it nothing moves them; the program compiled after training is still the frozen
    fake-quant forward, code for code."""
    from mcuforge.qat.batchnorm import recorders

    torch.manual_seed(4)
    model = ChainBN().eval()
    for bn in (model.convs[1], model.convs[4]):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(128, 1, 8, 8)
    y = (x[:, 0, :4].mean((1, 2)) > 0).long() * 2 + (x[:, 0, :, :4].mean((1, 2)) > 0).long()
    qat = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    recs = recorders(qat)
    assert len(recs) == 2

    def unfolded() -> list[torch.Tensor]:
        return [r.params[0].detach().double() * torch.sqrt(r.running_var + r.eps).reshape(-1, 1, 1, 1)
                / r.gamma.reshape(-1, 1, 1, 1) for r in recs]

    means = [r.running_mean.clone() for r in recs]
    weights = unfolded()
    # the default: BatchNorm frozen from the start
    log = train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=1, lr=0.0, progress=False)
    assert log.bn_updates == 0 and all(torch.equal(m, r.running_mean) for m, r in zip(means, recs, strict=True))
    # statistics tracked for the first epoch only (lr 0: only the refolds move the folded weights)
    log = train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=2, lr=0.0, freeze_bn_epoch=1,
                    freeze_epoch=1, progress=False)
    assert log.bn_frozen_at_epoch == 1 and log.bn_updates == 2 * 4  # two BatchNorms, four steps in epoch 0
    assert all(not torch.equal(m, r.running_mean) for m, r in zip(means, recs, strict=True))
    for before, after in zip(weights, unfolded(), strict=True):
        torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="freeze_bn_epoch"):
        train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=2, freeze_bn_epoch=2, freeze_epoch=1)
    # now train: statistics for one epoch, observers frozen for the last; the program is the frozen forward
    train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=3, lr=1e-2, freeze_bn_epoch=1,
              progress=False)
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    assert not any(op.kind.startswith("batch_norm") for op in prog.ops)
    diff = _codes_differ(prog, qat, x)
    assert not diff.any(), f"{(diff != 0).mean():.2%} of the codes differ"


class MixedBN(nn.Module):
    """conv -> BatchNorm2d -> ReLU and linear -> BatchNorm1d -> ReLU: both folded patterns the BatchNorm phase trains
    (statistics, gamma and beta)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(64, 16), nn.BatchNorm1d(16), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = nn.functional.max_pool2d(self.conv(x), 2)
        return self.head(self.fc(torch.flatten(pooled, 1)))


def test_batch_norm_phase_normalizes_with_batch_statistics_and_program_stays_exact():
    """While its statistics are tracked, each folded BatchNorm (conv -> BatchNorm2d and linear -> BatchNorm1d) is
    torchao's conv-BN QAT forward: the folded layer's output unscaled to the BatchNorm input and normalized with the
    batch's statistics, gamma and beta trainable. With fake quantization off this is the float model in train mode:
    same outputs, same gradients for gamma and beta. After the phase the forward is the folded layer again and the
    compiled program computes the frozen fake-quant forward's codes exactly."""
    from mcuforge.qat import set_fake_quant, track_batch_norm
    from mcuforge.qat.batchnorm import recorders

    torch.manual_seed(5)
    model = MixedBN().eval()
    for bn in (model.conv[1], model.fc[1]):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    x = torch.randn(128, 1, 8, 8)
    y = (x[:, 0, :4].mean((1, 2)) > 0).long() * 2 + (x[:, 0, :, :4].mean((1, 2)) > 0).long()
    qat = prepare_qat(model, x[:1], _calibration(x), "w4a8", progress=False)
    recs = recorders(qat)
    assert [r.axis for r in recs] == [1, -1]  # the conv's channels, the linear's features
    # the float model in train mode (batch statistics) against the QAT model tracking, fake quantization off
    eager = copy.deepcopy(model).train()
    ref = eager(x[:32])
    nn.functional.cross_entropy(ref, y[:32]).backward()
    set_fake_quant(qat, False)
    track_batch_norm(qat, True)
    out = qat(x[:32])
    nn.functional.cross_entropy(out, y[:32]).backward()
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    for rec, bn in zip(recs, (eager.conv[1], eager.fc[1]), strict=True):
        torch.testing.assert_close(rec.weight.grad, bn.weight.grad, rtol=1e-3, atol=1e-6)
        torch.testing.assert_close(rec.bias.grad, bn.bias.grad, rtol=1e-3, atol=1e-6)
    # not tracking: the folded layer (running statistics), i.e. the float model in eval mode
    track_batch_norm(qat, False)
    with torch.no_grad():
        torch.testing.assert_close(qat(x[:32]), model(x[:32]), rtol=1e-4, atol=1e-5)
    set_fake_quant(qat, True)
    qat.zero_grad()
    # train: the BatchNorm phase for two epochs (gamma and beta move and are folded in), observers frozen last
    gammas = [r.gamma.clone() for r in recs]
    log = train_qat(qat, _batches(x, y), nn.functional.cross_entropy, epochs=3, lr=1e-2, freeze_bn_epoch=2,
                    progress=False)
    assert log.bn_frozen_at_epoch == 2 and log.bn_updates == 2 * 2 * 4  # two BatchNorms, two epochs of 4 steps
    assert all(not torch.equal(g, r.gamma) for g, r in zip(gammas, recs, strict=True))
    assert all(torch.equal(r.weight.detach().double(), r.gamma.float().double()) for r in recs)
    prog = mcuforge.compile(qat, x[:1], target="cortex-m4")
    assert not any(op.kind.startswith("batch_norm") for op in prog.ops)
    diff = _codes_differ(prog, qat, x)
    assert not diff.any(), f"{(diff != 0).mean():.2%} of the codes differ"
