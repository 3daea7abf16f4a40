"""Saving and loading programs: identical outputs after a reload; bad files are rejected clearly."""

import numpy as np
import pytest

import mcuforge

from conftest import calibration_set, compiled


def test_saved_program_reloads_to_identical_outputs(tmp_path):
    _model, example, prog = compiled("resnet8")
    path = prog.save(tmp_path / "resnet8.mfp")
    loaded = mcuforge.load(path)
    assert loaded.arena_bytes == prog.arena_bytes
    assert loaded.constant_bytes == prog.constant_bytes
    assert loaded.target == "cortex-m55"
    for inputs in calibration_set(example, 3, seed=3):
        for a, b in zip(prog.run(*inputs), loaded.run(*inputs), strict=True):
            np.testing.assert_array_equal(a, b)


def test_reload_keeps_op_table_with_reasons(tmp_path):
    _model, _example, prog = compiled("custom_fallback")
    loaded = mcuforge.load(prog.save(tmp_path / "custom.mfp"))
    assert [(o.kind, o.backend, o.reason, o.module) for o in loaded.ops] == \
        [(o.kind, o.backend, o.reason, o.module) for o in prog.ops]


def test_program_without_debug_record_still_runs(tmp_path):
    _model, example, prog = compiled("ds_cnn")
    path = tmp_path / "kws.mfp"
    path.write_bytes(prog.to_bytes())
    loaded = mcuforge.load(path)
    np.testing.assert_array_equal(loaded.run(*example)[0], prog.run(*example)[0])
    assert all(op.reason == "" for op in loaded.ops)


@pytest.mark.parametrize("cut", [0, 3, 16, 63, 200, -1])
def test_truncated_file_is_rejected(tmp_path, cut):
    _model, _example, prog = compiled("ds_cnn")
    data = prog.to_bytes()
    path = tmp_path / "cut.mfp"
    path.write_bytes(data[:cut] if cut >= 0 else data[:-1])
    with pytest.raises(mcuforge.ProgramFormatError):
        mcuforge.load(path)


def test_corrupted_byte_is_rejected(tmp_path):
    _model, _example, prog = compiled("ds_cnn")
    data = bytearray(prog.to_bytes())
    rng = np.random.default_rng(0)
    for pos in rng.integers(0, len(data), 20):
        bad = bytearray(data)
        bad[pos] ^= 0x5A
        path = tmp_path / "bad.mfp"
        path.write_bytes(bytes(bad))
        with pytest.raises(mcuforge.ProgramFormatError):
            mcuforge.load(path)


def test_wrong_input_shape_is_a_clear_error():
    _model, _example, prog = compiled("ds_cnn")
    with pytest.raises(ValueError, match=r"expected shape \[1, 1, 49, 10\]"):
        prog.run(np.zeros((1, 1, 10, 49), np.float32))
