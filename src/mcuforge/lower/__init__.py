"""Lowering: the quantized PT2E graph -> backend IR (the float passes before quantization are
mcuforge.float_passes)."""

from .builder import LoweringError
from .to_ir import lower_to_ir

__all__ = ["LoweringError", "lower_to_ir"]
