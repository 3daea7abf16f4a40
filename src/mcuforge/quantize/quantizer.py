"""mcuforge's Cortex-M quantizer for PT2E: int8 activations, int8 per-channel weights, int32 bias.

Activations are per-tensor affine int8 observed with histograms; weights are symmetric int8
([-127, 127]) per output channel observed with min/max; biases are int32 with scale
input_scale * weight_scale[c] — the TFLite int8 spec that CMSIS-NN implements.

Annotation fuses conv/linear/add/mul with a following ReLU/ReLU6/hardtanh/clamp (only the
activation's output is quantized, as the fused int8 kernel computes it), and gives pooling,
data-movement and identity ops their input's quantization, since their int8 kernels do not
requantize. Concatenation shares one quantization between all its inputs and its output (a
byte copy); softmax has the fixed output quantization of ``arm_softmax_s8``; table (LUT)
activations and batched matmuls observe their own output. A fused LSTM layer (mcuforge.lstm_op) has
int8 input and output and its cell states observed in int16 at a power-of-two scale; a fused GRU layer
int8 input and output (its int16 state is Q0.15, fixed); their weights are quantized by the lowering.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from torch import fx
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    FixedQParamsQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpec,
    QuantizationSpecBase,
    Quantizer,
    SharedQuantizationSpec,
)

from ..lstm_op import GRU_OPS, LSTM_CELL_STATE_OPS, LSTM_OPS
from .int16 import PowerOfTwoObserver, activation_qspec_s16
from .observers import HistogramObserver, PerChannelMinMaxObserver
from .patterns import (
    ADD_OPS,
    CAT_OPS,
    FUSABLE_ACTIVATIONS,
    LUT_ACTIVATIONS,
    MATMUL_OPS,
    MUL_OPS,
    POOL_OPS,
    SHARED_QPARAM_OPS,
    SOFTMAX_OPS,
    SOFTMAX_OUTPUT_SCALE,
    SOFTMAX_OUTPUT_ZERO_POINT,
    SPLIT_OPS,
    SUB_OPS,
    TRANSPOSE_CONV_OPS,
    WEIGHTED_OPS,
)

ANNOTATION_KEY = "quantization_annotation"


@dataclass(frozen=True)
class ObserverConfig:
    """Which observers calibrate activations and weights (the defaults are mcuforge's choice: torchao's
    histogram and per-channel min/max observers, computed faster with the same qparams, see observers)."""

    activation: type = HistogramObserver
    weight: type = PerChannelMinMaxObserver


def activation_qspec(config: ObserverConfig = ObserverConfig()) -> QuantizationSpec:
    return QuantizationSpec(
        dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
        observer_or_fake_quant_ctr=config.activation,
    )


def weight_qspec(config: ObserverConfig = ObserverConfig(), ch_axis: int = 0) -> QuantizationSpec:
    """Per output channel; ``ch_axis`` is the weight's output-channel axis (1 for transposed conv)."""
    return QuantizationSpec(
        dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric, ch_axis=ch_axis,
        observer_or_fake_quant_ctr=config.weight,
    )


def softmax_output_qspec() -> FixedQParamsQuantizationSpec:
    """arm_softmax_s8 writes probabilities with scale 1/256 and zero point -128."""
    return FixedQParamsQuantizationSpec(
        dtype=torch.int8, scale=SOFTMAX_OUTPUT_SCALE, zero_point=SOFTMAX_OUTPUT_ZERO_POINT, quant_min=-128,
        quant_max=127, qscheme=torch.per_tensor_affine,
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


def _is_activation(node: object) -> bool:
    """A float model input or a value that is already int8: an operand worth quantizing (a
    constant or an fp32 result there would be a linear layer or an fp32 island instead). Data
    movement on a model input (a channel shuffle, a chunk) is then int8 too, not an fp32 island."""
    if not isinstance(node, fx.Node):
        return False
    if node.op == "placeholder":
        val = node.meta.get("val")
        return isinstance(val, torch.Tensor) and val.is_floating_point()
    return _output_is_quantized(node)


def _annotate(node: fx.Node, inputs: dict, output: object | None) -> None:
    node.meta[ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True
    )


class CortexMQuantizer(Quantizer):
    """PT2E quantizer for mcuforge's Cortex-M int8 kernels (CMSIS-NN arithmetic)."""

    def __init__(self, observers: ObserverConfig | None = None, fp32_recurrent: bool = False) -> None:
        """``fp32_recurrent`` leaves the fused LSTM and GRU layers unannotated (fp32 between int8 layers, as
        ExecuTorch's Cortex-M flow runs recurrent layers): a reference for the fused int16-state kernel."""
        super().__init__()
        self.observers = observers or ObserverConfig()
        self.fp32_recurrent = fp32_recurrent

    def annotate(self, model: fx.GraphModule) -> fx.GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function" or _is_annotated(node):
                continue
            if node.target in WEIGHTED_OPS:
                self._annotate_weighted(node)
            elif node.target in ADD_OPS or node.target in SUB_OPS:
                self._annotate_add(node)
            elif node.target in MUL_OPS:
                self._annotate_mul(node)
            elif node.target in MATMUL_OPS:
                self._annotate_matmul(node)
            elif node.target in LSTM_CELL_STATE_OPS:
                self._annotate_lstm(node)
            elif node.target in GRU_OPS:
                if not self.fp32_recurrent and _is_activation(node.args[0]):
                    self._annotate_own_output(node)  # int8 in and out; the int16 state needs no observer
            elif node.target in LUT_ACTIVATIONS:
                self._annotate_own_output(node)
            elif node.target in SOFTMAX_OPS:
                self._annotate_softmax(node)
            elif node.target in CAT_OPS:
                self._annotate_cat(node)
            elif node.target in POOL_OPS:
                self._annotate_shared(node)
            elif node.target in SPLIT_OPS and _is_activation(node.args[0]):
                self._annotate_split(node)
            elif node.target in SHARED_QPARAM_OPS and _is_activation(node.args[0]):
                self._annotate_shared(node)
        return model

    def validate(self, model: fx.GraphModule) -> None:
        return None

    def _input_qspec(self, x: object) -> QuantizationSpecBase:
        """An input edge takes its producer's fixed quantization (softmax's) as is, so that no
        requantization sits between them; otherwise the activation observer, which PT2E shares
        with an int8 producer's (equal specs share one observer)."""
        ann = x.meta.get(ANNOTATION_KEY) if isinstance(x, fx.Node) else None
        if ann is not None and isinstance(ann.output_qspec, FixedQParamsQuantizationSpec):
            return ann.output_qspec
        return activation_qspec(self.observers)

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
        ch_axis = 1 if node.target in TRANSPOSE_CONV_OPS else 0
        inputs = {x: self._input_qspec(x), weight: weight_qspec(self.observers, ch_axis)}
        if isinstance(bias, fx.Node):
            inputs[bias] = bias_qspec(x, weight, node)
        self._annotate_with_activation(node, inputs)

    def _annotate_add(self, node: fx.Node) -> None:
        a, b = node.args[0], node.args[1]
        if not isinstance(a, fx.Node) or not isinstance(b, fx.Node) or node.kwargs.get("alpha", 1) != 1:
            return
        self._annotate_with_activation(node, {a: self._input_qspec(a), b: self._input_qspec(b)})

    def _annotate_mul(self, node: fx.Node) -> None:
        # Tensor * Tensor (activations or a constant buffer) or Tensor * Scalar: a scalar is
        # folded into the requantization by the lowering, so only tensor operands are observed.
        a, b = node.args[0], node.args[1]
        if not isinstance(a, fx.Node):
            return
        inputs = {a: self._input_qspec(a)}
        if isinstance(b, fx.Node):
            inputs[b] = self._input_qspec(b)
        elif not isinstance(b, (int, float)):
            return
        self._annotate_with_activation(node, inputs)

    def _annotate_matmul(self, node: fx.Node) -> None:
        a, b = node.args[0], node.args[1]
        if not (_is_activation(a) and _is_activation(b)):
            return
        self._annotate_with_activation(node, {a: self._input_qspec(a), b: self._input_qspec(b)})

    def _annotate_lstm(self, cells: fx.Node) -> None:
        """One LSTM layer (mcuforge.lstm_op): int8 input and output, the cell states observed in int16 at a
        power-of-two scale (arm_lstm_unidirectional_s8's cell state). Weights stay fp32 here: the lowering
        quantizes them per gate as the kernel takes them."""
        x = cells.args[0]
        layers = [u for u in cells.users if u.op == "call_function" and u.target in LSTM_OPS and u.args[1] is cells]
        if self.fp32_recurrent or not _is_activation(x) or len(layers) != 1 or layers[0].args[0] is not x:
            return
        cell_spec = activation_qspec_s16(PowerOfTwoObserver)
        _annotate(cells, {x: self._input_qspec(x)}, cell_spec)
        _annotate(layers[0], {x: self._input_qspec(x), cells: cell_spec}, activation_qspec(self.observers))

    def _annotate_own_output(self, node: fx.Node) -> None:
        x = node.args[0]
        if isinstance(x, fx.Node):
            _annotate(node, {x: self._input_qspec(x)}, activation_qspec(self.observers))

    def _annotate_softmax(self, node: fx.Node) -> None:
        x = node.args[0]
        if isinstance(x, fx.Node):
            _annotate(node, {x: self._input_qspec(x)}, softmax_output_qspec())

    def _annotate_cat(self, node: fx.Node) -> None:
        # One quantization for every input and the output: the int8 concat is a byte copy.
        tensors = [t for t in node.args[0] if isinstance(t, fx.Node)]
        if not tensors:
            return
        # The first input's edge must come first in the map: PT2E creates one observer per group in
        # graph order, edge by edge in map order, and builds a shared spec from the edge it refers
        # to. Listed after the other inputs' shared edges, the first edge would not exist yet when
        # no earlier observer (an int8 producer of another input) starts the group, e.g. the
        # unobserved halves of a chunked model input concatenated back.
        first = tensors[0]
        shared = SharedQuantizationSpec((first, node))
        inputs = {first: self._input_qspec(first)}
        inputs.update((t, shared) for t in tensors[1:] if t is not first)
        _annotate(node, inputs, shared)

    def _annotate_split(self, node: fx.Node) -> None:
        # chunk/split/unbind give a list read through getitem: the getitem outputs carry the
        # quantization, shared with the split's input edge.
        x = node.args[0]
        _annotate(node, {x: self._input_qspec(x)}, None)
        for user in node.users:
            if user.op == "call_function" and user.target is operator.getitem:
                _annotate(user, {}, SharedQuantizationSpec((x, node)))

    def _annotate_shared(self, node: fx.Node) -> None:
        # The input edge reuses the producer's observer when the producer is quantized (PT2E
        # shares observers of equal specs); the output shares the input edge's qparams.
        x = node.args[0]
        if isinstance(x, fx.Node):
            _annotate(node, {x: self._input_qspec(x)}, SharedQuantizationSpec((x, node)))
