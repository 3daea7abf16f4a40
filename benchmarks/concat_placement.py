"""Concat by placement along the channels (docs/memory.md): the arena and the ESTIMATED cycles (mcuforge.cycles, one
untraced inference on the core's QEMU board) of the SqueezeNet-like test model (tests/test_concat_channels.py
``FireNet``), as compiled (the first fire module placed, pitched) and with every concat a copy; and the zoo models
that have a channel concat. Prints only.

    python benchmarks/concat_placement.py
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from mcuforge import compile as compile_model
from mcuforge.cycles import plugin
from mcuforge.cycles import run as cycle_run
from mcuforge.firmware import qemu
from mcuforge.firmware.builder import build
from mcuforge.ir import Graph, input_bytes
from mcuforge.program import serialize
from mcuforge.zoo import MODELS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the model the tests check
from test_concat_channels import FireNet, _compile, _unplaced  # noqa: E402


def estimate(graph: Graph, xs: list[np.ndarray], target: str) -> tuple[int, float]:
    """(instructions, estimated cycles) of one inference of ``graph`` on ``target``'s board."""
    elf = build(target, trace=False)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        args = plugin.qemu_args(folder / "counts.txt", cycle_run.marks(elf, traced=False))
        qemu.boot(folder, target, serialize(graph), input_bytes(graph, xs), qemu_args=args)
        est = cycle_run.estimate_run(plugin.parse(folder / "counts.txt"), elf, target)
    return est.instructions, est.cycles


def main() -> None:
    warnings.simplefilter("ignore")
    for target in ("cortex-m4", "cortex-m55"):
        placed = _compile(FireNet(), (1, 3, 32, 32), 7, target).graph
        copy = _unplaced(placed)
        xs = [np.random.default_rng(0).integers(-128, 128, placed.tensors[placed.inputs[0]].shape, dtype=np.int8)]
        (ic, cc), (ip, cp) = estimate(copy, xs, target), estimate(placed, xs, target)
        print(
            f"FireNet 32x32 {target}: arena {copy.arena_bytes:,} -> {placed.arena_bytes:,} B; instructions "
            f"{ic:,} -> {ip:,}; estimated cycles {cc:,.0f} -> {cp:,.0f}"
        )
    for name, make in MODELS.items():
        model, example = make()
        graph = compile_model(model, example, target="cortex-m4", progress=False).graph
        if any(op.kind == "concat_s8" and op.attrs.get("axis") == 3 for op in graph.ops):
            print(
                f"zoo {name} cortex-m4: arena {_unplaced(graph).arena_bytes:,} -> {graph.arena_bytes:,} B "
                f"({sum(1 for t in graph.tensors.values() if t.pitch)} pitched tensors)"
            )


if __name__ == "__main__":
    main()
