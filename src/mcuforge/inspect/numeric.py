"""Numeric gap per layer: the int8 program's op outputs (a full trace) against the fp32 model.

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
from ..ir import DTYPES
from ..kernels import dequantize_per_tensor, quantize_per_tensor
from ..lower.builder import NHWC_TO_NCHW
from ..lower.cleanup import prepare_float_graph
from ..lower.decompose import decompose
from ..trace import TensorDump, Trace

SQNR_CAP_DB = 200.0  # an exact layer (no error at all) counts as this, so drops stay finite

GAP_COLUMNS = ["op_index", "module", "kind", "reference_node", "sqnr_db", "mse", "max_abs_error", "sqnr_drop_db"]


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
    value = np.frombuffer(dump.data, DTYPES[dump.dtype].newbyteorder("<")).reshape(info["shape"])
    value = value.astype(np.float64)
    if info.get("scale") is not None and dump.dtype != "float32":
        value = (value - info["zero_point"]) * info["scale"]
    if info["layout"] == "nhwc":
        value = np.transpose(value, NHWC_TO_NCHW)
    return value


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


def layer_ops(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The op that gives each module's output: the last op (in program order) of each module path
    that has an fp32 reference node."""
    last: dict[str, dict[str, Any]] = {}
    for op in record["ops"]:
        if op.get("reference") and op["outputs"] and op["outputs"][0]["dtype"] in ("int8", "int16", "float32"):
            last[op.get("module", "")] = op
    return sorted(last.values(), key=lambda op: op["index"])


def numeric_gap(record: dict[str, Any], full_trace: Trace, fp32: dict[str, np.ndarray],
                baseline_sqnr: float) -> pd.DataFrame:
    """One row per layer, by position; ``sqnr_drop_db`` is how much SQNR the layer loses relative
    to the layer before it (the first layer: relative to the input's quantization)."""
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
        rows.append({"op_index": op["index"], "module": op.get("module", ""), "kind": op["kind"],
                     "reference_node": node, "sqnr_db": sqnr, "mse": mse, "max_abs_error": max_abs,
                     "sqnr_drop_db": previous - sqnr})
        previous = sqnr
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


def worst_layer(gap: pd.DataFrame) -> str:
    """The module of the layer where the error grows most (largest SQNR drop)."""
    if gap.empty:
        raise ValueError("no layer could be compared with the fp32 model")
    return str(gap.loc[gap["sqnr_drop_db"].idxmax(), "module"])
