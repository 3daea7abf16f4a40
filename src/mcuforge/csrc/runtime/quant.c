/*
 * Fixed-point requantization (CMSIS-NN arm_nn_requantize, default double rounding) and the
 * float <-> int8 / int16 conversions of the fp32 fallback (torch quantized_decomposed, float32 math).
 * Bit-exact with mcuforge/kernels/quant_utils.py.
 */
#include <math.h>

#include "mf_internal.h"

/* int32 from the low 32 bits, two's complement (well defined, unlike a narrowing cast). */
static int32_t wrap32(uint32_t u) {
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

/* arm_nn_doubling_high_mult_no_sat: (a * b + 2^30) >> 31, the rounding constant whatever the
 * sign. The only overflow (a = b = INT32_MIN) wraps to INT32_MIN as CMSIS's cast does. */
static int32_t doubling_high_mult_no_sat(int32_t a, int32_t b) {
    int64_t prod = (int64_t)a * b + (1ll << 30);
    /* >> of a negative value is an arithmetic shift on every compiler we target (gcc, clang,
     * armclang), as CMSIS-NN assumes; a division would cost a library call on Cortex-M. */
    return wrap32((uint32_t)(uint64_t)(prod >> 31));
}

/* arm_nn_divide_by_power_of_two: x / 2^e rounded half away from zero, e in [0, 31]. */
static int32_t divide_by_power_of_two(int32_t x, int32_t e) {
    const int32_t mask = (int32_t)((1u << e) - 1u);
    const int32_t remainder = x & mask;
    int32_t result = x >> e; /* arithmetic shift, see above */
    const int32_t threshold = (mask >> 1) + (result < 0 ? 1 : 0);
    return result + (remainder > threshold ? 1 : 0);
}

int32_t mf_requantize(int32_t val, int32_t multiplier, int32_t shift) {
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    int32_t x = wrap32((uint32_t)val << left); /* a wrapping 32-bit multiply by 2^left */
    return divide_by_power_of_two(doubling_high_mult_no_sat(x, multiplier), right);
}

/* round(x * (1/scale)) + zero_point, clamped, in float32 as torch does. 1.0f / scale equals
 * float32(1.0 / double(scale)) (torch's order): a double-rounded float division is innocuous
 * since 53 >= 2 * 24 + 2 (Figueroa), so no double arithmetic is needed on soft-float parts. */
/* round(x * (1/scale)) + zero_point clamped to [qmin, qmax] in float32; NaN gives 0 (numpy's cast on the
 * host). Shared by the int8 and int16 conversions. */
static float quantize_one(float x, float inv_scale, float zp, float qmin, float qmax) {
    float v = rintf(x * inv_scale) + zp; /* rintf: round half to even (default mode) */
    if (v != v) return 0.0f;
    return v < qmin ? qmin : (v > qmax ? qmax : v);
}

void mf_quantize_f32_s8(const float *x, int8_t *q, uint32_t n, float scale, int32_t zero_point) {
    const float inv_scale = 1.0f / scale;
    const float zp = (float)zero_point;
    for (uint32_t i = 0; i < n; i++) q[i] = (int8_t)quantize_one(x[i], inv_scale, zp, -128.0f, 127.0f);
}

void mf_dequantize_s8_f32(const int8_t *q, float *x, uint32_t n, float scale, int32_t zero_point) {
    const float zp = (float)zero_point;
    for (uint32_t i = 0; i < n; i++) x[i] = ((float)q[i] - zp) * scale;
}

void mf_quantize_f32_s16(const float *x, int16_t *q, uint32_t n, float scale, int32_t zero_point) {
    const float inv_scale = 1.0f / scale;
    const float zp = (float)zero_point;
    for (uint32_t i = 0; i < n; i++) q[i] = (int16_t)quantize_one(x[i], inv_scale, zp, -32768.0f, 32767.0f);
}

void mf_dequantize_s16_f32(const int16_t *q, float *x, uint32_t n, float scale, int32_t zero_point) {
    const float zp = (float)zero_point;
    for (uint32_t i = 0; i < n; i++) x[i] = ((float)q[i] - zp) * scale;
}
