"""quantization="w4a8": int4 weights end to end -- the API and CLI, precision as data (prog.ops, the
program file, mcuforge info, the Inspector), the same bytes from host Python, host C and the
cortex-m4 / cortex-m55 boards, and the flash it saves (the accuracy it keeps: tests/test_digits.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge import cli, cruntime, firmware
from mcuforge.ir import INT4_WEIGHT_KINDS
from mcuforge.kernels.int4 import multipliers16, widened_multipliers
from mcuforge.program import deserialize
from mcuforge.quantize.weight_observers import PER_CHANNEL_MIN_GAIN_DB
from mcuforge.runtime import execute
from mcuforge.zoo import MODELS

from conftest import calibration_set, compiled, program_inputs

BOARDS = ("cortex-m4", "cortex-m55")


class OddShapes(nn.Module):
    """Every s4 kind with odd sizes: a grouped conv, a depthwise conv with multiplier 2, a conv1d-free
    stack ending in a linear layer of odd width; a transposed conv, which stays int8 (no s4 kernel)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.grouped = nn.Conv2d(6, 9, 3, padding=1, groups=3)
        self.depthwise = nn.Conv2d(9, 18, 3, stride=2, padding=1, groups=9)
        self.up = nn.ConvTranspose2d(18, 5, 2, stride=2)
        self.head = nn.Linear(5 * 6 * 6, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.grouped(torch.relu(self.conv(x))))
        x = self.up(torch.relu(self.depthwise(x)))
        return self.head(torch.flatten(x, 1))


def compile_quiet(model, example, quantization: str, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mcuforge.compile(model, example, calibration=calibration_set(example, 16, seed=1), progress=False,
                                quantization=quantization, **kw)


@pytest.fixture(scope="module")
def odd_w4a8():
    torch.manual_seed(0)
    model = OddShapes().eval()
    example = (torch.randn(1, 3, 6, 6),)
    return model, example, compile_quiet(model, example, "w4a8")


def test_w4a8_kinds_and_precisions(odd_w4a8):
    _model, _example, prog = odd_w4a8
    kinds = {(op.kind, op.precision) for op in prog.ops}
    assert {("conv2d_s4", "a8w4"), ("depthwise_conv2d_s4", "a8w4"), ("fully_connected_s4", "a8w4"),
            ("transpose_conv2d_s8", "a8w8")} <= kinds, kinds
    assert all(op.backend == "int8" for op in prog.ops)
    for op in prog.graph.ops:
        if op.kind.endswith("_s4"):
            w = prog.graph.tensors[op.inputs[1]]
            assert w.dtype == "int4" and w.data.size == (w.numel + 1) // 2
    # the precision is in the file: read back, the same records
    loaded = deserialize(prog.to_bytes())
    assert [op.precision for op in loaded.ops] == [op.precision for op in prog.ops]


def test_int8_precisions():
    prog = compiled("ds_cnn")[2]
    assert {op.precision for op in prog.ops if op.kind in ("conv2d_s8", "depthwise_conv2d_s8")} == {"a8w8"}
    assert {op.precision for op in prog.ops if op.kind in ("avgpool_s8", "reshape")} == {"a8"}
    fallback = compiled("custom_fallback")[2]
    assert {op.precision for op in fallback.ops if op.backend == "fp32"} == {"fp32"}


def crafted_linear(per_channel_helps_the_output: bool) -> tuple[nn.Module, list[tuple[torch.Tensor]]]:
    """A linear layer (256 inputs, 16 outputs) fed inputs that are zero on columns 8..255, where the weights' own
    rounding error and the error on the layer's output disagree. 12 rows of range 1, their weights on the
    live columns on the per-tensor grid (1/127: no error either way), and 4 rows of range 0.02, which a scale
    of their own rounds finely. Per channel helps the output: the small rows are nonzero on the live
    columns (the per-tensor scale's error there reaches the output), and the large rows random on the dead
    ones (a large error either way, which the weights' error counts and the output never sees). It does
    not: the small rows are nonzero on dead columns only, the large rows on the grid everywhere."""
    gen = torch.Generator().manual_seed(4)
    weight = torch.zeros(16, 256)
    weight[:12, :8] = torch.randint(-127, 128, (12, 8), generator=gen) / 127
    weight[:12, 0] = 1.0  # every large row's range is 1: per channel gives them the per-tensor scale
    small = torch.rand(4, 8, generator=gen) * 0.04 - 0.02
    if per_channel_helps_the_output:
        weight[:12, 8:] = torch.rand(12, 248, generator=gen) * 2 - 1
        weight[12:, :8] = small
    else:
        weight[:12, 8:] = torch.randint(-127, 128, (12, 248), generator=gen) / 127
        weight[12:, 8:16] = small
    layer = nn.Linear(256, 16).eval()
    with torch.no_grad():
        layer.weight.copy_(weight)
    items = []
    for _ in range(16):
        x = torch.zeros(1, 256)
        x[:, :8] = torch.randn(1, 8, generator=gen)
        items.append((x,))
    return layer, items


@pytest.mark.parametrize("helps", [True, False], ids=["per_channel_helps_the_output", "it_does_not"])
def test_linear_per_channel_choice_follows_the_output_error_not_the_weights(helps):
    """Per channel exactly where it lowers the error on the layer's output over the calibration inputs,
    ||(W - W_q) X||^2, by PER_CHANNEL_MIN_GAIN_DB; on the crafted layer the weights' own rounding error
    says the opposite, so the choice is the output's."""
    from mcuforge.quantize.linear_choice import per_channel_output_gain_db

    layer, items = crafted_linear(helps)
    x = torch.cat([item[0] for item in items]).double()
    output_gain = per_channel_output_gain_db(layer.weight, x.T @ x, 8)
    weight_gain = per_channel_output_gain_db(layer.weight, None, 8)  # G = I: the weights' own rounding error
    if helps:
        assert output_gain > PER_CHANNEL_MIN_GAIN_DB + 10 and weight_gain < PER_CHANNEL_MIN_GAIN_DB, (output_gain,
                                                                                                     weight_gain)
    else:
        assert abs(output_gain) < 1e-9 and weight_gain > PER_CHANNEL_MIN_GAIN_DB + 3, (output_gain, weight_gain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(layer, items[0], calibration=items, progress=False)
    (fc,) = [op for op in prog.graph.ops if op.kind.startswith("fully_connected")]
    assert fc.kind == ("fully_connected_per_channel_s8" if helps else "fully_connected_s8")
    assert prog.graph.tensors[fc.inputs[3]].shape == ((16,) if helps else (1,))


def test_linear_per_channel_choice_is_the_rules_on_the_layers_own_inputs():
    """Every layer of a stack, int8 and W4A8: per channel exactly where ``choose_per_channel`` on that layer's
    calibration inputs (the float model's values before it) says so."""
    from mcuforge.quantize.linear_choice import choose_per_channel

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 10), nn.ReLU(), nn.Linear(10, 4)).eval()
    with torch.no_grad():
        model[2].weight.mul_(torch.logspace(-2, 0, 10)[:, None])  # rows of very different ranges
        model[4].weight.copy_(torch.sign(torch.randn(4, 10)) * 0.3)  # rows of one range
    items = [(torch.randn(1, 16),) for _ in range(12)]
    inputs, xs = [], torch.cat([x for (x,) in items])
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.Linear):
                inputs.append(xs.double())
            xs = m(xs)
    layers = [m for m in model if isinstance(m, nn.Linear)]
    for quantization, bits in (("int8", 8), ("w4a8", 4)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = mcuforge.compile(model, items[0], calibration=items, progress=False, quantization=quantization)
        expected = [choose_per_channel(m.weight, x.T @ x, bits) for m, x in zip(layers, inputs, strict=True)]
        fc = [op for op in prog.graph.ops if op.kind.startswith("fully_connected")]
        if quantization == "int8":
            assert expected[1] and not expected[2]  # rows of very different ranges / of one range
            assert [op.kind for op in fc] == ["fully_connected_per_channel_s8" if p else "fully_connected_s8"
                                              for p in expected]
        for op, p in zip(fc, expected, strict=True):
            channels = prog.graph.tensors[op.inputs[1]].shape[0]
            assert prog.graph.tensors[op.inputs[3]].shape == ((channels,) if p else (1,))


def test_quantization_argument_is_checked():
    model, example = MODELS["fc_autoencoder"]()
    with pytest.raises(ValueError, match=r"unknown quantization 'int4'; supported: 'int8', 'w4a8', 'a16w8'"):
        mcuforge.compile(model, example, quantization="int4")


def test_linear_scheme_forces_per_tensor_or_per_channel():
    model, example = MODELS["fc_autoencoder"]()
    for per_channel, kind in ((False, "fully_connected_s8"), (True, "fully_connected_per_channel_s8")):
        prog = compile_quiet(model, example, mcuforge.quantize.Scheme("int8", linear_per_channel=per_channel))
        assert {op.kind for op in prog.ops} == {kind}


@pytest.mark.parametrize("target", BOARDS)
def test_three_way_w4a8(odd_w4a8, target):
    """Host Python == host C == board, for the odd-shaped model and DS-CNN (conv, depthwise, linear in int4)."""
    model, example = MODELS["ds_cnn"]()
    for name, prog in (("odd_shapes", odd_w4a8[2]), ("ds_cnn", compile_quiet(model, example, "w4a8"))):
        graph = prog.graph
        graph.target = target
        program = prog.to_bytes()
        inputs = program_inputs(graph, np.random.default_rng(3))
        python = execute(graph, inputs)
        host_c, _ = cruntime.run_program(program, inputs)
        board, _, _ = firmware.run_on_qemu(program, inputs, target)
        for i, (p, c, b) in enumerate(zip(python, host_c, board, strict=True)):
            assert p.tobytes() == c.tobytes(), f"{name} output {i}: host Python != host C"
            assert c.tobytes() == b.tobytes(), f"{name} output {i}: host C != {target}"


def stored_bytes(graph, kinds, slot: int) -> int:
    return sum(graph.tensors[op.inputs[slot]].nbytes for op in graph.ops if op.kind in kinds and op.inputs[slot])


def test_w4a8_constants_at_most_055_of_int8_on_mlperf_tiny():
    """The issue's bound on the four MLPerf Tiny models. Each byte accounted for: the weights shrink to ceil(n / 2)
    bytes, and the s4 ops store their bias as int16 (where every value fits) and their multipliers in 16 bits
    (kernels/int4.py), while the shifts and every other constant keep their bytes. The accounting compares
    programs whose linear layers are all per channel (by default int8 and W4A8 may choose differently per layer:
    the choice weighs each width's own rounding error, quantize/linear_choice.py); the bound, the defaults."""
    from mcuforge.quantize import Scheme

    weighted8 = ("conv2d_s8", "depthwise_conv2d_s8", "fully_connected_s8", "fully_connected_per_channel_s8")
    for name in ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder"):
        model, example = MODELS[name]()
        default8, default4 = compiled(name)[2], compile_quiet(model, example, "w4a8")
        assert default4.constant_bytes <= 0.55 * default8.constant_bytes, (name, default4.constant_bytes /
                                                                          default8.constant_bytes)
        int8 = compile_quiet(model, example, Scheme("int8", linear_per_channel=True))
        w4a8 = compile_quiet(model, example, Scheme("w4a8", weight_bits=4, linear_per_channel=True))
        kinds8 = [op.kind for op in int8.graph.ops if op.kind in weighted8]
        assert [op.kind.replace("_s4", "") for op in w4a8.graph.ops if op.kind in INT4_WEIGHT_KINDS] == [
            k.replace("_per_channel", "").replace("_s8", "") for k in kinds8], name  # every weighted op in 4 bits
        g8, g4 = int8.graph, w4a8.graph
        weights4 = sum((g8.tensors[op.inputs[1]].numel + 1) // 2 for op in g8.ops if op.kind in weighted8)
        narrow = [g4.tensors[op.inputs[slot]] for op in g4.ops if op.kind in INT4_WEIGHT_KINDS for slot in (2, 3)
                  if op.inputs[slot]]
        assert all(t.dtype == "int16" for t in narrow), name  # the zoo's biases all fit 16 bits
        assert stored_bytes(g4, INT4_WEIGHT_KINDS, 1) == weights4
        for slot in (2, 3):  # half the bytes of int8's int32 bias and multipliers
            assert 2 * stored_bytes(g4, INT4_WEIGHT_KINDS, slot) == stored_bytes(g8, weighted8, slot), (name, slot)
        others = int8.constant_bytes - sum(stored_bytes(g8, weighted8, slot) for slot in (1, 2, 3))
        assert w4a8.constant_bytes == others + weights4 + sum(t.nbytes for t in narrow), name


def test_a_bias_beyond_int16_stays_int32():
    """The compact bias only where every value fits: a layer whose bias needs more keeps CMSIS-NN's int32 (and
    runs the same on both hosts); its multipliers are still 16-bit."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4)).eval()
    with torch.no_grad():
        model[0].bias.copy_(torch.tensor([400.0, -1.0, 0.5, 2.0]))  # 400 / (s_x * s_w) is far beyond 2^15
    example = (torch.randn(1, 8),)
    prog = compile_quiet(model, example, "w4a8")
    (op,) = [op for op in prog.graph.ops if op.kind == "fully_connected_s4"]
    bias, mult = (prog.graph.tensors[op.inputs[i]] for i in (2, 3))
    assert bias.dtype == "int32" and np.abs(bias.data).max() > 2**15 and mult.dtype == "int16"
    inputs = program_inputs(prog.graph, np.random.default_rng(0))
    python = execute(prog.graph, inputs)
    host_c, _ = cruntime.run_program(prog.to_bytes(), inputs)
    assert python[0].tobytes() == host_c[0].tobytes()


def test_16_bit_multipliers_round_to_nearest():
    """multipliers16: the 16 high bits rounded to nearest, a carry to 2^31 taken as 2^30 with one more left
    shift, None where the shift would leave [-31, 30] or a multiplier is negative."""
    m = np.array([1 << 30, (1 << 30) + (1 << 15) - 1, (1 << 30) + (1 << 15), (1 << 31) - 1, 0], np.int64)
    high, shift = multipliers16(m, np.array([-3, -3, -3, -3, 0]))
    assert high.dtype == np.int16 and shift.dtype == np.int8
    assert high.tolist() == [1 << 14, 1 << 14, (1 << 14) + 1, 1 << 14, 0]
    assert shift.tolist() == [-3, -3, -3, -2, 0]
    assert (widened_multipliers(high).astype(np.int64) - m)[:3].tolist() == [0, 1 - (1 << 15), 1 << 15]
    assert multipliers16(np.array([(1 << 31) - 1]), np.array([30])) is None
    assert multipliers16(np.array([-5]), np.array([0])) is None


FACTORY = """
import torch
from torch import nn


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(9, 5), nn.ReLU(), nn.Linear(5, 3)).eval(), (torch.randn(1, 9),)
"""


def test_cli_compile_quantization_and_info(tmp_path, capsys):
    (tmp_path / "tiny.py").write_text(FACTORY)
    out = tmp_path / "tiny.mfp"
    factory = f"{tmp_path / 'tiny.py'}:make"
    assert cli.main(["compile", factory, "--quantization", "w4a8", "-o", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "precision" in text and "fully_connected_s4" in text and "2 a8w4" in text
    assert cli.main(["compile", factory, "--quantization", "int4"]) == 2  # a usage error: one line, exit 2
    assert "unknown quantization 'int4'; supported: 'int8', 'w4a8', 'a16w8'" in capsys.readouterr().err


def test_inspector_frame_has_the_precision(odd_w4a8):
    _model, example, prog = odd_w4a8
    _outs, trace = prog.run(*example, trace=True)
    df = mcuforge.Inspector(prog, trace).to_dataframe()
    assert list(df["precision"]) == [op.precision for op in prog.ops]
    assert "a8w4" in set(mcuforge.Inspector(prog, trace).totals("precision").index)
