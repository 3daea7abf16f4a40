"""The quantization specs of int16 activations (the "a16w8" scheme): symmetric int16 with min/max
calibration and one bit of headroom, the fixed output quantization of the s16 softmax and of sigmoid/tanh,
and the power-of-two input scale that CMSIS-NN's ``arm_nn_activation_s16`` takes.

Which ops run in int16: those with an s16 kernel (``S16_OPS``); the others of a program keep int8
quantization, and PT2E's requantization where the two meet becomes a convert op (``lower/to_ir.py``).
"""

from __future__ import annotations

import math

import torch
from torchao.quantization.pt2e import MinMaxObserver
from torchao.quantization.pt2e.quantizer import FixedQParamsQuantizationSpec, QuantizationSpec

from .patterns import (
    ADD_OPS,
    CONV_OPS,
    FUSABLE_ACTIVATIONS,
    IDENTITY_OPS,
    LINEAR_OPS,
    LUT_ACTIVATIONS,
    MATMUL_OPS,
    MUL_OPS,
    PERMUTE_OPS,
    POOL_OPS,
    RESHAPE_OPS,
    SLICE_OPS,
    SOFTMAX_OPS,
    SPLIT_OPS,
    SUB_OPS,
)

aten = torch.ops.aten
INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
#: Output scale of the s16 softmax and of sigmoid / tanh (Q0.15).
Q15_SCALE = 1.0 / 32768.0
#: Ops that run in int16 under "a16w8" (they have s16 kernels, or move bytes of any width). The rest --
#: transposed convolution, pad, concatenation -- keep int8.
S16_OPS = (CONV_OPS | LINEAR_OPS | ADD_OPS | SUB_OPS | MUL_OPS | MATMUL_OPS | LUT_ACTIVATIONS | SOFTMAX_OPS
           | POOL_OPS | FUSABLE_ACTIVATIONS | RESHAPE_OPS | PERMUTE_OPS | SLICE_OPS | SPLIT_OPS | IDENTITY_OPS)
#: sigmoid and tanh: arm_nn_activation_s16 when their input scale is a power of two (PowerOfTwoObserver).
SIGMOID_TANH = {aten.sigmoid.default, aten.sigmoid_.default, aten.tanh.default, aten.tanh_.default}
#: The input scales arm_nn_activation_s16 takes: 2^(left_shift - 12), left_shift 0 .. 14.
POW2_MIN_EXPONENT, POW2_MAX_EXPONENT = -12, 2
#: The int16 range covers this multiple of the calibrated one. Inputs the calibration did not see go beyond
#: its maximum (on zoo.trained's held-out data by 5-50% on most layers); clipped, they cost the A16W8
#: programs 15-25 dB. One bit of headroom costs 6 dB of int16's ~90 dB of resolution and clips none of them
#: (``python benchmarks/precision.py``; x4 measured lower on both trained models).
INT16_HEADROOM = 2.0


class HeadroomMinMaxObserver(MinMaxObserver):
    """Symmetric int16 min/max with the scale widened by :data:`INT16_HEADROOM`."""

    def calculate_qparams(self) -> tuple[torch.Tensor, torch.Tensor]:
        scale, zero_point = super().calculate_qparams()
        return scale * INT16_HEADROOM, zero_point


class PowerOfTwoObserver(MinMaxObserver):
    """Symmetric int16 min/max, the scale rounded up to a power of two in [2^-12, 2^2]: the Q3.12 input
    (shifted left by 0 .. 14) of arm_nn_activation_s16. Below 2^-12 the input's range is within +-8, where
    Q3.12 already covers sigmoid and tanh to their saturation."""

    def calculate_qparams(self) -> tuple[torch.Tensor, torch.Tensor]:
        scale, zero_point = super().calculate_qparams()
        exponent = math.ceil(math.log2(float(scale)))
        exponent = min(max(exponent, POW2_MIN_EXPONENT), POW2_MAX_EXPONENT)
        return torch.tensor([2.0**exponent], dtype=torch.float32), zero_point


def activation_qspec_s16(observer: type = HeadroomMinMaxObserver) -> QuantizationSpec:
    """Symmetric int16 (zero point 0), calibrated by min/max with headroom: at 16 bits the rounding error is
    small enough that clipping outliers (what the int8 histogram observer trades for) only loses."""
    return QuantizationSpec(dtype=torch.int16, quant_min=INT16_MIN, quant_max=INT16_MAX,
                            qscheme=torch.per_tensor_symmetric, observer_or_fake_quant_ctr=observer)


def q15_output_qspec() -> FixedQParamsQuantizationSpec:
    """The s16 softmax's output, and sigmoid's and tanh's (arm_nn_activation_s16): Q0.15."""
    return FixedQParamsQuantizationSpec(dtype=torch.int16, scale=Q15_SCALE, zero_point=0, quant_min=INT16_MIN,
                                        quant_max=INT16_MAX, qscheme=torch.per_tensor_symmetric)
