"""A sweep's description (``sweep.yaml``) and its expansion into tasks and points.

A *point* is one (model variant, precision, budget, board): one row of the result table. A *task* is the
points that share one compile: the same model variant, precision and budget on every board of the sweep
(the program is compiled once and retargeted to each board, see :mod:`mcuforge.sweep.retarget`). Every
point has a key: a hash of what defines it (the model factory and its parameters, the data loader and its
arguments, the precision, budget, board and measurement options, and the mcuforge version), so a finished
point is recognised in the result table and never computed again.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..targets import get_target

PRECISIONS = ("int8", "w4a8", "a16w8", "auto")
#: Version of what a point measures: bump when a column's meaning changes, so old points are recomputed.
POINT_FORMAT = 1


class SpecError(ValueError):
    """The sweep description is malformed (the message says which field)."""


def resolve(path: str) -> Any:
    """``"package.module:attribute"`` -> the object (a model factory or a data loader)."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise SpecError(f"{path!r}: expected 'package.module:callable'")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Task:
    """The points sharing one compile: one model variant at one precision and budget, on ``boards``."""

    model: str  # "package.module:factory"
    params: tuple[tuple[str, Any], ...]  # the factory's keyword arguments
    data: str  # "package.module:loader"
    data_args: tuple[tuple[str, Any], ...]
    precision: str
    flash_budget: int | None
    ram_budget: int | None
    boards: tuple[str, ...]
    options: tuple[tuple[str, Any], ...]  # measurement options (evaluation count, clock, board runs)

    def describe(self, board: str) -> dict[str, Any]:
        """What defines the point on ``board``: hashed into its key."""
        from .. import __version__

        return {"format": POINT_FORMAT, "mcuforge": __version__, "model": self.model, "params": dict(self.params),
                "data": self.data, "data_args": dict(self.data_args), "precision": self.precision,
                "flash_budget": self.flash_budget, "ram_budget": self.ram_budget, "board": board,
                "options": dict(self.options)}

    def key(self, board: str) -> str:
        text = json.dumps(self.describe(board), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.key(b) for b in self.boards)

    @property
    def label(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in self.params)
        budget = "".join(f" {n}<={v}" for n, v in (("flash", self.flash_budget), ("ram", self.ram_budget)) if v)
        return f"{self.model.rpartition(':')[2]}({params}) {self.precision}{budget}"


@dataclass
class Sweep:
    """A parsed sweep description."""

    models: list[tuple[str, dict[str, Any]]]  # (factory, parameter grid: name -> list of values)
    data: str
    data_args: dict[str, Any]
    precisions: list[str]
    budgets: list[dict[str, int | None]]
    boards: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    name: str = "sweep"

    def tasks(self) -> list[Task]:
        """Every task, in the description's order (models, then parameters, precisions, budgets)."""
        out = []
        for factory, grid in self.models:
            names = sorted(grid)
            for values in itertools.product(*(grid[n] for n in names)):
                for precision in self.precisions:
                    for budget in self.budgets:
                        out.append(Task(factory, tuple(zip(names, values, strict=True)), self.data,
                                        tuple(sorted(self.data_args.items())), precision, budget.get("flash"),
                                        budget.get("ram"), tuple(self.boards), tuple(sorted(self.options.items()))))
        return out


DEFAULT_OPTIONS = {"evaluation_count": 64, "board_runs": 1, "clock_mhz": None, "cycles": True}


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _budget(entry: Any) -> dict[str, int | None]:
    if entry is None:
        return {"flash": None, "ram": None}
    if not isinstance(entry, dict) or set(entry) - {"flash", "ram"}:
        raise SpecError(f"budget {entry!r}: expected a mapping with 'flash' and/or 'ram' (bytes)")
    for name in ("flash", "ram"):
        value = entry.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise SpecError(f"budget {name} {value!r}: expected a positive number of bytes")
    return {"flash": entry.get("flash"), "ram": entry.get("ram")}


def parse(doc: dict[str, Any]) -> Sweep:
    """A sweep from its description (the YAML file's mapping); :class:`SpecError` names a bad field.

    ``models``: a list of ``{factory: "pkg.mod:callable", params: {name: value or [values]}}`` (or bare
    factory strings); ``data``: ``{loader: "pkg.mod:callable", args: {...}}``; ``precisions``; ``budgets``: a
    list of ``{flash: bytes, ram: bytes}`` (none: no budget); ``boards``; ``measure``: options
    (``evaluation_count``, ``board_runs``, ``clock_mhz``, ``cycles``)."""
    if not isinstance(doc, dict):
        raise SpecError("a sweep description is a mapping")
    unknown = set(doc) - {"name", "models", "data", "precisions", "budgets", "boards", "measure"}
    if unknown:
        raise SpecError(f"unknown field(s): {', '.join(sorted(unknown))}")
    models = []
    for entry in _as_list(doc.get("models") or []):
        entry = {"factory": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or not isinstance(entry.get("factory"), str):
            raise SpecError(f"model {entry!r}: expected {{factory: 'pkg.mod:callable', params: {{...}}}}")
        grid = {str(k): _as_list(v) for k, v in (entry.get("params") or {}).items()}
        models.append((entry["factory"], grid))
    if not models:
        raise SpecError("models: at least one model factory")
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("loader"), str):
        raise SpecError("data: expected {loader: 'pkg.mod:callable', args: {...}}")
    precisions = [str(p).lower() for p in _as_list(doc.get("precisions") or ["int8"])]
    for p in precisions:
        if p not in PRECISIONS:
            raise SpecError(f"precision {p!r}: expected one of {', '.join(PRECISIONS)}")
    boards = [str(b) for b in _as_list(doc.get("boards") or ["cortex-m55"])]
    for b in boards:
        try:
            target = get_target(b)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        if target.qemu_machine is None:
            raise SpecError(f"board {b!r}: no QEMU board emulates it")
    options = dict(DEFAULT_OPTIONS)
    extra = set(doc.get("measure") or {}) - set(options)
    if extra:
        raise SpecError(f"measure: unknown option(s) {', '.join(sorted(extra))}; known: {', '.join(options)}")
    options.update(doc.get("measure") or {})
    return Sweep(models, data["loader"], dict(data.get("args") or {}), precisions,
                 [_budget(b) for b in _as_list(doc.get("budgets") or [None])], boards, options,
                 str(doc.get("name", "sweep")))


def load(path: str | Path) -> Sweep:
    """Read a sweep description from a YAML file."""
    import yaml

    with open(path) as f:
        return parse(yaml.safe_load(f))
