"""Real accuracy: the digits CNN keeps its test accuracy after int8 within 1 point."""

import warnings

import mcuforge
from mcuforge.examples.digits import fp32_accuracy, load_digits_data, train_digits_cnn


def test_digits_cnn_int8_accuracy_within_one_point():
    data = load_digits_data()
    model = train_digits_cnn(data, progress=False)
    fp32 = fp32_accuracy(model, data.x_test, data.y_test)
    assert fp32 > 0.95, f"training went wrong: fp32 accuracy {fp32:.3f}"
    calibration = [(data.x_train[i:i + 1],) for i in range(128)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # calibrated: no random-input warning
        prog = mcuforge.compile(model, (data.x_test[:1],), calibration=calibration, progress=False)
    assert all(op.backend == "int8" for op in prog.ops)
    batches = [(data.x_test[i:i + 60], data.y_test[i:i + 60]) for i in range(0, len(data.x_test), 60)]
    int8 = mcuforge.evaluate(prog, batches, progress=False)
    assert int8 >= fp32 - 0.01, f"int8 accuracy {int8:.4f} vs fp32 {fp32:.4f}"
