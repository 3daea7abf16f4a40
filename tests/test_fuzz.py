"""A short fuzz run in CI: the libFuzzer harness of the C runtime (ASan + UBSan) for 20 seconds on the seed
corpus, the Python readers' harnesses under atheris for a few thousand executions, and the seeds
themselves (every op kind, valid for both readers). The long campaigns: docs/fuzzing.md."""

from __future__ import annotations

import random

import pytest

from mcuforge import fuzz
from mcuforge.ir import OP_KINDS
from mcuforge.program import deserialize

C_SECONDS = 20


def test_seed_programs_cover_every_op_kind_and_load_everywhere():
    programs = fuzz.seed_programs()
    assert fuzz.seed_kinds(programs) == set(OP_KINDS), set(OP_KINDS) - fuzz.seed_kinds(programs)
    from mcuforge import cruntime

    for name, data in programs.items():
        deserialize(data)
        if "ethos" not in name:  # delegate ops need an NPU driver at mf_init (the harness brings a stand-in)
            cruntime.LoadedProgram(data)


def test_seed_traces_are_intact():
    from mcuforge.trace import Trace

    traces = fuzz.seed_traces()
    assert any("-c-" in n for n in traces) and any("-python-" in n for n in traces)
    for name, data in traces.items():
        assert not Trace.from_bytes(data).truncated, name


def test_c_harness_short_run(tmp_path):
    result = fuzz.campaign("c", seconds=C_SECONDS, corpus=tmp_path / "corpus", artifacts=tmp_path / "crashes")
    assert result["exit_code"] == 0 and not result["crashes"], result["output"][-4000:]
    assert result["executions"] > 1000, result["output"][-2000:]  # it ran, on the whole path


@pytest.mark.parametrize("harness", ["program", "trace"])
def test_python_harness_short_run_under_atheris(tmp_path, harness):
    result = fuzz.campaign(harness, runs=3000, corpus=tmp_path / "corpus", artifacts=tmp_path / "crashes")
    assert result["exit_code"] == 0 and not result["crashes"], result["output"][-4000:]
    assert result["executions"] == 3000


def mutate(rng: random.Random, data: bytes) -> bytes:
    """A few random byte edits, cuts or splices: what a damaged file looks like."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.5 and buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif op < 0.7 and buf:
            pos = rng.randrange(len(buf))
            buf[pos:pos + 4] = rng.randbytes(4)
        elif op < 0.85:
            buf = buf[:rng.randrange(len(buf) + 1)]
        else:
            pos = rng.randrange(len(buf) + 1)
            buf[pos:pos] = buf[rng.randrange(len(buf) + 1):][:rng.randint(1, 64)]
    return bytes(buf)


def test_python_harness_checks_on_random_damage():
    """The harnesses' own checks (readers raise only their format errors, accepted programs re-serialize,
    trace flags tell the truth) on 3,000 randomly damaged seeds each, in this process."""
    rng = random.Random(14)
    programs, traces = list(fuzz.seed_programs().values()), list(fuzz.seed_traces().values())
    for _ in range(3000):
        fuzz.program_one_input(mutate(rng, rng.choice(programs)))
        fuzz.trace_one_input(mutate(rng, rng.choice(traces)))


def test_c_harness_replays_the_regression_inputs():
    """Each input the fuzzer found (tests/fuzz_regressions/c-*) through the sanitized harness once: no report,
    and the C loader still refuses it with the status it was saved for."""
    import subprocess
    from pathlib import Path

    from test_hostile_programs import REJECTIONS, c_rejection

    files = sorted((Path(__file__).parent / "fuzz_regressions").glob("c-*"))
    assert files
    for f in files:  # each still reaches the check it was saved for (the C loader's status and op)
        assert c_rejection(f.read_bytes()) == REJECTIONS[f.name][1:], f.name
    done = subprocess.run([str(fuzz.build_fuzzer()), *map(str, files)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "ERROR" not in done.stderr, done.stderr[-3000:]
    assert f"Executed {files[0]}" in done.stderr
