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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .kinds import KINDS, kinds_where
from .kinds.scratch import FORMULAS, OPTIONAL_SCRATCH, ScratchFormula, round_up
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
    # Elements from one pixel's channels to the next's (a 4-D int8 NHWC activation written into its channel slice
    # of a concat's output, mcuforge.plan's concat by placement: the concat's channel count); 0: dense.
    pitch: int = 0

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def numel(self) -> int:
        return math.prod(int(d) for d in self.shape)  # not np.prod: the planner asks it ~10^4 times a candidate

    @property
    def nbytes(self) -> int:
        return dtype_nbytes(self.dtype, self.numel)


def arena_extent(t: Tensor) -> int:
    """The arena bytes ``t`` spans from its offset: ``nbytes``, or for a pitched tensor (``Tensor.pitch``) up to
    its last pixel's last channel (the bytes between belong to the other slices of the concat's output)."""
    if not t.pitch or not t.numel:
        return t.nbytes
    return (t.numel // t.shape[-1] - 1) * t.pitch + t.shape[-1]


#: The kinds whose kernels (Python, C portable, DSP, MVE, scalar) take a pitched output (``Tensor.pitch``): they
#: write pixel p's channels at ``out + p * pitch``.
PITCHED_OUTPUT_KINDS = ("conv2d_s8", "avgpool_s8", "maxpool_s8")


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
    in_place: bool = False  # written over its input 0: a kind of plan.IN_PLACE_IF_CHOSEN, plan.choose_in_place;
    # a concat_s8: its producers write into its output (plan.choose_concat_placement)


@dataclass
class Graph:
    tensors: dict[str, Tensor]
    ops: list[Op]
    inputs: list[str]
    outputs: list[str]
    target: str = "cortex-m55"
    arena_bytes: int = 0  # set by the planner
    # (name, start, bytes) of each RAM region's arena in the arena's offset space when the program spans
    # several (mcuforge.regions.place); empty: one arena
    regions: tuple[tuple[str, int, int], ...] = ()
    # the arena offset the constants section is copied to at mf_init (a board whose constants live in a RAM
    # region, mcuforge.regions.place); -1: read in place from the program file
    constants_at: int = -1
    # graph input -> (the tensor whose allocation it shares, its byte offset there): a patched chain's output
    # placed over the input's dead bytes (mcuforge.plan.input_overlap proves it); set by the planner
    overlaps: dict[str, tuple[str, int]] = field(default_factory=dict)

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
RECURRENT_GATES = {s.name: s.recurrent_gates for s in KINDS if s.recurrent_gates}


def kernel_scratch_bytes(kind: str, weight_shape: Sequence[int], target: str, out_shape: Sequence[int] = (),
                         attrs: dict[str, Any] | None = None) -> int:
    """Scratch bytes an op of ``kind`` asks of the runtime (``Op.scratch_bytes``) on ``target``, exactly
    what the C kernels' optimized paths use; a program without it runs the portable path. The formula of each
    kind and kernel path is written once, in :mod:`mcuforge.kinds.scratch` (what each holds); the C kernels
    call the same formulas (csrc/runtime/kind_scratch.h). Here: the shape quantities they take.
    ``weight_shape``: the weight (OHWI for the convolutions, (4H, .) / (3H, .) for lstm_s8 / gru_s8);
    depthwise_conv2d_s8 also needs ``out_shape`` (NHWC) and the op's ``attrs``."""
    path = get_target(target).kernel_path
    formulas = [f for f in FORMULAS if kind in f.kinds and path in f.paths]
    if not formulas:
        return 0
    (formula,) = formulas  # one per kind and path
    if kind in RECURRENT_GATES:
        return formula(hidden=weight_shape[0] // RECURRENT_GATES[kind])
    if kind in ("conv2d_s8", "conv2d_s4", "conv2d_s16"):
        oc, kh, kw, ic = weight_shape
        extra = {"filters": oc, "window": kh * kw}  # conv2d_s4's unpacked filters (MVE), conv2d_s8_dsp's
        return formula(depth=kh * kw * ic, **{k: v for k, v in extra.items() if k in formula.args})
    if kind == "fully_connected_s4":
        return formula(depth=weight_shape[1])
    if kind == "depthwise_conv2d_s4":
        return formula(numel=int(np.prod(weight_shape)))
    if kind == "depthwise_conv2d_s8" and formula.name == "depthwise_conv2d_s8_dwp":
        return _depthwise_dwp_scratch(formula, weight_shape, out_shape, attrs or {})
    if kind == "depthwise_conv2d_s8":
        return _depthwise_rows_scratch(formula, weight_shape, out_shape, attrs or {})
    return formula()


def scratch_plans(kind: str, weight_shape: Sequence[int], target: str) -> list[int]:
    """The scratch plans a convolution of ``kind`` may be given on ``target`` (OHWI ``weight_shape``), largest
    first: what :func:`kernel_scratch_bytes` plans, then where the faster paths' plans are optional
    (mcuforge.kinds.scratch.OPTIONAL_SCRATCH) the smaller plans of slower paths; the last is the least."""
    plans = [kernel_scratch_bytes(kind, weight_shape, target)]
    oc, kh, kw, ic = weight_shape
    quantities = {"depth": kh * kw * ic, "filters": oc, "window": kh * kw}
    for name in OPTIONAL_SCRATCH.get((kind, get_target(target).kernel_path), ()):
        formula = next(f for f in FORMULAS if f.name == name)
        plans.append(formula(**{k: v for k, v in quantities.items() if k in formula.args}))
    return sorted(set(plans), reverse=True)


def least_scratch_bytes(kind: str, weight_shape: Sequence[int], target: str) -> int:
    """The least scratch a convolution of ``kind`` may be given on ``target`` (OHWI ``weight_shape``): the
    last of :func:`scratch_plans`; the readers refuse less."""
    return scratch_plans(kind, weight_shape, target)[-1]


#: The fewest windows a row of the channel-planar path at stride 2 takes (depthwise_conv2d_s8.c DWP2_MIN).
DWP2_MIN = 12


def _depthwise_dwp_scratch(formula: ScratchFormula, weight_shape: Sequence[int], out_shape: Sequence[int],
                           attrs: dict[str, Any]) -> int:
    """depthwise_conv2d_s8 on the DSP path: the channel-planar 3x3 path's rings where the kernel may take it
    (depthwise_conv2d_s8.c dw3_group / dwp_ok): 3x3 windows, depth multiplier 1, channels a multiple of 4, the
    view's rows (along the longer output axis, or the other when that one's stride is not 1 or 2 or it is
    dilated) of stride 1 and 8 to 53 windows or of stride 2 and DWP2_MIN to 27 windows, no dilation, 16 outputs
    or more. Elsewhere none (the kernel's
    other paths keep their buffers on the stack)."""
    _, kh, kw, ch = weight_shape
    stride, dilation = list(attrs.get("stride", [1, 1])), list(attrs.get("dilation", [1, 1]))
    if (kh, kw) != (3, 3) or attrs.get("depth_multiplier", 1) != 1 or ch % 4 or len(out_shape) != 4:
        return 0
    batch, oh, ow = out_shape[0], out_shape[1], out_shape[2]
    if batch * oh * ow < 16:
        return 0
    axis = 0 if oh > ow else 1  # the image axis along the view's rows

    def view_ok(a: int) -> bool:
        return dilation[a] == 1 and stride[a] in (1, 2)

    if not view_ok(axis):
        axis = 1 - axis
        if not view_ok(axis):
            return 0
    n = out_shape[1 + axis]
    if dilation != [1, 1]:
        return 0
    if stride[axis] == 1 and 8 <= n <= 53:
        return formula(cols=round_up(n + 3, 4))
    if stride[axis] == 2 and DWP2_MIN <= n <= 27:  # dwp2: the rows' 2 n + 2 columns in the 56 of a ring row
        return formula(cols=round_up(2 * n + 2, 4))
    return 0


def depthwise_in_place_fast(weight_shape: Sequence[int], in_shape: Sequence[int], out_shape: Sequence[int],
                            attrs: dict[str, Any], target: str) -> bool:
    """Whether a depthwise_conv2d_s8 written over its input (``Op.in_place``) runs as fast as out of place on
    ``target``: the DSP channel-planar 3x3 path runs over the input there (depthwise_conv2d_s8.c dw_dsp_in_place,
    which states why that is exact): its rings are planned (:func:`kernel_scratch_bytes` plans them), batch 1,
    the view's padding across its rows at most 2, and the output no wider than the input (rows along the image's
    rows) or of the input's size (rows along its columns). Elsewhere the in-place kernel is the portable one."""
    if get_target(target).kernel_path != "dsp" or len(in_shape) != 4 or len(out_shape) != 4 or in_shape[0] != 1:
        return False
    if not kernel_scratch_bytes("depthwise_conv2d_s8", weight_shape, target, out_shape, attrs):
        return False
    oh, ow = out_shape[1], out_shape[2]
    stride, dilation = list(attrs.get("stride", [1, 1])), list(attrs.get("dilation", [1, 1]))
    axis = 0 if oh > ow else 1  # as _depthwise_dwp_scratch: the image axis along the view's rows
    if not (dilation[axis] == 1 and stride[axis] in (1, 2)):
        axis = 1 - axis
    if list(attrs.get("padding", [0, 0]))[1 - axis] > 2:
        return False
    if axis == 0:  # view rows are image columns: the output must be the input's size
        return (oh, ow) == (in_shape[1], in_shape[2])
    return ow <= in_shape[2]


def _depthwise_rows_scratch(formula: ScratchFormula, weight_shape: Sequence[int], out_shape: Sequence[int],
                            attrs: dict[str, Any]) -> int:
    """depthwise_conv2d_s8 on the scalar path: the rows formula in the kernel's view (rows along the longer output
    axis; none beyond 128 taps or a 16-row span), then for 3x3 windows (depth multiplier 1) that are strided or
    under 16 x 16 outputs 384 bytes of the pixel-major path's tables."""
    _, kh, kw, _ = weight_shape
    stride, dilation = attrs.get("stride", [1, 1]), attrs.get("dilation", [1, 1])
    oh, ow = out_shape[1], out_shape[2]
    small = max(stride) > 1 or (oh < 16 and ow < 16)  # where the pixel-major path runs (3x3)
    pixel_major = 4 * 96 if small and (kh, kw) == (3, 3) and attrs.get("depth_multiplier", 1) == 1 else 0
    if oh > ow:  # the kernel's view: rows along the longer output axis
        kh, kw, stride, dilation, ow = kw, kh, stride[::-1], dilation[::-1], oh
    taps, span = kh * kw, (kh - 1) * dilation[0] + 1
    if taps > 128 or span > 16:
        return 0
    row = (ow - 1) * stride[1] + (kw - 1) * dilation[1] + 1
    return formula(taps=taps, span=span, row=row, pairs=(ow + 1) // 2) + pixel_major


# Op kinds whose kernels may write their output exactly onto an input (by position): a reshape copies
# nothing; the elementwise int8 and int16 kernels read element i of that input before writing element i of the
# output, and no element after it (mcuforge.plan writes them in place where it saves memory).
IN_PLACE_INPUTS: dict[str, tuple[int, ...]] = {s.name: s.in_place for s in KINDS if s.in_place}


def arena_overlap_problem(op: Op, tensors: dict[str, Tensor]) -> str | None:
    """Why ``op``'s outputs would share arena bytes with its activation inputs or with each other, or
    None. Kernels read their inputs while they write their outputs, so every reader refuses a program
    where they overlap: the one exception is the planner's own, an output starting at the first byte of an
    input that its kind may write in place (:data:`IN_PLACE_INPUTS`) and ending inside it (a strided
    depthwise convolution's output is smaller than its input); a ``concat_s8`` input on its own slice of the
    output (:func:`concat_slice_start`: concat by placement, the kernel copies nothing); a ``slice`` marked
    ``outside`` whose output misses every byte of its box (:func:`slice_box_bytes`: the planner reused dead rows
    of an overlapped graph input, ``mcuforge.plan.input_bands``)."""
    def span(name: str) -> tuple[int, int] | None:
        t = tensors.get(name)
        if not name or t is None or t.is_constant or t.nbytes == 0:
            return None
        return t.offset, t.offset + arena_extent(t)

    in_place = IN_PLACE_INPUTS.get(op.kind, ())
    outputs = [(name, span(name), False) for name in op.outputs]
    inputs = [(name, span(name), pos in in_place) for pos, name in enumerate(op.inputs)]
    for j, (out, o, _) in enumerate(outputs):
        for other, s, may_share in inputs + outputs[:j]:
            if o is None or s is None or not (o[0] < s[1] and s[0] < o[1]):
                continue
            if may_share and o[0] == s[0] and o[1] <= s[1]:
                continue
            if j == 0 and other in op.inputs and s[1] <= o[1] and concat_slice_start(op, tensors, other) == s[0] - o[0]:
                continue
            if (j == 0 and other in op.inputs and s[1] <= o[1] and tensors[other].pitch
                    and concat_channel_start(op, tensors, other) == s[0] - o[0]):
                continue
            if j == 0 and other == op.inputs[0] and op.kind == "slice" and op.attrs.get("outside") == 1:
                box = slice_box_bytes(op, tensors[other])
                if box is not None and all(b <= o[0] - s[0] or o[1] - s[0] <= a for a, b in box):
                    continue
            return (f"output {out!r} (arena bytes [{o[0]}, {o[1]})) overlaps {other!r} "
                    f"([{s[0]}, {s[1]})): the kernel would overwrite what it reads")
    return None


def slice_box_bytes(op: Op, x: Tensor) -> list[tuple[int, int]] | None:
    """The bytes of ``x`` (from its first byte) a ``slice`` reads: one range per (batch, row) of its box, from its
    first column's first channel to its last column's last channel; None unless ``x`` is 4-D and the box has unit
    steps and 0 <= begin < end <= extent per dim (what the C loader's slice_outside accepts too)."""
    begin, end, step = (list(op.attrs.get(k, ())) for k in ("begin", "end", "step"))
    if len(x.shape) != 4 or not len(begin) == len(end) == len(step) == 4 or any(s != 1 for s in step):
        return None
    if any(not 0 <= b < e <= n for b, e, n in zip(begin, end, x.shape, strict=True)):
        return None
    _, h, w, c = x.shape
    item = x.nbytes // max(x.numel, 1)
    spans = []
    for n in range(begin[0], end[0]):
        for r in range(begin[1], end[1]):
            row = (n * h + r) * w
            spans.append((((row + begin[2]) * c + begin[3]) * item, ((row + end[2] - 1) * c + end[3]) * item))
    return spans


def concat_slice_start(op: Op, tensors: dict[str, Tensor], name: str) -> int | None:
    """Where input ``name`` of a ``concat_s8`` starts inside its output, in bytes, when that slice is contiguous
    (every axis before the concat axis has extent 1: an outer-axis concat), else None. A producer may then write
    the input straight into the output's bytes there (``mcuforge.plan``, concat by placement)."""
    axis = op.attrs.get("axis")
    if op.kind != "concat_s8" or len(op.outputs) != 1 or not isinstance(axis, int) or op.inputs.count(name) != 1:
        return None
    if any(n not in tensors for n in op.inputs):
        return None
    k = op.inputs.index(name)
    shape = tensors[name].shape
    if not 0 <= axis < len(shape) or any(d != 1 for d in shape[:axis]):
        return None
    return sum(tensors[n].nbytes for n in op.inputs[:k])


def concat_channel_start(op: Op, tensors: dict[str, Tensor], name: str) -> int | None:
    """Where input ``name`` of a ``concat_s8`` along the channels of 4-D int8 NHWC tensors starts in each pixel of
    the output (the channels of the inputs before it), else None. A producer of a kind of
    :data:`PITCHED_OUTPUT_KINDS` may then write the input pitched (``Tensor.pitch``: the output's channel count)
    straight into that slice (``mcuforge.plan``, concat by placement)."""
    axis = op.attrs.get("axis")
    if op.kind != "concat_s8" or len(op.outputs) != 1 or axis != 3 or op.inputs.count(name) != 1:
        return None
    if any(n not in tensors for n in op.inputs) or op.outputs[0] not in tensors:
        return None
    out = tensors[op.outputs[0]]
    ins = [tensors[n] for n in op.inputs]
    if any(len(t.shape) != 4 or t.dtype != "int8" or t.layout != "nhwc" for t in [out, *ins]):
        return None
    if any(t.shape[:3] != out.shape[:3] for t in ins) or sum(t.shape[3] for t in ins) != out.shape[3]:
        return None
    k = op.inputs.index(name)
    return sum(t.shape[3] for t in ins[:k])


def pitch_problem(tensors: dict[str, Tensor], ops: list[Op], graph_io: list[str]) -> str | None:
    """Why the graph's pitched tensors (``Tensor.pitch``) cannot be run, or None. A pitched tensor is a 4-D int8
    NHWC activation with a pitch of at least its channel count, written by one op of a kind of
    :data:`PITCHED_OUTPUT_KINDS` (its only output) and read by one ``concat_s8`` alone, on its channel slice of
    that concat's output (:func:`concat_channel_start`), whose channel count is the pitch; not a graph input or
    output. Every other kernel reads and writes dense tensors."""
    pitched = {n for n, t in tensors.items() if t.pitch}
    if not pitched:
        return None
    for n in sorted(pitched):
        t = tensors[n]
        if t.is_constant or t.dtype != "int8" or len(t.shape) != 4 or t.layout != "nhwc" or t.pitch < t.shape[3]:
            return (f"tensor {n!r} has pitch {t.pitch}: only a 4-D int8 NHWC activation may, with a pitch of at "
                    f"least its channel count ({t.shape[-1] if t.shape else 0})")
        if n in graph_io:
            return f"tensor {n!r} has pitch {t.pitch} and is a graph input or output (those are dense)"
    writers: dict[str, int] = {}
    readers: dict[str, int] = {}
    for i, op in enumerate(ops):
        for pos, n in enumerate(op.outputs):
            if n not in pitched:
                continue
            if op.kind not in PITCHED_OUTPUT_KINDS or pos or len(op.outputs) != 1 or n in writers:
                return (f"op {i} ({op.kind}) writes pitched tensor {n!r}: only {', '.join(PITCHED_OUTPUT_KINDS)} "
                        "write a pitched output, one op each")
            writers[n] = i
        for n in op.inputs:
            if n not in pitched:
                continue
            out = tensors.get(op.outputs[0]) if op.outputs else None
            if (op.kind != "concat_s8" or n in readers or out is None or out.pitch or len(out.shape) != 4
                    or out.shape[3] != tensors[n].pitch or concat_channel_start(op, tensors, n) is None
                    or tensors[n].offset - out.offset != concat_channel_start(op, tensors, n)):
                return (f"op {i} ({op.kind}) reads pitched tensor {n!r}: only one concat_s8 along the channels may, "
                        "the tensor on its slice of the output, the pitch the output's channel count")
            readers[n] = i
    for n in sorted(pitched):
        if n not in writers or n not in readers or writers[n] > readers[n]:
            return f"pitched tensor {n!r} is not written by an op before the concat_s8 that reads it"
    return None


def scratch_size_problem(op: Op, tensors: dict[str, Tensor], target: str) -> str | None:
    """Why ``op.scratch_bytes`` does not fit its kernel, or None: a conv2d_s8's scratch is none (0, the
    portable path) or at least what :func:`kernel_scratch_bytes` plans for the program's ``target`` (or the
    smaller plan of mcuforge.kinds.scratch.OPTIONAL_SCRATCH, whose slower path the kernel then runs); the
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
    need = least_scratch_bytes(op.kind, weight, target) if len(weight) == 4 else 0
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


# Op kinds: derived from mcuforge.kinds (one KindSpec per kind, the place to read and to add one). OP_KINDS gives
# each kind's stable numeric id for the program file, its inputs (optional ones end with "?", ["*"]: any number)
# and its attribute names and types in file order ("int", "float", "ints", "str", "any").
OP_KINDS: dict[str, dict[str, Any]] = {
    s.name: {"id": s.id, "inputs": list(s.inputs), "attrs": list(s.attrs)} for s in KINDS
}
OP_KIND_BY_ID = {spec["id"]: name for name, spec in OP_KINDS.items()}

# Optional trailing attributes (format 3.1): an op may leave them out (its attrs, and its record in the file, then
# end before them) and its kernel takes the default given here; the writer stores them only where they differ from
# it, so programs without them are read by every 3.x reader.
OPTIONAL_ATTRS: dict[str, dict[str, Any]] = {s.name: dict(s.optional_attrs) for s in KINDS if s.optional_attrs}

# The precisions an op of each kind may record in the program (the readers check it). Data movement takes the
# precision of the values it moves.
KIND_PRECISIONS: dict[str, tuple[str, ...]] = {s.name: s.precisions for s in KINDS}


# The kinds whose weights (input 1) are int4: the only place an int4 tensor may appear.
INT4_WEIGHT_KINDS = kinds_where(int4_weights=True)
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
