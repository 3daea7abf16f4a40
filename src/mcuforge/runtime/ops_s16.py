"""The adapters of the int16-activation (A16W8) op kinds: an op's tensors and attributes into the
``mcuforge.kernels`` s16 kernels' arguments, with the conventions of ``ops`` (a leading run axis on
every operand, kernels prepared once per op)."""

from __future__ import annotations

import numpy as np

from ..ir import Op
from ..kernels.conv_s16 import prepare_conv2d_s16, prepare_depthwise_conv2d_s16
from ..kernels.elementwise_s16 import clamp_s16, convert_s8_s16, convert_s16_s8, prepare_add_s16, prepare_mul_s16
from ..kernels.fully_connected_s16 import prepare_batch_matmul_s16, prepare_fully_connected_s16
from ..kernels.lut_s16 import activation_s16, prepare_lut_s16
from ..kernels.pooling_s16 import prepare_pool_s16
from ..kernels.softmax_s16 import prepare_softmax_s16
from .operands import constant, fold_runs, with_rank
from .prepared import prepared

ACTIVATION_FUNCTIONS = ("sigmoid", "tanh")  # activation_s16's "function" attribute: 0, 1


def _conv(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    x = fold_runs(x, 4)
    run = prepared(op, ins[1:], x.shape[1:], lambda: prepare_conv2d_s16(
        x.shape[1:], constant(w), constant(bias), multipliers=constant(mult), shifts=constant(shift),
        stride=tuple(a["stride"]), padding=tuple(a["padding"]), dilation=tuple(a["dilation"]), act_min=a["act_min"],
        act_max=a["act_max"], output_hw=tuple(outs[0].shape[2:4])))
    return run(x)


def _depthwise(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    x = fold_runs(x, 4)
    run = prepared(op, ins[1:], x.shape[1:], lambda: prepare_depthwise_conv2d_s16(
        x.shape[1:], constant(w), constant(bias), multipliers=constant(mult), shifts=constant(shift),
        stride=tuple(a["stride"]), padding=tuple(a["padding"]), dilation=tuple(a["dilation"]),
        depth_multiplier=a["depth_multiplier"], act_min=a["act_min"], act_max=a["act_max"],
        output_hw=tuple(outs[0].shape[2:4])))
    return run(x)


def _fully_connected(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    x, w, bias, mult, shift = ins
    a = op.attrs
    run = prepared(op, ins[1:], (), lambda: prepare_fully_connected_s16(
        constant(w), constant(bias), multipliers=constant(mult), shifts=constant(shift), act_min=a["act_min"],
        act_max=a["act_max"]))
    return run(x.reshape(-1, w.shape[2]))


def _add(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    rank = outs[0].ndim - 1
    run = prepared(op, [], (), lambda: prepare_add_s16(**op.attrs))
    return run(with_rank(ins[0], rank), with_rank(ins[1], rank))


def _mul(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    rank = outs[0].ndim - 1
    run = prepared(op, [], (), lambda: prepare_mul_s16(**op.attrs))
    return run(with_rank(ins[0], rank), with_rank(ins[1], rank))


def _pool(kind: str):
    def run(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
        a = op.attrs
        x = fold_runs(ins[0], 4)
        pool = prepared(op, [], x.shape[1:], lambda: prepare_pool_s16(
            kind, x.shape[1:], tuple(a["kernel"]), tuple(a["stride"]), tuple(a["padding"]), a["act_min"],
            a["act_max"], tuple(a["output_hw"])))
        return pool(x)
    return run


def _softmax(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    run = prepared(op, ins[1:], (), lambda: prepare_softmax_s16(
        multiplier=op.attrs["multiplier"], shift=op.attrs["shift"], exp_lut=constant(ins[1]),
        one_by_one_lut=constant(ins[2])))
    return run(ins[0])


def _batch_matmul(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    a = op.attrs
    rank = outs[0].ndim - 1
    run = prepared(op, [], (), lambda: prepare_batch_matmul_s16(
        output_multiplier=a["output_multiplier"], output_shift=a["output_shift"], act_min=a["act_min"],
        act_max=a["act_max"], adj_x=bool(a["adj_x"]), adj_y=bool(a["adj_y"])))
    return run(with_rank(ins[0], rank), with_rank(ins[1], rank))


def _lut(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return prepared(op, ins[1:], (), lambda: prepare_lut_s16(constant(ins[1])))(ins[0])


def _activation(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    function = op.attrs["function"]
    if function not in range(len(ACTIVATION_FUNCTIONS)):
        raise ValueError(f"activation_s16: function must be 0 (sigmoid) or 1 (tanh), got {function!r}")
    return activation_s16(ins[0], left_shift=op.attrs["left_shift"], function=ACTIVATION_FUNCTIONS[function])


def _clamp(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return clamp_s16(ins[0], act_min=op.attrs["act_min"], act_max=op.attrs["act_max"])


def _to_s16(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return convert_s8_s16(ins[0], **op.attrs)


def _to_s8(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> np.ndarray:
    return convert_s16_s8(ins[0], **op.attrs)


S16_KERNELS = {
    "conv2d_s16": _conv,
    "depthwise_conv2d_s16": _depthwise,
    "fully_connected_s16": _fully_connected,
    "add_s16": _add,
    "mul_s16": _mul,
    "avgpool_s16": _pool("avg"),
    "maxpool_s16": _pool("max"),
    "softmax_s16": _softmax,
    "batch_matmul_s16": _batch_matmul,
    "lut_s16": _lut,
    "activation_s16": _activation,
    "clamp_s16": _clamp,
    "convert_s8_s16": _to_s16,
    "convert_s16_s8": _to_s8,
}
