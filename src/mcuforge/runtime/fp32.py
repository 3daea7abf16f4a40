"""The fp32 fallback op: calls the aten op it was lowered from, with its recorded arguments.

For many runs at once the op is vectorized over the run axis with ``torch.vmap``, which gives
each run the op's own per-sample semantics (a recorded ``view(1, -1)`` stays valid); ops that
vmap cannot batch run once per run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..ir import Op, TensorRef


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


def aten_fp32(op: Op, ins: list[np.ndarray], outs: list[np.ndarray]) -> list[np.ndarray]:
    runs = outs[0].shape[0]
    tensors = [torch.from_numpy(np.ascontiguousarray(x)) for x in ins]
    with torch.no_grad():
        if runs == 1:
            results = _call(op, [t[0] for t in tensors])
            return [r.detach().numpy()[np.newaxis] for r in results]
        batched = [t.shape[0] == runs for t in tensors]  # constants carry a run axis of 1
        args = [t if b else t[0] for t, b in zip(tensors, batched, strict=True)]
        try:
            results = torch.vmap(lambda *ts: _call(op, list(ts)),
                                 in_dims=tuple(0 if b else None for b in batched))(*args)
        except Exception:  # noqa: BLE001 - no batching rule for this op: one call per run
            per_run = [_call(op, [t[g] if b else t for t, b in zip(args, batched, strict=True)])
                       for g in range(runs)]
            results = tuple(torch.stack(rs) for rs in zip(*per_run, strict=True))
    return [r.detach().numpy() for r in results]
