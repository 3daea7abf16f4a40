"""Python kernels that register themselves: ``@python_kernel(kind)`` on an adapter in the kernel's own module.

A kind added this way needs no line anywhere else on the Python side: the runtime's ``KERNELS`` table takes every
registered adapter (:func:`registered`, which imports each module of this package, so a new module is found by
being there), and the program reader and writer run the kernel's ``shapes`` check on every op of the kind (the
checks of its C kernel's load-time ``check``, so that a file one reader refuses the other refuses too).

An adapter is called as ``adapter(op, ins, outs)``: ``op.attrs`` its attributes, ``ins`` its inputs each with a
leading run axis (size G for activations, 1 for constants: ``x[0]`` is a constant without it), ``outs`` the output
arrays (their shapes say the output's); it returns the output (or a list of them) with that leading run axis.
A ``shapes`` check is called as ``shapes(attrs, inputs, outputs)`` with the op's tensors (``.dtype`` a name such
as "int8", ``.shape`` a tuple, ``.is_constant``) and returns why the op cannot run, or None.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Sequence
from typing import Any, Protocol


class TensorLike(Protocol):
    """What a shape check reads of a tensor (mcuforge.ir.Tensor is one)."""

    dtype: str
    shape: tuple[int, ...]
    is_constant: bool


Adapter = Callable[[Any, list, list], Any]
ShapeCheck = Callable[[dict[str, Any], Sequence[TensorLike], Sequence[TensorLike]], "str | None"]

_ADAPTERS: dict[str, Adapter] = {}
_SHAPES: dict[str, ShapeCheck] = {}


def python_kernel(kind: str, *, shapes: ShapeCheck | None = None) -> Callable[[Adapter], Adapter]:
    """Register the decorated function as the Python kernel (adapter) of op kind ``kind``, and ``shapes`` as the
    readers' check of an op's tensors and attributes."""
    def register(adapter: Adapter) -> Adapter:
        if kind in _ADAPTERS:
            raise ValueError(f"two Python kernels for {kind!r}")
        _ADAPTERS[kind] = adapter
        if shapes is not None:
            _SHAPES[kind] = shapes
        return adapter
    return register


@functools.cache
def _import_all() -> None:
    """Import every module of this package: each registers its kernels as it is imported."""
    package = __name__.rpartition(".")[0]
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        importlib.import_module(f"{package}.{info.name}")


def registered() -> dict[str, Adapter]:
    """kind -> adapter of every kernel registered with :func:`python_kernel`."""
    _import_all()
    return dict(_ADAPTERS)


def shape_problem(kind: str, attrs: dict[str, Any], inputs: Sequence[TensorLike],
                  outputs: Sequence[TensorLike]) -> str | None:
    """Why an op of ``kind`` with these tensors and attributes cannot run (its kernel's ``shapes`` check), or
    None (also for a kind without one)."""
    _import_all()
    check = _SHAPES.get(kind)
    return None if check is None else check(attrs, inputs, outputs)
