/*
 * int4 weights in CMSIS-NN's s4 layout, shared by conv2d_s4, depthwise_conv2d_s4 and fully_connected_s4.
 *
 * The weight tensor (OHWI, 1HW(C*M) or OI) is one run of nibbles in its element order: element k is
 * the low nibble of byte k / 2 when k is even, the high nibble when k is odd, a two's complement value
 * in [-8, 7]. A row (a filter, a tap's channels) may therefore start in a high nibble. The loader has
 * checked the size (ceil(numel / 2) bytes) and that the pad nibble of an odd count is 0.
 */
#ifndef MF_S4_H
#define MF_S4_H

#include "mf_simd.h"

/* Weight k of packed int4 data, sign-extended. */
static inline int32_t mf_s4_at(const int8_t *packed, uint32_t k) {
    const uint32_t b = (uint8_t)packed[k >> 1];
    const int32_t nibble = (int32_t)((k & 1u) ? b >> 4 : b & 0xFu);
    return (nibble ^ 8) - 8;
}

/*
 * S4_HALVES (MF_LAYOUT_S4_HALVES, conv2d_s4 and fully_connected_s4 in Helium programs): each filter row (an even
 * count `depth`) on its own depth / 2 bytes, in blocks of 32 weights, the last one the row's remainder (2h
 * weights, h < 16): byte j of a block holds weight j in its low nibble and weight h + j (h = 16 for a whole
 * block) in its high nibble. One 16-byte load then gives the weights of activations k .. k + 15 (low nibbles)
 * and k + 16 .. k + 31 (high), met by two contiguous activation loads: no deinterleaving, no row starting in a
 * high nibble.
 */
static inline int32_t mf_s4_halves_at(const int8_t *w, uint32_t depth, uint32_t row, uint32_t k) {
    const uint32_t k0 = k & ~31u, rest = depth - k0, h = (rest < 32u ? rest : 32u) >> 1, i = k - k0;
    const uint32_t b = (uint8_t)w[(size_t)row * (depth >> 1) + (k0 >> 1) + (i < h ? i : i - h)];
    const int32_t nibble = (int32_t)(i < h ? b & 0xFu : b >> 4);
    return (nibble ^ 8) - 8;
}

/* sum((x[i] + x_offset) * w[row][start + i]) for i < n, w S4_HALVES with rows of `depth` (portable). */
static inline int32_t mf_dot_s4_halves(const int8_t *x, const int8_t *w, uint32_t depth, uint32_t row, uint32_t start,
                                       uint32_t n, int32_t x_offset) {
    int32_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += ((int32_t)x[i] + x_offset) * mf_s4_halves_at(w, depth, row, start + i);
    return acc;
}

/* mf_channel_requant_s8 of the s4 kinds, whose bias and multipliers may be compact (mf_rq_bias, mf_rq_mult):
 * + bias (wrapping), requantization, offset, clamp. */
static inline int8_t mf_s4_requant(const mf_channel_requant *q, uint32_t oc, int32_t acc) {
    const int32_t shift = q->shift[q->per_channel ? oc : 0];
    return mf_requant_s8(mf_add_wrap(acc, mf_rq_bias(q, oc)), mf_rq_mult(q, oc), shift, q->out_off, q->lo, q->hi);
}

/* mf_s4_requant with the inlined requantization (mf_channel_requant_s8_inline's). */
static inline int8_t mf_s4_requant_inline(const mf_channel_requant *q, uint32_t oc, int32_t acc) {
    const int32_t shift = q->shift[q->per_channel ? oc : 0];
    const int32_t v = mf_requantize_inline(mf_add_wrap(acc, mf_rq_bias(q, oc)), mf_rq_mult(q, oc), shift);
    return mf_clamp_s8(mf_add_wrap(v, q->out_off), q->lo, q->hi);
}

/* sum((x[i] + x_offset) * w[start + i]) for i < n, w packed int4 (portable, DSP and MVE paths, the same
 * int32: no overflow within MF_MAX_DOT_DEPTH). */
int32_t mf_dot_s4(const int8_t *x, const int8_t *w, uint32_t start, uint32_t n, int32_t x_offset);

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
/* The fast paths' index arithmetic is int32: every window parameter (attributes a_window on) and every
 * spatial size of input, weights and output below 2^14 (far beyond any Cortex-M memory). */
static inline int mf_s4_window_fits(const mf_call *c, uint32_t a_window) {
    mf_tensor x, w, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &w);
    mf_call_output(c, 0, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, a_window, st, pd, dl);
    const uint32_t lim = 1u << 14;
    for (int a = 0; a < 2; a++) {
        if ((uint32_t)st[a] >= lim || (uint32_t)pd[a] >= lim || (uint32_t)dl[a] >= lim) return 0;
        if (x.shape[1 + a] >= lim || o.shape[1 + a] >= lim || w.shape[1 + a] >= lim) return 0;
    }
    return x.shape[3] < lim;
}

/* Eight weights from packed int4 data at nibble `start` + 8 * g, as one word of eight nibbles in
 * element order (nibble 0 the first weight): a plain load when the run starts in a low nibble, else
 * realigned by one nibble. Reads only the bytes holding those eight weights. */
static inline uint32_t mf_s4_word(const uint8_t *bytes, uint32_t odd) {
    const uint32_t v = (uint32_t)mf_ld32(bytes);
    return odd ? (v >> 4) | ((uint32_t)bytes[4] << 28) : v;
}
#endif

#if defined(MF_USE_DSP)
/*
 * DSP: the activations are widened once to int16 with the input offset added, eight at a time in the
 * lane order of the weights' decode (x0 x4 | x2 x6 | x1 x5 | x3 x7, four words), and a word of eight
 * weights is decoded with the nibbles' sign bits flipped: u = w + 8 in [0, 15], zero-extended by
 * UXTB16 into the same lanes. sum((x + off) * w) = sum((x + off) * u) - 8 * sum(x + off), the second sum
 * taken once per widened column (mf_s4_widen).
 */
static inline int32_t mf_uxtb16(uint32_t x) {
    int32_t r;
    __asm__("uxtb16 %0, %1" : "=r"(r) : "r"(x));
    return r;
}
static inline int32_t mf_uxtb16_ror8(uint32_t x) {
    int32_t r;
    __asm__("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* Widens n activations (+ offset) into cols: the first n rounded down to 8 in the decode order, the
 * rest (n % 8) after them as plain int16s. Returns sum(x + off) over the first part (the one
 * mf_s4_mac8 sees). */
static inline int32_t mf_s4_widen(const int8_t *x, uint32_t n, int32_t off, int16_t *cols) {
    static const uint8_t order[8] = {0, 4, 2, 6, 1, 5, 3, 7};
    int32_t sum = 0;
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8, cols += 8) {
        for (uint32_t k = 0; k < 8; k++) {
            const int32_t v = x[i + order[k]] + off;
            cols[k] = (int16_t)v;
            sum += v;
        }
    }
    for (; i < n; i++) *cols++ = (int16_t)(x[i] + off);
    return sum;
}

/* acc + sum(cols8 * u) over one word of eight weights (u = w + 8, see above). */
static inline int32_t mf_s4_mac8(uint32_t word, const int16_t *cols8, int32_t acc) {
    const uint32_t t = word ^ 0x88888888u; /* each nibble w -> w + 8 (flip its sign bit) */
    const uint32_t lo = t & 0x0F0F0F0Fu, hi = (t >> 4) & 0x0F0F0F0Fu; /* bytes u0 u2 u4 u6 | u1 u3 u5 u7 */
    acc = mf_smlad(mf_uxtb16(lo), mf_ld32(cols8), acc);          /* u0, u4 with x0, x4 */
    acc = mf_smlad(mf_uxtb16_ror8(lo), mf_ld32(cols8 + 2), acc); /* u2, u6 with x2, x6 */
    acc = mf_smlad(mf_uxtb16(hi), mf_ld32(cols8 + 4), acc);      /* u1, u5 with x1, x5 */
    return mf_smlad(mf_uxtb16_ror8(hi), mf_ld32(cols8 + 6), acc); /* u3, u7 with x3, x7 */
}
#endif

#if defined(MF_USE_MVE)
/* Sixteen (or the first `left` < 16) weights from packed int4 at byte p (realigned by a nibble when
 * `odd`), sign-extended to int8 lanes in element order; lanes past `left` are zero. Reads only the
 * bytes holding those weights. */
static inline int8x16_t mf_s4_decode16(const uint8_t *p, uint32_t odd, uint32_t left) {
    const uint32_t n = left < 16u ? left : 16u;
    uint16x8_t v;
    if (!odd) {
        v = vldrbq_z_u16(p, vctp16q((n + 1u) >> 1)); /* byte j: weights 2j (low nibble), 2j + 1 */
    } else {
        const uint16x8_t a = vldrbq_z_u16(p, vctp16q((n + 1u) >> 1)), b = vldrbq_z_u16(p + 1, vctp16q(n >> 1));
        v = vorrq_u16(vshrq_n_u16(a, 4), vandq_u16(vshlq_n_u16(b, 4), vdupq_n_u16(0xF0)));
    }
    /* each 16-bit lane jj = the nibbles of weights 2j, 2j + 1: low nibble to byte 0, high to byte 1 */
    const uint16x8_t split = vorrq_u16(vandq_u16(v, vdupq_n_u16(0x0F)), vshlq_n_u16(vandq_u16(v, vdupq_n_u16(0xF0)), 4));
    const int8x16_t nibbles = vreinterpretq_s8_u16(split);
    const int8x16_t w = vshrq_n_s8(vshlq_n_s8(nibbles, 4), 4);
    return vpselq_s8(w, vdupq_n_s8(0), vctp8q(n));
}
#endif

#if defined(MF_USE_MVE)
/* 32 weights from packed int4 at byte p (16 bytes; 17 when `odd`, the run starting in p's high nibble):
 * *even = weights 0, 2, ..., 30 and *odd_w = weights 1, 3, ..., 31 as int8 lanes -- the halves VLD2 gives of
 * 32 activations. */
static inline void mf_s4_split32(const uint8_t *p, uint32_t odd, int8x16_t *even, int8x16_t *odd_w) {
    const int8x16_t v = vldrbq_s8((const int8_t *)p);
    if (!odd) {
        *even = vshrq_n_s8(vshlq_n_s8(v, 4), 4); /* low nibbles */
        *odd_w = vshrq_n_s8(v, 4);               /* high nibbles */
    } else {
        *even = vshrq_n_s8(v, 4); /* high nibbles of p .. p + 15 */
        *odd_w = vshrq_n_s8(vshlq_n_s8(vldrbq_s8((const int8_t *)p + 1), 4), 4); /* low of p + 1 .. p + 16 */
    }
}
#endif

#if defined(MF_USE_MVE)
/* S4_HALVES on Helium: a byte's low nibble shifted up (VSHL #4) and its high nibble masked (VAND 0xF0) are 16 x
 * the two weights as int8, no sign extension needed; the sums are then 16 x the true ones, exact in int32
 * (|x * 16w| <= 2^14, depth <= MF_MAX_DOT_DEPTH = 2^16) and divided by 16 after (an exact shift). */
#define MF_S4_HALVES_HIGH ((int8_t)0xF0)

/* The bytes of the row's block at k (k a multiple of 32) and h, its half (16 for a whole block). */
static inline uint32_t mf_s4_halves_half(uint32_t depth, uint32_t k) {
    return depth - k >= 32u ? 16u : (depth - k) >> 1;
}

/* sum(w) over one S4_HALVES row of `depth` weights at p. */
static inline int32_t mf_s4_halves_sum(const int8_t *p, uint32_t depth) {
    const int8x16_t high = vdupq_n_s8(MF_S4_HALVES_HIGH);
    int32_t s = 0;
    for (uint32_t k = 0; k < depth; k += 32u, p += 16) {
        const int8x16_t v = vldrbq_z_s8(p, vctp8q(mf_s4_halves_half(depth, k)));
        s = vaddvaq_s8(vaddvaq_s8(s, vshlq_n_s8(v, 4)), vandq_s8(v, high));
    }
    return s >> 4; /* exact: a multiple of 16 */
}

/* One S4_HALVES row of `depth` weights at p unpacked to int8 at row (the weights' order). */
static inline void mf_s4_halves_unpack(const int8_t *p, uint32_t depth, int8_t *row) {
    for (uint32_t k = 0; k < depth; k += 32u, p += 16) {
        const uint32_t h = mf_s4_halves_half(depth, k);
        const mve_pred16_t pred = vctp8q(h);
        const int8x16_t v = vldrbq_z_s8(p, pred);
        vstrbq_p_s8(row + k, vshrq_n_s8(vshlq_n_s8(v, 4), 4), pred);
        vstrbq_p_s8(row + k + h, vshrq_n_s8(v, 4), pred);
    }
}

/* The outputs of input row x (depth activations) for the oc_n S4_HALVES rows at w, channels f0 .. f0 + oc_n - 1 of
 * rq, into out[0 .. oc_n): four rows a pass sharing each 32 activations' two loads (dot_s4.c); in_off enters as
 * in_off * sum(w), from corr[0 .. oc_n) (the rows' in_off * sum(w)) when not NULL, else summed per call;
 * vector_rq: mf_requant_vector_ok. */
void mf_s4_halves_row(const int8_t *x, const int8_t *w, uint32_t f0, uint32_t oc_n, uint32_t depth, int32_t in_off,
                      const int32_t *corr, const mf_channel_requant *rq, int vector_rq, int8_t *out);
#endif

#endif /* MF_S4_H */
