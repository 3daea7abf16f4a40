"""A trained QAT model -> the PT2E-converted graph that the lowering takes, at the example's static shapes.

The fake quants are frozen first (on a copy: the user's model stays trainable), so that convert_pt2e
quantizes with exactly the ``scale`` / ``zero_point`` buffers the frozen fake-quant forward uses. The
training graph has a dynamic batch; the program has static shapes: the batch's symbolic sizes become the
example's and every node's ``meta["val"]`` is propagated again at those shapes.
"""

from __future__ import annotations

import copy

import torch
from torch import fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e

from ..capture import quiet_torch_logs
from .batchnorm import detach_recorders
from .fake_quant import fake_quants, set_observers
from .prepare import META_KEY, QATInfo
from .requant import restore
from .snap import snap

aten = torch.ops.aten
#: Guards torch.export leaves on symbolic sizes: meaningless once the sizes are numbers.
_SYMBOLIC_CHECKS = {aten.sym_constrain_range_for_size.default, aten._assert_scalar.default,
                    aten.sym_constrain_range.default}


def freeze(qat_model: fx.GraphModule) -> fx.GraphModule:
    """Freeze every observer (in place): the qparams stop moving; the forward is then what compile turns into
    the program (``mcuforge.compile`` freezes a copy itself)."""
    set_observers(qat_model, False)
    with torch.no_grad():
        for fq in fake_quants(qat_model):
            snap(fq)  # against the final input and output scales
    return qat_model


def convert_qat(qat_model: fx.GraphModule, example: tuple[torch.Tensor, ...]) -> fx.GraphModule:
    """The frozen copy of ``qat_model`` converted (q/dq nodes, int8/int4 weights), static at ``example``'s shapes."""
    info: QATInfo = qat_model.meta[META_KEY]
    if len(example) != info.num_inputs:
        raise ValueError(f"the QAT model takes {info.num_inputs} input(s), got {len(example)}")
    model = freeze(copy.deepcopy(qat_model))
    restore(model)
    detach_recorders(model)
    with quiet_torch_logs():
        converted = convert_pt2e(model)
    specialize(converted, example)
    return converted


def specialize(gm: fx.GraphModule, example: tuple[torch.Tensor, ...]) -> None:
    """Symbolic sizes -> the example's numbers (in place), then shapes propagated again."""
    values: dict[fx.Node, object] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: fx.Node) -> object:
            out = super().run_node(n)
            if n.op == "call_function" and not isinstance(out, torch.Tensor) and isinstance(out, (int, bool)):
                values[n] = out
            return out

    with torch.no_grad():
        Recorder(gm).run(*example)
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _SYMBOLIC_CHECKS:
            graph.erase_node(node)
    for node in reversed(list(graph.nodes)):
        if node in values and node.op == "call_function":
            node.replace_all_uses_with(values[node])  # type: ignore[arg-type]
            graph.erase_node(node)
    graph.lint()
    gm.recompile()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with quiet_torch_logs():
        FakeTensorProp(gm, mode).propagate(*(mode.from_tensor(x) for x in example))
