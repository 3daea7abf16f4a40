/*
 * depthwise_conv2d_s8: int8 depthwise convolution, bit-exact with CMSIS-NN arm_depthwise_conv_s8
 * (any depth multiplier M; output channel oc = ic * M + m reads input channel ic only).
 * Weights 1HW(C*M); taps outside the input are skipped.
 */
#include "mf_kernel_util.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_MULT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &w);
    int has_bias = mf_call_input(c, 2, &b);
    mf_call_input(c, 3, &m);
    mf_call_input(c, 4, &s);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&w, MF_INT8, 4) || !mf_is(&o, MF_INT8, 4)) return MF_ERR_SHAPE;
    int32_t dm = mf_value_int(mf_attr(c, A_MULT));
    if (dm < 1 || w.shape[0] != 1 || (uint64_t)x.shape[3] * (uint32_t)dm != w.shape[3]) return MF_ERR_SHAPE;
    if (o.shape[0] != x.shape[0] || o.shape[3] != w.shape[3]) return MF_ERR_SHAPE;
    if (has_bias && (!mf_is(&b, MF_INT32, 1) || b.shape[0] != w.shape[3])) return MF_ERR_SHAPE;
    if ((uint64_t)w.shape[1] * w.shape[2] > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    int32_t st[2], pd[2], dl[2], lo, hi;
    if (!mf_attr_pair(c, A_STRIDE, 1, st) || !mf_attr_pair(c, A_PAD, 0, pd) || !mf_attr_pair(c, A_DIL, 1, dl)) {
        return MF_ERR_SHAPE;
    }
    if (!mf_attr_act(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_value_int(mf_attr(c, A_IN_OFF)), -127, 128)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_value_int(mf_attr(c, A_OUT_OFF)), -128, 127)) return MF_ERR_SHAPE;
    return mf_check_requant(&m, &s, w.shape[3]);
}

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &w);
    int has_bias = mf_call_input(c, 2, &b);
    mf_call_input(c, 3, &m);
    mf_call_input(c, 4, &s);
    mf_call_output(c, 0, &o);
    const int32_t in_off = mf_value_int(mf_attr(c, A_IN_OFF)), out_off = mf_value_int(mf_attr(c, A_OUT_OFF));
    const uint32_t dm = (uint32_t)mf_value_int(mf_attr(c, A_MULT));
    int32_t st[2], pd[2], dl[2], lo, hi;
    mf_attr_pair(c, A_STRIDE, 1, st);
    mf_attr_pair(c, A_PAD, 0, pd);
    mf_attr_pair(c, A_DIL, 1, dl);
    mf_attr_act(c, A_ACT_MIN, &lo, &hi);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int32_t *bias = has_bias ? (const int32_t *)b.data : NULL;
    const int32_t *mult = (const int32_t *)m.data, *shift = (const int32_t *)s.data;
    const uint32_t per_channel = m.shape[0] != 1;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], oc_n = w.shape[3], kh = w.shape[1], kw = w.shape[2];
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t y0 = (int64_t)oy * st[0] - pd[0], x0 = (int64_t)ox * st[1] - pd[1];
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
                            acc += ((int32_t)xd[xi] + in_off) * wd[((size_t)ky * kw + kx) * oc_n + oc];
                        }
                    }
                    if (bias) acc = mf_add_wrap(acc, bias[oc]);
                    const uint32_t q = per_channel ? oc : 0;
                    const int32_t r = mf_add_wrap(mf_requantize(acc, mult[q], shift[q]), out_off);
                    *out++ = mf_clamp_s8(r, lo, hi);
                }
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_depthwise_conv2d_s8 = {2, "depthwise_conv2d_s8", 4, 5, 1u << 2, "iiIIIiii", check, run};
