"""How the adapters (``ops``, ``ops_s16``, ``ops_recurrent``) see operands: every input with a leading run axis
(size G for activations, 1 for constants, see ``executor``), int4 constants as packed bytes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PackedWeights:
    """An int4 constant as the host runtime hands it to a kernel: the packed bytes and the logical shape they
    hold, the two arguments (filter data, filter_dims) the s4 kernels take, and the bytes' layout (``"plain"``:
    CMSIS-NN's s4 packing; ``"s4_halves"``: mcuforge.kernels.int4.S4_HALVES)."""

    packed: np.ndarray
    shape: tuple[int, ...]
    layout: str = "plain"


def fold_runs(x: np.ndarray, rank: int) -> np.ndarray:
    """Merge the run axis into the tensor's own leading (batch) axis: ``(G, N, ...) -> (G*N, ...)``."""
    return x.reshape((-1, *x.shape[x.ndim - rank + 1:]))


def constant(x: np.ndarray | PackedWeights | None) -> np.ndarray | PackedWeights | None:
    """A constant operand without its run axis (``None`` for an absent optional input)."""
    if x is None or isinstance(x, PackedWeights):
        return x
    return x[0]


def with_rank(x: np.ndarray, rank: int) -> np.ndarray:
    """Leading 1s after the run axis, so operands of a broadcasting op line up: ``(G, *shape)``
    with ``len(shape) == rank``."""
    return x.reshape((x.shape[0], *(1,) * (rank + 1 - x.ndim), *x.shape[1:]))
