"""Quantization schemes: how wide activations and weights are, as ``mcuforge.compile(quantization=...)`` names them.

A scheme is plain data read by the quantizer (``CortexMQuantizer``): the lowering then picks each op's
kernel from what PT2E's converted graph holds (a weight quantized to [-7, 7] becomes an int4 kernel), so
a new scheme is a new entry here plus the kernels for what it asks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    """One uniform quantization scheme.

    ``activation_bits``: int8 activations everywhere (8), or int16 (16: symmetric, for every op with a CMSIS-NN
    s16 kernel, ``int16.S16_OPS``; the others keep int8 between conversions). ``weight_bits``: the weights of
    convolutions (depthwise and grouped included) and linear layers, symmetric per output channel -- 8 ([-127,
    127]) or 4 ([-7, 7], packed two per byte in CMSIS-NN's s4 layout). Transposed convolutions keep int8 weights
    (CMSIS-NN has no s4 transposed convolution). ``linear_per_channel``: linear weights per output channel
    (True, run by ``fully_connected_per_channel_s8``), one scale per tensor (False: ``fully_connected_s8``), or
    by default (None) per layer: per channel where that lowers the error on the layer's output over its
    calibration inputs by at least 0.1 dB (``linear_choice``, ``weight_observers.PER_CHANNEL_MIN_GAIN_DB``), else
    one scale (8 bytes of flash less per output).
    ``gptq``: round the int8 weights of linear and ungrouped conv layers by GPTQ on the calibration data
    (``gptq.py``) instead of to nearest; with int16 activations the weights' rounding is most of what is
    left of the error. It needs per-channel weights (GPTQ rounds on the per-channel grid).
    ``layers``: per-layer exceptions, (module path, scheme name) pairs -- a layer listed is quantized as the
    named scheme says: its weight width, its activation width (under "a16w8" the layer's op and its fused
    activation run in int16, int16 in and out, with convert ops where it meets int8 neighbours), its linear
    weights' granularity and GPTQ rounding. How ``precision="auto"`` mixes int8, W4A8 and A16W8 layers in one
    program. Ops outside the listed modules keep the scheme's own widths (data movement: its input's width).
    """

    name: str
    activation_bits: int = 8
    weight_bits: int = 8
    linear_per_channel: bool | None = None
    gptq: bool = False
    layers: tuple[tuple[str, str], ...] = ()

    def layer_scheme(self, module: str) -> Scheme:
        """The scheme the layer at ``module`` is quantized with: its per-layer exception, else this one."""
        for path, name in self.layers:
            if path == module:
                return SCHEMES[name]
        return self

    def weight_bits_of(self, module: str) -> int:
        """The weight width of the layer at ``module`` (its per-layer exception, else the scheme's)."""
        return self.layer_scheme(module).weight_bits

    def activation_bits_of(self, module: str) -> int:
        """The activation width the ops of ``module`` run in (its per-layer exception, else the scheme's)."""
        return self.layer_scheme(module).activation_bits

    @property
    def any_int16(self) -> bool:
        """Whether some op of a program of this scheme may run in int16 (uniformly or by a layer's exception)."""
        return self.activation_bits == 16 or any(SCHEMES[name].activation_bits == 16 for _p, name in self.layers)

    @property
    def any_four_bit(self) -> bool:
        """Whether some layer has 4-bit weights (uniformly or by a layer's exception)."""
        return self.weight_bits == 4 or any(SCHEMES[name].weight_bits == 4 for _p, name in self.layers)

    @property
    def any_gptq(self) -> bool:
        """Whether some layer's weights are rounded by GPTQ (uniformly or by a layer's exception)."""
        return self.gptq or any(SCHEMES[name].gptq for _p, name in self.layers)


SCHEMES: dict[str, Scheme] = {
    "int8": Scheme("int8"),
    "w4a8": Scheme("w4a8", weight_bits=4),
    "a16w8": Scheme("a16w8", activation_bits=16, linear_per_channel=True, gptq=True),
}


def get_scheme(quantization: str | Scheme) -> Scheme:
    """The scheme of a ``quantization=`` argument: a name of :data:`SCHEMES` or a :class:`Scheme`."""
    if isinstance(quantization, Scheme):
        scheme = quantization
        if (scheme.activation_bits, scheme.weight_bits) not in ((8, 8), (8, 4), (16, 8)):
            raise ValueError(f"quantization scheme {scheme.name!r}: activation_bits {scheme.activation_bits}, "
                             f"weight_bits {scheme.weight_bits}; supported: 8-bit activations with 8- or 4-bit "
                             "weights, 16-bit activations with 8-bit weights")
        if scheme.gptq and (scheme.weight_bits != 8 or scheme.linear_per_channel is not True):
            raise ValueError(f"quantization scheme {scheme.name!r}: gptq rounds 8-bit weights per channel "
                             "(weight_bits=8, linear_per_channel=True)")
        for module, name in scheme.layers:
            if name not in SCHEMES:
                raise ValueError(f"quantization scheme {scheme.name!r}: layer {module!r} asks for {name!r}; "
                                 f"per layer: {', '.join(repr(n) for n in SCHEMES)}")
        return scheme
    if quantization in SCHEMES:
        return SCHEMES[quantization]
    supported = ", ".join(repr(name) for name in SCHEMES)
    raise ValueError(f"unknown quantization {quantization!r}; supported: {supported}")
