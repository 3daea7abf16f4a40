/*
 * Portable float32 math (see mf_math.h): float32 + - * / and bit operations only, in a fixed
 * order, so the result bits do not depend on the target, the FPU or the C library.
 *
 * exp and log follow the classic fdlibm scheme (Cody-Waite range reduction with an exact high
 * part, then a correction term); their series coefficients are exact Taylor / Bernoulli values.
 * The tanh and erf polynomials are near-minimax fits (reweighted least squares in float64,
 * relative error of the fit below 1e-9, coefficients rounded to float32).
 */
#include "mf_math.h"

/* ln 2 = LN2_HI + LN2_LO; LN2_HI (0x3f317200) has 15 significant bits, so k * LN2_HI is exact
 * for |k| < 512. */
#define LN2_HI 0x1.62e4p-1f
#define LN2_LO 0x1.7f7d1cp-20f
#define LOG2E 0x1.715476p+0f
/* Largest x with e^x finite, and an x below which e^x rounds to 0. */
#define EXP_OVERFLOW 0x1.62e42ep+6f
#define EXP_UNDERFLOW -104.0f

/* y * 2^k for k in [-152, 128], one rounding at most (only when the result is subnormal). */
static float scale2(float y, int k) {
    if (k > 127) return y * 0x1p127f * mf_bits_float((uint32_t)(k - 127 + 127) << 23);
    if (k < -125) return y * mf_bits_float((uint32_t)(k + 100 + 127) << 23) * 0x1p-100f;
    return y * mf_bits_float((uint32_t)(k + 127) << 23);
}

float mf_expf(float x) {
    if (mf_isnanf(x)) return mf_nanf();
    if (x > EXP_OVERFLOW) return mf_bits_float(0x7f800000u);
    if (x < EXP_UNDERFLOW) return 0.0f;
    /* x = k ln2 + r, |r| <= ln2 / 2 (+ rounding of k): hi = x - k LN2_HI is exact. */
    const float kf = x * LOG2E;
    const int k = (int)(kf < 0.0f ? kf - 0.5f : kf + 0.5f);
    const float fk = (float)k;
    const float hi = x - fk * LN2_HI;
    const float lo = fk * LN2_LO;
    const float r = hi - lo;
    /* e^r = 1 + r + r c / (2 - c), c = r - r^2 (1/6 - r^2/360 + r^4/15120) (Bernoulli series of
     * r (e^r + 1) / (e^r - 1)); lo is folded in late so that the leading terms stay exact. */
    const float t = r * r;
    const float c = r - t * (0x1.555556p-3f + t * (-0x1.6c16c2p-9f + t * 0x1.1566acp-14f));
    const float y = 1.0f - ((lo - (r * c) / (2.0f - c)) - hi);
    return k == 0 ? y : scale2(y, k);
}

float mf_expm1f(float x) {
    const float ax = mf_bits_float(mf_float_bits(x) & 0x7fffffffu);
    if (mf_isnanf(x)) return mf_nanf();
    if (ax < 0x1p-25f) return x; /* e^x - 1 = x (1 + x/2 + ...): keeps -0, gradual for subnormals */
    if (ax < 0.5f) {
        /* x + x^2 (1/2 + x/6 + ... + x^8/10!): truncation below 2^-29 relative for |x| < 1/2 */
        const float p = 0x1p-1f +
                        x * (0x1.555556p-3f +
                             x * (0x1.555556p-5f +
                                  x * (0x1.111112p-7f +
                                       x * (0x1.6c16c2p-10f +
                                            x * (0x1.a01a02p-13f + x * (0x1.a01a02p-16f + x * (0x1.71de3ap-19f + x * 0x1.27e4fcp-22f)))))));
        return x + x * (x * p);
    }
    if (x < -18.0f) return -1.0f; /* e^x < 2^-25: rounds to -1 */
    return mf_expf(x) - 1.0f;
}

float mf_logf(float x) {
    uint32_t ix = mf_float_bits(x);
    int e = 0;
    if (mf_isnanf(x)) return mf_nanf();
    if ((ix & 0x7fffffffu) == 0) return mf_bits_float(0xff800000u); /* +-0 -> -inf */
    if (ix >> 31) return mf_nanf();                                  /* x < 0 */
    if (ix == 0x7f800000u) return x;                                 /* +inf */
    if (ix < 0x00800000u) {                                          /* subnormal: scale up exactly */
        ix = mf_float_bits(x * 0x1p23f);
        e = -23;
    }
    e += (int)(ix >> 23) - 127;
    ix &= 0x007fffffu;
    /* m in [sqrt(1/2), sqrt(2)): x = 2^e m, f = m - 1 exact. */
    if (ix > 0x3504f3u) {
        ix |= 0x3f000000u; /* m / 2 */
        e += 1;
    } else {
        ix |= 0x3f800000u;
    }
    const float f = mf_bits_float(ix) - 1.0f;
    /* log(1 + f) = f - (hfsq - s (hfsq + R)), s = f / (2 + f), R = 2/3 s^2 + 2/5 s^4 + ...: the
     * atanh series 2 atanh(s) (|s| < 0.172, truncation below 3e-9 relative). */
    const float s = f / (2.0f + f);
    const float z = s * s;
    const float R = z * (0x1.555556p-1f + z * (0x1.99999ap-2f + z * (0x1.24924ap-2f + z * 0x1.c71c72p-3f)));
    const float hfsq = 0.5f * f * f;
    if (e == 0) return f - (hfsq - s * (hfsq + R));
    const float dk = (float)e;
    return dk * LN2_HI - ((hfsq - (s * (hfsq + R) + dk * LN2_LO)) - f);
}

float mf_tanhf(float x) {
    const uint32_t sign = mf_float_bits(x) & 0x80000000u;
    const float ax = mf_bits_float(mf_float_bits(x) & 0x7fffffffu);
    if (mf_isnanf(x)) return mf_nanf();
    if (ax < 0x1p-12f) return x; /* tanh x = x (1 - x^2/3 + ...): x^2/3 < 2^-25; keeps -0 */
    if (ax < 0.55f) {
        /* tanh x = x + x z P(z), z = x^2 */
        const float z = x * x;
        const float p = -0x1.555554p-2f +
                        z * (0x1.1110dcp-3f +
                             z * (-0x1.ba0996p-5f + z * (0x1.64e3c8p-6f + z * (-0x1.13b55p-7f + z * 0x1.3a0622p-9f))));
        return x + x * (z * p);
    }
    float r;
    if (ax >= 9.1f) {
        r = 1.0f; /* 1 - tanh(9.1) < 2^-25: rounds to 1 */
    } else {
        r = 1.0f - 2.0f / (mf_expf(2.0f * ax) + 1.0f);
    }
    return mf_bits_float(mf_float_bits(r) | sign);
}

float mf_erff(float x) {
    const uint32_t sign = mf_float_bits(x) & 0x80000000u;
    const float ax = mf_bits_float(mf_float_bits(x) & 0x7fffffffu);
    if (mf_isnanf(x)) return mf_nanf();
    if (ax < 1.0f) {
        /* erf x = x + x P(x^2), P(0) = 2/sqrt(pi) - 1; exact for +-0, gradual for subnormals */
        const float z = x * x;
        const float p = 0x1.06eba8p-3f +
                        z * (-0x1.81273ep-2f +
                             z * (0x1.ce2cf8p-4f +
                                  z * (-0x1.b7f90cp-6f + z * (0x1.5405b0p-8f + z * (-0x1.a3f6f0p-11f + z * 0x1.496a0ap-14f)))));
        return x + x * p;
    }
    float r;
    if (ax >= 4.0f) {
        r = 1.0f; /* erfc(4) < 2^-25 */
    } else {
        /* erf x = 1 - e^(-x^2) G(x), G = erfcx, a polynomial in t = 1/x - 0.625 on [1, 4] */
        const float t = 1.0f / ax - 0.625f;
        const float g = 0x1.394bbep-2f +
                        t * (0x1.87756cp-2f +
                             t * (-0x1.61111p-3f +
                                  t * (0x1.667b2cp-5f +
                                       t * (0x1.802d8p-6f + t * (-0x1.822db4p-5f + t * (0x1.508dacp-5f + t * -0x1.260384p-6f))))));
        r = 1.0f - mf_expf(-(ax * ax)) * g;
    }
    return mf_bits_float(mf_float_bits(r) | sign);
}

float mf_sigmoidf(float x) {
    if (mf_isnanf(x)) return mf_nanf();
    /* t = e^-|x| in (0, 1]: no overflow; for x < 0, t / (1 + t) stays accurate where the result
     * is tiny or subnormal (1 + t rounds to 1 and the result is t itself). */
    const float t = mf_expf(-mf_bits_float(mf_float_bits(x) & 0x7fffffffu));
    return (mf_float_bits(x) >> 31) ? t / (1.0f + t) : 1.0f / (1.0f + t);
}

float mf_siluf(float x) {
    if (mf_isnanf(x) || mf_float_bits(x) == 0xff800000u) return mf_nanf(); /* -inf * 0 */
    return x * mf_sigmoidf(x);
}

float mf_geluf(float x) {
    if (mf_isnanf(x) || mf_float_bits(x) == 0xff800000u) return mf_nanf(); /* -inf * 0 */
    return 0.5f * x * (1.0f + mf_erff(x * 0x1.6a09e6p-1f));
}

float mf_gelu_tanhf(float x) {
    const float k = 0x1.988454p-1f; /* sqrt(2 / pi) */
    if (mf_isnanf(x) || mf_float_bits(x) == 0xff800000u) return mf_nanf();
    return 0.5f * x * (1.0f + mf_tanhf(k * (x + 0.044715f * x * x * x)));
}
