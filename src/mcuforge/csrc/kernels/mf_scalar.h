/*
 * Helpers of the optimized scalar kernel paths: cores with Thumb-2 but neither the DSP extension nor
 * MVE (cortex-m3; cortex-m33 built without DSP). The portable kernels do not use this file.
 *
 *   MF_USE_SCALAR_FAST   defined when those paths are compiled in:
 *     -DMF_SCALAR_FAST=1 forces them on (the host build that tests them against the portable path),
 *     -DMF_SCALAR_FAST=0 or -DMF_PORTABLE=1 forces them off; by default they are on for ARMv7-M and
 *     ARMv8-M mainline without DSP/MVE, off elsewhere (ARMv6-M: cortex-m0plus runs the portable C).
 *
 * The one trick: two int8 pixels share one 32-bit multiplicand. A word X = a + b * 2^23 (a, b the two
 * pixels' values of the same tap, with the input offset added: |a|, |b| <= 255) times an int8 weight w,
 * accumulated by SMLAL into 64 bits, is sum(w * a) + sum(w * b) * 2^23 exactly. With the accumulator
 * started at 2^22 and |sum(w * a)| < 2^22 -- at most MF_SC_CHUNK taps: 128 * 255 * 128 < 2^22 --
 * bits 0..22 hold sum(w * a) + 2^22 and bits 23.. hold sum(w * b): two MACs per instruction, exact.
 */
#ifndef MF_SCALAR_H
#define MF_SCALAR_H

#include "mf_simd.h"

#if !defined(MF_USE_DSP) && !defined(MF_USE_MVE) && !(defined(MF_PORTABLE) && MF_PORTABLE)
#if defined(MF_SCALAR_FAST)
#if MF_SCALAR_FAST
#define MF_USE_SCALAR_FAST 1
#endif
#elif defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_8M_MAIN__)
#define MF_USE_SCALAR_FAST 1
#endif
#endif

#if defined(MF_USE_SCALAR_FAST)

/* The inline assembly below: Thumb-2 with optimization (at -O0 GCC keeps r7 as the frame pointer, and
 * the kernels' loops need every other register); elsewhere the same arithmetic in C. */
#if defined(__arm__) && defined(__thumb2__) && defined(__OPTIMIZE__)
#define MF_SC_ASM 1
#endif

/* Most taps one pair accumulator takes before it is split (see above). */
#define MF_SC_CHUNK 128u
/* The accumulator's start: the low sum's bias, which keeps bits 0..22 non-negative. */
#define MF_SC_ROUND ((int64_t)1 << 22)

/* The packed pair a + b * 2^23 (|a|, |b| <= 255). */
static inline int32_t mf_sc_pair(int32_t a, int32_t b) { return a + b * (1 << 23); }

/* The two sums held by a pair accumulator started at MF_SC_ROUND. */
static inline int32_t mf_sc_low(int64_t acc) { return (int32_t)((uint32_t)(uint64_t)acc & 0x7FFFFFu) - (1 << 22); }
static inline int32_t mf_sc_high(int64_t acc) { return mf_wrap32((uint32_t)(uint64_t)(acc >> 23)); }

/* The output stage's variant for a whole op, chosen once per run. */
enum {
    MF_SC_GENERIC,  /* mf_requantize_inline, + offset, clamp */
    MF_SC_FAST,     /* every channel takes mf_sc_requant_fast, then the clamp */
    MF_SC_FAST_SAT, /* the same with the activation range [-128, 127]: one SSAT */
};

static inline int mf_sc_variant(const mf_channel_requant *q, uint32_t channels) {
    const uint32_t n = q->per_channel ? channels : 1u;
    for (uint32_t i = 0; i < n; i++) {
        if (q->mult[i] == INT32_MIN || q->shift[i] < -23 || q->shift[i] > -2) return MF_SC_GENERIC;
    }
    return q->lo == -128 && q->hi == 127 ? MF_SC_FAST_SAT : MF_SC_FAST;
}

/* One output channel's output stage, read once for the pixels that share it. */
typedef struct {
    int32_t bias, mult, shift;
    int32_t k_high, right_m1; /* mf_sc_requant_fast's constants (fast variants) */
} mf_sc_channel;

static inline __attribute__((always_inline)) mf_sc_channel mf_sc_channel_of(const mf_channel_requant *q,
                                                                           uint32_t oc, int variant) {
    const uint32_t k = q->per_channel ? oc : 0;
    mf_sc_channel c;
    c.bias = q->bias ? q->bias[oc] : 0;
    c.mult = q->mult[k];
    c.shift = q->shift[k];
    const int32_t e = -c.shift; /* in [2, 23] for the fast variants */
    c.right_m1 = variant == MF_SC_GENERIC ? 0 : e - 1;
    c.k_high = variant == MF_SC_GENERIC ? 0 : (1 + 2 * q->out_off) * (1 << (e - 2)); /* 2^(e-2) + off 2^(e-1) */
    return c;
}

/* mf_requantize(x, mult, shift) + out_off for e = -shift in [2, 23] and mult != INT32_MIN, the same
 * bits in fewer instructions. With T = x * mult + 2^30, mf_requantize takes H = floor(T / 2^31) (no
 * wrap: mult != INT32_MIN) and divides it by 2^e rounding half away from zero,
 * floor((H + 2^(e-1) - [H < 0]) / 2^e); nested floors merge, and with the output offset (no wrap:
 * |result| <= 2^29) that is floor((T + K - [T < 0] * 2^31) / 2^(31+e)), K = 2^(30+e) + out_off * 2^(31+e)
 * = k_high * 2^32. So: U = T + K by one SMLAL (no overflow: |x * mult| <= 2^62, |K| < 2^61), T < 0
 * exactly when U's high word is below k_high, the - 2^31 then lowers the high word by 1 - (bit 31 of
 * the low word), and the quotient is the high word shifted right by e - 1. */
static inline int32_t mf_sc_requant_fast(int32_t x, int32_t mult, int32_t k_high, int32_t right_m1) {
#if defined(MF_SC_ASM)
    int32_t lo, hi;
    __asm__("mov %[lo], #0x40000000\n\t"
            "mov %[hi], %[kh]\n\t"
            "smlal %[lo], %[hi], %[x], %[m]\n\t"
            "cmp %[hi], %[kh]\n\t"
            "itt lt\n\t"
            "sublt %[hi], %[hi], #1\n\t"
            "addlt %[hi], %[hi], %[lo], lsr #31\n\t"
            : [lo] "=&r"(lo), [hi] "=&r"(hi)
            : [x] "r"(x), [m] "r"(mult), [kh] "r"(k_high)
            : "cc");
#else
    const int64_t u = (int64_t)x * mult + (int64_t)k_high * 4294967296ll + (1 << 30);
    int32_t hi = (int32_t)(u >> 32);
    const uint32_t lo = (uint32_t)(uint64_t)u;
    if (hi < k_high) hi = hi - 1 + (int32_t)(lo >> 31);
#endif
    return hi >> right_m1;
}

/* Saturate to int8 (SSAT #8 on Arm). */
static inline int32_t mf_sc_sat8(int32_t v) {
#if defined(MF_SC_ASM)
    __asm__("ssat %0, #8, %1" : "=r"(v) : "r"(v));
    return v;
#else
    return v < -128 ? -128 : v > 127 ? 127 : v;
#endif
}

/* out[i * stride] for the n sums of one channel: mf_channel_requant_s8's bits. A function of its own:
 * inlined into a kernel's loops, GCC spills its constants. */
static __attribute__((noinline, unused)) void mf_sc_store(const mf_channel_requant *q, const mf_sc_channel *c, int variant,
                                                  const int32_t *sums, uint32_t n, int8_t *out, uint32_t stride) {
    const int32_t bias = c->bias, mult = c->mult, k_high = c->k_high, right_m1 = c->right_m1;
    const int32_t *end = sums + n;
    if (variant == MF_SC_FAST_SAT) {
        for (; sums != end; sums++, out += stride) {
            *out = (int8_t)mf_sc_sat8(mf_sc_requant_fast(mf_add_wrap(*sums, bias), mult, k_high, right_m1));
        }
    } else if (variant == MF_SC_FAST) {
        const int32_t lo = q->lo, hi = q->hi;
        for (; sums != end; sums++, out += stride) {
            *out = mf_clamp_s8(mf_sc_requant_fast(mf_add_wrap(*sums, bias), mult, k_high, right_m1), lo, hi);
        }
    } else {
        const int32_t shift = c->shift, out_off = q->out_off, lo = q->lo, hi = q->hi;
        for (; sums != end; sums++, out += stride) {
            const int32_t v = mf_requantize_inline(mf_add_wrap(*sums, bias), mult, shift);
            *out = mf_clamp_s8(mf_add_wrap(v, out_off), lo, hi);
        }
    }
}

/* out[i] = channel oc0 + i's output of sums[i], i < n (consecutive channels: a fully connected row). */
static __attribute__((noinline, unused)) void mf_sc_store_channels(const mf_channel_requant *q, int variant,
                                                                   const int32_t *sums, uint32_t n, uint32_t oc0,
                                                                   int8_t *out) {
    const int32_t *end = sums + n;
    const int32_t lo = q->lo, hi = q->hi;
    if (variant == MF_SC_GENERIC) {
        for (uint32_t oc = oc0; sums != end; sums++, oc++) *out++ = mf_channel_requant_s8_inline(q, oc, *sums);
        return;
    }
    const int32_t *bias = q->bias ? q->bias + oc0 : NULL, step = q->per_channel ? 1 : 0;
    const int32_t *mult = q->mult + (step ? oc0 : 0);
    const mf_shift *shift = q->shift + (step ? oc0 : 0);
    const int32_t k_one = 1 + 2 * q->out_off;
    for (; sums != end; sums++, mult += step, shift += step) {
        const int32_t e_m1 = -1 - *shift; /* e - 1, e = -shift in [2, 23] */
        const int32_t x = bias ? mf_add_wrap(*sums, *bias++) : *sums;
        const int32_t v = mf_sc_requant_fast(x, *mult, k_one * (1 << (e_m1 - 1)), e_m1);
        *out++ = variant == MF_SC_FAST_SAT ? (int8_t)mf_sc_sat8(v) : mf_clamp_s8(v, lo, hi);
    }
}

/* The six sums of three packed pair columns (interleaved: cols[3 * k + q], q < 3) against one weight row
 * w, 0 < n <= MF_SC_CHUNK taps: sums[2q] = sum(w[k] * a_q[k]), sums[2q + 1] = sum(w[k] * b_q[k]). Per
 * tap one LDRSB, one LDM of the 3 words and 3 SMLALs. Thumb-2 cores get it in assembly (GCC neither
 * forms the LDM nor keeps the six accumulator registers apart); the host the same sums in C. */
#if defined(MF_SC_ASM)
#define MF_SC_STEP                                                                                                     \
    "ldrsb r11, [%[w]], #1\n\t"                                                                                       \
    "ldmia %[x]!, {r8, r10, r12}\n\t"                                                                                 \
    "smlal r0, r1, r8, r11\n\t"                                                                                       \
    "smlal r2, r3, r10, r11\n\t"                                                                                      \
    "smlal r4, r5, r12, r11\n\t"
#endif

#if defined(MF_SC_ASM)
/* The loop and the decode of mf_sc_dot3: the six sums left in r0 .. r5. */
#define MF_SC_DOT3_ASM                                                                                                 \
    "mov r0, #0x400000\n\t" /* MF_SC_ROUND */                                                                         \
    "movs r1, #0\n\t"                                                                                                 \
    "mov r2, r0\n\t"                                                                                                  \
    "movs r3, #0\n\t"                                                                                                 \
    "mov r4, r0\n\t"                                                                                                  \
    "movs r5, #0\n\t"                                                                                                 \
    "tst %[n], #1\n\t"                                                                                                \
    "beq 1f\n\t" MF_SC_STEP                                                                                           \
    "1:\n\t"                                                                                                          \
    "tst %[n], #2\n\t"                                                                                                \
    "beq 2f\n\t" MF_SC_STEP MF_SC_STEP                                                                                \
    "2:\n\t"                                                                                                          \
    "tst %[n], #4\n\t"                                                                                                \
    "beq 5f\n\t" MF_SC_STEP MF_SC_STEP MF_SC_STEP MF_SC_STEP                                                          \
    "5:\n\t"                                                                                                          \
    "lsrs %[n], %[n], #3\n\t"                                                                                         \
    "beq 4f\n\t"                                                                                                      \
    "3:\n\t" MF_SC_STEP MF_SC_STEP MF_SC_STEP MF_SC_STEP MF_SC_STEP MF_SC_STEP MF_SC_STEP MF_SC_STEP                  \
    "subs %[n], %[n], #1\n\t"                                                                                         \
    "bne 3b\n\t"                                                                                                      \
    "4:\n\t" /* pair q: bits 0..22 of the low word hold sum(w * a) + 2^22, bits 23..63 sum(w * b) */                 \
    "ubfx r11, r0, #0, #23\n\t"                                                                                       \
    "lsrs r0, r0, #23\n\t"                                                                                            \
    "orr r1, r0, r1, lsl #9\n\t"                                                                                      \
    "sub r0, r11, #0x400000\n\t"                                                                                      \
    "ubfx r11, r2, #0, #23\n\t"                                                                                       \
    "lsrs r2, r2, #23\n\t"                                                                                            \
    "orr r3, r2, r3, lsl #9\n\t"                                                                                      \
    "sub r2, r11, #0x400000\n\t"                                                                                      \
    "ubfx r11, r4, #0, #23\n\t"                                                                                       \
    "lsrs r4, r4, #23\n\t"                                                                                            \
    "orr r5, r4, r5, lsl #9\n\t"                                                                                      \
    "sub r4, r11, #0x400000\n\t"

/* One output of mf_sc_store6 (sum in register r): mf_sc_requant_fast, SSAT, the store. */
#define MF_SC_OUT6(r, i)                                                                                               \
    "mov r6, #0x40000000\n\t"                                                                                         \
    "mov r8, r11\n\t"                                                                                                 \
    "smlal r6, r8, " r ", r10\n\t"                                                                                    \
    "cmp r8, r11\n\t"                                                                                                 \
    "itt lt\n\t"                                                                                                      \
    "sublt r8, r8, #1\n\t"                                                                                            \
    "addlt r8, r8, r6, lsr #31\n\t"                                                                                   \
    "asr r6, r8, r12\n\t"                                                                                             \
    "ssat r6, #8, r6\n\t"                                                                                             \
    "ldr r8, [%[p], #16 + 4 * " #i "]\n\t"                                                                            \
    "strb r6, [r8, %[f]]\n\t"
#endif

#if defined(MF_SC_ASM)
/* The six sums of MF_SC_DOT3_ASM in the register variables s0 .. s5 (r0 .. r5). */
#define MF_SC_DOT3_STMT(cols, w, n)                                                                                    \
    register int32_t s0 __asm__("r0");                                                                                \
    register int32_t s1 __asm__("r1");                                                                                \
    register int32_t s2 __asm__("r2");                                                                                \
    register int32_t s3 __asm__("r3");                                                                                \
    register int32_t s4 __asm__("r4");                                                                                \
    register int32_t s5 __asm__("r5");                                                                                \
    __asm__ volatile(MF_SC_DOT3_ASM                                                                                    \
                     : "=r"(s0), "=r"(s1), "=r"(s2), "=r"(s3), "=r"(s4), "=r"(s5), [x] "+r"(cols), [w] "+r"(w),        \
                       [n] "+r"(n)                                                                                     \
                     :                                                                                                 \
                     : "r8", "r10", "r11", "r12", "cc", "memory")
#endif

static inline __attribute__((always_inline)) void mf_sc_dot3(const int32_t *cols, const int8_t *w, uint32_t n,
                                                            int32_t sums[6]) {
#if defined(MF_SC_ASM)
    MF_SC_DOT3_STMT(cols, w, n);
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
    sums[4] = s4;
    sums[5] = s5;
#else
    int64_t a[3] = {MF_SC_ROUND, MF_SC_ROUND, MF_SC_ROUND};
    for (; n > 0; n--, cols += 3) {
        const int32_t wv = *w++;
        for (uint32_t q = 0; q < 3; q++) a[q] += (int64_t)wv * cols[q];
    }
    for (uint32_t q = 0; q < 3; q++) {
        sums[2 * q] = mf_sc_low(a[q]);
        sums[2 * q + 1] = mf_sc_high(a[q]);
    }
#endif
}

/* The output stage MF_SC_FAST_SAT of one channel for six outputs out[i][f]: the channel's constants
 * (mult, k_high, right_m1 as mf_sc_requant_fast takes them; bias), then the six output rows. */
typedef struct {
    int32_t mult, k_high, right_m1, bias;
    int8_t *out[6];
} mf_sc_out6;

#if defined(MF_SC_ASM)
/* The six sums in s0 .. s5 (r0 .. r5) through the output stage of prm into out[i][f]. */
#define MF_SC_STORE6_STMT(prm, f)                                                                                      \
    __asm__ volatile("ldm %[p], {r10, r11, r12}\n\t" /* mult, k_high, right_m1 */                                      \
                     "ldr r8, [%[p], #12]\n\t"       /* bias */                                                        \
                     "add r0, r0, r8\n\t"                                                                             \
                     "add r1, r1, r8\n\t"                                                                             \
                     "add r2, r2, r8\n\t"                                                                             \
                     "add r3, r3, r8\n\t"                                                                             \
                     "add r4, r4, r8\n\t"                                                                             \
                     "add r5, r5, r8\n\t" MF_SC_OUT6("r0", 0) MF_SC_OUT6("r1", 1) MF_SC_OUT6("r2", 2)                 \
                         MF_SC_OUT6("r3", 3) MF_SC_OUT6("r4", 4) MF_SC_OUT6("r5", 5)                                   \
                     : "+r"(s0), "+r"(s1), "+r"(s2), "+r"(s3), "+r"(s4), "+r"(s5)                                      \
                     : [p] "r"(prm), [f] "r"(f)                                                                        \
                     : "r6", "r8", "r10", "r11", "r12", "cc", "memory")
#endif

/* The six sums through the MF_SC_FAST_SAT output stage of prm into out[i][f]. */
static inline __attribute__((always_inline)) void mf_sc_store6(const int32_t sums[6], const mf_sc_out6 *prm,
                                                              uint32_t f) {
#if defined(MF_SC_ASM)
    register int32_t s0 __asm__("r0") = sums[0];
    register int32_t s1 __asm__("r1") = sums[1];
    register int32_t s2 __asm__("r2") = sums[2];
    register int32_t s3 __asm__("r3") = sums[3];
    register int32_t s4 __asm__("r4") = sums[4];
    register int32_t s5 __asm__("r5") = sums[5];
    MF_SC_STORE6_STMT(prm, f);
#else
    for (uint32_t i = 0; i < 6; i++) {
        const int32_t v = mf_sc_requant_fast(mf_add_wrap(sums[i], prm->bias), prm->mult, prm->k_high, prm->right_m1);
        prm->out[i][f] = (int8_t)mf_sc_sat8(v);
    }
#endif
}

/* mf_sc_dot3, then the six sums through the MF_SC_FAST_SAT output stage of prm into out[i][f]. */
static inline __attribute__((always_inline)) void mf_sc_dot3_store6(const int32_t *cols, const int8_t *w,
                                                                   uint32_t n, const mf_sc_out6 *prm, uint32_t f) {
#if defined(MF_SC_ASM)
    MF_SC_DOT3_STMT(cols, w, n);
    MF_SC_STORE6_STMT(prm, f);
#else
    int32_t sums[6];
    mf_sc_dot3(cols, w, n, sums);
    mf_sc_store6(sums, prm, f);
#endif
}

/* A row of output pairs of a 3x3 depthwise window over packed pair rows (mf_scalar.h's pairs): pair i
 * (output columns 2i, 2i + 1) is sum over ky < 3, kx < 3 of w[3 ky + kx] * r_ky[2 s i + kx], decoded
 * into sums[2i] and sums[2i + 1], i < n (n > 0); s is the stride, 1 or 2. On Thumb-2 one LDM of the
 * three taps of each row, three weight loads and three SMLALs per row. */
#if defined(MF_SC_ASM)
#define MF_SC_DW3_ROW(r, w0)                                                                                           \
    "ldm " r ", {r4, r5, r6}\n\t"                                                                                     \
    "ldr r8, [%[w], #" #w0 "]\n\t"                                                                                    \
    "smlal r10, r11, r4, r8\n\t"                                                                                      \
    "ldr r8, [%[w], #" #w0 "+4]\n\t"                                                                                  \
    "smlal r10, r11, r5, r8\n\t"                                                                                      \
    "ldr r8, [%[w], #" #w0 "+8]\n\t"                                                                                  \
    "smlal r10, r11, r6, r8\n\t"
#define MF_SC_DW3_LOOP(step)                                                                                           \
    "1:\n\t"                                                                                                          \
    "mov r10, #0x400000\n\t"                                                                                          \
    "movs r11, #0\n\t" MF_SC_DW3_ROW("%[r0]", 0) MF_SC_DW3_ROW("%[r1]", 12) MF_SC_DW3_ROW("%[r2]", 24)               \
    "add %[r0], %[r0], #" #step "\n\t"                                                                                \
    "add %[r1], %[r1], #" #step "\n\t"                                                                                \
    "add %[r2], %[r2], #" #step "\n\t"                                                                                \
    "ubfx r4, r10, #0, #23\n\t"                                                                                       \
    "lsrs r10, r10, #23\n\t"                                                                                          \
    "orr r11, r10, r11, lsl #9\n\t"                                                                                   \
    "sub r4, r4, #0x400000\n\t"                                                                                       \
    "strd r4, r11, [%[s]], #8\n\t"                                                                                    \
    "subs %[n], %[n], #1\n\t"                                                                                         \
    "bne 1b\n\t"
#endif

static inline void mf_sc_dw3_row(const int32_t *r0, const int32_t *r1, const int32_t *r2, const int32_t *w,
                                 uint32_t s, uint32_t n, int32_t *sums) {
#if defined(MF_SC_ASM)
    if (s == 1) {
        __asm__ volatile(MF_SC_DW3_LOOP(8)
                         : [r0] "+r"(r0), [r1] "+r"(r1), [r2] "+r"(r2), [s] "+r"(sums), [n] "+r"(n)
                         : [w] "r"(w)
                         : "r4", "r5", "r6", "r8", "r10", "r11", "cc", "memory");
    } else {
        __asm__ volatile(MF_SC_DW3_LOOP(16)
                         : [r0] "+r"(r0), [r1] "+r"(r1), [r2] "+r"(r2), [s] "+r"(sums), [n] "+r"(n)
                         : [w] "r"(w)
                         : "r4", "r5", "r6", "r8", "r10", "r11", "cc", "memory");
    }
#else
    for (; n > 0; n--, r0 += 2 * s, r1 += 2 * s, r2 += 2 * s, sums += 2) {
        int64_t a = MF_SC_ROUND;
        for (uint32_t kx = 0; kx < 3; kx++) {
            a += (int64_t)w[kx] * r0[kx] + (int64_t)w[3 + kx] * r1[kx] + (int64_t)w[6 + kx] * r2[kx];
        }
        sums[0] = mf_sc_low(a);
        sums[1] = mf_sc_high(a);
    }
#endif
}

/* sums[i] = sum((x[k] + off) * p_i[k]), k < n, i < 4: one LDRSB of x and its offset, then four LDRSB
 * + MLA per k (assembly on Thumb-2, two k per loop). */
#if defined(MF_SC_ASM)
#define MF_SC_DOT4_STEP                                                                                                \
    "ldrsb %[xv], [%[x]], #1\n\t"                                                                                     \
    "ldrsb %[wv], [%[p0]], #1\n\t"                                                                                    \
    "add %[xv], %[xv], %[off]\n\t"                                                                                    \
    "mla %[a0], %[xv], %[wv], %[a0]\n\t"                                                                              \
    "ldrsb %[wv], [%[p1]], #1\n\t"                                                                                    \
    "mla %[a1], %[xv], %[wv], %[a1]\n\t"                                                                              \
    "ldrsb %[wv], [%[p2]], #1\n\t"                                                                                    \
    "mla %[a2], %[xv], %[wv], %[a2]\n\t"                                                                              \
    "ldrsb %[wv], [%[p3]], #1\n\t"                                                                                    \
    "mla %[a3], %[xv], %[wv], %[a3]\n\t"
#endif
static inline void mf_sc_dot4(const int8_t *x, const int8_t *p0, const int8_t *p1, const int8_t *p2,
                              const int8_t *p3, uint32_t n, int32_t off, int32_t sums[4]) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#if defined(MF_SC_ASM)
    uint32_t pairs = n >> 1;
    if (pairs > 0) {
        int32_t xv, wv;
        __asm__ volatile("1:\n\t" MF_SC_DOT4_STEP MF_SC_DOT4_STEP
                         "subs %[n], %[n], #1\n\t"
                         "bne 1b\n\t"
                         : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [p0] "+r"(p0),
                           [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [n] "+r"(pairs), [xv] "=&r"(xv),
                           [wv] "=&r"(wv)
                         : [off] "r"(off)
                         : "cc", "memory");
    }
    n &= 1u;
#endif
    for (; n > 0; n--) {
        const int32_t xo = *x++ + off;
        a0 += xo * *p0++;
        a1 += xo * *p1++;
        a2 += xo * *p2++;
        a3 += xo * *p3++;
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
}

/* One output pixel of a 3x3 depthwise window for four channels (pixel-major; the depthwise kernel's
 * small images): tab holds the four accumulators' start (bias + offset * sum(w), so taps need no
 * offset), the 9 x 4 weights (tap-major), then each channel's mf_sc_requant_fast constants (mult,
 * k_high, right_m1); the taps are the words at xp + toff[t] (four channel bytes each; taps outside the
 * input point at the zero point, whose x + offset is 0). Output stage MF_SC_FAST_SAT into out[0..3].
 * Thumb-2: per tap one offset load, one word load, one LDM of the weights, four SXTB + MLA. */
#define MF_SC_DW4_WORDS 56 /* tab's words: 4 + 36 + 12, then (assembly) the output address */

#if defined(MF_SC_ASM)
#define MF_SC_DW4_TAP(t)                                                                                               \
    "ldr r8, [%[toff], #4 * " #t "]\n\t"                                                                              \
    "ldr r8, [%[xp], r8]\n\t"                                                                                         \
    "ldm r12!, {r4, r5, r6, r10}\n\t"                                                                                 \
    "sxtb r11, r8\n\t"                                                                                                \
    "mla r0, r11, r4, r0\n\t"                                                                                         \
    "sxtb r11, r8, ror #8\n\t"                                                                                        \
    "mla r1, r11, r5, r1\n\t"                                                                                         \
    "sxtb r11, r8, ror #16\n\t"                                                                                       \
    "mla r2, r11, r6, r2\n\t"                                                                                         \
    "asr r11, r8, #24\n\t"                                                                                            \
    "mla r3, r11, r10, r3\n\t"
#define MF_SC_DW4_OUT(r, i)                                                                                            \
    "ldm r12!, {r4, r5, r6}\n\t"                                                                                      \
    "mov r8, #0x40000000\n\t"                                                                                         \
    "mov r10, r5\n\t"                                                                                                 \
    "smlal r8, r10, " r ", r4\n\t"                                                                                    \
    "cmp r10, r5\n\t"                                                                                                 \
    "itt lt\n\t"                                                                                                      \
    "sublt r10, r10, #1\n\t"                                                                                          \
    "addlt r10, r10, r8, lsr #31\n\t"                                                                                 \
    "asr r8, r10, r6\n\t"                                                                                             \
    "ssat r8, #8, r8\n\t"                                                                                             \
    "ldr r10, [%[tab], #4 * 52]\n\t"                                                                                  \
    "strb r8, [r10, #" #i "]\n\t"
#endif

static inline void mf_sc_dw4_sat(int32_t *tab, const int32_t *toff, const int8_t *xp, int8_t *out) {
#if defined(MF_SC_ASM)
    tab[52] = mf_wrap32((uint32_t)(uintptr_t)out);
    __asm__ volatile("ldm %[tab], {r0, r1, r2, r3}\n\t"
                     "add r12, %[tab], #16\n\t" MF_SC_DW4_TAP(0) MF_SC_DW4_TAP(1) MF_SC_DW4_TAP(2) MF_SC_DW4_TAP(3)
                         MF_SC_DW4_TAP(4) MF_SC_DW4_TAP(5) MF_SC_DW4_TAP(6) MF_SC_DW4_TAP(7) MF_SC_DW4_TAP(8)
                             MF_SC_DW4_OUT("r0", 0) MF_SC_DW4_OUT("r1", 1) MF_SC_DW4_OUT("r2", 2)
                                 MF_SC_DW4_OUT("r3", 3)
                     :
                     : [tab] "r"(tab), [toff] "r"(toff), [xp] "r"(xp)
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r10", "r11", "r12", "cc", "memory");
#else
    uint32_t acc[4];
    for (uint32_t i = 0; i < 4; i++) acc[i] = (uint32_t)tab[i];
    for (uint32_t t = 0; t < 9; t++) {
        const int8_t *x = xp + toff[t];
        for (uint32_t i = 0; i < 4; i++) acc[i] += (uint32_t)x[i] * (uint32_t)tab[4 + 4 * t + i]; /* wraps */
    }
    for (uint32_t i = 0; i < 4; i++) {
        const int32_t *c = tab + 40 + 3 * i;
        out[i] = (int8_t)mf_sc_sat8(mf_sc_requant_fast(mf_wrap32(acc[i]), c[0], c[1], c[2]));
    }
#endif
}

#endif /* MF_USE_SCALAR_FAST */
#endif /* MF_SCALAR_H */
