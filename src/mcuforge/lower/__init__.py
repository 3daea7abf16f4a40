"""Lowering passes: fold BatchNorm (before quantization), then PT2E graph -> backend IR."""

from .builder import LoweringError
from .fold_bn import fold_batch_norm
from .to_ir import lower_to_ir

__all__ = ["LoweringError", "fold_batch_norm", "lower_to_ir"]
