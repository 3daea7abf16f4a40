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

#endif /* MF_POOL_H */
