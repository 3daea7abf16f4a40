/*
 * avgpool_s16 and maxpool_s16: bit-exact with CMSIS-NN arm_avgpool_s16 and arm_max_pool_s16 (and
 * mcuforge.kernels.avgpool_s16 / maxpool_s16): the definitions of the int8 kernels (pooling_s8.c, the
 * window helpers of mf_pool.h) on int16 values. Windows hold at most 65535 elements, so the int32 sum of an
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

static mf_status run(const mf_call *c, int is_max) {
    mf_tensor x, o;
    mf_pool_window p;
    int32_t lo, hi;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_pool_window_read(c, &p);
    mf_attr_act_s16(c, MF_POOL_ACT_MIN, &lo, &hi);
    const uint32_t h = x.shape[1], w = x.shape[2], ch = x.shape[3];
    const uint32_t oh = (uint32_t)p.out[0], ow = (uint32_t)p.out[1];
    const int16_t *xd = (const int16_t *)x.data;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < oh; oy++) {
            uint32_t y_lo, y_hi;
            mf_pool_clip((int64_t)oy * p.st[0] - p.pd[0], p.k[0], h, &y_lo, &y_hi);
            for (uint32_t ox = 0; ox < ow; ox++) {
                uint32_t x_lo, x_hi;
                mf_pool_clip((int64_t)ox * p.st[1] - p.pd[1], p.k[1], w, &x_lo, &x_hi);
                const int32_t count = (int32_t)((y_hi - y_lo) * (x_hi - x_lo));
                for (uint32_t cc = 0; cc < ch; cc++) {
                    int32_t acc = is_max ? -32769 : 0; /* below every int16: a window holds an input */
                    for (uint32_t iy = y_lo; iy < y_hi; iy++) {
                        for (uint32_t ix = x_lo; ix < x_hi; ix++) {
                            const int32_t v = xd[(((size_t)n * h + iy) * w + ix) * ch + cc];
                            if (is_max) acc = v > acc ? v : acc;
                            else acc += v; /* at most 65535 terms of |v| <= 2^15: no overflow */
                        }
                    }
                    /* C truncating division after adding half the count: half away from zero */
                    if (!is_max) acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    *out++ = mf_clamp_s16(acc, lo, hi);
                }
            }
        }
    }
    return MF_OK;
}

static mf_status run_avg(const mf_call *c) { return run(c, 0); }
static mf_status run_max(const mf_call *c) { return run(c, 1); }

const mf_kernel mf_kernel_avgpool_s16 = {MF_KIND_HEAD_avgpool_s16, check, run_avg};
const mf_kernel mf_kernel_maxpool_s16 = {MF_KIND_HEAD_maxpool_s16, check, run_max};
