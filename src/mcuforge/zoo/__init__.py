"""Reference models for tests, benchmarks and examples (random weights unless trained).

Each ``make_*`` factory returns ``(model, example_inputs)`` as ``mcuforge compile`` expects.
"""

from .custom import make_custom_fallback
from .kws import make_kws_conv1d, make_kws_gru, make_kws_lstm
from .mlperf_tiny import make_ds_cnn, make_fc_autoencoder, make_mobilenet_v1_025, make_resnet8
from .mobilenet import make_mobilenet_v2, make_mobilenet_v3_small
from .transformer import make_transformer_block
from .unet import make_unet

MODELS = {
    "ds_cnn": make_ds_cnn,
    "mobilenet_v1_025": make_mobilenet_v1_025,
    "resnet8": make_resnet8,
    "fc_autoencoder": make_fc_autoencoder,
    "custom_fallback": make_custom_fallback,
    "mobilenet_v2": make_mobilenet_v2,
    "mobilenet_v3_small": make_mobilenet_v3_small,
    "kws_conv1d": make_kws_conv1d,
    "kws_lstm": make_kws_lstm,
    "kws_gru": make_kws_gru,
    "transformer_block": make_transformer_block,
    "unet": make_unet,
}

__all__ = ["MODELS", "make_custom_fallback", "make_ds_cnn", "make_fc_autoencoder", "make_kws_conv1d", "make_kws_gru",
           "make_kws_lstm", "make_mobilenet_v1_025", "make_mobilenet_v2", "make_mobilenet_v3_small", "make_resnet8",
           "make_transformer_block", "make_unet"]
