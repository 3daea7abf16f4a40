/*
 * depthwise_conv2d_s16: int16 x int8 depthwise convolution, bit-exact with CMSIS-NN
 * arm_depthwise_conv_s16 and mcuforge.kernels.depthwise_conv2d_s16 (any depth multiplier M: output
 * channel oc = ic * M + m reads input channel ic). Weights 1HW(C*M), optional int64 bias, per-channel
 * arm_nn_requantize_s64; taps outside the input are skipped; the accumulator is the exact int64 sum.
 */
#include "mf_s16.h"

enum { A_STRIDE, A_PAD, A_DIL, A_MULT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT16, 4) || !mf_is(&w, MF_INT8, 4) || !mf_is(&o, MF_INT16, 4)) return MF_ERR_SHAPE;
    const int32_t dm = mf_attr_int(c, A_MULT);
    if (dm < 1 || w.shape[0] != 1 || (uint64_t)x.shape[3] * (uint32_t)dm != w.shape[3]) return MF_ERR_SHAPE;
    if (o.shape[0] != x.shape[0] || o.shape[3] != w.shape[3]) return MF_ERR_SHAPE;
    int32_t st[2], pd[2], dl[2];
    if (!mf_attr_conv_window(c, A_STRIDE, st, pd, dl)) return MF_ERR_SHAPE;
    const uint64_t taps = (uint64_t)w.shape[1] * w.shape[2];
    return mf_check_weighted_s16(c, has_bias ? &b : NULL, &m, &s, w.shape[3], taps, A_ACT_MIN);
}

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const uint32_t dm = (uint32_t)mf_attr_int(c, A_MULT);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int16_t *xd = (const int16_t *)x.data;
    const int8_t *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], oc_n = w.shape[3], kh = w.shape[1], kw = w.shape[2];
    int16_t *out = (int16_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            const int64_t y0 = (int64_t)oy * st[0] - pd[0];
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t x0 = (int64_t)ox * st[1] - pd[1];
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    const uint32_t ic = oc / dm;
                    int64_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const size_t xi = (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch + ic;
                            acc += (int32_t)xd[xi] * wd[((size_t)ky * kw + kx) * oc_n + oc];
                        }
                    }
                    *out++ = mf_requant_s16_channel(&rq, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_depthwise_conv2d_s16 = {61, "depthwise_conv2d_s16", 4, 5, 1u << 2, "IIIiii", check, run};
