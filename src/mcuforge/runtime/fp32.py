"""The fp32 fallback op. An op that computes (arithmetic, reductions, normalizations, transcendental
functions) runs as the C runtime computes it (``fp32_exact``: the same float32 operations in the same
order, so the host and C runtimes give the same bytes); the others (data movement, selection,
comparisons, and ops outside the C table) call the aten op they were lowered from, with its recorded
arguments.

For many runs at once the op is vectorized over the run axis with ``torch.vmap``, which gives
each run the op's own per-sample semantics (a recorded ``view(1, -1)`` stays valid); ops that
vmap cannot batch run once per run.
"""

from __future__ import annotations

import copy
import functools
import weakref
from typing import Any

import numpy as np
import torch

from ..ir import Op, TensorRef
from .fp32_exact import run_exact
from .prepared import prepared, same_attrs


@functools.cache
def resolve_aten(name: str) -> Any:
    """``"aten.gelu.default"`` -> ``torch.ops.aten.gelu.default``."""
    namespace, op_name, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op_name), overload)


def _decode(value: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(value, TensorRef):
        return tensors[value.index]
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if isinstance(value, str) and value.startswith("torch."):
        decoded = getattr(torch, value[len("torch."):], None)
        if isinstance(decoded, (torch.dtype, torch.memory_format, torch.layout)):
            return decoded
    return value


def _call(op: Op, tensors: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    fn = resolve_aten(op.attrs["target"])
    args = _decode(op.attrs["args"], tensors)
    kwargs = {k: _decode(v, tensors) for k, v in op.attrs["kwargs"].items()}
    result = fn(*args, **kwargs)
    return tuple(result) if isinstance(result, (list, tuple)) else (result,)


def _caller(op: Op) -> Any:
    """``tensors -> _call(op, tensors)`` with the target resolved and the arguments decoded once: only the
    tensor slots are filled per call (decoding the recorded arguments was most of a small op's time)."""
    fn = resolve_aten(op.attrs["target"])
    slots: list[tuple[list | dict, Any, int]] = []

    def template(value: Any) -> Any:
        if isinstance(value, list):
            out = [template(v) for v in value]
            for i, v in enumerate(value):
                if isinstance(v, TensorRef):
                    slots.append((out, i, v.index))
            return out
        return _decode(value, []) if not isinstance(value, TensorRef) else None

    args = template(list(op.attrs["args"]))
    kwargs = {k: template(v) for k, v in op.attrs["kwargs"].items()}
    for k, v in op.attrs["kwargs"].items():
        if isinstance(v, TensorRef):
            slots.append((kwargs, k, v.index))

    def call(tensors: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        for container, key, index in slots:
            container[key] = tensors[index]
        try:
            result = fn(*args, **kwargs)
        finally:
            for container, key, _ in slots:
                container[key] = None  # the template holds no tensor between calls
        return tuple(result) if isinstance(result, (list, tuple)) else (result,)
    return call


#: aten ops that treat every index of their first argument's leading axis on its own, whatever
#: their other (non-tensor or constant) arguments: pointwise ops, and normalizations/softmax over
#: trailing axes (checked in ``_foldable``). For these, G runs of a (N, ...) tensor are one call on
#: (G*N, ...): what torch.vmap does for them too, without its per-call dispatch cost (the largest
#: share of an fp32 op's time on small graphs).
_POINTWISE = frozenset(
    f"aten.{name}.default" for name in (
        "gelu", "sigmoid", "tanh", "relu", "relu6", "silu", "hardswish", "hardsigmoid", "hardtanh", "elu",
        "leaky_relu", "erf", "exp", "log", "sqrt", "rsqrt", "neg", "abs", "reciprocal", "sin", "cos", "floor",
        "ceil", "round", "sign", "clamp", "mish", "softplus", "log_sigmoid")
) | {"aten.pow.Tensor_Scalar", "aten.mul.Scalar", "aten.add.Scalar", "aten.sub.Scalar", "aten.div.Scalar"}
_NORMALIZING = frozenset({"aten.layer_norm.default", "aten.softmax.int", "aten._softmax.default",
                          "aten.log_softmax.int", "aten._log_softmax.default"})


def _foldable(op: Op, batched: list[bool], tensors: list[torch.Tensor]) -> bool:
    """Whether ``_call`` on the runs folded into the leading axis gives every run's own result."""
    target = op.attrs["target"]
    if target not in _POINTWISE and target not in _NORMALIZING:
        return False
    args, kwargs = op.attrs["args"], op.attrs["kwargs"]
    first = args[0] if args else None
    # Only the first argument may vary per run, and it has a leading axis of its own to fold into.
    if not (isinstance(first, TensorRef) and batched[first.index] and tensors[first.index].ndim >= 2):
        return False
    if any(b for i, b in enumerate(batched) if i != first.index):
        return False
    if target == "aten.layer_norm.default":
        return len(args[1]) < tensors[first.index].ndim - 1  # normalized axes: trailing, not the leading one
    if target in _NORMALIZING:
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        return isinstance(dim, int) and dim % (tensors[first.index].ndim - 1) != 0
    return True


def aten_fp32(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> list[np.ndarray]:
    exact = run_exact(op, ins, outs)
    if exact is not None:
        return exact
    runs = outs[0].shape[0]
    bound = _bound(op, ins, runs)
    if bound is not None:
        with torch.no_grad():
            return [r.detach().numpy() for r in bound()]
    call = prepared(op, [], (), lambda: _caller(op))  # depends on the attributes only
    tensors = [torch.from_numpy(np.ascontiguousarray(x)) for x in ins]
    with torch.no_grad():
        if runs == 1:
            results = call([t[0] for t in tensors])
            return [r.detach().numpy()[np.newaxis] for r in results]
        batched = [t.shape[0] == runs for t in tensors]  # constants carry a run axis of 1
        if _foldable(op, batched, tensors):
            folded = [t.reshape(-1, *t.shape[2:]) if b else t[0] for t, b in zip(tensors, batched, strict=True)]
            return [r.detach().numpy() for r in call(folded)]  # the executor restores the run axis
        args = [t if b else t[0] for t, b in zip(tensors, batched, strict=True)]
        try:
            results = torch.vmap(lambda *ts: _call(op, list(ts)),
                                 in_dims=tuple(0 if b else None for b in batched))(*args)
        except Exception:  # noqa: BLE001 - no batching rule for this op: one call per run
            per_run = [call([t[g] if b else t for t, b in zip(args, batched, strict=True)])
                       for g in range(runs)]
            results = tuple(torch.stack(rs) for rs in zip(*per_run, strict=True))
    return [r.detach().numpy() for r in results]


#: Per op: (the op, weakly; a copy of its attributes; the input arrays; the bound call or None).
_BOUND: dict[int, tuple[weakref.ref, dict, tuple, Any]] = {}


def _bound(op: Op, ins: list[np.ndarray], runs: int) -> Any:
    """For a single run or a foldable op (``_foldable``) on contiguous arrays: a call with no arguments that
    runs the op on ``ins`` as they hold at call time. The torch tensors share the arrays' memory (the
    executor's arena views and the constants, kept between runs), so building the call once per op and
    input arrays leaves only the aten op itself per run (converting and checking every argument again cost
    more than a small op). Built again when the op's attributes or its input arrays (by identity) change;
    None where the general path runs."""
    entry = _BOUND.get(id(op))
    if (entry is not None and entry[0]() is op and len(entry[2]) == len(ins)
            and all(a is b for a, b in zip(entry[2], ins, strict=True)) and same_attrs(entry[1], op.attrs)):
        return entry[3]
    call = None
    if all(x.flags.c_contiguous for x in ins):
        tensors = [torch.from_numpy(x) for x in ins]
        if runs == 1:
            folded = [t[0] for t in tensors]
        else:
            batched = [t.shape[0] == runs for t in tensors]
            folded = ([t.reshape(-1, *t.shape[2:]) if b else t[0] for t, b in zip(tensors, batched, strict=True)]
                      if _foldable(op, batched, tensors) else None)
        if folded is not None:
            call = _filled(op, folded, single=runs == 1)
    if entry is None or entry[0]() is not op:
        weakref.finalize(op, _BOUND.pop, id(op), None)
    _BOUND[id(op)] = (weakref.ref(op), copy.deepcopy(op.attrs), tuple(ins), call)
    return call


def _filled(op: Op, tensors: list[torch.Tensor], single: bool) -> Any:
    """``() -> _call(op, tensors)`` with the arguments decoded once (and, for one run, the run axis put back)."""
    fn = resolve_aten(op.attrs["target"])
    args = _decode(op.attrs["args"], tensors)
    kwargs = {k: _decode(v, tensors) for k, v in op.attrs["kwargs"].items()}

    def call() -> tuple[torch.Tensor, ...]:
        result = fn(*args, **kwargs)
        results = tuple(result) if isinstance(result, (list, tuple)) else (result,)
        return tuple(r[None] for r in results) if single else results
    return call
