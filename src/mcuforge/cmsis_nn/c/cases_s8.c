/* CMSIS-NN's int8 kernels behind the harness's signature (mfcmp.h): conv, depthwise, fully connected,
 * batch matmul, transpose conv, pooling, add/mul, softmax, pad, concat, transpose, reshape.
 *
 * Each function's comment lists its ints and inputs in order; mcuforge/cmsis_nn/ops_s8.py builds them. */
#include <string.h>

#include "mfcmp.h"

/* ------------------------------------------------------------------------------------------ conv s8 */

/* ints: n, h, w, c_in, c_out, kh, kw, filter_c (c_in / groups), oh, ow, input_offset, output_offset,
 *       stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, act_min, act_max, has_bias (21)
 * inputs: x int8 NHWC, filter int8 [c_out, kh, kw, filter_c], bias int32[c_out] (has_bias),
 *         multipliers int32[c_out], shifts int32[c_out]
 * output: int8 [n, oh, ow, c_out] */
enum { CONV_WRAPPER, CONV_GENERIC, CONV_1X1_FAST, CONV_1X1, CONV_1XN };

static int32_t conv_s8(int which, const int32_t *k, const void *const *in, void *output, void *scratch,
                       int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims filter = mfc_dims(k[4], k[5], k[6], k[7]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[4]);
    cmsis_nn_dims out = mfc_dims(k[0], k[8], k[9], k[4]);
    cmsis_nn_conv_params params;
    params.input_offset = k[10];
    params.output_offset = k[11];
    params.stride = mfc_tile(k[12], k[13]);
    params.padding = mfc_tile(k[14], k[15]);
    params.dilation = mfc_tile(k[16], k[17]);
    params.activation = mfc_activation(k[18], k[19]);
    cmsis_nn_per_channel_quant_params quant;
    quant.multiplier = (int32_t *)(uintptr_t)in[3];
    quant.shift = (int32_t *)(uintptr_t)in[4];
    const int32_t *bias_data = k[20] ? (const int32_t *)in[2] : NULL;

    int32_t need;
    switch (which) {
    case CONV_WRAPPER: need = arm_convolve_wrapper_s8_get_buffer_size(&params, &input, &filter, &out); break;
    case CONV_GENERIC: need = arm_convolve_s8_get_buffer_size(&input, &filter); break;
    case CONV_1X1_FAST: need = arm_convolve_1x1_s8_fast_get_buffer_size(&input); break;
    case CONV_1XN: need = arm_convolve_1_x_n_s8_get_buffer_size(&params, &input, &filter, &out); break;
    default: need = 0; break;
    }
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, need);
    if (st != 0) return st;
    const int8_t *x = (const int8_t *)in[0], *w = (const int8_t *)in[1];
    int8_t *y = (int8_t *)output;
    switch (which) {
    case CONV_WRAPPER:
        return arm_convolve_wrapper_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    case CONV_GENERIC:
        return arm_convolve_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, NULL, &out, y);
    case CONV_1X1_FAST:
        return arm_convolve_1x1_s8_fast(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    case CONV_1X1:
        return arm_convolve_1x1_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    default:
        return arm_convolve_1_x_n_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    }
}

/* arm_convolve_wrapper_s8: the path CMSIS-NN picks (1x1 fast, 1x1, 1xN or the generic im2col). */
int32_t mfcmp_conv_wrapper_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                              int32_t scratch_bytes) {
    return conv_s8(CONV_WRAPPER, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_convolve_s8: the generic path (any geometry, groups). */
int32_t mfcmp_conv_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                      int32_t scratch_bytes) {
    return conv_s8(CONV_GENERIC, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_convolve_1x1_s8_fast: 1x1, no padding, unit stride and dilation, no groups. */
int32_t mfcmp_conv_1x1_s8_fast(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                               int32_t scratch_bytes) {
    return conv_s8(CONV_1X1_FAST, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_convolve_1x1_s8: 1x1, no padding, unit dilation, any stride, no groups. */
int32_t mfcmp_conv_1x1_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                          int32_t scratch_bytes) {
    return conv_s8(CONV_1X1, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_convolve_1_x_n_s8: input height 1, filter height 1, unit width dilation, stride_w * c_in % 4 == 0. */
int32_t mfcmp_conv_1_x_n_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                            int32_t scratch_bytes) {
    return conv_s8(CONV_1XN, ints, inputs, output, scratch, scratch_bytes);
}
