"""C kernels vs the Python host kernels, one op at a time.

Each case builds a one-op graph with random shapes and parameters, serializes it, runs it with the
host runtime (``mcuforge.runtime.execute`` on the deserialized graph) and with the C runtime built
for the host (``cruntime.run_program``), and compares the output bytes. int8 kernels, data
movement, quantize/dequantize and every fp32 op in the C table must be bit-exact (the host runtime
computes the fp32 ops as the C kernels do, ``runtime/fp32_exact.py``). The fp32 ops are also compared
with torch's aten op itself: bit-exact for those computed by single IEEE operations or copies, within a
stated float tolerance for the transcendental and reduction ops (other functions, other summation order).

The 200-case int8 sweeps also run on a DSP board (Cortex-M4, QEMU mps2-an386), where the optimized
paths the host build never compiles are taken (mf_dot_s8's SMLAD): each sweep's cases become one
program of independent ops, run in one firmware run and compared case by case with the host
Python kernels and the host C runtime (``test_sweep_on_dsp_board``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from mcuforge import cruntime, firmware
from mcuforge.ir import Graph, Op, QParams, Tensor, TensorRef
from mcuforge.kernels import add_quant_params, conv_output_hw
from mcuforge.lower.fallback import aten_fp32_attrs
from mcuforge.plan import plan_arena
from mcuforge.program import deserialize, serialize
from mcuforge.runtime import execute

CASES = 200  # random cases per int8 kernel


def one_op_program(inputs: list[Tensor], outputs: list[Tensor], kind: str, attrs: dict,
                   constants: list[Tensor] = (), backend: str = "int8", op_inputs: list[str] | None = None) -> bytes:
    """Serialized program of a single op; ``inputs`` are graph inputs, ``constants`` flash data."""
    tensors = {t.name: t for t in [*inputs, *constants, *outputs]}
    names = op_inputs if op_inputs is not None else [t.name for t in [*inputs, *constants]]
    op = Op(kind, names, [t.name for t in outputs], attrs, backend=backend)
    graph = Graph(tensors, [op], [t.name for t in inputs], [t.name for t in outputs], target="cortex-m55")
    plan_arena(graph)
    return serialize(graph)


def run_both(program: bytes, values: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    expected = execute(deserialize(program), values)
    got, _ = cruntime.run_program(program, values)
    return expected, got


def assert_same_bytes(expected: list[np.ndarray], got: list[np.ndarray], what: str) -> None:
    for e, g in zip(expected, got, strict=True):
        assert e.dtype == g.dtype and e.shape == g.shape, what
        if e.tobytes() != g.tobytes():
            diff = np.flatnonzero(e.reshape(-1).view(np.uint8) != g.reshape(-1).view(np.uint8))
            raise AssertionError(f"{what}: {diff.size} bytes differ, first at {diff[0]}")


def act(name: str, shape, dtype: str = "int8") -> Tensor:
    return Tensor(name, tuple(shape), dtype)


def const(name: str, data: np.ndarray) -> Tensor:
    dtype = {np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.int32): "int32",
             np.dtype(np.float32): "float32"}[data.dtype]
    return Tensor(name, data.shape, dtype, data=data)


def int8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def requant_params(rng, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Realistic multipliers/shifts mostly; sometimes the whole legal range (edge cases)."""
    n = channels if rng.random() < 0.7 else 1
    if rng.random() < 0.8:
        mult = rng.integers(1 << 30, (1 << 31) - 1, size=n, dtype=np.int64)
        shift = rng.integers(-12, 1, size=n)
    else:
        mult = rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64)
        mult[rng.random(n) < 0.2] = -(1 << 31)
        shift = rng.integers(-31, 31, size=n)
    return mult.astype(np.int32), shift.astype(np.int8)  # the program's dtypes (format 2.0: int8 shifts)


def act_range(rng) -> tuple[int, int]:
    if rng.random() < 0.5:
        return -128, 127
    lo = int(rng.integers(-128, 128))
    return lo, int(rng.integers(lo, 128))


def conv_like_case(rng, depthwise: bool):
    for _ in range(100):
        n, h, w, c = (int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 9)),
                      int(rng.integers(1, 7)))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stride = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pad = [int(rng.integers(0, 3)), int(rng.integers(0, 3))]
        dil = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        oh, ow = conv_output_hw((h, w), (kh, kw), stride, pad, dil)
        if oh >= 1 and ow >= 1:
            break
    dm = int(rng.integers(1, 4)) if depthwise else 1
    oc = c * dm if depthwise else int(rng.integers(1, 9))
    weight = int8(rng, (1, kh, kw, oc) if depthwise else (oc, kh, kw, c))
    bias = rng.integers(-(1 << 16), 1 << 16, size=oc).astype(np.int32) if rng.random() < 0.8 else None
    mult, shift = requant_params(rng, oc)
    lo, hi = act_range(rng)
    attrs = {"input_offset": int(rng.integers(-127, 129)), "output_offset": int(rng.integers(-128, 128)),
             "stride": stride, "padding": pad, "dilation": dil, "act_min": lo, "act_max": hi}
    if depthwise:
        attrs = {**{k: attrs[k] for k in list(attrs)[:5]}, "depth_multiplier": dm, "act_min": lo, "act_max": hi}
    consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else [])
    consts += [const("m", mult), const("s", shift)]
    names = ["x", "w", "b" if bias is not None else "", "m", "s"]
    kind = "depthwise_conv2d_s8" if depthwise else "conv2d_s8"
    program = one_op_program([act("x", (n, h, w, c))], [act("y", (n, oh, ow, oc))], kind, attrs, consts,
                             op_inputs=names)
    return program, [int8(rng, (n, h, w, c))]


def conv_sweep(depthwise: bool) -> list[tuple[str, bytes, list[np.ndarray]]]:
    rng = np.random.default_rng(1 + depthwise)
    return [(f"case {case}", *conv_like_case(rng, depthwise)) for case in range(CASES)]


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv2d_s8", "depthwise_conv2d_s8"])
def test_conv_kernels_bit_exact(depthwise):
    for what, program, values in conv_sweep(depthwise):
        assert_same_bytes(*run_both(program, values), what)


def fully_connected_case(rng):
    rows, depth, oc = int(rng.integers(1, 4)), int(rng.integers(1, 40)), int(rng.integers(1, 20))
    weight = int8(rng, (oc, depth))
    bias = rng.integers(-(1 << 20), 1 << 20, size=oc).astype(np.int32) if rng.random() < 0.8 else None
    mult, shift = requant_params(rng, oc)
    lo, hi = act_range(rng)
    consts = [const("w", weight)] + ([const("b", bias)] if bias is not None else [])
    consts += [const("m", mult), const("s", shift)]
    attrs = {"input_offset": int(rng.integers(-127, 129)), "output_offset": int(rng.integers(-128, 128)),
             "act_min": lo, "act_max": hi}
    x_shape = (rows, depth) if rng.random() < 0.5 else (rows, 1, depth)
    program = one_op_program([act("x", x_shape)], [act("y", (rows, oc))], "fully_connected_s8", attrs,
                             consts, op_inputs=["x", "w", "b" if bias is not None else "", "m", "s"])
    return program, [int8(rng, x_shape)]


def fully_connected_sweep() -> list[tuple[str, bytes, list[np.ndarray]]]:
    rng = np.random.default_rng(3)
    return [(f"case {case}", *fully_connected_case(rng)) for case in range(CASES)]


def test_fully_connected_bit_exact():
    for what, program, values in fully_connected_sweep():
        assert_same_bytes(*run_both(program, values), what)


def broadcast_shapes(rng) -> tuple[tuple[int, ...], tuple[int, ...]]:
    rank = int(rng.integers(1, 5))
    full = [int(rng.integers(1, 5)) for _ in range(rank)]
    a = [d if rng.random() < 0.7 else 1 for d in full]
    b = [d if rng.random() < 0.7 else 1 for d in full]
    b = b[int(rng.integers(0, rank)):] if rng.random() < 0.3 else b
    return tuple(a), tuple(b)


def add_sweep() -> list[tuple[str, bytes, list[np.ndarray]]]:
    rng = np.random.default_rng(4)
    cases = []
    for case in range(CASES):
        a_shape, b_shape = broadcast_shapes(rng)
        out_shape = np.broadcast_shapes(a_shape, b_shape)
        if rng.random() < 0.7:
            scales = 10.0 ** rng.uniform(-3, 0, size=3)
            params = add_quant_params(*scales)
        else:
            params = {"left_shift": int(rng.integers(0, 31))}
            for key in ("a", "b", "output"):
                params[f"{key}_multiplier"] = int(rng.integers(-(1 << 31), 1 << 31))
                params[f"{key}_shift"] = int(rng.integers(-31, 31))
        lo, hi = act_range(rng)
        attrs = {"a_offset": int(rng.integers(-127, 129)), "b_offset": int(rng.integers(-127, 129)),
                 "output_offset": int(rng.integers(-128, 128)), "act_min": lo, "act_max": hi, **params}
        program = one_op_program([act("a", a_shape), act("b", b_shape)], [act("y", out_shape)], "add_s8", attrs)
        cases.append((f"case {case}", program, [int8(rng, a_shape), int8(rng, b_shape)]))
    return cases


def test_add_s8_bit_exact():
    for what, program, values in add_sweep():
        assert_same_bytes(*run_both(program, values), what)


def pooling_sweep(kind: str) -> list[tuple[str, bytes, list[np.ndarray]]]:
    rng = np.random.default_rng(5)
    cases = []
    for case in range(CASES):
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        h, w = int(rng.integers(1, 10)), int(rng.integers(1, 10))
        k = [int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))]
        pad = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1]))]  # pad < kernel: no empty window
        stride = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        oh, ow = (h + 2 * pad[0] - k[0]) // stride[0] + 1, (w + 2 * pad[1] - k[1]) // stride[1] + 1
        lo, hi = act_range(rng)
        attrs = {"kernel": k, "stride": stride, "padding": pad, "act_min": lo, "act_max": hi, "output_hw": [oh, ow]}
        program = one_op_program([act("x", (n, h, w, c))], [act("y", (n, oh, ow, c))], kind, attrs)
        cases.append((f"case {case}", program, [int8(rng, (n, h, w, c))]))
    return cases


@pytest.mark.parametrize("kind", ["avgpool_s8", "maxpool_s8"])
def test_pooling_bit_exact(kind):
    for what, program, values in pooling_sweep(kind):
        assert_same_bytes(*run_both(program, values), what)


def test_pooling_window_all_padding_is_rejected_at_load():
    attrs = {"kernel": [1, 1], "stride": [1, 1], "padding": [1, 1], "act_min": -128, "act_max": 127,
             "output_hw": [4, 4]}
    program = one_op_program([act("x", (1, 2, 2, 1))], [act("y", (1, 4, 4, 1))], "avgpool_s8", attrs)
    with pytest.raises(cruntime.CRuntimeError, match=r"MF_ERR_SHAPE at op 0 \(avgpool_s8\)") as err:
        cruntime.run_program(program, [np.zeros((1, 2, 2, 1), np.int8)])
    assert err.value.op_index == 0


def clamp_reshape_transpose_sweep() -> list[tuple[str, bytes, list[np.ndarray]]]:
    rng = np.random.default_rng(6)
    cases = []
    for case in range(CASES):
        rank = int(rng.integers(1, 7))
        shape = tuple(int(rng.integers(1, 4)) for _ in range(rank))
        lo, hi = act_range(rng)
        values = [int8(rng, shape)]
        program = one_op_program([act("x", shape)], [act("y", shape)], "clamp_s8", {"act_min": lo, "act_max": hi})
        cases.append((f"clamp case {case}", program, values))

        dtype = str(rng.choice(["int8", "int32", "float32", "int16"]))
        x = (rng.standard_normal(shape) * 100).astype(dtype)
        perm = [int(p) for p in rng.permutation(rank)]
        out_shape = tuple(shape[p] for p in perm)
        program = one_op_program([act("x", shape, dtype)], [act("y", out_shape, dtype)], "transpose", {"perm": perm})
        cases.append((f"transpose case {case}", program, [x]))

        flat = (int(np.prod(shape)),)
        program = one_op_program([act("x", shape, dtype)], [act("y", flat, dtype)], "reshape", {})
        cases.append((f"reshape case {case}", program, [x]))
    return cases


def test_clamp_reshape_transpose_bit_exact():
    for what, program, values in clamp_reshape_transpose_sweep():
        assert_same_bytes(*run_both(program, values), what)


def quantize_dequantize_sweep() -> list[tuple[str, bytes, list[np.ndarray]]]:
    rng = np.random.default_rng(7)
    cases = []
    for case in range(CASES):
        n = int(rng.integers(1, 300))
        scale = float(10.0 ** rng.uniform(-4, 1))
        zp = int(rng.integers(-128, 128))
        q_ties = rng.integers(-200, 200, size=n) + 0.5  # exact halves before scaling: rounding ties
        x = np.where(rng.random(n) < 0.3, q_ties * np.float32(scale), rng.standard_normal(n) * 300 * scale)
        x = x.astype(np.float32)
        program = one_op_program([act("x", (n,), "float32")], [act("y", (n,), "int8")], "quantize",
                                 {"scale": scale, "zero_point": zp})
        cases.append((f"quantize case {case}", program, [x]))
        program = one_op_program([act("q", (n,), "int8")], [act("y", (n,), "float32")], "dequantize",
                                 {"scale": scale, "zero_point": zp})
        cases.append((f"dequantize case {case}", program, [int8(rng, (n,))]))
    return cases


def test_quantize_dequantize_bit_exact():
    for what, program, values in quantize_dequantize_sweep():
        assert_same_bytes(*run_both(program, values), what)


# ---------------------------------------------------------------------------------------------
# The same sweeps on a DSP board
# ---------------------------------------------------------------------------------------------

#: Cortex-M4 on QEMU mps2-an386: built with __ARM_FEATURE_DSP, so conv2d_s8, fully_connected_s8 and
#: transpose_conv2d_s8 take mf_dot_s8's SMLAD path (the host build runs the portable loop).
DSP_BOARD = "cortex-m4"


def merged_program(cases: list[tuple[str, bytes, list[np.ndarray]]], target: str) -> tuple[bytes, list, list]:
    """The one-op programs of a sweep as one program of independent ops (case i's tensors renamed
    ``c<i>.<name>``), so that one board run checks every case. Returns the program, its inputs and,
    per case, its description and the indices of its outputs."""
    tensors, ops, inputs, outputs, values, owners = {}, [], [], [], [], []
    for i, (what, program, case_values) in enumerate(cases):
        g = deserialize(program)

        def rename(name: str, i: int = i) -> str:
            return f"c{i}.{name}" if name else name  # "" marks an absent optional input

        for t in g.tensors.values():
            tensors[rename(t.name)] = dataclasses.replace(t, name=rename(t.name), offset=-1)
        ops += [dataclasses.replace(op, inputs=[rename(n) for n in op.inputs], outputs=[rename(n) for n in op.outputs])
                for op in g.ops]
        inputs += [rename(n) for n in g.inputs]
        owners.append((what, list(range(len(outputs), len(outputs) + len(g.outputs)))))
        outputs += [rename(n) for n in g.outputs]
        values += case_values
    graph = Graph(tensors, ops, inputs, outputs, target=target)
    plan_arena(graph)
    return serialize(graph), values, owners


def assert_sweep_on_board(cases: list[tuple[str, bytes, list[np.ndarray]]], target: str = DSP_BOARD) -> None:
    """Every case of a sweep, run in one firmware run on ``target``'s board: the same bytes as the Python
    host kernels and as the C runtime built for the host, case by case."""
    try:
        firmware.toolchain.require("arm-none-eabi-gcc")
        firmware.toolchain.require("qemu-system-arm")
    except firmware.ToolchainMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    program, values, owners = merged_program(cases, target)
    board, _, facts = firmware.run_on_qemu(program, values, target)
    assert facts["board"] == firmware.BOARDS[target].machine
    python = execute(deserialize(program), values)
    host_c, _ = cruntime.run_program(program, values)
    for what, indices in owners:
        for i in indices:
            assert_same_bytes([python[i]], [board[i]], f"{what}: host Python vs {target} board")
            assert_same_bytes([host_c[i]], [board[i]], f"{what}: host C vs {target} board")


#: The sweeps above by kernel, for the board run (test_c_kernels_ops.py has the others).
BOARD_SWEEPS = {
    "conv2d_s8": lambda: conv_sweep(False), "depthwise_conv2d_s8": lambda: conv_sweep(True),
    "fully_connected_s8": fully_connected_sweep, "add_s8": add_sweep,
    "avgpool_s8": lambda: pooling_sweep("avgpool_s8"), "maxpool_s8": lambda: pooling_sweep("maxpool_s8"),
    "clamp_s8, transpose, reshape": clamp_reshape_transpose_sweep, "quantize, dequantize": quantize_dequantize_sweep,
}


@pytest.mark.parametrize("sweep", list(BOARD_SWEEPS))
def test_sweep_on_dsp_board(sweep):
    assert_sweep_on_board(BOARD_SWEEPS[sweep]())


# ---------------------------------------------------------------------------------------------
# fp32 fallback ops
# ---------------------------------------------------------------------------------------------

#: fp32 ops computed by one IEEE operation per element (or a copy): identical to torch too.
EXACT_UNARY = ["relu", "neg", "abs"]
#: mf_math vs torch's vectorized (Sleef) functions: equal to torch within a few float32 ulp.
APPROX_UNARY = ["sigmoid", "tanh", "exp", "gelu", "silu", "hardswish", "hardsigmoid", "sqrt", "rsqrt", "log"]
RTOL, ATOL = 2e-6, 1e-6
#: Reductions sum in another order than torch: errors scale with the largest value, not each one.
REDUCE_RTOL = 1e-5


def aten_program(target: str, in_shapes: list[tuple], out_shapes: list[tuple], args: list, kwargs: dict | None = None,
                 dtypes: list[str] | None = None, consts: list[Tensor] = ()) -> bytes:
    dtypes = dtypes or ["float32"] * len(in_shapes)
    inputs = [act(f"x{i}", s, d) for i, (s, d) in enumerate(zip(in_shapes, dtypes, strict=True))]
    outputs = [act(f"y{i}", s, dtypes[0] if dtypes else "float32") for i, s in enumerate(out_shapes)]
    return one_op_program(inputs, outputs, "aten_fp32", aten_fp32_attrs(target, args, kwargs or {}), list(consts),
                          backend="fp32")


def torch_reference(program: bytes, values: list[np.ndarray]) -> list[np.ndarray]:
    """A one-op aten_fp32 program's outputs computed by torch's aten op itself (the host runtime computes
    as the C kernels do; this is the float semantics they approximate)."""
    from mcuforge.runtime.fp32 import _decode, resolve_aten

    graph = deserialize(program)
    op = graph.ops[0]
    given = dict(zip(graph.inputs, values, strict=True))
    tensors = [torch.from_numpy(np.ascontiguousarray(given[n] if n in given else graph.tensors[n].data))
               for n in op.inputs]
    result = resolve_aten(op.attrs["target"])(*_decode(op.attrs["args"], tensors),
                                              **{k: _decode(v, tensors) for k, v in op.attrs["kwargs"].items()})
    results = result if isinstance(result, (list, tuple)) else [result]
    return [r.numpy().reshape(graph.tensors[n].shape) for r, n in zip(results, op.outputs, strict=True)]


def check_fp32(program: bytes, values: list[np.ndarray], exact: bool | str, what: str) -> None:
    """The host runtime and the C runtime: the same bytes, always. Against torch's aten op: exact=True,
    the same bytes; False: within (RTOL, ATOL); "reduce": within REDUCE_RTOL of the largest input or
    output magnitude (cancellation in a sum makes small results inexact)."""
    expected, got = run_both(program, values)
    assert_same_bytes(expected, got, what)
    reference = torch_reference(program, values)
    if exact is True:
        assert_same_bytes(reference, got, f"{what} (torch)")
        return
    for e, g in zip(reference, got, strict=True):
        if exact == "reduce":
            scale = max(float(np.max(np.abs(e))), *(float(np.max(np.abs(v))) for v in values))
            np.testing.assert_allclose(g, e, rtol=REDUCE_RTOL, atol=REDUCE_RTOL * scale, err_msg=what)
        else:
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL, err_msg=what)


def floats(rng, shape, spread: float = 4.0) -> np.ndarray:
    return (rng.standard_normal(shape) * spread).astype(np.float32)


@pytest.mark.parametrize("name", EXACT_UNARY + APPROX_UNARY)
def test_fp32_unary(name):
    rng = np.random.default_rng(8)
    for case in range(40):
        shape = tuple(int(rng.integers(1, 6)) for _ in range(int(rng.integers(1, 5))))
        x = floats(rng, shape)
        if name in ("sqrt", "rsqrt", "log"):
            x = np.abs(x) + np.float32(1e-3)
        kwargs = {"approximate": "tanh"} if name == "gelu" and case % 2 else {}
        program = aten_program(f"aten.{name}.default", [shape], [shape], [TensorRef(0)], kwargs)
        check_fp32(program, [x], name in EXACT_UNARY, f"{name} case {case}")


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_fp32_binary_broadcast_bit_exact(name):
    rng = np.random.default_rng(9)
    for case in range(60):
        a_shape, b_shape = broadcast_shapes(rng)
        out = np.broadcast_shapes(a_shape, b_shape)
        if case % 3 == 2:  # tensor op scalar
            scalar = float(rng.standard_normal() * 3)
            program = aten_program(f"aten.{name}.Tensor", [a_shape], [out := a_shape], [TensorRef(0), scalar])
            check_fp32(program, [floats(rng, a_shape)], True, f"{name} scalar case {case}")
            continue
        program = aten_program(f"aten.{name}.Tensor", [a_shape, b_shape], [out], [TensorRef(0), TensorRef(1)])
        check_fp32(program, [floats(rng, a_shape), floats(rng, b_shape) + np.float32(0.1)], True,
                   f"{name} case {case}")


def test_fp32_clamp_hardtanh_bit_exact():
    rng = np.random.default_rng(10)
    for case in range(40):
        shape = (int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        lo = float(rng.uniform(-3, 0))
        hi = float(rng.uniform(0, 3))
        program = aten_program("aten.clamp.default", [shape], [shape], [TensorRef(0), lo, hi])
        check_fp32(program, [floats(rng, shape)], True, f"clamp case {case}")
        program = aten_program("aten.clamp.default", [shape], [shape], [TensorRef(0)], {"min": lo})
        check_fp32(program, [floats(rng, shape)], True, f"clamp min case {case}")
        program = aten_program("aten.hardtanh.default", [shape], [shape], [TensorRef(0), lo, hi])
        check_fp32(program, [floats(rng, shape)], True, f"hardtanh case {case}")


def test_fp32_reductions_within_tolerance():
    rng = np.random.default_rng(11)
    for case in range(40):
        shape = tuple(int(rng.integers(1, 7)) for _ in range(int(rng.integers(2, 5))))
        rank = len(shape)
        chosen = rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False)
        dims = [int(d) - (rank if rng.random() < 0.5 else 0) for d in chosen]  # some negative
        keep = bool(rng.random() < 0.5)
        norm = [d % rank for d in dims]
        out = tuple((1 if i in norm else s) for i, s in enumerate(shape) if keep or i not in norm)
        program = aten_program("aten.mean.dim", [shape], [out], [TensorRef(0), dims, keep])
        check_fp32(program, [floats(rng, shape)], "reduce", f"mean case {case}")

        dim = int(rng.integers(-rank, rank))
        program = aten_program("aten._softmax.default", [shape], [shape], [TensorRef(0), dim, False])
        check_fp32(program, [floats(rng, shape)], "reduce", f"softmax case {case}")

        k = int(rng.integers(1, rank + 1))
        normalized = list(shape[rank - k:])
        w = const("w", floats(rng, tuple(normalized)))
        b = const("b", floats(rng, tuple(normalized)))
        program = one_op_program(
            [act("x", shape, "float32")], [act("y", shape, "float32")], "aten_fp32",
            aten_fp32_attrs("aten.layer_norm.default",
                            [TensorRef(0), normalized, TensorRef(1), TensorRef(2), 1e-5, False], {}),
            [w, b], backend="fp32")
        check_fp32(program, [floats(rng, shape)], "reduce", f"layer_norm case {case}")


def test_fp32_movement_bit_exact():
    rng = np.random.default_rng(12)
    for case in range(40):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(rng.integers(1, 5)) for _ in range(rank))
        perm = [int(p) - (rank if rng.random() < 0.3 else 0) for p in rng.permutation(rank)]
        out = tuple(shape[p] for p in perm)
        program = aten_program("aten.permute.default", [shape], [out], [TensorRef(0), perm])
        check_fp32(program, [floats(rng, shape)], True, f"permute case {case}")

        flat = [int(np.prod(shape))]
        program = aten_program("aten.view.default", [shape], [tuple(flat)], [TensorRef(0), flat])
        check_fp32(program, [floats(rng, shape)], True, f"view case {case}")

        dim = int(rng.integers(-rank, rank))
        other = list(shape)
        other[dim] = int(rng.integers(1, 4))
        out = list(shape)
        out[dim] += other[dim]
        program = aten_program("aten.cat.default", [shape, tuple(other)], [tuple(out)],
                               [[TensorRef(0), TensorRef(1)], dim])
        check_fp32(program, [floats(rng, shape), floats(rng, tuple(other))], True, f"cat case {case}")


def test_unknown_aten_op_rejected_at_load_with_op_index():
    program = aten_program("aten.erfinv.default", [(4,)], [(4,)], [TensorRef(0)])
    with pytest.raises(cruntime.CRuntimeError, match=r"MF_ERR_UNSUPPORTED_OP at op 0 \(aten_fp32\)") as err:
        cruntime.run_program(program, [np.zeros(4, np.float32)])
    assert err.value.status == "MF_ERR_UNSUPPORTED_OP" and err.value.op_index == 0


def test_quantized_tensor_records_do_not_disturb_kernels():
    """qparams on the I/O tensors (as every compiled program has) are metadata only."""
    x = Tensor("x", (1, 4), "int8", QParams(0.1, 3))
    y = Tensor("y", (1, 4), "int8", QParams(0.1, 3))
    program = one_op_program([x], [y], "clamp_s8", {"act_min": 0, "act_max": 127})
    values = [np.array([[-5, 0, 5, 127]], np.int8)]
    assert_same_bytes(*run_both(program, values), "clamp with qparams")
