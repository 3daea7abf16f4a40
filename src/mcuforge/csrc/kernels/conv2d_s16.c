/*
 * conv2d_s16: int16 x int8 2-D convolution, bit-exact with CMSIS-NN arm_convolve_s16 and
 * mcuforge.kernels.conv2d_s16. NHWC int16 input (zero point 0), OHWI int8 weights, optional int64
 * bias, per-channel arm_nn_requantize_s64; or arm_convolve_s16's int32-bias form (an int32 bias: the sum
 * modulo 2^32, + bias wrapping, arm_nn_requantize; mf_requant_s16_channel). Taps outside the input are
 * skipped (a zero pad). Grouped convolution as conv2d_s8 takes it.
 *
 * The accumulator is the exact sum in int64 (CMSIS-NN sums blocks of up to 512 products in int32 and goes
 * on in int64; where its int32 blocks overflow, undefined in C, the two differ: docs/numerics.md). run_portable is the statement of the math, one filter tap row
 * at a time (mf_dot_s16). On DSP and MVE cores with the op's scratch (2 bytes per patch element,
 * mcuforge.ir.kernel_scratch_bytes), CMSIS-NN's way: each output pixel's patch is copied into the scratch
 * (im2col; zeros outside the input) and multiplied by 4 filters of its group at a time
 * (mf_dot_s16_rows: DSP SMLALD, MVE VMLADAVA), the same exact sums.
 */
#include "mf_s16.h"
#include "mf_simd.h"

enum { A_STRIDE, A_PAD, A_DIL, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT16, 4) || !mf_is(&w, MF_INT8, 4) || !mf_is(&o, MF_INT16, 4)) return MF_ERR_SHAPE;
    if (w.shape[3] == 0 || x.shape[3] % w.shape[3] != 0 || w.shape[0] % (x.shape[3] / w.shape[3]) != 0) {
        return MF_ERR_SHAPE; /* input channels = groups x filter channels, filters split evenly */
    }
    if (o.shape[0] != x.shape[0] || o.shape[3] != w.shape[0]) return MF_ERR_SHAPE;
    int32_t st[2], pd[2], dl[2];
    if (!mf_attr_conv_window(c, A_STRIDE, st, pd, dl)) return MF_ERR_SHAPE;
    const uint64_t depth = (uint64_t)w.shape[1] * w.shape[2] * w.shape[3];
    return mf_check_weighted_s16_any_bias(c, has_bias ? &b : NULL, &m, &s, w.shape[0], depth, A_ACT_MIN);
}

static mf_status run_portable(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int16_t *xd = (const int16_t *)x.data;
    const int8_t *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], wc = w.shape[3], oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    const uint32_t oc_per_group = oc_n / (ch / wc);
    int16_t *out = (int16_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t y0 = (int64_t)oy * st[0] - pd[0], x0 = (int64_t)ox * st[1] - pd[1];
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    int64_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const int16_t *xp = xd + (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch +
                                                (size_t)(oc / oc_per_group) * wc;
                            const int8_t *wp = wd + (((size_t)oc * kh + ky) * kw + kx) * wc;
                            acc += mf_dot_s16(xp, wp, wc);
                        }
                    }
                    *out++ = mf_requant_s16_channel(&rq, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
/* The im2col path: needs 2 bytes of scratch per element of a patch (kh * kw * filter channels). */
static mf_status run_im2col(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int16_t *xd = (const int16_t *)x.data;
    const int8_t *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], wc = w.shape[3], oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    const uint32_t groups = ch / wc, oc_per_group = oc_n / groups, depth = kh * kw * wc;
    int16_t *patch = (int16_t *)(void *)c->scratch; /* 16-byte aligned */
    int16_t *out = (int16_t *)o.data;
    int64_t acc[4];
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t y0 = (int64_t)oy * st[0] - pd[0], x0 = (int64_t)ox * st[1] - pd[1];
                for (uint32_t g = 0; g < groups; g++) {
                    int16_t *dst = patch;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * dl[0];
                        for (uint32_t kx = 0; kx < kw; kx++, dst += wc) {
                            const int64_t ix = x0 + (int64_t)kx * dl[1];
                            if (iy < 0 || iy >= h || ix < 0 || ix >= wi) {
                                memset(dst, 0, wc * sizeof *dst); /* zero point 0: padding adds nothing */
                                continue;
                            }
                            memcpy(dst, xd + (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch +
                                   (size_t)g * wc, wc * sizeof *dst);
                        }
                    }
                    const uint32_t first = g * oc_per_group;
                    for (uint32_t oc = 0; oc < oc_per_group; oc += 4) {
                        const uint32_t k_n = oc_per_group - oc < 4 ? oc_per_group - oc : 4;
                        mf_dot_s16_rows(patch, wd + (size_t)(first + oc) * depth, depth, k_n, acc);
                        for (uint32_t k = 0; k < k_n; k++) out[first + oc + k] = mf_requant_s16_channel(&rq, first + oc + k, acc[k]);
                    }
                }
                out += oc_n;
            }
        }
    }
    return MF_OK;
}
#endif

#if defined(MF_USE_MVE)
/* The MVE int32 path (mf_s16_mve_ok): blocks of 4 consecutive output pixels, each filter's sums over the 4
 * patches at once (mf_s16_mve_cols4). A patch whose taps are one run of the input (a 1 x kw window of
 * adjacent taps over every channel, or 1 x 1) and inside it is read in place; the others are copied into
 * column i of the scratch (4 patches, each rounded up to 8 values; zeros outside the input). 0 when it
 * does not apply. */
static int run_mve(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *wd = (const int8_t *)w.data;
    const uint32_t ch = x.shape[3], wc = w.shape[3], oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    const uint32_t groups = ch / wc, oc_per_group = oc_n / groups, depth = kh * kw * wc;
    const uint32_t col_len = (depth + 7u) & ~7u;
    const int row_run = wc == ch && dl[1] == 1; /* a window row inside the input: kw * ch adjacent values */
    const int in_place = kh == 1 && (kw == 1 || row_run);
    const int have_cols = c->scratch && c->scratch_bytes >= mf_scratch_conv2d_s16_mve_patches(depth);
    if (!in_place && !have_cols) return 0;
    if (!mf_s16_mve_ok(&rq, wd, depth, oc_n, 1)) return 0;
    const int16_t *xd = (const int16_t *)x.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const int32_t oh = (int32_t)o.shape[1], ow = (int32_t)o.shape[2];
    const int32_t span_y = ((int32_t)kh - 1) * dl[0], span_x = ((int32_t)kw - 1) * dl[1];
    int16_t *scratch = (int16_t *)(void *)c->scratch;
    const uint32_t pixels = (uint32_t)(oh * ow);
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int16_t *xn = xd + (size_t)n * (size_t)h * (size_t)wi * ch;
        int16_t *on = (int16_t *)o.data + (size_t)n * pixels * oc_n;
        for (uint32_t p0 = 0; p0 < pixels; p0 += 4) {
            const uint32_t n_cols = pixels - p0 < 4 ? pixels - p0 : 4;
            for (uint32_t g = 0; g < groups; g++) {
                const int16_t *cols[4];
                for (uint32_t i = 0; i < n_cols; i++) {
                    const int32_t oy = (int32_t)(p0 + i) / ow, ox = (int32_t)(p0 + i) % ow;
                    const int32_t y0 = oy * st[0] - pd[0], x0 = ox * st[1] - pd[1];
                    const int inside = y0 >= 0 && x0 >= 0 && y0 + span_y < h && x0 + span_x < wi;
                    const int16_t *src = xn + ((size_t)(y0 < 0 ? 0 : y0) * (size_t)wi + (size_t)(x0 < 0 ? 0 : x0)) * ch +
                                         (size_t)g * wc;
                    if (inside && in_place) {
                        cols[i] = src;
                        continue;
                    }
                    int16_t *dst = scratch + (size_t)i * col_len;
                    cols[i] = dst;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + (int32_t)ky * dl[0];
                        if (row_run && iy >= 0 && iy < h && x0 >= 0 && x0 + span_x < wi) { /* one run */
                            memcpy(dst, xn + ((size_t)iy * (size_t)wi + (size_t)x0) * ch, kw * ch * sizeof *dst);
                            dst += kw * wc;
                            continue;
                        }
                        for (uint32_t kx = 0; kx < kw; kx++, dst += wc) {
                            const int32_t ix = x0 + (int32_t)kx * dl[1];
                            if (iy < 0 || iy >= h || ix < 0 || ix >= wi) {
                                memset(dst, 0, wc * sizeof *dst); /* zero point 0: padding adds nothing */
                                continue;
                            }
                            memcpy(dst, xn + ((size_t)iy * (size_t)wi + (size_t)ix) * ch + (size_t)g * wc,
                                   wc * sizeof *dst);
                        }
                    }
                }
                const uint32_t first = g * oc_per_group;
                mf_s16_mve_cols4(&rq, cols, n_cols, wd + (size_t)first * depth, depth, first, oc_per_group,
                                 on + (size_t)p0 * oc_n, oc_n);
            }
        }
    }
    return 1;
}
#endif

static mf_status run(const mf_call *c) {
#if defined(MF_USE_MVE)
    if (run_mve(c)) return MF_OK;
#endif
#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
    mf_tensor w;
    mf_call_input(c, 1, &w);
    /* the planned scratch (mcuforge/kinds/scratch.py, kind_table.h): one int16 patch, rounded up to 16 */
    if (c->scratch && c->scratch_bytes >= mf_scratch_conv2d_s16_im2col(w.shape[1] * w.shape[2] * w.shape[3]))
        return run_im2col(c);
#endif
    return run_portable(c);
}

const mf_kernel mf_kernel_conv2d_s16 = {MF_KIND_HEAD_conv2d_s16, check, run};
