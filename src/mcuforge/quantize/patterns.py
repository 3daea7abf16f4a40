"""Which aten ops mcuforge quantizes, and how: one table shared by the quantizer and the lowering."""

from __future__ import annotations

import torch

aten = torch.ops.aten

# Ops with weights: int8 input, int8 per-channel symmetric weight, int32 bias.
CONV_OPS = {aten.conv2d.default, aten.conv2d.padding}
LINEAR_OPS = {aten.linear.default}
WEIGHTED_OPS = CONV_OPS | LINEAR_OPS

# Ops with their own output quantization (requantizing kernels).
ADD_OPS = {aten.add.Tensor, aten.add_.Tensor}

# Activations fused into the producer's activation_min/max.
FUSABLE_ACTIVATIONS = {
    aten.relu.default, aten.relu_.default, aten.hardtanh.default, aten.hardtanh_.default,
    aten.clamp.default, aten.clamp_.default, aten.relu6.default,
}

# Output shares the input's quantization (kernels without requantization).
POOL_OPS = {aten.max_pool2d.default, aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default, aten.mean.dim}
DATA_MOVEMENT_OPS = {
    aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.flatten.using_ints,
    aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default,
    aten.permute.default,
}
IDENTITY_OPS = {aten.clone.default, aten.contiguous.default, aten.dropout.default, aten.alias.default}
SHARED_QPARAM_OPS = POOL_OPS | DATA_MOVEMENT_OPS | IDENTITY_OPS | FUSABLE_ACTIVATIONS
