/*
 * transpose_conv2d_s8: int8 transposed 2-D convolution, bit-exact with CMSIS-NN arm_transpose_conv_s8
 * and mcuforge.kernels.transpose_conv2d_s8. NHWC input and output, OHWI weights, per-channel
 * requantization; torch's padding; the output size (torch's output_padding) is the output shape.
 *
 * Each input pixel scatters into acc[iy*sh + ky - ph, ix*sw + kx - pw]. Computed here as a gather:
 * output row oy takes the taps ky with (oy + ph - ky) a multiple of sh, input row (oy + ph - ky) / sh
 * inside the input. The int32 accumulator wraps, so the order of the additions does not matter.
 *
 * run_portable is the statement of the math. The optimized paths take the same taps for a block of
 * output channels at once (every filter of the block shares the input pixel's loads) and give the
 * same sums modulo 2^32:
 *   DSP: 2 filters per loop, 4 channels per step: the input widened once with the offset (SXTAB16),
 *        the weights with SXTB16, two SMLADs per filter;
 *   MVE: 4 filters per loop over 16 lanes (tail-predicated), VMLADAVA per filter; the offset enters
 *        as offset * sum(weights), summed by VADDVA in the same loop; the 4 outputs requantized as
 *        one vector (per-channel multipliers and shifts) and stored together.
 */
#include "mf_simd.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&w, MF_INT8, 4) || !mf_is(&o, MF_INT8, 4)) return MF_ERR_SHAPE;
    if (w.shape[3] != x.shape[3] || o.shape[0] != x.shape[0] || o.shape[3] != w.shape[0]) return MF_ERR_SHAPE;
    if (w.shape[1] >= 0x80000000u || w.shape[2] >= 0x80000000u) return MF_ERR_SHAPE; /* ky + stride < 2^32 */
    int32_t st[2], pd[2];
    if (!mf_attr_pair(c, A_STRIDE, 1, st) || !mf_attr_pair(c, A_PAD, 0, pd)) return MF_ERR_SHAPE;
    for (int a = 0; a < 2; a++) { /* output size in [base, base + stride - 1], base >= 1 */
        const int64_t base = ((int64_t)x.shape[1 + a] - 1) * st[a] - 2 * (int64_t)pd[a] + (int64_t)w.shape[1 + a];
        if (base < 1 || (int64_t)o.shape[1 + a] < base || (int64_t)o.shape[1 + a] >= base + st[a]) {
            return MF_ERR_SHAPE;
        }
    }
    return mf_check_weighted_params(c, has_bias ? &b : NULL, &m, &s, w.shape[0], A_ACT_MIN);
}

/* Along one axis, output index o takes taps k = k0, k0 + stride, ... from input indices i0, i0 - 1, ...
 * (o + pad = i * stride + k). */
static void first_tap(uint32_t o, int32_t stride, int32_t pad, uint32_t *k0, int64_t *i0) {
    const int64_t t = (int64_t)o + pad;
    *k0 = (uint32_t)(t % stride);
    *i0 = t / stride;
}

/* sum((x[i] + offset) * w[i]) over any n, wrapping like an int32 accumulator */
static int32_t dot_wrap(const int8_t *x, const int8_t *w, uint32_t n, int32_t offset) {
    int32_t acc = 0;
    while (n > 0) {
        const uint32_t part = n < MF_MAX_DOT_DEPTH ? n : MF_MAX_DOT_DEPTH;
        acc = mf_add_wrap(acc, mf_dot_s8(x, w, part, offset));
        x += part;
        w += part;
        n -= part;
    }
    return acc;
}

static mf_status run_portable(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    int32_t st[2], pd[2];
    mf_attr_pair(c, A_STRIDE, 1, st);
    mf_attr_pair(c, A_PAD, 0, pd);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const uint32_t h = x.shape[1], wi = x.shape[2], ch = x.shape[3];
    const uint32_t oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *xn = xd + (size_t)n * h * wi * ch;
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            uint32_t ky0;
            int64_t iy0;
            first_tap(oy, st[0], pd[0], &ky0, &iy0);
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                uint32_t kx0;
                int64_t ix0;
                first_tap(ox, st[1], pd[1], &kx0, &ix0);
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    int32_t acc = 0;
                    int64_t iy = iy0;
                    for (uint32_t ky = ky0; ky < kh && iy >= 0; ky += (uint32_t)st[0], iy--) {
                        if (iy >= (int64_t)h) continue;
                        int64_t ix = ix0;
                        for (uint32_t kx = kx0; kx < kw && ix >= 0; kx += (uint32_t)st[1], ix--) {
                            if (ix >= (int64_t)wi) continue;
                            const int8_t *xp = xn + ((size_t)iy * wi + (size_t)ix) * ch;
                            const int8_t *wp = wd + (((size_t)oc * kh + ky) * kw + kx) * ch;
                            acc = mf_add_wrap(acc, dot_wrap(xp, wp, ch, in_off));
                        }
                    }
                    *out++ = mf_channel_requant_s8(&rq, oc, acc); /* the bias joins the wrapping sum here */
                }
            }
        }
    }
    return MF_OK;
}

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)

/* The taps of one output pixel, listed once for all its filters: input pixel i at x + x_at[i], its
 * weights at filter + w_at[i]. */
#define MAX_TAPS 64u
typedef struct {
    uint32_t n;
    uint32_t x_at[MAX_TAPS], w_at[MAX_TAPS];
} taps;

/* Output (oy, ox) takes, along each axis, kernel index k0, k0 + stride, ... from input i0, i0 - 1, ...
 * (o + pad = i * stride + k); only the inputs inside the image count. */
static void list_taps(taps *t, uint32_t oy, uint32_t ox, const int32_t st[2], const int32_t pd[2], uint32_t h,
                      uint32_t wi, uint32_t ch, uint32_t kh, uint32_t kw) {
    const int32_t ty = (int32_t)oy + pd[0], tx = (int32_t)ox + pd[1];
    t->n = 0;
    for (int32_t ky = ty % st[0], iy = ty / st[0]; ky < (int32_t)kh && iy >= 0; ky += st[0], iy--) {
        if (iy >= (int32_t)h) continue;
        for (int32_t kx = tx % st[1], ix = tx / st[1]; kx < (int32_t)kw && ix >= 0; kx += st[1], ix--) {
            if (ix >= (int32_t)wi) continue;
            t->x_at[t->n] = ((uint32_t)iy * wi + (uint32_t)ix) * ch;
            t->w_at[t->n] = ((uint32_t)ky * kw + (uint32_t)kx) * ch;
            t->n++;
        }
    }
}

#if defined(MF_USE_DSP)

/* Filters f0 and f1 (weights at w0, w1; w1 == w0: unwritten) of one output pixel: sums over its taps, wrapping. */
static void filters2(const taps *t, const int8_t *x, const int8_t *w0, const int8_t *w1, uint32_t ch, int32_t in_off,
                     int32_t sums[2]) {
    const int32_t off16 = mf_pack_off16(in_off);
    const uint32_t c4 = ch & ~3u;
    int32_t a0 = 0, a1 = 0;
    uint32_t tail0 = 0, tail1 = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        const int8_t *xp = x + t->x_at[k], *p0 = w0 + t->w_at[k], *p1 = w1 + t->w_at[k];
        for (uint32_t i = 0; i < c4; i += 4) {
            const int32_t xv = mf_ld32(xp + i);
            const int32_t x02 = mf_sxtab16(off16, xv), x13 = mf_sxtab16_ror8(off16, xv);
            const int32_t v0 = mf_ld32(p0 + i), v1 = mf_ld32(p1 + i);
            a0 = mf_smlad(x02, mf_sxtb16(v0), a0);
            a0 = mf_smlad(x13, mf_sxtb16_ror8(v0), a0);
            a1 = mf_smlad(x02, mf_sxtb16(v1), a1);
            a1 = mf_smlad(x13, mf_sxtb16_ror8(v1), a1);
        }
        for (uint32_t i = c4; i < ch; i++) {
            const int32_t xo = (int32_t)xp[i] + in_off;
            tail0 += (uint32_t)(xo * p0[i]);
            tail1 += (uint32_t)(xo * p1[i]);
        }
    }
    sums[0] = mf_wrap32((uint32_t)a0 + tail0);
    sums[1] = mf_wrap32((uint32_t)a1 + tail1);
}

#else /* MVE */

/* Filters with weights at w[0 .. 3] (repeats: unwritten) of one output pixel: sum(x w) + off sum(w)
 * over its taps, wrapping. */
static void filters4(const taps *t, const int8_t *x, const int8_t *const w[4], uint32_t ch, int32_t in_off,
                     int32_t sums[4]) {
    const uint32_t c16 = ch >> 4, tail = ch & 15u;
    const mve_pred16_t pt = vctp8q(tail);
    int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0, ws0 = 0, ws1 = 0, ws2 = 0, ws3 = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        const int8_t *xp = x + t->x_at[k], *p0 = w[0] + t->w_at[k], *p1 = w[1] + t->w_at[k];
        const int8_t *p2 = w[2] + t->w_at[k], *p3 = w[3] + t->w_at[k];
        for (uint32_t i = c16; i > 0; i--) {
            const int8x16_t xv = vldrbq_s8(xp);
            xp += 16;
            int8x16_t v = vldrbq_s8(p0);
            d0 = vmladavaq_s8(d0, xv, v);
            ws0 = vaddvaq_s8(ws0, v);
            v = vldrbq_s8(p1);
            d1 = vmladavaq_s8(d1, xv, v);
            ws1 = vaddvaq_s8(ws1, v);
            v = vldrbq_s8(p2);
            d2 = vmladavaq_s8(d2, xv, v);
            ws2 = vaddvaq_s8(ws2, v);
            v = vldrbq_s8(p3);
            d3 = vmladavaq_s8(d3, xv, v);
            ws3 = vaddvaq_s8(ws3, v);
            p0 += 16;
            p1 += 16;
            p2 += 16;
            p3 += 16;
        }
        if (tail) {
            const int8x16_t xv = vldrbq_z_s8(xp, pt);
            int8x16_t v = vldrbq_z_s8(p0, pt);
            d0 = vmladavaq_s8(d0, xv, v);
            ws0 = vaddvaq_s8(ws0, v);
            v = vldrbq_z_s8(p1, pt);
            d1 = vmladavaq_s8(d1, xv, v);
            ws1 = vaddvaq_s8(ws1, v);
            v = vldrbq_z_s8(p2, pt);
            d2 = vmladavaq_s8(d2, xv, v);
            ws2 = vaddvaq_s8(ws2, v);
            v = vldrbq_z_s8(p3, pt);
            d3 = vmladavaq_s8(d3, xv, v);
            ws3 = vaddvaq_s8(ws3, v);
        }
    }
    const uint32_t off = (uint32_t)in_off;
    sums[0] = mf_wrap32((uint32_t)d0 + off * (uint32_t)ws0);
    sums[1] = mf_wrap32((uint32_t)d1 + off * (uint32_t)ws1);
    sums[2] = mf_wrap32((uint32_t)d2 + off * (uint32_t)ws2);
    sums[3] = mf_wrap32((uint32_t)d3 + off * (uint32_t)ws3);
}

/* Outputs oc .. oc + count - 1 of one pixel: + bias, per-channel requantization, as one vector. */
static void requant4(const mf_channel_requant *rq, uint32_t oc, uint32_t count, const int32_t sums[4], int8_t *out) {
    const mve_pred16_t p = vctp32q(count);
    int32x4_t acc = vldrwq_s32(sums);
    if (rq->bias) acc = vaddq_s32(acc, vldrwq_z_s32(rq->bias + oc, p));
    const int32x4_t mult = rq->per_channel ? vldrwq_z_s32(rq->mult + oc, p) : vdupq_n_s32(rq->mult[0]);
    const int32x4_t shift = rq->per_channel ? mf_shifts_x4(rq->shift + oc, p) : vdupq_n_s32(rq->shift[0]);
    int32x4_t v = vaddq_s32(mf_requantize_x4(acc, mult, shift), vdupq_n_s32(rq->out_off));
    v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(rq->lo)), vdupq_n_s32(rq->hi));
    vstrbq_p_s32(out + oc, v, p);
}

#endif

static mf_status run_fast(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    int32_t st[2], pd[2];
    mf_attr_pair(c, A_STRIDE, 1, st);
    mf_attr_pair(c, A_PAD, 0, pd);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const uint32_t h = x.shape[1], wi = x.shape[2], ch = x.shape[3], kh = w.shape[1], kw = w.shape[2];
    const uint32_t oc_n = w.shape[0], filter = kh * kw * ch;
    const int8_t *wd = (const int8_t *)w.data;
#if defined(MF_USE_MVE)
    const int vector_rq = mf_requant_vector_ok(&rq, oc_n);
#endif
    taps t;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * h * wi * ch;
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            for (uint32_t ox = 0; ox < o.shape[2]; ox++, out += oc_n) {
                list_taps(&t, oy, ox, st, pd, h, wi, ch, kh, kw);
#if defined(MF_USE_DSP)
                for (uint32_t oc = 0; oc < oc_n; oc += 2) {
                    const int pair = oc + 1 < oc_n;
                    const int8_t *w0 = wd + (size_t)oc * filter;
                    int32_t sums[2];
                    filters2(&t, image, w0, pair ? w0 + filter : w0, ch, in_off, sums);
                    out[oc] = mf_channel_requant_s8_inline(&rq, oc, sums[0]);
                    if (pair) out[oc + 1] = mf_channel_requant_s8_inline(&rq, oc + 1, sums[1]);
                }
#else
                for (uint32_t oc = 0; oc < oc_n; oc += 4) {
                    const uint32_t count = oc_n - oc < 4u ? oc_n - oc : 4u;
                    const int8_t *w0 = wd + (size_t)oc * filter;
                    const int8_t *const ws[4] = {w0, count > 1 ? w0 + filter : w0, count > 2 ? w0 + 2 * filter : w0,
                                                 count > 3 ? w0 + 3 * filter : w0};
                    int32_t sums[4];
                    filters4(&t, image, ws, ch, in_off, sums);
                    if (vector_rq) {
                        requant4(&rq, oc, count, sums, out);
                    } else {
                        for (uint32_t i = 0; i < count; i++) {
                            out[oc + i] = mf_channel_requant_s8_inline(&rq, oc + i, sums[i]);
                        }
                    }
                }
#endif
            }
        }
    }
    return MF_OK;
}

/* Geometry in int32 and at most MAX_TAPS taps per output pixel (far beyond any Cortex-M model); the
 * portable path takes the rest. */
static int fast_path_fits(const mf_call *c) {
    mf_tensor x, w, o;
    int32_t st[2], pd[2];
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &w);
    mf_call_output(c, 0, &o);
    mf_attr_pair(c, A_STRIDE, 1, st);
    mf_attr_pair(c, A_PAD, 0, pd);
    const uint32_t lim = 1u << 14;
    for (int a = 0; a < 2; a++) {
        if ((uint32_t)st[a] >= lim || (uint32_t)pd[a] >= lim || x.shape[1 + a] >= lim || o.shape[1 + a] >= lim ||
            w.shape[1 + a] >= lim) {
            return 0;
        }
    }
    const uint64_t taps_y = (w.shape[1] + (uint32_t)st[0] - 1u) / (uint32_t)st[0];
    const uint64_t taps_x = (w.shape[2] + (uint32_t)st[1] - 1u) / (uint32_t)st[1];
    return taps_y * taps_x <= MAX_TAPS && (uint64_t)x.shape[1] * x.shape[2] * x.shape[3] < (1ull << 31) &&
           (uint64_t)w.shape[0] * w.shape[1] * w.shape[2] * w.shape[3] < (1ull << 31);
}

static mf_status run(const mf_call *c) {
    if (fast_path_fits(c)) return run_fast(c);
    return run_portable(c);
}
#else
static mf_status run(const mf_call *c) { return run_portable(c); }
#endif /* MF_USE_DSP || MF_USE_MVE */

const mf_kernel mf_kernel_transpose_conv2d_s8 = {MF_KIND_HEAD_transpose_conv2d_s8, check, run};
