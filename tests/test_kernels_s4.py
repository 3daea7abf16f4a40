"""The int4-weight kernels (conv2d_s4, depthwise_conv2d_s4, fully_connected_s4) and
fully_connected_per_channel_s8 against an independent integer statement of CMSIS-NN's math
(cmsis_reference_s4), and the s4 packing against CMSIS-NN's documented layout.

The packed weights are random bytes (an odd count's pad nibble 0), read by the reference nibble by nibble
as CMSIS-NN's C does: every int4 value including -8 occurs, filters start in high nibbles whenever the
patch size is odd, and requantization parameters span the legal range (saturating outputs included).
"""

from __future__ import annotations

import numpy as np
import pytest
from cmsis_reference_s4 import nibble, ref_conv_s4, ref_depthwise_s4, ref_fully_connected

from mcuforge import kernels as K
from mcuforge.kernels import conv_output_hw


def random_packed(rng, count: int) -> np.ndarray:
    """Random packed int4 bytes for ``count`` values (the pad nibble of an odd count 0)."""
    packed = rng.integers(0, 256, size=(count + 1) // 2, dtype=np.uint8)
    if count % 2:
        packed[-1] &= 0x0F
    return packed.view(np.int8)


def requant(rng, channels: int) -> tuple[np.ndarray, np.ndarray]:
    n = channels if rng.random() < 0.75 else 1
    if rng.random() < 0.75:
        mult = rng.integers(1 << 30, (1 << 31) - 1, size=n, dtype=np.int64)
        shift = rng.integers(-10, 2, size=n)
    else:  # the whole legal range: saturation, INT32_MIN multipliers, large left shifts
        mult = rng.integers(-(1 << 31), 1 << 31, size=n, dtype=np.int64)
        mult[rng.random(n) < 0.2] = -(1 << 31)
        shift = rng.integers(-31, 31, size=n)
    return mult.astype(np.int32), shift.astype(np.int32)


def output_offset(rng) -> int:
    """The s4 kinds take any int32 output offset (as arm_*_s4 do; added wrapping before the clamp): mostly a
    zero point, else past int8 or at the int32 ends."""
    if rng.random() < 0.6:
        return int(rng.integers(-128, 128))
    return int(rng.choice([128, -129, 1000, -1000, -(1 << 31), (1 << 31) - 1]))


def common(rng, channels: int) -> dict:
    lo = int(rng.integers(-128, 0)) if rng.random() < 0.3 else -128
    hi = int(rng.integers(0, 128)) if rng.random() < 0.3 else 127
    mult, shift = requant(rng, channels)
    return {"input_offset": int(rng.integers(-127, 129)), "output_offset": output_offset(rng),
            "multipliers": mult, "shifts": shift, "act_min": lo, "act_max": hi}


def bias(rng, channels: int) -> np.ndarray | None:
    if rng.random() < 0.2:
        return None
    bits = 30 if rng.random() < 0.2 else 14
    return rng.integers(-(1 << bits), 1 << bits, size=channels).astype(np.int32)


def window(rng):
    for _ in range(100):
        h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pad = (int(rng.integers(0, 3)), int(rng.integers(0, 3)))
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        oh, ow = conv_output_hw((h, w), (kh, kw), stride, pad, dil)
        if oh >= 1 and ow >= 1:
            return (h, w), (kh, kw), stride, pad, dil, (oh, ow)
    raise AssertionError("no window")


def test_packing_is_cmsis_nns():
    # arm_fully_connected_s4's documentation: four sequential weights [0x1, 0x2, 0x3, 0x4] are [0x21, 0x43].
    assert K.pack_int4(np.array([1, 2, 3, 4])).view(np.uint8).tolist() == [0x21, 0x43]
    # -8 is nibble 8, -1 nibble 15; an odd count pads the last high nibble with 0
    assert K.pack_int4(np.array([-8, 7, -1])).view(np.uint8).tolist() == [0x78, 0x0F]
    values = np.arange(-8, 8).repeat(3)[:47]
    packed = K.pack_int4(values)
    assert packed.size == 24 and [nibble(packed, k) for k in range(47)] == values.tolist()
    assert K.unpack_int4(packed, 47).tolist() == values.tolist()
    with pytest.raises(ValueError, match="int4 values"):
        K.pack_int4(np.array([8]))
    with pytest.raises(ValueError, match="take 2 bytes"):
        K.unpack_int4(packed[:1], 3)


def test_conv2d_s4_matches_cmsis_reference():
    rng = np.random.default_rng(11)
    for case in range(40):
        (h, w), (kh, kw), stride, pad, dil, out_hw = window(rng)
        groups = int(rng.integers(1, 3))
        wc, opg = int(rng.integers(1, 6)), int(rng.integers(1, 5))  # odd filter channels: odd patch sizes
        oc, n = opg * groups, int(rng.integers(1, 3))
        shape = (oc, kh, kw, wc)
        packed = random_packed(rng, int(np.prod(shape)))
        x = rng.integers(-128, 128, size=(n, h, w, wc * groups), dtype=np.int8)
        b, p = bias(rng, oc), common(rng, oc)
        got = K.conv2d_s4(x, packed, shape, b, stride=stride, padding=pad, dilation=dil, output_hw=out_hw, **p)
        want = ref_conv_s4(x.tolist(), packed, shape, b, p["input_offset"], p["output_offset"], p["multipliers"],
                           p["shifts"], stride, pad, dil, out_hw, p["act_min"], p["act_max"])
        assert got.tolist() == want, f"case {case}: {shape}, groups {groups}"


def test_depthwise_conv2d_s4_matches_cmsis_reference():
    rng = np.random.default_rng(12)
    for case in range(40):
        (h, w), (kh, kw), stride, pad, dil, out_hw = window(rng)
        c, dm, n = int(rng.integers(1, 8)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
        shape = (1, kh, kw, c * dm)
        packed = random_packed(rng, int(np.prod(shape)))
        x = rng.integers(-128, 128, size=(n, h, w, c), dtype=np.int8)
        b, p = bias(rng, c * dm), common(rng, c * dm)
        got = K.depthwise_conv2d_s4(x, packed, shape, b, stride=stride, padding=pad, dilation=dil,
                                    depth_multiplier=dm, output_hw=out_hw, **p)
        want = ref_depthwise_s4(x.tolist(), packed, shape, b, p["input_offset"], p["output_offset"],
                                p["multipliers"], p["shifts"], stride, pad, dil, dm, out_hw, p["act_min"], p["act_max"])
        assert got.tolist() == want, f"case {case}: {shape}, multiplier {dm}"


def test_fully_connected_s4_and_per_channel_s8_match_cmsis_reference():
    rng = np.random.default_rng(13)
    for case in range(60):
        rows, depth, oc = int(rng.integers(1, 4)), int(rng.integers(1, 40)), int(rng.integers(1, 12))
        x = rng.integers(-128, 128, size=(rows, depth), dtype=np.int8)
        b, p = bias(rng, oc), common(rng, oc)
        packed = random_packed(rng, oc * depth)
        got = K.fully_connected_s4(x, packed, (oc, depth), b, **p)
        want = ref_fully_connected(x.tolist(), lambda k, packed=packed: nibble(packed, k), oc, depth, b,
                                   p["input_offset"], p["output_offset"], p["multipliers"], p["shifts"],
                                   p["act_min"], p["act_max"])
        assert got.tolist() == want, f"s4 case {case}: ({oc}, {depth})"
        w = rng.integers(-128, 128, size=(oc, depth), dtype=np.int8)
        mult, shift = requant(rng, oc)
        if mult.size != oc:
            mult, shift = np.resize(mult, oc), np.resize(shift, oc)
        # the s8 kind takes an int8 zero point as its output offset
        p.update(multipliers=mult, shifts=shift, output_offset=int(np.clip(p["output_offset"], -128, 127)))
        got = K.fully_connected_per_channel_s8(x, w, b, **p)
        flat = w.reshape(-1)
        want = ref_fully_connected(x.tolist(), lambda k, flat=flat: int(flat[k]), oc, depth, b, p["input_offset"],
                                   p["output_offset"], mult, shift, p["act_min"], p["act_max"])
        assert got.tolist() == want, f"per-channel case {case}: ({oc}, {depth})"


def test_extremes_saturate_as_cmsis_nn():
    """All weights -8 (the int4 value the symmetric quantizer never makes), inputs at 127 with offset 128
    or -128 with offset -127 (|x + offset| = 255), a large bias: the int32 sum and the clamp as the
    reference computes them."""
    for x_value, in_off in ((127, 128), (-128, -127)):
        depth, oc = 37, 3  # odd depth: rows 1 start in a high nibble
        packed = np.full((oc * depth + 1) // 2, -0x78 - 1, np.int8)  # 0x88: two -8 nibbles per byte
        packed[-1] &= 0x0F
        x = np.full((2, depth), x_value, np.int8)
        b = np.array([2**30, -(2**30), 0], np.int32)
        p = {"input_offset": in_off, "output_offset": 5, "multipliers": np.full(oc, (1 << 31) - 1, np.int32),
             "shifts": np.array([30, -31, -8], np.int32), "act_min": -100, "act_max": 90}
        got = K.fully_connected_s4(x, packed, (oc, depth), b, **p)
        want = ref_fully_connected(x.tolist(), lambda k, packed=packed: nibble(packed, k), oc, depth, b, in_off, 5,
                                   p["multipliers"], p["shifts"], -100, 90)
        assert got.tolist() == want
        assert {v for row in got.tolist() for v in row} & {-100, 90}  # the clamp is reached


def test_s4_kernels_reject_bad_packing_and_per_channel_lengths():
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, size=(1, 5), dtype=np.int8)
    p = {"input_offset": 0, "output_offset": 0, "multipliers": np.array([1 << 30], np.int32),
         "shifts": np.array([0], np.int32)}
    with pytest.raises(ValueError, match="take 8 bytes"):
        K.fully_connected_s4(x, np.zeros(7, np.int8), (3, 5), None, **p)
    with pytest.raises(ValueError, match="high nibble"):
        K.fully_connected_s4(x, np.full(8, 0x10, np.int8), (3, 5), None, **p)
    with pytest.raises(ValueError, match="one value per output channel"):
        K.fully_connected_per_channel_s8(x, np.zeros((3, 5), np.int8), None, **p)
