"""Where a sweep's tasks run: a pool of local processes (the default) or a Ray cluster.

Both executors only dispatch :func:`mcuforge.sweep.point.run_task` and yield each task's rows as it
finishes; the driver (:func:`mcuforge.sweep.run`) writes them to the table. A process that dies while it
holds a task (a segfault, ``os._exit``, the OOM killer) gives that task's :func:`crash_rows`, and the sweep
goes on: the local pool starts a fresh worker, Ray reports the dead worker as the task's error.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import deque
from collections.abc import Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

from .point import crash_rows, run_task
from .spec import Task

Result = tuple[Task, list[dict[str, Any]]]


def _worker(conn: Connection) -> None:
    """A local worker: one task at a time, one thread (one point per core)."""
    import torch

    torch.set_num_threads(1)
    while True:
        try:
            task = conn.recv()
        except EOFError:  # the driver is gone
            return
        if task is None:
            return
        conn.send(run_task(task, executor="local"))


#: One thread per worker in every native pool (OpenMP, OpenBLAS, MKL), as Ray gives a num_cpus=1 task: a
#: worker is one core's share, and spinning BLAS threads of two workers on two cores only take turns.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


class _Slot:
    def __init__(self, ctx: Any) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        saved = {name: os.environ.get(name) for name in ONE_THREAD}
        os.environ.update(ONE_THREAD)  # a spawned interpreter reads them before it imports numpy or torch
        try:
            self.proc.start()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        child.close()
        self.task: Task | None = None

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(timeout=10)
        if self.proc.is_alive():
            self.proc.kill()


def run_local(tasks: list[Task], workers: int | None = None) -> Iterator[Result]:
    """Run ``tasks`` on ``workers`` local processes (default: one per core), yielding results as they finish."""
    ctx = mp.get_context("spawn")  # a fresh interpreter: no forked torch threads or locks
    count = max(1, min(workers or os.cpu_count() or 1, len(tasks)))
    pending = deque(tasks)
    slots: list[_Slot] = []
    try:
        slots = [_Slot(ctx) for _ in range(count)]
        while pending or any(s.task for s in slots):
            for slot in slots:
                if slot.task is None and pending:
                    slot.task = pending.popleft()
                    slot.conn.send(slot.task)
            busy = [s for s in slots if s.task is not None]
            ready = wait([s.conn for s in busy] + [s.proc.sentinel for s in busy])
            for i, slot in enumerate(slots):
                task = slot.task
                if task is None or (slot.conn not in ready and slot.proc.sentinel not in ready):
                    continue
                try:
                    rows = slot.conn.recv() if slot.conn.poll() else None
                except (EOFError, OSError):
                    rows = None
                slot.task = None
                if rows is not None:
                    yield task, rows
                    continue
                slot.proc.join(timeout=10)
                yield task, crash_rows(task, f"the worker process died (exit code {slot.proc.exitcode})", "local")
                slots[i] = _Slot(ctx)
    finally:
        for slot in slots:
            slot.stop()


def _ray_task(task: Task) -> list[dict[str, Any]]:
    return run_task(task, executor="ray")


def run_ray(tasks: list[Task], address: str, workers: int | None = None) -> Iterator[Result]:
    """Run ``tasks`` as Ray tasks (one CPU each) on the cluster at ``address`` ("local": start one with
    ``workers`` CPUs; a Ray already initialized in this process is used as it is)."""
    import ray

    if not ray.is_initialized():
        if address == "local":
            ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
    refs = {remote.remote(task): task for task in tasks}
    while refs:
        done, _ = ray.wait(list(refs), num_returns=1)
        for ref in done:
            task = refs.pop(ref)
            try:
                rows = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - a dead worker (or a task Ray could not run) is a result
                rows = crash_rows(task, f"{type(exc).__name__}: {str(exc)[-1500:]}", "ray")
            yield task, rows
