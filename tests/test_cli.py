"""The mcuforge command: compile a user's factory file, info, run; clear errors."""

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import mcuforge
from mcuforge.cli import main
from mcuforge.plan import arena_lower_bound

FACTORY = textwrap.dedent('''
    import torch
    from torch import nn

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.fc = nn.Linear(4 * 6 * 6, 3)

        def forward(self, x):
            x = torch.relu(self.conv(x))
            return self.fc(torch.erf(x).flatten(1))

    def make_tiny():
        torch.manual_seed(0)
        return Tiny(), (torch.randn(1, 1, 6, 6),)
''')


@pytest.fixture
def factory_file(tmp_path):
    path = tmp_path / "models.py"
    path.write_text(FACTORY)
    return path


def test_compile_info_run(tmp_path, factory_file, capsys):
    calib = tmp_path / "calib.npz"
    np.savez(calib, np.random.default_rng(0).standard_normal((20, 1, 6, 6)).astype(np.float32))
    out = tmp_path / "tiny.mfp"
    assert main(["compile", f"{factory_file}:make_tiny", "--target", "cortex-m4", "--calibration", str(calib),
                 "-o", str(out)]) == 0
    assert out.exists() and (tmp_path / "tiny.mfp.dbg.json").exists()
    capsys.readouterr()

    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "conv2d_s8" in text and "int8 kernel" in text
    assert "fp32 fallback" in text and "erf has no int8 kernel" in text
    assert "arena (RAM)" in text and "cortex-m4" in text
    g = mcuforge.load(out).graph
    bound = arena_lower_bound(g, scratch=False)
    assert re.search(rf"lower bound +{bound:,} bytes of tensors live at one op \(arena {g.arena_bytes / bound:.3f}x\); "
                     rf"{arena_lower_bound(g):,} with that op's scratch", text)

    inputs = tmp_path / "x.npy"
    np.save(inputs, np.ones((1, 1, 6, 6), np.float32))
    result = tmp_path / "y.npz"
    assert main(["run", str(out), "--inputs", str(inputs), "-o", str(result)]) == 0
    assert "output 0: shape [1, 3]" in capsys.readouterr().out
    got = np.load(result)["arr_0"]
    assert got.shape == (1, 3) and got.dtype == np.float32
    # The values: what the library's host runtime gives for the saved program, exactly ...
    prog = mcuforge.load(out)
    np.testing.assert_array_equal(got, prog.run(np.ones((1, 1, 6, 6), np.float32))[0])
    # ... dequantized int8 codes of the output tensor, within 1 output LSB of the float model (measured 0.35)
    t = prog.graph.tensors[prog.graph.outputs[0]]
    codes = got / t.qparams.scale + t.qparams.zero_point
    np.testing.assert_allclose(codes, np.round(codes), atol=1e-3)
    namespace = {}
    exec(FACTORY, namespace)  # the user's factory, run here: the float reference
    model, _example = namespace["make_tiny"]()
    with torch.no_grad():
        want = model.eval()(torch.ones(1, 1, 6, 6)).numpy()
    assert np.abs(got - want).max() <= t.qparams.scale, (got, want)


def test_compile_without_calibration_warns(tmp_path, factory_file, capsys):
    out = tmp_path / "tiny.mfp"
    assert main(["compile", f"{factory_file}:make_tiny", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: no calibration data given" in err and "--calibration" in err
    assert "api.compile(" not in err  # one plain line, not the library's source line


def test_errors_are_one_clear_line(tmp_path, factory_file, capsys):
    assert main(["compile", f"{factory_file}:nope"]) == 2
    assert "has no function 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.mfp"
    bad.write_bytes(b"MCUF" + bytes(100))
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcuforge info: error:") and "Traceback" not in err
    calib = tmp_path / "calib.npz"
    np.savez(calib, np.zeros((4, 3, 3), np.float32))
    assert main(["compile", f"{factory_file}:make_tiny", "--calibration", str(calib)]) == 2
    assert "array 0 has shape" in capsys.readouterr().err


def test_console_script_entry_point():
    result = subprocess.run([sys.executable, "-m", "mcuforge", "--help"], capture_output=True, text=True,
                            check=True)
    assert "compile" in result.stdout and "demo" in result.stdout
