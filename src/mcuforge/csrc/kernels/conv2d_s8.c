/*
 * conv2d_s8: int8 2-D convolution, bit-exact with CMSIS-NN arm_convolve_s8 (and
 * mcuforge.kernels.conv2d_s8). NHWC input, OHWI weights, per-channel requantization.
 * Taps outside the input are skipped (the same as padding with the input zero point).
 * Grouped convolution as arm_convolve_s8 takes it: the input has groups x (weight channels)
 * channels, and filter oc reads the input channels of group oc / (filters per group).
 *
 * run() below is the portable statement of the math. On cores with the DSP extension or MVE,
 * run_fast() computes the same int32 sums as a matrix multiply, CMSIS-NN's way: each output pixel's
 * input patch is copied (im2col) into a column of the op's scratch buffer -- taps outside the input
 * hold the input zero point, whose (x + input offset) is 0, so the sums equal the skipped taps' --
 * and a block of columns is multiplied by every filter of its group:
 *   DSP: columns widened to int16 with the offset added (lanes of each group of 4 in the order
 *        0, 2, 1, 3 to match SXTB16 on the weights), 2 filters x 2 pixels per SMLAD loop;
 *   MVE: int8 columns, 1 filter x 4 pixels per VMLADAVA loop over 16 lanes (tail-predicated); the
 *        offset enters once per filter as offset * sum(weights), summed by VADDVA in the same loop.
 * A 1x1 convolution without padding needs no im2col: its patch is the input pixel itself (MVE
 * reads it in place; DSP widens it). A patch row whose taps are adjacent (dilation 1, one group)
 * and inside the input is copied as one run: the few-input-channel first layers.
 * The scratch buffer is conv2d_s8_scratch_bytes (4 x the patch size, mcuforge/lower); a program with
 * less runs the portable path.
 */
#include "mf_simd.h"

/* attributes */
enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) { return mf_check_conv2d(c, MF_INT8); }

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
#define MF_CONV_FAST 1

/* Patch size rounded up to a multiple of 4: the DSP columns' stride, which keeps them word-aligned. */
static uint32_t depth4(uint32_t depth) { return (depth + 3u) & ~3u; }

/* The fast path's scratch: 4 int8 patches (MVE); 2 int16 patches interleaved and an int8 one (DSP). */
static uint32_t fast_scratch_bytes(uint32_t depth) { return 5u * depth4(depth); }

/* dst[0 .. n) = src[0 .. n) */
static inline void copy_s8(int8_t *dst, const int8_t *src, uint32_t n) {
#if defined(MF_USE_MVE)
    for (int32_t left = (int32_t)n; left > 0; left -= 16) {
        const mve_pred16_t p = vctp8q((uint32_t)left);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
        src += 16;
        dst += 16;
    }
#else
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) mf_st32(dst + i, mf_ld32(src + i));
    for (; i < n; i++) dst[i] = src[i];
#endif
}

static inline void fill_s8(int8_t *dst, int8_t v, uint32_t n) {
#if defined(MF_USE_MVE)
    const int8x16_t vv = vdupq_n_s8(v);
    for (int32_t left = (int32_t)n; left > 0; left -= 16) {
        vstrbq_p_s8(dst, vv, vctp8q((uint32_t)left));
        dst += 16;
    }
#else
    const int32_t word = mf_wrap32((uint32_t)(uint8_t)v * 0x01010101u);
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) mf_st32(dst + i, word);
    for (; i < n; i++) dst[i] = v;
#endif
}

typedef struct {
    const int8_t *x;           /* input image n, channel of the group's first input */
    int32_t h, w;              /* input height, width */
    uint32_t ch, wc, kh, kw;   /* input channels, filter channels, kernel */
    int32_t st[2], pd[2], dl[2];
    int8_t zero_point;         /* -input offset: the value of a tap outside the input */
    int contiguous_rows;       /* dilation 1 along x and one group: a kernel row is one run of bytes */
} conv_geom;

/* The patch of output pixel (oy, ox) as int8, in the weights' (ky, kx, c) order. */
static void im2col_s8(const conv_geom *g, int32_t oy, int32_t ox, int8_t *col) {
    const int32_t y0 = oy * g->st[0] - g->pd[0], x0 = ox * g->st[1] - g->pd[1];
    const uint32_t row_bytes = g->kw * g->wc;
    const int32_t x_last = x0 + ((int32_t)g->kw - 1) * g->dl[1];
    for (uint32_t ky = 0; ky < g->kh; ky++, col += row_bytes) {
        const int32_t iy = y0 + (int32_t)ky * g->dl[0];
        if (iy < 0 || iy >= g->h) {
            fill_s8(col, g->zero_point, row_bytes);
            continue;
        }
        const int8_t *row = g->x + (size_t)iy * (size_t)g->w * g->ch;
        if (g->contiguous_rows && x0 >= 0 && x_last < g->w) {
            copy_s8(col, row + (size_t)x0 * g->ch, row_bytes);
            continue;
        }
        if (g->contiguous_rows) { /* the taps inside the input are one run; zero points around it */
            const int32_t lo = x0 < 0 ? -x0 : 0, hi = x_last < g->w ? (int32_t)g->kw : g->w - x0;
            if (hi <= lo) {
                fill_s8(col, g->zero_point, row_bytes);
                continue;
            }
            const uint32_t before = (uint32_t)lo * g->wc, run = (uint32_t)(hi - lo) * g->wc;
            if (before > 0) fill_s8(col, g->zero_point, before);
            copy_s8(col + before, row + (size_t)(x0 + lo) * g->ch, run);
            if (before + run < row_bytes) fill_s8(col + before + run, g->zero_point, row_bytes - before - run);
            continue;
        }
        int8_t *dst = col;
        for (uint32_t kx = 0; kx < g->kw; kx++, dst += g->wc) {
            const int32_t ix = x0 + (int32_t)kx * g->dl[1];
            if (ix < 0 || ix >= g->w) {
                fill_s8(dst, g->zero_point, g->wc);
            } else {
                copy_s8(dst, row + (size_t)ix * g->ch, g->wc);
            }
        }
    }
}

#if defined(MF_USE_DSP)
#define NCOLS 2u

/* Column c (0 or 1) of a pair of widened patches: src[i] + offset as int16. The two columns are
 * interleaved by groups of 4 so that one pointer reads both: group g holds column 0's lanes 0, 2, 1, 3
 * (the order of SXTB16 on the weights), then column 1's; the last depth % 4 values of column c sit at
 * group depth / 4, offset 4c. */
static void widen_interleaved(const int8_t *src, int16_t *cols, uint32_t c, uint32_t depth, int32_t off16,
                              int32_t off) {
    const uint32_t d4 = depth & ~3u;
    int16_t *dst = cols + 4u * c;
    for (uint32_t i = 0; i < d4; i += 4, dst += 8) {
        const int32_t v = mf_ld32(src + i);
        mf_st32(dst, mf_sxtab16(off16, v));
        mf_st32(dst + 2, mf_sxtab16_ror8(off16, v));
    }
    for (uint32_t i = d4; i < depth; i++) dst[i - d4] = (int16_t)(src[i] + off);
}

/* One channel's output stage, read once for the pixels that share it. */
typedef struct {
    int32_t bias, mult, shift;
} channel_rq;

static inline channel_rq channel_rq_of(const mf_channel_requant *q, uint32_t oc) {
    const uint32_t k = q->per_channel ? oc : 0;
    channel_rq c = {q->bias ? q->bias[oc] : 0, q->mult[k], q->shift[k]};
    return c;
}

/* mf_channel_requant_s8 with the channel's parameters read beforehand: the same bits. */
static inline int8_t channel_rq_s8(const mf_channel_requant *q, const channel_rq *c, int32_t acc) {
    const int32_t v = mf_requantize_inline(mf_add_wrap(acc, c->bias), c->mult, c->shift);
    return mf_clamp_s8(mf_add_wrap(v, q->out_off), q->lo, q->hi);
}

/* Outputs of `rows` filters (weights w, row after row of `depth`) for a pair of interleaved widened
 * patches (word-aligned); out1 NULL: the second column repeats the first, its outputs unwritten. */
static void mat_mult_2cols(const int16_t *cols, const int8_t *w, uint32_t rows, uint32_t depth,
                           const mf_channel_requant *rq, uint32_t oc0, int8_t *out0, int8_t *out1) {
    const uint32_t d4 = depth & ~3u;
    const int16_t *tail = cols + 2u * d4; /* column 0's last values; column 1's at tail + 4 */
    uint32_t r = 0;
    for (; r + 2 <= rows; r += 2) {
        const int8_t *wa = w + (size_t)r * depth + d4, *wb = wa + depth; /* ends of the rows' groups */
        const int32_t *x = (const int32_t *)(const void *)cols;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0; /* a<filter><column> */
        /* a negative index running up to 0: the loop's add sets the flags, no end pointer to hold */
        for (int32_t i = -(int32_t)d4; i != 0; i += 4) {
            const int32_t va = mf_ld32(wa + i), vb = mf_ld32(wb + i);
            const int32_t wa02 = mf_sxtb16(va), wa13 = mf_sxtb16_ror8(va);
            const int32_t wb02 = mf_sxtb16(vb), wb13 = mf_sxtb16_ror8(vb);
            const int32_t x0a = x[0], x0b = x[1], x1a = x[2], x1b = x[3];
            x += 4;
            a00 = mf_smlad(wa02, x0a, a00);
            a10 = mf_smlad(wb02, x0a, a10);
            a00 = mf_smlad(wa13, x0b, a00);
            a10 = mf_smlad(wb13, x0b, a10);
            a01 = mf_smlad(wa02, x1a, a01);
            a11 = mf_smlad(wb02, x1a, a11);
            a01 = mf_smlad(wa13, x1b, a01);
            a11 = mf_smlad(wb13, x1b, a11);
        }
        for (uint32_t t = 0; t < depth - d4; t++) {
            const int32_t pa = wa[t], pb = wb[t];
            a00 += tail[t] * pa;
            a10 += tail[t] * pb;
            a01 += tail[4 + t] * pa;
            a11 += tail[4 + t] * pb;
        }
        const channel_rq ca = channel_rq_of(rq, oc0 + r), cb = channel_rq_of(rq, oc0 + r + 1);
        out0[r] = channel_rq_s8(rq, &ca, a00);
        out0[r + 1] = channel_rq_s8(rq, &cb, a10);
        if (out1 != NULL) {
            out1[r] = channel_rq_s8(rq, &ca, a01);
            out1[r + 1] = channel_rq_s8(rq, &cb, a11);
        }
    }
    if (r < rows) {
        const int8_t *wa = w + (size_t)r * depth;
        const int32_t *x = (const int32_t *)(const void *)cols;
        int32_t a0 = 0, a1 = 0;
        for (uint32_t i = d4 >> 2; i > 0; i--) {
            const int32_t va = mf_ld32(wa);
            wa += 4;
            const int32_t wa02 = mf_sxtb16(va), wa13 = mf_sxtb16_ror8(va);
            a0 = mf_smlad(wa02, x[0], a0);
            a0 = mf_smlad(wa13, x[1], a0);
            a1 = mf_smlad(wa02, x[2], a1);
            a1 = mf_smlad(wa13, x[3], a1);
            x += 4;
        }
        for (uint32_t t = 0; t < depth - d4; t++) {
            a0 += tail[t] * wa[t];
            a1 += tail[4 + t] * wa[t];
        }
        out0[r] = mf_channel_requant_s8_inline(rq, oc0 + r, a0);
        if (out1 != NULL) out1[r] = mf_channel_requant_s8_inline(rq, oc0 + r, a1);
    }
}

#else /* MVE */
#define NCOLS 4u

/* sums[i] = sum(cols[i][k] * w[k]) for the four columns, sums[4] = sum(w[k]), k < depth: full
 * blocks of 16 lanes unpredicated, then one predicated tail. */
static inline void dot4(const int8_t *w, const int8_t *p0, const int8_t *p1, const int8_t *p2, const int8_t *p3,
                        uint32_t depth, int32_t sums[5]) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, ws = 0;
    for (uint32_t i = depth >> 4; i > 0; i--) {
        const int8x16_t wv = vldrbq_s8(w);
        w += 16;
        ws = vaddvaq_s8(ws, wv);
        a0 = vmladavaq_s8(a0, vldrbq_s8(p0), wv);
        p0 += 16;
        a1 = vmladavaq_s8(a1, vldrbq_s8(p1), wv);
        p1 += 16;
        a2 = vmladavaq_s8(a2, vldrbq_s8(p2), wv);
        p2 += 16;
        a3 = vmladavaq_s8(a3, vldrbq_s8(p3), wv);
        p3 += 16;
    }
    if (depth & 15u) {
        const mve_pred16_t p = vctp8q(depth & 15u);
        const int8x16_t wv = vldrbq_z_s8(w, p);
        ws = vaddvaq_s8(ws, wv);
        a0 = vmladavaq_s8(a0, vldrbq_z_s8(p0, p), wv);
        a1 = vmladavaq_s8(a1, vldrbq_z_s8(p1, p), wv);
        a2 = vmladavaq_s8(a2, vldrbq_z_s8(p2, p), wv);
        a3 = vmladavaq_s8(a3, vldrbq_z_s8(p3, p), wv);
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
    sums[4] = ws;
}

/* Outputs of `rows` filters for four int8 columns (patches); cols[i] for i >= n_cols repeat a
 * column and are not written. sum((x + off) * w) = sum(x * w) + off * sum(w). The four outputs of
 * a filter share its requantization: one vector requantize, one scatter store (the outputs of
 * consecutive pixels lie pixel_offsets apart). */
static void mat_mult_4cols(const int8_t *const cols[4], uint32_t n_cols, const int8_t *w, uint32_t rows,
                           uint32_t depth, int32_t in_off, const mf_channel_requant *rq, int vector_rq,
                           uint32_t oc0, int8_t *out, const uint32x4_t pixel_offsets) {
    const mve_pred16_t store = vctp32q(n_cols);
    for (uint32_t r = 0; r < rows; r++) {
        int32_t sums[5];
        dot4(w + (size_t)r * depth, cols[0], cols[1], cols[2], cols[3], depth, sums);
        const int32_t corr = sums[4] * in_off; /* |sum(w)| <= 2^23, |in_off| <= 128: no overflow */
        const uint32_t oc = oc0 + r;
        if (vector_rq) {
            int32x4_t acc = vdupq_n_s32(0);
            acc = vsetq_lane_s32(sums[0], acc, 0);
            acc = vsetq_lane_s32(sums[1], acc, 1);
            acc = vsetq_lane_s32(sums[2], acc, 2);
            acc = vsetq_lane_s32(sums[3], acc, 3);
            acc = vaddq_s32(acc, vdupq_n_s32(rq->bias ? mf_add_wrap(corr, rq->bias[oc]) : corr));
            const uint32_t k = rq->per_channel ? oc : 0;
            int32x4_t v = mf_requantize_x4(acc, vdupq_n_s32(rq->mult[k]), vdupq_n_s32(rq->shift[k]));
            v = vaddq_s32(v, vdupq_n_s32(rq->out_off));
            v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(rq->lo)), vdupq_n_s32(rq->hi));
            vstrbq_scatter_offset_p_s32(out + r, pixel_offsets, v, store);
        } else {
            for (uint32_t i = 0; i < n_cols; i++) {
                out[vgetq_lane_u32(pixel_offsets, 0) + i * (vgetq_lane_u32(pixel_offsets, 1)) + r] =
                    mf_channel_requant_s8_inline(rq, oc, mf_add_wrap(sums[i], corr));
            }
        }
    }
}
#endif

/* The op declares the fast path's scratch, and every index of its geometry fits an int32 (limits far
 * beyond any Cortex-M memory: the portable path takes whatever is left). */
static int fast_path_fits(const mf_call *c) {
    mf_tensor x, w, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &w);
    mf_call_output(c, 0, &o);
    if (c->scratch_bytes < fast_scratch_bytes(w.shape[1] * w.shape[2] * w.shape[3])) return 0;
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    const uint32_t lim = 1u << 14;
    for (int a = 0; a < 2; a++) {
        if ((uint32_t)st[a] >= lim || (uint32_t)pd[a] >= lim || (uint32_t)dl[a] >= lim) return 0;
        if (x.shape[1 + a] >= lim || o.shape[1 + a] >= lim || w.shape[1 + a] >= lim) return 0;
    }
    return 1;
}

static mf_status run_fast(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    conv_geom g;
    mf_attr_conv_window(c, A_STRIDE, g.st, g.pd, g.dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    g.h = (int32_t)x.shape[1];
    g.w = (int32_t)x.shape[2];
    g.ch = x.shape[3];
    g.wc = w.shape[3];
    g.kh = w.shape[1];
    g.kw = w.shape[2];
    g.zero_point = (int8_t)(-in_off);
    g.contiguous_rows = g.dl[1] == 1 && g.wc == g.ch;
    const uint32_t oc_n = w.shape[0], groups = g.ch / g.wc, opg = oc_n / groups;
    const uint32_t depth = g.kh * g.kw * g.wc, ow = o.shape[2], pixels = o.shape[1] * ow;
    /* 1x1, no padding: the patch is the input pixel */
    const int pointwise = g.kh == 1 && g.kw == 1 && g.pd[0] == 0 && g.pd[1] == 0 &&
                          ((int32_t)o.shape[1] - 1) * g.st[0] < g.h && ((int32_t)ow - 1) * g.st[1] < g.w;
    const int8_t *wd = (const int8_t *)w.data;
    int8_t *scratch = (int8_t *)c->scratch;
#if defined(MF_USE_DSP)
    const int32_t off16 = mf_pack_off16(in_off);
#else
    const int vector_rq = mf_requant_vector_ok(&rq, oc_n);
    const uint32x4_t pixel_offsets = vmulq_n_u32(vidupq_n_u32(0, 1), oc_n);
#endif
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g.ch;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * oc_n;
        for (uint32_t grp = 0; grp < groups; grp++) {
            g.x = image + (size_t)grp * g.wc;
            const int8_t *wg = wd + (size_t)grp * opg * depth;
            for (uint32_t p0 = 0; p0 < pixels; p0 += NCOLS) {
                const uint32_t n_cols = pixels - p0 < NCOLS ? pixels - p0 : NCOLS;
#if defined(MF_USE_DSP)
                int16_t *cols = (int16_t *)(void *)scratch;
                int8_t *staging = scratch + 4u * depth4(depth);
                for (uint32_t i = 0; i < 2; i++) {
                    const uint32_t p = p0 + (i < n_cols ? i : 0);
                    const int32_t oy = (int32_t)(p / ow), ox = (int32_t)(p % ow);
                    const int8_t *patch = staging;
                    if (pointwise) {
                        patch = g.x + ((size_t)(oy * g.st[0]) * (size_t)g.w + (size_t)(ox * g.st[1])) * g.ch;
                    } else {
                        im2col_s8(&g, oy, ox, staging);
                    }
                    widen_interleaved(patch, cols, i, depth, off16, in_off);
                }
                int8_t *out0 = out_image + (size_t)p0 * oc_n + grp * opg;
                mat_mult_2cols(cols, wg, opg, depth, &rq, grp * opg, out0, n_cols > 1 ? out0 + oc_n : NULL);
#else
                const int8_t *cols[4];
                for (uint32_t i = 0; i < NCOLS; i++) {
                    if (i >= n_cols) {
                        cols[i] = cols[0];
                        continue;
                    }
                    const uint32_t p = p0 + i;
                    const int32_t oy = (int32_t)(p / ow), ox = (int32_t)(p % ow);
                    if (pointwise) {
                        cols[i] = g.x + ((size_t)(oy * g.st[0]) * (size_t)g.w + (size_t)(ox * g.st[1])) * g.ch;
                    } else {
                        int8_t *col = scratch + (size_t)i * depth;
                        im2col_s8(&g, oy, ox, col);
                        cols[i] = col;
                    }
                }
                mat_mult_4cols(cols, n_cols, wg, opg, depth, in_off, &rq, vector_rq, grp * opg,
                               out_image + (size_t)p0 * oc_n + grp * opg, pixel_offsets);
#endif
            }
        }
    }
    return MF_OK;
}
#endif /* MF_USE_DSP || MF_USE_MVE */

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
#if defined(MF_CONV_FAST)
    if (fast_path_fits(c)) return run_fast(c);
#endif
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], wc = w.shape[3], oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    const uint32_t oc_per_group = oc_n / (ch / wc);
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t y0 = (int64_t)oy * st[0] - pd[0], x0 = (int64_t)ox * st[1] - pd[1];
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    int32_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const int8_t *xp = xd + (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch +
                                               (size_t)(oc / oc_per_group) * wc;
                            const int8_t *wp = wd + (((size_t)oc * kh + ky) * kw + kx) * wc;
                            acc += mf_dot_s8(xp, wp, wc, in_off);
                        }
                    }
                    *out++ = mf_channel_requant_s8(&rq, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_conv2d_s8 = {1, "conv2d_s8", 4, 5, 1u << 2, "iiIIIii", check, run};
