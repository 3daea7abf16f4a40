/*
 * batch_matmul_s8: int8 batched matrix multiply, bit-exact with CMSIS-NN arm_batch_matmul_s8 and
 * mcuforge.kernels.batch_matmul_s8. lhs (..., M, K) [adj_x: (..., K, M)], rhs (..., K, N)
 * [adj_y: (..., N, K)]; the batch dims broadcast like numpy. The int32 accumulator wraps.
 *
 * matmul_portable is the statement of the math. The optimized paths compute the same sums modulo
 * 2^32 (every step wraps, so any order of the additions gives the same bits):
 *   rows (lhs and rhs both contiguous along k: no adj_x, adj_y -- attention's Q K^T):
 *     DSP: 2 outputs per loop, 4 k per step: both operands widened with their offsets (SXTAB16),
 *          two SMLADs per output;
 *     MVE: 4 outputs per loop over 16 lanes (tail-predicated), VMLADAVA per output;
 *          sum((l + lo)(r + ro)) = sum(l r) + lo sum(r) + ro sum(l) + K lo ro, the sums by VADDVA;
 *   columns (rhs contiguous along n: no adj_y -- attention's P V):
 *     DSP (lhs contiguous along k): 2 outputs per loop, 4 k per step: the rhs bytes of rows k and
 *          k + 2 (k + 1 and k + 3) packed into one word, so that SXTAB16 pairs them as SMLAD wants;
 *     MVE: 16 outputs per loop as 4 int32 vectors, acc += (l + lo) r by VMLA per k, then
 *          + ro sum(l + lo); requantized 4 lanes at a time.
 * Other layouts (adj_x with adj_y; adj_x on DSP) take the portable path.
 */
#include "broadcast.h"
#include "mf_simd.h"

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

/* One matmul's output stage and layout: element (m, k) of lhs at m * lm + k * lk, (k, n) of rhs at
 * k * rk + n * rn; out row-major (M, N). */
typedef struct {
    uint32_t m, k, n;
    size_t lm, lk, rk, rn;
    int32_t l_off, r_off, out_off, mult, shift, lo, hi;
} bmm_params;

static void matmul_portable(const bmm_params *q, const int8_t *lhs, const int8_t *rhs, int8_t *out) {
    for (uint32_t m = 0; m < q->m; m++) {
        for (uint32_t n = 0; n < q->n; n++) {
            const int8_t *lp = lhs + m * q->lm, *rp = rhs + n * q->rn;
            uint32_t acc = 0; /* wraps modulo 2^32, as the int32 accumulator of the C kernel */
            for (uint32_t k = 0; k < q->k; k++, lp += q->lk, rp += q->rk) {
                acc += (uint32_t)(((int32_t)*lp + q->l_off) * ((int32_t)*rp + q->r_off));
            }
            *out++ = mf_requant_s8(mf_wrap32(acc), q->mult, q->shift, q->out_off, q->lo, q->hi);
        }
    }
}

#if defined(MF_USE_DSP)

static inline int8_t bmm_out(const bmm_params *q, uint32_t acc) {
    return mf_clamp_s8(mf_add_wrap(mf_requantize_inline(mf_wrap32(acc), q->mult, q->shift), q->out_off), q->lo, q->hi);
}

/* sum over k < n of (l[k] + lo)(r[k * r_step] + ro), wrapping: the scalar tails */
static inline uint32_t dot_tail(const int8_t *l, const int8_t *r, uint32_t n, size_t r_step, int32_t lo, int32_t ro) {
    uint32_t acc = 0;
    for (uint32_t k = 0; k < n; k++) acc += (uint32_t)(((int32_t)l[k] + lo) * ((int32_t)r[k * r_step] + ro));
    return acc;
}

/* Rows: out[m][n] = row m of lhs . row n of rhs (both contiguous along k), two outputs per loop. */
static void matmul_rows(const bmm_params *q, const int8_t *lhs, const int8_t *rhs, int8_t *out) {
    const int32_t lo16 = mf_pack_off16(q->l_off), ro16 = mf_pack_off16(q->r_off);
    const uint32_t k4 = q->k & ~3u, tail = q->k - k4;
    for (uint32_t m = 0; m < q->m; m++, out += q->n) {
        const int8_t *l = lhs + m * q->lm;
        for (uint32_t n = 0; n < q->n; n += 2) {
            const int8_t *r0 = rhs + n * q->rn, *r1 = n + 1 < q->n ? r0 + q->rn : r0; /* r1 = r0: unwritten */
            int32_t a0 = 0, a1 = 0;
            for (uint32_t k = 0; k < k4; k += 4) {
                const int32_t lv = mf_ld32(l + k), v0 = mf_ld32(r0 + k), v1 = mf_ld32(r1 + k);
                const int32_t l02 = mf_sxtab16(lo16, lv), l13 = mf_sxtab16_ror8(lo16, lv);
                a0 = mf_smlad(l02, mf_sxtab16(ro16, v0), a0);
                a0 = mf_smlad(l13, mf_sxtab16_ror8(ro16, v0), a0);
                a1 = mf_smlad(l02, mf_sxtab16(ro16, v1), a1);
                a1 = mf_smlad(l13, mf_sxtab16_ror8(ro16, v1), a1);
            }
            uint32_t s0 = (uint32_t)a0, s1 = (uint32_t)a1;
            if (tail) {
                s0 += dot_tail(l + k4, r0 + k4, tail, 1, q->l_off, q->r_off);
                s1 += dot_tail(l + k4, r1 + k4, tail, 1, q->l_off, q->r_off);
            }
            out[n] = bmm_out(q, s0);
            if (n + 1 < q->n) out[n + 1] = bmm_out(q, s1);
        }
    }
}

/* Columns: rhs contiguous along n (row k at k * rk), lhs along k; four outputs per loop, four k per
 * step. SXTAB16 on rhs row k's word [r(k,n) .. r(k,n+3)] gives (r(k,n), r(k,n+2)); packed with row
 * k + 2's (PKHBT/PKHTB) they make (r(k,n), r(k+2,n)) and (r(k,n+2), r(k+2,n+2)), the lanes of the
 * lhs word's (l(k), l(k+2)); rows k + 1 and k + 3 likewise with the rotated bytes. */
static void matmul_cols(const bmm_params *q, const int8_t *lhs, const int8_t *rhs, int8_t *out) {
    const int32_t lo16 = mf_pack_off16(q->l_off), ro16 = mf_pack_off16(q->r_off);
    const uint32_t k4 = q->k & ~3u, n4 = q->n & ~3u, tail = q->k - k4;
    const size_t rk = q->rk;
    for (uint32_t m = 0; m < q->m; m++, out += q->n) {
        const int8_t *l = lhs + m * q->lm;
        for (uint32_t n = 0; n < n4; n += 4) {
            const int8_t *r = rhs + n;
            int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            for (uint32_t k = 0; k < k4; k += 4, r += 4 * rk) {
                const int32_t lv = mf_ld32(l + k);
                const int32_t l02 = mf_sxtab16(lo16, lv), l13 = mf_sxtab16_ror8(lo16, lv);
                const int32_t w0 = mf_ld32(r), w1 = mf_ld32(r + rk), w2 = mf_ld32(r + 2 * rk), w3 = mf_ld32(r + 3 * rk);
                int32_t u = mf_sxtab16(ro16, w0), v = mf_sxtab16(ro16, w2); /* columns n, n + 2 of rows k, k + 2 */
                a0 = mf_smlad(l02, mf_pkhbt(u, v), a0);
                a2 = mf_smlad(l02, mf_pkhtb(u, v), a2);
                u = mf_sxtab16_ror8(ro16, w0), v = mf_sxtab16_ror8(ro16, w2); /* columns n + 1, n + 3 */
                a1 = mf_smlad(l02, mf_pkhbt(u, v), a1);
                a3 = mf_smlad(l02, mf_pkhtb(u, v), a3);
                u = mf_sxtab16(ro16, w1), v = mf_sxtab16(ro16, w3); /* rows k + 1, k + 3 */
                a0 = mf_smlad(l13, mf_pkhbt(u, v), a0);
                a2 = mf_smlad(l13, mf_pkhtb(u, v), a2);
                u = mf_sxtab16_ror8(ro16, w1), v = mf_sxtab16_ror8(ro16, w3);
                a1 = mf_smlad(l13, mf_pkhbt(u, v), a1);
                a3 = mf_smlad(l13, mf_pkhtb(u, v), a3);
            }
            uint32_t s[4] = {(uint32_t)a0, (uint32_t)a1, (uint32_t)a2, (uint32_t)a3};
            for (uint32_t i = 0; i < 4; i++) {
                if (tail) s[i] += dot_tail(l + k4, r + i, tail, rk, q->l_off, q->r_off);
                out[n + i] = bmm_out(q, s[i]);
            }
        }
        for (uint32_t n = n4; n < q->n; n++) out[n] = bmm_out(q, dot_tail(l, rhs + n, q->k, rk, q->l_off, q->r_off));
    }
}

static int matmul_fast(const bmm_params *q, const int8_t *lhs, const int8_t *rhs, int8_t *out) {
    if (q->lk == 1 && q->rk == 1) {
        matmul_rows(q, lhs, rhs, out);
    } else if (q->lk == 1 && q->rn == 1) {
        matmul_cols(q, lhs, rhs, out);
    } else {
        return 0;
    }
    return 1;
}

#elif defined(MF_USE_MVE)

/* Four outputs (lanes), requantized as one vector (the multiplier checked not INT32_MIN) into
 * out[0 .. count) (count <= 4). */
static inline void bmm_out4(const bmm_params *q, int32x4_t acc, int8_t *out, uint32_t count) {
    int32x4_t v = vaddq_n_s32(mf_requantize_x4_n(acc, q->mult, q->shift), q->out_off);
    v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(q->lo)), vdupq_n_s32(q->hi));
    vstrbq_p_s32(out, v, vctp32q(count));
}

/* Rows: sum((l + lo)(r + ro)) = sum(l r) + lo sum(r) + ro sum(l) + K lo ro. Four rows n of rhs per
 * block: their sums once per block, then for every lhs row m four VMLADAVAs (and one VADDVA for
 * sum(l)) per 16 k, sharing the lhs load. */
static void matmul_rows(const bmm_params *q, const int8_t *lhs, const int8_t *rhs, int8_t *out) {
    const uint32_t k16 = q->k >> 4, tail = q->k & 15u;
    const mve_pred16_t pt = vctp8q(tail);
    const uint32_t klr = (uint32_t)q->k * (uint32_t)q->l_off * (uint32_t)q->r_off;
    for (uint32_t n = 0; n < q->n; n += 4) {
        const uint32_t count = q->n - n < 4u ? q->n - n : 4u;
        const int8_t *r0 = rhs + n * q->rn;
        const int8_t *r1 = count > 1 ? r0 + q->rn : r0, *r2 = count > 2 ? r0 + 2 * q->rn : r0;
        const int8_t *r3 = count > 3 ? r0 + 3 * q->rn : r0;
        int32_t rs[4] = {0, 0, 0, 0};
        for (int32_t left = (int32_t)q->k, k = 0; left > 0; left -= 16, k += 16) {
            const mve_pred16_t p = vctp8q((uint32_t)left);
            rs[0] = vaddvaq_s8(rs[0], vldrbq_z_s8(r0 + k, p));
            rs[1] = vaddvaq_s8(rs[1], vldrbq_z_s8(r1 + k, p));
            rs[2] = vaddvaq_s8(rs[2], vldrbq_z_s8(r2 + k, p));
            rs[3] = vaddvaq_s8(rs[3], vldrbq_z_s8(r3 + k, p));
        }
        /* lo sum(r) + K lo ro, per lane (wrapping) */
        const int32x4_t corr = vaddq_n_s32(vmulq_n_s32(vldrwq_s32(rs), q->l_off), mf_wrap32(klr));
        for (uint32_t m = 0; m < q->m; m++) {
            const int8_t *lp = lhs + m * q->lm, *p0 = r0, *p1 = r1, *p2 = r2, *p3 = r3;
            int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0, ls = 0;
            for (uint32_t i = k16; i > 0; i--) {
                const int8x16_t lv = vldrbq_s8(lp);
                lp += 16;
                ls = vaddvaq_s8(ls, lv);
                d0 = vmladavaq_s8(d0, lv, vldrbq_s8(p0));
                d1 = vmladavaq_s8(d1, lv, vldrbq_s8(p1));
                d2 = vmladavaq_s8(d2, lv, vldrbq_s8(p2));
                d3 = vmladavaq_s8(d3, lv, vldrbq_s8(p3));
                p0 += 16;
                p1 += 16;
                p2 += 16;
                p3 += 16;
            }
            if (tail) {
                const int8x16_t lv = vldrbq_z_s8(lp, pt);
                ls = vaddvaq_s8(ls, lv);
                d0 = vmladavaq_s8(d0, lv, vldrbq_z_s8(p0, pt));
                d1 = vmladavaq_s8(d1, lv, vldrbq_z_s8(p1, pt));
                d2 = vmladavaq_s8(d2, lv, vldrbq_z_s8(p2, pt));
                d3 = vmladavaq_s8(d3, lv, vldrbq_z_s8(p3, pt));
            }
            int32x4_t acc = vsetq_lane_s32(d0, vdupq_n_s32(0), 0);
            acc = vsetq_lane_s32(d1, acc, 1);
            acc = vsetq_lane_s32(d2, acc, 2);
            acc = vsetq_lane_s32(d3, acc, 3);
            acc = vaddq_s32(vaddq_s32(acc, corr), vdupq_n_s32(mf_wrap32((uint32_t)q->r_off * (uint32_t)ls)));
            bmm_out4(q, acc, out + m * q->n + n, count);
        }
    }
}

/* acc[j] += (l + lo) * r[j], j < 16, rhs row r contiguous: unpredicated (full) or predicated (a tail of
 * `left` < 16 outputs). */
#define BMM_COLS_STEP(LOAD)                                                                                   \
    do {                                                                                                      \
        a0 = vmlaq_n_s32(a0, LOAD(r, 0), lk);                                                                 \
        a1 = vmlaq_n_s32(a1, LOAD(r + 4, 1), lk);                                                             \
        a2 = vmlaq_n_s32(a2, LOAD(r + 8, 2), lk);                                                             \
        a3 = vmlaq_n_s32(a3, LOAD(r + 12, 3), lk);                                                            \
    } while (0)
#define BMM_FULL(ptr, i) vldrbq_s32(ptr)
#define BMM_PART(ptr, i) vldrbq_z_s32(ptr, vctp32q((uint32_t)(left > 4 * (i) ? left - 4 * (i) : 0)))

/* Columns: rhs contiguous along n. Sixteen outputs per loop as four int32 vectors: acc += (l + lo) r
 * per k (VMLA by a scalar), starting from ro sum(l + lo). */
static void matmul_cols(const bmm_params *q, const int8_t *lhs, const int8_t *rhs, int8_t *out) {
    for (uint32_t m = 0; m < q->m; m++, out += q->n) {
        const int8_t *l = lhs + m * q->lm;
        uint32_t lsum = 0;
        for (uint32_t k = 0; k < q->k; k++) lsum += (uint32_t)((int32_t)l[k * q->lk] + q->l_off);
        const int32x4_t start = vdupq_n_s32(mf_wrap32((uint32_t)q->r_off * lsum));
        for (uint32_t n = 0; n < q->n; n += 16) {
            const int32_t left = (int32_t)(q->n - n);
            int32x4_t a0 = start, a1 = start, a2 = start, a3 = start;
            const int8_t *r = rhs + n, *lp = l;
            if (left >= 16) {
                for (uint32_t k = q->k; k > 0; k--, r += q->rk, lp += q->lk) {
                    const int32_t lk = (int32_t)*lp + q->l_off;
                    BMM_COLS_STEP(BMM_FULL);
                }
            } else {
                for (uint32_t k = q->k; k > 0; k--, r += q->rk, lp += q->lk) {
                    const int32_t lk = (int32_t)*lp + q->l_off;
                    BMM_COLS_STEP(BMM_PART);
                }
            }
            const uint32_t count = left < 16 ? (uint32_t)left : 16u;
            bmm_out4(q, a0, out + n, count);
            if (count > 4) bmm_out4(q, a1, out + n + 4, count - 4);
            if (count > 8) bmm_out4(q, a2, out + n + 8, count - 8);
            if (count > 12) bmm_out4(q, a3, out + n + 12, count - 12);
        }
    }
}

static int matmul_fast(const bmm_params *q, const int8_t *lhs, const int8_t *rhs, int8_t *out) {
    if (q->mult == INT32_MIN) return 0; /* VQRDMULH saturates where arm_nn_requantize wraps */
    if (q->lk == 1 && q->rk == 1) {
        matmul_rows(q, lhs, rhs, out);
    } else if (q->rn == 1) {
        matmul_cols(q, lhs, rhs, out);
    } else {
        return 0;
    }
    return 1;
}

#endif

static mf_status run(const mf_call *c) {
    mf_tensor l, r, o;
    mf_bmm_geometry g;
    mf_call_binary_s8(c, &l, &r, &o);
    geometry(c, &l, &r, &g);
    const int adj_x = mf_attr_int(c, A_ADJ_X) != 0, adj_y = mf_attr_int(c, A_ADJ_Y) != 0;
    bmm_params q;
    q.m = g.m;
    q.k = g.k;
    q.n = g.n;
    q.lm = adj_x ? 1u : g.k;
    q.lk = adj_x ? g.m : 1u;
    q.rk = adj_y ? 1u : g.n;
    q.rn = adj_y ? g.k : 1u;
    q.l_off = mf_attr_int(c, A_LHS_OFF);
    q.r_off = mf_attr_int(c, A_RHS_OFF);
    q.out_off = mf_attr_int(c, A_OUT_OFF);
    q.mult = mf_attr_int(c, A_OUT_MULT);
    q.shift = mf_attr_int(c, A_OUT_SHIFT);
    q.lo = mf_attr_int(c, A_ACT_MIN);
    q.hi = mf_attr_int(c, A_ACT_MAX);
    const size_t l_size = (size_t)g.m * g.k, r_size = (size_t)g.k * g.n, o_size = (size_t)g.m * g.n;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t b = 0; b < g.batch.numel; b++, mf_bcast_step(&g.batch), out += o_size) {
        const int8_t *lhs = (const int8_t *)l.data + (size_t)g.batch.ia * l_size;
        const int8_t *rhs = (const int8_t *)r.data + (size_t)g.batch.ib * r_size;
#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
        if (matmul_fast(&q, lhs, rhs, out)) continue;
#endif
        matmul_portable(&q, lhs, rhs, out);
    }
    return MF_OK;
}

const mf_kernel mf_kernel_batch_matmul_s8 = {MF_KIND_HEAD_batch_matmul_s8, check, run};
