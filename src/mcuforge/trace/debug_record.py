"""The debug record (``<program>.dbg.json``): what the Inspector needs to explain a trace.

For every op: its debug handle (the op index in format 1.0), precision, module path and type, source file
and line, the original aten ops and fx nodes, the fp32 reference node (the fx node of the float
graph whose value the op's output is), and its tensors with their quantization. The program's
payload CRC ties the record, and every trace, to one program file.
"""

from __future__ import annotations

import struct
from typing import Any

from ..ir import Graph, Tensor, op_precision

FORMAT = "mcuforge-debug-record"
VERSION = 2
PAYLOAD_CRC_OFFSET = 16  # the program file header's payload CRC32 (docs/format.md)


def program_crc(program_bytes: bytes) -> int:
    """The payload CRC32 stored in a program file's header."""
    if len(program_bytes) < PAYLOAD_CRC_OFFSET + 4:
        raise ValueError("not a program file: too short for a header")
    return struct.unpack_from("<I", program_bytes, PAYLOAD_CRC_OFFSET)[0]


def tensor_info(graph: Graph, name: str, index: int) -> dict[str, Any]:
    t: Tensor = graph.tensors[name]
    return {
        "name": name, "index": index, "shape": list(t.shape), "dtype": t.dtype, "layout": t.layout,
        "scale": None if t.qparams is None else t.qparams.scale,
        "zero_point": None if t.qparams is None else t.qparams.zero_point,
        "constant": t.is_constant, "offset": t.offset, "nbytes": t.nbytes,
    }


def _split_source(source: str) -> tuple[str, int | None]:
    file, _, line = source.rpartition(":")
    return (file, int(line)) if line.isdigit() else (source, None)


def build_debug_record(graph: Graph, program_bytes: bytes, meta: dict[str, Any]) -> dict[str, Any]:
    index_of = {name: i for i, name in enumerate(graph.tensors)}
    ops = []
    for i, op in enumerate(graph.ops):
        source = op.debug.get("source", "")
        file, line = _split_source(source)
        ops.append({
            **op.debug,
            "index": i, "debug_handle": i, "kind": op.kind, "backend": op.backend, "reason": op.reason,
            "precision": op_precision(op, graph.tensors),
            "module": op.debug.get("module", ""), "module_type": op.debug.get("module_type", ""),
            "source": source, "source_file": file, "source_line": line,
            "aten": list(op.debug.get("aten", [])), "nodes": list(op.debug.get("nodes", [])),
            "reference": op.debug.get("reference"),
            "inputs": [tensor_info(graph, n, index_of[n]) for n in op.inputs if n],
            "outputs": [tensor_info(graph, n, index_of[n]) for n in op.outputs],
        })
    return {
        "format": FORMAT, "version": VERSION, "program_crc32": program_crc(program_bytes),
        "meta": meta, "ops": ops,
    }
