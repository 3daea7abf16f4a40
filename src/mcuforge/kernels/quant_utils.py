"""The int8 numeric contract and what the kernels share, in three parts (re-exported here, where the kernels and
older code import them from):

- :mod:`.requant`: the contract itself -- ``quantize_multiplier``, CMSIS-NN's ``requantize`` (double rounding)
  and its parts, ``add_quant_params``, ``quantize_per_tensor`` / ``dequantize_per_tensor``;
- :mod:`.requant_engine`: the vectorized requantizer (``Requantizer``, ``requantize_output``) and the byte pair
  tables of binary int8 ops (``ByteMap``);
- :mod:`.arg_checks`: the argument checks shared by the kernels.
"""

from __future__ import annotations

from .arg_checks import (
    OUTPUT_OFFSET_RANGE,
    S4_OUTPUT_OFFSET_RANGE,
    check_activation_range,
    check_bias,
    check_int8,
    check_int8_broadcast,
    check_offsets,
    check_requant_params,
    check_weighted_params,
)
from .requant import (
    INT32_MAX,
    INT32_MIN,
    SHIFT_MAX,
    SHIFT_MIN,
    add_quant_params,
    dequantize_per_tensor,
    divide_by_power_of_two,
    doubling_high_mult_no_sat,
    quantize_multiplier,
    quantize_multipliers,
    quantize_per_tensor,
    requantize,
    wrap_int32,
)
from .requant_engine import (
    BLOCK_ELEMENTS,
    FUSED_MIN_ELEMENTS,
    PAIR_MIN_ELEMENTS,
    REQUANT_BLOCK_ELEMENTS,
    TILE_WIDTH,
    ByteMap,
    Requantizer,
    byte_pair_lookup,
    byte_pair_table,
    requantize_output,
)

__all__ = [
    "BLOCK_ELEMENTS", "FUSED_MIN_ELEMENTS", "INT32_MAX", "INT32_MIN", "OUTPUT_OFFSET_RANGE", "PAIR_MIN_ELEMENTS",
    "REQUANT_BLOCK_ELEMENTS", "S4_OUTPUT_OFFSET_RANGE", "SHIFT_MAX", "SHIFT_MIN", "TILE_WIDTH", "ByteMap",
    "Requantizer", "add_quant_params", "byte_pair_lookup", "byte_pair_table", "check_activation_range", "check_bias",
    "check_int8", "check_int8_broadcast", "check_offsets", "check_requant_params", "check_weighted_params",
    "dequantize_per_tensor", "divide_by_power_of_two", "doubling_high_mult_no_sat", "quantize_multiplier",
    "quantize_multipliers", "quantize_per_tensor", "requantize", "requantize_output", "wrap_int32",
]
