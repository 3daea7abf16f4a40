"""Rebuild the fuzz regression inputs that are program files, in today's program format.

The C harness found that no reader checked an op's output against its inputs' arena bytes
(ASan ``memcpy-param-overlap`` in ``concat_s8``). The input it found was a mutated format-1.0
seed; once the format moved on, readers stopped it at the version check and it no longer
reached the check it was saved for. This script writes the same defect in the current format:
a valid two-input ``concat_s8`` program whose input 0 is then moved inside its output's bytes,
both CRCs recomputed, so the overlap check (docs/format.md, Validation step 10) is the first
one that fails.

    PYTHONPATH=src python scripts/fuzz_regressions.py      # rewrites tests/fuzz_regressions/c-*.bin
"""

from __future__ import annotations

import struct
from pathlib import Path

from mcuforge.fuzz import fix_program_crcs
from mcuforge.ir import Graph, Op, QParams, Tensor
from mcuforge.plan import plan_arena
from mcuforge.program import read_header, serialize

OUT = Path(__file__).resolve().parent.parent / "tests" / "fuzz_regressions"
TENSOR_OFFSET_FIELD = 44  # the arena offset's byte in a tensor record (docs/format.md)
SHIFT = 16  # input 0 starts inside the output: a partial overlap, as memcpy's ranges were


def concat_output_overlaps_input() -> bytes:
    """A concat_s8 whose output 'y' shares arena bytes with its input 'a' (CRCs valid)."""
    q = QParams(0.05, 3)
    tensors = {
        "a": Tensor("a", (1, 4, 4, 8), "int8", q),
        "b": Tensor("b", (1, 4, 4, 8), "int8", q),
        "y": Tensor("y", (1, 4, 4, 16), "int8", q),
    }
    graph = Graph(tensors, [Op("concat_s8", ["a", "b"], ["y"], {"axis": 3})], ["a", "b"], ["y"],
                  target="cortex-m4")
    plan_arena(graph)
    data = bytearray(serialize(graph))
    header = read_header(data)
    a = list(tensors).index("a")
    moved = tensors["y"].offset + SHIFT  # inside y, and inside the arena: y is twice a's size
    struct.pack_into("<I", data, header.tensors_offset + a * header.tensor_record_size + TENSOR_OFFSET_FIELD, moved)
    return fix_program_crcs(bytes(data))


def main() -> None:
    path = OUT / "c-concat-output-overlaps-input.bin"
    path.write_bytes(concat_output_overlaps_input())
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
