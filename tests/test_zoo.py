"""The operator-coverage zoo: every new model compiles for cortex-m55, runs on the host, keeps its
compute ops in int8 and stays close to the fp32 model."""

import functools
import warnings

import numpy as np
import pytest
import torch

import mcuforge
from mcuforge.zoo import MODELS

NEW_MODELS = ["mobilenet_v2", "mobilenet_v3_small", "kws_conv1d", "kws_lstm", "kws_gru", "transformer_block", "unet"]

# Batch-agnostic graphs (no reshape with a baked batch): one calibration item holding all 32
# samples gives the same observer statistics as 32 items, with one observer call per node
# instead of 32 (it mattered for the unrolled recurrent nets, ~450 observed tensors each).
BATCHED_CALIBRATION = {"kws_lstm", "kws_gru"}

# ATen ops that do the model's compute: each must become an int8 kernel.
COMPUTE_ATEN = {
    "conv1d", "conv2d", "conv_transpose2d", "linear", "matmul", "bmm",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "mean",
    "add", "sub", "mul", "relu", "relu6", "hardtanh", "sigmoid", "tanh", "hardswish", "hardsigmoid", "gelu",
    "softmax", "_softmax", "cat", "slice", "select",
}

# Exact counts of IR kinds fixed by each architecture (so a dropped or duplicated op fails). A linear layer
# counts as "fully_connected_s8" whether it runs per tensor or per channel (fully_connected_per_channel_s8,
# chosen by its weights).
EXPECTED_KINDS = {
    "mobilenet_v2": {"conv2d_s8": 35, "depthwise_conv2d_s8": 17, "add_s8": 10, "fully_connected_s8": 1},
    # 9 squeeze-excite blocks: 9 hardsigmoid LUTs + 9 channel-broadcast muls; 19 hardswish LUTs
    "mobilenet_v3_small": {"depthwise_conv2d_s8": 11, "lut_s8": 28, "mul_s8": 9, "add_s8": 7,
                           "fully_connected_s8": 2},
    # MaxPool1d + AvgPool1d + the mean over time as 2-D pools
    "kws_conv1d": {"conv2d_s8": 4, "depthwise_conv2d_s8": 1, "fully_connected_s8": 1, "maxpool_s8": 1,
                   "avgpool_s8": 2},
    # One fused layer (int16 gates and state) + the classifier; the last hidden state is a slice.
    "kws_lstm": {"lstm_s8": 1, "fully_connected_s8": 1, "lut_s8": 0, "mul_s8": 0, "add_s8": 0},
    "kws_gru": {"gru_s8": 1, "fully_connected_s8": 1, "lut_s8": 0, "mul_s8": 0, "add_s8": 0},
    "transformer_block": {"fully_connected_s8": 6, "batch_matmul_s8": 2, "softmax_s8": 1, "lut_s8": 1,
                          "add_s8": 2},
    "unet": {"conv2d_s8": 11, "transpose_conv2d_s8": 2, "concat_s8": 2, "maxpool_s8": 2},
}

# SQNR (dB) of the int8 program against the fp32 model on 16 held-out inputs (32 calibration samples):
# sanity floors, 10 dB under the SQNR measured on one seed: these random-weight models' figures are rounding
# draws that move by a couple of dB with the CPU's float arithmetic (docs/accuracy.md); a broken kernel or
# scale lands far lower. Regressions of a few tenths are the SQNR guard's (tests/test_guards.py).
SQNR_FLOOR = {
    "mobilenet_v2": 33.7,  # measured 43.7
    "mobilenet_v3_small": 39.2,  # measured 49.2
    "kws_conv1d": 36.3,  # measured 46.3
    "kws_lstm": 29.0,  # measured 39.0 (fused lstm_s8; 34.2 unrolled)
    "kws_gru": 29.4,  # measured 39.4 (fused gru_s8; 30.7 unrolled)
    "transformer_block": 25.8,  # measured 35.8
    "unet": 42.3,  # measured 52.3
}


def _aten_name(target: str) -> str:
    return target.split(".")[0]


def _calibration(name: str, example: tuple[torch.Tensor, ...], count: int = 32):
    gen = torch.Generator().manual_seed(1)
    if name in BATCHED_CALIBRATION:
        return [tuple(torch.randn((count, *x.shape[1:]), generator=gen) for x in example)]
    return [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(count)]


@functools.cache
def compiled(name: str):
    model, example = MODELS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=_calibration(name, example), target="cortex-m55",
                                progress=False)
    return model, example, prog


def _compute_ops(prog, names: set[str]):
    """(op record, its compute aten names) for the program's ops that come from a compute aten op;
    the quantize/dequantize boundaries of fp32 islands are not the model's compute."""
    for op in prog.ops:
        if op.kind in ("quantize", "dequantize"):
            continue
        hit = {_aten_name(a) for a in op.aten} & names
        if hit:
            yield op, hit


def sqnr_db(reference: np.ndarray, output: np.ndarray) -> float:
    reference, output = reference.astype(np.float64), output.astype(np.float64)
    return float(10 * np.log10((reference ** 2).sum() / ((reference - output) ** 2).sum()))


@pytest.mark.parametrize("name", NEW_MODELS)
def test_compute_ops_are_int8(name):
    _, _, prog = compiled(name)
    checked = list(_compute_ops(prog, COMPUTE_ATEN))
    assert checked, "no compute op found: the op table lost its aten names"
    not_int8 = [(op.index, op.kind, op.module, sorted(hit), op.reason) for op, hit in checked if op.backend != "int8"]
    assert not not_int8, f"{name}: compute ops in fp32: {not_int8}"


@pytest.mark.parametrize("name", NEW_MODELS)
def test_op_kinds_match_the_architecture(name):
    _, _, prog = compiled(name)
    counts = {}
    for op in prog.ops:
        if op.backend == "int8":
            kind = "fully_connected_s8" if op.kind == "fully_connected_per_channel_s8" else op.kind
            counts[kind] = counts.get(kind, 0) + 1
    want = EXPECTED_KINDS[name]
    assert {k: counts.get(k, 0) for k in want} == want


@pytest.mark.parametrize("name", NEW_MODELS)
def test_int8_output_is_close_to_fp32(name):
    model, example, prog = compiled(name)
    gen = torch.Generator().manual_seed(1234)  # held out: not the calibration seed
    x = tuple(torch.randn((16, *t.shape[1:]), generator=gen) for t in example)
    with torch.no_grad():
        reference = model(*x).numpy()
    (out,) = prog.run(*x)  # 16 runs of the batch-1 program, vectorized
    assert out.shape == reference.shape
    sqnr = sqnr_db(reference, out)
    assert sqnr > SQNR_FLOOR[name], f"{name}: SQNR {sqnr:.1f} dB"


@pytest.mark.parametrize("name", NEW_MODELS)
def test_fp32_ops_say_why(name):
    _, _, prog = compiled(name)
    silent = [(op.index, op.kind, op.module) for op in prog.ops if op.backend == "fp32" and not op.reason]
    assert not silent, f"{name}: fp32 ops without a reason: {silent}"


def test_transformer_layer_norm_is_the_only_fp32_compute():
    _, _, prog = compiled("transformer_block")
    fp32 = [op for op in prog.ops if op.backend == "fp32" and op.kind not in ("quantize", "dequantize")]
    assert [op.module for op in fp32] == ["norm1", "norm2"]
    assert all("layer_norm" in op.reason for op in fp32), [op.reason for op in fp32]


def test_recurrent_models_run_each_layer_as_one_integer_op():
    for name, kind, aten in (("kws_lstm", "lstm_s8", "lstm.default"), ("kws_gru", "gru_s8", "gru.default")):
        _, _, prog = compiled(name)
        layer = [op for op in prog.ops if op.kind == kind]
        assert len(layer) == 1 and layer[0].backend == "int8" and layer[0].macs > 0
        assert prog.int8_mac_share == 1.0
        assert aten in layer[0].aten, layer[0].aten
