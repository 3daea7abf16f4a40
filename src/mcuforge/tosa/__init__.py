"""TOSA 1.0 (INT profile) lowering of the int8 backend IR and runs on tosa-tools' reference model.

Needs the ``ethos-u`` extra (``pip install mcuforge[ethos-u]``: tosa-tools, ethos-u-vela).
"""

from .lower import LOWERED_KINDS, TosaGraph, boundary, lower_ops, unsupported_reason
from .reference import TosaReferenceError, run_reference

__all__ = ["LOWERED_KINDS", "TosaGraph", "TosaReferenceError", "boundary", "lower_ops", "run_reference",
           "unsupported_reason"]
