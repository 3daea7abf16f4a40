"""Every mistake a user can make at the command line is one line on stderr that names what and where
(the module path and the op or line of code for a model), and exit status 2; a bug in mcuforge is exit 1
with a line asking for a bug report and the files that reproduce it. Never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mcuforge import cli

MODELS = textwrap.dedent('''
    import torch
    from torch import nn


    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            if y.sum() > 0:
                return y * 2
            return y


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = Gate()

        def forward(self, x):
            return self.gate(x)


    class Picks(nn.Module):
        def forward(self, x):
            return x[x > 0].sum(0, keepdim=True)


    class Spectrum(nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x).abs()


    class Head(nn.Module):
        def __init__(self, n=8):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(n, 4), nn.ReLU())

        def forward(self, x):
            return self.body(x)


    class Cumulative(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 1)


    def data_dependent():
        return Net(), (torch.randn(1, 4),)

    def dynamic_shape():
        return Picks(), (torch.randn(1, 4),)

    def complex_op():
        return Spectrum(), (torch.randn(1, 8),)

    def complex_input():
        return Head(), (torch.randn(1, 8, dtype=torch.complex64),)

    def float64_input():
        return Head(), (torch.randn(1, 8, dtype=torch.float64),)

    def float64_model():
        return Head().double(), (torch.randn(1, 8),)

    def wrong_shape():
        return Head(), (torch.randn(1, 5),)

    def two_inputs():
        return Head(), (torch.randn(1, 8), torch.randn(1, 8))

    def no_c_kernel():
        return Cumulative(), (torch.randn(1, 4),)

    def model_only():
        return Head()

    def a_string_as_input():
        return Head(), "x"

    def not_a_module():
        return (lambda x: x), (torch.randn(1, 8),)

    def raises():
        return Head(n=undefined_name), (torch.randn(1, 8),)

    def big():
        return nn.Sequential(nn.Linear(2048, 2048)), (torch.randn(1, 2048),)

    def fine():
        torch.manual_seed(0)
        return Head(), (torch.randn(1, 8),)
''')


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "models.py"
    path.write_text(MODELS)
    return path


def line_of(code: str) -> int:
    return next(i for i, line in enumerate(MODELS.splitlines(), 1) if code in line)


def run(argv: list[str], capsys) -> tuple[int, str]:
    """(exit status, the error line): stderr must hold exactly one line that is not a warning."""
    status = cli.main(argv)
    err = [line for line in capsys.readouterr().err.splitlines()
           if line.strip() and not line.startswith(("warning:", "calibrating:"))]  # warnings, the progress bar
    assert "Traceback" not in "\n".join(err)
    assert len(err) == (2 if status == 1 else 1), err
    return status, err[0]


MODEL_MISTAKES = [
    ("data_dependent", r"mcuforge compile: error: data-dependent control flow in module 'gate' \(Gate\) at "
                       rf"models\.py:{line_of('if y.sum() > 0:')} `if y\.sum\(\) > 0:`: .*torch\.cond\(pred, true_fn, "
                       r"false_fn, operands\) or make the condition static"),
    ("dynamic_shape", r"error: dynamic shape: module '<top>' \(Picks\) op aten\.\w+\.\w+ gives a tensor of shape "
                      r"\[u\d+\], whose size depends on the input's values"),
    ("complex_op", r"error: unsupported dtype: module '<top>' \(Spectrum\) op aten\.fft_rfft\.default gives "
                   r"complex64\[1, 5\]: mcuforge has no complex kernels"),
    ("complex_input", r"error: example input 0 is complex64\[1, 8\]: mcuforge has no complex kernels"),
    ("float64_input", r"error: example input 0 is float64\[1, 8\]: mcuforge computes in float32 and int8: call "
                      r"model\.float\(\) and pass float32 inputs"),
    ("float64_model", r"error: module 'body\.0' has float64 parameter 'weight': .* call model\.float\(\)"),
    ("wrong_shape", r"error: the example inputs do not fit Head in module 'body\.0' \(Linear\) at linear\.py:\d+ "
                    r"`return F\.linear\(input, self\.weight, self\.bias\)`: .*\[1, 5\].* \(example inputs: "
                    r"float32\[1, 5\]\)"),
    ("two_inputs", r"error: the example inputs do not match Head\.forward\(x\): 2 given \(float32\[1, 8\], "
                   r"float32\[1, 8\]\)"),
    ("no_c_kernel", r"error: cumsum\.default in module '<top>' .*has no int8 kernel\) and the C runtime has no fp32 "
                    r"kernel for it"),
    ("model_only", r"error: .*models\.py:model_only must return \(model, example_inputs\), it returned a Head"),
    ("a_string_as_input", r"error: .*:a_string_as_input must return \(model, example_inputs\): example_inputs must "
                          r"be a tensor or a tuple of tensors, got str"),
    ("not_a_module", r"error: .*:not_a_module must return \(model, example_inputs\): the model is a function, not a "
                     r"torch\.nn\.Module"),
    ("raises", rf"error: .*:raises\(\) raised NameError: name 'undefined_name' is not defined \(models\.py:"
               rf"{line_of('undefined_name')}\)"),
]


@pytest.mark.parametrize("factory,message", MODEL_MISTAKES, ids=[m[0] for m in MODEL_MISTAKES])
def test_model_mistakes_are_one_line_exit_2(models, tmp_path, capsys, factory, message):
    status, line = run(["compile", f"{models}:{factory}", "-o", str(tmp_path / "out.mfp")], capsys)
    assert status == 2
    assert line.startswith("mcuforge compile: error: ")
    assert re.search(message, line), line
    assert not (tmp_path / "out.mfp").exists()


def test_a_broken_factory_file(tmp_path, capsys):
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def make(:\n    pass\n")
    status, line = run(["compile", f"{syntax}:make"], capsys)
    assert status == 2 and re.search(r"cannot load .*syntax\.py: SyntaxError: .* \(syntax\.py:1\)", line), line
    imports = tmp_path / "imports.py"
    imports.write_text("import torch\nimport no_such_package_here\n")
    status, line = run(["compile", f"{imports}:make"], capsys)
    assert status == 2 and re.search(r"ModuleNotFoundError: No module named 'no_such_package_here' "
                                     r"\(imports\.py:2\)", line), line
    status, line = run(["compile", f"{tmp_path / 'missing.py'}:make"], capsys)
    assert status == 2 and "no such file" in line


def test_a_program_that_does_not_fit(models, tmp_path, capsys):
    """4 MB of weights for a cortex-m7: its reference board (QEMU mps2-an500) has 3 MB for program and arena."""
    out = tmp_path / "big.mfp"
    status, line = run(["compile", f"{models}:big", "--target", "cortex-m7", "-o", str(out)], capsys)
    assert status == 2 and not out.exists()
    assert re.search(r"error: the program does not fit QEMU mps2-an500, the cortex-m7 reference board: RAM "
                     r"\(program \+ arena\) needs 4,2\d\d,\d\d\d bytes, it has 3,145,728 \([\d,]+ bytes too many\); "
                     r"largest constants: 4,194,304 B \w+ \(module '0', fully_connected_s8\)", line), line
    assert cli.main(["compile", f"{models}:big", "--target", "cortex-m7", "--flash-bytes", "8M", "--ram-bytes",
                     "64K", "-o", str(out)]) == 0
    assert out.exists()
    out.unlink()
    assert cli.main(["compile", f"{models}:big", "--target", "cortex-m7", "--no-fit-check", "-o", str(out)]) == 0
    assert out.exists()
    capsys.readouterr()
    status, line = run(["compile", f"{models}:fine", "--ram-bytes", "16", "-o", str(out)], capsys)
    assert status == 2 and re.search(r"does not fit the given part: RAM needs \d+ bytes, it has 16 .*largest "
                                     r"activations: \d+ B", line), line
    status, line = run(["compile", f"{models}:fine", "--flash-bytes", "256", "-o", str(out)], capsys)
    assert status == 2 and re.search(r"does not fit the given part: flash needs \d+ bytes, it has 256 .*largest "
                                     r"constants: \d+ B \w+ \(module 'body\.0', fully_connected_\w*s8\)", line), line
    status, line = run(["compile", f"{models}:fine", "--flash-bytes", "lots"], capsys)
    assert status == 2 and re.search(r"argument --flash-bytes: 'lots' is not a byte count", line), line


@pytest.fixture(scope="module")
def program(models, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("prog") / "fine.mfp"
    assert cli.main(["compile", f"{models}:fine", "-o", str(out)]) == 0
    return out


def test_mistakes_with_programs_and_data(program, tmp_path, capsys):
    capsys.readouterr()
    damaged = tmp_path / "damaged.mfp"
    data = bytearray(program.read_bytes())
    data[-1] ^= 1
    damaged.write_bytes(bytes(data))
    status, line = run(["info", str(damaged)], capsys)
    assert status == 2 and re.search(r"mcuforge info: error: payload CRC mismatch", line), line
    wrong = tmp_path / "x.npy"
    np.save(wrong, np.zeros((1, 5), np.float32))
    status, line = run(["run", str(program), "--inputs", str(wrong)], capsys)
    assert status == 2 and re.search(r"error: input 0 \(\w+\): expected shape \[1, 8\]", line), line
    status, line = run(["run", str(program), "--full"], capsys)
    assert status == 2 and "--full needs --trace FILE" in line
    not_a_trace = tmp_path / "t.trace"
    not_a_trace.write_bytes(b"\x00" * 40)
    status, line = run(["inspect", str(program), str(not_a_trace)], capsys)
    assert status == 2 and re.search(r"error: not a trace stream", line), line
    status, line = run(["run", str(program), "--inputs", str(tmp_path / "none.npy")], capsys)
    assert status == 2 and "no such file" in line
    status, line = run(["compile", "x.py:f", "--target", "cortex-m99"], capsys)
    assert status == 2 and re.search(r"mcuforge compile: error: argument --target: unknown target 'cortex-m99'", line)


def test_an_internal_error_asks_for_a_bug_report(models, tmp_path, capsys, monkeypatch):
    from mcuforge import compiler

    def broken(*_args, **_kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(compiler, "trim_optional_scratch", broken)
    status, line = run(["compile", f"{models}:fine", "-o", str(tmp_path / "f.mfp")], capsys)
    assert status == 1
    assert re.match(r"mcuforge compile: internal error: KeyError: 'a bug' \(at mcuforge/compiler\.py:\d+\)", line), line


def test_the_bug_report_line_names_the_files_and_the_traceback(models, tmp_path, capsys, monkeypatch):
    from mcuforge import compiler

    monkeypatch.setattr(compiler, "trim_optional_scratch", lambda *_a, **_k: 1 / 0)
    assert cli.main(["compile", f"{models}:fine", "-o", str(tmp_path / "f.mfp")]) == 1
    report = capsys.readouterr().err.splitlines()[-1]
    found = re.search(r"this is a bug in mcuforge, not in your input: please report it with the command line, the "
                      r"file\(s\) that reproduce it \((.*models\.py:fine)\) and the traceback in (\S+\.txt)", report)
    assert found, report
    text = Path(found.group(2)).read_text()
    assert "ZeroDivisionError" in text and "command: mcuforge compile" in text
    Path(found.group(2)).unlink()


def test_the_installed_command_prints_no_traceback(models, tmp_path):
    """The same through the real entry point, in its own process: one line, exit 2."""
    done = subprocess.run([sys.executable, "-m", "mcuforge", "compile", f"{models}:data_dependent", "-o",
                           str(tmp_path / "o.mfp")], capture_output=True, text=True, check=False)
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith(("warning:", "calibrating:"))]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("mcuforge compile: error: data-dependent control flow"), lines
    assert done.stdout == ""
