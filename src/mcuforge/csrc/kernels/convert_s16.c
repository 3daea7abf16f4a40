/*
 * clamp_s16 (a standalone ReLU/ReLU6/clamp on int16 values) and the requantizing casts where int8 and
 * int16 values meet, bit-exact with mcuforge.kernels.clamp_s16 / convert_s8_s16 / convert_s16_s8:
 *   convert_s8_s16: clamp(requantize(x + input_offset, m, s), -32768, 32767);
 *   convert_s16_s8: clamp(requantize(x, m, s) + output_offset, -128, 127)  (arm_nn_requantize, int32).
 */
#include "mf_s16.h"

static int unary(const mf_call *c, mf_tensor *x, mf_tensor *o, uint8_t in_dtype, uint8_t out_dtype) {
    if (c->n_in != 1 || c->n_out != 1) return 0;
    mf_call_input(c, 0, x);
    mf_call_output(c, 0, o);
    return mf_is(x, in_dtype, -1) && mf_is(o, out_dtype, -1) && x->numel == o->numel;
}

static mf_status check_clamp(const mf_call *c) {
    mf_tensor x, o;
    int32_t lo, hi;
    return unary(c, &x, &o, MF_INT16, MF_INT16) && mf_attr_act_s16(c, 0, &lo, &hi) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_clamp(const mf_call *c) {
    mf_tensor x, o;
    int32_t lo, hi;
    unary(c, &x, &o, MF_INT16, MF_INT16);
    mf_attr_act_s16(c, 0, &lo, &hi);
    const int16_t *xd = (const int16_t *)x.data;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t i = 0; i < x.numel; i++) out[i] = mf_clamp_s16(xd[i], lo, hi);
    return MF_OK;
}

enum { A_OFFSET, A_MULT, A_SHIFT };

static mf_status check_to_s16(const mf_call *c) {
    mf_tensor x, o;
    if (!unary(c, &x, &o, MF_INT8, MF_INT16)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_OFFSET), -127, 128)) return MF_ERR_SHAPE;
    return mf_in_range(mf_attr_int(c, A_SHIFT), -31, 30) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_to_s16(const mf_call *c) {
    mf_tensor x, o;
    unary(c, &x, &o, MF_INT8, MF_INT16);
    const int32_t off = mf_attr_int(c, A_OFFSET), mult = mf_attr_int(c, A_MULT), shift = mf_attr_int(c, A_SHIFT);
    const int8_t *xd = (const int8_t *)x.data;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t i = 0; i < x.numel; i++) out[i] = mf_clamp_s16(mf_requantize(xd[i] + off, mult, shift), -32768, 32767);
    return MF_OK;
}

static mf_status check_to_s8(const mf_call *c) {
    mf_tensor x, o;
    if (!unary(c, &x, &o, MF_INT16, MF_INT8)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_OFFSET), -128, 127)) return MF_ERR_SHAPE;
    return mf_in_range(mf_attr_int(c, A_SHIFT), -31, 30) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_to_s8(const mf_call *c) {
    mf_tensor x, o;
    unary(c, &x, &o, MF_INT16, MF_INT8);
    const int32_t off = mf_attr_int(c, A_OFFSET), mult = mf_attr_int(c, A_MULT), shift = mf_attr_int(c, A_SHIFT);
    const int16_t *xd = (const int16_t *)x.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < x.numel; i++) out[i] = mf_requant_s8(xd[i], mult, shift, off, -128, 127);
    return MF_OK;
}

const mf_kernel mf_kernel_clamp_s16 = {MF_KIND_HEAD_clamp_s16, check_clamp, run_clamp};
const mf_kernel mf_kernel_convert_s8_s16 = {MF_KIND_HEAD_convert_s8_s16, check_to_s16, run_to_s16};
const mf_kernel mf_kernel_convert_s16_s8 = {MF_KIND_HEAD_convert_s16_s8, check_to_s8, run_to_s8};
