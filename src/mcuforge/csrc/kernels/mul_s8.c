/*
 * mul_s8: int8 elementwise multiply, bit-exact with CMSIS-NN arm_elementwise_mul_s8 (TFLite int8 MUL
 * parameters) and mcuforge.kernels.mul_s8, with numpy broadcasting of the two inputs (CMSIS itself
 * takes equal shapes).
 */
#include "broadcast.h"

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

static mf_status run(const mf_call *c) {
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

const mf_kernel mf_kernel_mul_s8 = {8, "mul_s8", 2, 2, 0, "iiiiiii", check, run};
