"""One task of a sweep, computed: compile once, evaluate on the host, run on each board; one row per board.

Every failure is a row: the model factory or the data loader raising, a lowering error, a budget no program
meets (``status="budget"``), a board run failing (that board's row only). A child process that dies is
recorded by the executor (:func:`crash_rows`), with the same columns.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import traceback
from collections import Counter
from typing import Any

import numpy as np
import torch

from .spec import Task, resolve

#: Columns that hold wall-clock times or where the point ran: the only ones that may differ between two
#: computations of the same point.
VOLATILE_COLUMNS = ("compile_s", "point_s", "executor")


def base_row(task: Task, board: str) -> dict[str, Any]:
    return {"key": task.key(board), "model": task.model, "params": json.dumps(dict(task.params), sort_keys=True),
            **{f"param_{k}": float(v) if isinstance(v, int | float) else str(v) for k, v in task.params},
            "precision": task.precision, "flash_budget": task.flash_budget, "ram_budget": task.ram_budget,
            "board": board, "status": "ok", "stage": "", "message": ""}


def failure_rows(task: Task, status: str, stage: str, message: str, boards: tuple[str, ...] | None = None,
                 executor: str = "") -> list[dict[str, Any]]:
    """The rows of ``task``'s points (on ``boards``, by default all) that failed at ``stage``."""
    return [{**base_row(task, b), "status": status, "stage": stage, "message": message[-2000:],
             "executor": executor} for b in (boards or task.boards)]


def crash_rows(task: Task, message: str, executor: str) -> list[dict[str, Any]]:
    """The rows of a task whose process died (a segfault, an abort, the OOM killer)."""
    return failure_rows(task, "crash", "process", message, executor=executor)


@functools.lru_cache(maxsize=4)
def _data(loader: str, args: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The loader's data, once per process (every task of a sweep shares it)."""
    data = resolve(loader)(**dict(args))
    if not isinstance(data, dict) or "calibration" not in data or "inputs" not in data:
        raise TypeError(f"{loader} returned {type(data).__name__}: expected a dict with 'calibration' (input "
                        "tuples), 'inputs' (a batch along dim 0, or a tuple of them) and optionally 'labels'")
    return data


def _model(task: Task, data: dict[str, Any]) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    made = resolve(task.model)(**dict(task.params))
    model, example = made if isinstance(made, tuple) else (made, None)
    if example is None:
        first = data["calibration"][0]
        example = tuple(first) if isinstance(first, tuple | list) else (first,)
    return model.eval(), tuple(example) if isinstance(example, tuple | list) else (example,)


def _classify(exc: BaseException) -> str:
    from ..accuracy.auto import BudgetError
    from ..fit import FitError

    return "budget" if isinstance(exc, BudgetError | FitError) else "error"


def _message(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-1:]
    where = f" ({frames[0].filename.rsplit('/', 1)[-1]}:{frames[0].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _compile(task: Task, model: Any, example: Any, calibration: Any, target: str) -> Any:
    import mcuforge

    budget = {"flash_bytes": task.flash_budget, "ram_bytes": task.ram_budget}
    return mcuforge.compile(model, example, calibration, target=target, progress=False,
                            precision=task.precision, **budget)


def _host_figures(prog: Any, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...],
                  labels: torch.Tensor | None) -> dict[str, Any]:
    """Accuracy (with labels), top-1 agreement and output SQNR against the fp32 model, on the host."""
    from ..accuracy.sensitivity import fp32_outputs
    from ..inspect.numeric import error_stats

    reference = fp32_outputs(model, inputs)[0]
    actual = prog.run(*inputs)[0]
    ref64, act64 = np.asarray(reference, np.float64), np.asarray(actual, np.float64)
    row = {"sqnr_db": float(error_stats(ref64.reshape(-1), act64.reshape(-1))[0]),
           "agreement": float(np.mean(act64.argmax(-1) == ref64.argmax(-1))) if ref64.ndim >= 2 else None,
           "accuracy": None}
    if labels is not None:
        row["accuracy"] = float(np.mean(act64.argmax(-1) == np.asarray(labels).reshape(-1)))
    return row


def _board_figures(prog: Any, inputs: tuple[torch.Tensor, ...], runs: int, options: dict[str, Any]) -> dict[str, Any]:
    """One board run per input (the first ``runs``): instructions, estimated cycles and ms, and whether the
    board's output bytes equal the host runtime's."""
    board_opts: dict[str, Any] = {"cycles": bool(options.get("cycles", True))}
    if options.get("clock_mhz"):
        board_opts["clock_mhz"] = float(options["clock_mhz"])
    exact = True
    facts: dict[str, Any] = {}
    for i in range(runs):
        sample = tuple(x[i:i + 1] for x in inputs)
        facts = {}
        on_board = prog.run(*sample, backend="qemu", measured=facts, board=board_opts)
        on_host = prog.run(*sample)
        exact &= all(np.array_equal(a, b) for a, b in zip(on_board, on_host, strict=True))
    estimate = facts.get("cycles")
    return {"instructions": int(facts["instructions"]), "board_exact": bool(exact),
            "est_cycles": float(estimate.cycles) if estimate is not None else None,
            "est_ms": float(estimate.ms) if estimate is not None else None,
            "clock_mhz": float(estimate.clock_hz / 1e6) if estimate is not None else None,
            "stack_bytes": int(facts.get("stack_bytes", 0))}


def _program_figures(prog: Any) -> dict[str, Any]:
    data = prog.to_bytes()
    mix = Counter(op.precision for op in prog.ops)
    return {"program_bytes": len(data), "arena_bytes": int(prog.arena_bytes),
            "constant_bytes": int(prog.constant_bytes),
            "program_sha256": hashlib.sha256(data).hexdigest(), "int8_mac_share": float(prog.int8_mac_share),
            "op_precisions": " ".join(f"{k}:{v}" for k, v in sorted(mix.items()))}


def run_task(task: Task, executor: str = "") -> list[dict[str, Any]]:
    """Compute ``task``: one row per board, failures included (never raises for a point's failure)."""
    from .retarget import RetargetError, retarget

    start = time.perf_counter()
    options = dict(task.options)
    try:
        data = _data(task.data, task.data_args)
    except Exception as exc:  # noqa: BLE001 - a failure is a result
        return failure_rows(task, "error", "data", _message(exc), executor=executor)
    try:
        model, example = _model(task, data)
    except Exception as exc:  # noqa: BLE001
        return failure_rows(task, "error", "model", _message(exc), executor=executor)
    count = int(options.get("evaluation_count", 64))
    raw = data["inputs"]
    inputs = tuple(x[:count] for x in (raw if isinstance(raw, tuple | list) else (raw,)))
    labels = data.get("labels")
    labels = labels[:count] if labels is not None else None
    # One compile for every board, retargeted (int4 weights: once per core family); auto under a RAM budget
    # chooses per board (the arena differs).
    per_board = task.precision == "auto" and task.ram_budget is not None
    rows, shared, host, first = [], None, None, None
    for board in task.boards:
        row = {**base_row(task, board), "executor": executor}
        t0 = time.perf_counter()
        try:
            prog = None
            if not per_board and shared is not None:
                try:
                    prog = retarget(shared, board)
                except RetargetError:  # int4 weights laid out per core family: compiled for this board below
                    pass
            if prog is None:
                prog = _compile(task, model, example, data["calibration"], board)
                shared = shared or prog
                row["compile_s"] = time.perf_counter() - t0
            else:
                from ..fit import check_fit

                check_fit(prog.graph, prog.program_bytes, board, task.flash_budget, task.ram_budget)  # as compile
                row["compile_s"] = first
            first = row["compile_s"] if first is None else first
        except Exception as exc:  # noqa: BLE001
            rows.append({**row, "status": _classify(exc), "stage": "compile", "message": _message(exc)})
            continue
        row.update(_program_figures(prog))
        try:
            if host is None or per_board:
                host = _host_figures(prog, model, inputs, labels)
            row.update(host)
        except Exception as exc:  # noqa: BLE001
            rows.append({**row, "status": "error", "stage": "evaluate", "message": _message(exc)})
            continue
        runs = int(options.get("board_runs", 1))
        if runs <= 0:  # host figures only: no QEMU run
            rows.append(row)
            continue
        try:
            row.update(_board_figures(prog, inputs, runs, options))
        except Exception as exc:  # noqa: BLE001
            rows.append({**row, "status": "error", "stage": "board", "message": _message(exc)})
            continue
        rows.append(row)
    elapsed = time.perf_counter() - start
    for row in rows:
        row["point_s"] = elapsed / len(rows)
    return rows
