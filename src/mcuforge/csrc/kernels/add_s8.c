/*
 * add_s8: int8 elementwise add, bit-exact with CMSIS-NN arm_elementwise_add_s8 (TFLite int8 ADD
 * parameters), with numpy broadcasting of the two inputs (CMSIS itself takes equal shapes).
 */
#include "broadcast.h"

enum {
    A_A_OFF, A_A_MULT, A_A_SHIFT, A_B_OFF, A_B_MULT, A_B_SHIFT, A_LEFT_SHIFT, A_OUT_OFF, A_OUT_MULT,
    A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX
};

static mf_status check(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    if (!mf_call_binary_s8(c, &a, &b, &o)) return MF_ERR_SHAPE;
    if (!mf_bcast_init(&it, &a, &b) || it.numel != o.numel) return MF_ERR_SHAPE;
    int32_t lo, hi;
    if (!mf_attr_act(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_LEFT_SHIFT), 0, 30)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_A_OFF), -127, 128) || !mf_in_range(mf_attr_int(c, A_B_OFF), -127, 128)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_OUT_OFF), -128, 127)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_A_SHIFT), -31, 30) || !mf_in_range(mf_attr_int(c, A_B_SHIFT), -31, 30) ||
        !mf_in_range(mf_attr_int(c, A_OUT_SHIFT), -31, 30)) {
        return MF_ERR_SHAPE;
    }
    return MF_OK;
}

/* (x + offset) << left_shift as a wrapping int32, then requantized */
static int32_t scale_input(int32_t x, int32_t offset, int32_t left_shift, int32_t mult, int32_t shift) {
    int32_t shifted;
    uint32_t u = (uint32_t)(x + offset) << left_shift;
    memcpy(&shifted, &u, 4);
    return mf_requantize(shifted, mult, shift);
}

static mf_status run(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    mf_call_binary_s8(c, &a, &b, &o);
    mf_bcast_init(&it, &a, &b);
    const int32_t a_off = mf_attr_int(c, A_A_OFF), a_mult = mf_attr_int(c, A_A_MULT), a_shift = mf_attr_int(c, A_A_SHIFT);
    const int32_t b_off = mf_attr_int(c, A_B_OFF), b_mult = mf_attr_int(c, A_B_MULT), b_shift = mf_attr_int(c, A_B_SHIFT);
    const int32_t ls = mf_attr_int(c, A_LEFT_SHIFT), out_off = mf_attr_int(c, A_OUT_OFF);
    const int32_t out_mult = mf_attr_int(c, A_OUT_MULT), out_shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    const int8_t *ad = (const int8_t *)a.data, *bd = (const int8_t *)b.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < it.numel; i++, mf_bcast_step(&it)) {
        const int32_t sa = scale_input(ad[it.ia], a_off, ls, a_mult, a_shift);
        const int32_t sb = scale_input(bd[it.ib], b_off, ls, b_mult, b_shift);
        out[i] = mf_requant_s8(mf_add_wrap(sa, sb), out_mult, out_shift, out_off, lo, hi);
    }
    return MF_OK;
}

const mf_kernel mf_kernel_add_s8 = {4, "add_s8", 2, 2, 0, "iiiiiiiiiiii", check, run};
