/*
 * The int16 x int8 dot products of the s16 weighted kernels (conv2d_s16, fully_connected_s16), exact
 * in int64 as CMSIS-NN's s16 kernels compute it. Portable C; a DSP path (SMLALD: two 16 x 16 products
 * added into a 64-bit accumulator per instruction, the weights widened by SXTB16 and paired by
 * PKHBT/PKHTB as CMSIS-NN's read_and_pad does); an MVE path (VMLALDAVA over 8 int16 lanes, the
 * weights widened by the load, tail-predicated). Every path gives the exact sum.
 *
 * mf_dot_s16_rows computes several weight rows against one input at once, each input load shared:
 * MVE 4 rows with int32 VMLADAVA sums over blocks of MF_S16_BLOCK columns (at most 511 products of
 * |x * w| <= 2^22: no int32 overflow, as CMSIS-NN's 512-column blocks), added into int64 per block;
 * DSP 2 rows of SMLALD.
 */
#include "mf_s16.h"
#include "mf_simd.h"

#if defined(MF_USE_MVE)

/* 4 rows, or fewer (the rows past n repeat row 0, unwritten). */
static void rows4(const int16_t *x, const int8_t *w, uint32_t depth, uint32_t n, int64_t *acc) {
    const int8_t *w0 = w, *w1 = n > 1 ? w + depth : w, *w2 = n > 2 ? w + 2 * depth : w;
    const int8_t *w3 = n > 3 ? w + 3 * depth : w;
    int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (uint32_t start = 0; start < depth; start += MF_S16_BLOCK) {
        const uint32_t end = depth - start < MF_S16_BLOCK ? depth : start + MF_S16_BLOCK;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (uint32_t i = start; i < end; i += 8) {
            const mve_pred16_t p = vctp16q(end - i);
            const int16x8_t xv = vldrhq_z_s16(x + i, p);
            a0 = vmladavaq_s16(a0, xv, vldrbq_z_s16(w0 + i, p));
            a1 = vmladavaq_s16(a1, xv, vldrbq_z_s16(w1 + i, p));
            a2 = vmladavaq_s16(a2, xv, vldrbq_z_s16(w2 + i, p));
            a3 = vmladavaq_s16(a3, xv, vldrbq_z_s16(w3 + i, p));
        }
        t0 += a0;
        t1 += a1;
        t2 += a2;
        t3 += a3;
    }
    acc[0] = t0;
    if (n > 1) acc[1] = t1;
    if (n > 2) acc[2] = t2;
    if (n > 3) acc[3] = t3;
}

void mf_dot_s16_rows(const int16_t *x, const int8_t *w, uint32_t depth, uint32_t n_rows, int64_t *acc) {
    for (uint32_t r = 0; r < n_rows; r += 4) {
        rows4(x, w + (size_t)r * depth, depth, n_rows - r < 4 ? n_rows - r : 4, acc + r);
    }
}

/* The int32 output stage of mf_s16_mve_cols4 applies (mf_s16_mve_ok): no int32-bias form, every shift in
 * [-17, -1], and every filter's exact sum plus its bias inside int32 -- |sum + bias| <= 2^15 sum(|w|) +
 * |bias| < 2^31 (first by depth * 2^22 alone, else the filter's own sum of |w| by VABAV). Then the int32
 * VMLADAVA sums are exact (no partial sum leaves int32 either), and arm_nn_requantize_s64 of v = sum + bias,
 * floor((v * rm / 2^n + 1) / 2) with n = 14 - shift in [15, 31] (the int32 casts never wrap: |v * rm| <
 * 2^46), equals floor((v * rm + 2^n) / 2^(n + 1)) = VRMULH(v, rm << (31 - n)): (v * M + 2^31) >> 32. */
int mf_s16_mve_ok(const mf_requant_s16 *q, const int8_t *w, uint32_t depth, uint32_t oc_n, uint32_t tap_step) {
    if (q->int32_bias || depth == 0) return 0;
    const uint32_t n_params = q->per_channel ? oc_n : 1u;
    for (uint32_t k = 0; k < n_params; k++) {
        if (q->shift[k] < -17 || q->shift[k] > -1) return 0;
    }
    const int64_t limit = INT32_MAX;
    for (uint32_t oc = 0; oc < oc_n; oc++) {
        int64_t b = 0;
        if (q->bias) memcpy(&b, q->bias + 8u * oc, 8);
        const int64_t mag = b < 0 ? -b : b;
        if ((int64_t)depth * (1 << 22) + mag <= limit) continue;
        uint32_t l1 = 0; /* sum(|w|) of the filter: VABAV against 0 (no int8 wrap of |-128|) */
        if (tap_step == 1) {
            const int8_t *wp = w + (size_t)oc * depth;
            for (int32_t left = (int32_t)depth; left > 0; left -= 16, wp += 16) {
                const mve_pred16_t p = vctp8q((uint32_t)left);
                l1 = vabavq_p_s8(l1, vldrbq_z_s8(wp, p), vdupq_n_s8(0), p);
            }
        } else {
            for (uint32_t t = 0; t < depth; t++) {
                const int32_t v = w[(size_t)t * tap_step + oc];
                l1 += (uint32_t)(v < 0 ? -v : v);
            }
        }
        if ((int64_t)l1 * 32768 + mag > limit) return 0;
    }
    return 1;
}

int32_t mf_s16_mve_mult(const mf_requant_s16 *q, uint32_t k) {
    const int32_t m = q->mult[k]; /* mf_reduce_multiplier in int32: m + 2^15 cannot overflow below 0x7FFF0000 */
    const int32_t rm = m < 0x7FFF0000 ? (m + (1 << 15)) >> 16 : 0x7FFF;
    return (int32_t)((uint32_t)rm << (17 + q->shift[k]));
}

/* The four sums over depth values of filter w and patches x0..x3, added into a0..a3: one tail-predicated
 * loop (WLSTP/LETP) of 8 int16 lanes, the weights widened by the load, loads and VMLADAVAs interleaved
 * (the Cortex-M55 overlaps a load with the multiply-accumulate after it). VLDRB.S16 takes a low base register ("l"). GCC's own loop groups the loads
 * and keeps a separate counter. An unoptimized build (too few registers for the asm) takes the C loop. */
static inline __attribute__((always_inline)) void s16_mve_sums4(const int8_t *w, const int16_t *x0, const int16_t *x1,
                                                                 const int16_t *x2, const int16_t *x3, uint32_t depth,
                                                                 int32_t *s0, int32_t *s1, int32_t *s2, int32_t *s3) {
    int32_t a0 = *s0, a1 = *s1, a2 = *s2, a3 = *s3;
#if defined(__OPTIMIZE__)
    __asm__ volatile("   wlstp.16     lr, %[n], 1f\n"
                     "2: vldrb.s16    q0, [%[w]], #8\n"
                     "   vldrh.s16    q1, [%[x0]], #16\n"
                     "   vmladava.s16 %[a0], q1, q0\n"
                     "   vldrh.s16    q2, [%[x1]], #16\n"
                     "   vmladava.s16 %[a1], q2, q0\n"
                     "   vldrh.s16    q1, [%[x2]], #16\n"
                     "   vmladava.s16 %[a2], q1, q0\n"
                     "   vldrh.s16    q2, [%[x3]], #16\n"
                     "   vmladava.s16 %[a3], q2, q0\n"
                     "   letp         lr, 2b\n"
                     "1:\n"
                     : [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2), [a3] "+Te"(a3), [w] "+l"(w), [x0] "+r"(x0),
                       [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3)
                     : [n] "r"(depth)
                     : "q0", "q1", "q2", "lr", "memory");
#else
    for (int32_t left = (int32_t)depth; left > 0; left -= 8) {
        const mve_pred16_t p = vctp16q((uint32_t)left);
        const int16x8_t wv = vldrbq_z_s16(w, p); /* zero lanes add nothing */
        a0 = vmladavaq_s16(a0, vldrhq_z_s16(x0, p), wv);
        a1 = vmladavaq_s16(a1, vldrhq_z_s16(x1, p), wv);
        a2 = vmladavaq_s16(a2, vldrhq_z_s16(x2, p), wv);
        a3 = vmladavaq_s16(a3, vldrhq_z_s16(x3, p), wv);
        w += 8, x0 += 8, x1 += 8, x2 += 8, x3 += 8;
    }
#endif
    *s0 = a0, *s1 = a1, *s2 = a2, *s3 = a3;
}

void mf_s16_mve_cols4(const mf_requant_s16 *q, const int16_t *const *cols, uint32_t n_cols, const int8_t *w,
                      uint32_t depth, uint32_t oc0, uint32_t count, int16_t *out, uint32_t out_step) {
    const int16_t *c0 = cols[0], *c1 = cols[n_cols > 1 ? 1 : 0], *c2 = cols[n_cols > 2 ? 2 : 0];
    const int16_t *c3 = cols[n_cols > 3 ? 3 : 0];
    /* pixel i's output at byte offset 2 i out_step; the lanes built the way the sums are (mf_mve_lanes4) */
    const uint32x4_t offs = vreinterpretq_u32_s32(
        mf_mve_lanes4(0, (int32_t)(2u * out_step), (int32_t)(4u * out_step), (int32_t)(6u * out_step)));
    const mve_pred16_t store = vcmphiq_u32(vdupq_n_u32(2u * out_step * n_cols), offs);
    const int32x4_t lo = vdupq_n_s32(q->lo), hi = vdupq_n_s32(q->hi);
    int32_t mult = mf_s16_mve_mult(q, 0);
    for (uint32_t f = 0; f < count; f++, w += depth) {
        const uint32_t oc = oc0 + f;
        int32_t a0 = 0, a1, a2, a3;
        if (q->bias) memcpy(&a0, q->bias + 8u * oc, 4); /* the low word: |bias| < 2^31 (mf_s16_mve_ok) */
        a1 = a2 = a3 = a0;
        s16_mve_sums4(w, c0, c1, c2, c3, depth, &a0, &a1, &a2, &a3);
        if (q->per_channel) mult = mf_s16_mve_mult(q, oc);
        int32x4_t v = vrmulhq_s32(mf_mve_lanes4(a0, a1, a2, a3), vdupq_n_s32(mult));
        v = vminq_s32(vmaxq_s32(v, lo), hi);
        vstrhq_scatter_offset_p_s32(out + oc, offs, v, store);
    }
}

/* s16_mve_sums4 with one input x and four filters w0..w3: the input load shared. */
static inline __attribute__((always_inline)) void s16_mve_rows_sums4(const int16_t *x, const int8_t *w0, const int8_t *w1,
                                                                      const int8_t *w2, const int8_t *w3, uint32_t depth,
                                                                      int32_t *s0, int32_t *s1, int32_t *s2, int32_t *s3) {
    int32_t a0 = *s0, a1 = *s1, a2 = *s2, a3 = *s3;
#if defined(__OPTIMIZE__)
    __asm__ volatile("   wlstp.16     lr, %[n], 1f\n"
                     "2: vldrh.s16    q0, [%[x]], #16\n"
                     "   vldrb.s16    q1, [%[w0]], #8\n"
                     "   vmladava.s16 %[a0], q0, q1\n"
                     "   vldrb.s16    q2, [%[w1]], #8\n"
                     "   vmladava.s16 %[a1], q0, q2\n"
                     "   vldrb.s16    q1, [%[w2]], #8\n"
                     "   vmladava.s16 %[a2], q0, q1\n"
                     "   vldrb.s16    q2, [%[w3]], #8\n"
                     "   vmladava.s16 %[a3], q0, q2\n"
                     "   letp         lr, 2b\n"
                     "1:\n"
                     : [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2), [a3] "+Te"(a3), [x] "+r"(x), [w0] "+l"(w0),
                       [w1] "+l"(w1), [w2] "+l"(w2), [w3] "+l"(w3)
                     : [n] "r"(depth)
                     : "q0", "q1", "q2", "lr", "memory");
#else
    for (int32_t left = (int32_t)depth; left > 0; left -= 8) {
        const mve_pred16_t p = vctp16q((uint32_t)left);
        const int16x8_t xv = vldrhq_z_s16(x, p); /* zero lanes add nothing */
        a0 = vmladavaq_s16(a0, xv, vldrbq_z_s16(w0, p));
        a1 = vmladavaq_s16(a1, xv, vldrbq_z_s16(w1, p));
        a2 = vmladavaq_s16(a2, xv, vldrbq_z_s16(w2, p));
        a3 = vmladavaq_s16(a3, xv, vldrbq_z_s16(w3, p));
        x += 8, w0 += 8, w1 += 8, w2 += 8, w3 += 8;
    }
#endif
    *s0 = a0, *s1 = a1, *s2 = a2, *s3 = a3;
}

/* mf_s16_mve_rows4 for any requantization (no mf_s16_mve_ok needed: the batch-1 fully connected path calls it
 * without that layer-wide check, whose per-filter bounds cost more than the products on a small layer). Whole
 * groups of 4 filters of depth <= MF_S16_BLOCK with every shift in [-17, -1] and no int32-bias form: the four int32
 * VMLADAVA sums (at most 504 products of |x * w| <= 2^22: exact), the int64 biases added in int32 lanes where
 * they fit (the high word the low word's sign, VQADD equal to VADD: no overflow), and the VRMULH output stage of
 * mf_s16_mve_cols4 (the same bits, as mf_s16_mve_ok derives, for any sum + bias inside int32). Any other group
 * (the last one of fewer than 4, a deeper row, a sum that leaves int32): int32 block sums added into int64 and
 * mf_requant_s16_channel per channel (CMSIS-NN's int64 arithmetic). */
void mf_s16_mve_rows4(const mf_requant_s16 *q, const int16_t *x, const int8_t *w, uint32_t depth, uint32_t oc_n,
                      int16_t *out) {
    const int32x4_t lo = vdupq_n_s32(q->lo), hi = vdupq_n_s32(q->hi);
    const int fast = !q->int32_bias && depth <= MF_S16_BLOCK;
    /* lane i of mf_mve_lanes4(a0, a1, a2, a3) holds channel oc + i's sum wherever the lanes put it: the output
     * (int16, byte offset 2 i) and the bias words (low at byte 8 i, high at 8 i + 4) go by offsets built the same way */
    const uint32x4_t out_offs = vreinterpretq_u32_s32(mf_mve_lanes4(0, 2, 4, 6));
    const uint32x4_t b_lo = vreinterpretq_u32_s32(mf_mve_lanes4(0, 8, 16, 24));
    const uint32x4_t b_hi = vreinterpretq_u32_s32(mf_mve_lanes4(4, 12, 20, 28));
    for (uint32_t oc = 0; oc < oc_n; oc += 4, w += 4 * depth) {
        const uint32_t n = oc_n - oc < 4 ? oc_n - oc : 4;
        const int8_t *w1 = w + (n > 1 ? depth : 0), *w2 = w + (n > 2 ? 2 * depth : 0);
        const int8_t *w3 = w + (n > 3 ? 3 * depth : 0);
        if (fast && n == 4) {
            int32_t mult[4];
            int sh_ok = 1;
            for (uint32_t k = 0; k < 4; k++) {
                const uint32_t ck = q->per_channel ? oc + k : 0;
                const int32_t sh = q->shift[ck];
                sh_ok &= sh >= -17 && sh <= -1;
                mult[k] = sh_ok ? mf_s16_mve_mult(q, ck) : 0;
            }
            if (sh_ok) {
                int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
                s16_mve_rows_sums4(x, w, w1, w2, w3, depth, &a0, &a1, &a2, &a3);
                int32x4_t v = mf_mve_lanes4(a0, a1, a2, a3);
                mve_pred16_t fits = 0xFFFF;
                if (q->bias) { /* the 4 int64 biases' low and high words */
                    const uint8_t *bp = q->bias + 8u * oc;
                    const int32x4_t bl = vldrwq_gather_offset_s32((const int32_t *)(const void *)bp, b_lo);
                    const int32x4_t bh = vldrwq_gather_offset_s32((const int32_t *)(const void *)bp, b_hi);
                    const int32x4_t sum = vqaddq_s32(v, bl);
                    fits = vcmpeqq_s32(bh, vshrq_n_s32(bl, 31)) & vcmpeqq_s32(sum, vaddq_s32(v, bl));
                    v = sum;
                }
                if (fits == 0xFFFF) {
                    v = vrmulhq_s32(v, mf_mve_lanes4(mult[0], mult[1], mult[2], mult[3]));
                    vstrhq_scatter_offset_s32(out + oc, out_offs, vminq_s32(vmaxq_s32(v, lo), hi));
                    continue;
                }
            }
        }
        int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
        for (uint32_t start = 0; start < depth; start += MF_S16_BLOCK) {
            const uint32_t len = depth - start < MF_S16_BLOCK ? depth - start : MF_S16_BLOCK;
            int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            s16_mve_rows_sums4(x + start, w + start, w1 + start, w2 + start, w3 + start, len, &a0, &a1, &a2, &a3);
            t0 += a0, t1 += a1, t2 += a2, t3 += a3;
        }
        out[oc] = mf_requant_s16_channel(q, oc, t0);
        if (n > 1) out[oc + 1] = mf_requant_s16_channel(q, oc + 1, t1);
        if (n > 2) out[oc + 2] = mf_requant_s16_channel(q, oc + 2, t2);
        if (n > 3) out[oc + 3] = mf_requant_s16_channel(q, oc + 3, t3);
    }
}

int64_t mf_dot_s16(const int16_t *x, const int8_t *w, uint32_t n) {
    int64_t acc = 0;
    for (int32_t left = (int32_t)n; left > 0; left -= 8) {
        const mve_pred16_t p = vctp16q((uint32_t)left);
        acc = vmlaldavaq_s16(acc, vldrhq_z_s16(x, p), vldrbq_z_s16(w, p));
        x += 8;
        w += 8;
    }
    return acc;
}

#elif defined(MF_USE_DSP)


int64_t mf_dot_s16(const int16_t *x, const int8_t *w, uint32_t n) {
    int64_t acc = 0;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const int32_t ww = mf_ld32(w + i);
        const int32_t w02 = mf_sxtb16(ww), w13 = mf_sxtb16_ror8(ww); /* (w0, w2), (w1, w3) */
        acc = __smlald(mf_ld32(x + i), mf_pkhbt(w02, w13), acc);      /* x0 w0 + x1 w1 */
        acc = __smlald(mf_ld32(x + i + 2), mf_pkhtb(w02, w13), acc);  /* x2 w2 + x3 w3 */
    }
    for (; i < n; i++) acc += (int32_t)x[i] * w[i];
    return acc;
}

void mf_dot_s16_rows(const int16_t *x, const int8_t *w, uint32_t depth, uint32_t n_rows, int64_t *acc) {
    uint32_t r = 0;
    for (; r + 2 <= n_rows; r += 2) { /* two rows: each pair of input words loaded once */
        const int8_t *w0 = w + (size_t)r * depth, *w1 = w0 + depth;
        int64_t a0 = 0, a1 = 0;
        uint32_t i = 0;
        for (; i + 4 <= depth; i += 4) {
            const int32_t x01 = mf_ld32(x + i), x23 = mf_ld32(x + i + 2);
            int32_t ww = mf_ld32(w0 + i);
            int32_t w02 = mf_sxtb16(ww), w13 = mf_sxtb16_ror8(ww);
            a0 = __smlald(x01, mf_pkhbt(w02, w13), a0);
            a0 = __smlald(x23, mf_pkhtb(w02, w13), a0);
            ww = mf_ld32(w1 + i);
            w02 = mf_sxtb16(ww);
            w13 = mf_sxtb16_ror8(ww);
            a1 = __smlald(x01, mf_pkhbt(w02, w13), a1);
            a1 = __smlald(x23, mf_pkhtb(w02, w13), a1);
        }
        for (; i < depth; i++) {
            a0 += (int32_t)x[i] * w0[i];
            a1 += (int32_t)x[i] * w1[i];
        }
        acc[r] = a0;
        acc[r + 1] = a1;
    }
    if (r < n_rows) acc[r] = mf_dot_s16(x, w + (size_t)r * depth, depth);
}

#else

int64_t mf_dot_s16(const int16_t *x, const int8_t *w, uint32_t n) {
    int64_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += (int32_t)x[i] * w[i]; /* |product| <= 2^22 */
    return acc;
}

void mf_dot_s16_rows(const int16_t *x, const int8_t *w, uint32_t depth, uint32_t n_rows, int64_t *acc) {
    for (uint32_t r = 0; r < n_rows; r++) acc[r] = mf_dot_s16(x, w + (size_t)r * depth, depth);
}

#endif
