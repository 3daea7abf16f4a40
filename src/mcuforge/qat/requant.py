"""The weighted layers' outputs in the fake-quant forward, requantized as the kernels requantize.

A fake quant rounds ``y / scale`` once, to nearest. The kernels (CMSIS-NN's ``arm_nn_requantize``, default
form) take the int32 accumulator through a Q31 multiplier and a shift: a first rounding (half up) at 2^shift
finer than an output step, then a division rounding half away from zero -- double rounding, which moves a
value whose fraction lies in [0.5 - 2^(shift-1), 0.5) of a step up by one. On int8 layers (right shifts of
6-8) that is a fraction of a percent of the codes; on 4-bit layers (weight scales ~16x larger, right shifts of
2-3) about 6%, and every such code moves the next layers.

So, once the qparams are frozen, the output of every conv / linear layer with int8 output (and no clamp but
ReLU between) is computed as the program computes it: the exact int32 accumulator recovered from the float
result (``y / (input_scale x weight_scale)``: an integer up to float rounding, the bias being fake-quantized
on that grid, ``fake_quant.BiasFakeQuantize``), the lowering's multipliers (``quantize_multipliers``, and
the 16-bit ones of the s4 kernels, ``multipliers16``), ``requantize``. The value is the program's; the
gradient is the fake quant's (straight-through). While observers move, the plain fake quant runs.

The graph calls :class:`RequantEmulation` where the layer's output fake quant was called; the call goes back to
the fake quant itself before convert_pt2e (:func:`restore`), so the converted graph is PT2E's own.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import fx, nn

from ..kernels.int4 import multipliers16, widened_multipliers
from ..kernels.quant_utils import quantize_multipliers, requantize
from ..quantize.patterns import LINEAR_OPS, WEIGHTED_OPS
from .fake_quant import ObserverFakeQuantize

aten = torch.ops.aten
_RELU = {aten.relu.default, aten.relu_.default}
PREFIX = "mcuforge_requant_"


class RequantEmulation(nn.Module):
    """Calls the layer's output fake quant; frozen, returns the kernel's requantized values instead."""

    def __init__(self, target: str, out_fq: nn.Module, in_fq: nn.Module, w_fq: nn.Module, axis: int,
                 four_bit: bool) -> None:
        super().__init__()
        self.target, self.axis, self.four_bit = target, axis, four_bit
        object.__setattr__(self, "refs", (out_fq, in_fq, w_fq))  # not submodules: PT2E must see each once

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        out_fq, in_fq, w_fq = self.refs
        out = out_fq(y)
        modules = (out_fq, in_fq, w_fq)
        if any(m.observer_enabled[0] == 1 or m.fake_quant_enabled[0] == 0 for m in modules):
            return out
        s_in = np.float64(in_fq.scale.reshape(-1)[0])
        s_w = w_fq.scale.detach().double().reshape(-1).numpy()
        s_out, zp = float(out_fq.scale.reshape(-1)[0]), int(out_fq.zero_point.reshape(-1)[0])
        mult, shift = quantize_multipliers(s_in * s_w / np.float64(s_out))
        if self.four_bit:
            narrow = multipliers16(mult, shift)
            if narrow is not None:
                mult, shift = widened_multipliers(narrow[0]), narrow[1]
        acc_scale = (np.float32(s_in) * w_fq.scale.detach().float().reshape(-1).numpy()).astype(np.float32)
        values = torch.movedim(y.detach(), self.axis, -1).numpy()
        acc = np.rint(values.astype(np.float64) / acc_scale.astype(np.float64)).astype(np.int64)
        codes = np.clip(requantize(acc, mult.astype(np.int64), shift.astype(np.int64)) + zp, out_fq.quant_min,
                        out_fq.quant_max)
        exact = torch.movedim(torch.from_numpy(((codes - zp) * s_out).astype(np.float32)), -1, self.axis)
        return out + (exact.to(out.dtype) - out).detach()


class AvgPoolEmulation(nn.Module):
    """A global average pool's output as ``arm_avgpool_s8`` computes it: the sum of the window's raw codes, divided
    by the count rounding half away from zero (the fake quant rounds the mean half to even, and ties are common:
    one window in 2 x count has one)."""

    def __init__(self, target: str, fq: nn.Module, count: int) -> None:
        super().__init__()
        self.target, self.count = target, count
        object.__setattr__(self, "refs", (fq,))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        (fq,) = self.refs
        out = fq(y)
        if fq.observer_enabled[0] == 1 or fq.fake_quant_enabled[0] == 0:
            return out
        scale, zp = float(fq.scale.reshape(-1)[0]), int(fq.zero_point.reshape(-1)[0])
        # the window's sum of (code - zero point): an integer up to float rounding
        centred = torch.round(y.detach().double() * self.count / scale).to(torch.int64)
        total = centred + self.count * zp
        half = self.count // 2
        codes = torch.where(total > 0, torch.div(total + half, self.count, rounding_mode="trunc"),
                            torch.div(total - half, self.count, rounding_mode="trunc"))
        codes = torch.clamp(codes, fq.quant_min, fq.quant_max)
        exact = ((codes - zp).double() * scale).to(out.dtype)
        return out + (exact - out).detach()


def _global_pool_count(node: fx.Node) -> int | None:
    """The window size of a global average pool (adaptive to 1x1, or a mean over the last two dims), else None."""
    src = node.args[0]
    while isinstance(src, fx.Node) and src.op == "call_module" and "val" not in src.meta:
        src = src.args[0]  # an observer's call: the value it observes
    val = src.meta.get("val") if isinstance(src, fx.Node) else None
    if val is None or len(val.shape) != 4:
        return None
    h, w = val.shape[-2:]
    if not isinstance(h, int) or not isinstance(w, int):
        return None
    if node.target == aten.adaptive_avg_pool2d.default and list(node.args[1]) == [1, 1]:
        return h * w
    if node.target == aten.mean.dim and sorted(d % 4 for d in node.args[1]) == [2, 3]:
        return h * w
    return None


def _emulate_pool(gm: fx.GraphModule, node: fx.Node, index: int) -> bool:
    count = _global_pool_count(node)
    if count is None or len(node.users) != 1:
        return False
    fq_node = next(iter(node.users))
    fq = _fq(gm, fq_node)
    if fq is None or fq.quant_max != 127:
        return False
    name = f"{PREFIX}{index}"
    gm.add_submodule(name, AvgPoolEmulation(str(fq_node.target), fq, count))
    fq_node.target = name
    return True


def _fq(gm: fx.GraphModule, node: object) -> nn.Module | None:
    if isinstance(node, fx.Node) and node.op == "call_module":
        module = gm.get_submodule(str(node.target))
        if isinstance(module, (RequantEmulation, AvgPoolEmulation)):  # a previous op's output, already routed
            module = module.refs[0]
        return module if isinstance(module, ObserverFakeQuantize) else None
    return None


def emulate_requantization(gm: fx.GraphModule) -> int:
    """Route each eligible weighted layer's output fake quant through :class:`RequantEmulation`, each global
    average pool's through :class:`AvgPoolEmulation` (in place); how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in (aten.adaptive_avg_pool2d.default, aten.mean.dim):
            count += _emulate_pool(gm, node, count)
            continue
        if node.op != "call_function" or node.target not in WEIGHTED_OPS or len(node.args) < 2:
            continue
        in_fq, w_fq = _fq(gm, node.args[0]), _fq(gm, node.args[1])
        out = node
        if len(out.users) == 1 and next(iter(out.users)).target in _RELU:
            out = next(iter(out.users))
        if len(out.users) != 1:
            continue
        fq_node = next(iter(out.users))
        out_fq = _fq(gm, fq_node)
        if in_fq is None or w_fq is None or out_fq is None or out_fq.quant_max != 127 or in_fq.quant_max != 127:
            continue
        rank = len(node.meta["val"].shape) if "val" in node.meta else 4
        axis = rank - 1 if node.target in LINEAR_OPS else 1
        name = f"{PREFIX}{count}"
        gm.add_submodule(name, RequantEmulation(str(fq_node.target), out_fq, in_fq, w_fq, axis,
                                                w_fq.quant_max == 7))
        fq_node.target = name
        count += 1
    gm.recompile()
    return count


def restore(gm: fx.GraphModule) -> None:
    """The fake quants called directly again (before convert_pt2e), the emulation modules removed."""
    for node in gm.graph.nodes:
        if node.op == "call_module" and str(node.target).startswith(PREFIX):
            module = gm.get_submodule(str(node.target))
            node.target = module.target
            # a GraphModule copy keeps only the submodules its graph calls: the fake quant may be gone by name
            if not hasattr(gm, module.target):
                gm.add_submodule(module.target, module.refs[0])
    for name, _m in list(gm.named_children()):
        if name.startswith(PREFIX):
            delattr(gm, name)
    gm.recompile()
