"""Converters of the int8 op kinds to CMSIS-NN calls (``c/cases_s8.c``); see :mod:`.ops`."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Op
from .harness import Case
from .ops import converts, output_tensor, per_channel

I8 = np.dtype(np.int8)


def _bias(bias: np.ndarray | None, channels: int) -> tuple[np.ndarray, int]:
    if bias is None:
        return np.zeros(0, np.int32), 0
    return np.ascontiguousarray(np.asarray(bias, np.int32).reshape(channels)), 1


@converts("conv2d_s8")
def conv2d_s8(graph: Graph, op: Op, values: list, function: str = "mfcmp_conv_wrapper_s8", name: str = "") -> Case:
    """arm_convolve_wrapper_s8 (or ``function``: mfcmp_conv_s8, mfcmp_conv_1x1_s8_fast, mfcmp_conv_1x1_s8,
    mfcmp_conv_1_x_n_s8, the paths the wrapper picks from). A grouped convolution (filter channels < input
    channels) is arm_convolve_s8's: the wrapper sends it there."""
    x, w, bias, mult, shift = values
    a = op.attrs
    out = output_tensor(graph, op)
    n, h, wd, c = x.shape
    oc, kh, kw, fc = w.shape
    oh, ow = out.shape[1], out.shape[2]
    bias, has_bias = _bias(bias, oc)
    ints = [n, h, wd, c, oc, kh, kw, fc, oh, ow, a["input_offset"], a["output_offset"], *a["stride"],
            *a["padding"], *a["dilation"], a["act_min"], a["act_max"], has_bias]
    inputs = [np.ascontiguousarray(x, I8), np.ascontiguousarray(w, I8), bias, per_channel(mult, oc),
              per_channel(shift, oc)]
    return Case(function, [int(v) for v in ints], inputs, tuple(out.shape), I8, name)
