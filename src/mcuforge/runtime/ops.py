"""One adapter per op kind: unpack an op's tensors and attributes into a kernel's arguments.

Adapters see every input with a leading run axis (size G for activations, 1 for constants, see
``executor``) and return the output(s) with ``G * batch`` leading rows or ``(G, *shape)``; the
executor writes them into the arena. The math itself lives in ``mcuforge.kernels``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from .. import kernels as K
from ..ir import Op
from ..kernels.add import prepare_add_s8
from ..kernels.batch_matmul import prepare_batch_matmul_s8
from ..kernels.clamp import clamp_s8
from ..kernels.conv import prepare_conv2d_s8
from ..kernels.depthwise_conv import prepare_depthwise_conv2d_s8
from ..kernels.fully_connected import prepare_fully_connected_s8
from ..kernels.int4 import widened_multipliers
from ..kernels.lut import prepare_lut_s8
from ..kernels.mul import prepare_mul_s8
from ..kernels.pooling import prepare_pool_s8
from ..kernels.registry import registered
from ..kernels.softmax import prepare_softmax_s8
from .fp32 import aten_fp32
from .operands import PackedWeights, constant, fold_runs, with_rank
from .ops_recurrent import RECURRENT_KERNELS
from .ops_s16 import S16_KERNELS
from .prepared import prepared

Kernel = Callable[[Op, list[np.ndarray], list[np.ndarray]], np.ndarray | list[np.ndarray]]

def _s4(kernel: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """An s4 kernel called like its s8 twin: the packed weights in the weight argument's place, the compact
    per-channel parameters (an int16 bias, 16-bit multipliers: kernels/int4.py) widened to CMSIS-NN's int32."""
    def call(x: np.ndarray, w: PackedWeights, bias: np.ndarray | None, *, multipliers: np.ndarray, **params
             ) -> np.ndarray:
        bias = None if bias is None else bias.astype(np.int32)
        if w.layout != "plain":  # S4_HALVES: a Helium program's conv2d_s4 / fully_connected_s4 weights
            params["layout"] = w.layout
        return kernel(x, w.packed, w.shape, bias, multipliers=widened_multipliers(multipliers), **params)
    return call


def _conv(op: Op, ins: list[np.ndarray], outs: list[np.ndarray], conv: Callable[..., np.ndarray] | None = None
          ) -> np.ndarray:
    """conv2d_s8 through its prepared kernel (``conv`` None), or the given kernel (the s4 kinds)."""
    x, w, bias, mult, shift = ins
    a = op.attrs
    if conv is None:
        x = fold_runs(x, 4)
        run = prepared(op, ins[1:], x.shape[1:], lambda: prepare_conv2d_s8(
            x.shape[1:], constant(w), constant(bias), input_offset=a["input_offset"], output_offset=a["output_offset"],
            multipliers=constant(mult), shifts=constant(shift), stride=tuple(a["stride"]), padding=tuple(a["padding"]),
            dilation=tuple(a["dilation"]), act_min=a["act_min"], act_max=a["act_max"],
            output_hw=tuple(outs[0].shape[2:4])))
        return run(x)
    oh, ow = outs[0].shape[2:4]
    return conv(fold_runs(x, 4), constant(w), constant(bias), input_offset=a["input_offset"],
                output_offset=a["output_offset"], multipliers=constant(mult), shifts=constant(shift),
                stride=tuple(a["stride"]), padding=tuple(a["padding"]), dilation=tuple(a["dilation"]),
                act_min=a["act_min"], act_max=a["act_max"], output_hw=(oh, ow))


def _depthwise(op: Op, ins: list[np.ndarray], outs: list[np.ndarray],
               depthwise: Callable[..., np.ndarray] | None = None) -> np.ndarray:
    """depthwise_conv2d_s8 through its prepared kernel (``depthwise`` None), or the given kernel (s4)."""
    x, w, bias, mult, shift = ins
    a = op.attrs
    if depthwise is None:
        x = fold_runs(x, 4)
        run = prepared(op, ins[1:], x.shape[1:], lambda: prepare_depthwise_conv2d_s8(
            x.shape[1:], constant(w), constant(bias), input_offset=a["input_offset"], output_offset=a["output_offset"],
            multipliers=constant(mult), shifts=constant(shift), stride=tuple(a["stride"]), padding=tuple(a["padding"]),
            dilation=tuple(a["dilation"]), depth_multiplier=a["depth_multiplier"], act_min=a["act_min"],
            act_max=a["act_max"], output_hw=tuple(outs[0].shape[2:4])))
        return run(x)
    oh, ow = outs[0].shape[2:4]
    return depthwise(fold_runs(x, 4), constant(w), constant(bias), input_offset=a["input_offset"],
                     output_offset=a["output_offset"], multipliers=constant(mult), shifts=constant(shift),
                     stride=tuple(a["stride"]), padding=tuple(a["padding"]), dilation=tuple(a["dilation"]),
                     depth_multiplier=a["depth_multiplier"], act_min=a["act_min"], act_max=a["act_max"],
                     output_hw=(oh, ow))


def _fully_connected(op: Op, ins: list[np.ndarray], outs: list[np.ndarray],
                     fc: Callable[..., np.ndarray] | None = None) -> np.ndarray:
    """fully_connected_s8 and its per-channel form (the same arithmetic, per-channel requantization) through
    the prepared kernel (``fc`` None), or the given kernel (fully_connected_s4)."""
    x, w, bias, mult, shift = ins
    a = op.attrs
    if fc is None:
        run = prepared(op, ins[1:], (), lambda: prepare_fully_connected_s8(
            constant(w), constant(bias), input_offset=a["input_offset"], output_offset=a["output_offset"],
            multipliers=constant(mult), shifts=constant(shift), act_min=a["act_min"], act_max=a["act_max"],
            filter_offset=a.get("filter_offset", 0)))
        return run(x.reshape(-1, w.shape[2]))
    depth = w.shape[1] if isinstance(w, PackedWeights) else w.shape[2]
    return fc(x.reshape(-1, depth), constant(w), constant(bias), input_offset=a["input_offset"],
              output_offset=a["output_offset"], multipliers=constant(mult), shifts=constant(shift),
              act_min=a["act_min"], act_max=a["act_max"])


def _add(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    run = prepared(op, [], (), lambda: prepare_add_s8(**op.attrs))
    return run(ins[0], ins[1])  # elementwise: the run axis broadcasts like any other


def _pool(kind: str) -> Kernel:
    def run(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
        a = op.attrs
        x = fold_runs(ins[0], 4)
        # The output may be stored squeezed (a global mean): its size is the output_hw attribute.
        pool = prepared(op, [], x.shape[1:], lambda: prepare_pool_s8(
            kind, x.shape[1:], tuple(a["kernel"]), tuple(a["stride"]), tuple(a["padding"]), a["act_min"],
            a["act_max"], tuple(a["output_hw"])))
        return pool(x)
    return run


def _clamp(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return clamp_s8(ins[0], act_min=op.attrs["act_min"], act_max=op.attrs["act_max"])


def _reshape(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return ins[0]  # same bytes, new shape: the executor writes them in the output's shape


def _transpose(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return np.transpose(ins[0], (0, *(p + 1 for p in op.attrs["perm"])))


def _mul(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    rank = outs[0].ndim - 1
    run = prepared(op, [], (), lambda: prepare_mul_s8(**op.attrs))
    return run(with_rank(ins[0], rank), with_rank(ins[1], rank))


def _minmax(kernel: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def run(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
        rank = outs[0].ndim - 1
        return kernel(with_rank(ins[0], rank), with_rank(ins[1], rank))
    return run


def _softmax(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    run = prepared(op, [], (), lambda: prepare_softmax_s8(**op.attrs))
    return run(ins[0])  # rows along the last axis: the run axis is one more batch axis


def _pad(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    flat = op.attrs["pads"]
    pads = [(0, 0)] + [(flat[2 * i], flat[2 * i + 1]) for i in range(len(flat) // 2)]  # the run axis: no pad
    return K.pad_s8(ins[0], pads, pad_value=op.attrs["pad_value"])


def _concat(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    runs = outs[0].shape[0]
    parts = [np.broadcast_to(x, (runs, *x.shape[1:])) for x in ins]  # a constant input repeats per run
    return K.concat_s8(parts, op.attrs["axis"] + 1)


def _batch_matmul(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    a = op.attrs
    rank = outs[0].ndim - 1
    run = prepared(op, [], (), lambda: prepare_batch_matmul_s8(
        lhs_offset=a["lhs_offset"], rhs_offset=a["rhs_offset"], output_offset=a["output_offset"],
        output_multiplier=a["output_multiplier"], output_shift=a["output_shift"], act_min=a["act_min"],
        act_max=a["act_max"], adj_x=bool(a["adj_x"]), adj_y=bool(a["adj_y"])))
    return run(with_rank(ins[0], rank), with_rank(ins[1], rank))


def _transpose_conv(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    oh, ow = outs[0].shape[2:4]
    return K.transpose_conv2d_s8(fold_runs(x, 4), constant(w), constant(bias), input_offset=a["input_offset"],
                                 output_offset=a["output_offset"], multipliers=constant(mult),
                                 shifts=constant(shift), stride=tuple(a["stride"]), padding=tuple(a["padding"]),
                                 act_min=a["act_min"], act_max=a["act_max"], output_hw=(oh, ow))


def _lut(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return prepared(op, ins[1:], (), lambda: prepare_lut_s8(constant(ins[1])))(ins[0])


def _slice(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    a = op.attrs
    index = (slice(None), *(slice(b, e, s) for b, e, s in zip(a["begin"], a["end"], a["step"], strict=True)))
    return ins[0][index]  # the executor writes it in the output's shape (a selected dim dropped)


def _insert_tile(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    """dst (zeros without one; with ``fill`` 0 the output's bytes as they are) with the tile written at ``begin``
    (mcuforge.patches)."""
    tile, dst = ins[0], ins[1] if len(ins) > 1 else None
    if dst is None:
        out = np.zeros(outs[0].shape, outs[0].dtype) if op.attrs.get("fill", 1) else np.array(outs[0], copy=True)
    else:
        out = np.array(dst, copy=True)
    out[(slice(None), *(slice(b, b + n) for b, n in zip(op.attrs["begin"], tile.shape[1:], strict=True)))] = tile
    return out


def _quantize(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    if outs[0].dtype == np.int16:  # an A16W8 boundary
        return K.quantize_per_tensor(ins[0], op.attrs["scale"], op.attrs["zero_point"], -32768, 32767, np.int16)
    return K.quantize_per_tensor(ins[0], op.attrs["scale"], op.attrs["zero_point"])


def _dequantize(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return K.dequantize_per_tensor(ins[0], op.attrs["scale"], op.attrs["zero_point"])


def _delegate(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> list[np.ndarray]:
    from .delegate import run_delegate  # needs the ethos-u extra (tosa-tools)

    return run_delegate(op, ins, outs)


KERNELS: dict[str, Kernel] = {
    "conv2d_s8": _conv,
    "depthwise_conv2d_s8": _depthwise,
    "fully_connected_s8": _fully_connected,
    "conv2d_s4": partial(_conv, conv=_s4(K.conv2d_s4)),
    "depthwise_conv2d_s4": partial(_depthwise, depthwise=_s4(K.depthwise_conv2d_s4)),
    "fully_connected_s4": partial(_fully_connected, fc=_s4(K.fully_connected_s4)),
    "fully_connected_per_channel_s8": _fully_connected,
    "add_s8": _add,
    "avgpool_s8": _pool("avg"),
    "maxpool_s8": _pool("max"),
    "clamp_s8": _clamp,
    "mul_s8": _mul,
    "maximum_s8": _minmax(K.maximum_s8),
    "minimum_s8": _minmax(K.minimum_s8),
    "softmax_s8": _softmax,
    "pad_s8": _pad,
    "concat_s8": _concat,
    "batch_matmul_s8": _batch_matmul,
    "transpose_conv2d_s8": _transpose_conv,
    "lut_s8": _lut,
    "slice": _slice,
    "insert_tile": _insert_tile,
    "reshape": _reshape,
    "transpose": _transpose,
    "quantize": _quantize,
    "dequantize": _dequantize,
    "aten_fp32": aten_fp32,
    "delegate": _delegate,
    **S16_KERNELS,
    **RECURRENT_KERNELS,
}
# The kernels that register themselves next to their arithmetic (mcuforge.kernels.registry): a new kind's only
# Python kernel file.
_OWN = registered()
if set(_OWN) & set(KERNELS):
    raise RuntimeError(f"kinds with two Python kernels: {sorted(set(_OWN) & set(KERNELS))}")
KERNELS.update(_OWN)
