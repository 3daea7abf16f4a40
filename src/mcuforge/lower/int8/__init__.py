"""Lowering of quantized patterns to int8 kernels with CMSIS-NN parameters: one small function
per op, grouped by family, each registered with its doc row (``OP_DOCS``) in ``INT8_LOWERINGS``.

- ``conv``: conv2d / depthwise, conv1d (H = 1), transposed conv2d
- ``linear``: linear, batched matmul
- ``elementwise``: add, mul (broadcasting)
- ``minmax``: maximum, minimum, clamp by tensors (no requantization, broadcasting)
- ``pooling``: max / avg / adaptive avg pooling, spatial mean
- ``activations``: standalone clamps, lookup-table activations
- ``softmax``: softmax
- ``movement``: reshape, permute, pad, cat, slice, split, identities
- ``recurrent``: LSTM and GRU layers (mcuforge.lstm_op) as one lstm_s8 / gru_s8
"""

from . import (  # noqa: F401 - registers
    activations,
    conv,
    elementwise,
    linear,
    minmax,
    movement,
    pooling,
    recurrent,
    softmax,
)
from .common import EXAMPLES, INT8_LOWERINGS, OP_DOCS, NotInt8, OpDoc

__all__ = ["EXAMPLES", "INT8_LOWERINGS", "OP_DOCS", "NotInt8", "OpDoc"]
