/*
 * avgpool_s8 and maxpool_s8: bit-exact with CMSIS-NN arm_avgpool_s8 and arm_max_pool_s8. Padding
 * positions are not part of a window: an average divides by the in-bounds count, rounding half
 * away from zero. A window entirely in padding is rejected at load time (CMSIS: argument error).
 * The output size is an attribute, as CMSIS-NN takes it (output_x, output_y): torch's ceil_mode
 * and the default floor rule are both a choice of it; every window must hit the input.
 *
 * MVE (cortex-m55): an average over a window of at most 255 inputs (so that the int16 sums cannot
 * overflow: 255 * 128 < 2^15) sums eight channels per VLDRB.S16 + VADD, then divides each channel's
 * sum in scalar code exactly as below; other windows and maxpool take the portable loop.
 */
#include "mf_simd.h"

enum { A_KERNEL, A_STRIDE, A_PAD, A_ACT_MIN, A_ACT_MAX, A_OUT_HW };

typedef struct {
    int32_t k[2], st[2], pd[2], out[2], lo, hi;
} pool_params;

static int params(const mf_call *c, pool_params *p) {
    const int k_ok = mf_attr_pair(c, A_KERNEL, 1, p->k), st_ok = mf_attr_pair(c, A_STRIDE, 1, p->st);
    const int pd_ok = mf_attr_pair(c, A_PAD, 0, p->pd), out_ok = mf_attr_pair(c, A_OUT_HW, 1, p->out);
    return k_ok && st_ok && pd_ok && out_ok && mf_attr_act(c, A_ACT_MIN, &p->lo, &p->hi);
}

/* Every window along one axis has at least one in-bounds element. */
static int windows_hit(uint32_t size, int32_t k, int32_t st, int32_t pd, uint32_t n_out) {
    for (uint32_t o = 0; o < n_out; o++) {
        int64_t start = (int64_t)o * st - pd;
        if (start + k <= 0 || start >= (int64_t)size) return 0;
    }
    return 1;
}

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    pool_params p;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&o, MF_INT8, -1) || !params(c, &p)) return MF_ERR_SHAPE;
    /* The output may have any shape holding N x OH x OW x C values (a global pool feeding a
     * linear layer is stored as (N, C)); OH and OW are the output_hw attribute. */
    const uint32_t oh = (uint32_t)p.out[0], ow = (uint32_t)p.out[1];
    const uint64_t rows = (uint64_t)x.shape[0] * x.shape[3] * oh; /* x.numel < 2^32, oh < 2^31: no wrap */
    if (rows > o.numel || rows * ow != o.numel) return MF_ERR_SHAPE;
    if (!windows_hit(x.shape[1], p.k[0], p.st[0], p.pd[0], oh) ||
        !windows_hit(x.shape[2], p.k[1], p.st[1], p.pd[1], ow)) {
        return MF_ERR_SHAPE;
    }
    return MF_OK;
}

/* The in-bounds part [lo, hi) of the window starting at `start`. */
static void clip_window(int64_t start, int32_t k, uint32_t size, uint32_t *lo, uint32_t *hi) {
    int64_t a = start < 0 ? 0 : start, b = start + k > (int64_t)size ? (int64_t)size : start + k;
    *lo = (uint32_t)a;
    *hi = (uint32_t)b;
}

#if defined(MF_USE_MVE)
/* The averages of window [y_lo, y_hi) x [x_lo, x_hi) (count <= 255 inputs) of image xd, all channels. */
static void avg_window_mve(const int8_t *xd, uint32_t w, uint32_t ch, uint32_t y_lo, uint32_t y_hi, uint32_t x_lo,
                           uint32_t x_hi, int32_t count, int32_t lo, int32_t hi, int8_t *out) {
    for (uint32_t c0 = 0; c0 < ch; c0 += 8) {
        const mve_pred16_t p = vctp16q(ch - c0);
        int16x8_t acc = vdupq_n_s16(0);
        for (uint32_t iy = y_lo; iy < y_hi; iy++) {
            const int8_t *xp = xd + ((size_t)iy * w + x_lo) * ch + c0;
            for (uint32_t ix = x_lo; ix < x_hi; ix++, xp += ch) acc = vaddq_s16(acc, vldrbq_z_s16(xp, p));
        }
        int16_t sums[8];
        vst1q_s16(sums, acc);
        const uint32_t n = ch - c0 < 8 ? ch - c0 : 8;
        for (uint32_t i = 0; i < n; i++) {
            const int32_t a = sums[i];
            out[c0 + i] = mf_clamp_s8(a > 0 ? (a + count / 2) / count : (a - count / 2) / count, lo, hi);
        }
    }
}
#endif

static mf_status run(const mf_call *c, int is_max) {
    mf_tensor x, o;
    pool_params p;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    params(c, &p);
    const uint32_t h = x.shape[1], w = x.shape[2], ch = x.shape[3];
    const uint32_t oh = (uint32_t)p.out[0], ow = (uint32_t)p.out[1];
    const int8_t *xd = (const int8_t *)x.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < oh; oy++) {
            uint32_t y_lo, y_hi;
            clip_window((int64_t)oy * p.st[0] - p.pd[0], p.k[0], h, &y_lo, &y_hi);
            for (uint32_t ox = 0; ox < ow; ox++) {
                uint32_t x_lo, x_hi;
                clip_window((int64_t)ox * p.st[1] - p.pd[1], p.k[1], w, &x_lo, &x_hi);
                const int32_t count = (int32_t)((y_hi - y_lo) * (x_hi - x_lo));
#if defined(MF_USE_MVE)
                if (!is_max && count <= 255) {
                    avg_window_mve(xd + (size_t)n * h * w * ch, w, ch, y_lo, y_hi, x_lo, x_hi, count, p.lo, p.hi, out);
                    out += ch;
                    continue;
                }
#endif
                for (uint32_t cc = 0; cc < ch; cc++) {
                    int32_t acc = is_max ? -129 : 0;
                    for (uint32_t iy = y_lo; iy < y_hi; iy++) {
                        for (uint32_t ix = x_lo; ix < x_hi; ix++) {
                            const int32_t v = xd[(((size_t)n * h + iy) * w + ix) * ch + cc];
                            if (is_max) acc = v > acc ? v : acc;
                            else acc += v;
                        }
                    }
                    if (!is_max) {
                        /* C truncating division after adding half the count: half away from zero */
                        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    }
                    *out++ = mf_clamp_s8(acc, p.lo, p.hi);
                }
            }
        }
    }
    return MF_OK;
}

static mf_status run_avg(const mf_call *c) { return run(c, 0); }
static mf_status run_max(const mf_call *c) { return run(c, 1); }

const mf_kernel mf_kernel_avgpool_s8 = {5, "avgpool_s8", 1, 1, 0, "IIIiiI", check, run_avg};
const mf_kernel mf_kernel_maxpool_s8 = {6, "maxpool_s8", 1, 1, 0, "IIIiiI", check, run_max};
