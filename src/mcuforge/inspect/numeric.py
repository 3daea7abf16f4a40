"""Numeric gap per layer: the int8 program's op outputs (a full trace) against the fp32 model.

Two figures per layer: its error as the program runs (what it inherits plus what it adds), and its
error in isolation -- the program's own op kernel fed the fp32 reference input, quantized as the
program quantizes that tensor -- which is the error the layer adds by itself. Beside the whole-tensor
SQNR, the SQNR of each output channel (worst, median): one channel with a large range (an outlier
bias, an unbalanced BatchNorm) forces a coarse per-tensor scale that crushes the other channels while
the whole-tensor figure, dominated by the outlier, still looks fine.

The fp32 side is the user's model captured and BN-folded exactly as ``compile`` does, run node by
node: every op's debug record names the fx node whose value its output holds (``reference``), so
layers line up exactly, including fused activations and BN folded into a conv. (A forward hook on
the module would not do: a conv module's output is before its BN and ReLU.) The int8 side is
dequantized with the tensor's own qparams and brought from NHWC back to NCHW.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import fx, nn

from ..capture import as_input_tuple, capture
from ..float_passes.cleanup import prepare_float_graph
from ..float_passes.decompose import decompose
from ..ir import DTYPES, INT4, QUANTIZED_RANGES, WIDTH_CONVERSIONS, Graph
from ..kernels import dequantize_per_tensor, quantize_per_tensor
from ..kernels.fc_pairs import S8_PAIRS, unpack_pairs
from ..lower.builder import NCHW_TO_NHWC, NHWC_TO_NCHW
from ..runtime.ops import KERNELS, PackedWeights
from ..trace import TensorDump, Trace

SQNR_CAP_DB = 200.0  # an exact layer (no error at all) counts as this, so drops stay finite

GAP_COLUMNS = ["op_index", "module", "kind", "reference_node", "sqnr_db", "mse", "max_abs_error", "sqnr_drop_db",
               "channel_worst_sqnr_db", "channel_median_sqnr_db", "isolated_sqnr_db",
               "isolated_channel_worst_sqnr_db", "isolated_channel_median_sqnr_db", "isolated_error_db"]
#: Per-channel SQNR needs this many values per channel (a logit of one sample is not a distribution).
MIN_CHANNEL_VALUES = 16


def float_values(model: nn.Module, inputs: Sequence[Any], names: set[str]) -> dict[str, np.ndarray]:
    """The fp32 value of every fx node in ``names`` for ``inputs``."""
    args = tuple(x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x)) for x in as_input_tuple(inputs))
    gm = prepare_float_graph(decompose(capture(model, args)))  # the float graph compile quantized
    values: dict[str, np.ndarray] = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n: fx.Node) -> Any:
            out = super().run_node(n)
            if n.name in names and isinstance(out, torch.Tensor):
                values[n.name] = out.detach().to(torch.float64).numpy().copy()  # before any in-place op
            return out

    with torch.no_grad():
        Recorder(gm).run(*args)
    return values


def as_real_nchw(dump: TensorDump, info: dict[str, Any]) -> np.ndarray:
    """An op output dump as real values in torch's order (dequantized, NHWC -> NCHW)."""
    return raw_as_real_nchw(np.frombuffer(dump.data, DTYPES[dump.dtype].newbyteorder("<")).reshape(info["shape"]),
                            info)


def error_stats(reference: np.ndarray, actual: np.ndarray) -> tuple[float, float, float]:
    """(SQNR dB, MSE, max abs error) of ``actual`` against ``reference``."""
    err = actual - reference
    noise = float(np.sum(err * err))
    signal = float(np.sum(reference * reference))
    if noise == 0.0:
        sqnr = SQNR_CAP_DB
    elif signal == 0.0:
        sqnr = -SQNR_CAP_DB
    else:
        sqnr = float(np.clip(10.0 * np.log10(signal / noise), -SQNR_CAP_DB, SQNR_CAP_DB))
    return sqnr, float(np.mean(err * err)), float(np.max(np.abs(err))) if err.size else 0.0


def input_sqnr(program_inputs: list[dict[str, Any]], inputs: Sequence[Any]) -> float:
    """SQNR of quantizing the model inputs: the error before the first layer."""
    sqnrs = []
    for info, x in zip(program_inputs, as_input_tuple(inputs), strict=True):
        x = np.asarray(x.detach().numpy() if isinstance(x, torch.Tensor) else x, np.float32)
        if info.get("scale") is None or info["dtype"] not in ("int8", "int16"):
            continue
        # Exactly as the program quantizes its inputs (fp32, round half to even, saturate).
        if info["dtype"] == "int16":
            q = quantize_per_tensor(x, info["scale"], info["zero_point"], -32768, 32767, np.int16)
        else:
            q = quantize_per_tensor(x, info["scale"], info["zero_point"])
        real = dequantize_per_tensor(q, info["scale"], info["zero_point"])
        sqnrs.append(error_stats(x.astype(np.float64), real.astype(np.float64))[0])
    return min(sqnrs) if sqnrs else SQNR_CAP_DB


def channel_sqnr(reference: np.ndarray, actual: np.ndarray) -> tuple[float, float]:
    """(worst, median) SQNR dB over the channels (axis 1, torch's order) of a tensor; channels without
    signal (dead in fp32) are left out, as are tensors with fewer than MIN_CHANNEL_VALUES values per
    channel (NaN: no per-channel figure)."""
    if reference.ndim < 2 or reference.size // max(reference.shape[1], 1) < MIN_CHANNEL_VALUES:
        return float("nan"), float("nan")
    ref = np.moveaxis(reference, 1, 0).reshape(reference.shape[1], -1)
    err = np.moveaxis(actual, 1, 0).reshape(reference.shape[1], -1) - ref
    signal, noise = np.sum(ref * ref, axis=1), np.sum(err * err, axis=1)
    live = signal > 0
    if not live.any():
        return float("nan"), float("nan")
    with np.errstate(divide="ignore"):
        sqnr = np.clip(10.0 * np.log10(signal[live] / noise[live]), -SQNR_CAP_DB, SQNR_CAP_DB)
    return float(np.min(sqnr)), float(np.median(sqnr))


def reference_nodes(graph: Graph) -> dict[str, str]:
    """Tensor name -> the fp32 node whose value it holds (each op's first output with a reference)."""
    return {op.outputs[0]: op.debug["reference"]["node"] for op in graph.ops
            if op.debug.get("reference") and op.outputs}


def isolated_outputs(graph: Graph, program_inputs: list[np.ndarray], fp32: dict[str, np.ndarray]
                     ) -> dict[int, np.ndarray]:
    """Every op's output when the op is fed the truth: each activation input that holds an fp32 node's
    value is that value quantized as the program quantizes the tensor (its qparams, round half to even,
    saturate); other inputs (a value with no fp32 twin, inside a layer) come from the same isolated run.
    ``program_inputs``: the model inputs as the program takes them (one run axis of 1). Outputs are raw
    (program dtype and layout), with the run axis, by op index."""
    refs = reference_nodes(graph)
    values: dict[str, np.ndarray] = dict(zip(graph.inputs, program_inputs, strict=True))
    outputs: dict[int, np.ndarray] = {}
    for index, op in enumerate(graph.ops):
        ins = [None if not name else _isolated_input(graph, name, values, refs, fp32) for name in op.inputs]
        outs = [np.zeros((1, *graph.tensors[n].shape), DTYPES[graph.tensors[n].dtype]) for n in op.outputs]
        result = KERNELS[op.kind](op, ins, outs)
        for name, dst, value in zip(op.outputs, outs, result if isinstance(result, list) else [result], strict=True):
            dst[...] = np.asarray(value).astype(dst.dtype, copy=False).reshape(dst.shape)
            values[name] = dst
        outputs[index] = outs[0]
    return outputs


def _isolated_input(graph: Graph, name: str, values: dict[str, np.ndarray], refs: dict[str, str],
                    fp32: dict[str, np.ndarray]) -> Any:
    t = graph.tensors[name]
    if t.dtype == INT4:
        return PackedWeights(t.data, tuple(t.shape), t.layout)
    if t.layout == S8_PAIRS:  # a DSP core's fully connected weights: the plain values
        return unpack_pairs(t.data, tuple(t.shape))[np.newaxis]
    if t.is_constant:
        return t.data[np.newaxis]
    reference = fp32.get(refs.get(name, ""))
    if reference is not None and t.dtype in ("int8", "int16", "float32"):
        value = np.transpose(reference, NCHW_TO_NHWC) if t.layout == "nhwc" else reference
        if tuple(value.shape) == tuple(t.shape):
            if t.dtype != "float32" and t.qparams is not None:
                qmin, qmax = QUANTIZED_RANGES[t.dtype]  # int8, or an A16W8 program's int16
                value = quantize_per_tensor(value.astype(np.float32), t.qparams.scale, t.qparams.zero_point,
                                            qmin, qmax, np.dtype(t.dtype))
            return np.ascontiguousarray(value, DTYPES[t.dtype])[np.newaxis]
    return values[name]


def raw_as_real_nchw(value: np.ndarray, info: dict[str, Any]) -> np.ndarray:
    """A raw op output (program dtype and layout, no run axis) as real values in torch's order."""
    value = value.astype(np.float64)
    if info.get("scale") is not None and info["dtype"] != "float32":
        value = (value - info["zero_point"]) * info["scale"]
    return np.transpose(value, NHWC_TO_NCHW) if info["layout"] == "nhwc" else value


def layer_ops(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The op that gives each module's output: the last op (in program order) of each module path
    that has an fp32 reference node, width conversions aside (counted in the module on their int16 side, they
    only narrow or widen what the layer computed)."""
    last: dict[str, dict[str, Any]] = {}
    for op in record["ops"]:
        if op["kind"] in WIDTH_CONVERSIONS:
            continue
        if op.get("reference") and op["outputs"] and op["outputs"][0]["dtype"] in ("int8", "int16", "float32"):
            last[op.get("module", "")] = op
    return sorted(last.values(), key=lambda op: op["index"])


def numeric_gap(record: dict[str, Any], full_trace: Trace, fp32: dict[str, np.ndarray],
                baseline_sqnr: float, isolated: dict[int, np.ndarray] | None = None) -> pd.DataFrame:
    """One row per layer, by position; ``sqnr_drop_db`` is how much SQNR the layer loses relative
    to the layer before it (the first layer: relative to the input's quantization). ``isolated``: each
    op's output in isolation (:func:`isolated_outputs`), for the ``isolated_*`` columns (NaN without);
    ``isolated_error_db`` is the per-channel-aware figure :func:`worst_layer` ranks by: the lower of the
    isolated whole-tensor and median-channel SQNR."""
    rows = []
    previous = baseline_sqnr
    for op in layer_ops(record):
        node = op["reference"]["node"]
        dump = full_trace.tensor(op["index"], run=0, output_slot=0)
        if dump is None or node not in fp32:
            continue
        actual = as_real_nchw(dump, op["outputs"][0])
        reference = fp32[node]
        if actual.shape != reference.shape:
            continue  # not the same value after all (defensive: never compare unlike tensors)
        sqnr, mse, max_abs = error_stats(reference, actual)
        worst, median = channel_sqnr(reference, actual)
        iso = iso_worst = iso_median = float("nan")
        if isolated is not None and op["index"] in isolated:
            alone = raw_as_real_nchw(isolated[op["index"]][0], op["outputs"][0])
            iso = error_stats(reference, alone)[0]
            iso_worst, iso_median = channel_sqnr(reference, alone)
        rows.append({"op_index": op["index"], "module": op.get("module", ""), "kind": op["kind"],
                     "reference_node": node, "sqnr_db": sqnr, "mse": mse, "max_abs_error": max_abs,
                     "sqnr_drop_db": previous - sqnr, "channel_worst_sqnr_db": worst,
                     "channel_median_sqnr_db": median, "isolated_sqnr_db": iso,
                     "isolated_channel_worst_sqnr_db": iso_worst, "isolated_channel_median_sqnr_db": iso_median,
                     "isolated_error_db": float(np.nanmin([iso, iso_median])) if not np.isnan(iso) else float("nan")})
        previous = sqnr
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


def worst_layer(gap: pd.DataFrame, by: str = "isolated") -> str:
    """The module of the layer that hurts most. ``by="isolated"`` (default): the lowest
    ``isolated_error_db`` -- the error the layer adds by itself, per channel aware; ``by="drop"``: the
    largest drop of whole-tensor SQNR along the program (what the error looks like downstream, where one
    crushed channel often shows up layers later)."""
    if gap.empty:
        raise ValueError("no layer could be compared with the fp32 model")
    if by == "drop" or gap["isolated_error_db"].isna().all():
        return str(gap.loc[gap["sqnr_drop_db"].idxmax(), "module"])
    if by != "isolated":
        raise ValueError(f"worst_layer by {by!r}: 'isolated' or 'drop'")
    return str(gap.loc[gap["isolated_error_db"].idxmin(), "module"])
