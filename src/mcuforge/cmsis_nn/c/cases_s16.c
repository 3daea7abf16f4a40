/* CMSIS-NN's int16-activation, int4-weight and LSTM kernels behind the harness's signature (mfcmp.h): conv,
 * depthwise, fully connected, batch matmul, pooling, add/mul, softmax and sigmoid/tanh (s16); conv,
 * depthwise and fully connected (s4); arm_lstm_unidirectional_s8.
 *
 * Each function's comment lists its ints and inputs in order; mcuforge/cmsis_nn/ops_s16.py builds them. */
#include <string.h>

#include "mfcmp.h"

/* ------------------------------------------------------------------------------------------ conv s16 */

/* ints: n, h, w, c_in, c_out, kh, kw, oh, ow, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
 *       act_min, act_max, has_bias, int32_bias (19)
 * inputs: x int16 NHWC, filter int8 [c_out, kh, kw, c_in], bias int64[c_out] (int32[c_out] with int32_bias;
 *         has_bias), multipliers int32[c_out], shifts int32[c_out]
 * output: int16 [n, oh, ow, c_out] */
static int32_t conv_s16(int wrapper, const int32_t *k, const void *const *in, void *output, void *scratch,
                        int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims filter = mfc_dims(k[4], k[5], k[6], k[3]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[4]);
    cmsis_nn_dims out = mfc_dims(k[0], k[7], k[8], k[4]);
    cmsis_nn_conv_params params;
    params.input_offset = 0;
    params.output_offset = 0;
    params.stride = mfc_tile(k[9], k[10]);
    params.padding = mfc_tile(k[11], k[12]);
    params.dilation = mfc_tile(k[13], k[14]);
    params.activation = mfc_activation(k[15], k[16]);
    cmsis_nn_per_channel_quant_params quant;
    quant.multiplier = (int32_t *)(uintptr_t)in[3];
    quant.shift = (int32_t *)(uintptr_t)in[4];
    const cmsis_nn_bias_data bias_data = {k[17] ? in[2] : NULL, k[18] != 0};
    int32_t need = wrapper ? arm_convolve_wrapper_s16_get_buffer_size(&params, &input, &filter, &out)
                           : arm_convolve_s16_get_buffer_size(&input, &filter);
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, need);
    if (st != 0) return st;
    const int16_t *x = (const int16_t *)in[0];
    const int8_t *w = (const int8_t *)in[1];
    if (wrapper)
        return arm_convolve_wrapper_s16(&ctx, &params, &quant, &input, x, &filter, w, &bias, &bias_data, &out,
                                        (int16_t *)output);
    return arm_convolve_s16(&ctx, &params, &quant, &input, x, &filter, w, &bias, &bias_data, &out, (int16_t *)output);
}

/* arm_convolve_wrapper_s16 (int64 or int32 bias). */
int32_t mfcmp_conv_wrapper_s16(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                               int32_t scratch_bytes) {
    return conv_s16(1, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_convolve_s16. */
int32_t mfcmp_conv_s16(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                       int32_t scratch_bytes) {
    return conv_s16(0, ints, inputs, output, scratch, scratch_bytes);
}

/* ------------------------------------------------------------------------------------- depthwise s16 */

/* ints: n, h, w, c_in, c_out, kh, kw, oh, ow, ch_mult, stride_h, stride_w, pad_h, pad_w, dilation_h,
 *       dilation_w, act_min, act_max, has_bias (19)
 * inputs: x int16 NHWC, filter int8 [1, kh, kw, c_out], bias int64[c_out] (has_bias), multipliers int32[c_out],
 *         shifts int32[c_out]
 * output: int16 [n, oh, ow, c_out] */
static int32_t depthwise_s16(int wrapper, const int32_t *k, const void *const *in, void *output, void *scratch,
                             int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims filter = mfc_dims(1, k[5], k[6], k[4]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[4]);
    cmsis_nn_dims out = mfc_dims(k[0], k[7], k[8], k[4]);
    cmsis_nn_dw_conv_params params;
    params.input_offset = 0;
    params.output_offset = 0;
    params.ch_mult = k[9];
    params.stride = mfc_tile(k[10], k[11]);
    params.padding = mfc_tile(k[12], k[13]);
    params.dilation = mfc_tile(k[14], k[15]);
    params.activation = mfc_activation(k[16], k[17]);
    cmsis_nn_per_channel_quant_params quant;
    quant.multiplier = (int32_t *)(uintptr_t)in[3];
    quant.shift = (int32_t *)(uintptr_t)in[4];
    const int64_t *bias_data = k[18] ? (const int64_t *)in[2] : NULL;
    int32_t need = wrapper ? arm_depthwise_conv_wrapper_s16_get_buffer_size(&params, &input, &filter, &out) : 0;
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, need);
    if (st != 0) return st;
    const int16_t *x = (const int16_t *)in[0];
    const int8_t *w = (const int8_t *)in[1];
    if (wrapper)
        return arm_depthwise_conv_wrapper_s16(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out,
                                              (int16_t *)output);
    return arm_depthwise_conv_s16(&ctx, &params, &quant, &input, x, &filter, w, &bias, bias_data, &out,
                                  (int16_t *)output);
}

/* arm_depthwise_conv_wrapper_s16: arm_depthwise_conv_fast_s16 on DSP/MVE builds for multiplier 1, no dilation
 * and fewer than 512 taps, else arm_depthwise_conv_s16. */
int32_t mfcmp_dw_wrapper_s16(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                             int32_t scratch_bytes) {
    return depthwise_s16(1, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_depthwise_conv_s16: the generic path. */
int32_t mfcmp_dw_s16(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                     int32_t scratch_bytes) {
    return depthwise_s16(0, ints, inputs, output, scratch, scratch_bytes);
}

/* ----------------------------------------------------------------------------- fully connected s16 */

/* arm_fully_connected_s16 (per tensor).
 * ints: batches, depth, c_out, multiplier, shift, act_min, act_max, has_bias (8)
 * inputs: x int16 [batches, depth], filter int8 [c_out, depth], bias int64[c_out] (has_bias)
 * output: int16 [batches, c_out] */
int32_t mfcmp_fc_s16(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], 1, 1, k[1]);
    cmsis_nn_dims filter = mfc_dims(k[1], 1, 1, k[2]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[2]);
    cmsis_nn_dims out = mfc_dims(k[0], 1, 1, k[2]);
    cmsis_nn_fc_params params;
    params.input_offset = 0;
    params.filter_offset = 0;
    params.output_offset = 0;
    params.activation = mfc_activation(k[5], k[6]);
    cmsis_nn_per_tensor_quant_params quant;
    quant.multiplier = k[3];
    quant.shift = k[4];
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, arm_fully_connected_s16_get_buffer_size(&filter));
    if (st != 0) return st;
    return arm_fully_connected_s16(&ctx, &params, &quant, &input, (const int16_t *)in[0], &filter,
                                   (const int8_t *)in[1], &bias, k[7] ? (const int64_t *)in[2] : NULL, &out,
                                   (int16_t *)output);
}

/* --------------------------------------------------------------------------------- batch matmul s16 */

/* arm_batch_matmul_s16 (the rhs transposed, as TensorFlow Lite Micro hands it over).
 * ints: lhs n, lhs h, rows (M), cols (K), rhs n, rhs h, rhs rows (N), out n, out h, output_multiplier,
 *       output_shift, act_min, act_max (13)
 * inputs: lhs int16 [lhs n, lhs h, M, K], rhs int16 [rhs n, rhs h, N, K]
 * output: int16 [out n, out h, M, N] */
int32_t mfcmp_batch_matmul_s16(const int32_t *k, const void *const *in, void *output, void *scratch,
                               int32_t scratch_bytes) {
    cmsis_nn_dims lhs = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims rhs = mfc_dims(k[4], k[5], k[6], k[3]);
    cmsis_nn_dims out = mfc_dims(k[7], k[8], k[2], k[6]);
    cmsis_nn_bmm_params params = {false, false, {0, 0, 0, mfc_activation(k[11], k[12])}};
    cmsis_nn_per_tensor_quant_params quant;
    quant.multiplier = k[9];
    quant.shift = k[10];
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, 0);
    if (st != 0) return st;
    return arm_batch_matmul_s16(&ctx, &params, &quant, &lhs, (const int16_t *)in[0], &rhs, (const int16_t *)in[1],
                                &out, (int16_t *)output);
}

/* ----------------------------------------------------------------------------------------- pooling */

/* ints: n, h, w, c, oh, ow, kh, kw, stride_h, stride_w, pad_h, pad_w, act_min, act_max (14)
 * inputs: x int16 NHWC; output: int16 [n, oh, ow, c] */
static int32_t pool_s16(int average, const int32_t *k, const void *const *in, void *output, void *scratch,
                        int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims out = mfc_dims(k[0], k[4], k[5], k[3]);
    cmsis_nn_dims filter = mfc_dims(1, k[6], k[7], 1);
    cmsis_nn_pool_params params;
    params.stride = mfc_tile(k[8], k[9]);
    params.padding = mfc_tile(k[10], k[11]);
    params.activation = mfc_activation(k[12], k[13]);
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, average ? arm_avgpool_s16_get_buffer_size(k[5], k[3]) : 0);
    if (st != 0) return st;
    if (average)
        return arm_avgpool_s16(&ctx, &params, &input, (const int16_t *)in[0], &filter, &out, (int16_t *)output);
    return arm_max_pool_s16(&ctx, &params, &input, (const int16_t *)in[0], &filter, &out, (int16_t *)output);
}

/* arm_avgpool_s16. */
int32_t mfcmp_avgpool_s16(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                          int32_t scratch_bytes) {
    return pool_s16(1, ints, inputs, output, scratch, scratch_bytes);
}

/* arm_max_pool_s16. */
int32_t mfcmp_max_pool_s16(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                           int32_t scratch_bytes) {
    return pool_s16(0, ints, inputs, output, scratch, scratch_bytes);
}

/* --------------------------------------------------------------------------------------- add / mul */

/* arm_elementwise_add_s16 over equal shapes (offsets 0: symmetric int16).
 * ints: size, a_multiplier, a_shift, b_multiplier, b_shift, left_shift, output_multiplier, output_shift,
 *       act_min, act_max (10)
 * inputs: a int16[size], b int16[size]; output: int16[size] */
int32_t mfcmp_add_s16(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    return arm_elementwise_add_s16((const int16_t *)in[0], (const int16_t *)in[1], 0, k[1], k[2], 0, k[3], k[4], k[5],
                                   (int16_t *)output, 0, k[6], k[7], k[8], k[9], k[0]);
}

/* arm_elementwise_mul_s16 over equal shapes.
 * ints: size, output_multiplier, output_shift, act_min, act_max (5)
 * inputs: a int16[size], b int16[size]; output: int16[size] */
int32_t mfcmp_mul_s16(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    return arm_elementwise_mul_s16((const int16_t *)in[0], (const int16_t *)in[1], 0, 0, (int16_t *)output, 0, k[1],
                                   k[2], k[3], k[4], k[0]);
}

/* -------------------------------------------------------------------------------- softmax / activation */

/* arm_softmax_s16.
 * ints: rows, row size, multiplier, shift (4)
 * inputs: x int16 [rows, row size], exp_lut int16[513], one_by_one_lut int16[513]; output: int16 [rows, row size] */
int32_t mfcmp_softmax_s16(const int32_t *k, const void *const *in, void *output, void *scratch,
                          int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    cmsis_nn_softmax_lut_s16 lut;
    lut.exp_lut = (const int16_t *)in[1];
    lut.one_by_one_lut = (const int16_t *)in[2];
    return arm_softmax_s16((const int16_t *)in[0], k[0], k[1], k[2], k[3], &lut, (int16_t *)output);
}

/* arm_nn_activation_s16.
 * ints: size, left_shift, function (0 sigmoid, 1 tanh) (3)
 * inputs: x int16[size]; output: int16[size] */
int32_t mfcmp_activation_s16(const int32_t *k, const void *const *in, void *output, void *scratch,
                             int32_t scratch_bytes) {
    (void)scratch, (void)scratch_bytes;
    if (k[2] != 0 && k[2] != 1) return MFCMP_ERR_ARGS;
    return arm_nn_activation_s16((const int16_t *)in[0], (int16_t *)output, k[0], k[1], k[2] ? ARM_TANH : ARM_SIGMOID);
}

/* ------------------------------------------------------------------------------------------- s4 kinds */

/* ints: n, h, w, c_in, c_out, kh, kw, oh, ow, input_offset, output_offset, stride_h, stride_w, pad_h, pad_w,
 *       dilation_h, dilation_w, act_min, act_max, has_bias (20)
 * inputs: x int8 NHWC, packed filter int8 (the s4 packing of [c_out, kh, kw, c_in]), bias int32[c_out]
 *         (has_bias), multipliers int32[c_out], shifts int32[c_out]
 * output: int8 [n, oh, ow, c_out] */
int32_t mfcmp_conv_wrapper_s4(const int32_t *k, const void *const *in, void *output, void *scratch,
                              int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], k[1], k[2], k[3]);
    cmsis_nn_dims filter = mfc_dims(k[4], k[5], k[6], k[3]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[4]);
    cmsis_nn_dims out = mfc_dims(k[0], k[7], k[8], k[4]);
    cmsis_nn_conv_params params;
    params.input_offset = k[9];
    params.output_offset = k[10];
    params.stride = mfc_tile(k[11], k[12]);
    params.padding = mfc_tile(k[13], k[14]);
    params.dilation = mfc_tile(k[15], k[16]);
    params.activation = mfc_activation(k[17], k[18]);
    cmsis_nn_per_channel_quant_params quant;
    quant.multiplier = (int32_t *)(uintptr_t)in[3];
    quant.shift = (int32_t *)(uintptr_t)in[4];
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes,
                             arm_convolve_wrapper_s4_get_buffer_size(&params, &input, &filter, &out));
    if (st != 0) return st;
    return arm_convolve_wrapper_s4(&ctx, &params, &quant, &input, (const int8_t *)in[0], &filter,
                                   (const int8_t *)in[1], &bias, k[19] ? (const int32_t *)in[2] : NULL, &out,
                                   (int8_t *)output);
}

/* ints: n, h, w, c_in, c_out, kh, kw, oh, ow, input_offset, output_offset, ch_mult, stride_h, stride_w, pad_h,
 *       pad_w, dilation_h, dilation_w, act_min, act_max, has_bias (21)
 * inputs: x int8 NHWC, packed filter int8 (the s4 packing of [1, kh, kw, c_out]), bias int32[c_out] (has_bias),
 *         multipliers int32[c_out], shifts int32[c_out]
 * output: int8 [n, oh, ow, c_out] */
int32_t mfcmp_dw_wrapper_s4(const int32_t *k, const void *const *in, void *output, void *scratch,
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
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes,
                             arm_depthwise_conv_wrapper_s4_get_buffer_size(&params, &input, &filter, &out));
    if (st != 0) return st;
    return arm_depthwise_conv_wrapper_s4(&ctx, &params, &quant, &input, (const int8_t *)in[0], &filter,
                                         (const int8_t *)in[1], &bias, k[20] ? (const int32_t *)in[2] : NULL, &out,
                                         (int8_t *)output);
}

/* arm_fully_connected_s4 (per tensor).
 * ints: batches, depth, c_out, input_offset, output_offset, multiplier, shift, act_min, act_max, has_bias (10)
 * inputs: x int8 [batches, depth], packed filter int8 (the s4 packing of [c_out, depth]), bias int32[c_out]
 * output: int8 [batches, c_out] */
int32_t mfcmp_fc_s4(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    cmsis_nn_dims input = mfc_dims(k[0], 1, 1, k[1]);
    cmsis_nn_dims filter = mfc_dims(k[1], 1, 1, k[2]);
    cmsis_nn_dims bias = mfc_dims(1, 1, 1, k[2]);
    cmsis_nn_dims out = mfc_dims(k[0], 1, 1, k[2]);
    cmsis_nn_fc_params params;
    params.input_offset = k[3];
    params.filter_offset = 0;
    params.output_offset = k[4];
    params.activation = mfc_activation(k[7], k[8]);
    cmsis_nn_per_tensor_quant_params quant;
    quant.multiplier = k[5];
    quant.shift = k[6];
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, 0);
    if (st != 0) return st;
    return arm_fully_connected_s4(&ctx, &params, &quant, &input, (const int8_t *)in[0], &filter,
                                  (const int8_t *)in[1], &bias, k[9] ? (const int32_t *)in[2] : NULL, &out,
                                  (int8_t *)output);
}

/* ---------------------------------------------------------------------------------------------- LSTM */

/* arm_lstm_unidirectional_s8, batch major, from the zero state (no hidden state buffer).
 * ints: batches, time steps, input size, hidden size, forget_to_cell_multiplier, forget_to_cell_shift,
 *       input_to_cell_multiplier, input_to_cell_shift, cell_clip, cell_scale_power, output_multiplier,
 *       output_shift, output_offset (13); then per gate, in CMSIS-NN's order forget, input, cell, output:
 *       input_multiplier, input_shift, hidden_multiplier, hidden_shift (16)
 * inputs: x int8 [batches, steps, input size], input weights int8 [4, hidden, input], input effective biases
 *         int32 [4, hidden], hidden weights int8 [4, hidden, hidden], hidden effective biases int32 [4, hidden],
 *         the gates in the same order (four arrays, not sixteen: the board harness takes at most 16 inputs)
 * output: int8 [batches, steps, hidden]
 * scratch: three int16 [batches, hidden] buffers (temp1, temp2, the cell state). */
int32_t mfcmp_lstm_s8(const int32_t *k, const void *const *in, void *output, void *scratch, int32_t scratch_bytes) {
    const int32_t state = k[0] * k[3] * (int32_t)sizeof(int16_t);
    const int32_t slot = (state + 15) & ~15;
    cmsis_nn_context ctx;
    int32_t st = mfc_context(&ctx, scratch, scratch_bytes, 3 * slot);
    if (st != 0) return st;
    cmsis_nn_lstm_params p;
    memset(&p, 0, sizeof p);
    p.time_major = 0;
    p.batch_size = k[0];
    p.time_steps = k[1];
    p.input_size = k[2];
    p.hidden_size = k[3];
    p.input_offset = 0; /* folded into the effective biases */
    p.forget_to_cell_multiplier = k[4];
    p.forget_to_cell_shift = k[5];
    p.input_to_cell_multiplier = k[6];
    p.input_to_cell_shift = k[7];
    p.cell_clip = k[8];
    p.cell_scale_power = k[9];
    p.output_multiplier = k[10];
    p.output_shift = k[11];
    p.output_offset = k[12];
    cmsis_nn_lstm_gate *gates[4] = {&p.forget_gate, &p.input_gate, &p.cell_gate, &p.output_gate};
    for (int g = 0; g < 4; g++) {
        cmsis_nn_lstm_gate *gate = gates[g];
        gate->input_multiplier = k[13 + 4 * g];
        gate->input_shift = k[14 + 4 * g];
        gate->hidden_multiplier = k[15 + 4 * g];
        gate->hidden_shift = k[16 + 4 * g];
        gate->input_weights = (const int8_t *)in[1] + g * k[3] * k[2];
        gate->input_effective_bias = (const int32_t *)in[2] + g * k[3];
        gate->hidden_weights = (const int8_t *)in[3] + g * k[3] * k[3];
        gate->hidden_effective_bias = (const int32_t *)in[4] + g * k[3];
        gate->bias = NULL;
        gate->activation_type = g == 2 ? ARM_TANH : ARM_SIGMOID;
    }
    cmsis_nn_lstm_context buffers;
    buffers.temp1 = scratch;
    buffers.temp2 = (int8_t *)scratch + slot;
    buffers.cell_state = (int8_t *)scratch + 2 * slot;
    buffers.hidden_state = NULL;
    return arm_lstm_unidirectional_s8((const int8_t *)in[0], (int8_t *)output, &p, &buffers);
}
