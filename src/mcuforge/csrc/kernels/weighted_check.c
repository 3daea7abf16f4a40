/*
 * The load-time checks a kernel family's int8- and int4-weight kinds share (conv2d_s8 / conv2d_s4,
 * depthwise_conv2d_s8 / _s4, fully_connected_s8 / _per_channel_s8 / _s4): the same operands, shapes and
 * attributes, weights of the kind's dtype (MF_INT8, or MF_INT4 whose packing the loader checked).
 */
#include "mf_kernel_util.h"

/* mf_check_weighted_params, and for the s4 kinds (weight_dtype MF_INT4) any int32 output offset and their
 * compact parameters too (format 3.0): an int16 bias, and int16 constant multipliers m (the Q31 multiplier m << 16), each m in
 * [0, 32767]. Those are checked here, then as the int32 ones they stand for (shapes, lengths, shifts). */
static mf_status check_params(const mf_call *c, uint8_t weight_dtype, const mf_tensor *b, const mf_tensor *m,
                              const mf_tensor *s, uint32_t channels, uint32_t a_act_min) {
    mf_tensor b32, m32;
    if (weight_dtype == MF_INT4 && b && b->dtype == MF_INT16) {
        b32 = *b;
        b32.dtype = MF_INT32;
        b = &b32;
    }
    if (weight_dtype == MF_INT4 && m->dtype == MF_INT16) {
        if (!(m->flags & MF_TENSOR_FLAG_CONSTANT) || m->rank != 1) return MF_ERR_SHAPE;
        const int16_t *v = (const int16_t *)m->data;
        for (uint32_t i = 0; i < m->shape[0]; i++) {
            if (v[i] < 0) return MF_ERR_SHAPE;
        }
        m32 = *m;
        m32.dtype = MF_INT32;
        m = &m32;
    }
    return mf_check_weighted_params_ex(c, b, m, s, channels, a_act_min, weight_dtype == MF_INT4);
}

mf_status mf_check_conv2d(const mf_call *c, uint8_t weight_dtype) {
    enum { A_STRIDE = 2, A_ACT_MIN = 5 };
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&w, weight_dtype, 4) || !mf_is(&o, MF_INT8, 4)) return MF_ERR_SHAPE;
    if (w.shape[3] == 0 || x.shape[3] % w.shape[3] != 0 || w.shape[0] % (x.shape[3] / w.shape[3]) != 0) {
        return MF_ERR_SHAPE; /* input channels = groups x filter channels, filters split evenly */
    }
    if (o.shape[0] != x.shape[0] || o.shape[3] != w.shape[0]) return MF_ERR_SHAPE;
    if ((uint64_t)w.shape[1] * w.shape[2] * w.shape[3] > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    int32_t st[2], pd[2], dl[2];
    if (!mf_attr_conv_window(c, A_STRIDE, st, pd, dl)) return MF_ERR_SHAPE;
    return check_params(c, weight_dtype, has_bias ? &b : NULL, &m, &s, w.shape[0], A_ACT_MIN);
}

mf_status mf_check_depthwise_conv2d(const mf_call *c, uint8_t weight_dtype) {
    enum { A_STRIDE = 2, A_MULT = 5, A_ACT_MIN = 6 };
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&w, weight_dtype, 4) || !mf_is(&o, MF_INT8, 4)) return MF_ERR_SHAPE;
    int32_t dm = mf_value_int(mf_attr(c, A_MULT));
    if (dm < 1 || w.shape[0] != 1 || (uint64_t)x.shape[3] * (uint32_t)dm != w.shape[3]) return MF_ERR_SHAPE;
    if (o.shape[0] != x.shape[0] || o.shape[3] != w.shape[3]) return MF_ERR_SHAPE;
    if ((uint64_t)w.shape[1] * w.shape[2] > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    int32_t st[2], pd[2], dl[2];
    if (!mf_attr_conv_window(c, A_STRIDE, st, pd, dl)) return MF_ERR_SHAPE;
    return check_params(c, weight_dtype, has_bias ? &b : NULL, &m, &s, w.shape[3], A_ACT_MIN);
}

mf_status mf_check_fully_connected(const mf_call *c, uint8_t weight_dtype) {
    enum { A_ACT_MIN = 2 };
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is(&w, weight_dtype, 2) || !mf_is(&o, MF_INT8, -1)) return MF_ERR_SHAPE;
    const uint32_t depth = w.shape[1], oc = w.shape[0];
    if (depth == 0 || x.numel % depth || depth > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    if ((uint64_t)(x.numel / depth) * oc != o.numel) return MF_ERR_SHAPE;
    return check_params(c, weight_dtype, has_bias ? &b : NULL, &m, &s, oc, A_ACT_MIN);
}
