"""A program compiled twice from the same model and data is byte-identical -- in one process, and with torch's
intra-op thread count changed between the two compiles (the calibration, GPTQ's and the linear choice's input
moments, the bias correction and the sensitivity analysis run their float sums in an order that does not depend
on it). Across CPUs the float arithmetic itself differs (docs/accuracy.md, "Figures that move between CPUs")."""

from __future__ import annotations

import functools
import importlib
import warnings

import pytest
import torch

import mcuforge

import input_dependent


@functools.cache
def digits():
    from mcuforge.examples.digits import load_digits_data, train_digits_cnn

    data = load_digits_data()
    model = train_digits_cnn(data, progress=False)
    return model, (data.x_test[:1],), [(data.x_train[i:i + 1],) for i in range(0, 160, 10)]


@functools.cache
def ds_cnn():
    model, example = input_dependent.build("ds_cnn", 0)
    return model, example, input_dependent.items(example, 8, 1)


def compile_bytes(make, threads: int, tmp_path, **options) -> bytes:
    """The program's bytes, compiled with ``threads`` intra-op threads and an empty sensitivity cache."""
    model, example, calibration = make()
    # (by name: the package exports a function called sensitivity too)
    sensitivity_module = importlib.import_module("mcuforge.accuracy.sensitivity")
    sensitivity_module._MEMORY.clear()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return mcuforge.compile(model, example, calibration=calibration, progress=False, **options).to_bytes()
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("make", [ds_cnn, digits], ids=["ds_cnn", "digits_cnn"])
@pytest.mark.parametrize("precision", ["int8", "w4a8", "a16w8", "auto"])
def test_compiling_twice_gives_the_same_bytes(make, precision, tmp_path, monkeypatch):
    if precision == "auto":  # a flash budget halfway between all-W4A8 and all-int8: a per-layer mix
        monkeypatch.setenv("MCUFORGE_CACHE", str(tmp_path / "first"))
        sizes = [len(compile_bytes(make, 1, tmp_path, quantization=q)) for q in ("int8", "w4a8")]
        options = {"precision": "auto", "flash_budget": sum(sizes) // 2}
    else:
        options = {"quantization": precision}
    first = compile_bytes(make, 1, tmp_path, **options)
    monkeypatch.setenv("MCUFORGE_CACHE", str(tmp_path / "second"))  # the analysis measured again, not read back
    assert compile_bytes(make, 2, tmp_path, **options) == first


def test_digits_training_does_not_depend_on_the_thread_count():
    from mcuforge.examples.digits import load_digits_data, train_digits_cnn

    model = digits()[0]
    before = torch.get_num_threads()
    torch.set_num_threads(1 if before > 1 else 2)
    try:
        again = train_digits_cnn(load_digits_data(), progress=False)
    finally:
        torch.set_num_threads(before)
    for (name, a), b in zip(model.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
