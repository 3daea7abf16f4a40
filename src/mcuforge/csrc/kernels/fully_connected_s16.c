/*
 * fully_connected_s16: int16 x int8 fully connected, bit-exact with CMSIS-NN arm_fully_connected_s16
 * (per-tensor requantization; length-O multipliers and shifts requantize per output channel) and
 * mcuforge.kernels.fully_connected_s16. The input is read as rows of weight.shape[1] features, whatever
 * its shape. Exact int64 sums (mf_dot_s16_rows: 4 output channels per pass over the input, on DSP 2
 * rows of SMLALD, on MVE 4 rows of VMLADAVA in int32 blocks), optional int64 bias, arm_nn_requantize_s64.
 * On MVE one input row takes mf_s16_mve_rows4 (its own per-group check of the int32 output stage); more
 * rows take mf_s16_mve_cols4 (4 rows a pass) when mf_s16_mve_ok holds for the whole layer.
 */
#include "mf_s16.h"
#include "mf_simd.h"

enum { A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT16, -1) || !mf_is(&w, MF_INT8, 2) || !mf_is(&o, MF_INT16, -1)) return MF_ERR_SHAPE;
    const uint32_t depth = w.shape[1], oc = w.shape[0];
    if (depth == 0 || x.numel % depth) return MF_ERR_SHAPE;
    if ((uint64_t)(x.numel / depth) * oc != o.numel) return MF_ERR_SHAPE;
    return mf_check_weighted_s16(c, has_bias ? &b : NULL, &m, &s, oc, depth, A_ACT_MIN);
}

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const uint32_t depth = w.shape[1], oc_n = w.shape[0], rows = x.numel / depth;
    const int16_t *xd = (const int16_t *)x.data;
    const int8_t *wd = (const int8_t *)w.data;
    int16_t *out = (int16_t *)o.data;
    int64_t acc[4];
#if defined(MF_USE_MVE)
    if (rows == 1) { /* batch 1: mf_s16_mve_rows4 takes any requantization, without mf_s16_mve_ok's bounds */
        mf_s16_mve_rows4(&rq, xd, wd, depth, oc_n, out);
        return MF_OK;
    }
    if (mf_s16_mve_ok(&rq, wd, depth, oc_n, 1)) { /* the MVE int32 path: 4 rows or 4 filters a pass */
        uint32_t r = 0;
        while (rows - r >= 2) {
            const uint32_t n = rows - r < 4 ? rows - r : 4;
            const int16_t *cols[4] = {xd + (size_t)r * depth, xd + (size_t)(r + 1) * depth,
                                      xd + (size_t)(r + (n > 2 ? 2 : 0)) * depth, xd + (size_t)(r + (n > 3 ? 3 : 0)) * depth};
            mf_s16_mve_cols4(&rq, cols, n, wd, depth, 0, oc_n, out + (size_t)r * oc_n, oc_n);
            r += n;
        }
        if (r < rows) mf_s16_mve_rows4(&rq, xd + (size_t)r * depth, wd, depth, oc_n, out + (size_t)r * oc_n);
        return MF_OK;
    }
#endif
    for (uint32_t r = 0; r < rows; r++, xd += depth) {
        for (uint32_t oc = 0; oc < oc_n; oc += 4) { /* 4 output channels per pass over the input row */
            const uint32_t n = oc_n - oc < 4 ? oc_n - oc : 4;
            mf_dot_s16_rows(xd, wd + (size_t)oc * depth, depth, n, acc);
            for (uint32_t k = 0; k < n; k++) *out++ = mf_requant_s16_channel(&rq, oc + k, acc[k]);
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_fully_connected_s16 = {MF_KIND_HEAD_fully_connected_s16, check, run};
