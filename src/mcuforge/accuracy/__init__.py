"""Accuracy tools: how much each layer's quantization costs the model's output (sensitivity), and the
per-layer precision choice under flash and RAM budgets (``precision="auto"``)."""

from .sensitivity import Sensitivity, output_sqnr, sensitivity

__all__ = ["Sensitivity", "output_sqnr", "sensitivity"]
