"""GPTQ weight rounding (Frantar et al., 2022) for the int8 weights of linear and convolution layers.

With int16 activations (the "a16w8" scheme) the rounding of the int8 weights is what is left of the
quantization error. Rounding each weight to its nearest level ignores what the layer's inputs do with the
errors; GPTQ rounds the input columns of a weight one at a time and moves each column's rounding error
onto the columns not yet rounded, weighted by the inverse of the inputs' second moment ``H = E[x x^T]``
(from the calibration data), so that the layer's output error ``(W_q - W) x`` is small for the inputs
the layer actually sees -- correlated inputs (neighbouring spectrogram bins, a constant offset) above all.

The result is written back into the float graph as weights that lie exactly on the int8 grid of the
per-channel scale the weight observer will compute (``max |w| / 127`` per output channel), so PT2E's
convert gives these int8 values and the lowering and kernels are unchanged. A row whose largest level
would not stay at +-127 (so that the observer would pick another scale) keeps its nearest rounding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import fx

aten = torch.ops.aten
LINEAR = (aten.linear.default,)
CONV = (aten.conv2d.default, aten.conv1d.default)
#: Damping added to H's diagonal, relative to its mean (GPTQ's default): keeps H invertible and the
#: error feedback tame where inputs are nearly collinear.
DAMP = 0.01
QMAX = 127


def _weight_attr(gm: fx.GraphModule, node: fx.Node) -> tuple[str, torch.Tensor] | None:
    """(attribute path, tensor) of a layer's weight when it is a constant used by this layer only."""
    w = node.args[1] if len(node.args) > 1 else None
    if not isinstance(w, fx.Node) or w.op != "get_attr" or len(w.users) != 1:
        return None
    value = gm
    for part in str(w.target).split("."):
        value = getattr(value, part)
    return (str(w.target), value) if isinstance(value, torch.Tensor) and value.is_floating_point() else None


def _arg(node: fx.Node, index: int, name: str, default: object) -> object:
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def _rows(node: fx.Node, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor | None:
    """The layer's inputs as rows matching ``weight.reshape(O, -1)``'s columns: linear inputs as they are,
    convolution inputs as their im2col patches (zero padding, the int8 kernels' padding); None for grouped
    convolutions (each group would need its own H)."""
    if node.target in LINEAR:
        return x.reshape(-1, x.shape[-1])
    if int(_arg(node, 6, "groups", 1)) != 1:
        return None
    stride, padding, dilation = (_arg(node, i, n, d) for i, n, d in ((3, "stride", 1), (4, "padding", 0),
                                                                    (5, "dilation", 1)))
    if isinstance(padding, str):
        return None  # "same"/"valid" strings: not handled here
    if node.target == aten.conv1d.default:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, padding, dilation = ((1, s[0]) if isinstance(s, Sequence) else (1, s)
                                     for s in (stride, padding, dilation))
    patches = torch.nn.functional.unfold(x, weight.shape[2:], dilation=dilation, padding=padding, stride=stride)
    return patches.transpose(1, 2).reshape(-1, patches.shape[1])


class _Collector(fx.Interpreter):
    """Runs the float graph and accumulates ``sum x x^T`` over every row of each layer's input."""

    def __init__(self, gm: fx.GraphModule, layers: dict[fx.Node, torch.Tensor]) -> None:
        super().__init__(gm)
        self.layers = layers
        self.gram: dict[fx.Node, torch.Tensor] = {}
        self.count: dict[fx.Node, int] = {}

    def run_node(self, n: fx.Node) -> object:
        result = super().run_node(n)
        if n in self.layers:
            x = self.env[n.args[0]] if isinstance(n.args[0], fx.Node) else None
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                rows = _rows(n, x.detach(), self.layers[n])
                if rows is not None:
                    rows = rows.double()
                    self.gram[n] = self.gram.get(n, 0) + rows.T @ rows
                    self.count[n] = self.count.get(n, 0) + rows.shape[0]
        return result


def gptq_round(weight: torch.Tensor, gram: torch.Tensor) -> torch.Tensor:
    """GPTQ's int8 levels of ``weight`` (O, K) for inputs of second moment ``gram`` (K, K): the levels, as
    float64, of the per-channel scale ``max |w| / 127``. Columns are rounded in decreasing order of their
    input's energy (GPTQ's "act order": the columns that matter most are rounded while the most freedom is
    left to absorb their errors); rows whose largest level leaves +-127 are rounded to nearest instead
    (their observer scale would differ)."""
    w = weight.detach().double().reshape(weight.shape[0], -1).clone()
    scale = w.abs().amax(dim=1) / QMAX
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    nearest = torch.clamp(torch.round(w / scale[:, None]), -QMAX, QMAX)
    h = gram.double().clone()
    dead = torch.diag(h) == 0
    h[dead, dead] = 1.0  # inputs never active in calibration: rounded to nearest, no error to spread
    order = torch.argsort(torch.diag(h), descending=True)
    w, h = w[:, order], h[order][:, order]
    h += DAMP * torch.diag(h).mean() * torch.eye(h.shape[0], dtype=h.dtype)
    try:
        # the upper Cholesky factor of H^-1: row j holds the feedback of column j's error onto the later columns
        u = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(h)), upper=True)
    except RuntimeError:  # not positive definite even damped: nothing to gain safely
        return nearest
    levels = torch.empty_like(w)
    for j in range(w.shape[1]):
        q = torch.clamp(torch.round(w[:, j] / scale), -QMAX, QMAX)
        levels[:, j] = q
        err = (w[:, j] - q * scale) / u[j, j]
        w[:, j + 1:] -= err[:, None] * u[j, j + 1:][None, :]
    levels = levels[:, torch.argsort(order)]
    keep = levels.abs().amax(dim=1) == QMAX
    return torch.where(keep[:, None], levels, nearest)


def gptq_weights(gm: fx.GraphModule, calibration: Iterable[Sequence[torch.Tensor]],
                 select: Callable[[fx.Node], bool] | None = None) -> int:
    """Replace the weights of the linear and (ungrouped) convolution layers of the float graph ``gm`` by their
    GPTQ rounding on ``calibration`` (input tuples): each layer reads a new constant ``levels * (max |w| / 127)``
    per output channel (the old one, perhaps the user's parameter, is left as it was). ``select``: which layer
    nodes to round (all by default; a mixed-precision scheme rounds its A16W8 layers only). Returns the number
    of layers rounded this way."""
    layers = {}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in LINEAR + CONV and (select is None or select(node)):
            found = _weight_attr(gm, node)
            if found is not None:
                layers[node] = found[1]
    if not layers:
        return 0
    collector = _Collector(gm, layers)
    with torch.no_grad():
        for inputs in calibration:
            collector.run(*inputs)
    done = 0
    for node, weight in layers.items():
        if node not in collector.gram:
            continue
        gram = collector.gram[node] / collector.count[node]
        levels = gptq_round(weight, gram)
        scale = weight.detach().double().reshape(weight.shape[0], -1).abs().amax(dim=1) / QMAX
        _replace_weight(gm, node, (levels * scale[:, None]).reshape(weight.shape).to(weight.dtype))
        done += 1
    gm.graph.lint()
    gm.recompile()
    return done


def _replace_weight(gm: fx.GraphModule, node: fx.Node, value: torch.Tensor) -> None:
    """Point the layer at a new constant: the captured graph may share its parameters with the user's
    model, which must not change."""
    old = node.args[1]
    base, i = f"{str(old.target).replace('.', '_')}_gptq", 0
    name = base
    while hasattr(gm, name):
        i += 1
        name = f"{base}_{i}"
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(node):
        new = gm.graph.get_attr(name)
    node.replace_input_with(old, new)
    if not old.users:
        gm.graph.erase_node(old)
