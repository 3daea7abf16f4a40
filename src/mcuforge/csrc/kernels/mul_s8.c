/*
 * mul_s8: int8 elementwise multiply, bit-exact with CMSIS-NN arm_elementwise_mul_s8 (TFLite int8 MUL
 * parameters) and mcuforge.kernels.mul_s8, with numpy broadcasting of the two inputs (CMSIS itself
 * takes equal shapes).
 *
 * run_portable is the statement of the math (any broadcast, every core). Two inputs of the output's
 * element count take a fast path with the same bytes: on MVE cores four lanes at a time (VMUL, then
 * VQRDMULH + rounding shift), the tail predicated; on the other Cortex-M cores one scalar loop with
 * the requantization inlined. A multiplier of INT32_MIN takes the portable path on MVE.
 */
#include "broadcast.h"
#include "mf_simd.h"

enum { A_A_OFF, A_B_OFF, A_OUT_OFF, A_OUT_MULT, A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    int32_t lo, hi;
    if (!mf_call_binary_s8(c, &a, &b, &o)) return MF_ERR_SHAPE;
    if (!mf_bcast_init(&it, &a, &b) || it.numel != o.numel) return MF_ERR_SHAPE;
    if (!mf_attr_act(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_A_OFF), -127, 128) || !mf_in_range(mf_attr_int(c, A_B_OFF), -127, 128)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_OUT_OFF), -128, 127)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_OUT_SHIFT), -31, 30)) return MF_ERR_SHAPE;
    return MF_OK;
}

static mf_status run_portable(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    mf_call_binary_s8(c, &a, &b, &o);
    mf_bcast_init(&it, &a, &b);
    const int32_t a_off = mf_attr_int(c, A_A_OFF), b_off = mf_attr_int(c, A_B_OFF), out_off = mf_attr_int(c, A_OUT_OFF);
    const int32_t mult = mf_attr_int(c, A_OUT_MULT), shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    const int8_t *ad = (const int8_t *)a.data, *bd = (const int8_t *)b.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < it.numel; i++, mf_bcast_step(&it)) {
        /* |product| <= 256 * 256: no overflow */
        const int32_t prod = ((int32_t)ad[it.ia] + a_off) * ((int32_t)bd[it.ib] + b_off);
        out[i] = mf_requant_s8(prod, mult, shift, out_off, lo, hi);
    }
    return MF_OK;
}

#if defined(MF_USE_MVE)

static void mul_same_shape(const mf_call *c, const int8_t *a, const int8_t *b, int8_t *out, uint32_t n) {
    const int32_t a_off = mf_attr_int(c, A_A_OFF), b_off = mf_attr_int(c, A_B_OFF), out_off = mf_attr_int(c, A_OUT_OFF);
    const int32_t mult = mf_attr_int(c, A_OUT_MULT), shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32x4_t lo = vdupq_n_s32(mf_attr_int(c, A_ACT_MIN)), hi = vdupq_n_s32(mf_attr_int(c, A_ACT_MAX));
    for (int32_t left = (int32_t)n; left > 0; left -= 4, a += 4, b += 4, out += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)left);
        const int32x4_t prod = vmulq_s32(vaddq_n_s32(vldrbq_z_s32(a, pr), a_off), vaddq_n_s32(vldrbq_z_s32(b, pr), b_off));
        int32x4_t v = vaddq_n_s32(mf_requantize_x4_n(prod, mult, shift), out_off);
        v = vminq_s32(vmaxq_s32(v, lo), hi);
        vstrbq_p_s32(out, v, pr);
    }
}

static int mul_fast_ok(const mf_call *c) { return mf_attr_int(c, A_OUT_MULT) != INT32_MIN; }

#elif defined(MF_ARM_LOOPS)

static void mul_same_shape(const mf_call *c, const int8_t *a, const int8_t *b, int8_t *out, uint32_t n) {
    const int32_t a_off = mf_attr_int(c, A_A_OFF), b_off = mf_attr_int(c, A_B_OFF), out_off = mf_attr_int(c, A_OUT_OFF);
    const int32_t mult = mf_attr_int(c, A_OUT_MULT), shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    for (uint32_t i = 0; i < n; i++) {
        const int32_t prod = ((int32_t)a[i] + a_off) * ((int32_t)b[i] + b_off);
        out[i] = mf_clamp_s8(mf_add_wrap(mf_requantize_inline(prod, mult, shift), out_off), lo, hi);
    }
}

static int mul_fast_ok(const mf_call *c) {
    (void)c;
    return 1;
}

#endif

static mf_status run(const mf_call *c) {
#if defined(MF_USE_MVE) || defined(MF_ARM_LOOPS)
    mf_tensor a, b, o;
    if (mf_call_binary_s8(c, &a, &b, &o) && a.numel == o.numel && b.numel == o.numel && mul_fast_ok(c)) {
        mul_same_shape(c, (const int8_t *)a.data, (const int8_t *)b.data, (int8_t *)o.data, o.numel);
        return MF_OK;
    }
#endif
    return run_portable(c);
}

const mf_kernel mf_kernel_mul_s8 = {MF_KIND_HEAD_mul_s8, check, run};
