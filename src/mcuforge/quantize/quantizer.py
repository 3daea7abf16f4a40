"""mcuforge's Cortex-M quantizer for PT2E: int8 activations, int8 (or int4) per-channel weights, int32 bias.

Activations are per-tensor affine int8 observed with histograms; weights are symmetric int8
([-127, 127]) per output channel observed with min/max -- or, under the "w4a8" scheme
(``schemes.py``), int4 ([-7, 7]) for convolutions and linear layers; biases are int32 with scale
input_scale * weight_scale[c] — the TFLite int8 spec that CMSIS-NN implements. Under "a16w8" (the whole
scheme, or the layers a scheme's per-layer exceptions give "a16w8", ``Scheme.layers``) the ops
with s16 kernels (``int16.S16_OPS``) take symmetric int16 activations (``int16.py``) and leave their bias
float (the lowering quantizes it to int64); the others keep int8, and PT2E's requantization where the two
meet becomes a convert op.

Annotation fuses conv/linear/add/mul with a following ReLU/ReLU6/hardtanh/clamp (only the
activation's output is quantized, as the fused int8 kernel computes it), and gives pooling,
data-movement and identity ops their input's quantization, since their int8 kernels do not
requantize. Concatenation shares one quantization between all its inputs and its output (a
byte copy), and so do elementwise maximum / minimum (clamp by tensors included: arm_maximum_s8 /
arm_minimum_s8 do not requantize); softmax has the fixed output quantization of ``arm_softmax_s8``; table (LUT)
activations and batched matmuls observe their own output. A fused LSTM layer (mcuforge.lstm_op) has
int8 input and output and its cell states observed in int16 at a power-of-two scale; a fused GRU layer
int8 input and output (its int16 state is Q0.15, fixed); their weights are quantized by the lowering.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from torch import fx
from torchao.quantization.pt2e import MinMaxObserver
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
from ..nodes import module_path
from .int16 import S16_OPS, SIGMOID_TANH, PowerOfTwoObserver, activation_qspec_s16, q15_output_qspec
from .linear_choice import choose_per_channel
from .observers import HistogramObserver, PerChannelMinMaxObserver
from .patterns import (
    ADD_OPS,
    CAT_OPS,
    FUSABLE_ACTIVATIONS,
    IDENTITY_OPS,
    LINEAR_OPS,
    LUT_ACTIVATIONS,
    MATMUL_OPS,
    MINMAX_OPS,
    MUL_OPS,
    PERMUTE_OPS,
    POOL_OPS,
    RESHAPE_OPS,
    SHARED_QPARAM_OPS,
    SLICE_OPS,
    SOFTMAX_OPS,
    SOFTMAX_OUTPUT_SCALE,
    SOFTMAX_OUTPUT_ZERO_POINT,
    SPLIT_OPS,
    SUB_OPS,
    TRANSPOSE_CONV_OPS,
    WEIGHTED_OPS,
)
from .schemes import SCHEMES, Scheme
from .weight_observers import MSEObserver, PerChannelMSEObserver

ANNOTATION_KEY = "quantization_annotation"
# Byte movement: any width (under "a16w8" the width of the values moved).
MOVEMENT_OPS = RESHAPE_OPS | PERMUTE_OPS | SLICE_OPS | SPLIT_OPS | IDENTITY_OPS


@dataclass(frozen=True)
class ObserverConfig:
    """Which observers calibrate activations and weights (the defaults are mcuforge's choice: torchao's
    histogram and per-channel min/max observers, computed faster with the same qparams, see observers);
    ``weight_int4`` observes the int4 weights of the "w4a8" scheme (per-channel clipping by least squared
    error)."""

    activation: type = HistogramObserver
    weight: type = PerChannelMinMaxObserver
    weight_int4: type = PerChannelMSEObserver


def activation_qspec(config: ObserverConfig = ObserverConfig()) -> QuantizationSpec:
    return QuantizationSpec(
        dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
        observer_or_fake_quant_ctr=config.activation,
    )


def weight_qspec(config: ObserverConfig = ObserverConfig(), ch_axis: int = 0, bits: int = 8,
                 per_channel: bool = True) -> QuantizationSpec:
    """Symmetric, per output channel (``ch_axis``: the weight's output-channel axis, 1 for transposed conv) or
    per tensor; ``bits`` 8: [-127, 127], 4: [-7, 7] (stored in int8 by PT2E; packed two per byte by the
    lowering). The narrow symmetric range, as the int8 one, keeps the largest weight of each channel exact."""
    qmax = (1 << (bits - 1)) - 1
    if not per_channel:
        return QuantizationSpec(dtype=torch.int8, quant_min=-qmax, quant_max=qmax, qscheme=torch.per_tensor_symmetric,
                                observer_or_fake_quant_ctr=MSEObserver if bits == 4 else MinMaxObserver)
    return QuantizationSpec(
        dtype=torch.int8, quant_min=-qmax, quant_max=qmax, qscheme=torch.per_channel_symmetric, ch_axis=ch_axis,
        observer_or_fake_quant_ctr=config.weight_int4 if bits == 4 else config.weight,
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


def bias_qspec(x: fx.Node, weight: fx.Node, op: fx.Node, per_channel: bool = True) -> DerivedQuantizationSpec:
    return DerivedQuantizationSpec(
        derived_from=[(x, op), (weight, op)], derive_qparams_fn=_derive_bias_qparams,
        dtype=torch.int32, quant_min=-(2**31), quant_max=2**31 - 1,
        qscheme=torch.per_channel_symmetric if per_channel else torch.per_tensor_symmetric, ch_axis=0,
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


def _spec_root(spec: object, depth: int = 0) -> QuantizationSpecBase | None:
    """The spec a SharedQuantizationSpec finally refers to (through the edges and nodes it names)."""
    if not isinstance(spec, SharedQuantizationSpec):
        return spec  # type: ignore[return-value]
    if depth > 256:
        return None
    target = spec.edge_or_node
    if isinstance(target, tuple):
        src, user = target
        ann = user.meta.get(ANNOTATION_KEY)
        inner = ann.input_qspec_map.get(src) if ann is not None else None
    else:
        ann = target.meta.get(ANNOTATION_KEY)
        inner = ann.output_qspec if ann is not None else None
    return _spec_root(inner, depth + 1)


def _annotate(node: fx.Node, inputs: dict, output: object | None) -> None:
    node.meta[ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=output, _annotated=True
    )


class CortexMQuantizer(Quantizer):
    """PT2E quantizer for mcuforge's Cortex-M kernels (CMSIS-NN arithmetic); ``scheme`` sets the widths
    (``mcuforge.quantize.schemes``: "int8" by default, "w4a8" for int4 weights, "a16w8" for int16
    activations)."""

    def __init__(self, observers: ObserverConfig | None = None, scheme: Scheme | None = None,
                 fp32_recurrent: bool = False, linear_inputs: dict[str, torch.Tensor] | None = None) -> None:
        """``fp32_recurrent`` leaves the fused LSTM and GRU layers unannotated (fp32 between int8 layers, as
        ExecuTorch's Cortex-M flow runs recurrent layers): a reference for the fused int16-state kernel.
        ``linear_inputs``: per linear layer's weight attribute, ``sum x x^T`` of its calibration inputs
        (``linear_choice.input_grams``), by which a layer left to the data is given one weight scale or one
        per output channel; a layer without it is decided on its weights' own rounding error."""
        super().__init__()
        self.observers = observers or ObserverConfig()
        self.scheme = scheme or SCHEMES["int8"]
        self.fp32_recurrent = fp32_recurrent
        self.linear_inputs = linear_inputs or {}

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
            elif node.target in MINMAX_OPS:
                self._annotate_minmax(node)
            elif node.target in POOL_OPS:
                self._annotate_shared(node)
            elif node.target in SPLIT_OPS and _is_activation(node.args[0]):
                self._annotate_split(node)
            elif node.target in SHARED_QPARAM_OPS and _is_activation(node.args[0]):
                self._annotate_shared(node)
        return model

    def validate(self, model: fx.GraphModule) -> None:
        return None

    def _int16(self, node: fx.Node) -> bool:
        """Whether ``node`` runs on an s16 kernel: an op that has one, in a layer whose scheme (the scheme's,
        or the layer's exception, ``Scheme.layer_scheme``) has int16 activations. A fused activation is
        annotated with its producer, so it follows the producer's layer. Data movement moves the values of
        its input's width (a slice of an int8 concatenation stays int8, a flatten after an int16 layer int16)."""
        if not self.scheme.any_int16 or node.target not in S16_OPS:
            return False
        x = node.args[0] if node.args else None
        if node.target in MOVEMENT_OPS and isinstance(x, fx.Node) and x.op != "placeholder":
            ann = x.meta.get(ANNOTATION_KEY)
            root = _spec_root(ann.output_qspec) if ann is not None else None
            if root is not None:
                return getattr(root, "dtype", None) == torch.int16
        return self.scheme.activation_bits_of(module_path(node)) == 16

    def _input_qspec(self, x: object, node: fx.Node) -> QuantizationSpecBase:
        """The edge from ``x`` into ``node``: the producer's fixed quantization (softmax's) as is when it
        has the width ``node`` runs in, so that no requantization sits between them; otherwise the
        activation observer of that width, which PT2E shares with a producer's of the same spec (equal
        specs share one observer)."""
        wide = self._int16(node)
        ann = x.meta.get(ANNOTATION_KEY) if isinstance(x, fx.Node) else None
        if wide and ann is not None and getattr(_spec_root(ann.output_qspec), "dtype", None) == torch.int16:
            # int16 in, int16 out: the very qparams of the producer's output, however it got them (its own
            # observer, a fixed Q0.15, shared through data movement), so no int16 -> int16 requantization
            # (which has no s16 kernel) sits between them.
            return SharedQuantizationSpec(x)
        if (ann is not None and isinstance(ann.output_qspec, FixedQParamsQuantizationSpec)
                and (ann.output_qspec.dtype == torch.int16) == wide):
            return ann.output_qspec
        return activation_qspec_s16() if wide else activation_qspec(self.observers)

    def _output_qspec(self, node: fx.Node, out: fx.Node) -> QuantizationSpecBase:
        """The observed output ``out`` of ``node`` (``out`` is node or its fused activation). int16: a
        power-of-two scale when its sole user is sigmoid or tanh (arm_nn_activation_s16's input), which
        then shares it."""
        if not self._int16(node):
            return activation_qspec(self.observers)
        users = list(out.users)
        if len(users) == 1 and users[0].target in SIGMOID_TANH and users[0].args[0] is out:
            return activation_qspec_s16(PowerOfTwoObserver)
        return activation_qspec_s16()

    def _annotate_with_activation(self, node: fx.Node, inputs: dict) -> None:
        act = fused_activation(node)
        if act is None:
            _annotate(node, inputs, self._output_qspec(node, node))
        else:
            _annotate(node, inputs, None)
            _annotate(act, {}, self._output_qspec(node, act))

    def _annotate_weighted(self, node: fx.Node) -> None:
        x, weight = node.args[0], node.args[1]
        bias = node.args[2] if len(node.args) > 2 else None
        if not isinstance(x, fx.Node) or not isinstance(weight, fx.Node) or weight.op != "get_attr":
            return  # dynamic weights: left in fp32
        spec = self.weight_qspec_of(node)
        inputs = {x: self._input_qspec(x, node), weight: spec}
        # int16 inputs: the bias stays float, the lowering quantizes it to int64 (an int32 would overflow).
        if isinstance(bias, fx.Node) and not self._int16(node):
            inputs[bias] = bias_qspec(x, weight, node, spec.qscheme == torch.per_channel_symmetric)
        self._annotate_with_activation(node, inputs)

    def weight_qspec_of(self, node: fx.Node) -> QuantizationSpec:
        """How the weights of the weighted op ``node`` are quantized: the layer's width (its scheme, or
        its per-layer exception), per channel or per tensor."""
        transposed = node.target in TRANSPOSE_CONV_OPS
        # No s4 transposed convolution in CMSIS-NN: it keeps int8 weights under every scheme.
        layer = self.scheme.layer_scheme(module_path(node))
        bits = 8 if transposed else layer.weight_bits
        per_channel = node.target not in LINEAR_OPS or self._linear_per_channel(node.args[1], bits, layer)
        return weight_qspec(self.observers, 1 if transposed else 0, bits, per_channel)

    def _linear_per_channel(self, weight: fx.Node, bits: int, layer: Scheme) -> bool:
        """The layer's scheme's choice, or by default: per channel where that lowers the error on the layer's
        output over its calibration inputs by at least PER_CHANNEL_MIN_GAIN_DB, one scale for the tensor
        otherwise (``linear_choice``)."""
        if layer.linear_per_channel is not None:
            return layer.linear_per_channel
        value = weight.graph.owning_module
        for part in str(weight.target).split("."):
            value = getattr(value, part)
        return choose_per_channel(value, self.linear_inputs.get(str(weight.target)), bits)

    def _annotate_add(self, node: fx.Node) -> None:
        a, b = node.args[0], node.args[1]
        if not isinstance(a, fx.Node) or not isinstance(b, fx.Node) or node.kwargs.get("alpha", 1) != 1:
            return
        self._annotate_with_activation(node, {a: self._input_qspec(a, node), b: self._input_qspec(b, node)})

    def _annotate_mul(self, node: fx.Node) -> None:
        # Tensor * Tensor (activations or a constant buffer) or Tensor * Scalar: a scalar is
        # folded into the requantization by the lowering, so only tensor operands are observed.
        a, b = node.args[0], node.args[1]
        if not isinstance(a, fx.Node):
            return
        inputs = {a: self._input_qspec(a, node)}
        if isinstance(b, fx.Node):
            inputs[b] = self._input_qspec(b, node)
        elif not isinstance(b, (int, float)):
            return
        self._annotate_with_activation(node, inputs)

    def _annotate_matmul(self, node: fx.Node) -> None:
        a, b = node.args[0], node.args[1]
        if not (_is_activation(a) and _is_activation(b)):
            return
        self._annotate_with_activation(node, {a: self._input_qspec(a, node), b: self._input_qspec(b, node)})

    def _annotate_lstm(self, cells: fx.Node) -> None:
        """One LSTM layer (mcuforge.lstm_op): int8 input and output, the cell states observed in int16 at a
        power-of-two scale (arm_lstm_unidirectional_s8's cell state). Weights stay fp32 here: the lowering
        quantizes them per gate as the kernel takes them."""
        x = cells.args[0]
        layers = [u for u in cells.users if u.op == "call_function" and u.target in LSTM_OPS and u.args[1] is cells]
        if self.fp32_recurrent or not _is_activation(x) or len(layers) != 1 or layers[0].args[0] is not x:
            return
        cell_spec = activation_qspec_s16(PowerOfTwoObserver)
        _annotate(cells, {x: self._input_qspec(x, cells)}, cell_spec)
        _annotate(layers[0], {x: self._input_qspec(x, layers[0]), cells: cell_spec}, activation_qspec(self.observers))

    def _annotate_own_output(self, node: fx.Node) -> None:
        x = node.args[0]
        if isinstance(x, fx.Node):
            q15 = self._int16(node) and node.target in SIGMOID_TANH  # arm_nn_activation_s16's Q0.15 output
            out = q15_output_qspec() if q15 else self._output_qspec(node, node)
            _annotate(node, {x: self._input_qspec(x, node)}, out)

    def _annotate_softmax(self, node: fx.Node) -> None:
        x = node.args[0]
        if isinstance(x, fx.Node):
            out = q15_output_qspec() if self._int16(node) else softmax_output_qspec()
            _annotate(node, {x: self._input_qspec(x, node)}, out)

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
        inputs = {first: self._input_qspec(first, node)}
        inputs.update((t, shared) for t in tensors[1:] if t is not first)
        _annotate(node, inputs, shared)

    def _annotate_minmax(self, node: fx.Node) -> None:
        # maximum / minimum / clamp by tensors: one quantization for every tensor operand and the output, so
        # the int8 kernel compares codes without requantizing. Only over int8 values (activations, model inputs)
        # and constants: with an fp32 result as an operand (an fp32 island's), the op stays in that island
        # rather than quantizing its fp32 operand just to compare. As for concatenation, the first operand's
        # edge starts the group (it must come first in the map) and the others share it.
        tensors = [t for t in node.args if isinstance(t, fx.Node)]
        if not tensors or not isinstance(node.args[0], fx.Node):
            return
        if not all(_is_activation(t) or t.op == "get_attr" for t in tensors):
            return
        first = tensors[0]
        shared = SharedQuantizationSpec((first, node))
        inputs = {first: self._input_qspec(first, node)}
        inputs.update((t, shared) for t in tensors[1:] if t is not first)
        _annotate(node, inputs, shared)

    def _annotate_split(self, node: fx.Node) -> None:
        # chunk/split/unbind give a list read through getitem: the getitem outputs carry the
        # quantization, shared with the split's input edge.
        x = node.args[0]
        _annotate(node, {x: self._input_qspec(x, node)}, None)
        for user in node.users:
            if user.op == "call_function" and user.target is operator.getitem:
                _annotate(user, {}, SharedQuantizationSpec((x, node)))

    def _annotate_shared(self, node: fx.Node) -> None:
        # The input edge reuses the producer's observer when the producer is quantized (PT2E
        # shares observers of equal specs); the output shares the input edge's qparams.
        x = node.args[0]
        if isinstance(x, fx.Node):
            _annotate(node, {x: self._input_qspec(x, node)}, SharedQuantizationSpec((x, node)))
