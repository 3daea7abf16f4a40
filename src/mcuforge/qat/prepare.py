"""prepare_qat: the model captured for training, BatchNorm folded, fake quantization from mcuforge's quantizer.

The flow is PTQ's up to the observers: capture (torch.export, here with a dynamic batch so that training
takes any batch), the same float-graph passes (BatchNorm folded into the conv/linear before it with its
running statistics), then torchao's ``prepare_qat_pt2e`` with :class:`QATQuantizer` -- CortexMQuantizer's
annotations, each observer wrapped in a fake quant (``fake_quant.py``). The observers are then calibrated
exactly as PTQ calibrates them (fake quantization off, so they see float activations): before training,
the QAT model's qparams are the PTQ program's. Training moves the weights; their fake quants keep
observing the current weights (until frozen) while the activations' qparams stay the calibrated ones
(``train_qat(observe_activations=True)`` lets them follow).

Choices made once, before training, and kept: each linear layer's per-channel or per-tensor weights
(the quantizer decides it from the float weights), the per-layer precision plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import torch
from torch import fx, nn
from torchao.quantization.pt2e import allow_exported_model_train_eval
from torchao.quantization.pt2e.quantize_pt2e import prepare_qat_pt2e
from torchao.quantization.pt2e.quantizer import QuantizationSpec
from tqdm.auto import tqdm

from ..capture import CaptureError, as_input_tuple, quiet_torch_logs
from ..diagnose import check_model, explain_export_failure
from ..float_passes.cleanup import prepare_float_graph
from ..float_passes.decompose import decompose
from ..quantize import calibration_batches, get_scheme
from ..quantize.linear_choice import gram_collector, input_grams
from ..quantize.quantizer import ANNOTATION_KEY, CortexMQuantizer, ObserverConfig
from ..quantize.schemes import Scheme
from ..rnn import rewrite_recurrent
from .batchnorm import attach, foldable_batch_norms, folded_names
from .fake_quant import fake_quant_class, fake_quantize_biases, fake_quants, set_fake_quant, set_observers
from .requant import emulate_requantization
from .snap import link_four_bit_layers

#: Where a QAT model keeps what compile needs (GraphModule.meta survives deepcopy).
META_KEY = "mcuforge_qat"


@dataclasses.dataclass(frozen=True)
class QATInfo:
    scheme: Scheme
    num_inputs: int
    example_shapes: tuple[tuple[int, ...], ...]


class QATQuantizer(CortexMQuantizer):
    """CortexMQuantizer's annotations with every observed spec's observer wrapped in a fake quant."""

    def annotate(self, model: fx.GraphModule) -> fx.GraphModule:
        super().annotate(model)
        for node in model.graph.nodes:
            ann = node.meta.get(ANNOTATION_KEY)
            if ann is None:
                continue
            ann.input_qspec_map = {src: _fake_quant_spec(spec, isinstance(src, fx.Node) and src.op == "get_attr")
                                   for src, spec in ann.input_qspec_map.items()}
            ann.output_qspec = _fake_quant_spec(ann.output_qspec, False)
        return model


def _fake_quant_spec(spec: object, weight: bool) -> object:
    if not isinstance(spec, QuantizationSpec):
        return spec  # shared, derived (the int32 bias) and fixed (softmax) specs: PT2E handles them in QAT
    return dataclasses.replace(spec, observer_or_fake_quant_ctr=fake_quant_class(spec.observer_or_fake_quant_ctr,
                                                                                 weight))


def scheme_of(quantization: Any) -> Scheme:
    """A scheme name, a Scheme, or a Program compiled with ``precision="auto"`` (its per-layer plan)."""
    meta = getattr(quantization, "meta", None)
    if isinstance(meta, dict):
        choice = meta.get("precision_choice")
        if choice is None:
            name = meta.get("quantization")
            if name is None or name == "auto":
                raise ValueError("the program carries no precision plan (compile it with precision='auto')")
            return get_scheme(name)
        return get_scheme(Scheme("auto", layers=tuple((c["module"], c["precision"]) for c in choice
                                                      if c["precision"] != "int8")))
    return get_scheme(quantization)


def capture_for_training(model: nn.Module, example: tuple[torch.Tensor, ...]) -> fx.GraphModule:
    """torch.export in eval mode (dropout off, BatchNorm's running statistics) with the first dimension of
    every input dynamic: training runs any batch, compile specializes it to the example's."""
    from ..capture import eval_mode

    problem = check_model(model, example)
    if problem:
        raise CaptureError(problem)
    # A dynamic dimension exported at size 1 would be specialized to 1: export at batch 2 at least.
    args = tuple(x if x.shape[0] > 1 else torch.cat([x, x]) for x in example)
    dynamic = tuple({0: torch.export.Dim("batch")} for _ in args)
    with eval_mode(model):
        exportable = rewrite_recurrent(model, fused_lstm=True)
        try:
            with quiet_torch_logs():
                exported = torch.export.export(exportable, args, dynamic_shapes=dynamic)
        except Exception as exc:  # noqa: BLE001 - torch raises many types here
            raise CaptureError(explain_export_failure(exc, exportable, args)) from exc
    return exported.module(check_guards=False)


def _trainable(gm: fx.GraphModule) -> None:
    """Every floating-point constant the graph reads becomes a Parameter (folded BatchNorm weights are
    buffers), and what it no longer reads (the unfolded weights, BatchNorm's statistics) is dropped, so that
    ``model.parameters()`` is exactly what training should move. Parameters are copied too: the exported
    module shares the user's parameters, which training the QAT model must not move."""
    used = {n.target for n in gm.graph.nodes if n.op == "get_attr"}
    for name in used:
        owner, _, leaf = name.rpartition(".")
        module = gm.get_submodule(owner) if owner else gm
        value = getattr(module, leaf)
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            delattr(module, leaf)
            module.register_parameter(leaf, nn.Parameter(value.detach().clone()))
    for name, _ in list(gm.named_parameters()) + list(gm.named_buffers()):
        if name not in used:
            owner, _, leaf = name.rpartition(".")
            module = gm.get_submodule(owner) if owner else gm
            delattr(module, leaf)


def prepare_qat(
    model: nn.Module,
    example_inputs: torch.Tensor | tuple[torch.Tensor, ...],
    calibration: Iterable[Any],
    quantization: Any = "w4a8",
    *,
    observers: ObserverConfig | None = None,
    learn_scales: bool = False,
    progress: bool = True,
) -> fx.GraphModule:
    """A copy of ``model`` with fake quantization, ready to train (see the module notes).

    ``quantization``: "w4a8", "int8", "a16w8", a :class:`Scheme` (per-layer plans included), or a Program
    compiled with ``precision="auto"`` (its chosen plan). ``calibration``: input tuples (a labelled
    DataLoader works), for the initial qparams, as ``mcuforge.compile`` calibrates. Train the result with any
    loop (or :func:`mcuforge.train_qat`); ``mcuforge.compile(qat_model, example)`` makes the program.
    ``learn_scales``: the 4-bit weights' scales train by gradient (LSQ in the log domain, fake_quant.py) from
    their calibrated values until the observers freeze, instead of following each step's weights; they are
    parameters of the result (build the optimizer after this call).
    """
    scheme = scheme_of(quantization)
    example = as_input_tuple(example_inputs)
    gm = capture_for_training(model, example)
    decompose(gm)
    batch_norms = foldable_batch_norms(gm)
    prepare_float_graph(gm)  # the PTQ passes: BatchNorm folded with its running statistics
    batch_norms = folded_names(gm, batch_norms)  # their statistics can still train (qat/batchnorm.py)
    _trainable(gm)
    # The linear layers' per-channel choice, as PTQ makes it: by each layer's output error over its calibration
    # inputs (quantize.linear_choice), decided here once and kept through training.
    collector = gram_collector(gm, scheme)
    if collector is not None:
        calibration = list(calibration_batches(calibration, len(example)))
        with torch.no_grad():
            for inputs in calibration:
                collector.run(*inputs)
    with quiet_torch_logs():
        prepared = prepare_qat_pt2e(gm, QATQuantizer(observers, scheme, linear_inputs=input_grams(collector)))
    fake_quantize_biases(prepared)
    link_four_bit_layers(prepared)
    emulate_requantization(prepared)
    attach(prepared, batch_norms)  # after the pattern matching above: the recorders are extra users of the layers
    # Exported in eval mode (dropout off, BatchNorm folded): train()/eval() switch nothing, but user loops call them.
    allow_exported_model_train_eval(prepared)
    prepared.meta[META_KEY] = QATInfo(scheme, len(example), tuple(tuple(x.shape) for x in example))
    calibrate(prepared, calibration, len(example), progress)
    if learn_scales:
        for fq in fake_quants(prepared):
            if fq.weight and fq.quant_max == 7:  # 4-bit weights
                fq.learn_scale()
    return prepared


def calibrate(prepared: fx.GraphModule, calibration: Iterable[Any], num_inputs: int, progress: bool) -> None:
    """PTQ's calibration on the QAT model: observers on, fake quantization off (they see float values);
    then fake quantization on, activation observers frozen, weight observers tracking."""
    set_fake_quant(prepared, False)
    set_observers(prepared, True)
    seen = 0
    total = len(calibration) if hasattr(calibration, "__len__") else None
    with torch.no_grad():
        for inputs in tqdm(calibration_batches(calibration, num_inputs), total=total, desc="calibrating",
                           unit="batch", disable=not progress):
            prepared(*inputs)
            seen += 1
    if seen == 0:
        raise ValueError("the calibration data is empty: give at least one input tuple")
    # Each forward stored its observer's qparams in the fake quant's buffers: frozen, they are the last ones.
    set_observers(prepared, False, weights=False)
    set_fake_quant(prepared, True)


def is_qat_model(model: object) -> bool:
    return isinstance(model, fx.GraphModule) and isinstance(model.meta.get(META_KEY), QATInfo)
