/*
 * quantize (float32 -> int8 or int16) and dequantize (int8 or int16 -> float32): the precision
 * boundaries of the fp32 fallback, bit-exact with torch's quantized_decomposed ops (see runtime/quant.c);
 * the integer side's dtype (the output of quantize, the input of dequantize) selects the range.
 */
#include "mf_kernel_util.h"

static int is_quantized(uint8_t dtype) { return dtype == MF_INT8 || dtype == MF_INT16; }

static mf_status check(const mf_call *c, int to_int) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    const uint8_t f = to_int ? x.dtype : o.dtype, q = to_int ? o.dtype : x.dtype;
    if (f != MF_FLOAT32 || !is_quantized(q) || x.numel != o.numel) return MF_ERR_SHAPE;
    float scale = mf_value_float(mf_attr(c, 0));
    return scale > 0.0f && scale <= 3.40282347e+38f ? MF_OK : MF_ERR_SHAPE;
}

static mf_status check_quantize(const mf_call *c) { return check(c, 1); }
static mf_status check_dequantize(const mf_call *c) { return check(c, 0); }

static mf_status run_quantize(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    const float scale = mf_value_float(mf_attr(c, 0));
    const int32_t zero_point = mf_value_int(mf_attr(c, 1));
    if (o.dtype == MF_INT16) mf_quantize_f32_s16((const float *)x.data, (int16_t *)o.data, x.numel, scale, zero_point);
    else mf_quantize_f32_s8((const float *)x.data, (int8_t *)o.data, x.numel, scale, zero_point);
    return MF_OK;
}

static mf_status run_dequantize(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    const float scale = mf_value_float(mf_attr(c, 0));
    const int32_t zero_point = mf_value_int(mf_attr(c, 1));
    if (x.dtype == MF_INT16) mf_dequantize_s16_f32((const int16_t *)x.data, (float *)o.data, x.numel, scale, zero_point);
    else mf_dequantize_s8_f32((const int8_t *)x.data, (float *)o.data, x.numel, scale, zero_point);
    return MF_OK;
}

const mf_kernel mf_kernel_quantize = {MF_KIND_HEAD_quantize, check_quantize, run_quantize};
const mf_kernel mf_kernel_dequantize = {MF_KIND_HEAD_dequantize, check_dequantize, run_dequantize};
