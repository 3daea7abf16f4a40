/*
 * avgpool_s16 and maxpool_s16: bit-exact with CMSIS-NN arm_avgpool_s16 and arm_max_pool_s16 (and
 * mcuforge.kernels.avgpool_s16 / maxpool_s16): the definitions of the int8 kernels (pooling_s8.c,
 * the loops of mf_pool.h) on int16 values. Windows hold at most 65535 elements, so the int32 sum of an
 * average cannot overflow (CMSIS-NN's DSP path would saturate it, its portable path wrap).
 */
#include "mf_pool.h"
#include "mf_s16.h"

#define MF_POOL_S16_MAX_WINDOW 65535

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    mf_pool_window p;
    int32_t lo, hi;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT16, 4) || !mf_is(&o, MF_INT16, -1) || !mf_pool_window_read(c, &p)) return MF_ERR_SHAPE;
    if ((int64_t)p.k[0] * p.k[1] > MF_POOL_S16_MAX_WINDOW) return MF_ERR_SHAPE;
    if (!mf_attr_act_s16(c, MF_POOL_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    return mf_pool_shapes_ok(&x, &o, &p) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_avg(const mf_call *c) { return mf_pool_run(c, 0, 1); }
static mf_status run_max(const mf_call *c) { return mf_pool_run(c, 1, 1); }

const mf_kernel mf_kernel_avgpool_s16 = {65, "avgpool_s16", 1, 1, 0, "IIIiiI", check, run_avg};
const mf_kernel mf_kernel_maxpool_s16 = {66, "maxpool_s16", 1, 1, 0, "IIIiiI", check, run_max};
