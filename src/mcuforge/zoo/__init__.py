"""Reference models for tests, benchmarks and examples (random weights unless trained).

Each ``make_*`` factory returns ``(model, example_inputs)`` as ``mcuforge compile`` expects.
"""

from .custom import make_custom_fallback
from .mlperf_tiny import make_ds_cnn, make_fc_autoencoder, make_mobilenet_v1_025, make_resnet8

MODELS = {
    "ds_cnn": make_ds_cnn,
    "mobilenet_v1_025": make_mobilenet_v1_025,
    "resnet8": make_resnet8,
    "fc_autoencoder": make_fc_autoencoder,
    "custom_fallback": make_custom_fallback,
}

__all__ = ["MODELS", "make_custom_fallback", "make_ds_cnn", "make_fc_autoencoder", "make_mobilenet_v1_025",
           "make_resnet8"]
