/*
 * The int8 x int4 dot product with an input offset (mf_s4.h), shared by the s4 kernels: portable C, a
 * DSP path (a word of eight packed weights per step, SMLAD on 16-bit lanes) and an MVE path (sixteen
 * weights per step decoded to int8 lanes, VMLADAVA; the offset enters as offset * sum(w) by VADDVA). All
 * give the same int32.
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

static inline int32_t pkhbt16(int32_t a, int32_t b) { /* low halves of a and b */
    int32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline int32_t pkhtb16(int32_t a, int32_t b) { /* high halves of b and a */
    int32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

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
        mf_st32(cols, pkhbt16(e0, e1));
        mf_st32(cols + 2, pkhtb16(e1, e0));
        mf_st32(cols + 4, pkhbt16(o0, o1));
        mf_st32(cols + 6, pkhtb16(o1, o0));
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
