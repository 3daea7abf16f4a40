/*
 * fully_connected_s8: bit-exact with CMSIS-NN arm_fully_connected_s8 (per-tensor requantization)
 * and arm_fully_connected_per_channel_s8 (per output channel). The input is read as rows of
 * weight.shape[1] features, whatever its shape (the host runtime's reshape(-1, I)).
 */
#include "mf_kernel_util.h"

enum { A_IN_OFF, A_OUT_OFF, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &w);
    int has_bias = mf_call_input(c, 2, &b);
    mf_call_input(c, 3, &m);
    mf_call_input(c, 4, &s);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is(&w, MF_INT8, 2) || !mf_is(&o, MF_INT8, -1)) return MF_ERR_SHAPE;
    const uint32_t depth = w.shape[1], oc = w.shape[0];
    if (depth == 0 || x.numel % depth || depth > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    if ((uint64_t)(x.numel / depth) * oc != o.numel) return MF_ERR_SHAPE;
    if (has_bias && (!mf_is(&b, MF_INT32, 1) || b.shape[0] != oc)) return MF_ERR_SHAPE;
    int32_t lo, hi;
    if (!mf_attr_act(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_value_int(mf_attr(c, A_IN_OFF)), -127, 128)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_value_int(mf_attr(c, A_OUT_OFF)), -128, 127)) return MF_ERR_SHAPE;
    return mf_check_requant(&m, &s, oc);
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
    int32_t lo, hi;
    mf_attr_act(c, A_ACT_MIN, &lo, &hi);
    const uint32_t depth = w.shape[1], oc_n = w.shape[0], rows = x.numel / depth;
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int32_t *bias = has_bias ? (const int32_t *)b.data : NULL;
    const int32_t *mult = (const int32_t *)m.data, *shift = (const int32_t *)s.data;
    const uint32_t per_channel = m.shape[0] != 1;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t oc = 0; oc < oc_n; oc++) {
            int32_t acc = mf_dot_s8(xd + (size_t)r * depth, wd + (size_t)oc * depth, depth, in_off);
            if (bias) acc = mf_add_wrap(acc, bias[oc]);
            const uint32_t q = per_channel ? oc : 0;
            *out++ = mf_clamp_s8(mf_add_wrap(mf_requantize(acc, mult[q], shift[q]), out_off), lo, hi);
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_fully_connected_s8 = {3, "fully_connected_s8", 4, 5, 1u << 2, "iiii", check, run};
