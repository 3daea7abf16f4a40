"""Host runtime: executes an IR graph (as read from a program file) op by op, in one arena.

- ``executor``: the arena and the op loop (``execute``), with an observer hook for tracing.
- ``ops``: one adapter per op kind (the ``KERNELS`` table) that unpacks an op's tensors and
  attributes into the arguments of a kernel in ``mcuforge.kernels``.
- ``fp32``: the fp32 fallback op (``aten_fp32``): ``fp32_exact`` for the ops that compute (the C kernels' float32
  arithmetic, in their order), the aten op itself for data movement and selection.
"""

from .executor import Arena, ExecutionObserver, OpExecutionError, execute
from .ops import KERNELS

__all__ = ["KERNELS", "Arena", "ExecutionObserver", "OpExecutionError", "execute"]
