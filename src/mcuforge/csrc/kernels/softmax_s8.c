/*
 * softmax_s8: int8 softmax over the last axis, bit-exact with CMSIS-NN arm_softmax_s8 and
 * mcuforge.kernels.softmax_s8 (output scale 1/256, zero point -128).
 *
 * The fixed-point helpers are gemmlowp's as CMSIS-NN restates them (arm_nnsupportfunctions.h):
 * a saturating doubling high multiply with a sign-dependent nudge and truncating division, exp on
 * negative Q5.26 values, 1 / (1 + x) by Newton-Raphson, a saturating multiply by a power of two.
 * Every int32 operation wraps as on the target. One deviation from the CMSIS text, where it is
 * undefined: when the sum of exps reaches 2^28 the divide exponent exceeds 31 (a shift by 32 or
 * more in C); the result is then defined as the exact rounding, 0 (output -128), as in Python.
 */
#include "mf_kernel_util.h"

enum { A_MULT, A_SHIFT, A_DIFF_MIN };

/* Largest row: each exp term adds at most 2^19 to the int32 sum, so 4095 cannot overflow it. */
#define MF_SOFTMAX_MAX_ROW 4095u
#define ACCUM_BITS 12

static int32_t wrap64(int64_t v) {
    const uint32_t u = (uint32_t)((uint64_t)v & 0xFFFFFFFFu);
    int32_t r;
    memcpy(&r, &u, 4);
    return r;
}

/* arm_nn_doubling_high_mult: (a*b + nudge) / 2^31 truncated toward zero; MIN * MIN saturates. */
static int32_t doubling_high_mult(int32_t a, int32_t b) {
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    const int64_t nudge = (a < 0) != (b < 0) ? 1 - (1ll << 30) : (1ll << 30);
    const int64_t p = (int64_t)a * b + nudge; /* |p| <= 2^62: -p does not overflow */
    return wrap64(p >= 0 ? p >> 31 : -((-p) >> 31));
}

/* arm_nn_divide_by_power_of_two: x / 2^e rounded half away from zero, e in [0, 31]. */
static int32_t divide_by_power_of_two(int32_t x, int32_t e) {
    const int32_t mask = (int32_t)((1u << e) - 1u);
    const int32_t remainder = x & mask;
    const int32_t result = x >> e; /* arithmetic shift (gcc, clang, armclang), as CMSIS-NN assumes */
    const int32_t threshold = (mask >> 1) + (result < 0 ? 1 : 0);
    return result + (remainder > threshold ? 1 : 0);
}

/* arm_nn_mult_by_power_of_two: saturating x << e, e in [1, 30]. */
static int32_t mult_by_power_of_two(int32_t x, int32_t e) {
    const int32_t threshold = (int32_t)((1u << (31 - e)) - 1u);
    if (x > threshold) return INT32_MAX;
    if (x < -threshold) return INT32_MIN;
    return wrap64((int64_t)((uint64_t)(uint32_t)x << e));
}

/* arm_nn_exp_on_negative_values: exp of a Q5.26 value <= 0 as Q0.31 (exp(0) -> INT32_MAX). */
static int32_t exp_on_negative_values(int32_t val) {
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t mod_minus_quarter = (int32_t)((uint32_t)val & ((1u << 24) - 1u)) - (1 << 24);
    const uint32_t remainder = (uint32_t)wrap64((int64_t)mod_minus_quarter - val);
    const int32_t x = wrap64((int64_t)mod_minus_quarter * 32 + (1 << 28));
    const int32_t x2 = doubling_high_mult(x, x);
    int32_t poly = wrap64((int64_t)divide_by_power_of_two(doubling_high_mult(x2, x2), 2) +
                          doubling_high_mult(x2, x));
    poly = wrap64((int64_t)doubling_high_mult(poly, 715827883) + x2);
    poly = wrap64((int64_t)x + divide_by_power_of_two(poly, 1));
    int32_t result = wrap64((int64_t)1895147668 + doubling_high_mult(1895147668, poly));
    for (uint32_t k = 0; k < 7; k++) {
        if (remainder & (1u << (24 + k))) result = doubling_high_mult(result, barrel[k]);
    }
    return val == 0 ? INT32_MAX : result;
}

/* arm_nn_one_over_one_plus_x_for_x_in_0_1: 1 / (1 + x) for Q0.31 x in [0, 1), as Q0.31. */
static int32_t one_over_one_plus_x_for_x_in_0_1(int32_t val) {
    const int64_t sum = (int64_t)val + INT32_MAX;
    const int64_t rounded = sum + (sum >= 0 ? 1 : -1);
    const int32_t half_denominator = wrap64(rounded / 2); /* C division truncates toward zero */
    int32_t x = wrap64((int64_t)1515870810 + doubling_high_mult(half_denominator, -1010580540));
    for (int i = 0; i < 3; i++) {
        const int32_t hx = wrap64((int64_t)(1 << 29) - doubling_high_mult(half_denominator, x));
        const int32_t correction = doubling_high_mult(x, hx);
        x = wrap64((int64_t)x + mult_by_power_of_two(correction, 2));
    }
    return mult_by_power_of_two(x, 1);
}

/* Leading zeros of a positive int32 (portable; 31 - floor(log2(x))). */
static int32_t leading_zeros(uint32_t x) {
    int32_t n = 0;
    for (uint32_t step = 16; step; step >>= 1) {
        if (x < (1u << (32 - step))) {
            n += (int32_t)step;
            x <<= step;
        }
    }
    return n;
}

/* EXP_ON_NEG(MUL_SAT(diff * 2^shift, multiplier)) for diff in [-255, 0] */
static int32_t exp_of_diff(int32_t diff, int32_t mult, int32_t shift) {
    const int32_t scaled = wrap64((int64_t)((uint64_t)(uint32_t)diff << shift));
    return exp_on_negative_values(doubling_high_mult(scaled, mult));
}

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is(&o, MF_INT8, -1) || x.rank < 1 || x.numel != o.numel) return MF_ERR_SHAPE;
    const uint32_t row = x.shape[x.rank - 1];
    if (row < 1 || row > MF_SOFTMAX_MAX_ROW) return MF_ERR_SHAPE;
    if (mf_value_int(mf_attr(c, A_MULT)) < 0) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_value_int(mf_attr(c, A_SHIFT)), 0, 31)) return MF_ERR_SHAPE;
    if (mf_value_int(mf_attr(c, A_DIFF_MIN)) > 0) return MF_ERR_SHAPE;
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    const int32_t mult = mf_value_int(mf_attr(c, A_MULT)), shift = mf_value_int(mf_attr(c, A_SHIFT));
    const int32_t diff_min = mf_value_int(mf_attr(c, A_DIFF_MIN));
    const uint32_t row = x.shape[x.rank - 1], rows = x.numel / row;
    const int8_t *in = (const int8_t *)x.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t r = 0; r < rows; r++, in += row, out += row) {
        int32_t max = in[0];
        for (uint32_t j = 1; j < row; j++) max = in[j] > max ? in[j] : max;
        int32_t sum = 0; /* in [2^19, 4095 * 2^19]: the max entry alone adds exp(0) >> 12 */
        for (uint32_t j = 0; j < row; j++) {
            const int32_t diff = in[j] - max;
            if (diff >= diff_min) sum += divide_by_power_of_two(exp_of_diff(diff, mult, shift), ACCUM_BITS);
        }
        const int32_t headroom = leading_zeros((uint32_t)sum);
        const uint32_t shifted = ((uint32_t)sum << headroom) - 0x80000000u; /* in [0, 2^31) */
        const int32_t scale = one_over_one_plus_x_for_x_in_0_1((int32_t)shifted);
        const int32_t exponent = ACCUM_BITS - headroom + 23;
        for (uint32_t j = 0; j < row; j++) {
            const int32_t diff = in[j] - max;
            int32_t v = -128;
            if (diff >= diff_min && exponent <= 31) {
                const int32_t p = divide_by_power_of_two(doubling_high_mult(scale, exp_of_diff(diff, mult, shift)),
                                                         exponent);
                const int64_t q = (int64_t)p - 128;
                v = q > 127 ? 127 : (q < -128 ? -128 : (int32_t)q);
            }
            out[j] = (int8_t)v;
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_softmax_s8 = {MF_KIND_HEAD_softmax_s8, check, run};
