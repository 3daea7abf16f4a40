/*
 * depthwise_conv2d_s4: int8 depthwise convolution with int4 weights, bit-exact with CMSIS-NN
 * arm_depthwise_conv_s4 (and mcuforge.kernels.depthwise_conv2d_s4): any depth multiplier M, output
 * channel oc = ic * M + m reads input channel ic only; weights 1HW(C*M) packed two per byte as one run
 * of nibbles (mf_s4.h), so with an odd C*M every other tap's channels start in a high nibble; taps
 * outside the input are skipped.
 *
 * Portable C on every core: a depthwise layer holds few weights (kh * kw per channel), and its
 * per-pixel work is dominated by the output stage, which the s8 kernel's paths share with this one.
 */
#include "mf_s4.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_MULT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is_s4_weight(&w, 4) || !mf_is(&o, MF_INT8, 4)) return MF_ERR_SHAPE;
    int32_t dm = mf_value_int(mf_attr(c, A_MULT));
    if (dm < 1 || w.shape[0] != 1 || (uint64_t)x.shape[3] * (uint32_t)dm != w.shape[3]) return MF_ERR_SHAPE;
    if (o.shape[0] != x.shape[0] || o.shape[3] != w.shape[3]) return MF_ERR_SHAPE;
    if ((uint64_t)w.shape[1] * w.shape[2] > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    int32_t st[2], pd[2], dl[2];
    if (!mf_attr_conv_window(c, A_STRIDE, st, pd, dl)) return MF_ERR_SHAPE;
    return mf_check_weighted_params(c, has_bias ? &b : NULL, &m, &s, w.shape[3], A_ACT_MIN);
}

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    const uint32_t dm = (uint32_t)mf_attr_int(c, A_MULT);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int64_t h = x.shape[1], wi = x.shape[2];
    const uint32_t ch = x.shape[3], oc_n = w.shape[3], kh = w.shape[1], kw = w.shape[2];
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            const int64_t y0 = (int64_t)oy * st[0] - pd[0];
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t x0 = (int64_t)ox * st[1] - pd[1];
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    const uint32_t ic = oc / dm;
                    int32_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const size_t xi = (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch + ic;
                            acc += ((int32_t)xd[xi] + in_off) * mf_s4_at(wd, (ky * kw + kx) * oc_n + oc);
                        }
                    }
                    *out++ = mf_channel_requant_s8(&rq, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_depthwise_conv2d_s4 = {16, "depthwise_conv2d_s4", 4, 5, 1u << 2, "iiIIIiii", check, run};
