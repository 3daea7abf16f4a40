"""Quantization-aware training through PT2E with mcuforge's quantizer (see docs/accuracy.md).

    qat = mcuforge.prepare_qat(model, example, calibration, quantization="w4a8")
    mcuforge.train_qat(qat, train_loader, loss_fn, epochs=3)      # or any training loop
    prog = mcuforge.compile(qat, example)                          # the frozen fake-quant forward, as a program
"""

from .batchnorm import track_batch_norm, update_batch_norm
from .convert import convert_qat, freeze
from .fake_quant import fake_quants, set_fake_quant, set_observers
from .prepare import QATQuantizer, is_qat_model, prepare_qat, scheme_of
from .recurrent import register as _register_recurrent_gradients
from .train import TrainLog, train_qat

_register_recurrent_gradients()

__all__ = ["QATQuantizer", "TrainLog", "convert_qat", "fake_quants", "freeze", "is_qat_model", "prepare_qat",
           "scheme_of", "set_fake_quant", "set_observers", "track_batch_norm", "train_qat", "update_batch_norm"]
