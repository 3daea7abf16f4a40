"""Per layer, one weight scale for a linear layer or one per output channel: decided by the error each
causes on the layer's output over the calibration inputs.

A scale per output channel costs 8 bytes of flash per channel (a multiplier and a shift) and never rounds
the weights more coarsely; one scale for the tensor is worth it where it loses next to nothing. What it
loses is measured where it matters: the error on the layer's output, ``||(W - W_q) X||^2`` summed over the
rows ``x`` of the layer's calibration inputs, ``= trace(dW G dW^T)`` with ``G = sum x x^T`` (float64). The
weights' own rounding error ``||W - W_q||^2`` is the same with ``G = I``: it treats every input column alike,
while a layer's inputs are not alike (a few large, correlated features; dead ones), so it can call two
options close whose output errors differ 2x (DS-CNN's classifier: 0.11 dB apart on the weights, 2.3x on the
output). ``W_q`` is rounded as the weight observers round it: min/max scales for int8, the least-squares
clipped scales (``weight_observers.clipped_scales``) for int4.
"""

from __future__ import annotations

import torch
from torch import fx

from ..nodes import module_path
from .gptq import _Collector
from .patterns import LINEAR_OPS
from .schemes import Scheme
from .weight_observers import PER_CHANNEL_MIN_GAIN_DB, clipped_scales

__all__ = ["choose_per_channel", "gram_collector", "input_grams", "output_error", "per_channel_output_gain_db",
           "rounded_weight",
           "undecided_linear_layers"]


def rounded_weight(weight: torch.Tensor, bits: int, per_channel: bool) -> torch.Tensor:
    """``weight`` (O, K) as float64, quantized and dequantized the way the observers of that width and
    granularity would (symmetric, [-(2^(bits-1) - 1), 2^(bits-1) - 1])."""
    qmax = (1 << (bits - 1)) - 1
    w = weight.detach().double().reshape(weight.shape[0], -1)
    rows = w if per_channel else w.reshape(1, -1)
    eps = float(torch.finfo(torch.float32).eps)
    scale = rows.abs().amax(dim=1) / qmax
    if per_channel and bool((scale == 0).any()) and bool((scale > 0).any()):
        scale = torch.where(scale == 0, scale.max(), scale)  # dead rows: exact at any scale
    scale = torch.clamp(scale, min=eps)
    if bits == 4:  # the MSE observers' clipping
        scale = clipped_scales(rows, scale, -qmax, qmax, eps)
    levels = torch.clamp(torch.round(rows / scale[:, None]), -qmax, qmax)
    return (levels * scale[:, None]).reshape(w.shape)


def output_error(weight: torch.Tensor, gram: torch.Tensor, bits: int, per_channel: bool) -> float:
    """``sum ||(W - W_q) x||^2`` over the inputs whose ``sum x x^T`` is ``gram`` (K, K)."""
    delta = weight.detach().double().reshape(weight.shape[0], -1) - rounded_weight(weight, bits, per_channel)
    return float(((delta @ gram.double()) * delta).sum())


def per_channel_output_gain_db(weight: torch.Tensor, gram: torch.Tensor | None, bits: int) -> float:
    """How much lower (dB) the layer's output error is with a scale per output channel than with one for the
    tensor; ``gram`` None: the weights' own rounding error (``G = I``)."""
    if gram is None:
        gram = torch.eye(weight[0].numel(), dtype=torch.float64)
    per_tensor, per_channel = (output_error(weight, gram, bits, p) for p in (False, True))
    if per_channel <= 0:
        return float("inf") if per_tensor > 0 else 0.0
    if per_tensor <= 0:
        return float("-inf")
    return float(10 * torch.log10(torch.tensor(per_tensor / per_channel, dtype=torch.float64)))


def choose_per_channel(weight: torch.Tensor, gram: torch.Tensor | None, bits: int) -> bool:
    """Per channel where it lowers the output error by at least ``PER_CHANNEL_MIN_GAIN_DB``."""
    return per_channel_output_gain_db(weight, gram, bits) >= PER_CHANNEL_MIN_GAIN_DB


def _weight_value(weight: fx.Node) -> torch.Tensor:
    value = weight.graph.owning_module
    for part in str(weight.target).split("."):
        value = getattr(value, part)
    return value  # type: ignore[return-value]


def undecided_linear_layers(gm: fx.GraphModule, scheme: Scheme) -> dict[fx.Node, torch.Tensor]:
    """The linear layers of ``gm`` whose scheme leaves the per-channel choice to the data (``linear_per_channel``
    None) and whose weight is a constant: node -> weight."""
    layers = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in LINEAR_OPS or len(node.args) < 2:
            continue
        weight = node.args[1]
        if not isinstance(weight, fx.Node) or weight.op != "get_attr":
            continue
        if scheme.layer_scheme(module_path(node)).linear_per_channel is None:
            value = _weight_value(weight)
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                layers[node] = value
    return layers


def gram_collector(gm: fx.GraphModule, scheme: Scheme) -> _Collector | None:
    """A runner of the float graph that accumulates ``sum x x^T`` (float64) of the inputs of each undecided linear
    layer (``collector.run(*inputs)`` per calibration item, then :func:`input_grams`); None if there is none."""
    layers = undecided_linear_layers(gm, scheme)
    return _Collector(gm, layers) if layers else None


def input_grams(collector: _Collector | None) -> dict[str, torch.Tensor]:
    """What ``collector`` accumulated, keyed by each layer's weight attribute (a weight two layers share: their
    inputs together)."""
    grams: dict[str, torch.Tensor] = {}
    for node, gram in ({} if collector is None else collector.gram).items():
        key = str(node.args[1].target)
        grams[key] = grams[key] + gram if key in grams else gram
    return grams
