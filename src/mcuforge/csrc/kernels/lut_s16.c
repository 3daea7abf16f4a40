/*
 * lut_s16 and activation_s16: int16 table activations, bit-exact with mcuforge.kernels.lut_s16 and
 * activation_s16.
 *   lut_s16: an interpolated int16[513] table (input 1, built by the compiler from the op's function),
 *            mf_table_lookup_s16 per element (arm_softmax_s16's interpolation);
 *   activation_s16: CMSIS-NN's arm_nn_activation_s16 (attribute function: 0 sigmoid, 1 tanh; Q3.12 input
 *            shifted by left_shift, -31 .. 14), mf_activation_s16 of kernels/quant_s16.c.
 */
#include "mf_s16.h"

static mf_status check_lut(const mf_call *c) {
    mf_tensor x, t, o;
    if (c->n_in != 2 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &t);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT16, -1) || !mf_is(&o, MF_INT16, -1) || x.numel != o.numel) return MF_ERR_SHAPE;
    return mf_is(&t, MF_INT16, 1) && t.shape[0] == MF_LUT_S16_ENTRIES ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_lut(const mf_call *c) {
    mf_tensor x, t, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &t);
    mf_call_output(c, 0, &o);
    const int16_t *xd = (const int16_t *)x.data, *table = (const int16_t *)t.data;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t i = 0; i < x.numel; i++) out[i] = mf_table_lookup_s16(xd[i], table);
    return MF_OK;
}

enum { A_FUNCTION, A_LEFT_SHIFT };

static mf_status check_activation(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT16, -1) || !mf_is(&o, MF_INT16, -1) || x.numel != o.numel) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_FUNCTION), 0, 1)) return MF_ERR_SHAPE;
    return mf_in_range(mf_attr_int(c, A_LEFT_SHIFT), MF_ACTIVATION_MIN_LEFT_SHIFT, MF_ACTIVATION_MAX_LEFT_SHIFT)
               ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_activation(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_activation_s16((const int16_t *)x.data, (int16_t *)o.data, x.numel, mf_attr_int(c, A_LEFT_SHIFT),
                      mf_attr_int(c, A_FUNCTION));
    return MF_OK;
}

const mf_kernel mf_kernel_lut_s16 = {MF_KIND_HEAD_lut_s16, check_lut, run_lut};
const mf_kernel mf_kernel_activation_s16 = {MF_KIND_HEAD_activation_s16, check_activation, run_activation};
