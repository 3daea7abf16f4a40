/*
 * quantize (float32 -> int8) and dequantize (int8 -> float32): the precision boundaries of the fp32
 * fallback, bit-exact with torch's quantized_decomposed ops (see runtime/quant.c).
 */
#include "mf_kernel_util.h"

static mf_status check(const mf_call *c, uint8_t in_dtype, uint8_t out_dtype) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (x.dtype != in_dtype || o.dtype != out_dtype || x.numel != o.numel) return MF_ERR_SHAPE;
    float scale = mf_value_float(mf_attr(c, 0));
    return scale > 0.0f && scale <= 3.40282347e+38f ? MF_OK : MF_ERR_SHAPE;
}

static mf_status check_quantize(const mf_call *c) { return check(c, MF_FLOAT32, MF_INT8); }
static mf_status check_dequantize(const mf_call *c) { return check(c, MF_INT8, MF_FLOAT32); }

static mf_status run_quantize(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_quantize_f32_s8((const float *)x.data, (int8_t *)o.data, x.numel, mf_value_float(mf_attr(c, 0)),
                       mf_value_int(mf_attr(c, 1)));
    return MF_OK;
}

static mf_status run_dequantize(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_dequantize_s8_f32((const int8_t *)x.data, (float *)o.data, x.numel, mf_value_float(mf_attr(c, 0)),
                         mf_value_int(mf_attr(c, 1)));
    return MF_OK;
}

const mf_kernel mf_kernel_quantize = {30, "quantize", 1, 1, 0, "fi", check_quantize, run_quantize};
const mf_kernel mf_kernel_dequantize = {31, "dequantize", 1, 1, 0, "fi", check_dequantize, run_dequantize};
