"""Real accuracy, as a sanity floor: the digits CNN's int8 and W4A8 programs classify the test images within 5
points of the fp32 model (a wrong kernel, scale or layout gives chance, 10 %). How close they really come
(int8 and W4A8 both +0.00 points here, 128 calibration images) is a method-quality figure of one trained
model, whose weights and hence figures move with the CPU's float arithmetic: benchmarks/precision.py
(docs/accuracy.md, "Figures that move between CPUs")."""

import warnings

import pytest

import mcuforge
from mcuforge.examples.digits import fp32_accuracy, load_digits_data, train_digits_cnn


@pytest.fixture(scope="module")
def trained():
    data = load_digits_data()
    model = train_digits_cnn(data, progress=False)
    fp32 = fp32_accuracy(model, data.x_test, data.y_test)
    assert fp32 > 0.95, f"training went wrong: fp32 accuracy {fp32:.3f}"
    calibration = [(data.x_train[i:i + 1],) for i in range(128)]
    batches = [(data.x_test[i:i + 60], data.y_test[i:i + 60]) for i in range(0, len(data.x_test), 60)]
    return data, model, fp32, calibration, batches


def test_digits_cnn_int8_accuracy_above_the_sanity_floor(trained):
    data, model, fp32, calibration, batches = trained
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # calibrated: no random-input warning
        prog = mcuforge.compile(model, (data.x_test[:1],), calibration=calibration, progress=False)
    assert all(op.backend == "int8" for op in prog.ops)
    int8 = mcuforge.evaluate(prog, batches, progress=False)
    assert int8 >= fp32 - 0.05, f"int8 accuracy {int8:.4f} vs fp32 {fp32:.4f}"


def test_digits_cnn_w4a8_accuracy_above_the_sanity_floor(trained):
    data, model, fp32, calibration, batches = trained
    prog = mcuforge.compile(model, (data.x_test[:1],), calibration=calibration, progress=False, quantization="w4a8")
    assert {op.precision for op in prog.ops if op.kind.endswith("_s4")} == {"a8w4"}
    assert sum(op.kind.endswith("_s4") for op in prog.ops) == 4  # every conv and the linear layer
    w4a8 = mcuforge.evaluate(prog, batches, progress=False)
    assert w4a8 >= fp32 - 0.05, f"w4a8 accuracy {w4a8:.4f} vs fp32 {fp32:.4f}"
