/*
 * batch_matmul_s8: int8 batched matrix multiply, bit-exact with CMSIS-NN arm_batch_matmul_s8 and
 * mcuforge.kernels.batch_matmul_s8. lhs (..., M, K) [adj_x: (..., K, M)], rhs (..., K, N)
 * [adj_y: (..., N, K)]; the batch dims broadcast like numpy. The int32 accumulator wraps.
 */
#include "broadcast.h"

enum { A_LHS_OFF, A_RHS_OFF, A_OUT_OFF, A_OUT_MULT, A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX, A_ADJ_X, A_ADJ_Y };

/* The geometry (mf_bmm_geometry, broadcast.c) with this op's adj_x / adj_y. */
static int geometry(const mf_call *c, const mf_tensor *l, const mf_tensor *r, mf_bmm_geometry *g) {
    return mf_bmm_geometry_init(g, l, r, mf_attr_int(c, A_ADJ_X) != 0, mf_attr_int(c, A_ADJ_Y) != 0);
}

static mf_status check(const mf_call *c) {
    mf_tensor l, r, o;
    mf_bmm_geometry g;
    int32_t lo, hi;
    if (!mf_call_binary_s8(c, &l, &r, &o)) return MF_ERR_SHAPE;
    if (l.rank < 2 || r.rank < 2) return MF_ERR_SHAPE;
    if (!geometry(c, &l, &r, &g)) return MF_ERR_SHAPE;
    if (!mf_bmm_output_ok(&g, &o)) return MF_ERR_SHAPE;
    if (!mf_attr_act(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_LHS_OFF), -127, 128) || !mf_in_range(mf_attr_int(c, A_RHS_OFF), -127, 128)) {
        return MF_ERR_SHAPE;
    }
    if (!mf_in_range(mf_attr_int(c, A_OUT_OFF), -128, 127)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_OUT_SHIFT), -31, 30)) return MF_ERR_SHAPE;
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor l, r, o;
    mf_bmm_geometry g;
    mf_call_binary_s8(c, &l, &r, &o);
    geometry(c, &l, &r, &g);
    const int adj_x = mf_attr_int(c, A_ADJ_X) != 0, adj_y = mf_attr_int(c, A_ADJ_Y) != 0;
    const int32_t l_off = mf_attr_int(c, A_LHS_OFF), r_off = mf_attr_int(c, A_RHS_OFF), out_off = mf_attr_int(c, A_OUT_OFF);
    const int32_t mult = mf_attr_int(c, A_OUT_MULT), shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    const uint32_t m_n = g.m, k_n = g.k, n_n = g.n;
    /* element (m, k) of a lhs matrix at m * lm + k * lk; (k, n) of a rhs matrix at k * rk + n * rn */
    const size_t lm = adj_x ? 1u : k_n, lk = adj_x ? m_n : 1u;
    const size_t rk = adj_y ? 1u : n_n, rn = adj_y ? k_n : 1u;
    const size_t l_size = (size_t)m_n * k_n, r_size = (size_t)k_n * n_n;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t b = 0; b < g.batch.numel; b++, mf_bcast_step(&g.batch)) {
        const int8_t *lhs = (const int8_t *)l.data + (size_t)g.batch.ia * l_size;
        const int8_t *rhs = (const int8_t *)r.data + (size_t)g.batch.ib * r_size;
        for (uint32_t m = 0; m < m_n; m++) {
            for (uint32_t n = 0; n < n_n; n++) {
                const int8_t *lp = lhs + m * lm, *rp = rhs + n * rn;
                uint32_t acc = 0; /* wraps modulo 2^32, as the int32 accumulator of the C kernel */
                for (uint32_t k = 0; k < k_n; k++, lp += lk, rp += rk) {
                    acc += (uint32_t)(((int32_t)*lp + l_off) * ((int32_t)*rp + r_off));
                }
                int32_t sacc;
                memcpy(&sacc, &acc, 4);
                *out++ = mf_requant_s8(sacc, mult, shift, out_off, lo, hi);
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_batch_matmul_s8 = {12, "batch_matmul_s8", 2, 2, 0, "iiiiiiiii", check, run};
