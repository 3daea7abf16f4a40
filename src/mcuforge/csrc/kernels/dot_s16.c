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

static inline int32_t pkhbt16(int32_t lo, int32_t hi) { /* (lo's low half, hi's low half) */
    int32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
    return r;
}
static inline int32_t pkhtb16(int32_t hi, int32_t lo) { /* (lo's high half, hi's high half) */
    int32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(hi), "r"(lo));
    return r;
}

int64_t mf_dot_s16(const int16_t *x, const int8_t *w, uint32_t n) {
    int64_t acc = 0;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const int32_t ww = mf_ld32(w + i);
        const int32_t w02 = mf_sxtb16(ww), w13 = mf_sxtb16_ror8(ww); /* (w0, w2), (w1, w3) */
        acc = __smlald(mf_ld32(x + i), pkhbt16(w02, w13), acc);      /* x0 w0 + x1 w1 */
        acc = __smlald(mf_ld32(x + i + 2), pkhtb16(w13, w02), acc);  /* x2 w2 + x3 w3 */
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
            a0 = __smlald(x01, pkhbt16(w02, w13), a0);
            a0 = __smlald(x23, pkhtb16(w13, w02), a0);
            ww = mf_ld32(w1 + i);
            w02 = mf_sxtb16(ww);
            w13 = mf_sxtb16_ror8(ww);
            a1 = __smlald(x01, pkhbt16(w02, w13), a1);
            a1 = __smlald(x23, pkhtb16(w13, w02), a1);
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
