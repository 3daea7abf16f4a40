"""The kind table (mcuforge.kinds) is the one place a kind's facts are written: the C header generated from it is
current, no kind id is written by hand elsewhere, the tables derived from it agree with the runtimes, and the
refactor onto it changed no program file."""

import re
from pathlib import Path

import pytest

import mcuforge
from mcuforge.cruntime import CSRC
from mcuforge.kernels.registry import registered
from mcuforge.kinds import KIND, KINDS, kinds_where
from mcuforge.kinds.cheader import HEADER, KERNEL_LIST, SCRATCH_HEADER, render, render_kernel_list
from mcuforge.kinds.scratch import render_c as render_scratch
from mcuforge.lower.int8 import EXAMPLES
from mcuforge.runtime.ops import KERNELS

SRC = Path(mcuforge.__file__).resolve().parent
GOLDEN = Path(__file__).parent / "golden_programs"


def test_kind_table_header_is_current() -> None:
    assert HEADER.read_text() == render(), "stale csrc/runtime/kind_table.h: run `python -m mcuforge.kinds`"
    assert KERNEL_LIST.read_text() == render_kernel_list(), \
        "stale csrc/kernels/kernel_list.h: run `python -m mcuforge.kinds`"
    assert SCRATCH_HEADER.read_text() == render_scratch(), \
        "stale csrc/runtime/kind_scratch.h: run `python -m mcuforge.kinds`"


def test_ids_and_names_unique() -> None:
    assert len({s.id for s in KINDS}) == len(KINDS) and len(KIND) == len(KINDS)
    assert all(0 < s.id < 65536 for s in KINDS)


def test_no_kind_id_literal_in_c() -> None:
    """Kernels take their head from kind_table.h; no C file compares a kind with a number or writes a kind id in
    a kernel definition."""
    bad = []
    for path in sorted(CSRC.rglob("*")):
        if path.suffix not in (".c", ".h") or path == HEADER:
            continue
        text = path.read_text()
        for m in re.finditer(r"const mf_kernel \w+ = \{\s*([^,]+),", text):
            if not m.group(1).startswith("MF_KIND_HEAD_"):
                bad.append(f"{path.name}: {m.group(0)}")
        bad += [f"{path.name}: {m.group(0)}" for m in re.finditer(r"\bkind\w*\s*(?:[=!<>]=|[<>])\s*\d+", text)]
        if path.parent.name == "runtime":
            bad += [f"{path.name}: {m.group(0)}" for m in re.finditer(r"case\s+\d+u?\s*:", text)]
    assert not bad, bad


def test_no_kind_id_literal_in_python() -> None:
    """Only the kind table numbers kinds: no '"id": <n>' table and no kind-id comparison elsewhere in the package."""
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "kinds":
            continue
        text = path.read_text()
        bad += [f"{path.relative_to(SRC)}: {m.group(0)}" for m in re.finditer(r"\"id\":\s*\d+", text)]
        bad += [f"{path.relative_to(SRC)}: {m.group(0)}" for m in re.finditer(r"\bkind_id\s*[=!]=\s*\d+", text)]
    assert not bad, bad


def test_every_kind_has_its_kernels() -> None:
    """A kind the compiler can emit has a Python kernel and (the delegate op aside) a C kernel in kernel_list.h."""
    listed = re.findall(r"^MF_KERNEL\((\w+)\)", (CSRC / "kernels" / "kernel_list.h").read_text(), re.M)
    assert listed == [s.kernel for s in KINDS if s.kernel], "kernel_list.h: a line per kind with a C kernel, id order"
    assert set(KERNELS) == set(KIND)
    assert registered().keys() <= KERNELS.keys()  # the self-registered ones (mcuforge.kernels.registry) are in


def test_derived_sets() -> None:
    from mcuforge.accuracy.sensitivity import WEIGHTED_KINDS
    from mcuforge.ethosu.partition import COMPUTE_KINDS
    from mcuforge.tosa import LOWERED_KINDS

    assert set(WEIGHTED_KINDS) == set(kinds_where(searchable_weights=True))
    assert set(COMPUTE_KINDS) == set(kinds_where(npu_compute=True)) <= set(LOWERED_KINDS)
    assert set(LOWERED_KINDS) == set(kinds_where(tosa=True))
    assert all(s.cmsis_nn for s in KINDS), "say each kind's CMSIS-NN counterpart, or that it has none"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.mcuf")), ids=lambda p: p.stem)
def test_program_files_written_before_the_kind_table_round_trip(path: Path) -> None:
    """Program files written by the tree before the kind table (zoo models on cortex-m3/m4/m55: every int8 family,
    recurrent kinds, the fp32 fallback) read and write back byte for byte: ids, attribute order, optional attributes
    and precisions are what they were. Files, not a compile, so no CPU's float calibration enters."""
    data = path.read_bytes()
    assert mcuforge.load(path).to_bytes() == data


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_each_kind_example_lowers_to_its_kind(kind: str) -> None:
    """A lowering's example model (int8_lowering(example=...), each kind's fuzz seed) compiles to a program holding
    the kind: the aten op reaches it from torch, not the fp32 fallback."""
    from mcuforge import fuzz
    from mcuforge.program import deserialize

    kinds = {op.kind for op in deserialize(fuzz.seed_programs_of(f"kind_{kind}")).ops}
    assert kind in kinds and "aten_fp32" not in kinds, kinds


def test_scratch_formulas_are_the_kernels_own(tmp_path: Path) -> None:
    """Each scratch formula (mcuforge.kinds.scratch) is what the planner computes and what its C kernels call:
    kind_scratch.h's mf_scratch_<name>, compiled, gives the Python value on a grid of shape quantities, and some
    kernel of csrc/kernels calls it."""
    import itertools
    import shutil
    import subprocess

    from mcuforge.kinds.scratch import FORMULAS

    pairs = [(kind, path) for f in FORMULAS for kind in f.kinds for path in f.paths]
    assert len(pairs) == len(set(pairs)), "one formula per kind and kernel path"
    assert {kind for kind, _ in pairs} <= set(KIND)
    kernels = "".join(p.read_text() for p in sorted((CSRC / "kernels").glob("*.c")))
    assert not [f.name for f in FORMULAS if f"mf_scratch_{f.name}(" not in kernels], "a formula no kernel calls"
    values = (0, 1, 3, 7, 8, 15, 16, 17, 100, 4095)
    calls, want = [], []
    for f in FORMULAS:
        for args in itertools.product(values, repeat=len(f.args)) if f.args else [()]:
            calls.append(f"printf(\"%u\\n\", (unsigned)mf_scratch_{f.name}({', '.join(f'{a}u' for a in args)}));")
            want.append(f(**dict(zip(f.args, args, strict=True))))
    src = tmp_path / "scratch.c"
    src.write_text("#include <stdio.h>\n#include \"kind_scratch.h\"\nint main(void) {\n" + "\n".join(calls)
                   + "\nreturn 0;\n}\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a host C compiler"
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(HEADER.parent), str(src), "-o",
                    str(tmp_path / "scratch")], check=True)
    got = subprocess.run([str(tmp_path / "scratch")], capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in got] == want
