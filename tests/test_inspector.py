"""The Inspector: per-op tables, totals, numeric gap per layer, Chrome trace, HTML report, CLI."""

import base64
import copy
import html as html_lib
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest
import torch

import mcuforge
from mcuforge.api import Program
from mcuforge.cli import main
from mcuforge.inspect import TraceMismatchError
from mcuforge.trace import Trace

from conftest import compiled

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def traced(name, runs=1, trace=True):
    model, example, prog = compiled(name)
    batch = torch.cat([example[0]] * runs) if runs > 1 else example[0]
    _outputs, tr = prog.run(batch, trace=trace)
    return model, example, prog, tr


@pytest.mark.parametrize("name", ["ds_cnn", "mobilenet_v1_025"])
def test_dataframe_one_row_per_op_per_run(name):
    model, _example, prog, trace = traced(name, runs=2)
    insp = mcuforge.Inspector(prog, trace)
    df = insp.to_dataframe()
    n_ops = len(prog.graph.ops)
    assert len(df) == 2 * n_ops
    assert list(df["run"]) == [0] * n_ops + [1] * n_ops and list(df["op_index"]) == list(range(n_ops)) * 2
    assert set(df["module"]) <= set(dict(model.named_modules()))
    assert list(df["kind"][:n_ops]) == [op.kind for op in prog.graph.ops]
    assert (df["duration"] >= 0).all() and (df["start"] >= 0).all() and (df["end"] >= df["start"]).all()
    assert (df["duration"] == df["end"] - df["start"]).all() and set(df["unit"]) == {"ns"}
    for run in trace.runs:
        assert df[df["run"] == run.index]["duration"].sum() <= run.duration
        assert df[df["run"] == run.index]["end"].max() <= run.duration
    assert df.attrs["truncated"] is False and not insp.truncated
    conv = df[df["kind"] == "conv2d_s8"].iloc[0]
    assert conv["macs"] > 0 and conv["bytes"] == prog.graph.tensors[prog.graph.ops[conv["op_index"]].outputs[0]].nbytes


def test_totals_per_module_prefix_and_kind():
    _model, _example, prog, trace = traced("mobilenet_v1_025", runs=2)
    insp = mcuforge.Inspector(prog, trace)
    df = insp.to_dataframe()
    blocks = insp.totals("module", depth=2)
    # 14 conv blocks (features.0 .. features.13), the pool, the top-level view, the classifier
    assert list(blocks.index[:14]) == [f"features.{i}" for i in range(14)]
    assert blocks.loc["features.5", "ops"] == 2 and blocks["ops"].sum() == len(prog.graph.ops)
    assert blocks["total"].sum() == df["duration"].sum()
    assert blocks.loc["features.5", "per_run"] == df[df["module"].str.startswith("features.5.")]["duration"].sum() / 2
    assert abs(blocks["share"].sum() - 1) < 1e-9
    by_kind = insp.totals("kind")
    assert by_kind.loc["depthwise_conv2d_s8", "ops"] == 13 and by_kind["total"].sum() == df["duration"].sum()
    assert len(insp.totals("module")) == df["module"].nunique()
    with pytest.raises(ValueError, match="totals by"):
        insp.totals("colour")


def test_numeric_gap_lines_layers_up_with_the_fp32_model():
    model, example, prog, trace = traced("ds_cnn")
    gap = mcuforge.Inspector(prog, trace).numeric_gap(model, example)
    modules = dict(model.named_modules())
    assert list(gap["op_index"]) == sorted(gap["op_index"]) and len(gap) >= 10
    assert set(gap["module"]) <= set(modules)
    assert {"stem.0", "blocks.1.1.0", "classifier"} <= set(gap["module"])
    assert (gap["sqnr_db"] > 25).all() and (gap["mse"] >= 0).all() and (gap["max_abs_error"] > 0).all()
    # the last layer's value is the model output: its error is the program's output error
    fp32 = model(example[0]).detach().numpy()
    int8 = prog.run(*example)[0]
    last = gap.iloc[-1]
    assert last["module"] == "classifier"
    assert np.isclose(last["max_abs_error"], np.abs(int8 - fp32).max(), rtol=1e-4)


def damage_requantization(prog: Program, op_index: int, factor_log2: int = 4) -> Program:
    """A copy of ``prog`` whose op ``op_index`` stores its output 2**factor_log2 times too coarsely:
    output scale and requantization shifts changed consistently, and its consumers' shifts
    compensate (shifts and bias), so the program stays correct but this one layer loses precision."""
    graph = copy.deepcopy(prog.graph)
    op = graph.ops[op_index]
    out = graph.tensors[op.outputs[0]]
    out.qparams = type(out.qparams)(out.qparams.scale * 2 ** factor_log2, out.qparams.zero_point)
    graph.tensors[op.inputs[4]].data = graph.tensors[op.inputs[4]].data - factor_log2
    consumers = [c for c in graph.ops if op.outputs[0] in c.inputs]
    assert consumers and all(c.kind in ("conv2d_s8", "depthwise_conv2d_s8") for c in consumers)
    for c in consumers:  # input scale x 2**k: the int32 bias (at input scale x weight scale) / 2**k, shifts + k
        bias = graph.tensors[c.inputs[2]]
        bias.data = np.round(bias.data / 2 ** factor_log2).astype(bias.data.dtype)
        graph.tensors[c.inputs[4]].data = graph.tensors[c.inputs[4]].data + factor_log2
    return Program(graph, meta=dict(prog.meta))


def test_worst_layer_names_the_damaged_layer():
    model, example, prog = compiled("ds_cnn")
    damaged_op = 4
    damaged_module = prog.graph.ops[damaged_op].debug["module"]
    assert damaged_module == "blocks.1.1.0"
    intact = mcuforge.Inspector(prog, prog.run(*example, trace=True)[1])
    assert intact.worst_layer(model, example) != damaged_module
    bad = damage_requantization(prog, damaged_op)
    outputs, trace = bad.run(*example, trace=True)
    insp = mcuforge.Inspector(bad, trace)
    assert insp.worst_layer(model, example) == damaged_module
    gap = insp.gap.set_index("module")
    assert gap.loc[damaged_module, "sqnr_drop_db"] > 15
    assert gap.loc[damaged_module, "sqnr_db"] < intact.gap.set_index("module").loc[damaged_module, "sqnr_db"] - 15
    # only that layer is coarse: the layer before it is untouched
    assert gap.loc["blocks.1.0.0", "sqnr_db"] == intact.gap.set_index("module").loc["blocks.1.0.0", "sqnr_db"]


def test_truncated_trace_keeps_intact_rows_and_says_so(tmp_path):
    _model, _example, prog, trace = traced("ds_cnn", runs=2)
    intact = mcuforge.Inspector(prog, trace).to_dataframe()
    data = trace.to_bytes()
    for cut in (len(data) // 2, len(data) * 3 // 4 + 7, len(data) - 20):  # after the ALLOC records
        insp = mcuforge.Inspector(prog, Trace.from_bytes(data[:cut]))
        df = insp.to_dataframe()
        assert insp.truncated and df.attrs["truncated"] and df.attrs["truncation_reason"]
        assert 0 < len(df) < len(intact) or cut == len(data) - 20
        assert df.equals(intact.iloc[:len(df)])  # the very same rows, values and index
        assert insp.totals("kind").attrs["truncated"]
    report = insp.to_html(tmp_path / "cut.html").read_text()
    assert 'class="banner truncated"' in report and "TRACE TRUNCATED" in report
    chrome = json.loads(insp.to_chrome_trace(tmp_path / "cut.json").read_text())
    assert chrome["otherData"]["truncated"] is True


def test_damaged_trace_keeps_the_rest_and_marks_the_runs_with_gaps(tmp_path, capsys):
    """A byte flipped in run 0 costs that op only: every later row is there, and the run says so."""
    _model, _example, prog, trace = traced("ds_cnn", runs=3)
    intact = mcuforge.Inspector(prog, trace).to_dataframe()
    records = trace.records
    hit = next(r for r in records if r.type == 5 and int.from_bytes(r.payload[:4], "little") == 2)  # OP_END, op 2
    data = bytearray(trace.to_bytes())
    data[hit.offset + 10] ^= 0x01
    damaged = Trace.from_bytes(bytes(data))
    insp = mcuforge.Inspector(prog, damaged)
    df = insp.to_dataframe()
    assert len(df) == len(intact) - 1 and not insp.truncated and df.attrs["gaps"] == 1
    kept = intact[(intact["run"] != 0) | (intact["op_index"] != 2)].reset_index(drop=True)
    assert df.drop(columns="run_gaps").equals(kept.drop(columns="run_gaps"))
    assert list(df.groupby("run")["run_gaps"].first()) == [1, 0, 0] and (intact["run_gaps"] == 0).all()
    gaps = insp.gaps()
    assert list(gaps[["offset", "skipped", "records_lost", "run"]].iloc[0]) == [hit.offset, hit.size, 1, 0]
    runs = insp.runs()
    n = len(prog.graph.ops)
    assert list(runs["gaps"]) == [1, 0, 0] and list(runs["ops"]) == [n - 1, n, n]
    report = insp.to_html(tmp_path / "gap.html").read_text()
    assert 'class="banner truncated"' in report and 'id="gaps"' in report and "CRC mismatch" in report
    prog.save(tmp_path / "ds.mfp")
    (tmp_path / "gap.trace").write_bytes(bytes(data))
    assert main(["inspect", str(tmp_path / "ds.mfp"), str(tmp_path / "gap.trace")]) == 0
    out = capsys.readouterr().out
    assert "gaps in run" in out and f"run 0: byte {hit.offset}, {hit.size} bytes skipped, 1 records lost" in out


def test_a_trace_of_another_program_is_refused(tmp_path):
    _model, _example, prog, trace = traced("ds_cnn")
    _m, _e, other = compiled("mobilenet_v1_025")
    with pytest.raises(TraceMismatchError, match="recorded from program"):
        mcuforge.Inspector(other, trace)
    prog.save(tmp_path / "ds.mfp")
    other.save(tmp_path / "mb.mfp")
    trace.save(tmp_path / "ds.trace")
    loaded = mcuforge.Inspector.load(tmp_path / "ds.mfp", tmp_path / "ds.trace")
    assert len(loaded.to_dataframe()) == len(prog.graph.ops)
    with pytest.raises(TraceMismatchError):
        mcuforge.Inspector.load(tmp_path / "mb.mfp", tmp_path / "ds.trace")
    shutil.copy(tmp_path / "mb.mfp.dbg.json", tmp_path / "ds.mfp.dbg.json")  # a stale debug record
    with pytest.raises(TraceMismatchError, match="belongs to program"):
        mcuforge.Inspector.load(tmp_path / "ds.mfp", tmp_path / "ds.trace")


def test_chrome_trace_events_in_microseconds(tmp_path):
    _model, _example, prog, trace = traced("ds_cnn", runs=2)
    insp = mcuforge.Inspector(prog, trace)
    doc = json.loads(insp.to_chrome_trace(tmp_path / "t.json").read_text())
    ops = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] != "run"]
    runs = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "run"]
    assert len(ops) == 2 * len(prog.graph.ops) and len(runs) == 2
    df = insp.to_dataframe()
    for event, row in zip(ops, df.itertuples(), strict=True):
        assert event["dur"] == row.duration / 1000 and event["args"]["unit"] == "ns"
        assert event["name"] == f"{row.op_index} {row.kind}" and event["tid"] == row.run
        run = runs[row.run]
        assert run["ts"] <= event["ts"] and event["ts"] + event["dur"] <= run["ts"] + run["dur"] + 1e-6
    assert runs[0]["ts"] + runs[0]["dur"] <= runs[1]["ts"]


#: The plots of a report with a numeric gap, in page order.
PLOTS = ["time per op", "arena timeline", "SQNR per layer", "error per layer in isolation"]


class ReportParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.sections, self.banners, self.tables = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        elif tag == "section":
            self.sections.append(attrs["id"])
        elif tag == "div" and "banner" in attrs.get("class", ""):
            self.banners.append(attrs["class"])
        elif tag == "table":
            self.tables += 1
        elif tag in ("script", "link"):
            raise AssertionError(f"the report must be self-contained, found <{tag}>")


def test_html_report_is_self_contained_with_plots(tmp_path):
    model, example, prog, trace = traced("ds_cnn")
    insp = mcuforge.Inspector(prog, trace)
    insp.numeric_gap(model, example)
    path = insp.to_html(tmp_path / "report.html")
    text = path.read_text()
    parser = ReportParser()
    parser.feed(text)
    assert parser.sections == ["time-per-op", "arena-timeline", "numeric-gap", "totals-per-module",
                               "totals-per-kind", "ops"]
    assert parser.banners == ["banner intact"] and parser.tables == 4
    assert [img["alt"] for img in parser.images] == PLOTS
    for img in parser.images:
        assert img["src"].startswith("data:image/png;base64,")
        png = base64.b64decode(img["src"].split(",", 1)[1])
        assert png.startswith(PNG_MAGIC) and len(png) > 5000
    assert "http://" not in text and "https://" not in text
    assert "blocks.1.1.0" in text and "conv2d_s8" in text and "isolated_channel_median_sqnr_db" in text
    render_in_chromium(path, tmp_path)


#: The headless flags that work in a container as root, with nothing fetched from the network.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=1200,3000")
#: Run on load in a copy of the report: each image's decode state and page rectangle, into the title.
IMAGE_PROBE = ("<script>addEventListener('load', () => { document.title = 'PLOTS ' + JSON.stringify("
               "[...document.images].map(i => { const r = i.getBoundingClientRect(); return [i.alt, i.complete, "
               "i.naturalWidth, i.naturalHeight, r.left + scrollX, r.top + scrollY, r.width, r.height]; })); });"
               "</script>")


def chromium() -> str:
    """Debian's chromium (scripts/toolchain.sh installs it); missing, the test fails with the command."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.fail("chromium not found on PATH: install it with: apt-get install chromium "
                    "(scripts/toolchain.sh does)", pytrace=False)
    return browser


def render_in_chromium(report, tmp_path, plots=None):
    """Render the report in headless Chromium, take a screenshot and check it: the page is not blank, and
    every plot (``plots``: their alt texts, by default the Inspector's) is decoded and on screen -- the
    screenshot at the image's rectangle is the plot's own PNG. (The sweep report's test uses it too.)"""
    from PIL import Image

    html = report.read_text()
    page = tmp_path / "probe.html"
    page.write_text(html.replace("</body>", IMAGE_PROBE + "</body>"))
    flags = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    title = re.search(r"<title>PLOTS (.*?)</title>", dom.stdout)
    assert title, f"chromium did not run the page:\n{dom.stderr[-2000:]}"
    images = json.loads(html_lib.unescape(title.group(1)))
    shot_path = tmp_path / "report.png"
    done = subprocess.run([*flags, f"--screenshot={shot_path}", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert shot_path.is_file(), f"chromium wrote no screenshot:\n{done.stderr[-2000:]}"
    shot = np.asarray(Image.open(shot_path).convert("RGB")).astype(np.float64)
    assert shot.shape == (3000, 1200, 3) and shot.std() > 20, "blank page"  # text, tables, plots
    sources = [img["src"] for img in _images(html)]
    assert [img[0] for img in images] == (PLOTS if plots is None else plots)
    for (alt, complete, width, height, x, y, w, h), src in zip(images, sources, strict=True):
        assert complete and width > 300 and height > 200, f"{alt}: not decoded ({width}x{height})"
        x, y, w, h = (round(v) for v in (x, y, w, h))
        assert 0 <= x and x + w <= shot.shape[1] and 0 <= y and y + h <= shot.shape[0], f"{alt} off screen"
        region = shot[y:y + h, x:x + w]
        plot = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).convert("RGB").resize((w, h))
        assert region.std() > 10, f"{alt}: blank on screen"
        assert np.abs(region - np.asarray(plot, np.float64)).mean() < 4, f"{alt}: the screenshot does not show it"


def _images(html: str) -> list[dict]:
    parser = ReportParser()
    parser.feed(html)
    return parser.images


def test_cli_run_trace_and_inspect(tmp_path, capsys):
    _model, _example, prog = compiled("ds_cnn")
    program = prog.save(tmp_path / "ds.mfp")
    trace_path = tmp_path / "ds.trace"
    assert main(["run", str(program), "--trace", str(trace_path), "--full"]) == 0
    trace = Trace.load(trace_path)
    assert trace.full and not trace.truncated and len(trace.ops) == len(prog.graph.ops)
    capsys.readouterr()
    html, chrome, csv = tmp_path / "r.html", tmp_path / "t.json", tmp_path / "ops.csv"
    assert main(["inspect", str(program), str(trace_path), "--html", str(html), "--chrome", str(chrome),
                 "--csv", str(csv), "--depth", "2"]) == 0
    out = capsys.readouterr()
    assert "conv2d_s8" in out.out and "blocks.1.1.0" in out.out and "time (ns)" in out.out
    assert "totals per module" in out.out and "blocks.1 " in out.out and "totals per kind" in out.out
    assert "trace intact" in out.out and "warning" not in out.err
    assert html.stat().st_size > 10_000 and json.loads(chrome.read_text())["traceEvents"]
    assert len(csv.read_text().splitlines()) == len(prog.graph.ops) + 1
    cut = tmp_path / "cut.trace"
    cut.write_bytes(trace_path.read_bytes()[:len(trace_path.read_bytes()) // 2])
    assert main(["inspect", str(program), str(cut)]) == 0
    out = capsys.readouterr()
    assert out.err.startswith("warning: TRACE TRUNCATED at byte") and "TRACE TRUNCATED" in out.out
    cut.write_bytes(b"garbage" + trace_path.read_bytes())
    assert main(["inspect", str(program), str(cut)]) == 2
    assert "does not begin with a valid STREAM_START" in capsys.readouterr().err
