/*
 * Portable float32 math for the fp32 fallback ops: the same bits on every target.
 *
 * libm differs between targets in the last bits (glibc on the host, newlib on the boards), so a
 * following quantize op could differ by one int8 step. These functions use only IEEE float32
 * + - * / (each correctly rounded, on hardware FPUs and in libgcc's soft float alike) and exact
 * bit manipulations, evaluated in a fixed order: with -ffp-contract=off (or -std=c99, which
 * implies it in GCC) they give identical bits on the host, Cortex-M3 (soft float) and
 * Cortex-M4/M7/M33/M55 (FPU). Accuracy (tests/test_c_fp32_math.py, against float64 over a dense
 * sweep of all float32): a few ulp (see each function).
 *
 * Special values: +-inf and +-0 as C99 Annex F; overflow gives +-inf, underflow gradual (subnormal
 * results) down to +-0. Every NaN result -- from a NaN input or an invalid operation -- is the
 * canonical quiet NaN 0x7fc00000 (FPUs differ in NaN payloads and signs; this does not).
 */
#ifndef MF_MATH_H
#define MF_MATH_H

#include <stdint.h>
#include <string.h>

/* Bit-exact reinterpretations. */
static inline uint32_t mf_float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float mf_bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define MF_CANONICAL_NAN_BITS 0x7fc00000u

/* The canonical quiet NaN. */
static inline float mf_nanf(void) { return mf_bits_float(MF_CANONICAL_NAN_BITS); }
/* 1 if x is a NaN (an integer test: no float compare, cheap in soft float). */
static inline int mf_isnanf(float x) { return (mf_float_bits(x) & 0x7fffffffu) > 0x7f800000u; }
/* x, or the canonical NaN if x is any NaN: makes results of ordinary arithmetic (whose NaN bits
 * depend on the FPU) the same bytes everywhere. */
static inline float mf_canonf(float x) { return mf_isnanf(x) ? mf_nanf() : x; }

float mf_expf(float x);      /* e^x; max error 0.9 ulp */
float mf_expm1f(float x);    /* e^x - 1, accurate near 0; max error ~2 ulp */
float mf_logf(float x);      /* natural log; x < 0 -> NaN, +-0 -> -inf; max error 0.8 ulp */
float mf_tanhf(float x);     /* max error 1.4 ulp */
float mf_erff(float x);      /* max error 1.2 ulp */
float mf_sigmoidf(float x);  /* 1 / (1 + e^-x), accurate also where it is subnormal; max error 2.3 ulp */
float mf_siluf(float x);     /* x * sigmoid(x); silu(-inf) = NaN as torch */
float mf_geluf(float x);     /* 0.5 x (1 + erf(x / sqrt 2)); gelu(-inf) = NaN as torch */
float mf_gelu_tanhf(float x); /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); gelu(-inf) = NaN */

#endif /* MF_MATH_H */
