"""How much flash and RAM a program needs on a board: runtime code, constants, arena, stack."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..ir import DTYPES
from ..program import deserialize
from . import toolchain
from .builder import build
from .qemu import run_on_qemu


@dataclass
class SizeReport:
    target: str
    runtime_code_bytes: int  # text + rodata of the runtime objects (tracing compiled out)
    runtime_code_bytes_traced: int  # the same, built with MF_TRACE=1
    runtime_objects: dict[str, int] = field(default_factory=dict)  # object -> text bytes (no trace)
    program_bytes: int | None = None  # the program file (flash)
    constant_bytes: int | None = None  # of it, the constants
    arena_bytes: int | None = None  # RAM the runtime asks for (activations + scratch)
    stack_bytes: int | None = None  # the firmware's stack high-water mark on the board
    invoke_stack_bytes: int | None = None  # of it, what loading and running the program used
    instructions: int | None = None  # one inference


def object_text_bytes(objects: list[Path]) -> dict[str, int]:
    """``arm-none-eabi-size`` text (code + read-only data) of each object."""
    if not objects:
        return {}
    size = toolchain.require("arm-none-eabi-size")
    out = subprocess.run([size, *map(str, objects)], capture_output=True, text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines()[1:]:
        cols = line.split()
        # objects are named after their source path in csrc/, "/" written as "__" (builder._object_name)
        sizes[Path(cols[5]).name.removesuffix(".o").replace("__", "/") + ".c"] = int(cols[0])
    return sizes


def _program_bytes(program: Any) -> bytes:
    if isinstance(program, bytes | bytearray | memoryview):
        return bytes(program)
    if isinstance(program, str | Path):
        return Path(program).read_bytes()
    return program.to_bytes()  # a mcuforge.Program


def size_report(target: str, program: Any = None) -> SizeReport:
    """Runtime code bytes on ``target``; with ``program`` (bytes, a path or a Program) also its
    constant and arena bytes and the stack high-water mark measured by running it once on QEMU
    (zero inputs)."""
    plain = sorted((build(target, trace=False).parent / "runtime").glob("*.o"))
    traced = sorted((build(target, trace=True).parent / "runtime").glob("*.o"))
    per_object = object_text_bytes(plain)
    report = SizeReport(target, sum(per_object.values()), sum(object_text_bytes(traced).values()), per_object)
    if program is None:
        return report
    data = _program_bytes(program)
    graph = deserialize(data)
    zeros = [np.zeros(graph.tensors[n].shape, DTYPES[graph.tensors[n].dtype]) for n in graph.inputs]
    _outputs, _trace, facts = run_on_qemu(data, zeros, target, graph=graph)
    report.program_bytes = len(data)
    report.constant_bytes = graph.constant_bytes
    report.arena_bytes = facts["arena_bytes"]
    report.stack_bytes = facts["stack_bytes"]
    report.invoke_stack_bytes = facts["invoke_stack_bytes"]
    report.instructions = facts["instructions"]
    return report


def format_size_report(report: SizeReport) -> str:
    """A few aligned lines for the CLI."""
    rows = [("target", report.target), ("runtime code", f"{report.runtime_code_bytes} B"),
            ("runtime code, tracing in", f"{report.runtime_code_bytes_traced} B")]
    if report.program_bytes is not None:
        rows += [("program (flash)", f"{report.program_bytes} B"), ("  constants", f"{report.constant_bytes} B"),
                 ("arena (RAM)", f"{report.arena_bytes} B"),
                 ("stack high-water", f"{report.stack_bytes} B (mf_* calls: {report.invoke_stack_bytes} B)"),
                 ("instructions", f"{report.instructions}")]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
