"""mcuforge's Cortex-M quantizer for PT2E: int8 activations, int8 per-channel weights, int32 bias.

Activations are per-tensor affine int8 observed with histograms; weights are symmetric int8
([-127, 127]) per output channel observed with min/max; biases are int32 with scale
input_scale * weight_scale[c] — the TFLite int8 spec that CMSIS-NN implements.

Annotation fuses conv/linear/add with a following ReLU/ReLU6/hardtanh/clamp (only the
activation's output is quantized, as the fused int8 kernel computes it), and gives pooling,
data-movement and identity ops their input's quantization, since their int8 kernels do not
requantize.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import fx
from torchao.quantization.pt2e import HistogramObserver, PerChannelMinMaxObserver
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

from .patterns import (
    ADD_OPS,
    FUSABLE_ACTIVATIONS,
    POOL_OPS,
    SHARED_QPARAM_OPS,
    WEIGHTED_OPS,
)

ANNOTATION_KEY = "quantization_annotation"


@dataclass(frozen=True)
class ObserverConfig:
    """Which observers calibrate activations and weights (the defaults are mcuforge's choice)."""

    activation: type = HistogramObserver
    weight: type = PerChannelMinMaxObserver


def activation_qspec(config: ObserverConfig = ObserverConfig()) -> QuantizationSpec:
    return QuantizationSpec(
        dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
        observer_or_fake_quant_ctr=config.activation,
    )


def weight_qspec(config: ObserverConfig = ObserverConfig()) -> QuantizationSpec:
    return QuantizationSpec(
        dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric, ch_axis=0,
        observer_or_fake_quant_ctr=config.weight,
    )


def _derive_bias_qparams(observers: list) -> tuple[torch.Tensor, torch.Tensor]:
    input_scale = observers[0].calculate_qparams()[0]
    weight_scale = observers[1].calculate_qparams()[0]
    scale = (input_scale * weight_scale).to(torch.float32)
    return scale, torch.zeros_like(scale, dtype=torch.int32)


def bias_qspec(x: fx.Node, weight: fx.Node, op: fx.Node) -> DerivedQuantizationSpec:
    return DerivedQuantizationSpec(
        derived_from=[(x, op), (weight, op)], derive_qparams_fn=_derive_bias_qparams,
        dtype=torch.int32, quant_min=-(2**31), quant_max=2**31 - 1, qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )


def fused_activation(node: fx.Node) -> fx.Node | None:
    """The ReLU/hardtanh/clamp that directly and solely follows ``node``, if any."""
    if len(node.users) != 1:
        return None
    (user,) = node.users
    if user.op == "call_function" and user.target in FUSABLE_ACTIVATIONS and user.args[0] is node:
        return user
    return None


def _is_annotated(node: fx.Node) -> bool:
    ann = node.meta.get(ANNOTATION_KEY)
    return ann is not None and ann._annotated


def _output_is_quantized(node: object) -> bool:
    """Whether ``node``'s output will carry int8 quantization (so a shared spec can follow it)."""
    if not isinstance(node, fx.Node):
        return False
    ann = node.meta.get(ANNOTATION_KEY)
    return ann is not None and ann.output_qspec is not None


def _annotate(node: fx.Node, inputs: dict, output: object | None) -> None:
    node.meta[ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True
    )


class CortexMQuantizer(Quantizer):
    """PT2E quantizer for mcuforge's Cortex-M int8 kernels (CMSIS-NN arithmetic)."""

    def __init__(self, observers: ObserverConfig | None = None) -> None:
        super().__init__()
        self.observers = observers or ObserverConfig()

    def annotate(self, model: fx.GraphModule) -> fx.GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function" or _is_annotated(node):
                continue
            if node.target in WEIGHTED_OPS:
                self._annotate_weighted(node)
            elif node.target in ADD_OPS:
                self._annotate_add(node)
            elif node.target in POOL_OPS:
                self._annotate_shared(node)
            elif node.target in SHARED_QPARAM_OPS and _output_is_quantized(node.args[0]):
                self._annotate_shared(node)
        return model

    def validate(self, model: fx.GraphModule) -> None:
        return None

    def _annotate_with_activation(self, node: fx.Node, inputs: dict) -> None:
        act = fused_activation(node)
        if act is None:
            _annotate(node, inputs, activation_qspec(self.observers))
        else:
            _annotate(node, inputs, None)
            _annotate(act, {}, activation_qspec(self.observers))

    def _annotate_weighted(self, node: fx.Node) -> None:
        x, weight = node.args[0], node.args[1]
        bias = node.args[2] if len(node.args) > 2 else None
        if not isinstance(x, fx.Node) or not isinstance(weight, fx.Node) or weight.op != "get_attr":
            return  # dynamic weights: left in fp32
        inputs = {x: activation_qspec(self.observers), weight: weight_qspec(self.observers)}
        if isinstance(bias, fx.Node):
            inputs[bias] = bias_qspec(x, weight, node)
        self._annotate_with_activation(node, inputs)

    def _annotate_add(self, node: fx.Node) -> None:
        a, b = node.args[0], node.args[1]
        if not isinstance(a, fx.Node) or not isinstance(b, fx.Node) or node.kwargs.get("alpha", 1) != 1:
            return
        act = activation_qspec(self.observers)
        self._annotate_with_activation(node, {a: act, b: act})

    def _annotate_shared(self, node: fx.Node) -> None:
        # The input edge reuses the producer's observer when the producer is quantized (PT2E
        # shares observers of equal specs); the output shares the input edge's qparams.
        x = node.args[0]
        if isinstance(x, fx.Node):
            _annotate(node, {x: activation_qspec(self.observers)}, SharedQuantizationSpec((x, node)))
