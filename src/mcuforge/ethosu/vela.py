"""Compile a TOSA graph for an Ethos-U with Vela (ethos-u-vela's C++ core, ``ethosu.regor``, in-process).

The result is what Arm's Ethos-U core driver takes (``ethosu_invoke_v3``): the command stream (a
"COP1" driver payload) and the read-only weights blob, plus the scratch size; the NPU's inputs and
outputs live in the scratch region at the offsets Vela chose. Vela's performance estimates come with it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from .npu import NpuConfig

#: Base-pointer regions of Vela's command stream (the core driver's base_addr[] order).
REGION_WEIGHTS, REGION_SCRATCH, REGION_SCRATCH_FAST = 0, 1, 2


class VelaError(RuntimeError):
    """Vela rejected a graph (e.g. an op or configuration the NPU cannot run)."""


@dataclass
class VelaResult:
    command_stream: bytes
    weights: bytes
    scratch_bytes: int
    input_offsets: list[int]  # in the scratch region, per TOSA graph input
    output_offsets: list[int]
    input_bytes: list[int]  # the size Vela gives each input/output (checked against the IR tensors)
    output_bytes: list[int]
    npu_cycles: int
    total_cycles: int
    macs: int
    sram_bytes: int  # Vela's peak SRAM use (scratch: activations and NPU I/O)
    flash_bytes: int  # Vela's read-only (weights) use
    npu_ops: int
    cpu_ops: int
    #: Vela's per-layer figures by the name of the TOSA tensor the layer writes: (npu_cycles, op_cycles, macs).
    layers: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def _config_file() -> Path:
    from ethosu import regor

    return Path(regor.__file__).parent / "config_files" / "Arm" / "vela.ini"


@functools.cache
def _system_config(npu: NpuConfig) -> str:
    """Regor's system configuration text, as the vela CLI builds it."""
    ncores = 1
    return (f"[architecture]\nmacs={npu.macs}\ncores={ncores}\n[vela]\nsystem_config_name={npu.system_config}\n"
            f"memory_mode_name={npu.memory_mode}\n" + _config_file().read_text())


_OPTIONS = ("\n[compiler]\nenable_db=true\noutput_format=Raw\ncop_format=COP1\n\n[scheduler]\noptimize=Performance\n"
            "arena_size_limit=4294967296\ndisable_feature=\ncpu_tensor_alignment=16\ntensor_allocator=HillClimb\n"
            "\n[graph]\n")


def _nbytes(t) -> int:
    n = int(t.element_size)
    for d in t.shape:
        n *= int(d)
    return n


def compile_tosa(flatbuffer: bytes, npu: NpuConfig) -> VelaResult:
    """Vela's command stream, weights and estimates for one TOSA graph (raises VelaError)."""
    from ethosu import regor

    try:
        model = regor.compile(npu.arch, flatbuffer, "TOSA", _system_config(npu), options=_OPTIONS)
    except Exception as exc:  # noqa: BLE001 - regor raises RuntimeError (and others) with Vela's message
        raise VelaError(str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)) from exc
    if model.scratch_fast.size:
        raise VelaError(f"Vela used a fast-scratch region ({model.scratch_fast.size} bytes) in memory mode "
                        f"{npu.memory_mode}")
    for t in [*model.inputs, *model.outputs]:
        if t.region != REGION_SCRATCH:
            raise VelaError(f"Vela placed an NPU input/output in region {t.region}, not the scratch region")
    report = model.perf_report
    sram = 0
    for name, memory in report.memories.items():
        if str(name).lower() == "sram":
            sram = int(memory.peakUsage)
    layers: dict[str, tuple[int, int, int]] = {}
    perf = model.opt_database.tables.get("perf") if model.opt_database is not None else None
    if perf is not None:
        col = {h: k for k, h in enumerate(perf.header)}
        for row in perf.data:
            old = layers.get(row[col["name"]], (0, 0, 0))
            layers[row[col["name"]]] = (old[0] + int(row[col["npu_cycles"]]), old[1] + int(row[col["op_cycles"]]),
                                        old[2] + int(row[col["mac_count"]]))
    return VelaResult(
        layers=layers,
        command_stream=bytes(model.command_stream), weights=bytes(model.read_only.data),
        scratch_bytes=int(model.scratch.size),
        input_offsets=[int(t.address) for t in model.inputs], output_offsets=[int(t.address) for t in model.outputs],
        input_bytes=[_nbytes(t) for t in model.inputs], output_bytes=[_nbytes(t) for t in model.outputs],
        npu_cycles=int(report.npuCycles), total_cycles=int(report.totalCycles), macs=int(report.macCount),
        sram_bytes=sram or int(model.scratch.size), flash_bytes=int(report.readOnlyPeakUsage),
        npu_ops=int(report.npuOps), cpu_ops=int(report.cpuOps),
    )
