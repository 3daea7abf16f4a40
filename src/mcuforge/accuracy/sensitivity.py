"""Sensitivity analysis: the model's output SQNR on the calibration data when only one layer is changed
to another precision (every other layer at the base precision), with the program's flash and RAM; and
when only one layer is quantized, at each precision, every other layer in fp32 (``alone.py``).

One compile per (layer, candidate): the quantizer takes per-layer exceptions (``Scheme.layers``), so each
variant is the very program ``compile`` would make, measured on the host runtime against the fp32 model.
Results are kept in memory and on disk (``$MCUFORGE_CACHE/sensitivity``), keyed by a hash of the model's
class and weights, the example shapes, the calibration data, the target, the candidates, the compile
options and mcuforge's own Python sources (a change to the quantizer or lowering is a new key).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from ..capture import as_input_tuple, reusing_captures
from ..inspect.numeric import error_stats
from ..kinds import kinds_where
from ..quantize import Scheme, calibration_batches, get_scheme
from .alone import float_graph, quantized_alone, single_runs

#: Op kinds whose weights a precision choice changes (transposed convolutions keep int8 weights).
WEIGHTED_KINDS = kinds_where(searchable_weights=True)
COLUMNS = ["module", "precision", "output_sqnr_db", "sqnr_loss_db", "flash_bytes", "flash_saved", "ram_bytes"]
ALONE_COLUMNS = ["module", "precision", "output_sqnr_db"]

_MEMORY: dict[str, Sensitivity] = {}


@dataclass
class Sensitivity:
    """``table``: one row per (layer, candidate precision): the output SQNR with only that layer at that
    precision, its loss against the all-base program, flash and RAM of that program, flash saved.
    ``uniform``: the same figures of each uniform program (base and every candidate), by precision.
    ``alone``: one row per (layer, precision: the base and every candidate): the output SQNR with only that
    layer quantized at that precision, every other layer in fp32 (:func:`alone.quantized_alone`)."""

    base: str
    table: pd.DataFrame
    uniform: dict[str, dict[str, float]] = field(default_factory=dict)
    layers: list[str] = field(default_factory=list)
    alone: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ALONE_COLUMNS))

    def to_json(self) -> str:
        return json.dumps({"base": self.base, "table": self.table.to_dict(orient="records"),
                           "uniform": self.uniform, "layers": self.layers,
                           "alone": self.alone.to_dict(orient="records")})

    @classmethod
    def from_json(cls, text: str) -> Sensitivity:
        data = json.loads(text)
        return cls(data["base"], pd.DataFrame(data["table"], columns=COLUMNS), data["uniform"], data["layers"],
                   pd.DataFrame(data["alone"], columns=ALONE_COLUMNS))


def stacked(calibration: Sequence[tuple[torch.Tensor, ...]]) -> tuple[torch.Tensor, ...]:
    """The calibration items as one batch per input (concatenated along the batch axis)."""
    return tuple(torch.cat([item[i] for item in calibration]) for i in range(len(calibration[0])))


def output_sqnr(program: Any, reference: Sequence[np.ndarray], batch: Sequence[torch.Tensor]) -> float:
    """The program's output SQNR (dB) against the fp32 ``reference`` outputs on ``batch``: the lowest over
    the model's outputs."""
    actual = program.run(*batch)
    return min(error_stats(np.asarray(r, np.float64).reshape(-1), np.asarray(a, np.float64).reshape(-1))[0]
               for r, a in zip(reference, actual, strict=True))


def fp32_outputs(model: nn.Module, batch: Sequence[torch.Tensor]) -> list[np.ndarray]:
    with torch.no_grad():
        out = model(*batch)
    return [o.detach().numpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


def weighted_layers(program: Any) -> list[str]:
    """Module paths of the layers whose weights a precision choice changes, in program order."""
    seen: list[str] = []
    for op in program.graph.ops:
        module = op.debug.get("module", "")
        if op.kind in WEIGHTED_KINDS and op.backend == "int8" and module and module not in seen:
            seen.append(module)
    return seen


def sensitivity(model: nn.Module, example_inputs: torch.Tensor | Sequence[torch.Tensor],
                calibration: Iterable[Any], target: str = "cortex-m55", *, base: str = "int8",
                candidates: Sequence[str] = ("w4a8",), cache: bool = True, progress: bool = True,
                **compile_options: Any) -> Sensitivity:
    """For each weighted layer and each candidate precision, the output SQNR (on ``calibration``, against
    the fp32 model) of the program with only that layer at the candidate, every other at ``base``.
    ``compile_options``: passed to every ``mcuforge.compile`` (equalization switches, observers...)."""
    example = as_input_tuple(example_inputs)
    items = list(calibration_batches(calibration, len(example)))
    key = cache_key(model, example, items, target, base, candidates, compile_options)
    if cache:
        found = _MEMORY.get(key) or _load(key)
        if found is not None:
            _MEMORY[key] = found
            return found
    with reusing_captures():  # one compile per (layer, candidate) of one model: one torch.export, copied
        result = _measure(model, example, items, target, base, tuple(candidates), progress, compile_options)
    if cache:
        _MEMORY[key] = result
        _store(key, result)
    return result


def compile_variant(model: nn.Module, example: tuple[torch.Tensor, ...], items: list, target: str,
                    scheme: Scheme, compile_options: dict[str, Any]) -> Any:
    from ..compiler import compile_fixed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile_fixed(model, example, calibration=items, target=target, progress=False,
                               quantization=scheme, fit_check=False, **compile_options)


def _measure(model: nn.Module, example: tuple[torch.Tensor, ...], items: list, target: str, base: str,
             candidates: tuple[str, ...], progress: bool, compile_options: dict[str, Any]) -> Sensitivity:
    base_scheme = get_scheme(base)
    batch = stacked(items)
    reference = fp32_outputs(model, batch)
    uniform: dict[str, dict[str, float]] = {}
    programs = {}
    for name in (base, *candidates):
        prog = programs[name] = compile_variant(model, example, items, target, get_scheme(name), compile_options)
        uniform[name] = {"output_sqnr_db": output_sqnr(prog, reference, batch),
                         "flash_bytes": prog.program_bytes, "ram_bytes": prog.arena_bytes}
    layers = weighted_layers(programs[base])
    gm = float_graph(model, tuple(single_runs(programs[base], items[:1])[0]))
    alone = [{"module": module, "precision": name, "output_sqnr_db": sqnr}
             for name, prog in programs.items()
             for module, sqnr in quantized_alone(prog, model, items, layers, gm).items()]
    rows = []
    work = [(module, cand) for module in layers for cand in candidates]
    for module, cand in tqdm(work, desc="sensitivity", unit="layer", disable=not progress):
        scheme = dataclasses.replace(base_scheme, name=f"{base}+{module}:{cand}", layers=((module, cand),))
        prog = compile_variant(model, example, items, target, scheme, compile_options)
        sqnr = output_sqnr(prog, reference, batch)
        rows.append({"module": module, "precision": cand, "output_sqnr_db": sqnr,
                     "sqnr_loss_db": uniform[base]["output_sqnr_db"] - sqnr, "flash_bytes": prog.program_bytes,
                     "flash_saved": uniform[base]["flash_bytes"] - prog.program_bytes, "ram_bytes": prog.arena_bytes})
    return Sensitivity(base, pd.DataFrame(rows, columns=COLUMNS), uniform, layers,
                       pd.DataFrame(alone, columns=ALONE_COLUMNS))


def cache_key(model: nn.Module, example: tuple[torch.Tensor, ...], items: list, target: str, base: str,
              candidates: Sequence[str], compile_options: dict[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(f"{type(model).__module__}.{type(model).__qualname__}|{target}|{base}|{list(candidates)}|"
             f"{sorted((k, repr(v)) for k, v in compile_options.items())}".encode())
    for name, value in model.state_dict().items():
        h.update(name.encode())
        h.update(value.detach().cpu().contiguous().numpy().tobytes())
    buf = io.BytesIO()
    for x in example:
        buf.write(repr((tuple(x.shape), str(x.dtype))).encode())
    for item in items:
        for x in item:
            buf.write(np.ascontiguousarray(x.detach().cpu().numpy()).tobytes())
    h.update(buf.getvalue())
    for source in sorted(Path(__file__).resolve().parents[1].rglob("*.py")):  # mcuforge's own code
        h.update(source.read_bytes())
    return h.hexdigest()[:32]


def _cache_path(key: str) -> Path:
    from ..firmware.builder import cache_root

    return cache_root() / "sensitivity" / f"{key}.json"


def _load(key: str) -> Sensitivity | None:
    path = _cache_path(key)
    try:
        return Sensitivity.from_json(path.read_text())
    except (OSError, ValueError, KeyError):
        return None


def _store(key: str, result: Sensitivity) -> None:
    path = _cache_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{id(result)}.tmp")
        tmp.write_text(result.to_json())
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs the next call the measurement
