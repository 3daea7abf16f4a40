/* lut_s8: a 256-entry int8 table activation, out = table[x + 128] (mcuforge.kernels.lut_s8). */
#include "mf_kernel_util.h"

static mf_status check(const mf_call *c) {
    mf_tensor x, t, o;
    if (c->n_in != 2 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &t);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is(&o, MF_INT8, -1) || x.numel != o.numel) return MF_ERR_SHAPE;
    if (!mf_is(&t, MF_INT8, 1) || t.shape[0] != 256u) return MF_ERR_SHAPE;
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, t, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &t);
    mf_call_output(c, 0, &o);
    const uint8_t *xd = (const uint8_t *)x.data; /* the byte with its sign bit flipped is x + 128 */
    const int8_t *table = (const int8_t *)t.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < x.numel; i++) out[i] = table[xd[i] ^ 0x80u];
    return MF_OK;
}

const mf_kernel mf_kernel_lut_s8 = {MF_KIND_HEAD_lut_s8, check, run};
