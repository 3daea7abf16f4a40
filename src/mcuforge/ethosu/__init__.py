"""Ethos-U NPUs: partition a program into NPU subgraphs (TOSA, compiled by Vela) and CPU ops.

``mcuforge.compile(..., target="cortex-m55+ethos-u55-128")`` partitions while compiling;
:func:`delegate` partitions an already compiled program. Needs the ``ethos-u`` extra
(tosa-tools, ethos-u-vela).
"""

from .npu import DEFAULT_NPU, NPU_CONFIGS, NpuConfig, get_npu, npu_reason, split_target
from .program import DelegateRecord, delegate

__all__ = ["DEFAULT_NPU", "NPU_CONFIGS", "DelegateRecord", "NpuConfig", "delegate", "get_npu", "npu_reason",
           "split_target"]
