"""A16W8 (int16 activations, int8 weights) against int8 on the Cortex-M55 (Helium) in estimated cycles: the MLPerf
Tiny zoo models compiled both ways for cortex-m55 (as benchmarks/w4a8_cycles.py compiles them), one inference each on
the QEMU board with the cycle model (docs/cycles.md), and the ratio (issue 27's goal: at most 2.5). Prints the table
and the estimated cycles per op kind of each A16W8 program; writes no results file.

    python benchmarks/a16w8_cycles.py [model ...]
"""

from __future__ import annotations

import sys
import warnings
from collections import defaultdict

from w4a8_cycles import MLPERF_TINY, compile_model, estimated_cycles

from mcuforge.report import table


def per_kind(prog, example: tuple) -> dict[str, tuple[float, int]]:
    """Estimated cycles and MACs per op kind of one traced inference."""
    facts: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog.run(*example, backend="qemu", trace=True, measured=facts, board={"cycles": True})
    kinds: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for op, pop, cycles in zip(prog.graph.ops, prog.ops, facts["cycles"].op_cycles, strict=True):
        kinds[op.kind][0] += cycles
        kinds[op.kind][1] += pop.macs
    return {k: (c, m) for k, (c, m) in kinds.items()}


def main(names: list[str], kinds: bool = True) -> None:
    rows = []
    for name in names:
        int8, example = compile_model(name, "int8")
        a16, _ = compile_model(name, "a16w8")
        c8, c16 = estimated_cycles(int8, example), estimated_cycles(a16, example)
        rows.append([name, f"{c8:,.0f}", f"{c16:,.0f}", f"{c16 / c8:.3f}"])
        print(f"{name}: {c16 / c8:.3f}", flush=True)
        if kinds:
            for label, prog in (("int8", int8), ("a16w8", a16)):
                for kind, (c, m) in sorted(per_kind(prog, example).items(), key=lambda kv: -kv[1][0]):
                    print(f"    {label:6s} {kind:34s} {c:12,.0f} est. cycles  {c / m if m else 0:6.2f} cyc/MAC",
                          flush=True)
    print(table(["model", "int8 est. cycles", "A16W8 est. cycles", "A16W8 / int8"], rows))


if __name__ == "__main__":
    main(sys.argv[1:] or list(MLPERF_TINY))
