"""Design-space sweeps (mcuforge.sweep, docs/sweeps.md).

CI runs the example itself, examples/sweep_dscnn.yaml (24 points: DS-CNN width 0.5/1.0/1.5 x
int8/W4A8/A16W8/auto x cortex-m4/cortex-m55), on both executors: by the CLI on local processes, killed after
its first finished task and restarted (no point computed twice), then on a local Ray cluster (2 CPUs,
started here); the two tables must be identical but for the timing columns. Each executor has its own
``--out`` and its own cache root (:func:`executor_cache`): only the content-addressed builds (firmware, the
host C runtime) are shared, so the Ray run recomputes every point, auto's sensitivity analyses included.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import yaml

import mcuforge
from mcuforge import sweep
from mcuforge.sweep.retarget import RetargetError, retarget
from mcuforge.sweep.spec import SpecError, parse

from test_inspector import PNG_MAGIC, ReportParser, render_in_chromium

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweep_dscnn.yaml"
BOARDS = ["cortex-m4", "cortex-m55"]
#: Cache folders keyed by their sources' hash (builds, not results): what the executors may share.
SHARED_BUILDS = ("firmware", "cruntime", "cycles-plugin", "cmsis-nn")
#: The example's points that exceed its 48,000-byte flash budget (program sizes do not depend on the data).
OVER_BUDGET = {(1.5, "int8"), (1.5, "a16w8")}


def example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def parquet_files(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.parquet")}


@contextmanager
def executor_cache(folder: Path) -> Iterator[Path]:
    """``$MCUFORGE_CACHE`` set, for the duration, to a cache root of one executor's own (inherited by its
    worker processes and by a Ray cluster started inside): the firmware and C runtime builds are links to
    the shared ones, everything else (auto's sensitivity analyses) starts empty."""
    from mcuforge.firmware.builder import cache_root

    shared = cache_root()
    folder.mkdir(parents=True)
    for name in SHARED_BUILDS:
        (shared / name).mkdir(parents=True, exist_ok=True)
        (folder / name).symlink_to(shared / name, target_is_directory=True)
    before = os.environ.get("MCUFORGE_CACHE")
    os.environ["MCUFORGE_CACHE"] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop("MCUFORGE_CACHE")
        else:
            os.environ["MCUFORGE_CACHE"] = before


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """The example run by the CLI (one worker), killed (its whole process group) after its first finished
    task, then restarted on two: (the table, the files before the kill, the files after the restart, the out folder)."""
    folder = tmp_path_factory.mktemp("sweep")
    out = folder / "out"
    # one worker until the kill: the restart's two do the rest (the killed run's unfinished work is lost)
    cmd = [sys.executable, "-m", "mcuforge", "sweep", str(EXAMPLE), "--out", str(out), "--workers", "1", "-q"]
    with executor_cache(folder / "cache"):
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while not parquet_files(out) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and its worker processes
        except ProcessLookupError:  # it ended by itself: the assertion below says how
            pass
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, f"the sweep ended before it was killed: {proc.stderr.read()[-2000:]}"
        before = parquet_files(out)
        table = sweep.run(EXAMPLE, out, workers=2, progress=False)
    return table, before, parquet_files(out), out


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray cluster of 2 CPUs, started here with its own cache root; its workers import
    tests/sweep_models.py (the failure factories) from ``PYTHONPATH``."""
    ray = pytest.importorskip("ray", reason="the ray extra (scripts/setup.sh installs it)")
    folder = tmp_path_factory.mktemp("ray")
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parent), path) if p)
    try:
        with executor_cache(folder / "cache"):  # before ray.init: the raylet and its workers inherit it
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            try:
                yield folder
            finally:
                ray.shutdown()
    finally:
        if path is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = path


def test_spec_errors_name_the_field():
    good = example()
    assert len(parse(good).tasks()) == 12 and parse(good).tasks()[0].boards == tuple(BOARDS)
    for change, words in ((lambda d: d.update(precisions=["int3"]), "precision 'int3'"),
                          (lambda d: d.update(boards=["cortex-m85"]), "no QEMU board"),
                          (lambda d: d.update(budgets=[{"flash": -1}]), "positive number of bytes"),
                          (lambda d: d.update(measure={"runs": 3}), "unknown option(s) runs"),
                          (lambda d: d.update(colour="red"), "unknown field(s): colour"),
                          (lambda d: d.pop("data"), "data:")):
        doc = example()
        change(doc)
        with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse(doc)


def test_retarget_gives_the_compile_for_that_board():
    """One compile serves every board: retargeted, the program is byte for byte the one compiled there."""
    from mcuforge.examples.sweep import ds_cnn, kws_inputs

    data = kws_inputs(calibration=4, evaluation=1)
    model, example_input = ds_cnn(0.25), data["calibration"][0]
    for precision in ("int8", "w4a8", "a16w8"):
        base = mcuforge.compile(model, example_input, data["calibration"], target="cortex-m4", progress=False,
                                precision=precision)
        for target in ("cortex-m3", "cortex-m55"):
            direct = mcuforge.compile(model, example_input, data["calibration"], target=target, progress=False,
                                      precision=precision)
            if precision == "w4a8" and target == "cortex-m55":  # Helium's int4 layout: refused, not mis-lowered
                assert any(t.layout == "s4_halves" for t in direct.graph.tensors.values())
                with pytest.raises(RetargetError, match="int4 weights are laid out 'plain'.*'s4_halves'"):
                    retarget(base, target)
                continue
            moved = retarget(base, target)
            assert moved.target == target and moved.to_bytes() == direct.to_bytes(), (precision, target)
        # the scratch differs between the scalar and the DSP paths: the arena is really re-planned
        assert retarget(base, "cortex-m3").arena_bytes != base.arena_bytes or precision == "a16w8"


def test_reused_captures_give_the_same_programs(monkeypatch):
    """auto's search compiles one model ~25 times inside ``reusing_captures``: torch.export runs once and
    every compile gets a copy; the programs are byte for byte those of separate captures."""
    import mcuforge.capture  # noqa: F401 - the module, not the function mcuforge.capture

    capture_module = sys.modules["mcuforge.capture"]
    from mcuforge.examples.sweep import ds_cnn, kws_inputs

    data = kws_inputs(calibration=2, evaluation=1)
    model, example_input = ds_cnn(0.25), data["calibration"][0]
    exports = []
    real_export = capture_module._export
    monkeypatch.setattr(capture_module, "_export", lambda *a: exports.append(1) or real_export(*a))

    def programs() -> list[bytes]:
        return [mcuforge.compile(model, example_input, data["calibration"], target="cortex-m4", progress=False,
                                 precision=p).to_bytes() for p in ("int8", "w4a8", "a16w8")]

    separate = programs()
    assert len(exports) == 3
    with capture_module.reusing_captures():
        reused = programs()
        other = mcuforge.compile(ds_cnn(0.5), example_input, data["calibration"], progress=False)  # another model
    assert len(exports) == 5 and reused == separate
    assert other.to_bytes() != separate[0]
    programs()  # outside: captured again
    assert len(exports) == 8


def test_killed_sweep_resumes_without_recomputing(resumed):
    table, before, after, _out = resumed
    assert 0 < len(before) < 12, f"killed after {len(before)} of 12 tasks"
    assert all(after[name] == mtime for name, mtime in before.items()), "a finished task was written again"
    assert len(after) == 12  # one file per task: the restart computed exactly the others
    rows = pd.concat([pd.read_parquet(p) for p in (_out / "results").glob("*.parquet")])
    assert len(rows) == 24 and rows["key"].is_unique
    status = {(r.param_width, r.precision, r.board): r.status for r in table.itertuples()}
    assert status == {(w, p, b): "budget" if (w, p) in OVER_BUDGET else "ok"
                      for w in (0.5, 1.0, 1.5) for p in ("int8", "w4a8", "a16w8", "auto") for b in BOARDS}, \
        table[["param_width", "precision", "status", "message"]]
    assert list(table["board"]) == BOARDS * 12
    budget = table[table["status"] == "budget"]
    assert budget["message"].str.contains("48,000").all()
    ok = table[table["status"] == "ok"]
    assert ok["board_exact"].all()  # each board's output bytes equal the host runtime's
    assert (ok["program_bytes"] <= 48000).all()
    auto = ok[ok["precision"] == "auto"]
    assert len(auto) == 6 and auto["op_precisions"].str.len().gt(0).all()
    # a sweep run again computes nothing
    again = sweep.run(EXAMPLE, _out, progress=False)
    assert parquet_files(_out) == after and len(again) == 24


def test_points_share_one_compile_per_board_pair(resumed):
    table = resumed[0]
    ok = table[table["status"] == "ok"]
    for _key, rows in ok.groupby(["param_width", "precision"]):
        assert list(rows["board"]) == BOARDS
        # the same program but for its target field and scratch plan: same size, different bytes
        assert rows["program_bytes"].nunique() == 1 and rows["program_sha256"].nunique() == 2
        assert rows["sqnr_db"].nunique() == 1  # host figures: one evaluation per compile
        m4, m55 = rows.iloc[0], rows.iloc[1]
        assert m55["instructions"] < m4["instructions"]  # Helium
        assert m4["est_ms"] > 0 and m55["est_cycles"] > 0


def test_failures_are_results(tmp_path):
    """A factory that raises, a model that does not compile, a budget no program meets and a worker process
    that dies (``os._exit``, a segfault): each a row with its status and message, and the sweep goes on to
    the good point."""
    doc = example()
    doc["models"] = [{"factory": "mcuforge.examples.sweep:ds_cnn", "params": {"width": 0.25}},
                     "sweep_models:raises", "sweep_models:data_dependent", "sweep_models:dies",
                     "sweep_models:segfaults", "sweep_models:reports_threads"]
    doc["precisions"] = ["int8"]
    doc["budgets"] = [None, {"flash": 2000}]
    doc["boards"] = ["cortex-m4"]
    table = mcuforge.sweep(doc, tmp_path / "out", workers=1, progress=False)  # the package is callable
    got = {(r.model.rpartition(":")[2], r.flash_budget if pd.notna(r.flash_budget) else None): (r.status, r.stage)
           for r in table.itertuples()}
    assert got == {("ds_cnn", None): ("ok", ""), ("ds_cnn", 2000): ("budget", "compile"),
                   ("raises", None): ("error", "model"), ("raises", 2000): ("error", "model"),
                   ("data_dependent", None): ("error", "compile"), ("data_dependent", 2000): ("error", "compile"),
                   ("dies", None): ("crash", "process"), ("dies", 2000): ("crash", "process"),
                   ("segfaults", None): ("crash", "process"), ("segfaults", 2000): ("crash", "process"),
                   ("reports_threads", None): ("error", "model"), ("reports_threads", 2000): ("error", "model")}
    messages = dict(zip(zip(table["model"].str.rpartition(":")[2], table["flash_budget"].fillna(0), strict=True),
                        table["message"], strict=True))
    assert "cannot build width 1.0" in messages[("raises", 0)]
    assert "flash needs" in messages[("ds_cnn", 2000)] and "2,000" in messages[("ds_cnn", 2000)]
    assert "exit code 7" in messages[("dies", 0)]
    assert f"exit code {-signal.SIGSEGV}" in messages[("segfaults", 0)]
    assert "threads: OMP 1 torch 1" in messages[("reports_threads", 0)]  # one core's share, as on Ray
    # failures are recorded results: a rerun computes nothing, --retry-failed computes them again
    store = sweep.ResultStore(tmp_path / "out")
    assert len(store.done()) == 12 and len(store.done(retry_failed=True)) == 1


def test_pareto_front_and_best_points():
    rows = [  # quality, ms, RAM, flash
        ("a", "cortex-m4", 40.0, 10.0, 100, 100),   # on the front (fastest)
        ("b", "cortex-m4", 50.0, 20.0, 100, 100),   # on the front (best quality)
        ("c", "cortex-m4", 39.0, 30.0, 200, 200),   # dominated by a
        ("d", "cortex-m55", 45.0, 5.0, 300, 50),    # on the front (smallest flash, fastest)
        ("e", "cortex-m55", 45.0, 5.0, 300, 60),    # dominated by d (equal but flash)
    ]
    table = pd.DataFrame([{"key": k, "board": b, "sqnr_db": q, "est_ms": ms, "arena_bytes": ram, "program_bytes": fl,
                           "status": "ok", "flash_budget": None, "ram_budget": None, "accuracy": None}
                          for k, b, q, ms, ram, fl in rows] + [{"key": "f", "board": "cortex-m4", "status": "crash"}])
    assert list(sweep.pareto_front(table)["key"]) == ["b", "d", "a"]
    assert list(sweep.best_points(table)["key"]) == ["b", "d"]
    # no board run: the front over quality, RAM and flash only (a's speed no longer counts: b dominates it)
    assert list(sweep.pareto_front(table.drop(columns="est_ms"))["key"]) == ["b", "d"]


def test_report_in_a_browser(resumed, capsys):
    from mcuforge.cli import main

    out = resumed[3]
    assert main(["sweep", "--report", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "24 points" in printed and "on the Pareto front (sqnr_db)" in printed
    best = [line for line in printed.splitlines() if line.startswith("cortex-m")]
    assert [line.split(" ")[0] for line in best] == BOARDS and all("flash <= 48,000 B" in line for line in best)
    page = out / "report.html"
    parser = ReportParser()
    parser.feed(page.read_text())
    assert parser.sections == ["pareto", "best", "points"] and parser.tables == 3
    assert [img["alt"] for img in parser.images] == ["pareto"]
    assert (out / "pareto.png").read_bytes().startswith(PNG_MAGIC)
    assert "http://" not in page.read_text() and "https://" not in page.read_text()
    render_in_chromium(page, out, plots=["pareto"])


def test_ray_gives_the_same_table(resumed, ray_cluster):
    """The example on the local Ray cluster (2 CPUs): the same rows, program bytes and figures, every point
    computed there (its own out folder and sensitivity cache)."""
    local = resumed[0]
    remote = sweep.run(EXAMPLE, ray_cluster / "out", ray="local", progress=False)
    # auto's analyses, redone there: one per auto task, and one more for cortex-m55 where the plan keeps int4 layers
    # (Helium's int4 weight layout: compiled again, not retargeted; which plans keep them is the data's choice)
    auto_tasks = remote[remote["precision"] == "auto"]["key"].nunique() // len(BOARDS)
    analyses = len(list((ray_cluster / "cache" / "sensitivity").glob("*.json")))
    assert auto_tasks > 0 and auto_tasks <= analyses <= 2 * auto_tasks, (auto_tasks, analyses)
    assert set(remote["executor"]) == {"ray"} and set(local["executor"]) <= {"local"}
    columns = [c for c in local.columns if c not in sweep.VOLATILE_COLUMNS]
    assert sorted(columns) == sorted(c for c in remote.columns if c not in sweep.VOLATILE_COLUMNS)
    pd.testing.assert_frame_equal(local[columns], remote[columns])  # program_sha256 included


def test_ray_dead_worker_is_a_result(ray_cluster):
    """A Ray worker that dies holding a task (``os._exit``, a segfault) gives that task's crash rows with Ray's
    message, and the sweep goes on to the good point."""
    doc = example()
    doc["models"] = ["sweep_models:dies", "sweep_models:segfaults",
                     {"factory": "mcuforge.examples.sweep:ds_cnn", "params": {"width": 0.25}}]
    doc["precisions"], doc["budgets"], doc["boards"] = ["int8"], [None], ["cortex-m4"]
    table = sweep.run(doc, ray_cluster / "dead", ray="local", progress=False)
    got = {r.model.rpartition(":")[2]: (r.status, r.stage, r.executor) for r in table.itertuples()}
    assert got == {"dies": ("crash", "process", "ray"), "segfaults": ("crash", "process", "ray"),
                   "ds_cnn": ("ok", "", "ray")}
    for message in table["message"][:2]:
        assert "WorkerCrashedError" in message and "died" in message, message
    assert table["board_exact"].iloc[2]
    # the crashes are recorded results: a rerun computes nothing
    assert len(sweep.ResultStore(ray_cluster / "dead").done()) == 3
