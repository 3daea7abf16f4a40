"""CMSIS-NN's int4-weight kernels (arm_convolve_s4, arm_depthwise_conv_s4, arm_fully_connected_s4) and
arm_fully_connected_per_channel_s8 transcribed into plain Python integers, reading the packed weights byte by
byte as the C does: the low nibble as ``(int8_t)(b << 4) >> 4``, the high nibble as ``(int8_t)b >> 4``, the
whole filter tensor one run of nibbles (filter k's weights continue in the same byte when the previous filter
ended in a low nibble). Uses nothing from mcuforge; the epilogue is cmsis_reference.c_output.
"""

from __future__ import annotations

from cmsis_reference import c_output, c_wrap32


def c_int8(v: int) -> int:
    """(int8_t) of the low byte."""
    v &= 0xFF
    return v - 256 if v & 0x80 else v


def nibble(packed, k: int) -> int:
    """Weight k of the packed filter data: even k the low nibble of byte k / 2, odd k the high one."""
    byte = int(packed[k // 2]) & 0xFF
    return c_int8(byte << 4) >> 4 if k % 2 == 0 else c_int8(byte) >> 4


def _windows(x, oc_n, kernel, stride, pad, dil, out_hw, bias, out_off, mults, shifts, lo, hi, tap):
    """The loops every CMSIS-NN convolution shares: per output (n, oy, ox, oc) the bias plus ``tap(n, iy, ix,
    oc, ky, kx)`` over the taps inside the input (int32, wrapping), then the epilogue."""
    h, w = len(x[0]), len(x[0][0])
    out = []
    for n in range(len(x)):
        rows = []
        for oy in range(out_hw[0]):
            cols = []
            for ox in range(out_hw[1]):
                pix = []
                for oc in range(oc_n):
                    acc = 0 if bias is None else int(bias[oc])
                    for ky in range(kernel[0]):
                        iy = oy * stride[0] - pad[0] + ky * dil[0]
                        for kx in range(kernel[1]):
                            ix = ox * stride[1] - pad[1] + kx * dil[1]
                            if 0 <= iy < h and 0 <= ix < w:
                                acc = c_wrap32(acc + tap(n, iy, ix, oc, ky, kx))
                    k = oc if len(mults) > 1 else 0
                    pix.append(c_output(acc, int(mults[k]), int(shifts[k]), out_off, lo, hi))
                cols.append(pix)
            rows.append(cols)
        out.append(rows)
    return out


def ref_conv_s4(x, packed, filter_shape, bias, in_off, out_off, mults, shifts, stride, pad, dil, out_hw, lo, hi):
    """arm_convolve_s4 (x NHWC nested ints, filter (O, KH, KW, C / groups) packed): taps outside skipped."""
    oc_n, kh, kw, wc = filter_shape
    opg = oc_n // (len(x[0][0][0]) // wc)

    def tap(n, iy, ix, oc, ky, kx):
        c0 = (oc // opg) * wc
        return sum((int(x[n][iy][ix][c0 + ci]) + in_off) * nibble(packed, ((oc * kh + ky) * kw + kx) * wc + ci)
                   for ci in range(wc))

    return _windows(x, oc_n, (kh, kw), stride, pad, dil, out_hw, bias, out_off, mults, shifts, lo, hi, tap)


def ref_depthwise_s4(x, packed, filter_shape, bias, in_off, out_off, mults, shifts, stride, pad, dil, dm, out_hw,
                     lo, hi):
    """arm_depthwise_conv_s4: output channel oc = ic * dm + m, weights (1, KH, KW, C * dm) packed."""
    _one, kh, kw, oc_n = filter_shape

    def tap(n, iy, ix, oc, ky, kx):
        return (int(x[n][iy][ix][oc // dm]) + in_off) * nibble(packed, (ky * kw + kx) * oc_n + oc)

    return _windows(x, oc_n, (kh, kw), stride, pad, dil, out_hw, bias, out_off, mults, shifts, lo, hi, tap)


def ref_fully_connected(rows, weight_at, oc_n, depth, bias, in_off, out_off, mults, shifts, lo, hi):
    """arm_fully_connected_s4 / _per_channel_s8: ``weight_at(k)`` is element k of the (O, I) weights."""
    out = []
    for row in rows:
        values = []
        for oc in range(oc_n):
            acc = 0 if bias is None else int(bias[oc])
            for i in range(depth):
                acc = c_wrap32(acc + (int(row[i]) + in_off) * weight_at(oc * depth + i))
            m = len(mults) > 1
            values.append(c_output(acc, int(mults[oc if m else 0]), int(shifts[oc if m else 0]), out_off, lo, hi))
        out.append(values)
    return out
