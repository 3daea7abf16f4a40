"""Conv variants users write: string padding, dilation, stride, depth multipliers, groups."""

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge.lower import LoweringError


def compile_and_compare(model, shape):
    gen = torch.Generator().manual_seed(0)
    calib = [(torch.randn(shape, generator=gen),) for _ in range(8)]
    prog = mcuforge.compile(model.eval(), calib[0], calibration=calib, progress=False)
    for (x,) in calib[:3]:
        raw = prog.run_raw(x)[0]
        ref = prog.reference(x)
        t = prog.graph.tensors[prog.graph.outputs[0]]
        ref = ref.detach().numpy()
        if t.layout == "nhwc":
            ref = np.transpose(ref, (0, 2, 3, 1))
        codes = np.round(ref / t.qparams.scale) + t.qparams.zero_point
        gap = np.abs(raw - codes)
        # Every element within 1 LSB (CMSIS double rounding vs the fp32 simulation near a midpoint), and
        # >= 98% exact (measured: at most 1.1% off, 4 of 360 on the strided depthwise conv; at least one
        # element may differ on any output).
        assert gap.max() <= 1, f"output off by {gap.max()} LSB"
        differ = int(np.count_nonzero(gap))
        assert differ <= max(1, 0.02 * gap.size), f"{differ} of {gap.size} outputs not exact"
    return prog


#: Built inside the test after torch.manual_seed(0): the weights do not depend on what was imported first.
@pytest.mark.parametrize("make_conv, kind", [
    (lambda: nn.Conv2d(4, 8, 3, padding="same"), "conv2d_s8"),
    (lambda: nn.Conv2d(4, 8, 5, padding="valid", stride=2), "conv2d_s8"),
    (lambda: nn.Conv2d(4, 8, 3, padding=2, dilation=2), "conv2d_s8"),
    (lambda: nn.Conv2d(4, 8, (3, 1), padding=(1, 0), stride=(2, 1)), "conv2d_s8"),
    (lambda: nn.Conv2d(4, 4, 3, padding=1, groups=4), "depthwise_conv2d_s8"),
    (lambda: nn.Conv2d(4, 12, 3, padding=1, groups=4, stride=2), "depthwise_conv2d_s8"),
    (lambda: nn.Conv2d(4, 8, 3, padding=1, groups=2), "conv2d_s8"),  # grouped: arm_convolve_s8 with groups
    (lambda: nn.Conv2d(4, 6, 3, groups=2, dilation=2), "conv2d_s8"),
])
def test_conv_variant_is_int8(make_conv, kind):
    torch.manual_seed(0)
    prog = compile_and_compare(nn.Sequential(make_conv(), nn.ReLU()), (1, 4, 9, 11))
    assert [op.kind for op in prog.ops] == [kind]


def test_conv_without_int8_or_c_kernel_is_a_compile_error():
    torch.manual_seed(0)
    # No int8 kernel (dilated transposed conv) and no fp32 C kernel: compile says so, naming the module
    # and the op, before anything is flashed.
    with pytest.raises(LoweringError, match=r"conv_transpose2d\.input in module '0'.*dilated transposed conv"):
        compile_and_compare(nn.Sequential(nn.ConvTranspose2d(4, 8, 3, dilation=2), nn.Conv2d(8, 8, 1)), (1, 4, 7, 7))
