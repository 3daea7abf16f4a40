"""Ethos-U configurations and the per-op constraints the partitioner checks before Vela sees a graph.

The constraints are those ``vela --supported-ops-report`` lists for TOSA input (ethos-u-vela 5.2.0):
U55 and U65 share one table; U85 accepts every TOSA 1.0 PRO-INT operator with the same kernel and
stride envelope checked here (Vela itself is the final word: a subgraph it rejects is split, see
``partition``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Op
from ..tosa.lower import effective_stride


@dataclass(frozen=True)
class NpuConfig:
    name: str  # "ethos-u55-128"
    family: str  # "u55" | "u65" | "u85"
    macs: int  # MACs per cycle
    arch: str  # regor's architecture name
    system_config: str  # section of Vela's vela.ini
    memory_mode: str = "Shared_Sram"  # scratch (activations + NPU I/O) in the SRAM the CPU shares


_FAMILIES = {
    "u55": ("EthosU55", "Ethos_U55_High_End_Embedded", (32, 64, 128, 256)),
    "u65": ("EthosU65", "Ethos_U65_High_End", (256, 512)),
    "u85": ("EthosU85", "Ethos_U85_SYS_DRAM_Mid", (128, 256, 512, 1024, 2048)),
}

NPU_CONFIGS: dict[str, NpuConfig] = {
    f"ethos-{fam}-{macs}": NpuConfig(f"ethos-{fam}-{macs}", fam, macs, arch, sysconf)
    for fam, (arch, sysconf, all_macs) in _FAMILIES.items()
    for macs in all_macs
}

DEFAULT_NPU = "ethos-u55-128"


def get_npu(name: str) -> NpuConfig:
    try:
        return NPU_CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown NPU configuration {name!r}; known: {', '.join(NPU_CONFIGS)}") from None


def split_target(target: str) -> tuple[str, str | None]:
    """``"cortex-m55+ethos-u55-128"`` -> ("cortex-m55", "ethos-u55-128"); no "+": (target, None)."""
    cpu, plus, npu = target.partition("+")
    if not plus:
        return target, None
    get_npu(npu)
    return cpu, npu


def _int40(bias: np.ndarray | None) -> bool:
    return bias is None or bool(np.all(np.abs(np.asarray(bias, np.int64)) < (1 << 39)))


def npu_reason(npu: NpuConfig, graph: Graph, op: Op) -> str | None:
    """Why ``npu`` cannot run ``op`` (None when its documented constraints hold). TOSA lowering
    problems are checked separately (``mcuforge.tosa.unsupported_reason``)."""
    t, a = graph.tensors, op.attrs
    if op.kind in ("conv2d_s8", "depthwise_conv2d_s8"):
        w = t[op.inputs[1]]
        kh, kw = w.shape[1:3]
        if not (1 <= kh * kw <= 4096 and kh <= 64):
            return f"{npu.name}: kernel {kh}x{kw} outside 1 <= kh*kw <= 4096, kh <= 64"
        if any(not 1 <= s <= 3 for s in a["stride"]):
            return f"{npu.name}: stride {tuple(a['stride'])} outside 1..3"
        if op.kind == "conv2d_s8" and \
                np.abs(np.asarray(w.data, np.int64)).reshape(w.shape[0], -1).sum(axis=1).max() > 127 * 65536:
            return f"{npu.name}: sum of absolute weights above 127*65536"
        if op.inputs[2] and not _int40(t[op.inputs[2]].data):
            return f"{npu.name}: bias does not fit int40"
        if any(d > 1 for d in a["dilation"]) and npu.family != "u85":
            kh_eff = (kh - 1) * a["dilation"][0] + 1
            if kh_eff > 64:
                return f"{npu.name}: dilated kernel height {kh_eff} above 64"
    if op.kind in ("fully_connected_s8", "fully_connected_per_channel_s8") and op.inputs[2] and \
            not _int40(t[op.inputs[2]].data):
        return f"{npu.name}: bias does not fit int40"
    if op.kind in ("avgpool_s8", "maxpool_s8"):
        x = t[op.inputs[0]]
        kh, kw = a["kernel"]
        if any(not 1 <= s <= 3 for s in effective_stride(op)):
            return f"{npu.name}: pooling stride {tuple(a['stride'])} outside 1..3"
        if kh > 256 or kh * kw > 65536:
            return f"{npu.name}: pooling kernel {kh}x{kw} above kh <= 256, kh*kw <= 65536"
        if op.kind == "avgpool_s8":
            if x.shape[0] != 1:
                return f"{npu.name}: AVG_POOL2D needs batch 1"
            if any(a["padding"]) and (kh > 8 or kw > 8):
                return f"{npu.name}: padded AVG_POOL2D kernel {kh}x{kw} above 8x8"
    if op.kind in ("transpose",) and npu.family != "u85":
        if t[op.inputs[0]].dtype == "int32" and len(t[op.inputs[0]].shape) > 4:
            return f"{npu.name}: int32 TRANSPOSE above rank 4"
    for n in [*op.inputs, *op.outputs]:
        if n and not t[n].is_constant and any(d > 65536 for d in t[n].shape[1:]):
            return f"{npu.name}: tensor {n!r} has an axis above 65536"
    return None
