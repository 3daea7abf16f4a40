/*
 * batch_matmul_s16: int16 batched matrix multiply, bit-exact with CMSIS-NN arm_batch_matmul_s16 and
 * mcuforge.kernels.batch_matmul_s16. lhs (..., M, K) [adj_x: (..., K, M)], rhs (..., K, N) [adj_y:
 * (..., N, K)], the batch dims broadcast like numpy. No offsets (s16 zero points are 0); the exact int64
 * sum, per-tensor arm_nn_requantize_s64. Depth at most 2^17, so |sum| < 2^47.
 */
#include "broadcast.h"
#include "mf_s16.h"

enum { A_OUT_MULT, A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX, A_ADJ_X, A_ADJ_Y };

#define MF_BMM_S16_MAX_DEPTH (1u << 17)

static int geometry(const mf_call *c, const mf_tensor *l, const mf_tensor *r, mf_bmm_geometry *g) {
    return mf_bmm_geometry_init(g, l, r, mf_attr_int(c, A_ADJ_X) != 0, mf_attr_int(c, A_ADJ_Y) != 0);
}

static mf_status check(const mf_call *c) {
    mf_tensor l, r, o;
    mf_bmm_geometry g;
    int32_t lo, hi;
    if (!mf_call_binary_s16(c, &l, &r, &o) || l.rank < 2 || r.rank < 2) return MF_ERR_SHAPE;
    if (!geometry(c, &l, &r, &g) || !mf_bmm_output_ok(&g, &o) || g.k > MF_BMM_S16_MAX_DEPTH) return MF_ERR_SHAPE;
    if (!mf_attr_act_s16(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (mf_attr_int(c, A_OUT_MULT) == INT32_MIN) return MF_ERR_SHAPE;
    return mf_in_range(mf_attr_int(c, A_OUT_SHIFT), MF_S64_SHIFT_MIN, MF_S64_SHIFT_MAX) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run(const mf_call *c) {
    mf_tensor l, r, o;
    mf_bmm_geometry g;
    mf_call_binary_s16(c, &l, &r, &o);
    geometry(c, &l, &r, &g);
    const int adj_x = mf_attr_int(c, A_ADJ_X) != 0, adj_y = mf_attr_int(c, A_ADJ_Y) != 0;
    const int32_t rm = mf_reduce_multiplier(mf_attr_int(c, A_OUT_MULT)), shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    const uint32_t m_n = g.m, k_n = g.k, n_n = g.n;
    /* element (m, k) of a lhs matrix at m * lm + k * lk; (k, n) of a rhs matrix at k * rk + n * rn */
    const size_t lm = adj_x ? 1u : k_n, lk = adj_x ? m_n : 1u;
    const size_t rk = adj_y ? 1u : n_n, rn = adj_y ? k_n : 1u;
    const size_t l_size = (size_t)m_n * k_n, r_size = (size_t)k_n * n_n;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t b = 0; b < g.batch.numel; b++, mf_bcast_step(&g.batch)) {
        const int16_t *lhs = (const int16_t *)l.data + (size_t)g.batch.ia * l_size;
        const int16_t *rhs = (const int16_t *)r.data + (size_t)g.batch.ib * r_size;
        for (uint32_t m = 0; m < m_n; m++) {
            for (uint32_t n = 0; n < n_n; n++) {
                const int16_t *lp = lhs + m * lm, *rp = rhs + n * rn;
                int64_t acc = 0;
                for (uint32_t k = 0; k < k_n; k++, lp += lk, rp += rk) acc += (int32_t)*lp * *rp;
                *out++ = mf_clamp_s16(mf_requantize_s64(acc, rm, shift), lo, hi);
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_batch_matmul_s16 = {MF_KIND_HEAD_batch_matmul_s16, check, run};
