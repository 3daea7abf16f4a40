"""Each op's kernel prepared once per op (see ``prepared``): a program runs every op with the same
attributes and constants each time, so checks, weights, tables and decoded arguments are built once."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..ir import Op

T = TypeVar("T")

#: Each op's prepared kernel by op id: (the op, weakly; a copy of its attributes; the ids of its constant
#: operands, and the arrays themselves, held so that no id is reused; its input shapes; the kernel).
_PREPARED: dict[int, tuple[weakref.ref, dict, tuple, tuple, tuple, Any]] = {}


def same_attrs(a: dict, b: dict) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an attribute that does not compare (an array): treat as changed
        return False


def prepared(op: Op, constants: list[np.ndarray | None], shapes: tuple, build: Callable[[], T]) -> T:
    """``build()`` once per op: a program runs each op with the same attributes and constants every time.
    It is built again when the op's attributes, a constant operand (its array, compared by identity) or
    the input shapes (``shapes``) change, so an edited graph never runs a stale kernel."""
    bases = tuple([None if c is None else (c if c.base is None else c.base) for c in constants])
    ids = tuple(map(id, bases))
    entry = _PREPARED.get(id(op))
    if (entry is not None and entry[0]() is op and entry[2] == ids and entry[4] == shapes
            and same_attrs(entry[1], op.attrs)):
        return entry[5]
    kernel = build()
    if entry is None or entry[0]() is not op:
        weakref.finalize(op, _PREPARED.pop, id(op), None)
    _PREPARED[id(op)] = (weakref.ref(op), copy.deepcopy(op.attrs), ids, bases, shapes, kernel)
    return kernel
