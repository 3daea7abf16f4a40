"""BatchNorm during QAT, folded: the freeze-BN-stats schedule with torchao's conv-BN QAT forward.

prepare_qat folds each BatchNorm into the conv / linear before it (PTQ's pass), so the weight fake quant sees
the folded weight ``W_f = W * gamma / sigma`` and the program's layer is one kernel. The usual QAT schedule
trains the BatchNorm for the first epochs (batch statistics in the forward, running statistics following the
fine-tuned weights, gamma and beta trained), then freezes it. torchao does that with its conv-BN pattern
(``_fuse_conv_bn_qat``), which needs the quantizer to annotate conv -> BN (-> ReLU) chains; mcuforge's never
sees a BatchNorm, and torchao has no linear -> BatchNorm1d pattern. Here the folded layer (conv or linear)
keeps its BatchNorm's constants (gamma, beta, running mean and variance) in a recorder placed in line after it,
and while tracking (before ``freeze_bn_epoch``):

- the forward is torchao's: the folded output ``y`` (fake-quantized ``W_f``, folded with the running
  statistics, as torchao scales the weight by ``gamma / running_sigma``) is taken back to the BatchNorm input
  ``z = (y - beta) * sigma / gamma + mean`` and normalized with the batch's mean and variance (gradients
  through them, as BatchNorm trains), times the trainable gamma plus beta (the recorder's parameters);
- after each optimizer step (:func:`update_batch_norm`) the running statistics move toward the batch's (the
  BatchNorm's momentum, unbiased variance as torch's) and the layer is folded again with them and the trained
  gamma and beta: ``W_f`` scaled by ``(gamma' / gamma) (sigma / sigma')`` and ``b_f`` moved so that the
  unfolded ``W`` and conv bias are unchanged.

Not tracking (the frozen BatchNorm, and from ``freeze_bn_epoch`` on) the recorder is the identity: the forward
is the folded layer with the running statistics, which is what the program computes (the exactness tests hold
after the BatchNorm phase). The recorders are added after the requantization emulation has matched its
patterns and removed before convert_pt2e.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import fx, nn

from ..float_passes.fold_bn import FOLDABLE, foldable

aten = torch.ops.aten
PREFIX = "mcuforge_bnstats_"


@dataclasses.dataclass
class _Fold:
    producer: fx.Node
    constants: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, float]
    momentum: float


def foldable_batch_norms(gm: fx.GraphModule) -> list[_Fold]:
    """The BatchNorms ``fold_batch_norm`` will fold (same conditions), with their constants: call before it."""
    folds = []
    for bn in gm.graph.nodes:
        found = foldable(gm, bn)
        if found is None:
            continue
        producer, constants = found
        momentum = bn.args[6] if isinstance(bn.args[6], float) else 0.1  # None (cumulative): a plain 0.1
        gamma, beta, mean, var, eps = constants
        folds.append(_Fold(producer, (gamma.double(), beta.double(), mean.double(), var.double(), float(eps)),
                           momentum))
    return folds


def folded_names(gm: fx.GraphModule, folds: list[_Fold]) -> list[tuple[str, str, _Fold]]:
    """After folding: each fold's (folded weight, folded bias) attribute names; folds that did not happen dropped."""
    nodes = set(gm.graph.nodes)
    out = []
    for fold in folds:
        args = fold.producer.args
        if fold.producer not in nodes or len(args) < 3:
            continue
        weight, bias = args[1], args[2]
        if (isinstance(weight, fx.Node) and isinstance(bias, fx.Node) and weight.op == bias.op == "get_attr"
                and "_bnfolded" in str(weight.target)):
            out.append((str(weight.target), str(bias.target), fold))
    return out


class BatchNormStatistics(nn.Module):
    """One folded BatchNorm: its constants, the latest batch's statistics, the folded parameters it refolds.

    ``weight`` / ``bias`` (Parameters) are the BatchNorm's gamma and beta as training moves them while tracking;
    the ``gamma`` / ``beta`` buffers are the ones the layer is folded with (equal to them after each refold)."""

    def __init__(self, weight: nn.Parameter, bias: nn.Parameter, fold: _Fold, axis: int) -> None:
        super().__init__()
        gamma, beta, mean, var, eps = fold.constants
        for name, value in (("gamma", gamma), ("beta", beta), ("running_mean", mean), ("running_var", var)):
            self.register_buffer(name, value.clone())
        self.weight = nn.Parameter(gamma.float().clone())
        self.bias = nn.Parameter(beta.float().clone())
        self.eps, self.momentum, self.axis = eps, fold.momentum, axis
        self.tracking = False
        self.batch: tuple[torch.Tensor, torch.Tensor] | None = None
        object.__setattr__(self, "params", (weight, bias))  # not submodules/parameters: the model's own

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        if not self.tracking:  # train_qat (or track_batch_norm) sets it: exported models ignore train()
            return y
        # torchao's conv-BN QAT forward, on the folded layer's output y = x W_f^T + b_f (W_f fake-quantized):
        # the BatchNorm input z = (y - beta) * sigma / gamma + mean (running statistics, those of the fold),
        # normalized with the batch's statistics (gradients through them, as BatchNorm trains) and scaled by the
        # trainable gamma and beta. Frozen (not tracking), this is the identity: the layer is the folded one.
        shape = [1] * y.dim()
        shape[self.axis] = -1
        gamma = torch.where(self.gamma == 0, torch.ones_like(self.gamma), self.gamma)
        ratio = (torch.sqrt(self.running_var + self.eps) / gamma).to(y.dtype)
        z = (y - self.beta.to(y.dtype).reshape(shape)) * ratio.reshape(shape) + \
            self.running_mean.to(y.dtype).reshape(shape)
        dims = [d for d in range(y.dim()) if d != self.axis % y.dim()]
        mean = z.mean(dims, keepdim=True)
        var = z.var(dims, unbiased=False, keepdim=True)
        with torch.no_grad():
            count = z.numel() // z.shape[self.axis]
            unbiased = var.detach().double().reshape(-1) * count / max(count - 1, 1)
            self.batch = (mean.detach().double().reshape(-1), unbiased)
        normalized = (z - mean) * torch.rsqrt(var + self.eps)
        out = normalized * self.weight.reshape(shape) + self.bias.reshape(shape)
        keep = (self.gamma != 0).reshape(shape)  # a zero gamma folded to zero weights: that channel stays as it is
        return torch.where(keep, out, y)

    @torch.no_grad()
    def update(self) -> bool:
        """Running statistics one momentum step toward the last batch's, parameters refolded with them and the
        trained gamma and beta; False if no batch was recorded."""
        if self.batch is None:
            return False
        batch_mean, batch_var = self.batch
        self.batch = None
        keep = self.gamma != 0  # a zero gamma folds to zero weights whatever the statistics: left as it is
        m = self.momentum
        mean = torch.where(keep, (1 - m) * self.running_mean + m * batch_mean, self.running_mean)
        var = torch.where(keep, (1 - m) * self.running_var + m * batch_var, self.running_var)
        sigma, new_sigma = torch.sqrt(self.running_var + self.eps), torch.sqrt(var + self.eps)
        weight, bias = self.params
        gamma = torch.where(keep, self.gamma, torch.ones_like(self.gamma))
        new_gamma = torch.where(keep, self.weight.double(), self.gamma)
        new_beta = torch.where(keep, self.bias.double(), self.beta)
        # unfolded weight W = W_f * sigma / gamma and conv bias b0 = (b_f - beta) * sigma / gamma + mean, unchanged
        b0 = (bias.double() - self.beta) * sigma / gamma + self.running_mean
        new_bias = torch.where(keep, (b0 - mean) * new_gamma / new_sigma + new_beta, bias.double())
        shape = (-1,) + (1,) * (weight.dim() - 1)
        scale = torch.where(keep, new_gamma / gamma * sigma / new_sigma, torch.ones_like(sigma))
        weight.mul_(scale.reshape(shape).to(weight.dtype))
        bias.copy_(new_bias.to(bias.dtype))
        self.running_mean.copy_(mean)
        self.running_var.copy_(var)
        self.gamma.copy_(new_gamma)
        self.beta.copy_(new_beta)
        self.weight.copy_(new_gamma.float())  # a zero gamma's channel: back to zero
        self.bias.copy_(new_beta.float())
        return True


def _weight_attr(gm: fx.GraphModule, node: object) -> str | None:
    """The get_attr behind a weighted op's weight argument (through its fake quant's call)."""
    while isinstance(node, fx.Node) and node.op == "call_module":
        node = node.args[0]
    return str(node.target) if isinstance(node, fx.Node) and node.op == "get_attr" else None


def attach(gm: fx.GraphModule, names: list[tuple[str, str, _Fold]]) -> int:
    """A :class:`BatchNormStatistics` recorder after each folded layer of the prepared ``gm`` (in place); how many."""
    by_weight = {w: (b, fold) for w, b, fold in names}
    params = dict(gm.named_parameters())
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in FOLDABLE or len(node.args) < 3:
            continue
        weight_name = _weight_attr(gm, node.args[1])
        if weight_name not in by_weight:
            continue
        bias_name, fold = by_weight[weight_name]
        if weight_name not in params or bias_name not in params:
            continue
        axis = -1 if node.target == aten.linear.default else 1
        name = f"{PREFIX}{count}"
        gm.add_submodule(name, BatchNormStatistics(params[weight_name], params[bias_name], fold, axis))
        with gm.graph.inserting_after(node):
            recorder = gm.graph.call_module(name, (node,))
        # in line (the layer's users read the recorder's output, the same tensor): torchao's train()/eval() switch
        # runs dead-code elimination, which would drop a side branch
        node.replace_all_uses_with(recorder, delete_user_cb=lambda user, r=recorder: user is not r)
        count += 1
    gm.recompile()
    return count


def recorders(model: nn.Module) -> list[BatchNormStatistics]:
    return [m for m in model.modules() if isinstance(m, BatchNormStatistics)]


def track_batch_norm(model: nn.Module, enabled: bool) -> None:
    """The BatchNorm phase on (each forward normalizes with the batch's statistics and records them: evaluate
    with it off) or frozen (the default: the folded layer, the program's forward)."""
    for r in recorders(model):
        r.tracking = enabled
        r.batch = None


def update_batch_norm(model: nn.Module) -> int:
    """After an optimizer step: running statistics updated and the layers refolded (where a batch was recorded);
    how many. Call it after each ``optimizer.step()`` in your own loop while tracking (``train_qat`` does)."""
    return sum(r.update() for r in recorders(model))


def detach_recorders(gm: fx.GraphModule) -> None:
    """The recorders' nodes and modules removed (before convert_pt2e), in place."""
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and str(node.target).startswith(PREFIX):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    for name, _m in list(gm.named_children()):
        if name.startswith(PREFIX):
            delattr(gm, name)
    gm.recompile()
