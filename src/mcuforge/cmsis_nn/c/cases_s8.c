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

/* ------------------------------------------------------------------------------------- depthwise s8 */

/* ints: n, h, w, c_in, c_out, kh, kw, oh, ow, input_offset, output_offset, ch_mult, stride_h, stride_w,
 *       pad_h, pad_w, dilation_h, dilation_w, act_min, act_max, has_bias (21)
 * inputs: x int8 NHWC, filter int8 [1, kh, kw, c_out], bias int32[c_out] (has_bias), multipliers int32[c_out],
 *         shifts int32[c_out]
 * output: int8 [n, oh, ow, c_out] */
enum { DW_WRAPPER, DW_GENERIC, DW_3X3, DW_OPT };

static int32_t depthwise_s8(int which, const int32_t *k, const void *const *in, void *output, void *scratch,
                            int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims filter = mfc_dims(1, k[5], k[6], k[4]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[4]);
    cmsis_nn_dims out = mfc_dims(k[0], k[7], k[8], k[4]);
    cmsis_nn_dw_conv_params params;
    params.input_offset = k[9];
    params.output_offset = k[10];
    params.ch_mult = k[11];
    params.stride = mfc_tile(k[12], k[13]);
    params.padding = mfc_tile(k[14], k[15]);
    params.dilation = mfc_tile(k[16], k[17]);
    params.activation = mfc_activation(k[18], k[19]);
    cmsis_nn_per_channel_quant_params quant;
    quant.multiplier = (int32_t *)(uintptr_t)in[3];
    quant.shift = (int32_t *)(uintptr_t)in[4];
    const int32_t *bias_data = k[20] ? (const int32_t *)in[2] : NULL;

    int32_t need = 0;
    if (which == DW_WRAPPER) need = arm_depthwise_conv_wrapper_s8_get_buffer_size(&params, &input, &filter, &out);
    if (which == DW_OPT) need = arm_depthwise_conv_s8_opt_get_buffer_size(&input, &filter);
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, need);
    if (st != 0) return st;
    const int8_t *x = (const int8_t *)in[0], *w = (const int8_t *)in[1];
    int8_t *y = (int8_t *)output;
    switch (which) {
    case DW_WRAPPER:
        return arm_depthwise_conv_wrapper_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    case DW_GENERIC:
        return arm_depthwise_conv_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    case DW_3X3:
        return arm_depthwise_conv_3x3_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    default:
        return arm_depthwise_conv_s8_opt(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    }
}

/* arm_depthwise_conv_wrapper_s8: the path CMSIS-NN picks (3x3 on non-MVE cores, opt, generic; on MVE a
 * one-input-channel depthwise as a convolution). */
int32_t mfcmp_dw_wrapper_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                            int32_t scratch_bytes) {
    return depthwise_s8(DW_WRAPPER, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_depthwise_conv_s8: the generic path (any depth multiplier, dilation, batch). */
int32_t mfcmp_dw_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                    int32_t scratch_bytes) {
    return depthwise_s8(DW_GENERIC, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_depthwise_conv_3x3_s8: 3x3, depth multiplier 1, padding <= 1, batch 1, no dilation. */
int32_t mfcmp_dw_3x3_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                        int32_t scratch_bytes) {
    return depthwise_s8(DW_3X3, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_depthwise_conv_s8_opt: depth multiplier 1, batch 1, no dilation. */
int32_t mfcmp_dw_s8_opt(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                        int32_t scratch_bytes) {
    return depthwise_s8(DW_OPT, ints, inputs, output, scratch, scratch_bytes);
}

/* ------------------------------------------------------------------------------- fully connected s8 */

/* ints: batches, depth (accumulation), out_c, input_offset, filter_offset, output_offset, act_min, act_max,
 *       has_bias, per_channel (10)
 * inputs: x int8 [batches, depth], filter int8 [out_c, depth], bias int32[out_c] (has_bias),
 *         multipliers int32[out_c] (per_channel) or [1], shifts int32 likewise
 * output: int8 [batches, out_c]
 * As TensorFlow Lite Micro calls it: where the core asks a buffer (MVE) it holds the kernel sums of
 * arm_vector_sum_s8 (bias, input and filter offsets folded in). */
enum { FC_PER_TENSOR, FC_PER_CHANNEL, FC_WRAPPER };

static int32_t fully_connected_s8(int which, const int32_t *k, const void *const *in, void *output, void *scratch,
                                  int32_t scratch_bytes) {
    const int32_t batches = k[0], depth = k[1], out_c = k[2];
    cmsis_nn_dims input = mfc_dims(batches, 1, 1, depth);
    cmsis_nn_dims filter = mfc_dims(depth, 1, 1, out_c);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, out_c);
    cmsis_nn_dims out = mfc_dims(batches, 1, 1, out_c);
    cmsis_nn_fc_params params;
    params.input_offset = k[3];
    params.filter_offset = k[4];
    params.output_offset = k[5];
    params.activation = mfc_activation(k[6], k[7]);
    const int32_t *bias_data = k[8] ? (const int32_t *)in[2] : NULL;
    int32_t *mult = (int32_t *)(uintptr_t)in[3], *shift = (int32_t *)(uintptr_t)in[4];
    const int8_t *x = (const int8_t *)in[0], *w = (const int8_t *)in[1];
    int8_t *y = (int8_t *)output;

    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, arm_fully_connected_s8_get_buffer_size(&filter));
    if (st != 0) return st;
    if (ctx.size > 0) {
        st = arm_vector_sum_s8((int32_t *)ctx.buf, depth, out_c, w, params.input_offset, params.filter_offset,
                               bias_data);
        if (st != 0) return st;
    }
    if (which == FC_PER_TENSOR) {
        cmsis_nn_per_tensor_quant_params quant;
        quant.multiplier = mult[0];
        quant.shift = shift[0];
        return arm_fully_connected_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
    }
    if (which == FC_PER_CHANNEL) {
        cmsis_nn_per_channel_quant_params quant;
        quant.multiplier = mult;
        quant.shift = shift;
        return arm_fully_connected_per_channel_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data,
                                                  &out, y);
    }
    cmsis_nn_quant_params quant;
    quant.multiplier = mult;
    quant.shift = shift;
    quant.is_per_channel = k[9];
    return arm_fully_connected_wrapper_s8(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out, y);
}

/* arm_fully_connected_s8: one multiplier and shift (the first of the arrays). */
int32_t mfcmp_fc_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                    int32_t scratch_bytes) {
    return fully_connected_s8(FC_PER_TENSOR, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_fully_connected_per_channel_s8: a multiplier and shift per output channel. */
int32_t mfcmp_fc_per_channel_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                                int32_t scratch_bytes) {
    return fully_connected_s8(FC_PER_CHANNEL, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_fully_connected_wrapper_s8: per-tensor or per-channel as the per_channel int says. */
int32_t mfcmp_fc_wrapper_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                            int32_t scratch_bytes) {
    return fully_connected_s8(FC_WRAPPER, ints, inputs, output, scratch, scratch_bytes);
}

/* ---------------------------------------------------------------------------------- batch matmul s8 */

/* arm_batch_matmul_s8 (the rhs transposed, as TensorFlow Lite Micro hands it over).
 * ints: lhs n, lhs h, rows (M), cols (K), rhs n, rhs h, rhs rows (N), out n, out h, lhs_offset, rhs_offset,
 *       output_offset, output_multiplier, output_shift, act_min, act_max (16)
 * inputs: lhs int8 [lhs n, lhs h, M, K], rhs int8 [rhs n, rhs h, N, K]
 * output: int8 [out n, out h, M, N] */
int32_t mfcmp_batch_matmul_s8(const int32_t *k, const void *const *in, void *output, void *scratch,
                              int32_t scratch_bytes) {
    cmsis_nn_dims lhs = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims rhs = mfc_dims(k[4], k[5], k[6], k[3]);
    cmsis_nn_dims out = mfc_dims(k[7], k[8], k[2], k[6]);
    cmsis_nn_dims filter = mfc_dims(k[3], 1, 1, k[6]); /* the buffer: N kernel sums */
    cmsis_nn_bmm_params params = {false, false, {k[9], k[10], k[11], mfc_activation(k[14], k[15])}};
    cmsis_nn_per_tensor_quant_params quant;
    quant.multiplier = k[12];
    quant.shift = k[13];
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, arm_fully_connected_s8_get_buffer_size(&filter));
    if (st != 0) return st;
    return arm_batch_matmul_s8(&ctx, &params, &quant, &lhs, (const int8_t *)in[0], &rhs, (const int8_t *)in[1], &out,
                               (int8_t *)output);
}

/* -------------------------------------------------------------------------------- transpose conv s8 */

/* ints: n, h, w, c_in, c_out, kh, kw, oh, ow, input_offset, output_offset, stride_h, stride_w, pad_h, pad_w,
 *       act_min, act_max, has_bias (18)
 * inputs: x int8 NHWC, filter int8 [c_out, kh, kw, c_in], bias int32[c_out] (has_bias), multipliers int32[c_out],
 *         shifts int32[c_out]
 * output: int8 [n, oh, ow, c_out]
 * The scratch holds ctx.buf (arm_transpose_conv_s8_get_buffer_size) and, 16-byte aligned after it, the
 * reversed filter of the reverse-conv path (arm_transpose_conv_s8_get_reverse_conv_buffer_size). */
enum { TCONV_WRAPPER, TCONV_DIRECT };

static int32_t transpose_conv_s8(int which, const int32_t *k, const void *const *in, void *output, void *scratch,
                                 int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims filter = mfc_dims(k[4], k[5], k[6], k[3]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[4]);
    cmsis_nn_dims out = mfc_dims(k[0], k[7], k[8], k[4]);
    cmsis_nn_transpose_conv_params params;
    params.input_offset = k[9];
    params.output_offset = k[10];
    params.stride = mfc_tile(k[11], k[12]);
    params.padding = mfc_tile(k[13], k[14]);
    params.padding_offsets = mfc_tile(0, 0);
    params.dilation = mfc_tile(1, 1);
    params.activation = mfc_activation(k[15], k[16]);
    cmsis_nn_per_channel_quant_params quant;
    quant.multiplier = (int32_t *)(uintptr_t)in[3];
    quant.shift = (int32_t *)(uintptr_t)in[4];
    const int32_t *bias_data = k[17] ? (const int32_t *)in[2] : NULL;

    int32_t need = arm_transpose_conv_s8_get_buffer_size(&params, &input, &filter, &out);
    int32_t reverse = which == TCONV_WRAPPER ? arm_transpose_conv_s8_get_reverse_conv_buffer_size(&params, &input,
                                                                                                &filter) : 0;
    if (need < 0 || reverse < 0) return MFCMP_ERR_ARGS;
    if (reverse == 0) {
        /* The direct path's rows: arm_transpose_conv_s8 uses MAX(filter w, stride w) columns, where
         * arm_transpose_conv_s8_get_buffer_size counts MAX(filter w, stride h) (CMSIS-NN's typo): ask the larger,
         * or a stride wider than tall and than the filter would write past the buffer. */
        int32_t cols = k[6] > k[12] ? k[6] : k[12], rows = k[5] > k[11] ? k[5] : k[11];
        int32_t used = ((k[2] - 1) * k[12] + cols) * k[4] * rows * (int32_t)sizeof(int32_t);
        if (used > need) need = used;
    }
    int32_t first = (need + 15) & ~15;
    cmsis_nn_context ctx, reverse_ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, first + reverse);
    if (st != 0) return st;
    ctx.size = need;
    reverse_ctx.buf = reverse > 0 ? (int8_t *)scratch + first : NULL;
    reverse_ctx.size = reverse;
    const int8_t *x = (const int8_t *)in[0], *w = (const int8_t *)in[1];
    int8_t *y = (int8_t *)output;
    if (which == TCONV_WRAPPER)
        return arm_transpose_conv_wrapper_s8(&ctx, &reverse_ctx, &params, &quant, &input, x, &filter, w, &bias,
                                             bias_data, &out, y);
    return arm_transpose_conv_s8(&ctx, &reverse_ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out,
                                 y);
}

/* arm_transpose_conv_wrapper_s8: the reverse-conv path (a convolution of the zero-upscaled input with the
 * reversed filter: stride <= 2 and more than 16 input channels), else arm_transpose_conv_s8. */
int32_t mfcmp_transpose_conv_wrapper_s8(const int32_t *ints, const void *const *inputs, void *output,
                                        void *scratch, int32_t scratch_bytes) {
    return transpose_conv_s8(TCONV_WRAPPER, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_transpose_conv_s8: the direct path (rows of int32 sums), any geometry. */
int32_t mfcmp_transpose_conv_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                                int32_t scratch_bytes) {
    return transpose_conv_s8(TCONV_DIRECT, ints, inputs, output, scratch, scratch_bytes);
}

/* ------------------------------------------------------------------------------------------ pooling */

/* ints: n, h, w, c, oh, ow, kh, kw, stride_h, stride_w, pad_h, pad_w, act_min, act_max (14)
 * inputs: x int8 NHWC; output: int8 [n, oh, ow, c] */
static int32_t pool_s8(int average, const int32_t *k, const void *const *in, void *output, void *scratch,
                       int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims out = mfc_dims(k[0], k[4], k[5], k[3]);
    cmsis_nn_dims filter = mfc_dims(1, k[6], k[7], 1);
    cmsis_nn_pool_params params;
    params.stride = mfc_tile(k[8], k[9]);
    params.padding = mfc_tile(k[10], k[11]);
    params.activation = mfc_activation(k[12], k[13]);
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, average ? arm_avgpool_s8_get_buffer_size(k[5], k[3]) : 0);
    if (st != 0) return st;
    if (average) return arm_avgpool_s8(&ctx, &params, &input, (const int8_t *)in[0], &filter, &out, (int8_t *)output);
    return arm_max_pool_s8(&ctx, &params, &input, (const int8_t *)in[0], &filter, &out, (int8_t *)output);
}

/* arm_avgpool_s8: the mean of the window's in-bounds elements. */
int32_t mfcmp_avgpool_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                         int32_t scratch_bytes) {
    return pool_s8(1, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_max_pool_s8. */
int32_t mfcmp_max_pool_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                          int32_t scratch_bytes) {
    return pool_s8(0, ints, inputs, output, scratch, scratch_bytes);
}

/* ---------------------------------------------------------------------------------------- add / mul */

/* arm_elementwise_add_s8 over equal shapes.
 * ints: size, a_offset, a_multiplier, a_shift, b_offset, b_multiplier, b_shift, left_shift, output_offset,
 *       output_multiplier, output_shift, act_min, act_max (13)
 * inputs: a int8[size], b int8[size]; output: int8[size] */
int32_t mfcmp_add_s8(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    return arm_elementwise_add_s8((const int8_t *)in[0], (const int8_t *)in[1], k[1], k[2], k[3], k[4], k[5], k[6],
                                  k[7], (int8_t *)output, k[8], k[9], k[10], k[11], k[12], k[0]);
}

/* arm_elementwise_mul_s8 over equal shapes.
 * ints: size, a_offset, b_offset, output_offset, output_multiplier, output_shift, act_min, act_max (8)
 * inputs: a int8[size], b int8[size]; output: int8[size] */
int32_t mfcmp_mul_s8(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    return arm_elementwise_mul_s8((const int8_t *)in[0], (const int8_t *)in[1], k[1], k[2], (int8_t *)output, k[3],
                                  k[4], k[5], k[6], k[7], k[0]);
}

/* ------------------------------------------------------------------------------------------ softmax */

/* arm_softmax_s8 over rows. ints: rows, row_size, multiplier, shift, diff_min (5)
 * inputs: x int8[rows, row_size]; output: int8[rows, row_size] */
int32_t mfcmp_softmax_s8(const int32_t *k, const void *const *in, void *output, void *scratch,
                         int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    arm_softmax_s8((const int8_t *)in[0], k[0], k[1], k[2], k[3], k[4], (int8_t *)output);
    return 0;
}

/* ------------------------------------------------------------------------------------ data movement */

/* arm_pad_s8 (4-D). ints: n, h, w, c, pre n, pre h, pre w, pre c, post n, post h, post w, post c, pad_value (13)
 * inputs: x int8 [n, h, w, c]; output: int8, the padded shape */
int32_t mfcmp_pad_s8(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    cmsis_nn_dims size = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims pre = mfc_dims(k[4], k[5], k[6], k[7]);
    cmsis_nn_dims post = mfc_dims(k[8], k[9], k[10], k[11]);
    return arm_pad_s8((const int8_t *)in[0], (int8_t *)output, (int8_t)k[12], &size, &pre, &post);
}

/* arm_transpose_s8. ints: num_dims (1..4), input dims n, h, w, c, output dims n, h, w, c, perm[4] (13)
 * (num_dims < 4: the dims and perm fill n, h, ... first, as arm_transpose_s8 reads them)
 * inputs: x int8; output: int8 */
int32_t mfcmp_transpose_s8(const int32_t *k, const void *const *in, void *output, void *scratch,
                           int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    cmsis_nn_dims input = mfc_dims(k[1], k[2], k[3], k[4]);
    cmsis_nn_dims out = mfc_dims(k[5], k[6], k[7], k[8]);
    uint32_t perm[4] = {(uint32_t)k[9], (uint32_t)k[10], (uint32_t)k[11], (uint32_t)k[12]};
    cmsis_nn_transpose_params params = {k[0], perm};
    return arm_transpose_s8((const int8_t *)in[0], (int8_t *)output, &input, &out, &params);
}

/* Concatenation along one axis of tensors seen as [outer, axis, inner]: arm_concatenation_s8_x where inner is 1,
 * else arm_concatenation_s8_y (every size below 65536).
 * ints: inputs count, outer, inner, then each input's axis length
 * inputs: each input int8 [outer, axis_i, inner]; output: int8 [outer, sum of axis_i, inner] */
int32_t mfcmp_concat_s8(const int32_t *k, const void *const *in, void *output, void *scratch,
                        int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    const int32_t count = k[0], outer = k[1], inner = k[2];
    int32_t total = 0;
    for (int32_t i = 0; i < count; i++) total += k[3 + i];
    if (outer > 65535 || inner > 65535 || total > 65535) return MFCMP_ERR_ARGS;
    uint32_t offset = 0;
    for (int32_t i = 0; i < count; i++) {
        const int32_t axis = k[3 + i];
        if (inner == 1)
            arm_concatenation_s8_x((const int8_t *)in[i], (uint16_t)axis, (uint16_t)outer, 1, 1, (int8_t *)output,
                                   (uint16_t)total, offset);
        else
            arm_concatenation_s8_y((const int8_t *)in[i], (uint16_t)inner, (uint16_t)axis, (uint16_t)outer, 1,
                                   (int8_t *)output, (uint16_t)total, offset);
        offset += (uint32_t)axis;
    }
    return 0;
}

/* arm_reshape_s8: a copy. ints: size (1); inputs: x int8[size]; output: int8[size] */
int32_t mfcmp_reshape_s8(const int32_t *k, const void *const *in, void *output, void *scratch,
                         int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    arm_reshape_s8((const int8_t *)in[0], (int8_t *)output, (uint32_t)k[0]);
    return 0;
}
