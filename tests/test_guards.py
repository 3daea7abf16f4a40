"""Regression guards: figures a change may only move on purpose, kept in tests/guards/*.json.

- ``sqnr.json``: output SQNR (dB, against fp32) of the default int8, W4A8 and A16W8 programs of the four MLPerf
  Tiny models made input-dependent (tests/input_dependent.py) and two torchvision networks
  (tests/torchvision_zoo.py), each the mean over SQNR_SEEDS (weights, calibration and evaluation inputs drawn
  from the seed). A drop of more than SQNR_DROP_DB fails; a rise passes and says to update the file.
- ``instructions.json``: instructions per inference (QEMU ``-icount``, deterministic) of the four MLPerf Tiny
  zoo models' int8 programs on cortex-m4 and cortex-m55, compiled as benchmarks/firmware.py compiles them.
  A rise of more than INSTRUCTION_RISE fails; a drop passes and says to update the file.

Regenerate both after a change that moves them on purpose (a kernel, a quantization rule), and commit the
files with the change:

    python -m pytest tests/test_guards.py --update-guards

The figures are this machine's: the instruction counts hold on any host (QEMU counts the guest's
instructions), the SQNR figures move with the CPU's float arithmetic (docs/accuracy.md): by up to 0.25 dB
between the machine that wrote the file and an AMD EPYC (torchvision mobilenet_v2_035 W4A8), so the tolerance
is 0.6 dB, still well inside the 2.7 dB a coarsened first layer costs (the test below).
"""

from __future__ import annotations

import copy
import functools
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import mcuforge
from mcuforge import firmware
from mcuforge.accuracy.sensitivity import fp32_outputs, output_sqnr, stacked

import input_dependent

GUARDS = Path(__file__).resolve().parent / "guards"
SQNR_FILE, INSTRUCTIONS_FILE = GUARDS / "sqnr.json", GUARDS / "instructions.json"
REGENERATE = "python -m pytest tests/test_guards.py --update-guards"
SQNR_DROP_DB = 0.6  # cross-CPU spread seen: 0.25 dB; see the module docstring
INSTRUCTION_RISE = 0.01
SQNR_SEEDS = (0, 1)
CALIBRATION_ITEMS, EVALUATION_ITEMS = 8, 8
PUBLIC = ("mobilenet_v2_035", "squeezenet1_1")
SQNR_MODELS = (*input_dependent.NAMES, *(f"torchvision.{n}" for n in PUBLIC))
PRECISIONS = ("int8", "w4a8", "a16w8")
INSTRUCTION_MODELS = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder")
BOARDS = ("cortex-m4", "cortex-m55")


# -- the checks: plain functions over {key: figure}, so a doctored measurement can be fed to them ------------

def check_sqnr(model: str, stored: dict[str, float], measured: dict[str, float]) -> tuple[list[str], list[str]]:
    """(failures, notes) of ``measured`` SQNR per precision against ``stored``: a drop of more than
    SQNR_DROP_DB fails, a rise of more than that is a note asking to update."""
    failures, notes = [], []
    for precision, value in measured.items():
        if precision not in stored:
            failures.append(f"{model} {precision}: no guard figure in {SQNR_FILE.name}; run `{REGENERATE}`")
            continue
        delta = value - stored[precision]
        where = f"{model} {precision}: output SQNR {value:.2f} dB, guard {stored[precision]:.2f} dB ({delta:+.2f} dB)"
        if delta < -SQNR_DROP_DB:
            failures.append(f"{where}: dropped by more than {SQNR_DROP_DB} dB")
        elif delta > SQNR_DROP_DB:
            notes.append(f"{where}: risen; update the guard on purpose: `{REGENERATE}`")
    return failures, notes


def check_instructions(model: str, stored: dict[str, int], measured: dict[str, int]) -> tuple[list[str], list[str]]:
    """(failures, notes) of ``measured`` instructions per inference per board against ``stored``: a rise of more
    than INSTRUCTION_RISE fails, a drop of more than that is a note asking to update."""
    failures, notes = [], []
    for board, value in measured.items():
        if board not in stored:
            failures.append(f"{model} on {board}: no guard figure in {INSTRUCTIONS_FILE.name}; run `{REGENERATE}`")
            continue
        ratio = value / stored[board]
        where = (f"{model} on {board}: {value:,} instructions per inference, guard {stored[board]:,} "
                 f"({ratio - 1:+.2%})")
        if ratio > 1 + INSTRUCTION_RISE:
            failures.append(f"{where}: risen by more than {INSTRUCTION_RISE:.0%}")
        elif ratio < 1 - INSTRUCTION_RISE:
            notes.append(f"{where}: dropped; update the guard on purpose: `{REGENERATE}`")
    return failures, notes


# -- the guard files ----------------------------------------------------------------------------------------

def read_guard(path: Path) -> dict:
    return json.loads(path.read_text())["figures"] if path.exists() else {}


def write_guard(path: Path, about: str, model: str, figures: dict) -> None:
    """Set ``model``'s figures in the guard file (the others kept), with the header saying how to regenerate."""
    old = read_guard(path)
    old[model] = figures
    path.parent.mkdir(exist_ok=True)
    doc = {"about": about, "regenerate": REGENERATE,
           "measured_with": f"mcuforge {mcuforge.__version__}, torch {torch.__version__}",
           "figures": dict(sorted(old.items()))}
    path.write_text(json.dumps(doc, indent=1) + "\n")


def guard(request: pytest.FixtureRequest, path: Path, about: str, model: str, measured: dict,
          check) -> None:  # noqa: ANN001 - one of the check functions above
    if request.config.getoption("--update-guards"):
        write_guard(path, about, model, measured)
        return
    failures, notes = check(model, read_guard(path).get(model, {}), measured)
    for note in notes:
        warnings.warn(note, stacklevel=2)
    assert not failures, "\n".join(failures)


# -- SQNR ---------------------------------------------------------------------------------------------------

SQNR_ABOUT = (f"output SQNR (dB) against fp32, mean over seeds {list(SQNR_SEEDS)} of {CALIBRATION_ITEMS} "
              f"calibration and {EVALUATION_ITEMS} evaluation random normal inputs; the test fails on a drop of more "
              f"than {SQNR_DROP_DB} dB (tests/test_guards.py)")


def build(model: str, seed: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    if model.startswith("torchvision."):
        from torchvision_zoo import build as build_public

        return build_public(model.removeprefix("torchvision."), seed)
    return input_dependent.build(model, seed)


def program_sqnr(prog: mcuforge.Program, model: torch.nn.Module, example: tuple[torch.Tensor, ...], seed: int
                 ) -> float:
    """The program's output SQNR on the evaluation inputs of ``seed``."""
    batch = stacked(input_dependent.items(example, EVALUATION_ITEMS, 200 + seed))
    return output_sqnr(prog, fp32_outputs(model, batch), batch)


@functools.cache
def compiled(model: str, precision: str, seed: int) -> tuple[mcuforge.Program, torch.nn.Module, tuple]:
    net, example = build(model, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(net, example, calibration=input_dependent.items(example, CALIBRATION_ITEMS, 100 + seed),
                                progress=False, quantization=precision)
    return prog, net, example


def measure_sqnr(model: str) -> dict[str, float]:
    return {p: round(float(np.mean([program_sqnr(*compiled(model, p, s), s) for s in SQNR_SEEDS])), 3)
            for p in PRECISIONS}


@pytest.mark.parametrize("model", SQNR_MODELS)
def test_sqnr_guard(model, request):
    guard(request, SQNR_FILE, SQNR_ABOUT, model, measure_sqnr(model), check_sqnr)


# -- instructions -------------------------------------------------------------------------------------------

INSTRUCTIONS_ABOUT = (f"instructions per inference (QEMU -icount, whole mf_invoke) of the int8 program of each "
                      f"zoo model (16 random normal calibration inputs, as benchmarks/firmware.py), per board; the "
                      f"test fails on a rise of more than {INSTRUCTION_RISE:.0%} (tests/test_guards.py)")


def board_instructions(model: str, target: str) -> int:
    from mcuforge.zoo import MODELS

    from conftest import calibration_set, program_inputs

    net, example = MODELS[model]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(net, example, calibration=calibration_set(example, 16, seed=1), target=target,
                                progress=False)
    _outs, _trace, facts = firmware.run_on_qemu(prog.to_bytes(), program_inputs(prog.graph,
                                                                                np.random.default_rng(0)), target)
    return int(facts["instructions"])


@pytest.mark.parametrize("model", INSTRUCTION_MODELS)
def test_instruction_guard(model, request):
    measured = {board: board_instructions(model, board) for board in BOARDS}
    guard(request, INSTRUCTIONS_FILE, INSTRUCTIONS_ABOUT, model, measured, check_instructions)


# -- the guards themselves fail where they should -----------------------------------------------------------

def test_sqnr_guard_fails_on_a_drop_naming_model_precision_and_figure():
    stored = {"int8": 30.0, "w4a8": 25.0}
    failures, notes = check_sqnr("ds_cnn", stored, {"int8": 29.35, "w4a8": 25.2})
    assert failures == ["ds_cnn int8: output SQNR 29.35 dB, guard 30.00 dB (-0.65 dB): dropped by more than 0.6 dB"]
    assert not notes
    failures, notes = check_sqnr("ds_cnn", stored, {"int8": 29.45, "w4a8": 25.7})  # within; a rise
    assert not failures and len(notes) == 1 and "w4a8" in notes[0] and "--update-guards" in notes[0]
    assert "no guard figure" in check_sqnr("ds_cnn", stored, {"a16w8": 60.0})[0][0]


def test_sqnr_guard_fails_on_a_program_with_a_coarsened_layer():
    """A real program made worse: the int8 weights of DS-CNN's first convolution rounded to multiples of 16 (4
    bits of resolution lost), measured as the guard measures."""
    model = "ds_cnn"
    prog, net, example = compiled(model, "int8", 0)
    good = program_sqnr(prog, net, example, 0)
    worse = copy.deepcopy(prog)
    first = next(op for op in worse.graph.ops if op.kind == "conv2d_s8")
    weight = worse.graph.tensors[first.inputs[1]]
    weight.data = (np.round(weight.data.astype(np.int32) / 16) * 16).clip(-127, 127).astype(np.int8)
    bad = program_sqnr(worse, net, example, 0)
    failures, _ = check_sqnr(model, {"int8": round(good, 3)}, {"int8": bad})
    assert len(failures) == 1 and failures[0].startswith(f"ds_cnn int8: output SQNR {bad:.2f} dB"), failures


def test_instruction_guard_fails_on_a_rise_naming_model_board_and_figure():
    stored = {"cortex-m4": 1_000_000, "cortex-m55": 200_000}
    failures, notes = check_instructions("resnet8", stored, {"cortex-m4": 1_010_001, "cortex-m55": 200_000})
    assert failures == ["resnet8 on cortex-m4: 1,010,001 instructions per inference, guard 1,000,000 (+1.00%): "
                        "risen by more than 1%"]
    assert not notes
    failures, notes = check_instructions("resnet8", stored, {"cortex-m4": 1_010_000, "cortex-m55": 190_000})
    assert not failures and len(notes) == 1 and "cortex-m55" in notes[0] and "--update-guards" in notes[0]


def test_guard_files_say_how_to_regenerate():
    for path in (SQNR_FILE, INSTRUCTIONS_FILE):
        doc = json.loads(path.read_text())
        assert doc["regenerate"] == REGENERATE and doc["about"]
    assert set(read_guard(SQNR_FILE)) == set(SQNR_MODELS)
    assert all(set(v) == set(PRECISIONS) for v in read_guard(SQNR_FILE).values())
    assert set(read_guard(INSTRUCTIONS_FILE)) == set(INSTRUCTION_MODELS)
