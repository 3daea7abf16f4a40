"""4-bit layers: weight scales snapped so that the program's 16-bit requantization multipliers are exact.

The s4 kernels' compact parameters (``kernels/int4.py``) keep the 16 high bits of each Q31 multiplier
input_scale x weight_scale[c] / output_scale: a relative error up to 2^-16 that the fake-quant forward,
computing in float, does not make; on one conv layer it moves ~6% of the output codes by one. Here each
4-bit weight scale is moved (by at most that 2^-16, relative) to the value whose multiplier has exactly 16
significant bits: the forward then computes with the multiplier the board uses. Applied whenever a weight's
fake quant sets its scale, against the current input and output scales, and once more when freezing.
"""

from __future__ import annotations

import math

import torch
from torch import fx

from ..kernels.int4 import MULTIPLIER16_SHIFT
from ..quantize.patterns import WEIGHTED_OPS
from .fake_quant import ObserverFakeQuantize

_MANTISSA_BITS = 31 - MULTIPLIER16_SHIFT  # a Q31 multiplier's 16 high bits: 15 bits below its leading one


def snapped_weight_scales(weight_scale: torch.Tensor, input_scale: float, output_scale: float) -> torch.Tensor:
    """``weight_scale`` (float32) moved so that input_scale x w / output_scale = m16 x 2^e with m16 < 2^16."""
    out = []
    for w in weight_scale.double().reshape(-1).tolist():
        effective = input_scale * w / output_scale
        if effective <= 0 or not math.isfinite(effective):
            out.append(w)
            continue
        mantissa, exponent = math.frexp(effective)  # [0.5, 1) x 2^e
        m16 = math.floor(mantissa * (1 << _MANTISSA_BITS) + 0.5)  # rounding half up, as multipliers16
        out.append(math.ldexp(m16, exponent - _MANTISSA_BITS) * output_scale / input_scale)
    return torch.tensor(out, dtype=torch.float32).reshape(weight_scale.shape)


def _module_of(gm: fx.GraphModule, node: object) -> ObserverFakeQuantize | None:
    if isinstance(node, fx.Node) and node.op == "call_module":
        module = gm.get_submodule(str(node.target))
        if isinstance(module, torch.nn.Module) and hasattr(module, "scale"):
            return module  # type: ignore[return-value]
    return None


def link_four_bit_layers(gm: fx.GraphModule) -> int:
    """Give each 4-bit weight fake quant of ``gm`` its layer's input and output fake quants (how many linked)."""
    from ..quantize.quantizer import fused_activation

    linked = 0
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in WEIGHTED_OPS or len(node.args) < 2:
            continue
        weight_fq = _module_of(gm, node.args[1])
        if not isinstance(weight_fq, ObserverFakeQuantize) or not weight_fq.weight or weight_fq.quant_max != 7:
            continue
        out = fused_activation(node) or node
        users = list(out.users)
        in_fq, out_fq = _module_of(gm, node.args[0]), _module_of(gm, users[0]) if len(users) == 1 else None
        if in_fq is None or out_fq is None:
            continue
        object.__setattr__(weight_fq, "snap_to", (in_fq, out_fq))  # not submodules: no second registration
        linked += 1
    return linked


def snap(weight_fq: ObserverFakeQuantize) -> None:
    """Snap ``weight_fq``'s scale buffer against its layer's current input and output scales (in place)."""
    pair = getattr(weight_fq, "snap_to", None)
    if pair is None:
        return
    in_fq, out_fq = pair
    in_scale, out_scale = float(in_fq.scale.reshape(-1)[0]), float(out_fq.scale.reshape(-1)[0])
    snapped = snapped_weight_scales(weight_fq.scale, in_scale, out_scale)
    weight_fq.scale.copy_(snapped)
