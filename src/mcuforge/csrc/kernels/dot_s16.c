/*
 * The int16 x int8 dot product of the s16 weighted kernels (conv2d_s16, fully_connected_s16), exact
 * in int64 as CMSIS-NN's s16 kernels compute it. Portable C; a DSP path (SMLALD: two 16 x 16 products
 * added into a 64-bit accumulator per instruction, the weights widened by SXTB16 and paired by
 * PKHBT/PKHTB as CMSIS-NN's read_and_pad does); an MVE path (VMLALDAVA over 8 int16 lanes, the
 * weights widened by the load, tail-predicated). Every path gives the exact sum.
 */
#include "mf_s16.h"
#include "mf_simd.h"

#if defined(MF_USE_MVE)

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

#else

int64_t mf_dot_s16(const int16_t *x, const int8_t *w, uint32_t n) {
    int64_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += (int32_t)x[i] * w[i]; /* |product| <= 2^22 */
    return acc;
}

#endif
