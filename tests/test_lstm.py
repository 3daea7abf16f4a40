"""The fused recurrent layers (lstm_s8: CMSIS-NN's arm_lstm_unidirectional_s8; gru_s8 in its style): the
Python kernels, both routes (the compiled loops of mcuforge.kernels.jit and the numpy route), against the
independent integer statement (tests/cmsis_reference_lstm.py) and each other, random and edge cases; host
Python == host C (portable dot products) == QEMU cortex-m4 (DSP) and cortex-m55 (MVE); the fused
rewrites against nn.LSTM / nn.GRU in fp32; kws_lstm and kws_gru compiled to a handful of ops, every MAC on
an integer kernel, at least as accurate as ExecuTorch's flow (recurrent layer in fp32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from board_sweep import BoardSweep
from cmsis_reference_lstm import ref_gru_s8, ref_lstm_s8
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import mcuforge
from mcuforge.capture import capture
from mcuforge.ir import Graph, Op, Tensor
from mcuforge.kernels import jit
from mcuforge.kernels import lstm as lstm_module
from mcuforge.kernels.gru import gru_s8
from mcuforge.kernels.lstm import lstm_s8
from mcuforge.lstm_op import FusedGRU, FusedLSTM
from mcuforge.plan import plan_arena
from mcuforge.program import serialize
from mcuforge.quantize import CortexMQuantizer
from mcuforge.rnn import rewrite_recurrent
from mcuforge.zoo import MODELS


def lstm_case(rng, edge: str = "") -> tuple[dict, dict]:
    """(arrays, parameters) of one random layer; ``edge`` pushes one part to its limits."""
    n, t = int(rng.integers(1, 4)), int(rng.integers(1, 7))
    features, hidden = int(rng.choice([1, 3, 4, 5, 8, 17, 33])), int(rng.choice([1, 2, 4, 7, 16]))
    w_ih = rng.integers(-127, 128, (4 * hidden, features), dtype=np.int8)
    w_hh = rng.integers(-127, 128, (4 * hidden, hidden), dtype=np.int8)
    x = rng.integers(-128, 128, (n, t, features), dtype=np.int8)
    b_ih = rng.integers(-(1 << 20), 1 << 20, 4 * hidden).astype(np.int32)
    b_hh = rng.integers(-(1 << 16), 1 << 16, 4 * hidden).astype(np.int32)
    # multipliers in [2^30, 2^31): gate inputs around Q3.12 (shifts near -6), some saturating
    mults = lambda: [int(v) for v in rng.integers(1 << 30, (1 << 31) - 1, 4)]  # noqa: E731
    shifts = lambda lo, hi: [int(v) for v in rng.integers(lo, hi, 4)]  # noqa: E731
    p = {"input_multipliers": mults(), "input_shifts": shifts(-9, -3), "hidden_multipliers": mults(),
         "hidden_shifts": shifts(-9, -3), "forget_to_cell_multiplier": 1 << 30, "forget_to_cell_shift": -14,
         "input_to_cell_multiplier": int(rng.integers(1 << 30, (1 << 31) - 1)),
         "input_to_cell_shift": int(rng.integers(-25, -14)),
         "output_multiplier": int(rng.integers(1 << 30, (1 << 31) - 1)), "output_shift": int(rng.integers(-24, -18)),
         "output_offset": int(rng.integers(-128, 128)), "cell_scale_power": int(rng.integers(-16, 3)),
         "cell_clip": 32767}
    if edge == "saturate":  # pre-activations and products past int16 / int8, wrapping biases
        p["input_shifts"], p["hidden_shifts"] = shifts(0, 8), shifts(0, 8)
        b_ih = rng.choice(np.array([-(2**31), 2**31 - 1, 0], np.int64), 4 * hidden).astype(np.int32)
        p["input_to_cell_shift"], p["output_shift"] = int(rng.integers(-14, 0)), int(rng.integers(-16, 0))
    elif edge == "clip":
        p["cell_clip"] = int(rng.integers(1, 3000))
    elif edge == "extremes":
        x[:] = rng.choice(np.array([-128, 127], np.int8), x.shape)
        w_ih[:] = rng.choice(np.array([-127, 127], np.int8), w_ih.shape)
        p["output_offset"] = int(rng.choice([-128, 127]))
        p["cell_scale_power"] = int(rng.choice([-43, -15, -14, -12, 2]))  # -13 and below: a right shift
        p["forget_to_cell_multiplier"], p["forget_to_cell_shift"] = (1 << 31) - 1, int(rng.integers(-20, -5))
    arrays = {"x": x, "w_ih": w_ih, "w_hh": w_hh, "input_bias": b_ih, "hidden_bias": b_hh}
    return arrays, p


EDGES = ["", "saturate", "clip", "extremes"]
#: The host kernels' two routes (the conftest fixture switches mcuforge.kernels.jit off for "numpy").
ROUTES = pytest.mark.parametrize("kernel_route", ["jit", "numpy"])


@ROUTES
@pytest.mark.parametrize("edge", EDGES, ids=lambda e: e or "random")
def test_lstm_s8_matches_cmsis_reference(edge, kernel_route):
    rng = np.random.default_rng(EDGES.index(edge))
    for _ in range(12):
        a, p = lstm_case(rng, edge)
        got = lstm_s8(**a, **p)
        assert got.dtype == np.int8 and got.tolist() == _reference("lstm_s8", a, p)


def test_lstm_s8_argument_checks():
    a, p = lstm_case(np.random.default_rng(0))
    with pytest.raises(ValueError, match="cell_scale_power"):
        lstm_s8(*a.values(), **{**p, "cell_scale_power": 3})
    with pytest.raises(ValueError, match="input_shifts"):
        lstm_s8(*a.values(), **{**p, "input_shifts": [31, 0, 0, 0]})
    with pytest.raises(ValueError, match="weights"):
        lstm_s8(a["x"], a["w_ih"][:-1], a["w_hh"], a["input_bias"], a["hidden_bias"], **p)


def gru_case(rng, edge: str = "") -> tuple[dict, dict]:
    """(arrays, parameters) of one random GRU layer; ``edge`` pushes one part to its limits."""
    a, p = lstm_case(rng, edge)
    hidden = a["w_hh"].shape[1]
    a = {"x": a["x"], "w_ih": a["w_ih"][:3 * hidden], "w_hh": a["w_hh"][:3 * hidden],
         "input_bias": a["input_bias"][:3 * hidden], "hidden_bias": a["hidden_bias"][:3 * hidden]}
    q = {k: p[k][:3] for k in ("input_multipliers", "input_shifts", "hidden_multipliers", "hidden_shifts")}
    # the hidden terms: Q0.15 state times int8 weights to Q3.12 (shifts near -10)
    q["hidden_shifts"] = [s - 4 for s in q["hidden_shifts"]] if edge != "saturate" else q["hidden_shifts"]
    q.update(output_multiplier=int(rng.integers(1 << 30, (1 << 31) - 1)), output_offset=p["output_offset"],
             output_shift=int(rng.integers(-10, -4)) if edge != "saturate" else int(rng.integers(-3, 3)))
    return a, q


KERNELS = {"lstm_s8": (lstm_case, lstm_s8, ref_lstm_s8), "gru_s8": (gru_case, gru_s8, ref_gru_s8)}


def _reference(kind: str, a: dict, p: dict) -> list:
    ref = KERNELS[kind][2]
    return ref(*(a[k].tolist() for k in ("x", "w_ih", "w_hh", "input_bias", "hidden_bias")), p)


@ROUTES
@pytest.mark.parametrize("edge", ["", "saturate", "extremes"], ids=lambda e: e or "random")
def test_gru_s8_matches_reference(edge, kernel_route):
    rng = np.random.default_rng(10 + EDGES.index(edge))
    for _ in range(12):
        a, p = gru_case(rng, edge)
        got = gru_s8(**a, **p)
        assert got.dtype == np.int8 and got.tolist() == _reference("gru_s8", a, p)


def _both_routes(kernel, a: dict, p: dict, monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    """(compiled loops, numpy route) of one layer."""
    monkeypatch.setattr(jit, "ENABLED", True)
    compiled = kernel(**a, **p)
    monkeypatch.setattr(jit, "ENABLED", False)
    return compiled, kernel(**a, **p)


@pytest.mark.skipif(not jit.ENABLED, reason="numba is not installed (or MCUFORGE_JIT=0)")
@pytest.mark.parametrize("kind", list(KERNELS))
def test_recurrent_routes_agree(kind, monkeypatch):
    """The compiled loops == the numpy route, byte for byte, on many random layers: batches of 1-9 rows,
    sequences of 1-13 steps, hidden sizes not multiples of 4, every edge case (saturation, clipping, extremes)."""
    case, kernel, _ref = KERNELS[kind]
    rng = np.random.default_rng(20 + len(kind))
    for i in range(150):
        a, p = case(rng, EDGES[i % len(EDGES)])
        n, t, hidden = int(rng.integers(1, 10)), int(rng.choice([1, 2, 3, 5, 8, 13])), a["w_hh"].shape[1]
        if i % 3 == 0:  # wider layers too (hidden sizes 5 to 40)
            hidden = int(rng.integers(5, 41))
            a["w_hh"] = rng.integers(-128, 128, (a["w_hh"].shape[0] // a["w_hh"].shape[1] * hidden, hidden),
                                     dtype=np.int8)
            a["w_ih"] = rng.integers(-128, 128, (a["w_hh"].shape[0], a["w_ih"].shape[1]), dtype=np.int8)
            a["input_bias"] = rng.integers(-(1 << 20), 1 << 20, a["w_hh"].shape[0]).astype(np.int32)
            a["hidden_bias"] = rng.integers(-(1 << 16), 1 << 16, a["w_hh"].shape[0]).astype(np.int32)
        a["x"] = rng.integers(-128, 128, (n, t, a["w_ih"].shape[1]), dtype=np.int8)
        compiled, numpy_route = _both_routes(kernel, a, p, monkeypatch)
        assert compiled.dtype == numpy_route.dtype == np.int8 and compiled.shape == (n, t, hidden)
        assert compiled.tobytes() == numpy_route.tobytes(), (i, EDGES[i % len(EDGES)])


def test_dot_weights_hold_every_dot_product_exactly():
    """lstm.dot_weights' float type holds the BLAS dot products exactly: at FLOAT32_EXACT_DEPTH int8 features,
    -128 x -128 but the last 127 x 1, a sum of 2^24 - 2^14 + 127, in float32; one feature deeper, 2^24 + 127,
    which float32 rounds, in float64; int16 state vectors in float64."""
    for depth in (lstm_module.FLOAT32_EXACT_DEPTH, lstm_module.FLOAT32_EXACT_DEPTH + 1):
        w = np.full((3, depth), -128, np.int8)
        w[:, -1] = 1
        x = np.full((2, depth), -128, np.int8)
        x[:, -1] = 127
        weights = lstm_module.dot_weights(w, 8)
        assert weights.dtype == (np.float32 if depth <= lstm_module.FLOAT32_EXACT_DEPTH else np.float64)
        want = x.astype(np.int64) @ w.T.astype(np.int64)
        assert np.array_equal((x.astype(weights.dtype) @ weights).astype(np.int64), want)
    assert not np.array_equal((x.astype(np.float32) @ w.T.astype(np.float32)).astype(np.int64), want)
    state = np.full((2, 40), -32768, np.int16)
    weights = lstm_module.dot_weights(np.full((3, 40), -128, np.int8), 16)
    assert weights.dtype == np.float64 and np.all(state.astype(np.float64) @ weights == 40 * 2**22)


@ROUTES
@pytest.mark.parametrize("kind", list(KERNELS))
def test_recurrent_deep_dot_products(kind, kernel_route, monkeypatch):
    """Layers with FLOAT32_EXACT_DEPTH features (float32 dot products) and one more (float64), at the extremes
    and on random values, and every product in float64 (FLOAT32_EXACT_DEPTH 0) on random layers, against the
    reference."""
    case, kernel, _ref = KERNELS[kind]
    rng = np.random.default_rng(30 + len(kind))
    for features in (lstm_module.FLOAT32_EXACT_DEPTH, lstm_module.FLOAT32_EXACT_DEPTH + 1):
        for fill in (-128, None):
            a, p = case(rng, "")
            gates = a["w_ih"].shape[0]
            a["x"] = rng.integers(-128, 128, (2, 3, features), dtype=np.int8)
            a["w_ih"] = rng.integers(-128, 128, (gates, features), dtype=np.int8)
            if fill is not None:
                a["x"][:], a["w_ih"][:] = fill, fill
            p["input_shifts"] = [-14] * len(p["input_shifts"])  # 2^24 * m / 2^45: within int16
            got = kernel(**a, **p)
            assert got.tobytes() == np.asarray(_reference(kind, a, p), np.int8).tobytes(), (features, fill)
    monkeypatch.setattr(lstm_module, "FLOAT32_EXACT_DEPTH", 0)
    for i in range(8):
        a, p = case(rng, EDGES[i % len(EDGES)] if kind == "lstm_s8" or i % 4 != 2 else "")
        assert kernel(**a, **p).tobytes() == np.asarray(_reference(kind, a, p), np.int8).tobytes(), i


def _sweep(count: int, seed: int) -> BoardSweep:
    sweep = BoardSweep()
    rng = np.random.default_rng(seed)
    for kind, (case, _kernel, _ref) in KERNELS.items():
        for i in range(count):
            a, p = case(rng, EDGES[i % len(EDGES)])
            x = a.pop("x")
            n, t, _ = x.shape
            hidden = a["w_hh"].shape[1]
            consts = [Tensor(k, v.shape, str(v.dtype), data=v) for k, v in a.items()]
            sweep.add(f"{kind}_{i}", kind, p, [(Tensor("x", x.shape, "int8"), x)],
                      [Tensor("y", (n, t, hidden), "int8")], consts)
    return sweep


@ROUTES
def test_recurrent_kernels_host_c_bit_exact(kernel_route):
    _sweep(40, seed=1).assert_same_on_host_c("cortex-m55", flags=())


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_recurrent_kernels_on_boards(target):
    """The DSP (SMLAD) and MVE (VMLADAVA) dot products of mf_dot_s8 inside the layers, one boot per board."""
    _sweep(16, seed=2).assert_same_on_board(target)


def test_lstm_s8_needs_its_scratch():
    a, p = lstm_case(np.random.default_rng(3))
    x = a.pop("x")
    tensors = {k: Tensor(k, v.shape, str(v.dtype), data=v) for k, v in a.items()}
    tensors["x"] = Tensor("x", x.shape, "int8")
    tensors["y"] = Tensor("y", (*x.shape[:2], a["w_hh"].shape[1]), "int8")
    op = Op("lstm_s8", ["x", *a], ["y"], p)
    graph = Graph(tensors, [op], ["x"], ["y"])
    plan_arena(graph)
    with pytest.raises(ValueError, match="scratch_bytes 0 is less than"):
        serialize(graph)


@pytest.mark.parametrize("bad", [{"cell_scale_power": -44}, {"input_shifts": [0, 0, 0]}, {"output_offset": 128},
                                 {"cell_clip": 0}, {"hidden_shifts": [0, 0, 31, 0]}], ids=str)
def test_writer_refuses_a_malformed_lstm_s8(bad):
    a, p = lstm_case(np.random.default_rng(4))
    x = a.pop("x")
    tensors = {k: Tensor(k, v.shape, str(v.dtype), data=v) for k, v in a.items()}
    tensors["x"] = Tensor("x", x.shape, "int8")
    tensors["y"] = Tensor("y", (*x.shape[:2], a["w_hh"].shape[1]), "int8")
    op = Op("lstm_s8", ["x", *a], ["y"], {**p, **bad}, scratch_bytes=16 * 16)
    graph = Graph(tensors, [op], ["x"], ["y"])
    plan_arena(graph)
    with pytest.raises(ValueError, match="lstm_s8"):
        serialize(graph)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("cfg", [dict(num_layers=1, batch_first=True), dict(num_layers=2, batch_first=False),
                                 dict(num_layers=1, batch_first=True, bias=False)], ids=str)
def test_fused_rewrite_equals_the_module(cls, cfg):
    torch.manual_seed(0)
    rnn = cls(5, 6, **cfg).eval()
    fused = rewrite_recurrent(rnn, fused_lstm=True)
    assert isinstance(fused, FusedLSTM if cls is nn.LSTM else FusedGRU)
    x = torch.randn((3, 7, 5) if cfg["batch_first"] else (7, 3, 5))
    state = torch.randn(cfg["num_layers"], 3, 6)
    state = (state, torch.randn(cfg["num_layers"], 3, 6)) if cls is nn.LSTM else state
    with torch.no_grad():
        for args in [(x,), (x, state)]:  # the given state runs the unrolled rewrite
            want, got = rnn(*args), fused(*args)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def _kws_sqnrs(name: str, seed: int) -> tuple[float, float, list[str], float]:
    """(SQNR of the compiled program, SQNR of ExecuTorch's flow, the program's op kinds, its integer MAC share)
    with calibration and evaluation clips generated from ``seed``. ExecuTorch's flow leaves the LSTM in fp32
    and quantizes the rest: the same quantizer with the recurrent op unannotated, the converted model run in
    torch."""
    model, example = MODELS[name]()
    gen = torch.Generator().manual_seed(seed)
    calibration = [torch.randn(1, 49, 10, generator=gen) for _ in range(32)]
    x = torch.randn(64, 49, 10, generator=gen)
    prog = mcuforge.compile(model, example, calibration=calibration, progress=False)
    with torch.no_grad():
        want = model(x).numpy().astype(np.float64)
        prepared = prepare_pt2e(capture(model, example), CortexMQuantizer(fp32_recurrent=True))
        for c in calibration:
            prepared(c)
        reference = convert_pt2e(prepared)
        fp32_recurrent = torch.cat([reference(xi.unsqueeze(0)) for xi in x]).numpy()
    got = np.asarray(prog.run(x.numpy())).reshape(want.shape)

    def sqnr(y):
        return float(10 * np.log10((want**2).sum() / ((y - want) ** 2).sum()))

    return sqnr(got), sqnr(fp32_recurrent), [op.kind for op in prog.ops], prog.int8_mac_share


@pytest.mark.parametrize("name", ["kws_lstm", "kws_gru"])
def test_kws_recurrent_is_one_integer_op_as_accurate_as_fp32_recurrent(name):
    """A handful of ops, every MAC on an integer kernel, and SQNR vs fp32 on a par with ExecuTorch's flow (the
    recurrent layer in fp32, the rest int8), on average over three generated calibration/evaluation sets.
    Parity, not more: both are limited by the int8 layers they share (the classifier and its int8 logits), and
    per set either may lead, by how much the fp32 flow's int8 last hidden state, calibrated on 32 last states,
    clips of the held-out data against the fused layer's steady int8 input and state error
    (benchmarks/recurrent.py compares the two over 20 sets)."""
    fused, reference = [], []
    for seed in range(3):
        got, ref, kinds, share = _kws_sqnrs(name, seed)
        assert kinds.count("lstm_s8" if name == "kws_lstm" else "gru_s8") == 1 and len(kinds) <= 6, kinds
        assert share == 1.0
        fused.append(got)
        reference.append(ref)
    assert np.mean(fused) >= np.mean(reference) - 0.5, (fused, reference)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("name", ["kws_lstm", "kws_gru"])
def test_kws_recurrent_programs_three_way(name, target):
    """The compiled keyword spotters, byte for byte: host Python == host C == QEMU (the target's board)."""
    model, example = MODELS[name]()
    gen = torch.Generator().manual_seed(5)
    calibration = [torch.randn(1, 49, 10, generator=gen) for _ in range(8)]
    prog = mcuforge.compile(model, example, calibration=calibration, target=target, progress=False)
    x = torch.randn(1, 49, 10, generator=gen)
    want = prog.run_raw(x)
    for backend in ("c", "qemu"):
        got = prog.run_raw(x, backend=backend)
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want], backend


def test_a_model_reading_c_n_is_captured_unrolled():
    """lstm_s8 gives the hidden states only: a model that uses the last cell state runs the unrolled rewrite
    (int8 FC + LUT + mul + add), and still on every backend."""

    class UsesCellState(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(3, 4, batch_first=True)

        def forward(self, x):
            out, (_h, c) = self.lstm(x)
            return out.sum(1) + c[-1]

    torch.manual_seed(0)
    model, x = UsesCellState().eval(), torch.randn(1, 5, 3)
    prog = mcuforge.compile(model, (x,), calibration=[torch.randn(1, 5, 3) for _ in range(4)], progress=False)
    kinds = {op.kind for op in prog.ops}
    assert "lstm_s8" not in kinds and "lut_s8" in kinds and prog.int8_mac_share == 1.0
    assert prog.run_raw(x)[0].tobytes() == prog.run_raw(x, backend="c")[0].tobytes()
