"""The int16 side of the integer lowerings (A16W8): when a pattern's activations are int16 (the "a16w8"
scheme quantized them so), the lowering that recognises it emits CMSIS-NN's s16 kind instead of the s8 one.

What differs from int8: no offsets (int16 activations are symmetric, zero point 0), the activation range is
[-32768, 32767], the bias is int64, and the weighted kernels requantize by ``arm_nn_requantize_s64`` (its
shift range is [-31, 7] as CMSIS-NN documents it; the kernels take up to 14). ``Width`` carries what the
lowerings of both widths share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import fx

from ...kernels.quant_s16 import S64_BIAS_LIMIT, S64_SHIFT_DOCUMENTED_MAX
from ..builder import GraphBuilder, get_attr_value, is_dq_channel


class WidthError(ValueError):
    """An operand mix or a parameter the kernels of a width cannot take (the lowerings turn it into NotInt8)."""


@dataclass(frozen=True)
class Width:
    """An integer activation width: its IR dtype, range and the suffix of its op kinds."""

    dtype: str
    qmin: int
    qmax: int
    suffix: str


S8 = Width("int8", -128, 127, "_s8")
S16 = Width("int16", -32768, 32767, "_s16")
WIDTHS = {w.dtype: w for w in (S8, S16)}


def width_of(b: GraphBuilder, *names: str) -> Width:
    """The one width of the integer tensors ``names`` (an op's operands share a width: the quantizer gives
    each op one; a mix raises WidthError)."""
    widths = {WIDTHS[b.tensors[n].dtype] for n in names}
    if len(widths) != 1:
        raise WidthError("operands of int8 and int16 together")
    return widths.pop()


def bias_int64(b: GraphBuilder, bias: object, input_scale: float, weight_scales: np.ndarray) -> np.ndarray:
    """The int64 bias of an s16 weighted op, scale input_scale * weight_scale[c]: the "a16w8" quantizer leaves
    the bias float (an int32 would not hold it at int16 input scales), so it is quantized here."""
    if bias is None:
        return np.zeros(len(weight_scales), np.int64)
    if isinstance(bias, fx.Node) and bias.op == "get_attr":
        real = get_attr_value(b.gm, bias).double().numpy()
    elif is_dq_channel(bias):
        qc = b.quantized_constant(bias)
        real = qc.data.astype(np.float64) * qc.scales
    else:
        raise WidthError("its bias is not a constant")
    q = np.round(real / (np.float64(input_scale) * weight_scales.astype(np.float64)))
    if np.any(np.abs(q) >= S64_BIAS_LIMIT):
        raise WidthError("its bias exceeds the s16 kernels' limit of 2^46")
    return q.astype(np.int64)


def s64_requant(params: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (multipliers, shifts) for arm_nn_requantize_s64: shifts at most 7 (CMSIS-NN's documented
    range; the kernels take up to 14); one pair when every
    channel has the same (the same bits, O - 1 fewer pairs in flash)."""
    mult, shift = (np.asarray(p, np.int64) for p in params)
    if np.any(shift > S64_SHIFT_DOCUMENTED_MAX):
        raise WidthError("requantization scale too large for arm_nn_requantize_s64 "
                         f"(shift > {S64_SHIFT_DOCUMENTED_MAX})")
    if mult.size > 1 and (mult == mult[0]).all() and (shift == shift[0]).all():
        return mult[:1], shift[:1]
    return mult, shift


def s16_kind(kind_s8: str) -> str:
    """The s16 kind of a weighted s8 kind (the per-channel fully connected is fully_connected_s16 too)."""
    kind = kind_s8.replace("_per_channel", "").replace("_s8", "_s16")
    if kind not in ("conv2d_s16", "depthwise_conv2d_s16", "fully_connected_s16"):
        raise WidthError(f"{kind_s8} has no s16 kernel")
    return kind
