/*
 * Test driver for csrc/kernels/fp32/mf_math.c (tests/test_c_fp32_math.py).
 *
 * - mf_math_eval(fn, x, y, n): y[i] = function fn of x[i] (the accuracy test calls it via ctypes).
 * - mf_math_hash(fn): FNV-1a over the output bits of function fn on a fixed set of MF_MATH_N
 *   inputs made with integer arithmetic only (whole-range bit-pattern stride, a dense sweep of the
 *   useful range, special values).
 * - With -DMF_MATH_MAIN: a program printing "fn <i> <hash>" per function and "done", with stdio
 *   on the host or with the firmware's semihosting sh_puts on a board (-DMF_MATH_BOARD).
 */
#include <stdint.h>

#include "kernels/fp32/mf_math.h"

float mf_sqrtf_canon(float x);
/* sqrtf stays on libm (correctly rounded everywhere); NaN made canonical as the runtime does. */
#include <math.h>
float mf_sqrtf_canon(float x) { return mf_canonf(sqrtf(x)); }

#define MF_MATH_FUNCTIONS 9
#define MF_MATH_N 100000u

float mf_math_call(int fn, float x);
float mf_math_call(int fn, float x) {
    switch (fn) {
    case 0: return mf_expf(x);
    case 1: return mf_logf(x);
    case 2: return mf_tanhf(x);
    case 3: return mf_erff(x);
    case 4: return mf_sigmoidf(x);
    case 5: return mf_siluf(x);
    case 6: return mf_geluf(x);
    case 7: return mf_gelu_tanhf(x);
    default: return mf_sqrtf_canon(x);
    }
}

int mf_math_functions(void);
int mf_math_functions(void) { return MF_MATH_FUNCTIONS; }

void mf_math_eval(int fn, const float *x, float *y, uint32_t n);
void mf_math_eval(int fn, const float *x, float *y, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) y[i] = mf_math_call(fn, x[i]);
}

/* Input i of the fixed set, as float32 bits. */
uint32_t mf_math_input(uint32_t i);
uint32_t mf_math_input(uint32_t i) {
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
        0xffa00000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x807fffffu, 0x00800000u, 0x80800000u,
        0x7f7fffffu, 0xff7fffffu, 0x3f800000u, 0xbf800000u, 0x42b17217u, 0x42b17218u, 0xc2cff1b5u,
        0xc2cff1b4u, 0xc2ce8ed0u, 0xc2aeac50u, 0x41100000u, 0x40800000u, 0x3f0ccccdu, 0x39800000u,
    };
    const uint32_t n_special = (uint32_t)(sizeof special / sizeof special[0]);
    if (i < n_special) return special[i];
    i -= n_special;
    if (i < 40000u) return i * 107361u + 12345u; /* the whole 2^32 range, every exponent */
    i -= 40000u;
    /* |x| in [2^-14, 2^7): 2^21 floats per sign and exponent band, ~16k samples each sign */
    const uint32_t lo = 0x38800000u, hi = 0x43000000u, half = (MF_MATH_N - 40000u - n_special) / 2u;
    const uint32_t sign = i < half ? 0u : 0x80000000u;
    const uint32_t j = i < half ? i : i - half;
    return sign | (lo + (uint32_t)(((uint64_t)(hi - lo) * j) / half));
}

uint32_t mf_math_hash(int fn);
uint32_t mf_math_hash(int fn) {
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < MF_MATH_N; i++) {
        const uint32_t y = mf_float_bits(mf_math_call(fn, mf_bits_float(mf_math_input(i))));
        for (int b = 0; b < 4; b++) {
            h ^= (y >> (8 * b)) & 0xffu;
            h *= 16777619u;
        }
    }
    return h;
}

#if defined(MF_MATH_MAIN)
#if defined(MF_MATH_BOARD)
#include "semihost.h"
#define PUT(s) sh_puts(s)
#else
#include <stdio.h>
#define PUT(s) fputs(s, stdout)
#endif

int main(void) {
    for (int fn = 0; fn < MF_MATH_FUNCTIONS; fn++) {
        char line[32] = "fn 0 00000000\n";
        const uint32_t h = mf_math_hash(fn);
        line[3] = (char)('0' + fn);
        for (int d = 0; d < 8; d++) line[5 + d] = "0123456789abcdef"[(h >> (28 - 4 * d)) & 0xfu];
        PUT(line);
    }
    PUT("done\n");
    return 0;
}
#endif
