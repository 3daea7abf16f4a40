"""Scratch bytes per kernel path, written once: each formula is a Python expression over named shape quantities,
evaluated by the planner (mcuforge.ir.kernel_scratch_bytes) and generated into csrc/runtime/kind_scratch.h (which
kind_table.h includes) as ``static inline uint32_t mf_scratch_<name>(uint32_t <args>...)``, which the C kernels call
for the same size.

Expressions use + - * // and ``round_up(a, n)`` (a rounded up to a multiple of n), ``min(a, b)`` and ``max(a, b)``
on non-negative integers only, so that C's uint32 arithmetic gives the same value.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class ScratchFormula:
    """``mf_scratch_<name>(args)``: the scratch bytes an op of one of ``kinds`` plans on the kernel ``paths``
    (mcuforge.targets.Target.kernel_path) named; one formula per kind and path."""

    name: str
    kinds: tuple[str, ...]
    paths: tuple[str, ...]
    args: tuple[str, ...]
    expr: str
    why: str

    def __call__(self, **quantities: int) -> int:
        names = {"__builtins__": {}, "round_up": round_up, "min": min, "max": max}
        return int(eval(self.expr, names, quantities))  # noqa: S307 - ours

    def c_expr(self) -> str:
        """The expression in C: uint32 literals, round_up as MF_ROUND_UP, min / max as mf_scratch_min / _max."""
        text = re.sub(r"\bround_up\b", "MF_ROUND_UP", self.expr).replace("//", "/")
        text = re.sub(r"\b(min|max)\(", r"mf_scratch_\1(", text)
        return re.sub(r"(?<![\w.])(\d+)(?![\w.])", r"\1u", text)


def round_up(a: int, n: int) -> int:
    return (a + n - 1) // n * n


_FAST = ("dsp", "mve")
FORMULAS: tuple[ScratchFormula, ...] = (
    ScratchFormula("conv2d_s8_im2col", ("conv2d_s8",), ("mve",), ("depth",), "5 * round_up(depth, 16)",
                   "MVE: an int8 patch (depth = kh * kw * filter channels) and 4 interleaved ones in 16-byte chunks; "
                   "DSP: 2 int16 patches and an int8 one; 5 patches rounded up to 16 serve both (on DSP the smaller "
                   "plan of conv2d_s8_dsp, mcuforge.kinds.scratch.OPTIONAL_SCRATCH)"),
    ScratchFormula("conv2d_s8_dsp", ("conv2d_s8",), ("dsp",), ("depth", "filters", "window"),
                   "5 * round_up(depth, 16) + (2 * filters * round_up(depth, 8) + 2 * round_up(depth, 16)) "
                   "* min(1, round_up(depth, 8) - depth) * min(1, 65 // (depth + 1)) "
                   "+ (round_up(depth, 16) + 2 * filters * round_up(depth, 16) + 16 * filters) * (1 // max(window, 1)) "
                   "+ (4 * round_up(depth, 16) + 2 * filters * round_up(depth, 16) + 16 * filters) "
                   "* (window // 9) * (9 // max(window, 1)) * (1 - min(1, round_up(depth, 16) - depth))",
                   "conv2d_s8_im2col's patches, then, for a patch of at most 64 taps and not a multiple of 8 (the "
                   "few-input-channel first layers: 3x3x3 = 27), the filters copied with their rows zero-padded to "
                   "a multiple of 8 (28 for 25..28 taps), word-aligned, so that the 2 x 2 tiles' asm runs on "
                   "them, 2 bytes a tap (the 2 x 3 tiles' filters widened to int16 once), and 2 patches more: a "
                   "third int16 column (the 2 x 3 tiles at 28 taps); for a 1x1 kernel (window = kh * kw = 1), "
                   "one patch more (the pointwise 2 x 3 tiles' three int16 columns: 6 patches) and every filter "
                   "widened to int16 once per run (2 bytes a tap: the tiles' groups unpack no weights) with its "
                   "bias and output constants (16 bytes); for a 3x3 kernel on a multiple of 16 taps (window = 9), "
                   "the same for its 2 x 3 tiles with three int8 patches more (9 patches)"),
    ScratchFormula("conv2d_s8_pw23", (), (), ("depth", "window"),
                   "5 * round_up(depth, 16) + round_up(depth, 16) * (1 // max(window, 1)) "
                   "+ 4 * round_up(depth, 16) * (window // 9) * (9 // max(window, 1)) "
                   "* (1 - min(1, round_up(depth, 16) - depth))",
                   "conv2d_s8 on dsp, the plan between conv2d_s8_dsp's and conv2d_s8_im2col's "
                   "(OPTIONAL_SCRATCH): for a 1x1 kernel the 2 x 3 tiles' three int16 columns (6 patches), "
                   "their filters unpacked in the tiles; for a 3x3 kernel on a multiple of 16 taps, the same and "
                   "three int8 patches (9 patches); any other kernel, conv2d_s8_im2col's"),
    ScratchFormula("conv2d_s8_scalar", ("conv2d_s8",), ("scalar",), ("depth",), "12 * depth",
                   "cortex-m3: 3 columns of int32 pixel pairs"),
    ScratchFormula("conv2d_s4_im2col", ("conv2d_s4",), ("dsp",), ("depth",), "5 * round_up(depth, 8)",
                   "conv2d_s8's 5 patches, the patch rounded up to 8 (a word of 8 packed weights widened at a time)"),
    ScratchFormula("conv2d_s4_mve_unpacked", ("conv2d_s4",), ("mve",), ("depth", "filters"),
                   "5 * round_up(depth, 16) + depth * min(min(filters, 64), 4096 // max(depth, 1))",
                   "conv2d_s8's im2col scratch (its MVE path runs the op), then the filters unpacked to int8 as many "
                   "at a time as 4 KB holds, at most 64 (its output-stage table) and all of them; none beyond 4096 "
                   "taps (the packed-weight paths, which conv2d_s4_im2col's smaller plan serves, run then)"),
    ScratchFormula("fully_connected_s4_row", ("fully_connected_s4",), _FAST, ("depth",), "2 * round_up(depth, 8)",
                   "one input row widened to int16"),
    ScratchFormula("depthwise_conv2d_s4_weights", ("depthwise_conv2d_s4",), _FAST, ("numel",), "round_up(numel, 4)",
                   "its weights unpacked to int8"),
    ScratchFormula("add_s8_tables", ("add_s8",), ("scalar",), (), "2048",
                   "its inputs' two tables of 256 int32 (an add of equal shapes uses them)"),
    ScratchFormula("conv2d_s16_im2col", ("conv2d_s16",), ("dsp",), ("depth",), "round_up(2 * depth, 16)",
                   "one int16 im2col patch"),
    ScratchFormula("conv2d_s16_mve_patches", ("conv2d_s16",), ("mve",), ("depth",), "8 * round_up(depth, 8)",
                   "4 int16 im2col patches, each rounded up to 8 values (the 4 output pixels of an MVE pass); "
                   "the one-patch path's check (conv2d_s16_im2col) is met by it"),
    ScratchFormula("depthwise_conv2d_s8_rows", ("depthwise_conv2d_s8",), ("scalar",), ("taps", "span", "row", "pairs"),
                   "4 * (taps + (span + 1) * row + 2 * pairs)",
                   "the taps, a ring of the span rows the window reaches and a row of zeros, each `row` words of "
                   "packed pixel pairs, and the sums of `pairs` output pixel pairs (rows along the longer output "
                   "axis; the pixel-major 3x3 path's 384 bytes of tables are added where it runs)"),
    ScratchFormula("depthwise_conv2d_s8_dwp", ("depthwise_conv2d_s8",), ("dsp",), ("cols",),
                   "2 * (cols + 112 + (3 - 3 // (59 // (cols + 1) + cols // 59) * (59 // (cols + 1) + cols // 59)) "
                   "* cols + 3 // (59 // (cols + 1) + cols // 59) * 168)",
                   "the channel-planar 3x3 path's rings: 3 int16 rows of `cols` (12..56: the view's windows + 3, "
                   "rounded up to 4) for each of 4 channels, a channel's rows 56 halfwords apart (an immediate in "
                   "its asm), k channels side by side in them, the next k 168 halfwords on; k = 56 // cols for those "
                   "cols, written 59 // (cols + 1) + cols // 59 to be at least 1 for any cols"),
    ScratchFormula("recurrent_state", ("lstm_s8", "gru_s8"), ("portable", "scalar", "dsp", "mve"), ("hidden",),
                   "round_up(10 * hidden, 16)",
                   "one batch row's int16 cell (hidden) state and four int16 gate vectors"),
)
SCRATCH: dict[str, ScratchFormula] = {f.name: f for f in FORMULAS}


def render_c() -> str:
    """csrc/runtime/kind_scratch.h's text (self-contained: stdint.h only)."""
    out = ["/*", " * Generated from src/mcuforge/kinds/scratch.py by `python -m mcuforge.kinds`: do not edit",
           " * (tests/test_kinds.py fails while it is stale). Scratch bytes per kernel path: the planner's formulas",
           " * (mcuforge.ir.kernel_scratch_bytes), which the kernels call for the same size.", " */",
           "#ifndef MF_KIND_SCRATCH_H", "#define MF_KIND_SCRATCH_H", "", "#include <stdint.h>", "",
           "#define MF_ROUND_UP(a, n) (((a) + (n) - 1u) / (n) * (n))", "",
           "static inline uint32_t mf_scratch_min(uint32_t a, uint32_t b) { return a < b ? a : b; }",
           "static inline uint32_t mf_scratch_max(uint32_t a, uint32_t b) { return a > b ? a : b; }", ""]
    for f in FORMULAS:
        args = ", ".join(f"uint32_t {a}" for a in f.args) or "void"
        owner = f"{' / '.join(f.kinds)} on {', '.join(f.paths)}: " if f.kinds else ""  # else a smaller plan's
        doc = textwrap.wrap(f"{owner}{f.why}.", 112)
        out += [f"/* {doc[0]}", *(f" * {line}" for line in doc[1:])]
        out[-1] += " */"
        out += [f"static inline uint32_t mf_scratch_{f.name}({args}) {{ return {f.c_expr()}; }}", ""]
    out += ["#endif /* MF_KIND_SCRATCH_H */", ""]
    return "\n".join(out)


#: A kernel that runs a faster path with more scratch and, given a smaller plan of the named formulas (above,
#: largest first; the last the least a reader accepts), a slower path with the same bytes out (the kernel checks
#: the scratch it gets): (kind, kernel path) -> those formulas. conv2d_s4 on Helium: the filters unpacked to int8
#: (up to 4 KB) and run by conv2d_s8's MVE path, else the packed-weight paths. conv2d_s8 on DSP: a few-channel
#: layer's filters copied with padded rows (conv2d_s8_dsp) for the 2 x 2 tiles' asm, or a 1x1's filters widened
#: to int16 for its 2 x 3 tiles; the 2 x 3 tiles on int8 filters (conv2d_s8_pw23); else the im2col path's.
OPTIONAL_SCRATCH = {("conv2d_s4", "mve"): ("conv2d_s4_im2col",),
                    ("conv2d_s8", "dsp"): ("conv2d_s8_pw23", "conv2d_s8_im2col")}
