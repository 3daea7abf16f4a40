/* clamp_s8: a standalone ReLU/ReLU6/clamp in the int8 domain (output keeps the input's qparams). */
#include "mf_kernel_util.h"

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    int32_t lo, hi;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is(&o, MF_INT8, -1) || x.numel != o.numel) return MF_ERR_SHAPE;
    return mf_attr_act(c, 0, &lo, &hi) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, o;
    int32_t lo, hi;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_attr_act(c, 0, &lo, &hi);
    const int8_t *xd = (const int8_t *)x.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < x.numel; i++) out[i] = mf_clamp_s8(xd[i], lo, hi);
    return MF_OK;
}

const mf_kernel mf_kernel_clamp_s8 = {MF_KIND_HEAD_clamp_s8, check, run};
