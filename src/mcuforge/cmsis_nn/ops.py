"""mcuforge's ops as CMSIS-NN calls: :func:`case_for_op` turns one op of a :class:`~mcuforge.ir.Graph` (its
constants, attributes and activation input values, in our layout) into the :class:`~.harness.Case` whose
comparison function computes the same thing with CMSIS-NN's kernel.

    case = case_for_op(graph, op, [x])          # x: the op's activation input(s), program dtype and layout
    (got,) = run_host([case])                   # CMSIS-NN's output, in the shape of the op's output tensor

Converters are registered per op kind with :func:`converts` by the family modules (:data:`FAMILY_MODULES`);
importing this module imports those that exist. An op kind without a converter raises NotImplementedError
naming the kind: it has no CMSIS-NN counterpart here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir import Graph, Op
from ..kernels.fc_pairs import S8_PAIRS, unpack_pairs
from .harness import Case

Converter = Callable[..., Case]

#: op kind -> its converter ``(graph, op, operands, **options) -> Case``; ``operands`` holds one value per
#: ``op.inputs`` entry (the activation value given, a constant's data, None for an absent optional input).
CONVERTERS: dict[str, Converter] = {}

#: The per-family modules that register converters, imported by this module when present: ops_s8 (the int8
#: kinds), ops_s16 (int16, int4 and the recurrent kinds), ops_minmax (minimum / maximum).
FAMILY_MODULES = ("ops_s8", "ops_s16", "ops_minmax")


def converts(*kinds: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of every op kind in ``kinds``."""
    def register(fn: Converter) -> Converter:
        for kind in kinds:
            if kind in CONVERTERS and CONVERTERS[kind] is not fn:
                raise ValueError(f"op kind {kind!r} already has a CMSIS-NN converter "
                                 f"({CONVERTERS[kind].__module__}.{CONVERTERS[kind].__name__})")
            CONVERTERS[kind] = fn
        return fn
    return register


def operands(graph: Graph, op: Op, inputs: Sequence[np.ndarray]) -> list[np.ndarray | None]:
    """One value per ``op.inputs`` entry: the activation (non-constant) inputs take ``inputs`` in order, a
    constant its data (S8_PAIRS weights in CMSIS-NN's plain order), an absent optional input ("") None."""
    values: list[np.ndarray | None] = []
    given = iter(inputs)
    for name in op.inputs:
        if not name:
            values.append(None)
            continue
        tensor = graph.tensors[name]
        if tensor.layout == S8_PAIRS:  # a DSP core's fully connected weights: the same values, row-major
            values.append(unpack_pairs(tensor.data, tuple(tensor.shape)))
            continue
        if tensor.is_constant:
            values.append(np.asarray(tensor.data))
            continue
        try:
            value = np.asarray(next(given))
        except StopIteration:
            raise ValueError(f"op {op.kind}: no value given for its activation input {name!r}") from None
        if tuple(value.shape) != tuple(tensor.shape):
            value = value.reshape(tensor.shape)
        values.append(value)
    if next(given, None) is not None:
        raise ValueError(f"op {op.kind}: more input values than activation inputs")
    return values


def case_for_op(graph: Graph, op: Op, inputs: Sequence[np.ndarray], **options: Any) -> Case:
    """The CMSIS-NN call that computes ``op`` on ``inputs`` (the values of its activation inputs, in
    ``op.inputs`` order, our dtype and layout). ``options`` go to the kind's converter; every converter takes
    ``function`` (another comparison function with the same ints and inputs, e.g. a specific conv path
    instead of the wrapper) and ``name`` (the case's name in messages)."""
    converter = CONVERTERS.get(op.kind)
    if converter is None:
        raise NotImplementedError(f"op kind {op.kind!r} has no CMSIS-NN counterpart in mcuforge.cmsis_nn.ops")
    case = converter(graph, op, operands(graph, op, inputs), **options)
    if not case.name:
        case.name = op.outputs[0] if op.outputs else op.kind
    return case


def output_tensor(graph: Graph, op: Op, index: int = 0):
    return graph.tensors[op.outputs[index]]


def per_channel(values: np.ndarray | None, channels: int, dtype=np.int32) -> np.ndarray:
    """A per-tensor (length 1) or per-channel parameter as ``channels`` values of ``dtype`` (CMSIS-NN's
    per-channel arrays are int32)."""
    v = np.asarray(values).reshape(-1).astype(np.int64)
    if v.size == 1:
        v = np.repeat(v, channels)
    if v.size != channels:
        raise ValueError(f"{v.size} per-channel values for {channels} channels")
    return np.ascontiguousarray(v.astype(dtype))


def _import_families() -> None:
    for name in FAMILY_MODULES:
        try:
            importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{name}":
                raise


_import_families()
