/*
 * avgpool_s8 and maxpool_s8: bit-exact with CMSIS-NN arm_avgpool_s8 and arm_max_pool_s8. Padding
 * positions are not part of a window: an average divides by the in-bounds count, rounding half
 * away from zero. A window entirely in padding is rejected at load time (CMSIS: argument error).
 * The output size is an attribute, as CMSIS-NN takes it (output_x, output_y): torch's ceil_mode
 * and the default floor rule are both a choice of it; every window must hit the input. The loops
 * (mf_pool_run, mf_pool.h) are shared with the int16 kernels of pooling_s16.c.
 */
#include "mf_pool.h"

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    mf_pool_window p;
    int32_t lo, hi;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&o, MF_INT8, -1) || !mf_pool_window_read(c, &p)) return MF_ERR_SHAPE;
    if (!mf_attr_act(c, MF_POOL_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    return mf_pool_shapes_ok(&x, &o, &p) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_avg(const mf_call *c) { return mf_pool_run(c, 0, 0); }
static mf_status run_max(const mf_call *c) { return mf_pool_run(c, 1, 0); }

const mf_kernel mf_kernel_avgpool_s8 = {5, "avgpool_s8", 1, 1, 0, "IIIiiI", check, run_avg};
const mf_kernel mf_kernel_maxpool_s8 = {6, "maxpool_s8", 1, 1, 0, "IIIiiI", check, run_max};
