"""Sensitivity with every other layer in fp32: the model's output SQNR when only one layer is quantized.

Where :func:`sensitivity.sensitivity` changes one layer's precision in an otherwise quantized program
(so each figure includes the noise of every other layer), this keeps the rest of the model in fp32: the
float graph ``compile`` quantized runs node by node, and at one layer's output node its value is replaced
by what the program computes for that layer fed the fp32 truth -- the program's own kernels, its input
quantized with the program's qparams, its output dequantized (``inspect.numeric.isolated_outputs``). No
program is compiled per layer: one pass of every op in isolation per calibration item, then one fp32
pass per layer, so it costs a fraction of a compile.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import fx, nn

from ..capture import capture
from ..float_passes.cleanup import prepare_float_graph
from ..float_passes.decompose import decompose
from ..inspect.numeric import error_stats, isolated_outputs, layer_ops, raw_as_real_nchw, reference_nodes
from ..quantize.observers import one_thread


def layer_output_ops(program: Any, modules: Sequence[str]) -> dict[str, dict[str, Any]]:
    """For each module path, its layer's output op (``inspect.numeric.layer_ops``: the last op of the module
    whose output holds an fp32 node's value), as the debug record describes it: where the quantized value
    replaces the float one."""
    last = {op.get("module", ""): op for op in layer_ops(program.debug_record())}
    missing = [m for m in modules if m not in last]
    if missing:
        raise ValueError(f"quantized_alone: no op of module(s) {', '.join(missing)} has an fp32 reference value")
    return {m: last[m] for m in modules}


class _Substituting(fx.Interpreter):
    """Runs the float graph, recording the named nodes' values, with ``replace`` values put in place."""

    def __init__(self, gm: fx.GraphModule, record: set[str], replace: dict[str, torch.Tensor]) -> None:
        super().__init__(gm)
        self.record, self.replace = record, replace
        self.values: dict[str, np.ndarray] = {}

    def run_node(self, n: fx.Node) -> Any:
        if n.name in self.replace:
            return self.replace[n.name]
        out = super().run_node(n)
        if n.name in self.record and isinstance(out, torch.Tensor):
            self.values[n.name] = out.detach().to(torch.float64).numpy().copy()
        return out


def _outputs(result: Any) -> list[np.ndarray]:
    flat = result if isinstance(result, (tuple, list)) else (result,)
    return [np.asarray(o.detach().to(torch.float64).numpy()).reshape(-1) for o in flat]


def single_runs(program: Any, items: Sequence[tuple[torch.Tensor, ...]]) -> list[tuple[torch.Tensor, ...]]:
    """The items split into runs of the program's compiled batch (a calibration batch of 32 is 32 runs of
    a batch-1 program): the isolated kernels take one run at a time."""
    batch = [shape[0] if shape else 1 for shape in program.input_shapes]
    runs = []
    for item in items:
        count = max(int(x.shape[0]) // b if x.dim() else 1 for x, b in zip(item, batch, strict=True))
        runs.extend(tuple(x[i * b:(i + 1) * b] if x.dim() else x for x, b in zip(item, batch, strict=True))
                    for i in range(count))
    return runs


def float_graph(model: nn.Module, example: tuple[torch.Tensor, ...]) -> fx.GraphModule:
    """The float graph ``compile`` quantized (captured, decomposed, BN folded): what the layers replace values in."""
    return prepare_float_graph(decompose(capture(model, example)))


def quantized_alone(program: Any, model: nn.Module, items: Sequence[tuple[torch.Tensor, ...]],
                    modules: Sequence[str], gm: fx.GraphModule | None = None) -> dict[str, float]:
    """Output SQNR (dB, the lowest over the model's outputs, all ``items`` together) of the fp32 model with
    only the layer at each of ``modules`` quantized as ``program`` quantizes it; by module path. ``gm``: the
    model's :func:`float_graph`, when the caller measures several programs of one model (captured once)."""
    graph = program.graph
    outputs = layer_output_ops(program, modules)
    items = single_runs(program, items)
    gm = gm if gm is not None else float_graph(model, tuple(items[0]))
    record = set(reference_nodes(graph).values())
    reference: list[list[np.ndarray]] = []
    actual: dict[str, list[list[np.ndarray]]] = {m: [] for m in modules}
    with torch.no_grad(), one_thread():  # single-sample ops: threads only contend
        for item in items:
            truth = _Substituting(gm, record, {})
            reference.append(_outputs(truth.run(*item)))
            prepared, _runs, _single = program._program_inputs(item)
            isolated = isolated_outputs(graph, prepared, truth.values)
            for module, op in outputs.items():
                value = raw_as_real_nchw(isolated[op["index"]][0], op["outputs"][0])
                replace = {op["reference"]["node"]: torch.from_numpy(value.astype(np.float32))}
                actual[module].append(_outputs(_Substituting(gm, set(), replace).run(*item)))
    result = {}
    for module in modules:
        sqnrs = [error_stats(np.concatenate([r[k] for r in reference]),
                             np.concatenate([a[k] for a in actual[module]]))[0] for k in range(len(reference[0]))]
        result[module] = float(min(sqnrs))
    return result
