"""maximum_s8 / minimum_s8 kernels: the Python statement against independent ones (numpy's maximum/minimum,
and a port of CMSIS-NN's own pointer walk over N, H, W, C dims), the C kernel against the Python one (host,
ASan + UBSan, every Cortex-M build, and on the cortex-m4 (DSP) and cortex-m55 (MVE) boards), and both
readers refusing ops whose shapes do not fit."""

from __future__ import annotations

import itertools
import re
import subprocess

import numpy as np
import pytest
from board_sweep import BoardSweep
from cmsis_reference_minmax import cmsis_minmax, cmsis_row_walk_overruns
from test_c_kernels import act, assert_same_bytes, broadcast_shapes, const, int8, one_op_program, run_both

from mcuforge import cruntime
from mcuforge.ir import Graph, Op, QParams, Tensor
from mcuforge.kernels import maximum_s8, minimum_s8
from mcuforge.plan import plan_arena
from mcuforge.program import ProgramFormatError, deserialize, serialize
from mcuforge.targets import TARGETS

KINDS = {"maximum_s8": (maximum_s8, np.maximum, max), "minimum_s8": (minimum_s8, np.minimum, min)}
SWEEP_CASES = 200


@pytest.mark.parametrize("kind", list(KINDS))
def test_python_kernel_equals_numpy(kind):
    kernel, numpy_op, _ = KINDS[kind]
    rng = np.random.default_rng(1)
    for _ in range(200):
        a_shape, b_shape = broadcast_shapes(rng)
        if rng.random() < 0.5:
            a_shape, b_shape = b_shape, a_shape
        a, b = int8(rng, a_shape), int8(rng, b_shape)
        got = kernel(a, b)
        assert got.dtype == np.int8 and got.shape == np.broadcast_shapes(a_shape, b_shape)
        np.testing.assert_array_equal(got, numpy_op(a, b))
    extremes = np.array([-128, -127, -1, 0, 1, 126, 127], np.int8)
    a, b = np.meshgrid(extremes, extremes, indexing="ij")
    np.testing.assert_array_equal(kernel(a, b), numpy_op(a, b))
    with pytest.raises(ValueError, match="do not broadcast"):
        kernel(np.zeros((2, 3), np.int8), np.zeros((3, 2), np.int8))
    with pytest.raises(ValueError):
        kernel(np.zeros(3, np.int16), np.zeros(3, np.int8))


@pytest.mark.parametrize("kind", list(KINDS))
def test_python_kernel_equals_cmsis_walk(kind):
    """Every broadcast pattern of two rank-4 inputs (each dim full or 1, either side): the port of CMSIS-NN's
    walk gives the kernel's values wherever it stays inside its inputs, and overruns exactly on the
    patterns cmsis_row_walk_overruns names (see that module)."""
    kernel, _, pick = KINDS[kind]
    rng = np.random.default_rng(2)
    overruns = 0
    for full in ((2, 3, 4, 5), (1, 2, 3, 17), (3, 1, 2, 2)):
        for m1, m2 in itertools.product(itertools.product([0, 1], repeat=4), repeat=2):
            d1 = tuple(f if k else 1 for f, k in zip(full, m1, strict=True))
            d2 = tuple(f if k else 1 for f, k in zip(full, m2, strict=True))
            out = tuple(np.broadcast_shapes(d1, d2))
            a, b = int8(rng, d1), int8(rng, d2)
            want = kernel(a, b).reshape(-1)
            if cmsis_row_walk_overruns(d1, d2):
                overruns += 1
                with pytest.raises(IndexError):
                    cmsis_minmax(pick, a.reshape(-1).tolist(), d1, b.reshape(-1).tolist(), d2, out)
                continue
            got = np.array(cmsis_minmax(pick, a.reshape(-1).tolist(), d1, b.reshape(-1).tolist(), d2, out), np.int8)
            np.testing.assert_array_equal(got, want, err_msg=f"{d1} vs {d2}")
    assert overruns == 32 + 32 + 0  # H = 1 in the third: no input has one value per row


# ------------------------------------------------------------------------------------------- host C

def minmax_case(rng, kind: str):
    a_shape, b_shape = broadcast_shapes(rng)
    if rng.random() < 0.5:
        a_shape, b_shape = b_shape, a_shape
    if rng.random() < 0.2:  # long rows: the 16-lane (MVE) and 4-lane (DSP) loops and their tails
        n = int(rng.integers(1, 70))
        a_shape, b_shape = (1, 2, n), ((1, 1, n) if rng.random() < 0.5 else (1, 2, 1))
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    if rng.random() < 0.25:  # b a constant (a clamp bound, a buffer)
        program = one_op_program([act("a", a_shape)], [act("y", out_shape)], kind, {},
                                 [const("b", int8(rng, b_shape))])
        return program, [int8(rng, a_shape)], f"{kind} {a_shape} with constant {b_shape}"
    program = one_op_program([act("a", a_shape), act("b", b_shape)], [act("y", out_shape)], kind, {})
    return program, [int8(rng, a_shape), int8(rng, b_shape)], f"{kind} {a_shape}, {b_shape}"


@pytest.mark.parametrize("kind", list(KINDS))
def test_c_kernel_equals_python(kind):
    rng = np.random.default_rng(3 + (kind == "minimum_s8"))
    for case in range(SWEEP_CASES):
        program, values, what = minmax_case(rng, kind)
        assert_same_bytes(*run_both(program, values), f"case {case}: {what}")


def _graph(kind: str, ins: list[tuple[str, tuple[int, ...], str]], out: tuple[tuple[int, ...], str]) -> Graph:
    t = {n: Tensor(n, s, d, QParams(0.1, 0)) for n, s, d in ins}
    t["y"] = Tensor("y", out[0], out[1], QParams(0.1, 0))
    graph = Graph(t, [Op(kind, [n for n, _, _ in ins], ["y"], {})], [n for n, _, _ in ins], ["y"])
    plan_arena(graph)
    return graph


@pytest.mark.parametrize("kind", list(KINDS))
def test_in_place_on_either_input(kind):
    """The output exactly on input 0 or on input 1 (ir.IN_PLACE_INPUTS; the other input broadcast or not):
    both readers accept it and the values are the kernel's."""
    rng = np.random.default_rng(5)
    for shape, other in (((3, 37), (1, 37)), ((2, 3, 5, 16), (1, 3, 1, 16)), ((40,), (40,)), ((2, 33), (2, 1))):
        for on in (0, 1):
            shapes = [shape, other] if on == 0 else [other, shape]
            graph = _graph(kind, [("a", shapes[0], "int8"), ("b", shapes[1], "int8")], (shape, "int8"))
            graph.tensors["y"].offset = graph.tensors["ab"[on]].offset
            program = serialize(graph)
            values = [int8(rng, s) for s in shapes]
            expected, got = run_both(program, values)
            np.testing.assert_array_equal(expected[0], KINDS[kind][1](*values))
            assert_same_bytes(expected, got, f"{kind} in place on input {on}, {shapes}")


#: Ops no reader may accept: (inputs, output).
BAD_OPS = [
    ([("a", (2, 3), "int8"), ("b", (3, 2), "int8")], ((2, 3), "int8")),  # no broadcast
    ([("a", (2, 3), "int8"), ("b", (1, 3), "int8")], ((3, 2), "int8")),  # output not the broadcast shape
    ([("a", (4,), "int8"), ("b", (4,), "int8")], ((1, 4), "int8")),  # output of another rank
    ([("a", (1, 1, 2, 2, 2), "int8"), ("b", (1, 1, 2, 2, 2), "int8")], ((1, 1, 2, 2, 2), "int8")),  # rank 5
    ([("a", (4,), "int16"), ("b", (4,), "int16")], ((4,), "int16")),  # not int8
]


@pytest.mark.parametrize("kind", list(KINDS))
def test_bad_shapes_rejected_by_writer_and_both_readers(kind, monkeypatch):
    from mcuforge.program import writer

    for ins, out in BAD_OPS:
        graph = _graph(kind, ins, out)
        with pytest.raises(ValueError, match=kind):
            serialize(graph)
        with monkeypatch.context() as m:  # written anyway, as a damaged file would hold it
            m.setattr(writer, "minmax_problem", lambda op, tensors: None)
            program = serialize(graph)
        with pytest.raises(ProgramFormatError, match=kind):
            deserialize(program)
        values = [np.zeros(s, np.int8 if d == "int8" else np.int16) for _, s, d in ins]
        with pytest.raises(cruntime.CRuntimeError, match=rf"MF_ERR_SHAPE at op 0 \({kind}\)"):
            cruntime.run_program(program, values)


def test_kernels_under_sanitizers(tmp_path):
    """The C kernel's rows and walker under AddressSanitizer and UBSan (exactly-sized arena)."""
    sweep = board_sweep(seed=21)
    sweep.assert_same_on_host_c("cortex-m3", flags=(), sanitize_dir=tmp_path)


#: The instruction each core's build of the row loop must hold: the DSP path's SEL, MVE's VMAX/VMIN on bytes.
VECTOR_INSTRUCTION = {"cortex-m4": "sel", "cortex-m33": "sel", "cortex-m55": "vmax.s8"}


@pytest.mark.parametrize("target", ["cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m33", "cortex-m55"])
def test_kernel_builds_for_cortex_m(target, tmp_path):
    """-Werror builds on every core; the DSP and MVE builds take their vector rows."""
    flags = [*TARGETS[target].gcc_flags, "-mthumb", *cruntime.WARNING_FLAGS, "-O2", f"-I{cruntime.CSRC / 'include'}"]
    source = cruntime.CSRC / "kernels" / "minmax_s8.c"
    result = subprocess.run(["arm-none-eabi-gcc", *flags, "-S", "-o", "minmax.s", str(source)], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"minmax_s8.c for {target}:\n{result.stderr}"
    assembly = (tmp_path / "minmax.s").read_text()
    if target in VECTOR_INSTRUCTION:
        instruction = VECTOR_INSTRUCTION[target]
        assert re.search(rf"\s{re.escape(instruction)}\s", assembly), f"no {instruction} on {target}"


# ------------------------------------------------------------------------------------------- boards

def board_sweep(seed: int) -> BoardSweep:
    """Both kinds: equal shapes of every length around the 4- and 16-lane loops (tails included), a scalar
    either side, and random broadcasts (rows of either input repeated, rank 1 to 4)."""
    rng = np.random.default_rng(seed)
    sweep = BoardSweep()
    lengths = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 257]
    for kind in KINDS:
        for i, n in enumerate(lengths):
            shape = (1, n) if i % 2 else (1, 1, 2, n)
            sweep.add(f"{kind}_same_{n}_{i}", kind, {}, [(act("a", shape), int8(rng, shape)),
                                                       (act("b", shape), int8(rng, shape))], [act("y", shape)])
            one = (1,) * len(shape)
            scalar_first = i % 3 == 0
            sa, sb = (one, shape) if scalar_first else (shape, one)
            sweep.add(f"{kind}_scalar_{n}_{i}", kind, {},
                      [(act("a", sa), int8(rng, sa)), (act("b", sb), int8(rng, sb))], [act("y", shape)])
        for i in range(40):
            a_shape, b_shape = broadcast_shapes(rng)
            if i % 4 == 0:  # odd last dims: row tails on both vector paths
                last = int(rng.choice([17, 19, 33, 45]))
                a_shape, b_shape = (*a_shape[:-1], last), (*b_shape[:-1], last if rng.random() < 0.5 else 1)
                if len(a_shape) != len(b_shape):
                    b_shape = b_shape[-len(a_shape):] if len(b_shape) > len(a_shape) else b_shape
            if rng.random() < 0.5:
                a_shape, b_shape = b_shape, a_shape
            out = tuple(np.broadcast_shapes(a_shape, b_shape))
            if i % 5 == 0:  # a constant operand
                b = int8(rng, b_shape)
                sweep.add(f"{kind}_bcast_const_{i}", kind, {}, [(act("a", a_shape), int8(rng, a_shape))],
                          [act("y", out)], constants=[const("b", b)])
            else:
                sweep.add(f"{kind}_bcast_{i}", kind, {}, [(act("a", a_shape), int8(rng, a_shape)),
                                                         (act("b", b_shape), int8(rng, b_shape))], [act("y", out)])
    return sweep


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_sweep_on_board(target):
    sweep = board_sweep(seed=21)
    assert len(sweep) > 150
    facts = sweep.assert_same_on_board(target)
    assert facts["board"]
