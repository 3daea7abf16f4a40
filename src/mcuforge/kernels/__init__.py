"""Host int8 reference kernels: the executable statement of mcuforge's numeric contract.

Every kernel is bit-exact with the CMSIS-NN function it names (default build, double-rounding requantize),
vectorized with numpy and batched over the leading N axis. Where each op's math lives:

- ``quant_utils`` (re-exporting ``requant``, the contract; ``requant_engine``, the vectorized requantizer; and
  ``arg_checks``): fixed-point arithmetic -- ``quantize_multiplier(s)`` (TFLite QuantizeMultiplier),
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
- ``minmax``: ``maximum_s8`` / ``minimum_s8`` (arm_maximum_s8 / arm_minimum_s8: no requantization, broadcast).

int16 activations with int8 weights (A16W8, CMSIS-NN's s16 kernels; symmetric int16, zero point 0):

- ``quant_s16``: ``reduce_multiplier`` / ``requantize_s64`` (REDUCE_MULTIPLIER, arm_nn_requantize_s64),
  ``table_lookup_s16`` (the 513-entry interpolation of arm_softmax_s16), ``gen_lut_s16`` (TFLite gen_lut).
- ``conv_s16``: ``conv2d_s16`` (arm_convolve_s16), ``depthwise_conv2d_s16`` (arm_depthwise_conv_s16).
- ``fully_connected_s16``: ``fully_connected_s16`` (arm_fully_connected_s16), ``batch_matmul_s16``
  (arm_batch_matmul_s16).
- ``elementwise_s16``: ``add_s16`` / ``add_s16_params`` (arm_elementwise_add_s16), ``mul_s16``
  (arm_elementwise_mul_s16), ``clamp_s16``, ``convert_s8_s16`` / ``convert_s16_s8`` (requantizing casts).
- ``pooling_s16``: ``avgpool_s16`` (arm_avgpool_s16), ``maxpool_s16`` (arm_max_pool_s16).
- ``softmax_s16``: ``softmax_s16`` (arm_softmax_s16), ``softmax_s16_params`` / ``softmax_s16_tables``.
- ``lut_s16``: ``lut_s16`` / ``make_lut_s16`` (interpolated int16[513] tables), ``sigmoid_s16`` /
  ``tanh_s16`` (arm_nn_activation_s16).
- ``lstm``: ``lstm_s8`` (arm_lstm_unidirectional_s8: a whole LSTM layer, int16 gates and cell state);
  ``gru``: ``gru_s8`` (a GRU layer in the same style, int16 Q0.15 state).
"""

from .add import add_s8
from .batch_matmul import batch_matmul_s8
from .concat import concat_s8
from .conv import conv2d_s4, conv2d_s8, conv_output_hw
from .conv_s16 import conv2d_s16, depthwise_conv2d_s16
from .depthwise_conv import depthwise_conv2d_s4, depthwise_conv2d_s8
from .elementwise_s16 import add_s16, add_s16_params, clamp_s16, convert_s8_s16, convert_s16_s8, mul_s16
from .fully_connected import fully_connected_per_channel_s8, fully_connected_s4, fully_connected_s8
from .fully_connected_s16 import batch_matmul_s16, fully_connected_s16
from .gru import gru_s8
from .int4 import pack_int4, unpack_int4
from .lstm import lstm_s8
from .lut import lut_s8, make_lut_s8
from .lut_s16 import activation_s16, lut_s16, make_lut_s16, sigmoid_s16, tanh_s16
from .minmax import maximum_s8, minimum_s8
from .mul import mul_quant_params, mul_s8
from .pad import pad_s8
from .pooling import avgpool_s8, maxpool_s8
from .pooling_s16 import avgpool_s16, maxpool_s16
from .quant_s16 import gen_lut_s16, reduce_multiplier, requantize_s64, table_lookup_s16
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
from .softmax_s16 import softmax_s16, softmax_s16_params, softmax_s16_tables
from .transpose import transpose_s8
from .transpose_conv import transpose_conv2d_s8, transpose_conv_output_hw

__all__ = [
    "gru_s8",
    "lstm_s8",
    "activation_s16",
    "add_quant_params",
    "add_s16",
    "add_s16_params",
    "add_s8",
    "avgpool_s16",
    "avgpool_s8",
    "batch_matmul_s16",
    "batch_matmul_s8",
    "clamp_s16",
    "concat_s8",
    "conv2d_s16",
    "conv2d_s4",
    "conv2d_s8",
    "conv_output_hw",
    "convert_s16_s8",
    "convert_s8_s16",
    "depthwise_conv2d_s16",
    "depthwise_conv2d_s4",
    "depthwise_conv2d_s8",
    "dequantize_per_tensor",
    "divide_by_power_of_two",
    "doubling_high_mult_no_sat",
    "fully_connected_per_channel_s8",
    "fully_connected_s16",
    "fully_connected_s4",
    "fully_connected_s8",
    "gen_lut_s16",
    "lut_s16",
    "lut_s8",
    "make_lut_s16",
    "make_lut_s8",
    "maxpool_s16",
    "maximum_s8",
    "maxpool_s8",
    "minimum_s8",
    "mul_quant_params",
    "mul_s16",
    "mul_s8",
    "pack_int4",
    "pad_s8",
    "quantize_multiplier",
    "quantize_multipliers",
    "quantize_per_tensor",
    "reduce_multiplier",
    "requantize",
    "requantize_output",
    "requantize_s64",
    "sigmoid_s16",
    "softmax_params",
    "softmax_s16",
    "softmax_s16_params",
    "softmax_s16_tables",
    "softmax_s8",
    "table_lookup_s16",
    "tanh_s16",
    "transpose_conv2d_s8",
    "transpose_conv_output_hw",
    "transpose_s8",
    "unpack_int4",
    "wrap_int32",
]
