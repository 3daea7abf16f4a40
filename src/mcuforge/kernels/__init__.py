"""Host int8 reference kernels: the executable statement of mcuforge's numeric contract.

Every kernel is bit-exact with the CMSIS-NN function it names (default build, double-rounding requantize),
vectorized with numpy and batched over the leading N axis. Where each op's math lives:

- ``quant_utils``: fixed-point arithmetic -- ``quantize_multiplier(s)`` (TFLite QuantizeMultiplier),
  ``doubling_high_mult_no_sat`` / ``divide_by_power_of_two`` / ``requantize`` (arm_nn_requantize),
  ``add_quant_params`` (TFLite int8 ADD prepare), ``quantize_per_tensor`` / ``dequantize_per_tensor``
  (torch quantized_decomposed, fp32).
- ``conv``: ``conv2d_s8`` (arm_convolve_s8), ``conv2d_s4`` (arm_convolve_s4, int4 weights) and the window
  geometry (``conv_output_hw``) shared by the depthwise and pooling kernels.
- ``depthwise_conv``: ``depthwise_conv2d_s8`` (arm_depthwise_conv_s8, any depth multiplier) and
  ``depthwise_conv2d_s4`` (arm_depthwise_conv_s4).
- ``fully_connected``: ``fully_connected_s8`` (arm_fully_connected_s8, per-tensor or per-channel
  requantization), ``fully_connected_per_channel_s8`` (arm_fully_connected_per_channel_s8) and
  ``fully_connected_s4`` (arm_fully_connected_s4).
- ``int4``: ``pack_int4`` / ``unpack_int4``, CMSIS-NN's s4 packing of int4 weights (two per byte).
- ``add``: ``add_s8`` (arm_elementwise_add_s8).
- ``pooling``: ``avgpool_s8`` (arm_avgpool_s8) and ``maxpool_s8`` (arm_max_pool_s8).
- ``mul``: ``mul_s8`` (arm_elementwise_mul_s8, numpy broadcasting) and ``mul_quant_params`` (TFLite MUL prepare).
- ``softmax``: ``softmax_s8`` (arm_softmax_s8, last axis) and ``softmax_params`` (TFLite softmax prepare).
- ``pad`` / ``transpose`` / ``concat``: ``pad_s8`` (arm_pad_s8), ``transpose_s8`` (arm_transpose_s8) and
  ``concat_s8`` (arm_concatenation_s8_{x,y,z,w}): data movement.
- ``batch_matmul``: ``batch_matmul_s8`` (arm_batch_matmul_s8, broadcast batch dims, adj_x / adj_y).
- ``transpose_conv``: ``transpose_conv2d_s8`` (arm_transpose_conv_s8) and ``transpose_conv_output_hw``.
- ``lut``: ``lut_s8`` (int8[256] table lookup) and ``make_lut_s8`` (a table from an fp32 torch function).
"""

from .add import add_s8
from .batch_matmul import batch_matmul_s8
from .concat import concat_s8
from .conv import conv2d_s4, conv2d_s8, conv_output_hw
from .depthwise_conv import depthwise_conv2d_s4, depthwise_conv2d_s8
from .fully_connected import fully_connected_per_channel_s8, fully_connected_s4, fully_connected_s8
from .int4 import pack_int4, unpack_int4
from .lut import lut_s8, make_lut_s8
from .mul import mul_quant_params, mul_s8
from .pad import pad_s8
from .pooling import avgpool_s8, maxpool_s8
from .quant_utils import (
    add_quant_params,
    dequantize_per_tensor,
    divide_by_power_of_two,
    doubling_high_mult_no_sat,
    quantize_multiplier,
    quantize_multipliers,
    quantize_per_tensor,
    requantize,
    requantize_output,
    wrap_int32,
)
from .softmax import softmax_params, softmax_s8
from .transpose import transpose_s8
from .transpose_conv import transpose_conv2d_s8, transpose_conv_output_hw

__all__ = [
    "add_quant_params",
    "add_s8",
    "avgpool_s8",
    "batch_matmul_s8",
    "concat_s8",
    "conv2d_s4",
    "conv2d_s8",
    "conv_output_hw",
    "depthwise_conv2d_s4",
    "depthwise_conv2d_s8",
    "dequantize_per_tensor",
    "divide_by_power_of_two",
    "doubling_high_mult_no_sat",
    "fully_connected_per_channel_s8",
    "fully_connected_s4",
    "fully_connected_s8",
    "lut_s8",
    "make_lut_s8",
    "maxpool_s8",
    "mul_quant_params",
    "mul_s8",
    "pack_int4",
    "pad_s8",
    "quantize_multiplier",
    "quantize_multipliers",
    "quantize_per_tensor",
    "requantize",
    "requantize_output",
    "softmax_params",
    "softmax_s8",
    "transpose_conv2d_s8",
    "transpose_conv_output_hw",
    "transpose_s8",
    "unpack_int4",
    "wrap_int32",
]
