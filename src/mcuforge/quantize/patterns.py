"""Which aten ops mcuforge quantizes, and how: one table shared by the quantizer and the lowering."""

from __future__ import annotations

import torch

from ..kinds import KINDS

aten = torch.ops.aten


def _overload(name: str) -> object:
    """torch.ops.aten's overload named "packet.overload"."""
    packet, overload = name.rsplit(".", 1)
    return getattr(getattr(aten, packet), overload)


#: The aten ops each kind's spec names (KindSpec.aten): the targets of a lowering declared with
#: ``int8_lowering(kind=...)``.
SPEC_TARGETS: dict[str, tuple[object, ...]] = {s.name: tuple(map(_overload, s.aten)) for s in KINDS if s.aten}
#: Those whose output shares its input's quantization (KindSpec.shares_input_qparams).
SPEC_SHARED_OPS = {op for s in KINDS if s.shares_input_qparams for op in SPEC_TARGETS.get(s.name, ())}

# Ops with weights: int8 input, int8 per-channel symmetric weight, int32 bias.
CONV2D_OPS = {aten.conv2d.default, aten.conv2d.padding}
CONV1D_OPS = {aten.conv1d.default, aten.conv1d.padding}
CONV_OPS = CONV2D_OPS | CONV1D_OPS
LINEAR_OPS = {aten.linear.default}
# torch's transposed-conv weight is (Cin, Cout / groups, kH, kW): its output channels are axis 1.
TRANSPOSE_CONV_OPS = {aten.conv_transpose2d.input}
WEIGHTED_OPS = CONV_OPS | LINEAR_OPS | TRANSPOSE_CONV_OPS

# Ops with their own output quantization (requantizing kernels).
ADD_OPS = {aten.add.Tensor, aten.add_.Tensor}
SUB_OPS = {aten.sub.Tensor, aten.sub_.Tensor}  # add_s8 with b's multiplier negated
MUL_OPS = {aten.mul.Tensor, aten.mul_.Tensor, aten.mul.Scalar}
MATMUL_OPS = {aten.matmul.default, aten.bmm.default}
# Elementwise activations computed by a 256-entry table built from the op's own fp32 definition.
LUT_ACTIVATIONS = {
    aten.sigmoid.default, aten.sigmoid_.default, aten.tanh.default, aten.tanh_.default,
    aten.hardswish.default, aten.hardswish_.default, aten.hardsigmoid.default, aten.hardsigmoid_.default,
    aten.silu.default, aten.silu_.default, aten.gelu.default, aten.elu.default, aten.elu_.default,
    aten.leaky_relu.default, aten.leaky_relu_.default,
}
# Output quantization fixed by the kernel (arm_softmax_s8: scale 1/256, zero point -128).
SOFTMAX_OPS = {aten.softmax.int, aten._softmax.default}
SOFTMAX_OUTPUT_SCALE = 1.0 / 256.0
SOFTMAX_OUTPUT_ZERO_POINT = -128

# Activations fused into the producer's activation_min/max.
FUSABLE_ACTIVATIONS = {
    aten.relu.default, aten.relu_.default, aten.hardtanh.default, aten.hardtanh_.default,
    aten.clamp.default, aten.clamp_.default, aten.relu6.default,
}

# Output shares the input's quantization (kernels without requantization).
POOL1D_OPS = {aten.max_pool1d.default, aten.avg_pool1d.default, aten.adaptive_avg_pool1d.default}
POOL2D_OPS = {aten.max_pool2d.default, aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default}
POOL_OPS = POOL2D_OPS | POOL1D_OPS | {aten.mean.dim}
RESHAPE_OPS = {
    aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.flatten.using_ints,
    aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default,
    aten.unflatten.int,  # nn.MultiheadAttention's packed q/k/v projection
}
PERMUTE_OPS = {aten.permute.default, aten.transpose.int, aten.mT.default, aten.t.default}
PAD_OPS = {aten.pad.default, aten.constant_pad_nd.default}
SLICE_OPS = {aten.slice.Tensor, aten.select.int, aten.narrow.default}
# Several outputs (read through getitem): every output is a slice of the input.
SPLIT_OPS = {aten.chunk.default, aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int}
# All inputs and the output share one quantization, so the kernel is a byte copy.
CAT_OPS = {aten.cat.default, aten.concat.default}
# Elementwise maximum / minimum (arm_maximum_s8 / arm_minimum_s8): no requantization, so every tensor operand
# and the output share one quantization (quantization is monotonic: the max of the codes is the code of the
# max). clamp by tensors is a maximum (min=) then a minimum (max=). fmax/fmin differ only on NaN, which no
# int8 value is.
MAXIMUM_OPS = {aten.maximum.default, aten.max.other, aten.fmax.default, aten.clamp_min.Tensor,
               aten.clamp_min_.Tensor}
MINIMUM_OPS = {aten.minimum.default, aten.min.other, aten.fmin.default, aten.clamp_max.Tensor,
               aten.clamp_max_.Tensor}
CLAMP_TENSOR_OPS = {aten.clamp.Tensor, aten.clamp_.Tensor}
MINMAX_OPS = MAXIMUM_OPS | MINIMUM_OPS | CLAMP_TENSOR_OPS
# The kinds whose spec names their aten ops (nearest upsampling, the embedding, ...): SPEC_TARGETS above.
DATA_MOVEMENT_OPS = RESHAPE_OPS | PERMUTE_OPS | PAD_OPS | SLICE_OPS | SPEC_SHARED_OPS
IDENTITY_OPS = {aten.clone.default, aten.contiguous.default, aten.dropout.default, aten.alias.default}
SHARED_QPARAM_OPS = POOL_OPS | DATA_MOVEMENT_OPS | IDENTITY_OPS | FUSABLE_ACTIVATIONS
