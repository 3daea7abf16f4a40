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
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is(&w, MF_INT8, 2) || !mf_is(&o, MF_INT8, -1)) return MF_ERR_SHAPE;
    const uint32_t depth = w.shape[1], oc = w.shape[0];
    if (depth == 0 || x.numel % depth || depth > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    if ((uint64_t)(x.numel / depth) * oc != o.numel) return MF_ERR_SHAPE;
    return mf_check_weighted_params(c, has_bias ? &b : NULL, &m, &s, oc, A_ACT_MIN);
}

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const uint32_t depth = w.shape[1], oc_n = w.shape[0], rows = x.numel / depth;
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t oc = 0; oc < oc_n; oc++) {
            const int32_t acc = mf_dot_s8(xd + (size_t)r * depth, wd + (size_t)oc * depth, depth, in_off);
            *out++ = mf_channel_requant_s8(&rq, oc, acc);
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_fully_connected_s8 = {3, "fully_connected_s8", 4, 5, 1u << 2, "iiii", check, run};
