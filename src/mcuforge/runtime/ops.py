"""One adapter per op kind: unpack an op's tensors and attributes into a kernel's arguments.

Adapters see every input with a leading run axis (size G for activations, 1 for constants, see
``executor``) and return the output(s) with ``G * batch`` leading rows or ``(G, *shape)``; the
executor writes them into the arena. The math itself lives in ``mcuforge.kernels``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import kernels as K
from ..ir import Op
from ..kernels.clamp import clamp_s8
from .fp32 import aten_fp32

Kernel = Callable[[Op, list[np.ndarray], list[np.ndarray]], np.ndarray | list[np.ndarray]]


def fold_runs(x: np.ndarray, rank: int) -> np.ndarray:
    """Merge the run axis into the tensor's own leading (batch) axis: ``(G, N, ...) -> (G*N, ...)``."""
    return x.reshape((-1, *x.shape[x.ndim - rank + 1:]))


def constant(x: np.ndarray | None) -> np.ndarray | None:
    """A constant operand without its run axis (``None`` for an absent optional input)."""
    return None if x is None else x[0]


def _conv(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    oh, ow = outs[0].shape[2:4]
    return K.conv2d_s8(fold_runs(x, 4), constant(w), constant(bias), input_offset=a["input_offset"],
                       output_offset=a["output_offset"], multipliers=constant(mult), shifts=constant(shift),
                       stride=tuple(a["stride"]), padding=tuple(a["padding"]), dilation=tuple(a["dilation"]),
                       act_min=a["act_min"], act_max=a["act_max"], output_hw=(oh, ow))


def _depthwise(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    oh, ow = outs[0].shape[2:4]
    return K.depthwise_conv2d_s8(fold_runs(x, 4), constant(w), constant(bias), input_offset=a["input_offset"],
                                 output_offset=a["output_offset"], multipliers=constant(mult), shifts=constant(shift),
                                 stride=tuple(a["stride"]), padding=tuple(a["padding"]),
                                 dilation=tuple(a["dilation"]), depth_multiplier=a["depth_multiplier"],
                                 act_min=a["act_min"], act_max=a["act_max"], output_hw=(oh, ow))


def _fully_connected(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    return K.fully_connected_s8(x.reshape(-1, w.shape[2]), constant(w), constant(bias), input_offset=a["input_offset"],
                                output_offset=a["output_offset"], multipliers=constant(mult), shifts=constant(shift),
                                act_min=a["act_min"], act_max=a["act_max"])


def _add(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return K.add_s8(ins[0], ins[1], **op.attrs)  # elementwise: the run axis broadcasts like any other


def _pool(kernel: Callable[..., np.ndarray]) -> Kernel:
    def run(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
        a = op.attrs
        x = fold_runs(ins[0], 4)
        stride, padding, k = a["stride"], a["padding"], a["kernel"]
        # The output may be stored squeezed (a global mean): its geometry comes from the input.
        oh = (x.shape[1] + 2 * padding[0] - k[0]) // stride[0] + 1
        ow = (x.shape[2] + 2 * padding[1] - k[1]) // stride[1] + 1
        return kernel(x, kernel=tuple(k), stride=tuple(stride), padding=tuple(padding), act_min=a["act_min"],
                      act_max=a["act_max"], output_hw=(oh, ow))
    return run


def _clamp(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return clamp_s8(ins[0], act_min=op.attrs["act_min"], act_max=op.attrs["act_max"])


def _reshape(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return ins[0]  # same bytes, new shape: the executor writes them in the output's shape


def _transpose(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return np.transpose(ins[0], (0, *(p + 1 for p in op.attrs["perm"])))


def _quantize(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return K.quantize_per_tensor(ins[0], op.attrs["scale"], op.attrs["zero_point"])


def _dequantize(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return K.dequantize_per_tensor(ins[0], op.attrs["scale"], op.attrs["zero_point"])


KERNELS: dict[str, Kernel] = {
    "conv2d_s8": _conv,
    "depthwise_conv2d_s8": _depthwise,
    "fully_connected_s8": _fully_connected,
    "add_s8": _add,
    "avgpool_s8": _pool(K.avgpool_s8),
    "maxpool_s8": _pool(K.maxpool_s8),
    "clamp_s8": _clamp,
    "reshape": _reshape,
    "transpose": _transpose,
    "quantize": _quantize,
    "dequantize": _dequantize,
    "aten_fp32": aten_fp32,
}
