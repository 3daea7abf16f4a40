"""The backend IR: tensors with shape, dtype and quantization, ops with CMSIS-NN parameters.

Precision is data here: a tensor's ``dtype`` and ``qparams`` say how it is stored, an op's
``kind`` says which kernel computes it and its ``precision`` ("a8w8", "a8w4", "a8", "fp32", ... see
:data:`PRECISIONS`) what that kernel's arithmetic is. Lowering builds a :class:`Graph`, the planner fills in
arena offsets, the program writer serializes it and the runtimes execute it.

Layout: a 4-D activation that torch sees as NCHW is stored NHWC; its ``shape`` is then the
NHWC shape and its ``layout`` is ``"nhwc"``. Every other tensor is ``"plain"`` (row-major in
torch's own dimension order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .targets import get_target

#: The value ranges of the quantized activation dtypes (int8, and A16W8's int16).
QUANTIZED_RANGES: dict[str, tuple[int, int]] = {"int8": (-128, 127), "int16": (-32768, 32767)}
DTYPES: dict[str, np.dtype] = {
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "float32": np.dtype(np.float32),
    # Index and mask tensors of fp32 fallback ops (embedding indices, comparisons, argmax).
    "int64": np.dtype(np.int64),
    "bool": np.dtype(np.bool_),
}

# Weights packed two per byte in CMSIS-NN's s4 layout (mcuforge.kernels.int4): constants only, whose ``data``
# is the packed int8 bytes, shape (ceil(numel / 2),), while the tensor's ``shape`` is the logical one.
INT4 = "int4"

LAYOUTS = ("plain", "nhwc")

# What an op computes in: activation bits, then weight bits for ops with weights. "a8w8": int8 activations
# and int8 weights; "a8w4": int8 activations, int4 weights; "a8": int8 activations, no weights (add, pooling,
# data movement of int8 values); "a16w8": int16 activations, int8 weights (the s16 conv / depthwise / fully
# connected); "a16": int16 activations, no weights (the other s16 kinds, the int8 <-> int16 conversions, data
# movement of int16 values); "fp32": a
# float32 computation (fp32 fallback ops, the quantize/dequantize at their boundaries, moving fp32 values).
PRECISIONS = ("fp32", "a8", "a8w8", "a8w4", "a16", "a16w8")


@dataclass(frozen=True)
class QParams:
    """Per-tensor affine quantization: real = scale * (q - zero_point)."""

    scale: float
    zero_point: int


@dataclass(frozen=True)
class TensorRef:
    """An op argument that refers to the op's ``inputs[index]`` (used by fp32 fallback ops)."""

    index: int


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    qparams: QParams | None = None
    data: np.ndarray | None = None  # constant value (stored in flash); None for activations
    layout: str = "plain"
    offset: int = -1  # arena offset, set by the planner (activations only)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return dtype_nbytes(self.dtype, self.numel)


def dtype_nbytes(dtype: str, numel: int) -> int:
    """Bytes of ``numel`` elements of ``dtype`` (int4: two per byte, an odd count rounded up)."""
    if dtype == INT4:
        return (int(numel) + 1) // 2
    return int(numel) * DTYPES[dtype].itemsize


@dataclass
class Op:
    """One kernel call.

    ``kind`` names the kernel (see :data:`OP_KINDS`); ``attrs`` holds its scalar parameters in
    CMSIS-NN's conventions; ``backend`` says where it runs ("int8" kernel or "fp32" fallback);
    ``precision`` what it computes in (:data:`PRECISIONS`; "" until set: :func:`op_precision` then
    derives it from the kind and the input dtypes); ``reason`` says why an op is not int8. ``debug``
    carries what the Inspector needs (module path, source line, original aten ops); it is written to
    the debug record, not the program.
    """

    kind: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    backend: str = "int8"
    reason: str = ""
    debug: dict[str, Any] = field(default_factory=dict)
    scratch_bytes: int = 0
    scratch_offset: int = -1  # arena offset of the scratch buffer, set by the planner (scratch_bytes > 0)
    precision: str = ""


@dataclass
class Graph:
    tensors: dict[str, Tensor]
    ops: list[Op]
    inputs: list[str]
    outputs: list[str]
    target: str = "cortex-m55"
    arena_bytes: int = 0  # set by the planner

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    @property
    def ram_bytes(self) -> int:
        """The RAM the runtime needs: the planned arena, activations and op scratch buffers alike --
        what the C runtime's ``mf_program_arena_bytes`` returns."""
        return self.arena_bytes

    @property
    def constant_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values() if t.is_constant)


#: The recurrent kinds and their gates per layer (weights (gates x H, .)).
RECURRENT_GATES = {"lstm_s8": 4, "gru_s8": 3}


def kernel_scratch_bytes(kind: str, weight_shape: Sequence[int], target: str, out_shape: Sequence[int] = (),
                         attrs: dict[str, Any] | None = None) -> int:
    """Scratch bytes an op of ``kind`` asks of the runtime (``Op.scratch_bytes``) on ``target``, exactly
    what the C kernels' optimized paths use; a program without it runs the portable path.

    conv2d_s8's im2col, per patch of kh * kw * filter channels (its depth): MVE holds an int8 patch and
    4 interleaved ones in 16-byte chunks, DSP 2 int16 patches and an int8 one: 5 patches rounded up to a
    multiple of 16 serve both; the scalar path (cortex-m3) 3 columns of int32 pixel pairs; the portable path
    (cortex-m0plus) none. depthwise_conv2d_s8 on the scalar path (``out_shape`` NHWC and the op's
    ``attrs`` needed), with rows along the longer output axis: the kh * kw taps, a ring of the rows the
    window spans and a row of zeros, each (ow - 1) * stride + (kw - 1) * dilation + 1 words of packed
    pixel pairs, and a row of ow (rounded up to even) sums, then for 3x3 windows (depth multiplier 1)
    that are strided or under 16 x 16 outputs 384 bytes of the pixel-major path's tables; none beyond
    128 taps or a 16-row span.
    add_s8 on the scalar path: its inputs' two tables of 256 int32 (an add of equal shapes uses them).
    The s4 kinds on the DSP and MVE paths: conv2d_s4 the same 5 patches with the patch size rounded up to 8
    (the DSP path widens a word of 8 packed weights at a time); fully_connected_s4 one input row widened
    to int16 (DSP); depthwise_conv2d_s4 its weights unpacked to int8.
    conv2d_s16 on the DSP and MVE paths: one int16 im2col patch (2 bytes per element).
    lstm_s8 / gru_s8 on every path (``weight_shape`` either (4H, .) / (3H, .) weight matrix): one batch row's
    int16 cell (hidden) state and four int16 gate vectors, 10 H bytes rounded up to 16; the kernel needs it."""
    if kind in RECURRENT_GATES:  # every target: one batch row's int16 state and 4 int16 vectors
        return (2 * 5 * (weight_shape[0] // RECURRENT_GATES[kind]) + 15) // 16 * 16

    path = get_target(target).kernel_path
    if kind == "conv2d_s8":
        _, kh, kw, ic = weight_shape
        depth = kh * kw * ic
        if path == "scalar":
            return 12 * depth
        return 5 * ((depth + 15) // 16 * 16) if path in ("dsp", "mve") else 0
    if kind == "conv2d_s4" and path in ("dsp", "mve"):
        _, kh, kw, ic = weight_shape
        return 5 * ((kh * kw * ic + 7) // 8 * 8)
    if kind == "fully_connected_s4" and path in ("dsp", "mve"):
        return 2 * ((weight_shape[1] + 7) // 8 * 8)
    if kind == "depthwise_conv2d_s4" and path in ("dsp", "mve"):
        return (int(np.prod(weight_shape)) + 3) // 4 * 4
    if kind == "add_s8" and path == "scalar":
        return 2048
    if kind == "conv2d_s16" and path in ("dsp", "mve"):  # one int16 im2col patch
        _, kh, kw, ic = weight_shape
        return (2 * kh * kw * ic + 15) // 16 * 16
    if kind == "depthwise_conv2d_s8" and path == "scalar":
        _, kh, kw, _ = weight_shape
        stride, dilation = (attrs or {}).get("stride", [1, 1]), (attrs or {}).get("dilation", [1, 1])
        oh, ow = out_shape[1], out_shape[2]
        small = max(stride) > 1 or (oh < 16 and ow < 16)  # where the pixel-major path runs (3x3)
        pixel_major = 4 * 96 if small and (kh, kw) == (3, 3) and (attrs or {}).get("depth_multiplier", 1) == 1 else 0
        if oh > ow:  # the kernel's view: rows along the longer output axis
            kh, kw, stride, dilation, ow = kw, kh, stride[::-1], dilation[::-1], oh
        taps, span = kh * kw, (kh - 1) * dilation[0] + 1
        if taps > 128 or span > 16:
            return 0
        row = (ow - 1) * stride[1] + (kw - 1) * dilation[1] + 1
        return 4 * (taps + (span + 1) * row + (ow + 1) // 2 * 2) + pixel_major
    return 0


# Op kinds whose kernels may write their output exactly onto an input (by position): a reshape copies
# nothing; the elementwise int8 and int16 kernels read element i of that input before writing element i of the
# output, and no element after it (mcuforge.plan writes them in place where it saves memory).
IN_PLACE_INPUTS: dict[str, tuple[int, ...]] = {
    "reshape": (0,), "clamp_s8": (0,), "lut_s8": (0,), "add_s8": (0, 1), "mul_s8": (0, 1),
    "clamp_s16": (0,), "lut_s16": (0,), "activation_s16": (0,), "add_s16": (0, 1), "mul_s16": (0, 1),
}


def arena_overlap_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why ``op``'s outputs would share arena bytes with its activation inputs or with each other, or
    None. Kernels read their inputs while they write their outputs, so every reader refuses a program
    where they overlap: the one exception is the planner's own, an output lying exactly on an input
    that its kind may write in place (:data:`IN_PLACE_INPUTS`)."""
    def span(name: str) -> tuple[int, int] | None:
        t = tensors.get(name)
        return None if not name or t is None or t.is_constant or t.nbytes == 0 else (t.offset, t.offset + t.nbytes)

    in_place = IN_PLACE_INPUTS.get(op.kind, ())
    outputs = [(name, span(name), False) for name in op.outputs]
    inputs = [(name, span(name), pos in in_place) for pos, name in enumerate(op.inputs)]
    for j, (out, o, _) in enumerate(outputs):
        for other, s, may_share in inputs + outputs[:j]:
            if o is None or s is None or not (o[0] < s[1] and s[0] < o[1]):
                continue
            if may_share and o == s:
                continue
            return (f"output {out!r} (arena bytes [{o[0]}, {o[1]})) overlaps {other!r} "
                    f"([{s[0]}, {s[1]})): the kernel would overwrite what it reads")
    return None


def scratch_size_problem(op: Op, tensors: dict[str, Tensor], target: str) -> str | None:
    """Why ``op.scratch_bytes`` does not fit its kernel, or None: a conv2d_s8's scratch is none (0, the
    portable path) or at least what :func:`kernel_scratch_bytes` plans for the program's ``target``; the
    writer, the Python reader and the C loader all refuse a smaller one (a plan and a kernel that
    disagree). An lstm_s8 / gru_s8 needs its scratch (the int16 state and gates): none is a problem too."""
    if op.kind in RECURRENT_GATES and len(op.inputs) >= 3 and op.inputs[2] in tensors:
        weight = tensors[op.inputs[2]].shape
        need = kernel_scratch_bytes(op.kind, weight, target) if len(weight) == 2 else 0
        if op.scratch_bytes < need:
            return f"scratch_bytes {op.scratch_bytes} is less than the {need} bytes its kernel needs"
        return None
    if op.kind != "conv2d_s8" or not op.scratch_bytes or len(op.inputs) < 2 or op.inputs[1] not in tensors:
        return None
    weight = tensors[op.inputs[1]].shape
    need = kernel_scratch_bytes(op.kind, weight, target) if len(weight) == 4 else 0
    if op.scratch_bytes < need:
        return f"scratch_bytes {op.scratch_bytes} is less than the {need} bytes its kernel needs (0: no scratch)"
    return None


def input_bytes(graph: Graph, inputs: Sequence[np.ndarray]) -> list[bytes]:
    """The graph inputs' bytes as the runtimes read them (program dtype and layout, little-endian),
    after checking each input's dtype and shape; a ValueError names the input that does not fit."""
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"program takes {len(graph.inputs)} inputs, got {len(inputs)}")
    data = []
    for name, value in zip(graph.inputs, inputs, strict=True):
        tensor, value = graph.tensors[name], np.asarray(value)
        dtype = DTYPES[tensor.dtype]
        if value.shape != tuple(tensor.shape) or value.dtype != dtype:
            raise ValueError(f"input {name!r}: expected {dtype}{list(tensor.shape)}, got "
                             f"{value.dtype}{list(value.shape)}")
        data.append(np.ascontiguousarray(value).astype(dtype.newbyteorder("<")).tobytes())
    return data


# Op kinds: a stable numeric id for the program file and the attribute names in file order.
# Attribute types: "int", "float", "ints" (list of int), "str", "any" (a generic value list,
# used by the fp32 fallback op). Inputs are listed for readers; optional ones end with "?".
OP_KINDS: dict[str, dict[str, Any]] = {
    "conv2d_s8": {
        "id": 1,
        "inputs": ["x", "weight", "bias?", "multipliers", "shifts"],
        "attrs": [
            ("input_offset", "int"), ("output_offset", "int"), ("stride", "ints"),
            ("padding", "ints"), ("dilation", "ints"), ("act_min", "int"), ("act_max", "int"),
        ],
    },
    "depthwise_conv2d_s8": {
        "id": 2,
        "inputs": ["x", "weight", "bias?", "multipliers", "shifts"],
        "attrs": [
            ("input_offset", "int"), ("output_offset", "int"), ("stride", "ints"),
            ("padding", "ints"), ("dilation", "ints"), ("depth_multiplier", "int"),
            ("act_min", "int"), ("act_max", "int"),
        ],
    },
    "fully_connected_s8": {
        "id": 3,
        "inputs": ["x", "weight", "bias?", "multipliers", "shifts"],
        "attrs": [("input_offset", "int"), ("output_offset", "int"), ("act_min", "int"), ("act_max", "int")],
    },
    "add_s8": {
        "id": 4,
        "inputs": ["a", "b"],
        "attrs": [
            ("a_offset", "int"), ("a_multiplier", "int"), ("a_shift", "int"),
            ("b_offset", "int"), ("b_multiplier", "int"), ("b_shift", "int"),
            ("left_shift", "int"), ("output_offset", "int"), ("output_multiplier", "int"),
            ("output_shift", "int"), ("act_min", "int"), ("act_max", "int"),
        ],
    },
    # arm_avgpool_s8 / arm_max_pool_s8: windows over in-bounds elements only; the output size is explicit
    # (output_hw, as CMSIS-NN takes it: torch's ceil_mode is one choice of it), every window must hit the input.
    "avgpool_s8": {
        "id": 5,
        "inputs": ["x"],
        "attrs": [
            ("kernel", "ints"), ("stride", "ints"), ("padding", "ints"),
            ("act_min", "int"), ("act_max", "int"), ("output_hw", "ints"),
        ],
    },
    "maxpool_s8": {
        "id": 6,
        "inputs": ["x"],
        "attrs": [
            ("kernel", "ints"), ("stride", "ints"), ("padding", "ints"),
            ("act_min", "int"), ("act_max", "int"), ("output_hw", "ints"),
        ],
    },
    "clamp_s8": {"id": 7, "inputs": ["x"], "attrs": [("act_min", "int"), ("act_max", "int")]},
    # Elementwise multiply (arm_elementwise_mul_s8); a and b broadcast like numpy over equal ranks.
    "mul_s8": {
        "id": 8,
        "inputs": ["a", "b"],
        "attrs": [
            ("a_offset", "int"), ("b_offset", "int"), ("output_offset", "int"), ("output_multiplier", "int"),
            ("output_shift", "int"), ("act_min", "int"), ("act_max", "int"),
        ],
    },
    # Softmax over the last stored axis (arm_softmax_s8); output scale 1/256, zero point -128.
    "softmax_s8": {"id": 9, "inputs": ["x"], "attrs": [("multiplier", "int"), ("shift", "int"), ("diff_min", "int")]},
    # Constant pad: pads = (before, after) per stored dim, flattened; pad_value is int8.
    "pad_s8": {"id": 10, "inputs": ["x"], "attrs": [("pads", "ints"), ("pad_value", "int")]},
    # Concatenation along a stored axis; all inputs share the output's quantization (byte copy).
    "concat_s8": {"id": 11, "inputs": ["*"], "attrs": [("axis", "int")]},
    # arm_batch_matmul_s8: lhs (..., M, K) [adj_x: (..., K, M)], rhs (..., K, N) [adj_y: (..., N, K)].
    "batch_matmul_s8": {
        "id": 12,
        "inputs": ["lhs", "rhs"],
        "attrs": [
            ("lhs_offset", "int"), ("rhs_offset", "int"), ("output_offset", "int"), ("output_multiplier", "int"),
            ("output_shift", "int"), ("act_min", "int"), ("act_max", "int"), ("adj_x", "int"), ("adj_y", "int"),
        ],
    },
    # arm_transpose_conv_s8: NHWC, OHWI weights, per-channel requantization; output size = output shape.
    "transpose_conv2d_s8": {
        "id": 13,
        "inputs": ["x", "weight", "bias?", "multipliers", "shifts"],
        "attrs": [
            ("input_offset", "int"), ("output_offset", "int"), ("stride", "ints"), ("padding", "ints"),
            ("act_min", "int"), ("act_max", "int"),
        ],
    },
    # Table activation: out = table[x + 128], table int8[256].
    "lut_s8": {"id": 14, "inputs": ["x", "table"], "attrs": []},
    # Data movement, any element type.
    "reshape": {"id": 20, "inputs": ["x"], "attrs": []},
    "transpose": {"id": 21, "inputs": ["x"], "attrs": [("perm", "ints")]},
    # x[begin:end:step] per stored dim of x; the output may drop size-1 dims (same elements, same order).
    "slice": {"id": 22, "inputs": ["x"], "attrs": [("begin", "ints"), ("end", "ints"), ("step", "ints")]},
    # Precision boundaries of the fp32 fallback.
    "quantize": {"id": 30, "inputs": ["x"], "attrs": [("scale", "float"), ("zero_point", "int")]},
    "dequantize": {"id": 31, "inputs": ["x"], "attrs": [("scale", "float"), ("zero_point", "int")]},
    # fp32 fallback: an aten op with its arguments (TensorRef for tensor arguments) and its position in the
    # C runtime's fp32 table (mcuforge.cruntime.aten_table_index; -1 for an op the table does not have).
    "aten_fp32": {
        "id": 40, "inputs": ["*"],
        "attrs": [("target", "str"), ("args", "any"), ("kwargs", "any"), ("table_index", "int")],
    },
    # A subgraph compiled for an NPU (Ethos-U, by Vela): input_count activations, then the constant blobs
    # command stream, weights and (optional) TOSA flatbuffer; see mcuforge.program.delegate and docs/format.md.
    "delegate": {
        "id": 50, "inputs": ["*"],
        "attrs": [
            ("npu", "str"), ("input_count", "int"), ("input_offsets", "ints"), ("output_offsets", "ints"),
            ("npu_cycles", "int"), ("sram_bytes", "int"), ("flash_bytes", "int"), ("macs", "int"),
        ],
    },
}

# int4 weights (dtype "int4", CMSIS-NN's s4 packing) with int8 activations: the inputs, attributes and
# arithmetic of the s8 kinds -- arm_convolve_s4 (any groups, as conv2d_s8), arm_depthwise_conv_s4,
# arm_fully_connected_s4 (per-tensor; length-O multipliers and shifts requantize per channel as the
# per-channel s8 kernel does). fully_connected_per_channel_s8 is arm_fully_connected_per_channel_s8:
# multipliers and shifts of length O (fully_connected_s8 is the per-tensor arm_fully_connected_s8; it
# still reads length-O ones, as format 1.0 files hold them).
for _kind, _like, _id in (("conv2d_s4", "conv2d_s8", 15), ("depthwise_conv2d_s4", "depthwise_conv2d_s8", 16),
                          ("fully_connected_s4", "fully_connected_s8", 17),
                          ("fully_connected_per_channel_s8", "fully_connected_s8", 18)):
    OP_KINDS[_kind] = {**OP_KINDS[_like], "id": _id}

# Optional trailing attributes (format 3.1): an op may leave them out (its attrs, and its record in the file, then
# end before them) and its kernel takes the default given here; the writer stores them only where they differ from
# it, so programs without them are read by every 3.x reader. fully_connected_s8 and its per-channel form take
# CMSIS-NN's fc_params->filter_offset, the negated weight zero point in [-127, 128] (the compiler's weights are
# symmetric: 0, left out).
OPTIONAL_ATTRS: dict[str, dict[str, Any]] = {}
for _kind in ("fully_connected_s8", "fully_connected_per_channel_s8"):
    OP_KINDS[_kind] = {**OP_KINDS[_kind], "attrs": [*OP_KINDS[_kind]["attrs"], ("filter_offset", "int")]}
    OPTIONAL_ATTRS[_kind] = {"filter_offset": 0}

# int16 activations (A16W8: symmetric int16, zero point 0, so no offsets), CMSIS-NN's s16 kernels. The weighted
# kinds take int8 weights, an optional int64 bias, int32 multipliers and int8 shifts (in [-31, 7], the range
# of arm_nn_requantize_s64); fully_connected_s16 reads length-1 (arm_fully_connected_s16) or length-O ones.
_S16_ACT = [("act_min", "int"), ("act_max", "int")]
_S16_WINDOW = [("stride", "ints"), ("padding", "ints"), ("dilation", "ints")]
_S16_POOL = [("kernel", "ints"), ("stride", "ints"), ("padding", "ints"), *_S16_ACT, ("output_hw", "ints")]
OP_KINDS.update({
    "conv2d_s16": {"id": 60, "inputs": ["x", "weight", "bias?", "multipliers", "shifts"],
                   "attrs": [*_S16_WINDOW, *_S16_ACT]},
    "depthwise_conv2d_s16": {"id": 61, "inputs": ["x", "weight", "bias?", "multipliers", "shifts"],
                             "attrs": [*_S16_WINDOW, ("depth_multiplier", "int"), *_S16_ACT]},
    "fully_connected_s16": {"id": 62, "inputs": ["x", "weight", "bias?", "multipliers", "shifts"], "attrs": _S16_ACT},
    # arm_elementwise_add_s16 (TFLite int16 ADD parameters, left_shift 15); a and b broadcast like numpy.
    "add_s16": {"id": 63, "inputs": ["a", "b"], "attrs": [
        ("a_multiplier", "int"), ("a_shift", "int"), ("b_multiplier", "int"), ("b_shift", "int"),
        ("left_shift", "int"), ("output_multiplier", "int"), ("output_shift", "int"), *_S16_ACT]},
    "mul_s16": {"id": 64, "inputs": ["a", "b"],
                "attrs": [("output_multiplier", "int"), ("output_shift", "int"), *_S16_ACT]},
    "avgpool_s16": {"id": 65, "inputs": ["x"], "attrs": _S16_POOL},
    "maxpool_s16": {"id": 66, "inputs": ["x"], "attrs": _S16_POOL},
    # arm_softmax_s16 over the last stored axis with its two int16[513] tables; output scale 1/32768.
    "softmax_s16": {"id": 67, "inputs": ["x", "exp_lut", "one_by_one_lut"],
                    "attrs": [("multiplier", "int"), ("shift", "int")]},
    "batch_matmul_s16": {"id": 68, "inputs": ["lhs", "rhs"], "attrs": [
        ("output_multiplier", "int"), ("output_shift", "int"), *_S16_ACT, ("adj_x", "int"), ("adj_y", "int")]},
    # Interpolated int16[513] table (mcuforge.kernels.lut_s16).
    "lut_s16": {"id": 69, "inputs": ["x", "table"], "attrs": []},
    # arm_nn_activation_s16: function 0 sigmoid, 1 tanh; Q3.12 input shifted left by left_shift, Q0.15 output.
    "activation_s16": {"id": 70, "inputs": ["x"], "attrs": [("function", "int"), ("left_shift", "int")]},
    "clamp_s16": {"id": 71, "inputs": ["x"], "attrs": _S16_ACT},
    # Where int8 and int16 values meet: requantizing casts (arm_nn_requantize arithmetic).
    "convert_s8_s16": {"id": 72, "inputs": ["x"],
                       "attrs": [("input_offset", "int"), ("multiplier", "int"), ("shift", "int")]},
    "convert_s16_s8": {"id": 73, "inputs": ["x"],
                       "attrs": [("output_offset", "int"), ("multiplier", "int"), ("shift", "int")]},
})

# Recurrent layers as one op (ids 80-83). lstm_s8: CMSIS-NN's arm_lstm_unidirectional_s8, batch first
# (N, T, I) -> (N, T, H) from the zero state; int8 weights (4H, I) and (4H, H) in torch's gate order
# (i, f, g, o), int32 effective biases (zero points folded in), one multiplier/shift per gate and matrix,
# int16 gates and cell state (scale 2^cell_scale_power); scratch of int16 cell state and gates.
OP_KINDS.update({
    "lstm_s8": {"id": 80, "inputs": ["x", "w_ih", "w_hh", "input_bias", "hidden_bias"], "attrs": [
        ("input_multipliers", "ints"), ("input_shifts", "ints"), ("hidden_multipliers", "ints"),
        ("hidden_shifts", "ints"), ("forget_to_cell_multiplier", "int"), ("forget_to_cell_shift", "int"),
        ("input_to_cell_multiplier", "int"), ("input_to_cell_shift", "int"), ("output_multiplier", "int"),
        ("output_shift", "int"), ("output_offset", "int"), ("cell_scale_power", "int"), ("cell_clip", "int")]},
    # gru_s8: a GRU layer in the same style (mcuforge.kernels.gru), gates (r, z, n), int16 Q0.15 hidden state.
    "gru_s8": {"id": 81, "inputs": ["x", "w_ih", "w_hh", "input_bias", "hidden_bias"], "attrs": [
        ("input_multipliers", "ints"), ("input_shifts", "ints"), ("hidden_multipliers", "ints"),
        ("hidden_shifts", "ints"), ("output_multiplier", "int"), ("output_shift", "int"), ("output_offset", "int")]},
})

OP_KIND_BY_ID = {spec["id"]: name for name, spec in OP_KINDS.items()}

# The precisions an op of each kind may record in the program (the readers check it); kinds not listed
# here are int8 kernels without weights: "a8". Data movement takes the precision of the values it moves.
KIND_PRECISIONS: dict[str, tuple[str, ...]] = {
    "conv2d_s8": ("a8w8",), "depthwise_conv2d_s8": ("a8w8",), "fully_connected_s8": ("a8w8",),
    "transpose_conv2d_s8": ("a8w8",), "fully_connected_per_channel_s8": ("a8w8",),
    "conv2d_s4": ("a8w4",), "depthwise_conv2d_s4": ("a8w4",), "fully_connected_s4": ("a8w4",),
    "conv2d_s16": ("a16w8",), "depthwise_conv2d_s16": ("a16w8",), "fully_connected_s16": ("a16w8",),
    # The other s16 kernels, and the conversions where int8 and int16 values meet (int16 on one side).
    **{k: ("a16",) for k in ("add_s16", "mul_s16", "avgpool_s16", "maxpool_s16", "softmax_s16", "batch_matmul_s16",
                             "lut_s16", "activation_s16", "clamp_s16", "convert_s8_s16", "convert_s16_s8")},
    "reshape": ("a8", "a16", "fp32"), "transpose": ("a8", "a16", "fp32"), "slice": ("a8", "a16", "fp32"),
    "quantize": ("fp32",), "dequantize": ("fp32",), "aten_fp32": ("fp32",),
    "delegate": ("a8w8",),  # an int8 TOSA subgraph on the NPU
    "lstm_s8": ("a8w8",), "gru_s8": ("a8w8",),  # int8 in, out and weights (the int16 state stays inside)
}


# The kinds whose weights (input 1) are int4: the only place an int4 tensor may appear.
INT4_WEIGHT_KINDS = ("conv2d_s4", "depthwise_conv2d_s4", "fully_connected_s4")
#: The width changes the compiler inserts where int8 and int16 layers meet; each is counted in the module on its
#: int16 side (lower/to_ir.py), but is not what that layer runs in nor its output.
WIDTH_CONVERSIONS = ("convert_s8_s16", "convert_s16_s8")


def kind_precisions(kind: str) -> tuple[str, ...]:
    """The precisions an op of ``kind`` may carry (the first is the kernel's own)."""
    return KIND_PRECISIONS.get(kind, ("a8",))


def op_precision(op: Op, tensors: Mapping[str, Tensor]) -> str:
    """``op.precision``, or when unset (an op built by hand, a format 1.0 file) what its kind and the dtype of
    its first input say: the kernel's own precision; for data movement, that of the values it moves."""
    if op.precision:
        return op.precision
    allowed = kind_precisions(op.kind)
    if len(allowed) == 1:
        return allowed[0]
    dtype = tensors[op.inputs[0]].dtype if op.inputs and op.inputs[0] in tensors else "float32"
    return {"int8": "a8", "int16": "a16"}.get(dtype, "fp32")
