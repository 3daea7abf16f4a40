/*
 * batch_matmul_s8: int8 batched matrix multiply, bit-exact with CMSIS-NN arm_batch_matmul_s8 and
 * mcuforge.kernels.batch_matmul_s8. lhs (..., M, K) [adj_x: (..., K, M)], rhs (..., K, N)
 * [adj_y: (..., N, K)]; the batch dims broadcast like numpy. The int32 accumulator wraps.
 */
#include "broadcast.h"

enum { A_LHS_OFF, A_RHS_OFF, A_OUT_OFF, A_OUT_MULT, A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX, A_ADJ_X, A_ADJ_Y };

typedef struct {
    uint32_t m, k, n;
    mf_bcast batch; /* over the matrices: ia / ib index lhs / rhs matrices */
} bmm_geometry;

/* The batch dims of t as a tensor of its own (its matrices as elements). */
static void batch_view(const mf_tensor *t, mf_tensor *view) {
    memset(view, 0, sizeof *view);
    view->rank = (uint8_t)(t->rank - 2);
    for (uint32_t k = 0; k + 2 < t->rank; k++) view->shape[k] = t->shape[k];
}

static int geometry(const mf_call *c, const mf_tensor *l, const mf_tensor *r, bmm_geometry *g) {
    mf_tensor lb, rb;
    const int adj_x = mf_attr_int(c, A_ADJ_X) != 0, adj_y = mf_attr_int(c, A_ADJ_Y) != 0;
    const uint32_t l0 = l->shape[l->rank - 2], l1 = l->shape[l->rank - 1];
    const uint32_t r0 = r->shape[r->rank - 2], r1 = r->shape[r->rank - 1];
    g->m = adj_x ? l1 : l0;
    g->k = adj_x ? l0 : l1;
    g->n = adj_y ? r0 : r1;
    if ((adj_y ? r1 : r0) != g->k) return 0;
    batch_view(l, &lb);
    batch_view(r, &rb);
    return mf_bcast_init(&g->batch, &lb, &rb);
}

static mf_status check(const mf_call *c) {
    mf_tensor l, r, o;
    bmm_geometry g;
    int32_t lo, hi;
    if (!mf_call_binary_s8(c, &l, &r, &o)) return MF_ERR_SHAPE;
    if (l.rank < 2 || r.rank < 2) return MF_ERR_SHAPE;
    if (!geometry(c, &l, &r, &g)) return MF_ERR_SHAPE;
    const uint64_t mn = (uint64_t)g.m * g.n; /* < 2^64; with mn < 2^32 the product below cannot wrap */
    if (mn > 0xFFFFFFFFull || (uint64_t)g.batch.numel * mn != o.numel) return MF_ERR_SHAPE;
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
    bmm_geometry g;
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
