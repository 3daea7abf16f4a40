"""The fp32 fallback ops that compute, as the C runtime computes them: the same float32 operations in the same
order, so the host runtime and the C runtime (host and firmware) give the same bytes.

torch's own kernels differ from the C ones in the order of their sums (cascade / vectorized lanes against
the C loops' left-to-right sums), in their transcendental functions (Sleef, libm against ``mf_math``) and in
a few formulas (Welford's variance, fused multiply-adds). These functions state the C kernels
of ``csrc/kernels/fp32`` (pointwise.c, reduce.c, reduce_dims.c, resize.c) in numpy float32:

- sums run left to right over the reduced elements in row-major order, one float32 addition at a time
  (a Python loop over the reduced length, vectorized over the outputs and the runs);
- exp, log, tanh, erf, sigmoid, silu, gelu, expm1 are ``kernels.fp32_math`` (mf_math's bits);
- every computed NaN is the canonical one where the C kernel makes it so.

Arguments are read as the C kernels read them (``arg``: positional, else by name; None counts as absent);
numbers are rounded to float32 as the C runtime reads them. Each input array has the executor's leading run
axis (the runs, or 1 for a constant); an op's results carry it too, and the executor gives them the output's
shape. The data-movement and selection ops of the C table (view, permute, cat, where, expand, embedding,
comparisons, argmax/argmin, nearest resizing) only move or compare values: torch's kernels give their
bytes, and the host runtime keeps calling them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import Op, TensorRef
from ..kernels import fp32_math as fm

F32 = np.float32
Arrays = list[np.ndarray]


class _Args:
    """An op's recorded arguments with its tensor arguments resolved to the input arrays."""

    def __init__(self, op: Op, ins: Arrays, outs: Arrays) -> None:
        self.args, self.kwargs, self.ins, self.outs = op.attrs["args"], op.attrs["kwargs"], ins, outs

    def get(self, pos: int, name: str | None, default: Any = None) -> Any:
        """``args[pos]`` if present, else ``kwargs[name]``; ``default`` if neither or None (mf_fp32_arg)."""
        value = self.args[pos] if pos < len(self.args) else self.kwargs.get(name, None) if name else None
        if value is None:
            return default
        return self.ins[value.index] if isinstance(value, TensorRef) else value

    def number(self, pos: int, name: str | None, default: float) -> np.float32:
        return F32(self.get(pos, name, default))


def _rank_aligned(arrays: Arrays) -> Arrays:
    """Arrays with a leading run axis, given singleton axes after it up to a common rank: numpy's
    broadcasting then aligns the op's own dims (trailing), not a run axis with a data dim."""
    rank = max(a.ndim for a in arrays)
    return [a.reshape(a.shape[:1] + (1,) * (rank - a.ndim) + a.shape[1:]) for a in arrays]


def _runs(result: np.ndarray, outs: Arrays, i: int = 0) -> np.ndarray:
    """``result`` with the output's run count (a result computed from constants has one run)."""
    runs = outs[i].shape[0]
    return result if result.shape[0] == runs else np.broadcast_to(result, (runs, *result.shape[1:]))


# ------------------------------------------------------------------------------------------- unary

def _clamp(x: np.ndarray, lo: np.float32, hi: np.float32) -> np.ndarray:
    # x < lo ? lo : (x > hi ? hi : x), NaN kept
    return np.where(np.isnan(x), x, np.where(x < lo, lo, np.where(x > hi, hi, x))).astype(F32)


def _round_int(x: np.ndarray, kind: str) -> np.ndarray:
    """floor / ceil / round as pointwise.c: exact below 2^23 (truncation, then one step), a zero result
    with the sign of x; |x| >= 2^23, inf and NaN are integers already (NaN canonical)."""
    two23 = F32(8388608.0)
    big = ~(np.abs(x) < two23)
    with np.errstate(all="ignore"):
        xs = np.where(big, F32(0.0), x)
        if kind == "round":
            r = (np.abs(xs) + two23) - two23  # to nearest, ties to even
        else:
            r = np.trunc(xs)
            r = np.where(r > xs, r - F32(1.0), r) if kind == "floor" else np.where(r < xs, r + F32(1.0), r)
    signed = fm.from_bits((fm.bits(r) & np.uint32(0x7FFFFFFF)) | (fm.bits(xs) & np.uint32(0x80000000)))
    if kind != "round":
        signed = np.where(r == 0, signed, r)
    return np.where(big, fm.canon(x), signed).astype(F32)


def _pow(x: np.ndarray, e: np.float32) -> np.ndarray:
    """pow.Tensor_Scalar as pointwise.c's f_pow: its special exponents, integer powers by squaring in
    float64 (one rounding to float32), other exponents as exp(e log x) in mf_math."""
    with np.errstate(all="ignore"):
        if e == 0:
            return np.ones_like(x)
        if e == 1:
            return x.copy()
        if e == 2:
            return fm.canon(x * x)
        if e == 3:
            return fm.canon((x * x) * x)
        if e == -1:
            return fm.canon(F32(1.0) / x)
        if e == -2:
            return fm.canon(F32(1.0) / (x * x))
        if e == 0.5:
            return fm.canon(np.sqrt(x))
        if e == -0.5:
            return fm.canon(F32(1.0) / np.sqrt(x))
        if np.isnan(e):
            return np.full_like(x, fm.CANONICAL_NAN)
        if abs(e) < 2147483648.0 and float(int(e)) == float(e):
            n, base, r = int(abs(e)), x.astype(np.float64), np.ones(x.shape, np.float64)
            while n:
                if n & 1:
                    r = r * base
                n >>= 1
                if n:
                    base = base * base
            out = (1.0 / r if e < 0 else r).astype(F32)
        elif abs(e) >= 2147483648.0:  # an even integer: the sign of x does not matter
            ax = np.abs(x)
            out = np.where((ax > 1) == (e > 0), F32(np.inf), F32(0.0)).astype(F32)
            out = np.where(ax == 1, F32(1.0), out)
        else:
            out = fm.expf(e * fm.logf(x))
            out = np.where(x == np.inf, F32(np.inf) if e > 0 else F32(0.0), out)
            out = np.where(x == 0, F32(0.0) if e > 0 else F32(np.inf), out)
            out = np.where(x < 0, fm.CANONICAL_NAN, out)
            out = np.where(x == -np.inf, F32(np.inf) if e > 0 else F32(0.0), out)
            out = np.where(x == 1, F32(1.0), out)
        return np.where(np.isnan(x), fm.CANONICAL_NAN, fm.canon(out)).astype(F32)


def _hard(x: np.ndarray) -> np.ndarray:
    """min(max(x + 3, 0), 6) as the C ternaries (NaN stays NaN)."""
    r = x + F32(3.0)
    return np.where(r < 0, F32(0.0), np.where(r > 6, F32(6.0), r)).astype(F32)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.where(np.isnan(x), x, F32(0.0))).astype(F32)


def _leaky(x: np.ndarray, slope: np.float32) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.where(x > 0, x, fm.canon(x * slope)).astype(F32)


def _elu(a: _Args, x: np.ndarray) -> np.ndarray:
    alpha, scale, input_scale = a.number(1, "alpha", 1.0), a.number(2, "scale", 1.0), a.number(3, "input_scale", 1.0)
    negcoef = alpha * scale  # torch's, in float32 as the C kernel
    with np.errstate(all="ignore"):
        return fm.canon(np.where((x > 0) | np.isnan(x), x * scale, fm.expm1f(x * input_scale) * negcoef))


def _gelu(a: _Args, x: np.ndarray) -> np.ndarray:
    return fm.gelu_tanhf(x) if a.get(1, "approximate", "none") == "tanh" else fm.geluf(x)


def _unary_float(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[_Args, np.ndarray], np.ndarray]:
    def run(a: _Args, x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(x)
    return run


_UNARY: dict[str, Callable[[_Args, np.ndarray], np.ndarray]] = {
    "relu.default": _unary_float(_relu),
    "neg.default": _unary_float(np.negative),
    "abs.default": _unary_float(fm.fabs),
    "sqrt.default": _unary_float(lambda x: fm.canon(np.sqrt(x))),
    "rsqrt.default": _unary_float(lambda x: fm.canon(F32(1.0) / np.sqrt(x))),
    "reciprocal.default": _unary_float(lambda x: fm.canon(F32(1.0) / x)),
    "exp.default": _unary_float(fm.expf),
    "log.default": _unary_float(fm.logf),
    "tanh.default": _unary_float(fm.tanhf),
    "sigmoid.default": _unary_float(fm.sigmoidf),
    "silu.default": _unary_float(fm.siluf),
    "erf.default": _unary_float(fm.erff),
    "hardswish.default": _unary_float(lambda x: fm.canon((x * _hard(x)) / F32(6.0))),
    "hardsigmoid.default": _unary_float(lambda x: fm.canon(_hard(x) / F32(6.0))),
    "floor.default": _unary_float(lambda x: _round_int(x, "floor")),
    "ceil.default": _unary_float(lambda x: _round_int(x, "ceil")),
    "round.default": _unary_float(lambda x: _round_int(x, "round")),
    "gelu.default": _gelu,
    "elu.default": _elu,
    "leaky_relu.default": lambda a, x: _leaky(x, a.number(1, "negative_slope", 0.01)),
    "pow.Tensor_Scalar": lambda a, x: _pow(x, a.number(1, "exponent", np.nan)),
    "clamp.default": lambda a, x: _clamp(x, a.number(1, "min", -np.inf), a.number(2, "max", np.inf)),
    "clamp_min.default": lambda a, x: _clamp(x, a.number(1, "min", -np.inf), F32(np.inf)),
    "clamp_max.default": lambda a, x: _clamp(x, F32(-np.inf), a.number(1, "max", np.inf)),
    "hardtanh.default": lambda a, x: _clamp(x, a.number(1, "min_val", -1.0), a.number(2, "max_val", 1.0)),
}


def _unary(name: str) -> Callable[[_Args], Arrays]:
    fn = _UNARY[name]
    return lambda a: [_runs(fn(a, np.asarray(a.get(0, "self"), F32)), a.outs)]


# ------------------------------------------------------------------------------------------ binary

def _operand(a: _Args, pos: int) -> np.ndarray:
    value = a.get(pos, "other" if pos else "self")
    if isinstance(value, np.ndarray):
        return value
    return np.full((1,), F32(value), F32)  # a number: a rank-0 tensor (with its run axis)


def _binary(kind: str) -> Callable[[_Args], Arrays]:
    def run(a: _Args) -> Arrays:
        x, y = _rank_aligned([_operand(a, 0), _operand(a, 1)])
        alpha = a.number(2, "alpha", 1.0)
        with np.errstate(all="ignore"):
            if kind == "add":
                r = x + y if alpha == 1 else x + alpha * y
            elif kind == "sub":
                r = x - y if alpha == 1 else x - alpha * y
            elif kind == "mul":
                r = x * y
            elif kind == "div":
                r = x / y
            else:  # NaN propagates (canonical); of equal values (+-0) y, as the C ternaries
                pick = x < y if kind == "minimum" else x > y
                r = np.where(np.isnan(x) | np.isnan(y), fm.CANONICAL_NAN, np.where(pick, x, y))
        return [_runs(fm.canon(r), a.outs)]
    return run


# -------------------------------------------------------------------------------------- reductions

def _dims(a: _Args, rank: int, pos: int = 1) -> list[int]:
    """The reduced dims (reduce_dims.c dims_mask): absent, None or [] reduce all; an int or a list."""
    dim = a.get(pos, "dim")
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(rank))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % max(rank, 1) for d in dims}) if rank else []


def _rows(x: np.ndarray, dims: list[int]) -> np.ndarray:
    """(runs, outputs, reduced): each output's reduced elements in row-major order of the reduced dims."""
    kept = [d for d in range(x.ndim - 1) if d not in dims]
    moved = np.transpose(x, [0, *(d + 1 for d in kept), *(d + 1 for d in dims)])
    n_out = int(np.prod([x.shape[d + 1] for d in kept], dtype=np.int64))
    return moved.reshape(x.shape[0], n_out, -1)


def _seq_sum(rows: np.ndarray) -> np.ndarray:
    """Left-to-right float32 sum over the last axis (the C loops' ``acc += v`` from 0)."""
    acc = np.zeros(rows.shape[:-1], F32)
    for j in range(rows.shape[-1]):
        acc = acc + rows[..., j]
    return acc


def _seq_sq(rows: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Left-to-right float32 sum of (v - mean)^2 (the variance's second pass)."""
    acc = np.zeros(rows.shape[:-1], F32)
    for j in range(rows.shape[-1]):
        d = rows[..., j] - mean
        acc = acc + d * d
    return acc


def _extreme(rows: np.ndarray, larger: bool) -> np.ndarray:
    """amax / amin as reduce_dims.c: the first element, then any NaN or strictly larger (smaller) one."""
    acc = rows[..., 0].copy()
    for j in range(1, rows.shape[-1]):
        v = rows[..., j]
        better = (v > acc) if larger else (v < acc)
        acc = np.where(~np.isnan(acc) & (np.isnan(v) | better), v, acc)
    return acc


def _reduce(kind: str, dim_overload: bool = False) -> Callable[[_Args], Arrays]:
    def run(a: _Args) -> Arrays:
        x = np.asarray(a.get(0, "self"), F32)
        rows = _rows(x, _dims(a, x.ndim - 1))
        n = F32(rows.shape[-1])
        with np.errstate(all="ignore"):
            if kind == "amax" or kind == "amin":
                return [_runs(fm.canon(_extreme(rows, kind == "amax")), a.outs)]
            total = _seq_sum(rows)
            if kind == "sum":
                return [_runs(fm.canon(total), a.outs)]
            if kind == "mean":
                return [_runs(fm.canon(total / n), a.outs)]
            if dim_overload:
                correction = F32(1.0 if a.get(2, "unbiased", True) else 0.0)
            else:
                given = a.kwargs.get("correction")  # a keyword only, default 1
                correction = F32(1.0 if given is None else given)
            sq = _seq_sq(rows, total / n)
            dof = n - correction
            var = sq / (dof if dof > 0 else F32(0.0))  # torch: max(0, N - correction)
            return [_runs(fm.canon(np.sqrt(var) if kind == "std" else var), a.outs)]
    return run


def _softmax(a: _Args) -> Arrays:
    x = np.asarray(a.get(0, "self"), F32)
    dim = a.get(1, "dim") % max(x.ndim - 1, 1) + 1 if x.ndim > 1 else 1
    if x.ndim == 1:  # a rank-0 tensor: one element
        x = x[:, None]
    rows = np.moveaxis(x, dim, -1)
    mx = np.full(rows.shape[:-1], F32(-np.inf))
    for i in range(rows.shape[-1]):  # NaN never compares greater: skipped, as in the C loop
        mx = np.where(rows[..., i] > mx, rows[..., i], mx)
    with np.errstate(all="ignore"):
        e = fm.expf(rows - mx[..., None])
        out = fm.canon(e / _seq_sum(e)[..., None])
    return [_runs(np.moveaxis(out, -1, dim), a.outs)]


def _normalize(rows: np.ndarray, eps: np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(mean, rstd) of each row: the left-to-right sum, the two-pass variance, 1 / sqrt(var + eps)."""
    n = F32(rows.shape[-1])
    with np.errstate(all="ignore"):
        mean = _seq_sum(rows) / n
        rstd = F32(1.0) / np.sqrt(_seq_sq(rows, mean) / n + eps)
    return mean, rstd


def _layer_norm(a: _Args) -> Arrays:
    x = np.asarray(a.get(0, "input"), F32)
    inner = int(np.prod(a.get(1, "normalized_shape"), dtype=np.int64))
    w, b, eps = a.get(2, "weight"), a.get(3, "bias"), a.number(4, "eps", 1e-5)
    rows = x.reshape(x.shape[0], -1, inner)
    mean, rstd = _normalize(rows, eps)
    with np.errstate(all="ignore"):
        y = (rows - mean[..., None]) * rstd[..., None]
        if w is not None:
            y = y * w.reshape(w.shape[0], 1, inner)
        if b is not None:
            y = y + b.reshape(b.shape[0], 1, inner)
    outs = [_runs(fm.canon(y), a.outs)]
    if len(a.outs) == 3:
        outs += [_runs(fm.canon(mean), a.outs, 1), _runs(fm.canon(rstd), a.outs, 2)]
    return outs


def _group_norm(native: bool) -> Callable[[_Args], Arrays]:
    def run(a: _Args) -> Arrays:
        x = np.asarray(a.get(0, "input"), F32)
        groups = int(a.get(6, "group") if native else a.get(1, "num_groups"))
        wpos = 1 if native else 2
        w, b = a.get(wpos, "weight"), a.get(wpos + 1, "bias")
        eps = a.number(7 if native else 4, "eps", 1e-5)
        runs, n, ch = x.shape[0], x.shape[1], x.shape[2]
        cg = ch // groups
        per_channel = x.reshape(runs, n, groups, cg, -1)
        mean, rstd = _normalize(per_channel.reshape(runs, n, groups, -1), eps)
        with np.errstate(all="ignore"):
            # torch's form, as the C kernel: y = x * scale + shift, scale = rstd * gamma, shift = beta - scale * mean
            gamma = w.reshape(w.shape[0], 1, groups, cg) if w is not None else None
            beta = b.reshape(b.shape[0], 1, groups, cg) if b is not None else F32(0.0)
            scale = (rstd[..., None] * gamma if gamma is not None
                     else np.broadcast_to(rstd[..., None], (*rstd.shape, cg)))
            shift = beta - scale * mean[..., None]
            y = per_channel * scale[..., None] + shift[..., None]
        outs = [_runs(fm.canon(y), a.outs)]
        if native:
            outs += [_runs(fm.canon(mean), a.outs, 1), _runs(fm.canon(rstd), a.outs, 2)]
        return outs
    return run


# -------------------------------------------------------------------------------------- resizing

def _linear_src(in_size: int, out_size: int, align_corners: bool, factor: float | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """resize.c's linear_src (torch's compute_source_index_and_lambda in float) for every destination index."""
    dst = np.arange(out_size)
    if in_size == out_size:
        return dst, dst, np.ones(out_size, F32), np.zeros(out_size, F32)
    d = dst.astype(F32)
    if align_corners:
        scale = F32(in_size - 1) / F32(out_size - 1) if out_size > 1 else F32(0.0)
        real = scale * d
    else:
        scale = F32(1.0 / float(F32(factor))) if factor is not None else F32(in_size) / F32(out_size)
        real = scale * (d + F32(0.5)) - F32(0.5)
        real = np.where(real < 0, F32(0.0), real)
    last = F32(in_size - 1)
    k = np.where(real < last, np.trunc(np.minimum(real, last)), last).astype(np.int64)
    lam = real - k.astype(F32)
    lam = np.where(lam < 0, F32(0.0), np.where(lam > 1, F32(1.0), lam)).astype(F32)
    return k, np.where(k < in_size - 1, k + 1, k), F32(1.0) - lam, lam


def _bilinear(a: _Args) -> Arrays:
    x = np.asarray(a.get(0, "input"), F32)
    oh, ow = a.outs[0].shape[-2:]
    factors = a.get(3, "scale_factors")
    align = bool(a.get(2, "align_corners"))
    h0, h1, lh0, lh1 = _linear_src(x.shape[-2], oh, align, factors[0] if factors is not None else None)
    w0, w1, lw0, lw1 = _linear_src(x.shape[-1], ow, align, factors[1] if factors is not None else None)
    r0, r1 = x[..., h0, :], x[..., h1, :]
    with np.errstate(all="ignore"):
        # torch's Interpolate<2>: (x00 lw0 + x01 lw1) lh0 + (x10 lw0 + x11 lw1) lh1
        t0 = r0[..., w0] * lw0 + r0[..., w1] * lw1
        t1 = r1[..., w0] * lw0 + r1[..., w1] * lw1
        out = t0 * lh0[:, None] + t1 * lh1[:, None]
    return [_runs(fm.canon(out), a.outs)]


#: aten name -> the C kernel's computation: (arguments) -> outputs.
EXACT: dict[str, Callable[[_Args], Arrays]] = {
    **{f"aten.{name}": _unary(name) for name in _UNARY},
    **{f"aten.{k}.{o}": _binary(k) for k in ("add", "sub", "mul", "div") for o in ("Tensor", "Scalar")},
    "aten.minimum.default": _binary("minimum"),
    "aten.maximum.default": _binary("maximum"),
    "aten.sum.dim_IntList": _reduce("sum"),
    "aten.mean.dim": _reduce("mean"),
    "aten.amax.default": _reduce("amax"),
    "aten.amin.default": _reduce("amin"),
    "aten.var.correction": _reduce("var"),
    "aten.var.dim": _reduce("var", dim_overload=True),
    "aten.std.correction": _reduce("std"),
    "aten.std.dim": _reduce("std", dim_overload=True),
    "aten.softmax.int": _softmax,
    "aten._softmax.default": _softmax,
    "aten.layer_norm.default": _layer_norm,
    "aten.native_layer_norm.default": _layer_norm,
    "aten.group_norm.default": _group_norm(native=False),
    "aten.native_group_norm.default": _group_norm(native=True),
    "aten.upsample_bilinear2d.vec": _bilinear,
}


def run_exact(op: Op, ins: Arrays, outs: Arrays) -> Arrays | None:
    """The op as the C runtime computes it, or None when it is not one of ``EXACT`` or has an input
    the C kernel would not take (a tensor that is not float32): the caller then runs the aten op."""
    fn = EXACT.get(op.attrs["target"])
    if fn is None or any(x is not None and x.dtype != np.float32 for x in ins):
        return None
    return fn(_Args(op, ins, outs))
