"""Lower int8 backend-IR ops to a TOSA 1.0 (INT profile) graph, serialized with ``tosa_serializer``.

Each IR op becomes a few TOSA ops that compute the same bytes as mcuforge's host kernels (the
executable statement of CMSIS-NN's math, see ``mcuforge.kernels``):

- conv2d_s8 / depthwise_conv2d_s8 / fully_connected_s8: CONV2D / DEPTHWISE_CONV2D (FC as a 1x1
  CONV2D) with the input zero point as an operand, int32 accumulator, then RESCALE(int32 -> int8,
  per channel, ``DOUBLE_ROUND``, scale32) and CLAMP. DOUBLE_ROUND is CMSIS-NN's
  ``arm_nn_requantize`` exactly (mcuforge's left-positive shift s becomes TOSA's right shift 31 - s).
- add_s8: RESCALE(int8 -> int32, ``<< left_shift``) and RESCALE(int32 -> int32, input multiplier)
  per input, ADD, RESCALE(int32 -> int8, output multiplier), CLAMP -- arm_elementwise_add_s8's steps.
- mul_s8: RESCALE(int8 -> int32, the offset) per input, MUL, RESCALE(int32 -> int8), CLAMP.
- batch_matmul_s8: MATMUL (rank 3, zero points as operands), RESCALE, CLAMP.
- avgpool_s8: AVG_POOL2D (padding excluded from the count, as CMSIS-NN) and CLAMP. TOSA divides by
  a reciprocal multiplier (``((2^30 + 1) << k) / count``), CMSIS-NN rounds the exact mean half away
  from zero; the two agree on every int8 window up to 65536 elements, ties included (the "+1" rounds
  negative ties away from zero; the multiplier's error stays far below the gap to a tie).
- maxpool_s8: MAX_POOL2D (padding never wins, as CMSIS-NN) and CLAMP.
- maximum_s8 / minimum_s8: RESCALE(int8 -> int32, unit scale) per input, MAXIMUM / MINIMUM (TOSA's INT
  profile has them on int32), RESCALE back to int8 (exact: the values stay in int8's range).
- clamp_s8: CLAMP; lut_s8: TABLE (out = table[x + 128], TOSA's int8 TABLE); pad_s8: PAD;
  concat_s8: CONCAT; reshape: RESHAPE; transpose: TRANSPOSE; slice (unit steps): SLICE.

:func:`unsupported_reason` says why an op has no lowering (None when it has one);
:func:`lower_ops` builds one TOSA graph from a run of IR ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..ir import Graph, Op
from ..kernels.fc_pairs import S8_PAIRS, unpack_pairs
from ..kinds import KIND, kinds_where

#: IR op kinds with a TOSA lowering (subject to :func:`unsupported_reason`'s per-op checks).
LOWERED_KINDS = kinds_where(tosa=True)
# Kinds lowered as another: the per-channel fully connected is fully_connected_s8 with length-O requant
# constants, which the RESCALE takes per channel either way.
_SAME_AS = {"fully_connected_per_channel_s8": "fully_connected_s8"}

_INT8_KINDS = {k for k in LOWERED_KINDS if "fp32" not in KIND[k].precisions}  # not data movement

_WHY_NOT = {
    "softmax_s8": "softmax_s8: CMSIS-NN's fixed-point exp has no exact TOSA INT form (kept on the CPU for exact bytes)",
    "transpose_conv2d_s8": "transpose_conv2d_s8: no TOSA lowering yet",
    "conv2d_s4": "conv2d_s4: int4 weights have no TOSA INT lowering here (TOSA's int4 weights: not supported yet)",
    "depthwise_conv2d_s4": "depthwise_conv2d_s4: int4 weights have no TOSA INT lowering here (not supported yet)",
    "fully_connected_s4": "fully_connected_s4: int4 weights have no TOSA INT lowering here (not supported yet)",
    "quantize": "fp32 op (quantize): the NPU runs int8 only",
    "dequantize": "fp32 op (dequantize): the NPU runs int8 only",
    "aten_fp32": "fp32 fallback op: the NPU runs int8 only",
}


@dataclass
class TosaGraph:
    """A serialized TOSA graph and the IR tensors at its boundary (in graph input/output order)."""

    flatbuffer: bytes
    inputs: list[str]
    outputs: list[str]
    owners: dict[str, int] = field(default_factory=dict)  # TOSA tensor -> the IR op (index) that computes it


def _ts():
    import tosa_serializer

    return tosa_serializer


def _shift_ok(shifts: np.ndarray) -> bool:
    right = 31 - np.asarray(shifts, np.int64)
    return bool(np.all((right >= 2) & (right <= 62)))


def _pool_pads(in_hw: Sequence[int], kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
               out_hw: Sequence[int], dilation: Sequence[int] = (1, 1)) -> tuple[list[int], list[int]]:
    """TOSA pads [top, bottom, left, right] for an explicit output size, and the input rows/cols to keep
    (a negative bottom/right pad -- rows the CMSIS-NN window never reaches -- becomes a crop)."""
    pads, keep = [], []
    for d in range(2):
        before = int(padding[d])
        after = (out_hw[d] - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1 - in_hw[d] - before
        keep.append(in_hw[d] + min(after, 0))
        pads += [before, max(after, 0)]
    return pads, keep


def effective_stride(op: Op) -> list[int]:
    """A pooling/conv op's stride, with 1 where the output has a single row/column (the stride of a
    single window is irrelevant: a global pool's "stride" is often its kernel size)."""
    stride = [int(s) for s in op.attrs["stride"]]
    out_hw = op.attrs.get("output_hw")
    if out_hw is not None:
        stride = [1 if out_hw[d] == 1 else stride[d] for d in range(2)]
    return stride


def unsupported_reason(graph: Graph, op: Op) -> str | None:
    """Why ``op`` cannot be lowered to TOSA (None when it can)."""
    if op.kind in _WHY_NOT:
        return _WHY_NOT[op.kind]
    if op.kind not in LOWERED_KINDS:
        return f"{op.kind}: no TOSA lowering"
    if op.backend != "int8":
        return f"{op.kind} runs as {op.backend}"
    t = graph.tensors
    a = op.attrs
    if op.kind in _SAME_AS:
        op = replace(op, kind=_SAME_AS[op.kind])
    if op.kind in _INT8_KINDS:
        for n in [*op.inputs, *op.outputs]:
            if n and t[n].dtype not in ("int8", "int32"):
                return f"{op.kind}: tensor {n!r} is {t[n].dtype}"
    else:
        for n in [*op.inputs, *op.outputs]:
            if n and t[n].dtype not in ("int8", "int16", "int32"):
                return f"{op.kind}: {t[n].dtype} data (TOSA INT moves int8/int16/int32)"
    if op.kind in ("conv2d_s8", "depthwise_conv2d_s8", "fully_connected_s8"):
        if not -128 <= -a["input_offset"] <= 127:
            return f"{op.kind}: input zero point {-a['input_offset']} is not int8"
        if not _shift_ok(t[op.inputs[4]].data):
            return f"{op.kind}: a requantization shift outside TOSA's RESCALE range"
        if op.kind == "conv2d_s8":
            cin, wcin = t[op.inputs[0]].shape[3], t[op.inputs[1]].shape[3]
            if cin % wcin or t[op.inputs[1]].shape[0] % (cin // wcin):
                return f"conv2d_s8: {cin} input channels do not split into groups of {wcin}"
        if op.kind == "fully_connected_s8" and t[op.inputs[0]].numel != \
                t[op.outputs[0]].numel // t[op.inputs[1]].shape[0] * t[op.inputs[1]].shape[1]:
            return "fully_connected_s8: input size is not batch x in_features"
    if op.kind in ("maximum_s8", "minimum_s8") and len({len(t[n].shape) for n in [*op.inputs, *op.outputs]}) != 1:
        return f"{op.kind}: operands of different ranks"
    if op.kind in ("add_s8", "mul_s8", "batch_matmul_s8"):
        ranks = {len(t[n].shape) for n in [*op.inputs, *op.outputs]}
        if len(ranks) != 1 and op.kind != "batch_matmul_s8":
            return f"{op.kind}: operands of different ranks"
        if op.kind == "add_s8":
            if not 0 <= a["left_shift"] <= 28 or not _shift_ok(np.array([a["a_shift"], a["b_shift"],
                                                                          a["output_shift"]])):
                return "add_s8: a shift outside TOSA's RESCALE range"
        elif not _shift_ok(np.array([a["output_shift"]])):
            return f"{op.kind}: output shift outside TOSA's RESCALE range"
    if op.kind == "batch_matmul_s8":
        lhs, rhs = t[op.inputs[0]].shape, t[op.inputs[1]].shape
        if len(lhs) < 2 or len(rhs) < 2 or lhs[:-2] != rhs[:-2]:
            return "batch_matmul_s8: operands with broadcast batch dims"
        if not (-128 <= -a["lhs_offset"] <= 127 and -128 <= -a["rhs_offset"] <= 127):
            return "batch_matmul_s8: zero point outside int8"
    if op.kind in ("avgpool_s8", "maxpool_s8"):
        x = t[op.inputs[0]]
        if len(x.shape) != 4:
            return f"{op.kind}: input is not NHWC"
        pads, _ = _pool_pads(x.shape[1:3], a["kernel"], effective_stride(op), a["padding"], a["output_hw"])
        if any(p >= k for p, k in zip(pads, [a["kernel"][0]] * 2 + [a["kernel"][1]] * 2, strict=True)):
            return f"{op.kind}: padding as large as the kernel"
    if op.kind == "slice" and any(s != 1 for s in a["step"]):
        return "slice with a step other than 1: no TOSA lowering yet"
    if op.kind == "pad_s8" and any(p < 0 for p in a["pads"]):
        return "pad_s8 with a negative pad"
    return None


class _Builder:
    """The serializer plus the IR tensor -> TOSA tensor name map."""

    def __init__(self, graph: Graph) -> None:
        ts = _ts()
        self.ts = ts
        self.D = ts.DType
        self.graph = graph
        self.s = ts.TosaSerializer("", targetMajor=1, targetMinor=0, targetPatch=0, targetDraft=False)
        self.names: dict[str, str] = {}
        self.owners: dict[str, int] = {}  # TOSA tensor -> IR op index (Vela's per-layer figures map back)
        self.current = -1

    def dtype(self, name: str):
        return {"int8": self.D.INT8, "int16": self.D.INT16, "int32": self.D.INT32}[self.graph.tensors[name].dtype]

    def const(self, data: np.ndarray, dtype=None) -> str:
        data = np.ascontiguousarray(data)
        if dtype is None:
            dtype = {np.dtype(np.int8): self.D.INT8, np.dtype(np.int16): self.D.INT16,
                     np.dtype(np.int32): self.D.INT32}[data.dtype]
        return self.s.addConst(list(data.shape), dtype, data).name

    def shape(self, values: Sequence[int]) -> str:
        return self.s.addConst([len(values)], self.D.SHAPE, np.array(values, np.int64)).name

    def zp8(self, value: int) -> str:
        return self.const(np.array([value], np.int8))

    def zp32(self, value: int = 0) -> str:
        return self.const(np.array([value], np.int32))

    def tensor(self, name: str) -> str:
        """The TOSA name of IR tensor ``name`` (constants are added on first use)."""
        if name not in self.names:
            t = self.graph.tensors[name]
            if not t.is_constant:
                raise KeyError(f"IR tensor {name!r} is used before it is produced")
            # S8_PAIRS (a DSP core's fully connected weights): the plain values
            data = unpack_pairs(t.data, tuple(t.shape)) if t.layout == S8_PAIRS else np.asarray(t.data)
            self.names[name] = self.const(data)
        return self.names[name]

    def temp(self, shape: Sequence[int], dtype) -> str:
        return self.s.addIntermediate(list(shape), dtype).name

    def out(self, name: str) -> str:
        """The TOSA tensor an op writes for IR output ``name`` (a graph output was declared upfront)."""
        if name not in self.names:
            t = self.graph.tensors[name]
            self.names[name] = self.temp(t.shape, self.dtype(name))
        return self.names[name]

    def op(self, code: str, inputs: Sequence[str], outputs: Sequence[str], attr_name: str, *args) -> None:
        attr = self.ts.TosaSerializerAttribute()
        getattr(attr, attr_name)(*args)
        self.s.addOperator(getattr(self.ts.Op, code), list(inputs), list(outputs), attr)
        for name in outputs:
            self.owners[name] = self.current

    # -- composite steps ------------------------------------------------------------------------------
    def rescale(self, x: str, out: str, multiplier: Sequence[int], shift: Sequence[int], in_zp: str, out_zp: str,
                per_channel: bool) -> None:
        """RESCALE with mcuforge's (multiplier, left-positive shift), CMSIS-NN's double rounding."""
        mult = self.const(np.asarray(multiplier, np.int32).reshape(-1))
        right = self.const((31 - np.asarray(shift, np.int64)).astype(np.int8).reshape(-1))
        self.op("RESCALE", [x, mult, right, in_zp, out_zp], [out], "RescaleAttribute",
                True, self.ts.RoundingMode.DOUBLE_ROUND, per_channel, False, False)

    def clamp(self, x: str, out: str, lo: int, hi: int, dtype=None) -> None:
        np_dtype = np.int8 if dtype in (None, self.D.INT8) else np.int32
        lo_b = np.array([lo], np_dtype).view(np.uint8).tolist()
        hi_b = np.array([hi], np_dtype).view(np.uint8).tolist()
        self.op("CLAMP", [x], [out], "ClampAttribute", lo_b, hi_b, self.ts.NanPropagationMode.PROPAGATE)

    def reshape(self, x: str, shape: Sequence[int], out: str | None = None, dtype=None) -> str:
        out = out or self.temp(shape, dtype or self.D.INT8)
        self.op("RESHAPE", [x, self.shape(shape)], [out], "ReshapeAttribute")
        return out

    def requantize_clamp(self, acc: str, shape: Sequence[int], out: str, mult, shift, out_offset: int,
                         lo: int, hi: int) -> None:
        """int32 accumulator -> requantized int8 (+ output offset) -> clamp, into ``out``."""
        mult = np.asarray(mult).reshape(-1)
        r8 = self.temp(shape, self.D.INT8)
        self.rescale(acc, r8, mult, np.asarray(shift).reshape(-1), self.zp32(0), self.zp8(out_offset),
                     per_channel=mult.size > 1)
        self.clamp(r8, out, lo, hi)


def _lower_op(b: _Builder, op: Op) -> None:
    g, a, D = b.graph, op.attrs, b.D
    t = g.tensors
    kind = _SAME_AS.get(op.kind, op.kind)
    if kind in ("conv2d_s8", "depthwise_conv2d_s8", "fully_connected_s8"):
        x_name, w_name, bias_name, mult_name, shift_name = op.inputs
        w = np.asarray(t[w_name].data)
        out_t = t[op.outputs[0]]
        mult, shift = t[mult_name].data, t[shift_name].data
        x = b.tensor(x_name)
        if kind == "fully_connected_s8":
            oc, k = w.shape
            n = out_t.numel // oc
            x = b.reshape(x, [n, 1, 1, k])
            weight = b.const(w.reshape(oc, 1, 1, k).astype(np.int8))
            acc_shape = [n, 1, 1, oc]
        else:
            x_shape = list(t[x_name].shape)
            kh, kw = w.shape[1:3]
            oc = out_t.shape[3]
            pads, keep = _pool_pads(x_shape[1:3], (kh, kw), a["stride"], a["padding"], out_t.shape[1:3],
                                    a["dilation"])
            if keep != x_shape[1:3]:
                sliced = b.temp([x_shape[0], *keep, x_shape[3]], D.INT8)
                b.op("SLICE", [x, b.shape([0, 0, 0, 0]), b.shape([x_shape[0], *keep, x_shape[3]])], [sliced],
                     "SliceAttribute")
                x = sliced
            if kind == "conv2d_s8":
                weight = b.const(w.astype(np.int8))
            else:
                m = a["depth_multiplier"]
                weight = b.const(w.reshape(kh, kw, oc // m, m).astype(np.int8))
            acc_shape = list(out_t.shape)
        bias = np.asarray(t[bias_name].data, np.int32) if bias_name else np.zeros(oc, np.int32)
        acc = b.temp(acc_shape, D.INT32)
        operands = [x, weight, b.const(bias.reshape(-1)), b.zp8(-a["input_offset"]), b.zp8(0)]
        groups = t[x_name].shape[3] // w.shape[3] if kind == "conv2d_s8" else 1
        if groups > 1:  # grouped conv: one CONV2D per group on its input channels, accumulators joined
            cin_g, oc_g = w.shape[3], oc // groups
            n, h, wd = (t[x_name].shape[0], *(keep if keep != x_shape[1:3] else x_shape[1:3]))
            parts = []
            for gi in range(groups):
                xs = b.temp([n, h, wd, cin_g], D.INT8)
                b.op("SLICE", [x, b.shape([0, 0, 0, gi * cin_g]), b.shape([n, h, wd, cin_g])], [xs], "SliceAttribute")
                part = b.temp([*acc_shape[:3], oc_g], D.INT32)
                b.op("CONV2D", [xs, b.const(w[gi * oc_g:(gi + 1) * oc_g].astype(np.int8)),
                                b.const(bias.reshape(-1)[gi * oc_g:(gi + 1) * oc_g]), b.zp8(-a["input_offset"]),
                                b.zp8(0)], [part], "Conv2dAttribute", pads, list(a["stride"]), list(a["dilation"]),
                     False, D.INT32)
                parts.append(part)
            b.op("CONCAT", parts, [acc], "ConcatAttribute", 3)
            b.requantize_clamp(acc, acc_shape, b.out(op.outputs[0]), mult, shift, a["output_offset"],
                               a["act_min"], a["act_max"])
            return
        if kind == "fully_connected_s8":
            b.op("CONV2D", operands, [acc], "Conv2dAttribute", [0, 0, 0, 0], [1, 1], [1, 1], False, D.INT32)
        else:
            b.op("CONV2D" if kind == "conv2d_s8" else "DEPTHWISE_CONV2D", operands, [acc],
                 "Conv2dAttribute" if kind == "conv2d_s8" else "DepthwiseConv2dAttribute",
                 pads, list(a["stride"]), list(a["dilation"]), False, D.INT32)
        if kind == "fully_connected_s8":
            y = b.temp(acc_shape, D.INT8)
            b.requantize_clamp(acc, acc_shape, y, mult, shift, a["output_offset"], a["act_min"], a["act_max"])
            b.reshape(y, out_t.shape, b.out(op.outputs[0]))
        else:
            b.requantize_clamp(acc, acc_shape, b.out(op.outputs[0]), mult, shift, a["output_offset"],
                               a["act_min"], a["act_max"])
        return
    if kind == "add_s8":
        out_t = t[op.outputs[0]]
        terms = []
        for side in ("a", "b"):
            src = op.inputs[0 if side == "a" else 1]
            shape = t[src].shape
            shifted, scaled = b.temp(shape, D.INT32), b.temp(shape, D.INT32)
            # (x + offset) << left_shift, exactly: multiplier 2^30, right shift 30 - left_shift.
            b.rescale(b.tensor(src), shifted, [1 << 30], [1 + a["left_shift"]], b.zp8(-a[f"{side}_offset"]),
                      b.zp32(0), False)
            b.rescale(shifted, scaled, [a[f"{side}_multiplier"]], [a[f"{side}_shift"]], b.zp32(0), b.zp32(0), False)
            terms.append(scaled)
        total = b.temp(out_t.shape, D.INT32)
        b.op("ADD", terms, [total], "AddAttribute")
        b.requantize_clamp(total, out_t.shape, b.out(op.outputs[0]), [a["output_multiplier"]], [a["output_shift"]],
                           a["output_offset"], a["act_min"], a["act_max"])
        return
    if kind == "mul_s8":
        out_t = t[op.outputs[0]]
        terms = []
        for side, src in zip(("a", "b"), op.inputs, strict=True):
            wide = b.temp(t[src].shape, D.INT32)
            b.rescale(b.tensor(src), wide, [1 << 30], [1], b.zp8(-a[f"{side}_offset"]), b.zp32(0), False)
            terms.append(wide)
        prod = b.temp(out_t.shape, D.INT32)
        b.op("MUL", [*terms, b.const(np.array([0], np.int8))], [prod], "MulAttribute")
        b.requantize_clamp(prod, out_t.shape, b.out(op.outputs[0]), [a["output_multiplier"]], [a["output_shift"]],
                           a["output_offset"], a["act_min"], a["act_max"])
        return
    if kind in ("maximum_s8", "minimum_s8"):
        out_t = t[op.outputs[0]]
        wide = []
        for src in op.inputs:  # int8 -> int32 unchanged: multiplier 2^30 with shift 1 is a unit scale
            w32 = b.temp(t[src].shape, D.INT32)
            b.rescale(b.tensor(src), w32, [1 << 30], [1], b.zp8(0), b.zp32(0), False)
            wide.append(w32)
        picked = b.temp(out_t.shape, D.INT32)
        code, attr = ("MAXIMUM", "MaximumAttribute") if kind == "maximum_s8" else ("MINIMUM", "MinimumAttribute")
        b.op(code, wide, [picked], attr, b.ts.NanPropagationMode.PROPAGATE)
        b.requantize_clamp(picked, out_t.shape, b.out(op.outputs[0]), [1 << 30], [1], 0, -128, 127)
        return
    if kind == "batch_matmul_s8":
        lhs_t, rhs_t, out_t = t[op.inputs[0]], t[op.inputs[1]], t[op.outputs[0]]
        lhs, rhs = b.tensor(op.inputs[0]), b.tensor(op.inputs[1])
        batch = int(np.prod(lhs_t.shape[:-2], dtype=np.int64))
        l3 = [batch, *lhs_t.shape[-2:]]
        r3 = [batch, *rhs_t.shape[-2:]]
        lhs, rhs = b.reshape(lhs, l3), b.reshape(rhs, r3)
        if a["adj_x"]:
            l3 = [batch, l3[2], l3[1]]
            tmp = b.temp(l3, D.INT8)
            b.op("TRANSPOSE", [lhs], [tmp], "TransposeAttribute", [0, 2, 1])
            lhs = tmp
        if a["adj_y"]:
            r3 = [batch, r3[2], r3[1]]
            tmp = b.temp(r3, D.INT8)
            b.op("TRANSPOSE", [rhs], [tmp], "TransposeAttribute", [0, 2, 1])
            rhs = tmp
        acc_shape = [batch, l3[1], r3[2]]
        acc = b.temp(acc_shape, D.INT32)
        b.op("MATMUL", [lhs, rhs, b.zp8(-a["lhs_offset"]), b.zp8(-a["rhs_offset"])], [acc], "MatMulAttribute")
        y = b.temp(acc_shape, D.INT8)
        b.requantize_clamp(acc, acc_shape, y, [a["output_multiplier"]], [a["output_shift"]], a["output_offset"],
                           a["act_min"], a["act_max"])
        b.reshape(y, out_t.shape, b.out(op.outputs[0]))
        return
    if kind in ("avgpool_s8", "maxpool_s8"):
        x_t, out_t = t[op.inputs[0]], t[op.outputs[0]]
        x = b.tensor(op.inputs[0])
        oh, ow = a["output_hw"]
        stride = effective_stride(op)
        pads, keep = _pool_pads(x_t.shape[1:3], a["kernel"], stride, a["padding"], (oh, ow))
        n, c = x_t.shape[0], x_t.shape[3]
        if keep != list(x_t.shape[1:3]):
            sliced = b.temp([n, *keep, c], D.INT8)
            b.op("SLICE", [x, b.shape([0, 0, 0, 0]), b.shape([n, *keep, c])], [sliced], "SliceAttribute")
            x = sliced
        pooled = b.temp([n, oh, ow, c], D.INT8)
        if kind == "avgpool_s8":
            b.op("AVG_POOL2D", [x, b.zp8(0), b.zp8(0)], [pooled], "AvgPool2dAttribute",
                 list(a["kernel"]), stride, pads, D.INT32)
        else:
            b.op("MAX_POOL2D", [x], [pooled], "MaxPool2dAttribute", list(a["kernel"]), stride, pads,
                 b.ts.NanPropagationMode.PROPAGATE)
        if list(out_t.shape) == [n, oh, ow, c]:
            b.clamp(pooled, b.out(op.outputs[0]), a["act_min"], a["act_max"])
        else:  # stored squeezed (a global mean)
            clamped = b.temp([n, oh, ow, c], D.INT8)
            b.clamp(pooled, clamped, a["act_min"], a["act_max"])
            b.reshape(clamped, out_t.shape, b.out(op.outputs[0]))
        return
    if kind == "clamp_s8":
        b.clamp(b.tensor(op.inputs[0]), b.out(op.outputs[0]), a["act_min"], a["act_max"])
        return
    if kind == "lut_s8":
        b.op("TABLE", [b.tensor(op.inputs[0]), b.tensor(op.inputs[1])], [b.out(op.outputs[0])], "TableAttribute")
        return
    if kind == "pad_s8":
        pad_const = b.const(np.array([a["pad_value"]], np.int8))
        b.op("PAD", [b.tensor(op.inputs[0]), b.shape(list(a["pads"])), pad_const], [b.out(op.outputs[0])],
             "PadAttribute")
        return
    if kind == "concat_s8":
        axis = a["axis"] % len(t[op.outputs[0]].shape)
        b.op("CONCAT", [b.tensor(n) for n in op.inputs], [b.out(op.outputs[0])], "ConcatAttribute", axis)
        return
    if kind == "reshape":
        b.reshape(b.tensor(op.inputs[0]), t[op.outputs[0]].shape, b.out(op.outputs[0]))
        return
    if kind == "transpose":
        b.op("TRANSPOSE", [b.tensor(op.inputs[0])], [b.out(op.outputs[0])], "TransposeAttribute", list(a["perm"]))
        return
    if kind == "slice":
        x_t = t[op.inputs[0]]
        start = [int(s) for s in a["begin"]]
        size = [len(range(bg, e, 1)) for bg, e in zip(a["begin"], a["end"], strict=True)]
        start = [s + d if s < 0 else s for s, d in zip(start, x_t.shape, strict=True)]
        out_t = t[op.outputs[0]]
        dtype = b.dtype(op.outputs[0])
        if list(out_t.shape) == size:
            b.op("SLICE", [b.tensor(op.inputs[0]), b.shape(start), b.shape(size)], [b.out(op.outputs[0])],
                 "SliceAttribute")
        else:
            tmp = b.temp(size, dtype)
            b.op("SLICE", [b.tensor(op.inputs[0]), b.shape(start), b.shape(size)], [tmp], "SliceAttribute")
            b.reshape(tmp, out_t.shape, b.out(op.outputs[0]), dtype)
        return
    raise ValueError(f"no TOSA lowering for {kind}")


def boundary(graph: Graph, op_indices: Sequence[int]) -> tuple[list[str], list[str]]:
    """The activations a run of ops reads from outside it, and those it produces that are read
    outside it (or are graph outputs), each in first-use order."""
    inside = set(op_indices)
    produced: dict[str, int] = {}
    for i in op_indices:
        for n in graph.ops[i].outputs:
            produced[n] = i
    inputs: list[str] = []
    for i in op_indices:
        for n in graph.ops[i].inputs:
            if n and not graph.tensors[n].is_constant and n not in produced and n not in inputs:
                inputs.append(n)
    read_outside = {n for j, op in enumerate(graph.ops) if j not in inside for n in op.inputs}
    outputs = [n for n in produced if n in read_outside or n in graph.outputs]
    return inputs, outputs


def lower_ops(graph: Graph, op_indices: Sequence[int]) -> TosaGraph:
    """One TOSA graph computing ops ``op_indices`` of ``graph`` (a run in topological order)."""
    for i in op_indices:
        why = unsupported_reason(graph, graph.ops[i])
        if why:
            raise ValueError(f"op {i}: {why}")
    inputs, outputs = boundary(graph, op_indices)
    b = _Builder(graph)
    for name in inputs:
        b.names[name] = b.s.addPlaceholder(list(graph.tensors[name].shape), b.dtype(name)).name
    for name in outputs:
        b.names[name] = b.s.addOutput(list(graph.tensors[name].shape), b.dtype(name)).name
    for i in op_indices:
        b.current = i
        _lower_op(b, graph.ops[i])
    return TosaGraph(bytes(b.s.serialize()), inputs, outputs, b.owners)
