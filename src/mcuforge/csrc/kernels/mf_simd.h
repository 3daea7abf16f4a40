/*
 * Helpers of the optimized kernel paths (DSP: SMLAD on 16-bit lanes; MVE: Helium), chosen by the
 * compiler's feature macros as CMSIS-NN does. The portable kernels do not use this file.
 *
 *   MF_USE_MVE   the core has integer MVE (cortex-m55, m85)
 *   MF_USE_DSP   the core has the DSP extension but no MVE (cortex-m4, m7, m33)
 * Cores with neither have mf_scalar.h's paths (cortex-m3).
 */
#ifndef MF_SIMD_H
#define MF_SIMD_H

#include "mf_kernel_util.h"

#if defined(MF_PORTABLE) && MF_PORTABLE
/* -DMF_PORTABLE=1: every optimized path off, the portable C kernels only (benchmarks/firmware.py
 * measures them so); MF_ARM_LOOPS (below) and mf_scalar.h's paths are off too. */
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define MF_USE_MVE 1
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define MF_USE_DSP 1
#include <arm_acle.h>
#endif

/* Any Cortex-M build but MF_PORTABLE: the plain C loops that drop the portable path's generality
 * (add_s8, mul_s8 on equal shapes). */
#if defined(__arm__) && !(defined(MF_PORTABLE) && MF_PORTABLE)
#define MF_ARM_LOOPS 1
#endif

/* int32 from the low 32 bits (two's complement), without an implementation-defined cast. */
static inline int32_t mf_wrap32(uint32_t u) {
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

/* mf_requantize (runtime/quant.c), inlined for the kernels' output loops: the same arithmetic
 * (arm_nn_requantize, double rounding), the same bits. */
static inline int32_t mf_requantize_inline(int32_t val, int32_t multiplier, int32_t shift) {
    const int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    const int32_t x = mf_wrap32((uint32_t)val << left);
    const int64_t prod = (int64_t)x * multiplier + (1ll << 30);
    const int32_t high = mf_wrap32((uint32_t)(uint64_t)(prod >> 31));
    const int32_t mask = (int32_t)((1u << right) - 1u);
    const int32_t remainder = high & mask;
    const int32_t result = high >> right;
    const int32_t threshold = (mask >> 1) + (result < 0 ? 1 : 0);
    return result + (remainder > threshold ? 1 : 0);
}

/* mf_channel_requant_s8 with the inlined requantization. */
static inline int8_t mf_channel_requant_s8_inline(const mf_channel_requant *q, uint32_t oc, int32_t acc) {
    if (q->bias) acc = mf_add_wrap(acc, q->bias[oc]);
    const uint32_t k = q->per_channel ? oc : 0;
    return mf_clamp_s8(mf_add_wrap(mf_requantize_inline(acc, q->mult[k], q->shift[k]), q->out_off), q->lo, q->hi);
}

/* Four bytes from any address as one word (one LDR/STR on cores with unaligned access). */
static inline int32_t mf_ld32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline void mf_st32(void *p, int32_t v) { memcpy(p, &v, 4); }

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
/* Byte lanes 1 and 3 sign-extended to two halfwords (SXTB16 with ROR #8: one instruction). */
static inline int32_t mf_sxtb16_ror8(int32_t x) {
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
/* a + byte lanes 1 and 3 sign-extended (SXTAB16 with ROR #8). */
static inline int32_t mf_sxtab16_ror8(int32_t a, int32_t x) {
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
/* Halfword lanes added (SADD16, each lane wrapping). */
static inline int32_t mf_sadd16(int32_t a, int32_t b) {
    int32_t r;
    __asm__("sadd16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline int32_t mf_sxtb16(int32_t x) {
    int32_t r;
    __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(x));
    return r;
}
static inline int32_t mf_sxtab16(int32_t a, int32_t x) {
    int32_t r;
    __asm__("sxtab16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
static inline int32_t mf_smlad(int32_t a, int32_t b, int32_t acc) {
    int32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
/* {high: hi's low half, low: lo's low half} (PKHBT) and {high: hi's high half, low: lo's high half} (PKHTB). */
static inline int32_t mf_pkhbt(int32_t lo, int32_t hi) {
    int32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
    return r;
}
static inline int32_t mf_pkhtb(int32_t lo, int32_t hi) {
    int32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(hi), "r"(lo));
    return r;
}
/* An input offset in both halfwords (offset in [-127, 128]). */
static inline int32_t mf_pack_off16(int32_t off) {
    return mf_wrap32(((uint32_t)off & 0xFFFFu) | ((uint32_t)off << 16));
}
#endif

#if defined(MF_USE_DSP)
/* mf_requantize(acc, mult, -n) for |acc| < 2^30 and n >= 0 (no left shift): the doubling high multiply
 * (acc * mult + 2^30) >> 31 is SMMULR(2 acc, mult) = (2 acc mult + 2^31) >> 32 exactly, and the rounding
 * divide by 2^n (half away from zero) is (v - (v < 0) + 2^(n - 1)) >> n, which cannot overflow as
 * |v| <= |acc|: the same bits in a handful of instructions. */
static inline int32_t mf_dsp_requantize_small(int32_t acc, int32_t mult, int32_t n) {
    int32_t v;
    __asm__("smmulr %0, %1, %2" : "=r"(v) : "r"(mf_wrap32((uint32_t)acc << 1)), "r"(mult));
    if (n > 0) v = (v + (v >> 31) + (1 << (n - 1))) >> n;
    return v;
}

/* 1 when mf_dsp_requantize_small serves an op: every shift <= 0, and every accumulator (a dot product
 * of `depth` terms (x + offset) * w, |x + offset| <= 255, |w| <= 128, plus a bias) stays below 2^30. */
static inline int mf_dsp_small_ok(const mf_channel_requant *q, uint32_t channels, uint32_t depth) {
    const uint32_t n = q->per_channel ? channels : 1u;
    for (uint32_t i = 0; i < n; i++) {
        if (q->shift[i] > 0) return 0;
    }
    int64_t bias = 0;
    for (uint32_t i = 0; q->bias && i < channels; i++) {
        const int64_t b = q->bias[i] < 0 ? -(int64_t)q->bias[i] : q->bias[i];
        bias = b > bias ? b : bias;
    }
    for (uint32_t i = 0; q->bias16 && i < channels; i++) { /* the s4 kinds' int16 bias */
        const int64_t b = q->bias16[i] < 0 ? -(int64_t)q->bias16[i] : q->bias16[i];
        bias = b > bias ? b : bias;
    }
    return (int64_t)depth * 255 * 128 + bias < ((int64_t)1 << 30);
}

/* The DSP path of depthwise_conv2d_s8 for 3x3 kernels (depth multiplier 1, channels a multiple of 4) on the
 * int8 weights at w: the op's own, or depthwise_conv2d_s4's unpacked into its scratch. 0 when it does not
 * apply: the caller then runs another path. */
int mf_depthwise_dsp_3x3(const mf_call *c, const int8_t *w);

/* An output channel's parameters for mf_dsp_requantize_small, read once. */
typedef struct {
    int32_t bias, mult, n;
} mf_dsp_channel;

static inline mf_dsp_channel mf_dsp_channel_of(const mf_channel_requant *q, uint32_t oc) {
    const uint32_t k = q->per_channel ? oc : 0;
    mf_dsp_channel c = {q->bias ? q->bias[oc] : 0, q->mult[k], -q->shift[k]};
    return c;
}

/* mf_dsp_channel_of whether the bias and multipliers are int32 or the s4 kinds' int16 (a branch more: for
 * code that reads a channel's parameters once, not per output). */
static inline mf_dsp_channel mf_dsp_channel_any(const mf_channel_requant *q, uint32_t oc) {
    mf_dsp_channel c = {mf_rq_bias(q, oc), mf_rq_mult(q, oc), -q->shift[q->per_channel ? oc : 0]};
    return c;
}

/* mf_channel_requant_s8 of a small accumulator (mf_dsp_small_ok): the same bits. */
static inline int8_t mf_dsp_out_s8(const mf_channel_requant *q, const mf_dsp_channel *c, int32_t acc) {
    const int32_t v = mf_dsp_requantize_small(acc + c->bias, c->mult, c->n) + q->out_off;
    return mf_clamp_s8(v, q->lo, q->hi);
}
#endif

#if defined(MF_USE_MVE)
/* mf_requantize on 4 lanes (per-lane multiplier and shift): the same bits, provided no multiplier
 * is INT32_MIN (VQRDMULH saturates INT32_MIN * INT32_MIN where arm_nn_doubling_high_mult_no_sat
 * wraps; mf_requant_vector_ok checks). VQRDMULH is (x * m + 2^30) >> 31; a right shift e > 0
 * rounds half away from zero as (x - (x < 0) + 2^(e-1)) >> e (VRSHL), saturating -2^31 - 1 to
 * -2^31, which gives the same quotient. */
static inline int32x4_t mf_requantize_x4(int32x4_t val, int32x4_t mult, int32x4_t shift) {
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t left = vmaxq_s32(shift, zero), neg_right = vminq_s32(shift, zero);
    const int32x4_t high = vqrdmulhq_s32(vshlq_s32(val, left), mult);
    const int32x4_t fixup = vandq_s32(vshrq_n_s32(high, 31), vshrq_n_s32(neg_right, 31));
    return vrshlq_s32(vqaddq_s32(high, fixup), neg_right);
}

/* mf_requantize_x4 with one multiplier and shift for all lanes (per-tensor: add_s8, mul_s8); the
 * same INT32_MIN proviso. */
static inline int32x4_t mf_requantize_x4_n(int32x4_t val, int32_t mult, int32_t shift) {
    const int32x4_t high = vqrdmulhq_n_s32(shift > 0 ? vshlq_r_s32(val, shift) : val, mult);
    if (shift >= 0) return high;
    return vrshlq_n_s32(vqaddq_s32(high, vshrq_n_s32(high, 31)), shift);
}

/* Four int32 lanes from four core registers by two VMOVs of two lanes each ("vmov q[2], q[0], a0, a2";
 * "vmov q[3], q[1], a1, a3"). Which of each pair lands in the lower lane is left open on purpose (the
 * Arm syntax and QEMU's reading of it differ): callers build a vector of store offsets with this same
 * helper and derive predicates from those offsets, so each value goes where its offset says whatever
 * the lane order. */
static inline int32x4_t mf_mve_lanes4(int32_t a0, int32_t a1, int32_t a2, int32_t a3) {
    int32x4_t v;
    __asm__("vmov %q0[2], %q0[0], %1, %3\n\tvmov %q0[3], %q0[1], %2, %4" : "=&w"(v) : "r"(a0), "r"(a1), "r"(a2), "r"(a3));
    return v;
}

/* Four requantization shifts (mf_shift, int8) as int32 lanes: shift[0..3] (lanes off in p are 0),
 * and shift[k[i]] for lane i (a gather). */
static inline int32x4_t mf_shifts_x4(const mf_shift *shift, mve_pred16_t p) { return vldrbq_z_s32(shift, p); }
static inline int32x4_t mf_shifts_gather_x4(const mf_shift *shift, uint32x4_t k, mve_pred16_t p) {
    return vldrbq_gather_offset_z_s32(shift, k, p);
}

/* mf_rq_bias / mf_rq_mult of channels oc .. oc + 3 (lanes past pred: 0), and of channels c + lanes[i]
 * (gathered). */
static inline int32x4_t mf_rq_bias_x4(const mf_channel_requant *q, uint32_t oc, mve_pred16_t pred) {
    if (q->bias16) return vldrhq_z_s32(q->bias16 + oc, pred);
    return q->bias ? vldrwq_z_s32(q->bias + oc, pred) : vdupq_n_s32(0);
}
static inline int32x4_t mf_rq_mult_x4(const mf_channel_requant *q, uint32_t oc, mve_pred16_t pred) {
    if (!q->per_channel) return vdupq_n_s32(mf_rq_mult(q, 0));
    return q->mult16 ? vshlq_n_s32(vldrhq_z_s32(q->mult16 + oc, pred), 16) : vldrwq_z_s32(q->mult + oc, pred);
}
static inline int32x4_t mf_rq_bias_gather_x4(const mf_channel_requant *q, uint32_t c, uint32x4_t lanes,
                                             mve_pred16_t pred) {
    if (q->bias16) return vldrhq_gather_shifted_offset_z_s32(q->bias16 + c, lanes, pred);
    return q->bias ? vldrwq_gather_shifted_offset_z_s32(q->bias + c, lanes, pred) : vdupq_n_s32(0);
}
static inline int32x4_t mf_rq_mult_gather_x4(const mf_channel_requant *q, uint32_t c, uint32x4_t lanes,
                                             mve_pred16_t pred) {
    if (!q->per_channel) return vdupq_n_s32(mf_rq_mult(q, 0));
    if (q->mult16) return vshlq_n_s32(vldrhq_gather_shifted_offset_z_s32(q->mult16 + c, lanes, pred), 16);
    return vldrwq_gather_shifted_offset_z_s32(q->mult + c, lanes, pred);
}

/* The MVE path of depthwise_conv2d_s8 (depth multiplier 1) on the int8 weights at w: the op's own, or
 * depthwise_conv2d_s4's unpacked into its scratch. 0 when it does not apply (another depth multiplier, an
 * absurd geometry, a multiplier of INT32_MIN): the caller then runs its portable path. */
int mf_depthwise_mve(const mf_call *c, const int8_t *w);

/* 1 when no multiplier is INT32_MIN: mf_requantize_x4 then equals mf_requantize. */
static inline int mf_requant_vector_ok(const mf_channel_requant *q, uint32_t channels) {
    const uint32_t n = q->per_channel ? channels : 1u;
    if (q->mult == NULL) return 1; /* 16-bit multipliers m << 16, m in [0, 32767]: never INT32_MIN */
    int32_t least = INT32_MAX; /* four multipliers per step (this scan runs on every call) */
    for (uint32_t i = 0; i < n; i += 4) {
        const mve_pred16_t p = vctp32q(n - i);
        least = vminvq_p_s32(least, vldrwq_z_s32(q->mult + i, p), p);
    }
    return least != INT32_MIN;
}
#endif

#endif /* MF_SIMD_H */
