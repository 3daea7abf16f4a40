"""The C runtime's view of the kind table: csrc/runtime/kind_table.h and csrc/kernels/kernel_list.h, generated
(``python -m mcuforge.kinds``).

The loader, the registry and every kernel take a kind's id, name, input counts, attribute types, precisions,
in-place inputs and int4 use from kind_table.h, so no kind id is written by hand in C; the registry's list of
kernels (kernel_list.h) is the kinds with a C kernel (``KindSpec.kernel``), in id order; kind_scratch.h holds the
scratch formulas of :mod:`mcuforge.kinds.scratch`.
"""

from __future__ import annotations

from pathlib import Path

from .scratch import render_c as render_scratch
from .spec import KindSpec
from .table import KINDS

HEADER = Path(__file__).resolve().parent.parent / "csrc" / "runtime" / "kind_table.h"
KERNEL_LIST = HEADER.parent.parent / "kernels" / "kernel_list.h"
SCRATCH_HEADER = HEADER.parent / "kind_scratch.h"
_LETTER = {"int": "i", "float": "f", "ints": "I", "str": "s", "any": "a"}
_PREC = {"fp32": "MF_PREC_FP32", "a8": "MF_PREC_A8", "a8w8": "MF_PREC_A8W8", "a8w4": "MF_PREC_A8W4",
         "a16": "MF_PREC_A16", "a16w8": "MF_PREC_A16W8"}


def macro(spec: KindSpec) -> str:
    """The kind's id macro, ``MF_KIND_<NAME>``."""
    return "MF_KIND_" + spec.name.upper()


def attr_types(spec: KindSpec) -> str:
    """One letter per attribute (mf_internal.h), a '?' before the optional trailing ones."""
    required = [_LETTER[t] for name, t in spec.attrs if name not in spec.optional_attrs]
    optional = [_LETTER[t] for name, t in spec.attrs if name in spec.optional_attrs]
    return "".join(required) + ("?" + "".join(optional) if optional else "")


def _mask(positions: tuple[int, ...]) -> str:
    return " | ".join(f"1u << {p}" for p in positions) if positions else "0"


def _switch(name: str, doc: str, cases: dict[str, str], default: str, arg: str = "") -> list[str]:
    head = f"static inline uint32_t {name}(uint16_t kind{arg}) {{"
    lines = [f"/* {doc} */", head, "    switch (kind) {"]
    by_value: dict[str, list[str]] = {}
    for kind_macro, value in cases.items():
        by_value.setdefault(value, []).append(kind_macro)
    for value, macros in by_value.items():
        lines += [f"    case {m}:" for m in macros] + [f"        return {value};"]
    lines += ["    default:", f"        return {default};", "    }", "}", ""]
    return lines


def render() -> str:
    """The header's text."""
    out = ["/*", " * Generated from src/mcuforge/kinds/table.py by `python -m mcuforge.kinds`: do not edit",
           " * (tests/test_kinds.py fails while it is stale). One line per op kind there; see docs/adding-an-op.md.",
           " */", "#ifndef MF_KIND_TABLE_H", "#define MF_KIND_TABLE_H", "", "#include <stdint.h>", "",
           '#include "kind_scratch.h" /* the scratch formulas (mcuforge/kinds/scratch.py) */', "",
           "/* The program file's kind ids. */"]
    out += [f"#define {macro(s)} {s.id}u" for s in KINDS]
    out += ["", "/* A kernel's mf_kernel head: kind, name, fewest and most inputs (255: any number), optional-input",
            " * mask, attribute types. A kernel is defined as {MF_KIND_HEAD_<name>, check, run}. */"]
    for s in KINDS:
        lo, hi = s.n_inputs
        out.append(f'#define MF_KIND_HEAD_{s.name} {macro(s)}, "{s.name}", {lo}, {hi}, {_mask(s.optional_inputs)}, '
                   f'"{attr_types(s)}"')
    out.append("")
    precisions = {macro(s): " | ".join(f"(1u << {_PREC[p]})" for p in s.precisions) for s in KINDS}
    out += _switch("mf_kind_precisions", "The precisions an op of the kind may record: bit p for MF_PREC_* code p.",
                   precisions, "0u")
    in_place = {macro(s): f"pos < 32u && (({_mask(s.in_place)}) >> pos & 1u)" for s in KINDS if s.in_place}
    out += _switch("mf_kind_in_place", "1 when the kind may write its output exactly onto its input `pos`.",
                   in_place, "0u", ", uint32_t pos")
    int4 = {macro(s): "input == 1u" for s in KINDS if s.int4_weights}
    out += _switch("mf_kind_int4_input", "1 when input `input` of the kind may be a packed int4 tensor.",
                   int4, "0u", ", uint32_t input")
    out += ["#endif /* MF_KIND_TABLE_H */", ""]
    return "\n".join(out)


def render_kernel_list() -> str:
    """kernel_list.h's text: one ``MF_KERNEL(<kernel>)`` line per kind with a C kernel, in id order."""
    out = ["/*", " * Generated from src/mcuforge/kinds/table.py by `python -m mcuforge.kinds`: do not edit",
           " * (tests/test_kinds.py fails while it is stale). The kernels of this runtime, one line each:",
           " * MF_KERNEL(name) refers to the `const mf_kernel mf_kernel_<name>` defined in kernels/<file>.c",
           " * (KindSpec.kernel). Not include-guarded on purpose: runtime/registry.c includes it twice with",
           " * different MF_KERNEL definitions. In increasing kind id: mf_kernel_find binary-searches this list.",
           " */"]
    out += [f"MF_KERNEL({s.kernel})" for s in sorted(KINDS, key=lambda s: s.id) if s.kernel]
    return "\n".join(out) + "\n"


def _write(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def write(path: Path = HEADER, kernel_list: Path = KERNEL_LIST, scratch: Path = SCRATCH_HEADER) -> bool:
    """Write the header, the kernel list and the scratch header; True when any changed."""
    changed = [_write(path, render()), _write(kernel_list, render_kernel_list()), _write(scratch, render_scratch())]
    return any(changed)
