/*
 * mul_s8: int8 elementwise multiply, bit-exact with CMSIS-NN arm_elementwise_mul_s8 (TFLite int8 MUL
 * parameters) and mcuforge.kernels.mul_s8, with numpy broadcasting of the two inputs (CMSIS itself
 * takes equal shapes).
 */
#include "broadcast.h"

enum { A_A_OFF, A_B_OFF, A_OUT_OFF, A_OUT_MULT, A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX };

static int32_t attr(const mf_call *c, uint32_t k) { return mf_value_int(mf_attr(c, k)); }

static mf_status check(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    int32_t lo, hi;
    if (c->n_in != 2 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &a);
    mf_call_input(c, 1, &b);
    mf_call_output(c, 0, &o);
    if (!mf_is(&a, MF_INT8, -1) || !mf_is(&b, MF_INT8, -1) || !mf_is(&o, MF_INT8, -1)) return MF_ERR_SHAPE;
    if (!mf_bcast_init(&it, &a, &b) || it.numel != o.numel) return MF_ERR_SHAPE;
    if (!mf_attr_act(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(attr(c, A_A_OFF), -127, 128) || !mf_in_range(attr(c, A_B_OFF), -127, 128)) return MF_ERR_SHAPE;
    if (!mf_in_range(attr(c, A_OUT_OFF), -128, 127)) return MF_ERR_SHAPE;
    if (!mf_in_range(attr(c, A_OUT_SHIFT), -31, 30)) return MF_ERR_SHAPE;
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    mf_call_input(c, 0, &a);
    mf_call_input(c, 1, &b);
    mf_call_output(c, 0, &o);
    mf_bcast_init(&it, &a, &b);
    const int32_t a_off = attr(c, A_A_OFF), b_off = attr(c, A_B_OFF), out_off = attr(c, A_OUT_OFF);
    const int32_t mult = attr(c, A_OUT_MULT), shift = attr(c, A_OUT_SHIFT);
    const int32_t lo = attr(c, A_ACT_MIN), hi = attr(c, A_ACT_MAX);
    const int8_t *ad = (const int8_t *)a.data, *bd = (const int8_t *)b.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < it.numel; i++, mf_bcast_step(&it)) {
        /* |product| <= 256 * 256: no overflow */
        const int32_t prod = ((int32_t)ad[it.ia] + a_off) * ((int32_t)bd[it.ib] + b_off);
        out[i] = mf_clamp_s8(mf_add_wrap(mf_requantize(prod, mult, shift), out_off), lo, hi);
    }
    return MF_OK;
}

const mf_kernel mf_kernel_mul_s8 = {8, "mul_s8", 2, 2, 0, "iiiiiii", check, run};
