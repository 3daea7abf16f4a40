/*
 * transpose_conv2d_s8: int8 transposed 2-D convolution, bit-exact with CMSIS-NN arm_transpose_conv_s8
 * and mcuforge.kernels.transpose_conv2d_s8. NHWC input and output, OHWI weights, per-channel
 * requantization; torch's padding; the output size (torch's output_padding) is the output shape.
 *
 * Each input pixel scatters into acc[iy*sh + ky - ph, ix*sw + kx - pw]. Computed here as a gather:
 * output row oy takes the taps ky with (oy + ph - ky) a multiple of sh, input row (oy + ph - ky) / sh
 * inside the input. The int32 accumulator wraps, so the order of the additions does not matter.
 */
#include "mf_kernel_util.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&w, MF_INT8, 4) || !mf_is(&o, MF_INT8, 4)) return MF_ERR_SHAPE;
    if (w.shape[3] != x.shape[3] || o.shape[0] != x.shape[0] || o.shape[3] != w.shape[0]) return MF_ERR_SHAPE;
    if (w.shape[1] >= 0x80000000u || w.shape[2] >= 0x80000000u) return MF_ERR_SHAPE; /* ky + stride < 2^32 */
    int32_t st[2], pd[2];
    if (!mf_attr_pair(c, A_STRIDE, 1, st) || !mf_attr_pair(c, A_PAD, 0, pd)) return MF_ERR_SHAPE;
    for (int a = 0; a < 2; a++) { /* output size in [base, base + stride - 1], base >= 1 */
        const int64_t base = ((int64_t)x.shape[1 + a] - 1) * st[a] - 2 * (int64_t)pd[a] + (int64_t)w.shape[1 + a];
        if (base < 1 || (int64_t)o.shape[1 + a] < base || (int64_t)o.shape[1 + a] >= base + st[a]) {
            return MF_ERR_SHAPE;
        }
    }
    return mf_check_weighted_params(c, has_bias ? &b : NULL, &m, &s, w.shape[0], A_ACT_MIN);
}

/* Along one axis, output index o takes taps k = k0, k0 + stride, ... from input indices i0, i0 - 1, ...
 * (o + pad = i * stride + k). */
static void first_tap(uint32_t o, int32_t stride, int32_t pad, uint32_t *k0, int64_t *i0) {
    const int64_t t = (int64_t)o + pad;
    *k0 = (uint32_t)(t % stride);
    *i0 = t / stride;
}

/* sum((x[i] + offset) * w[i]) over any n, wrapping like an int32 accumulator */
static int32_t dot_wrap(const int8_t *x, const int8_t *w, uint32_t n, int32_t offset) {
    int32_t acc = 0;
    while (n > 0) {
        const uint32_t part = n < MF_MAX_DOT_DEPTH ? n : MF_MAX_DOT_DEPTH;
        acc = mf_add_wrap(acc, mf_dot_s8(x, w, part, offset));
        x += part;
        w += part;
        n -= part;
    }
    return acc;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    int32_t st[2], pd[2];
    mf_attr_pair(c, A_STRIDE, 1, st);
    mf_attr_pair(c, A_PAD, 0, pd);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const uint32_t h = x.shape[1], wi = x.shape[2], ch = x.shape[3];
    const uint32_t oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *xn = xd + (size_t)n * h * wi * ch;
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            uint32_t ky0;
            int64_t iy0;
            first_tap(oy, st[0], pd[0], &ky0, &iy0);
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                uint32_t kx0;
                int64_t ix0;
                first_tap(ox, st[1], pd[1], &kx0, &ix0);
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    int32_t acc = 0;
                    int64_t iy = iy0;
                    for (uint32_t ky = ky0; ky < kh && iy >= 0; ky += (uint32_t)st[0], iy--) {
                        if (iy >= (int64_t)h) continue;
                        int64_t ix = ix0;
                        for (uint32_t kx = kx0; kx < kw && ix >= 0; kx += (uint32_t)st[1], ix--) {
                            if (ix >= (int64_t)wi) continue;
                            const int8_t *xp = xn + ((size_t)iy * wi + (size_t)ix) * ch;
                            const int8_t *wp = wd + (((size_t)oc * kh + ky) * kw + kx) * ch;
                            acc = mf_add_wrap(acc, dot_wrap(xp, wp, ch, in_off));
                        }
                    }
                    *out++ = mf_channel_requant_s8(&rq, oc, acc); /* the bias joins the wrapping sum here */
                }
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_transpose_conv2d_s8 = {13, "transpose_conv2d_s8", 4, 5, 1u << 2, "iiIIii", check, run};
