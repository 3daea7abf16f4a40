/* The window geometry of the pooling kernels (pooling_s8.c, pooling_s16.c): CMSIS-NN's, windows over
 * in-bounds elements only, the output size an attribute (output_hw), every window hitting the input. */
#ifndef MF_POOL_H
#define MF_POOL_H

#include "mf_kernel_util.h"

/* the pooling kinds' attributes (mcuforge/ir.py OP_KINDS) */
enum { MF_POOL_KERNEL, MF_POOL_STRIDE, MF_POOL_PAD, MF_POOL_ACT_MIN, MF_POOL_ACT_MAX, MF_POOL_OUT_HW };

typedef struct {
    int32_t k[2], st[2], pd[2], out[2];
} mf_pool_window;

/* The window attributes: kernel and stride pairs >= 1, padding >= 0, output_hw >= 1. */
static inline int mf_pool_window_read(const mf_call *c, mf_pool_window *p) {
    const int k_ok = mf_attr_pair(c, MF_POOL_KERNEL, 1, p->k), st_ok = mf_attr_pair(c, MF_POOL_STRIDE, 1, p->st);
    const int pd_ok = mf_attr_pair(c, MF_POOL_PAD, 0, p->pd), out_ok = mf_attr_pair(c, MF_POOL_OUT_HW, 1, p->out);
    return k_ok && st_ok && pd_ok && out_ok;
}

/* Every window along one axis has at least one in-bounds element. */
static inline int mf_pool_windows_hit(uint32_t size, int32_t k, int32_t st, int32_t pd, uint32_t n_out) {
    for (uint32_t o = 0; o < n_out; o++) {
        int64_t start = (int64_t)o * st - pd;
        if (start + k <= 0 || start >= (int64_t)size) return 0;
    }
    return 1;
}

/* The load-time shape checks of a pooling op with NHWC input x and output o: the output holds
 * N x OH x OW x C values in any shape (a global pool feeding a linear layer is stored as (N, C)), and
 * every window hits the input. */
static inline int mf_pool_shapes_ok(const mf_tensor *x, const mf_tensor *o, const mf_pool_window *p) {
    const uint32_t oh = (uint32_t)p->out[0], ow = (uint32_t)p->out[1];
    const uint64_t rows = (uint64_t)x->shape[0] * x->shape[3] * oh; /* x.numel < 2^32, oh < 2^31: no wrap */
    if (rows > o->numel || rows * ow != o->numel) return 0;
    return mf_pool_windows_hit(x->shape[1], p->k[0], p->st[0], p->pd[0], oh) &&
           mf_pool_windows_hit(x->shape[2], p->k[1], p->st[1], p->pd[1], ow);
}

/* The in-bounds part [lo, hi) of the window starting at `start`. */
static inline void mf_pool_clip(int64_t start, int32_t k, uint32_t size, uint32_t *lo, uint32_t *hi) {
    int64_t a = start < 0 ? 0 : start, b = start + k > (int64_t)size ? (int64_t)size : start + k;
    *lo = (uint32_t)a;
    *hi = (uint32_t)b;
}

/* Average (is_max 0) or max pooling of int8 (is_s16 0) or int16 values, NHWC: the in-bounds window's
 * sum divided by its count (C truncation after adding half the count: half away from zero) or its
 * maximum, clamped to the activation range. The s16 window sum is int32: pooling_s16.c limits windows
 * to 65535 elements, so it cannot overflow. */
static inline mf_status mf_pool_run(const mf_call *c, int is_max, int is_s16) {
    mf_tensor x, o;
    mf_pool_window p;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_pool_window_read(c, &p);
    const int32_t lo = mf_attr_int(c, MF_POOL_ACT_MIN), hi = mf_attr_int(c, MF_POOL_ACT_MAX);
    const uint32_t h = x.shape[1], w = x.shape[2], ch = x.shape[3];
    const uint32_t oh = (uint32_t)p.out[0], ow = (uint32_t)p.out[1];
    const int8_t *x8 = (const int8_t *)x.data;
    const int16_t *x16 = (const int16_t *)x.data;
    int8_t *out8 = (int8_t *)o.data;
    int16_t *out16 = (int16_t *)o.data;
    size_t i_out = 0;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < oh; oy++) {
            uint32_t y_lo, y_hi;
            mf_pool_clip((int64_t)oy * p.st[0] - p.pd[0], p.k[0], h, &y_lo, &y_hi);
            for (uint32_t ox = 0; ox < ow; ox++) {
                uint32_t x_lo, x_hi;
                mf_pool_clip((int64_t)ox * p.st[1] - p.pd[1], p.k[1], w, &x_lo, &x_hi);
                const int32_t count = (int32_t)((y_hi - y_lo) * (x_hi - x_lo));
                for (uint32_t cc = 0; cc < ch; cc++) {
                    int32_t acc = is_max ? INT32_MIN : 0;
                    for (uint32_t iy = y_lo; iy < y_hi; iy++) {
                        for (uint32_t ix = x_lo; ix < x_hi; ix++) {
                            const size_t i = (((size_t)n * h + iy) * w + ix) * ch + cc;
                            const int32_t v = is_s16 ? x16[i] : x8[i];
                            if (is_max) acc = v > acc ? v : acc;
                            else acc += v;
                        }
                    }
                    if (!is_max) acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    acc = acc < lo ? lo : (acc > hi ? hi : acc);
                    if (is_s16) out16[i_out++] = (int16_t)acc;
                    else out8[i_out++] = (int8_t)acc;
                }
            }
        }
    }
    return MF_OK;
}

#endif /* MF_POOL_H */
