/*
 * The int8 x int4 dot product with an input offset (mf_s4.h), shared by the s4 kernels: portable C, a
 * DSP path (a word of eight packed weights per step, SMLAD on 16-bit lanes) and an MVE path (sixteen
 * weights per step decoded to int8 lanes, VMLADAVA; the offset enters as offset * sum(w) by VADDVA). All
 * give the same int32. On MVE also mf_s4_halves_row: the outputs of one input row on S4_HALVES weights, shared by
 * fully_connected_s4 and conv2d_s4.
 */
#include "mf_s4.h"

#if defined(MF_USE_MVE)

int32_t mf_dot_s4(const int8_t *x, const int8_t *w, uint32_t start, uint32_t n, int32_t x_offset) {
    const uint8_t *p = (const uint8_t *)w + (start >> 1);
    const uint32_t odd = start & 1u;
    int32_t acc = 0, wsum = 0;
    for (uint32_t left = n; left > 0; left = left > 16u ? left - 16u : 0u) {
        const int8x16_t wv = mf_s4_decode16(p, odd, left);
        acc = vmladavaq_s8(acc, vldrbq_z_s8(x, vctp8q(left)), wv);
        wsum = vaddvaq_s8(wsum, wv);
        x += 16;
        p += 8;
    }
    return mf_add_wrap(acc, wsum * x_offset); /* |wsum| <= 2^19, |x_offset| <= 128 */
}

#elif defined(MF_USE_DSP)


int32_t mf_dot_s4(const int8_t *x, const int8_t *w, uint32_t start, uint32_t n, int32_t x_offset) {
    const uint8_t *p = (const uint8_t *)w + (start >> 1);
    const uint32_t odd = start & 1u;
    const int32_t off16 = mf_pack_off16(x_offset);
    int32_t acc = 0, xsum = 0;
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8, p += 4) {
        /* the activations in mf_s4_mac8's lane order: (x0, x4) (x2, x6) (x1, x5) (x3, x7), + offset */
        const int32_t a0 = mf_ld32(x + i), a1 = mf_ld32(x + i + 4);
        const int32_t e0 = mf_sxtab16(off16, a0), e1 = mf_sxtab16(off16, a1);           /* x0 x2, x4 x6 */
        const int32_t o0 = mf_sxtab16_ror8(off16, a0), o1 = mf_sxtab16_ror8(off16, a1); /* x1 x3, x5 x7 */
        int16_t cols[8];
        mf_st32(cols, mf_pkhbt(e0, e1));
        mf_st32(cols + 2, mf_pkhtb(e0, e1));
        mf_st32(cols + 4, mf_pkhbt(o0, o1));
        mf_st32(cols + 6, mf_pkhtb(o0, o1));
        acc = mf_s4_mac8(mf_s4_word(p, odd), cols, acc);
        const int32_t ones = 0x00010001;
        xsum = mf_smlad(o1, ones, mf_smlad(o0, ones, mf_smlad(e1, ones, mf_smlad(e0, ones, xsum))));
    }
    acc = mf_add_wrap(acc, -8 * xsum); /* the weights were read as w + 8 */
    for (; i < n; i++) acc += ((int32_t)x[i] + x_offset) * mf_s4_at(w, start + i);
    return acc;
}

#else

int32_t mf_dot_s4(const int8_t *x, const int8_t *w, uint32_t start, uint32_t n, int32_t x_offset) {
    int32_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += ((int32_t)x[i] + x_offset) * mf_s4_at(w, start + i);
    return acc;
}

#endif

#if defined(MF_USE_MVE)
/* The sums of x with the four S4_HALVES rows at q0 .. q3 (mf_s4.h): per 32 activations two contiguous loads shared
 * by the four rows, each row's 16 bytes split into 16 x its low and high weights (VSHL, VAND) for two VMLADAVAs;
 * the whole blocks in asm (loads, ALU operations and VMLADAVAs alternating: the Cortex-M55 overlaps neighbours of
 * different units; GCC's loop grouped them), the row's last block in C, predicated. a[i]: the true sums. */
static inline __attribute__((always_inline)) void halves4_dot(const int8_t *x, const int8_t *q0, const int8_t *q1,
                                                              const int8_t *q2, const int8_t *q3, uint32_t depth,
                                                              int8x16_t high, const int8x16_t tail[2], int32_t a[4]) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    uint32_t k = 0;
#if defined(__OPTIMIZE__)
    const uint32_t d32 = depth & ~31u;
    if (d32) {
        const int8_t *xp = x;
        __asm__ volatile("   wls          lr, %[iters], 1f\n"
                         "2: vldrb.8      q2, [%[q0]], #16\n"
                         "   vshl.i8      q3, q2, #4\n"
                         "   vldrb.8      q0, [%[x]], #32\n"
                         "   vmladava.s8  %[a0], q0, q3\n"
                         "   vldrb.8      q1, [%[x], #-16]\n"
                         "   vand         q2, q2, %q[high]\n"
                         "   vmladava.s8  %[a0], q1, q2\n"
                         "   vldrb.8      q2, [%[q1]], #16\n"
                         "   vshl.i8      q3, q2, #4\n"
                         "   vmladava.s8  %[a1], q0, q3\n"
                         "   vand         q2, q2, %q[high]\n"
                         "   vmladava.s8  %[a1], q1, q2\n"
                         "   vldrb.8      q2, [%[q2]], #16\n"
                         "   vshl.i8      q3, q2, #4\n"
                         "   vmladava.s8  %[a2], q0, q3\n"
                         "   vand         q2, q2, %q[high]\n"
                         "   vmladava.s8  %[a2], q1, q2\n"
                         "   vldrb.8      q2, [%[q3]], #16\n"
                         "   vshl.i8      q3, q2, #4\n"
                         "   vmladava.s8  %[a3], q0, q3\n"
                         "   vand         q2, q2, %q[high]\n"
                         "   vmladava.s8  %[a3], q1, q2\n"
                         "   le           lr, 2b\n"
                         "1:\n"
                         : [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2), [a3] "+Te"(a3), [x] "+r"(xp), [q0] "+r"(q0),
                           [q1] "+r"(q1), [q2] "+r"(q2), [q3] "+r"(q3)
                         : [iters] "r"(d32 / 32u), [high] "w"(high)
                         : "q0", "q1", "q2", "q3", "lr", "memory");
        k = d32;
    }
#endif
    if (k < depth && depth - k < 32u) { /* the row's last block: its activations loaded once per row (tail) */
        const mve_pred16_t pred = vctp8q((depth - k) >> 1);
        const int8x16_t xl = tail[0], xh = tail[1];
        int8x16_t v = vldrbq_z_s8(q0, pred);
        a0 = vmladavaq_s8(vmladavaq_s8(a0, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
        v = vldrbq_z_s8(q1, pred);
        a1 = vmladavaq_s8(vmladavaq_s8(a1, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
        v = vldrbq_z_s8(q2, pred);
        a2 = vmladavaq_s8(vmladavaq_s8(a2, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
        v = vldrbq_z_s8(q3, pred);
        a3 = vmladavaq_s8(vmladavaq_s8(a3, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
        k = depth;
    }
    for (; k < depth; k += 32u, q0 += 16, q1 += 16, q2 += 16, q3 += 16) { /* unoptimized builds: every block */
        const uint32_t h = mf_s4_halves_half(depth, k); /* 16 but in the row's last block */
        const mve_pred16_t pred = vctp8q(h);
        const int8x16_t xl = vldrbq_z_s8(x + k, pred), xh = vldrbq_z_s8(x + k + h, pred);
        int8x16_t v = vldrbq_z_s8(q0, pred);
        a0 = vmladavaq_s8(vmladavaq_s8(a0, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
        v = vldrbq_z_s8(q1, pred);
        a1 = vmladavaq_s8(vmladavaq_s8(a1, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
        v = vldrbq_z_s8(q2, pred);
        a2 = vmladavaq_s8(vmladavaq_s8(a2, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
        v = vldrbq_z_s8(q3, pred);
        a3 = vmladavaq_s8(vmladavaq_s8(a3, xl, vshlq_n_s8(v, 4)), xh, vandq_s8(v, high));
    }
    a[0] = a0 >> 4, a[1] = a1 >> 4, a[2] = a2 >> 4, a[3] = a3 >> 4; /* exact: multiples of 16 */
}

/* mf_s4_halves_row's common case (no input offset or a table of it, vector requantization) over whole groups of 4 channels: the rows
 * reached from one pointer, the four sums requantized as one vector, the constants' forms read once (GCC
 * unswitches the loop on them): the per-group work outside the MAC loop kept to the few instructions
 * fully_connected_s8's rows4_requant spends. Returns the channels done (a multiple of 4). */
static __attribute__((noinline)) uint32_t rows4_halves_requant(const int8_t *x, const int8_t *w, uint32_t f0,
                                                               uint32_t oc_n, uint32_t depth, const int32_t *corr,
                                                               const mf_channel_requant *rq, int8_t *out) {
    const uint32_t done = oc_n & ~3u, half = depth / 2u;
    const int8x16_t high = vdupq_n_s8(MF_S4_HALVES_HIGH);
    /* the activations of the row's last block (2h taps, h < 16; none when 32 divides the depth), loaded once */
    const uint32_t d32 = depth & ~31u, th = (depth - d32) >> 1;
    const mve_pred16_t tp = vctp8q(th);
    const int8x16_t tail[2] = {vldrbq_z_s8(x + d32, tp), vldrbq_z_s8(x + d32 + th, tp)};
    const int16_t *bias16 = rq->bias16, *mult16 = rq->mult16;
    const int32_t *bias = rq->bias, *mult = rq->mult;
    const mf_shift *shift = rq->shift;
    const int per_channel = (int)rq->per_channel;
    const int32x4_t mult_t = vdupq_n_s32(mf_rq_mult(rq, 0)), shift_t = vdupq_n_s32(shift[0]);
    const int32_t out_off = rq->out_off, lo = rq->lo, hi = rq->hi;
    for (uint32_t oc = 0; oc < done; oc += 4, w += 4u * half) {
        int32_t a[4];
        halves4_dot(x, w, w + half, w + 2u * half, w + 3u * half, depth, high, tail, a);
        int32x4_t acc = vsetq_lane_s32(a[3], vsetq_lane_s32(a[2], vsetq_lane_s32(a[1], vdupq_n_s32(a[0]), 1), 2), 3);
        if (corr != NULL) acc = vaddq_s32(acc, vldrwq_s32(corr + oc));
        const uint32_t ch = f0 + oc;
        if (bias16 != NULL) {
            acc = vaddq_s32(acc, vldrhq_s32(bias16 + ch));
        } else if (bias != NULL) {
            acc = vaddq_s32(acc, vldrwq_s32(bias + ch));
        }
        int32x4_t m = mult_t, sh = shift_t;
        if (per_channel) {
            m = mult16 != NULL ? vshlq_n_s32(vldrhq_s32(mult16 + ch), 16) : vldrwq_s32(mult + ch);
            sh = vldrbq_s32(shift + ch);
        }
        const int32x4_t v = vaddq_n_s32(mf_requantize_x4(acc, m, sh), out_off);
        vstrbq_s32(out + oc, vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(hi)));
    }
    return done;
}

void mf_s4_halves_row(const int8_t *x, const int8_t *w, uint32_t f0, uint32_t oc_n, uint32_t depth, int32_t in_off,
                      const int32_t *corr, const mf_channel_requant *rq, int vector_rq, int8_t *out) {
    const uint32_t half = depth / 2u;
    const int8x16_t high = vdupq_n_s8(MF_S4_HALVES_HIGH);
    /* the activations of the row's last block (2h taps, h < 16; none when 32 divides the depth), loaded once */
    const uint32_t d32 = depth & ~31u, th = (depth - d32) >> 1;
    const mve_pred16_t tp = vctp8q(th);
    const int8x16_t tail[2] = {vldrbq_z_s8(x + d32, tp), vldrbq_z_s8(x + d32 + th, tp)};
    const int16_t *bias16 = rq->bias16, *mult16 = rq->mult16;
    const int32_t *bias = rq->bias, *mult = rq->mult;
    const mf_shift *shift = rq->shift;
    const int per_channel = (int)rq->per_channel;
    const int32x4_t mult_t = vdupq_n_s32(mf_rq_mult(rq, 0)), shift_t = vdupq_n_s32(shift[0]);
    const int32x4_t lo = vdupq_n_s32(rq->lo), hi = vdupq_n_s32(rq->hi);
    const int32_t out_off = rq->out_off;
    if (in_off == 0) corr = NULL;
    const uint32_t first = vector_rq && (in_off == 0 || corr != NULL)
                               ? rows4_halves_requant(x, w, f0, oc_n, depth, corr, rq, out)
                               : 0u;
    for (uint32_t oc = first; oc < oc_n; oc += 4) {
        const uint32_t n = oc_n - oc < 4u ? oc_n - oc : 4u;
        const int8_t *p0 = w + (size_t)oc * half;
        const int8_t *p1 = n > 1 ? p0 + half : p0, *p2 = n > 2 ? p0 + 2u * half : p0, *p3 = n > 3 ? p0 + 3u * half : p0;
        int32_t a[4];
        halves4_dot(x, p0, p1, p2, p3, depth, high, tail, a);
        const int8_t *const rows[4] = {p0, p1, p2, p3};
        for (uint32_t i = 0; in_off != 0 && i < n; i++) { /* |sum(w)| <= 2^19, |in_off| <= 128 */
            a[i] = mf_add_wrap(a[i], corr != NULL ? corr[oc + i] : mf_s4_halves_sum(rows[i], depth) * in_off);
        }
        if (!vector_rq) {
            for (uint32_t i = 0; i < n; i++) out[oc + i] = mf_s4_requant_inline(rq, f0 + oc + i, a[i]);
            continue;
        }
        const mve_pred16_t p4 = vctp32q(n);
        const uint32_t ch = f0 + oc;
        int32x4_t acc = vldrwq_s32(a);
        if (bias16 != NULL) {
            acc = vaddq_s32(acc, vldrhq_z_s32(bias16 + ch, p4));
        } else if (bias != NULL) {
            acc = vaddq_s32(acc, vldrwq_z_s32(bias + ch, p4));
        }
        int32x4_t m = mult_t, sh = shift_t;
        if (per_channel) {
            m = mult16 != NULL ? vshlq_n_s32(vldrhq_z_s32(mult16 + ch, p4), 16) : vldrwq_z_s32(mult + ch, p4);
            sh = mf_shifts_x4(shift + ch, p4);
        }
        const int32x4_t v = vaddq_n_s32(mf_requantize_x4(acc, m, sh), out_off);
        vstrbq_p_s32(out + oc, vminq_s32(vmaxq_s32(v, lo), hi), p4);
    }
}
#endif
