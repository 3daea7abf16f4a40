"""Design-space sweeps (mcuforge.sweep, docs/sweeps.md).

CI runs the example's code on a smaller grid than examples/sweep_dscnn.yaml's 24 points (DS-CNN width 0.25
and 0.5 x int8/W4A8/A16W8 x cortex-m4/cortex-m55: 12 points; auto's sensitivity analysis alone costs ~30 s
of CPU per width): locally with a kill and a restart, then on a local Ray cluster, and the two tables must
be identical but for the timing columns. The full example runs in benchmarks/sweep.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import mcuforge
from mcuforge import sweep
from mcuforge.sweep.retarget import retarget
from mcuforge.sweep.spec import SpecError, parse

from test_inspector import PNG_MAGIC, ReportParser, render_in_chromium

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweep_dscnn.yaml"
BOARDS = ["cortex-m4", "cortex-m55"]


def ci_grid() -> dict:
    """The example's description on the CI grid (same data, budget, boards and measurements)."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["models"][0]["params"]["width"] = [0.25, 0.5]
    doc["precisions"] = ["int8", "w4a8", "a16w8"]
    doc["data"]["args"] = {"calibration": 4, "evaluation": 16}
    doc["measure"]["evaluation_count"] = 16
    return doc


def parquet_files(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (out / "results").glob("*.parquet")}


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """The CI grid run by the CLI, killed (its whole process group) after its first finished task, then
    restarted: (the table, the files before the kill, the files after the restart, the out folder)."""
    folder = tmp_path_factory.mktemp("sweep")
    spec, out = folder / "sweep.yaml", folder / "out"
    spec.write_text(yaml.safe_dump(ci_grid()))
    cmd = [sys.executable, "-m", "mcuforge", "sweep", str(spec), "--out", str(out), "--workers", "2", "-q"]
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
    table = sweep.run(spec, out, workers=2, progress=False)
    return table, before, parquet_files(out), out


def test_spec_errors_name_the_field():
    good = ci_grid()
    assert len(parse(good).tasks()) == 6 and parse(good).tasks()[0].boards == tuple(BOARDS)
    for change, words in ((lambda d: d.update(precisions=["int3"]), "precision 'int3'"),
                          (lambda d: d.update(boards=["cortex-m85"]), "no QEMU board"),
                          (lambda d: d.update(budgets=[{"flash": -1}]), "positive number of bytes"),
                          (lambda d: d.update(measure={"runs": 3}), "unknown option(s) runs"),
                          (lambda d: d.update(colour="red"), "unknown field(s): colour"),
                          (lambda d: d.pop("data"), "data:")):
        doc = ci_grid()
        change(doc)
        with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse(doc)


def test_retarget_gives_the_compile_for_that_board():
    """One compile serves every board: retargeted, the program is byte for byte the one compiled there."""
    import mcuforge
    from mcuforge.examples.sweep import ds_cnn, kws_inputs

    data = kws_inputs(calibration=4, evaluation=1)
    model, example = ds_cnn(0.25), data["calibration"][0]
    for precision in ("int8", "w4a8", "a16w8"):
        base = mcuforge.compile(model, example, data["calibration"], target="cortex-m4", progress=False,
                                precision=precision)
        for target in ("cortex-m3", "cortex-m55"):
            direct = mcuforge.compile(model, example, data["calibration"], target=target, progress=False,
                                      precision=precision)
            moved = retarget(base, target)
            assert moved.target == target and moved.to_bytes() == direct.to_bytes(), (precision, target)
        # the scratch differs between the scalar and the DSP paths: the arena is really re-planned
        assert retarget(base, "cortex-m3").arena_bytes != base.arena_bytes or precision == "a16w8"


def test_killed_sweep_resumes_without_recomputing(resumed):
    table, before, after, _out = resumed
    assert 0 < len(before) < 6, f"killed after {len(before)} of 6 tasks"
    assert all(after[name] == mtime for name, mtime in before.items()), "a finished task was written again"
    assert len(after) == 6  # one file per task: the restart computed exactly the others
    rows = pd.concat([pd.read_parquet(p) for p in (_out / "results").glob("*.parquet")])
    assert len(rows) == 12 and rows["key"].is_unique
    assert list(table["status"]) == ["ok"] * 12, table[["status", "message"]]
    assert list(table["board"]) == BOARDS * 6
    assert table["board_exact"].all()  # each board's output bytes equal the host runtime's
    # a sweep run again computes nothing
    again = sweep.run(_out / ".." / "sweep.yaml", _out, progress=False)
    assert parquet_files(_out) == after and len(again) == 12


def test_points_share_one_compile_per_board_pair(resumed):
    table = resumed[0]
    by_task = table.groupby(["param_width", "precision"])
    for _key, rows in by_task:
        assert list(rows["board"]) == BOARDS
        # the same program but for its target field and scratch plan: same size, different bytes
        assert rows["program_bytes"].nunique() == 1 and rows["program_sha256"].nunique() == 2
        assert rows["sqnr_db"].nunique() == 1  # host figures: one evaluation per compile
        m4, m55 = rows.iloc[0], rows.iloc[1]
        assert m55["instructions"] < m4["instructions"]  # Helium
        assert m4["est_ms"] > 0 and m55["est_cycles"] > 0


def test_ray_gives_the_same_table(resumed, tmp_path):
    """A local Ray cluster (2 CPUs, started here): the same rows, program bytes and figures."""
    ray = pytest.importorskip("ray", reason="the ray extra (scripts/setup.sh installs it)")
    local = resumed[0]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        spec = resumed[3] / ".." / "sweep.yaml"
        remote = sweep.run(spec, tmp_path / "ray", ray="local", progress=False)
    finally:
        ray.shutdown()
    assert set(remote["executor"]) == {"ray"} and set(local["executor"]) <= {"local"}
    columns = [c for c in local.columns if c not in sweep.VOLATILE_COLUMNS]
    assert sorted(columns) == sorted(c for c in remote.columns if c not in sweep.VOLATILE_COLUMNS)
    pd.testing.assert_frame_equal(local[columns], remote[columns])  # program_sha256 included


def test_failures_are_results(tmp_path):
    """A factory that raises, a model that does not compile, a budget no program meets and a worker process
    that dies: each a row with its status and message, and the sweep goes on to the good point."""
    doc = ci_grid()
    doc["models"] = [{"factory": "mcuforge.examples.sweep:ds_cnn", "params": {"width": 0.25}},
                     "sweep_models:raises", "sweep_models:data_dependent", "sweep_models:dies"]
    doc["precisions"] = ["int8"]
    doc["budgets"] = [None, {"flash": 2000}]
    doc["boards"] = ["cortex-m4"]
    table = mcuforge.sweep(doc, tmp_path / "out", workers=1, progress=False)  # the package is callable
    got = {(r.model.rpartition(":")[2], r.flash_budget if pd.notna(r.flash_budget) else None): (r.status, r.stage)
           for r in table.itertuples()}
    assert got == {("ds_cnn", None): ("ok", ""), ("ds_cnn", 2000): ("budget", "compile"),
                   ("raises", None): ("error", "model"), ("raises", 2000): ("error", "model"),
                   ("data_dependent", None): ("error", "compile"), ("data_dependent", 2000): ("error", "compile"),
                   ("dies", None): ("crash", "process"), ("dies", 2000): ("crash", "process")}
    messages = dict(zip(zip(table["model"].str.rpartition(":")[2], table["flash_budget"].fillna(0), strict=True),
                        table["message"], strict=True))
    assert "cannot build width 1.0" in messages[("raises", 0)]
    assert "flash needs" in messages[("ds_cnn", 2000)] and "2,000" in messages[("ds_cnn", 2000)]
    assert "exit code 7" in messages[("dies", 0)]
    # failures are recorded results: a rerun computes nothing, --retry-failed computes them again
    store = sweep.ResultStore(tmp_path / "out")
    assert len(store.done()) == 8 and len(store.done(retry_failed=True)) == 1


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
    assert "12 points" in printed and "on the Pareto front (sqnr_db)" in printed
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
