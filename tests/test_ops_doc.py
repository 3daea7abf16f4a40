"""docs/ops.md is generated from the lowering tables and must not drift from them."""

from pathlib import Path

from mcuforge.lower.int8 import INT8_LOWERINGS, OP_DOCS
from mcuforge.opdocs import aten_label, render

DOC = Path(__file__).resolve().parents[1] / "docs" / "ops.md"


def test_committed_ops_doc_equals_the_generated_table():
    assert DOC.read_text() == render(), "docs/ops.md is stale: run `python -m mcuforge.opdocs > docs/ops.md`"


def test_every_lowering_has_a_doc_row_and_every_op_appears():
    text = render()
    assert set(INT8_LOWERINGS.values()) <= set(OP_DOCS)
    for target in INT8_LOWERINGS:
        assert f"`{aten_label(target)}`" in text
    for needed in ("softmax_s8", "mul_s8", "lut_s8", "batch_matmul_s8", "transpose_conv2d_s8", "fp32 fallback"):
        assert needed in text
