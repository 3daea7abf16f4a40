/*
 * depthwise_conv2d_s8: int8 depthwise convolution, bit-exact with CMSIS-NN arm_depthwise_conv_s8
 * (any depth multiplier M; output channel oc = ic * M + m reads input channel ic only).
 * Weights 1HW(C*M); taps outside the input are skipped.
 *
 * Three paths, side by side, with the same bytes out:
 * - portable C (run_portable): the readable statement of the math; every core and the host, and
 *   the optimized paths' fallback (depth multiplier > 1);
 * - DSP (cortex-m4/m7/m33): four channels per word, SXTAB16 adds the input offset to two byte
 *   lanes at once, SMLABB/SMLATT accumulate per channel; taps outside the input are skipped by
 *   loop bounds; the 3x3 window fully inside the input is unrolled;
 * - MVE (cortex-m55): eight channels at a time in int16 lanes (a vector of 16 int8 channels would
 *   need four int32 accumulators plus operands: more than the eight Q registers), products by
 *   VMULLB/VMULLT into even/odd int32 lanes; 3x3 windows start from bias + offset * sum(w) (so x
 *   needs no offset), taps outside the input reading the value -offset (x + offset = 0), rows
 *   inside the input unrolled without bounds; other kernels loop over their inside taps from the
 *   bias, adding the offset to x; a vector requantization (VQRDMULH + rounding shift, CMSIS-NN's
 *   arm_requantize_mve) and scatter stores; the channel tail (ch % 8) is predicated. A multiplier
 *   of INT32_MIN (where VQRDMULH saturates and the C code wraps) takes the portable path.
 */
#include "mf_simd.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_MULT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) { return mf_check_depthwise_conv2d(c, MF_INT8); }

/* The taps k in [*k0, *k1) (0 <= k < n) whose position start + k * dil lies in [0, size). */
static void tap_range(int64_t start, int32_t dil, uint32_t n, int32_t size, uint32_t *k0, uint32_t *k1) {
    const int64_t lo = start < 0 ? (-start + dil - 1) / dil : 0;
    const int64_t hi = start >= size ? 0 : (size - 1 - start) / dil + 1;
    *k0 = (uint32_t)(lo < (int64_t)n ? lo : (int64_t)n);
    *k1 = (uint32_t)(hi < (int64_t)n ? (hi > lo ? hi : lo) : (int64_t)n);
    if (*k1 < *k0) *k1 = *k0;
}

static mf_status run_portable(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    const uint32_t dm = (uint32_t)mf_attr_int(c, A_MULT);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], oc_n = w.shape[3], kh = w.shape[1], kw = w.shape[2];
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            const int64_t y0 = (int64_t)oy * st[0] - pd[0];
            uint32_t ky0, ky1; /* the kernel rows inside the input */
            tap_range(y0, dl[0], kh, h, &ky0, &ky1);
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t x0 = (int64_t)ox * st[1] - pd[1];
                uint32_t kx0, kx1; /* the kernel columns inside the input */
                tap_range(x0, dl[1], kw, wi, &kx0, &kx1);
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    const uint32_t ic = oc / dm;
                    int32_t acc = 0;
                    for (uint32_t ky = ky0; ky < ky1; ky++) {
                        const size_t iy = (size_t)(y0 + (int64_t)ky * dl[0]);
                        for (uint32_t kx = kx0; kx < kx1; kx++) {
                            const size_t ix = (size_t)(x0 + (int64_t)kx * dl[1]);
                            const size_t xi = (((size_t)n * (size_t)h + iy) * (size_t)wi + ix) * ch + ic;
                            acc += ((int32_t)xd[xi] + in_off) * wd[((size_t)ky * kw + kx) * oc_n + oc];
                        }
                    }
                    *out++ = mf_channel_requant_s8(&rq, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
/* The geometry of a depth-multiplier-1 depthwise convolution, read once per run. */
typedef struct {
    const int8_t *x, *w;
    int8_t *out;
    int32_t batch, h, wi, ch, kh, kw, oh, ow, st[2], pd[2], dl[2], in_off;
    mf_channel_requant rq;
} dw_geom;

static void dw_geom_read(const mf_call *c, dw_geom *g) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    mf_attr_conv_window(c, A_STRIDE, g->st, g->pd, g->dl);
    mf_channel_requant_init(&g->rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    g->x = (const int8_t *)x.data;
    g->w = (const int8_t *)w.data;
    g->out = (int8_t *)o.data;
    g->batch = (int32_t)x.shape[0];
    g->h = (int32_t)x.shape[1];
    g->wi = (int32_t)x.shape[2];
    g->ch = (int32_t)x.shape[3];
    g->kh = (int32_t)w.shape[1];
    g->kw = (int32_t)w.shape[2];
    g->oh = (int32_t)o.shape[1];
    g->ow = (int32_t)o.shape[2];
    g->in_off = mf_attr_int(c, A_IN_OFF);
}

/* Window positions fit int32 with room to spare (the fast paths' arithmetic); absurd strides,
 * paddings or dilations take the portable path. */
static int dw_geom_fits(const dw_geom *g) {
    const int64_t lim = (int64_t)1 << 28;
    const int64_t y = (int64_t)(g->oh - 1) * g->st[0] + g->pd[0] + (int64_t)(g->kh - 1) * g->dl[0] + g->h;
    const int64_t x = (int64_t)(g->ow - 1) * g->st[1] + g->pd[1] + (int64_t)(g->kw - 1) * g->dl[1] + g->wi;
    return y < lim && x < lim && (int64_t)g->h * g->wi * g->ch < lim;
}

/* First and one-past-last tap index k (0 <= k < n) with 0 <= start + k * dil < size. */
static inline void dw_tap_range(int32_t start, int32_t dil, int32_t n, int32_t size, int32_t *k0, int32_t *k1) {
    int32_t lo = 0, hi = n;
    if (start < 0) lo = (-start + dil - 1) / dil;
    if (start + (n - 1) * dil >= size) hi = (size - 1 - start) / dil + 1;
    if (start >= size) hi = 0;
    *k0 = lo;
    *k1 = hi > lo ? hi : lo;
}
#endif

#if defined(MF_USE_MVE)

/* Per 16-channel group: the accumulators' start (bias + offset * sum(w)) and requantization
 * constants, lanes in the order of the accumulators: even channels 0..6, odd 1..7, even 8..14,
 * odd 9..15. */
typedef struct {
    int32x4_t base[4], bias[4], mult[4], left[4], nright[4];
} dw_mve_params;

typedef struct {
    int32x4_t e0, o0, e1, o1;
} dw_mve_acc;

/* An empty asm after each tap that takes the accumulators: GCC 12's scheduler would otherwise hoist
 * every tap's loads to the loop top and spill them (the M55 has eight Q registers). No instruction. */
#define DW_TAP_BARRIER(a) __asm__ volatile("" : "+w"((a)->e0), "+w"((a)->o0) : : "memory")

static const uint32_t dw_lane_even[4] = {0, 2, 4, 6};

/* Lanes of accumulator j (0..3) whose channel c0 + ch(j, lane) < n_ch. */
static inline mve_pred16_t dw_lane_pred(uint32_t j, int32_t n) {
    const uint32x4_t chan = vaddq_n_u32(vld1q_u32(dw_lane_even), (j & 1u) + 8u * (j >> 1));
    return vcmphiq_u32(vdupq_n_u32((uint32_t)n), chan);
}

static void dw_mve_group_params(const dw_geom *g, int32_t c0, int32_t n, dw_mve_params *p) {
    const mve_pred16_t p0 = vctp16q((uint32_t)n), p1 = vctp16q((uint32_t)(n > 8 ? n - 8 : 0));
    int32x4_t s[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
    const int32_t taps = g->kh * g->kw;
    const int8_t *wp = g->w; /* already at channel c0 */
    for (int32_t t = 0; t < taps; t++, wp += g->ch) {
        const int16x8_t lo = vldrbq_z_s16(wp, p0), hi = vldrbq_z_s16(wp + 8, p1);
        s[0] = vaddq_s32(s[0], vmovlbq_s16(lo));
        s[1] = vaddq_s32(s[1], vmovltq_s16(lo));
        s[2] = vaddq_s32(s[2], vmovlbq_s16(hi));
        s[3] = vaddq_s32(s[3], vmovltq_s16(hi));
    }
    const mf_channel_requant *q = &g->rq;
    for (uint32_t j = 0; j < 4; j++) {
        const mve_pred16_t pj = dw_lane_pred(j, n);
        const uint32x4_t chan = vaddq_n_u32(vld1q_u32(dw_lane_even), (j & 1u) + 8u * (j >> 1));
        /* wrapping int32: where the bias enters the sum does not matter */
        const int32x4_t bias = q->bias ? vldrwq_gather_shifted_offset_z_s32(q->bias + c0, chan, pj) : vdupq_n_s32(0);
        p->bias[j] = bias;
        p->base[j] = vaddq_s32(bias, vmulq_n_s32(s[j], g->in_off));
        int32x4_t m, sh;
        if (q->per_channel) {
            m = vldrwq_gather_shifted_offset_z_s32(q->mult + c0, chan, pj);
            sh = vldrwq_gather_shifted_offset_z_s32(q->shift + c0, chan, pj);
        } else {
            m = vdupq_n_s32(q->mult[0]);
            sh = vdupq_n_s32(q->shift[0]);
        }
        p->mult[j] = m;
        p->left[j] = vmaxq_s32(sh, vdupq_n_s32(0));
        p->nright[j] = vminq_s32(sh, vdupq_n_s32(0));
    }
}

/* arm_nn_requantize on four lanes (CMSIS-NN arm_requantize_mve): wrapping left shift, VQRDMULH
 * (= (x * m + 2^30) >> 31 but for INT32_MIN * INT32_MIN, excluded by the caller), then a divide by
 * 2^right rounding half away from zero: -1 for negative lanes with right > 0, then VRSHL. */
static inline int32x4_t dw_mve_requant(int32x4_t acc, int32x4_t mult, int32x4_t left, int32x4_t nright) {
    const int32x4_t v = vqrdmulhq_s32(vshlq_s32(acc, left), mult);
    const int32x4_t fixup = vshrq_n_s32(vandq_s32(v, nright), 31);
    return vrshlq_s32(vqaddq_s32(v, fixup), nright);
}

/* acc += x * w for `halves` x 8 channels (x: int16 lanes). */
static inline __attribute__((always_inline)) void dw_mve_mac(dw_mve_acc *a, int16x8_t x0, int16x8_t x1,
                                                             const int8_t *wp, int halves, int full,
                                                             mve_pred16_t p0, mve_pred16_t p1) {
    const int16x8_t w0 = full ? vldrbq_s16(wp) : vldrbq_z_s16(wp, p0);
    a->e0 = vaddq_s32(a->e0, vmullbq_int_s16(x0, w0));
    a->o0 = vaddq_s32(a->o0, vmulltq_int_s16(x0, w0));
    if (halves == 2) {
        const int16x8_t w1 = full ? vldrbq_s16(wp + 8) : vldrbq_z_s16(wp + 8, p1);
        a->e1 = vaddq_s32(a->e1, vmullbq_int_s16(x1, w1));
        a->o1 = vaddq_s32(a->o1, vmulltq_int_s16(x1, w1));
    }
    DW_TAP_BARRIER(a);
}

/* One tap inside the input: x read at xp (channels 0..7) and xp + 8. */
static inline __attribute__((always_inline)) void dw_mve_tap(dw_mve_acc *a, const int8_t *xp, const int8_t *wp,
                                                             int halves, int full, mve_pred16_t p0,
                                                             mve_pred16_t p1) {
    const int16x8_t x0 = full ? vldrbq_s16(xp) : vldrbq_z_s16(xp, p0);
    const int16x8_t x1 = halves == 2 ? (full ? vldrbq_s16(xp + 8) : vldrbq_z_s16(xp + 8, p1)) : x0;
    dw_mve_mac(a, x0, x1, wp, halves, full, p0, p1);
}

static inline __attribute__((always_inline)) void dw_mve_store(int32x4_t acc, const dw_mve_params *p, uint32_t j,
                                                               const dw_geom *g, int8_t *out, int full,
                                                               int32_t n) {
    int32x4_t v = dw_mve_requant(acc, p->mult[j], p->left[j], p->nright[j]);
    v = vaddq_n_s32(v, g->rq.out_off);
    v = vmaxq_s32(v, vdupq_n_s32(g->rq.lo));
    v = vminq_s32(v, vdupq_n_s32(g->rq.hi));
    const uint32x4_t chan = vaddq_n_u32(vld1q_u32(dw_lane_even), (j & 1u) + 8u * (j >> 1));
    if (full) {
        vstrbq_scatter_offset_s32(out, chan, v);
    } else {
        vstrbq_scatter_offset_p_s32(out, chan, v, dw_lane_pred(j, n));
    }
}

/* The output stage of one pixel's 16 (or 8) channels. */
static inline __attribute__((always_inline)) void dw_mve_store_all(const dw_mve_acc *a, const dw_mve_params *p,
                                                                   const dw_geom *g, int8_t *out, int halves,
                                                                   int full, int32_t n) {
    dw_mve_store(a->e0, p, 0, g, out, full, n);
    dw_mve_store(a->o0, p, 1, g, out, full, n);
    if (halves == 2) {
        dw_mve_store(a->e1, p, 2, g, out, full, n);
        dw_mve_store(a->o1, p, 3, g, out, full, n);
    }
}

/* One output pixel whose window may leave the input: the taps [ky0, ky1) x [kx0, kx1) inside it,
 * each x + offset in int16 lanes, from the bias. */
static inline __attribute__((always_inline)) void dw_mve_pixel(const dw_geom *g, const dw_mve_params *p,
                                                               const int8_t *xb, int8_t *out, int32_t y0,
                                                               int32_t ky0, int32_t ky1, int32_t x0, int halves,
                                                               int full, int32_t n) {
    const mve_pred16_t p0 = vctp16q((uint32_t)n), p1 = vctp16q((uint32_t)(n > 8 ? n - 8 : 0));
    const int32_t C = g->ch, row = g->wi * C, dx = g->dl[1] * C, off = g->in_off;
    int32_t kx0, kx1;
    dw_tap_range(x0, g->dl[1], g->kw, g->wi, &kx0, &kx1);
    dw_mve_acc a = {p->bias[0], p->bias[1], p->bias[2], p->bias[3]};
    for (int32_t ky = ky0; ky < ky1; ky++) {
        const int8_t *xp = xb + (ptrdiff_t)(y0 + ky * g->dl[0]) * row + (ptrdiff_t)(x0 + kx0 * g->dl[1]) * C;
        const int8_t *wp = g->w + (ky * g->kw + kx0) * C;
        for (int32_t kx = kx0; kx < kx1; kx++, wp += C, xp += dx) {
            const int16x8_t x = vaddq_n_s16(full ? vldrbq_s16(xp) : vldrbq_z_s16(xp, p0), (int16_t)off);
            const int16x8_t x8 = halves == 2 ? vaddq_n_s16(full ? vldrbq_s16(xp + 8) : vldrbq_z_s16(xp + 8, p1),
                                                           (int16_t)off) : x;
            dw_mve_mac(&a, x, x8, wp, halves, full, p0, p1);
        }
    }
    dw_mve_store_all(&a, p, g, out, halves, full, n);
}

/* One output pixel of a 3x3 window that leaves the input: taps inside read x, taps outside the
 * value -offset (whose x + offset is 0), all from bias + offset * sum(w); row_ok / col_ok bit k:
 * kernel row / column k is inside. */
static inline __attribute__((always_inline)) void dw_mve_pixel3x3(const dw_geom *g, const dw_mve_params *p,
                                                                  const int8_t *xp, int8_t *out, uint32_t row_ok,
                                                                  uint32_t col_ok, int full, int32_t n) {
    const mve_pred16_t p0 = vctp16q((uint32_t)n);
    const int16x8_t pad = vdupq_n_s16((int16_t)-g->in_off);
    const int32_t C = g->ch, dy = g->dl[0] * g->wi * C, dx = g->dl[1] * C;
    dw_mve_acc a = {p->base[0], p->base[1], p->base[2], p->base[3]};
    const int8_t *wp = g->w;
    for (uint32_t ky = 0; ky < 3; ky++, xp += dy) {
        for (uint32_t kx = 0; kx < 3; kx++, wp += C) {
            if ((row_ok >> ky) & (col_ok >> kx) & 1u) {
                dw_mve_tap(&a, xp + (ptrdiff_t)kx * dx, wp, 1, full, p0, p0);
            } else {
                dw_mve_mac(&a, pad, pad, wp, 1, full, p0, p0);
            }
        }
    }
    dw_mve_store_all(&a, p, g, out, 1, full, n);
}

/* `count` output pixels along a row, 3x3 windows inside the input: no bounds, nine taps unrolled. */
static inline __attribute__((always_inline)) void dw_mve_row3x3(const dw_geom *g, const dw_mve_params *p,
                                                                const int8_t *xp, int8_t *out, int32_t count,
                                                                int halves, int full, int32_t n) {
    const mve_pred16_t p0 = vctp16q((uint32_t)n), p1 = vctp16q((uint32_t)(n > 8 ? n - 8 : 0));
    const int32_t C = g->ch, dy = g->dl[0] * g->wi * C, dx = g->dl[1] * C, step = g->st[1] * C;
    const int8_t *w = g->w;
    for (int32_t i = 0; i < count; i++, xp += step, out += C) {
        dw_mve_acc a = {p->base[0], p->base[1], p->base[2], p->base[3]};
        const int8_t *xr = xp, *wr = w;
        for (int ky = 0; ky < 3; ky++, xr += dy, wr += 3 * C) {
            dw_mve_tap(&a, xr, wr, halves, full, p0, p1);
            dw_mve_tap(&a, xr + dx, wr + C, halves, full, p0, p1);
            dw_mve_tap(&a, xr + 2 * dx, wr + 2 * C, halves, full, p0, p1);
        }
        dw_mve_store_all(&a, p, g, out, halves, full, n);
    }
}

/* All output pixels of channels c0 .. c0 + n - 1 (n <= 16; halves = 2 when n > 8); g->x, g->w and
 * g->out already point at channel c0. Columns [ox_lo, ox_hi) have windows inside the input's width. */
static inline __attribute__((always_inline)) void dw_mve_group(const dw_geom *g, int32_t c0, int32_t n, int halves, int full,
                                                               int32_t ox_lo, int32_t ox_hi) {
    dw_mve_params p;
    dw_mve_group_params(g, c0, n, &p);
    const int32_t C = g->ch, row = g->wi * C;
    const int fast3x3 = g->kh == 3 && g->kw == 3;
    for (int32_t b = 0; b < g->batch; b++) {
        const int8_t *xb = g->x + (size_t)b * (size_t)g->h * (size_t)row;
        int8_t *out = g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C;
        for (int32_t oy = 0; oy < g->oh; oy++, out += g->ow * C) {
            const int32_t y0 = oy * g->st[0] - g->pd[0];
            int32_t ky0, ky1;
            dw_tap_range(y0, g->dl[0], g->kh, g->h, &ky0, &ky1);
            int32_t ox = 0;
            if (fast3x3 && halves == 1) {
                /* every pixel through the 3x3 code: rows_inside rows run their inside columns unrolled */
                uint32_t row_ok = 0;
                for (int32_t ky = 0; ky < 3; ky++) {
                    const int32_t iy = y0 + ky * g->dl[0];
                    row_ok |= (uint32_t)(iy >= 0 && iy < g->h) << ky;
                }
                for (; ox < g->ow; ox++) {
                    if (row_ok == 7u && ox == ox_lo && ox_lo < ox_hi) {
                        const int8_t *xp = xb + (ptrdiff_t)y0 * row + (ptrdiff_t)(ox_lo * g->st[1] - g->pd[1]) * C;
                        dw_mve_row3x3(g, &p, xp, out + ox_lo * C, ox_hi - ox_lo, halves, full, n);
                        ox = ox_hi - 1;
                        continue;
                    }
                    const int32_t x0 = ox * g->st[1] - g->pd[1];
                    uint32_t col_ok = 0;
                    for (int32_t kx = 0; kx < 3; kx++) {
                        const int32_t ix = x0 + kx * g->dl[1];
                        col_ok |= (uint32_t)(ix >= 0 && ix < g->wi) << kx;
                    }
                    /* the window's top-left corner, possibly outside the input: only inside taps are read */
                    const int8_t *xp = xb + (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C;
                    dw_mve_pixel3x3(g, &p, xp, out + ox * C, row_ok, col_ok, full, n);
                }
                continue;
            }
            for (; ox < g->ow; ox++) dw_mve_pixel(g, &p, xb, out + ox * C, y0, ky0, ky1, ox * g->st[1] - g->pd[1], halves, full, n);
        }
    }
}

static mf_status run(const mf_call *c) {
    if (mf_attr_int(c, A_MULT) != 1) return run_portable(c);
    dw_geom g;
    dw_geom_read(c, &g);
    if (!dw_geom_fits(&g)) return run_portable(c);
    const uint32_t n_mult = g.rq.per_channel ? (uint32_t)g.ch : 1u;
    for (uint32_t i = 0; i < n_mult; i++) {
        if (g.rq.mult[i] == INT32_MIN) return run_portable(c);
    }
    /* columns whose windows lie inside the input's width */
    const int32_t ox_lo = (g.pd[1] + g.st[1] - 1) / g.st[1];
    const int32_t span = g.wi - 1 - (g.kw - 1) * g.dl[1] + g.pd[1];
    int32_t ox_hi = span < 0 ? 0 : span / g.st[1] + 1;
    if (ox_hi > g.ow) ox_hi = g.ow;
    const int8_t *x = g.x, *w = g.w;
    int8_t *out = g.out;
    /* eight channels at a time: two accumulators (even and odd channels), the tap's x, w and
     * products stay in the eight Q registers; the last ch % 8 channels predicated */
    int32_t c0 = 0;
    for (; c0 + 8 <= g.ch; c0 += 8) {
        g.x = x + c0, g.w = w + c0, g.out = out + c0;
        dw_mve_group(&g, c0, 8, 1, 1, ox_lo, ox_hi);
    }
    if (c0 < g.ch) {
        g.x = x + c0, g.w = w + c0, g.out = out + c0;
        dw_mve_group(&g, c0, g.ch - c0, 1, 0, ox_lo, ox_hi);
    }
    return MF_OK;
}

#elif defined(MF_USE_DSP)

/* Channels c0 .. c0 + 3 of one output pixel, taps [ky0, ky1) x [kx0, kx1): four accumulators,
 * bytes 0/2 and 1/3 of each word as (x + offset) and w halfword pairs. */
static inline __attribute__((always_inline)) void dw_dsp_tap4(int32_t *a, const int8_t *xp, const int8_t *wp,
                                                              int32_t off16) {
    const int32_t xw = mf_ld32(xp), ww = mf_ld32(wp);
    const int32_t x02 = mf_sxtab16(off16, xw), x13 = mf_sxtab16_ror8(off16, xw);
    const int32_t w02 = mf_sxtb16(ww), w13 = mf_sxtb16_ror8(ww);
    a[0] = __smlabb(x02, w02, a[0]);
    a[2] = __smlatt(x02, w02, a[2]);
    a[1] = __smlabb(x13, w13, a[1]);
    a[3] = __smlatt(x13, w13, a[3]);
}

/* mf_requantize with the divide by 2^e (e = -shift > 0) as the MVE path does it: x - (x < 0),
 * saturating (QADD), then rounded half up: (x >> e) + bit e - 1 of x -- the same bits as the C
 * remainder/threshold form, in fewer instructions. */
static inline int32_t dw_dsp_requant(int32_t acc, int32_t mult, int32_t shift) {
    if (shift > 0) acc = mf_wrap32((uint32_t)acc << shift);
    const int64_t prod = (int64_t)acc * mult + (1ll << 30);
    int32_t v = mf_wrap32((uint32_t)(uint64_t)(prod >> 31));
    if (shift < 0) {
        v = __qadd(v, v >> 31);
        v = (v >> -shift) + ((v >> (-shift - 1)) & 1);
    }
    return v;
}

static inline int8_t dw_dsp_out(const dw_geom *g, int32_t oc, int32_t acc) {
    const mf_channel_requant *q = &g->rq;
    const uint32_t k = q->per_channel ? (uint32_t)oc : 0u;
    return mf_clamp_s8(mf_add_wrap(dw_dsp_requant(acc, q->mult[k], q->shift[k]), q->out_off), q->lo, q->hi);
}

/* dw_dsp_tap4 with the weights' halfword pairs already sign-extended. */
static inline __attribute__((always_inline)) void dw_dsp_tap4w(int32_t *a, const int8_t *xp, int32_t w02, int32_t w13,
                                                               int32_t off16) {
    const int32_t xw = mf_ld32(xp);
    const int32_t x02 = mf_sxtab16(off16, xw), x13 = mf_sxtab16_ror8(off16, xw);
    a[0] = __smlabb(x02, w02, a[0]);
    a[2] = __smlatt(x02, w02, a[2]);
    a[1] = __smlabb(x13, w13, a[1]);
    a[3] = __smlatt(x13, w13, a[3]);
}

/* 3x3 windows, channel groups of four outer, pixels inner: the group's nine weight words,
 * sign-extended once into 18 halfword pairs, and the nine tap offsets sit in small tables (one load
 * each, no address arithmetic per pixel). Channels [0, ch & ~3). */
static void dw_dsp_3x3_groups(const dw_geom *g) {
    const int32_t C = g->ch, row = g->wi * C, off16 = mf_pack_off16(g->in_off);
    int32_t toff[9];
    for (int32_t t = 0; t < 9; t++) toff[t] = (t / 3) * g->dl[0] * row + (t % 3) * g->dl[1] * C;
    for (int32_t oc = 0; oc + 4 <= C; oc += 4) {
        int32_t wv[18];
        for (int32_t t = 0; t < 9; t++) {
            const int32_t ww = mf_ld32(g->w + t * C + oc);
            wv[2 * t] = mf_sxtb16(ww);
            wv[2 * t + 1] = mf_sxtb16_ror8(ww);
        }
        const int32_t *bias = g->rq.bias;
        const int32_t b0 = bias ? bias[oc] : 0, b1 = bias ? bias[oc + 1] : 0;
        const int32_t b2 = bias ? bias[oc + 2] : 0, b3 = bias ? bias[oc + 3] : 0;
        for (int32_t b = 0; b < g->batch; b++) {
            const int8_t *xb = g->x + (size_t)b * (size_t)g->h * (size_t)row + oc;
            int8_t *out = g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C + oc;
            for (int32_t oy = 0; oy < g->oh; oy++) {
                const int32_t y0 = oy * g->st[0] - g->pd[0];
                int32_t ky0, ky1;
                dw_tap_range(y0, g->dl[0], 3, g->h, &ky0, &ky1);
                for (int32_t ox = 0; ox < g->ow; ox++, out += C) {
                    const int32_t x0 = ox * g->st[1] - g->pd[1];
                    int32_t kx0, kx1;
                    dw_tap_range(x0, g->dl[1], 3, g->wi, &kx0, &kx1);
                    const int8_t *xpix = xb + (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C;
                    int32_t a[4] = {b0, b1, b2, b3};
                    if (ky0 == 0 && ky1 == 3 && kx0 == 0 && kx1 == 3) {
                        for (int32_t t = 0; t < 9; t++) dw_dsp_tap4w(a, xpix + toff[t], wv[2 * t], wv[2 * t + 1], off16);
                    } else {
                        for (int32_t ky = ky0; ky < ky1; ky++) {
                            for (int32_t kx = kx0; kx < kx1; kx++) {
                                const int32_t t = ky * 3 + kx;
                                dw_dsp_tap4w(a, xpix + toff[t], wv[2 * t], wv[2 * t + 1], off16);
                            }
                        }
                    }
                    out[0] = dw_dsp_out(g, oc, a[0]);
                    out[1] = dw_dsp_out(g, oc + 1, a[1]);
                    out[2] = dw_dsp_out(g, oc + 2, a[2]);
                    out[3] = dw_dsp_out(g, oc + 3, a[3]);
                }
            }
        }
    }
}

static mf_status run(const mf_call *c) {
    if (mf_attr_int(c, A_MULT) != 1) return run_portable(c);
    dw_geom g;
    dw_geom_read(c, &g);
    if (!dw_geom_fits(&g)) return run_portable(c);
    const int32_t C = g.ch, row = g.wi * C, off16 = mf_pack_off16(g.in_off);
    const int32_t dy = g.dl[0] * row, dx = g.dl[1] * C;
    const int fast3x3 = g.kh == 3 && g.kw == 3;
    const int32_t *bias = g.rq.bias;
    int32_t oc_first = 0; /* channels before it are done */
    if (fast3x3) {
        dw_dsp_3x3_groups(&g);
        oc_first = C & ~3;
        if (oc_first == C) return MF_OK;
    }
    for (int32_t b = 0; b < g.batch; b++) {
        const int8_t *xb = g.x + (size_t)b * (size_t)g.h * (size_t)row;
        int8_t *out = g.out + (size_t)b * (size_t)g.oh * (size_t)g.ow * (size_t)C;
        for (int32_t oy = 0; oy < g.oh; oy++) {
            const int32_t y0 = oy * g.st[0] - g.pd[0];
            int32_t ky0, ky1;
            dw_tap_range(y0, g.dl[0], g.kh, g.h, &ky0, &ky1);
            for (int32_t ox = 0; ox < g.ow; ox++, out += C) {
                const int32_t x0 = ox * g.st[1] - g.pd[1];
                int32_t kx0, kx1;
                dw_tap_range(x0, g.dl[1], g.kw, g.wi, &kx0, &kx1);
                const int8_t *xpix = xb + (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C;
                const int inside3x3 = fast3x3 && ky0 == 0 && ky1 == 3 && kx0 == 0 && kx1 == 3;
                int32_t oc = oc_first;
                for (; oc + 4 <= C; oc += 4) {
                    int32_t a[4] = {0, 0, 0, 0};
                    if (bias) {
                        a[0] = bias[oc];
                        a[1] = bias[oc + 1];
                        a[2] = bias[oc + 2];
                        a[3] = bias[oc + 3];
                    }
                    if (inside3x3) {
                        const int8_t *xp = xpix + oc, *wp = g.w + oc;
                        dw_dsp_tap4(a, xp, wp, off16);
                        dw_dsp_tap4(a, xp + dx, wp + C, off16);
                        dw_dsp_tap4(a, xp + 2 * dx, wp + 2 * C, off16);
                        xp += dy;
                        wp += 3 * C;
                        dw_dsp_tap4(a, xp, wp, off16);
                        dw_dsp_tap4(a, xp + dx, wp + C, off16);
                        dw_dsp_tap4(a, xp + 2 * dx, wp + 2 * C, off16);
                        xp += dy;
                        wp += 3 * C;
                        dw_dsp_tap4(a, xp, wp, off16);
                        dw_dsp_tap4(a, xp + dx, wp + C, off16);
                        dw_dsp_tap4(a, xp + 2 * dx, wp + 2 * C, off16);
                    } else {
                        for (int32_t ky = ky0; ky < ky1; ky++) {
                            const int8_t *xp = xpix + (ptrdiff_t)ky * dy + (ptrdiff_t)kx0 * dx + oc;
                            const int8_t *wp = g.w + (ky * g.kw + kx0) * C + oc;
                            for (int32_t kx = kx0; kx < kx1; kx++, xp += dx, wp += C) dw_dsp_tap4(a, xp, wp, off16);
                        }
                    }
                    out[oc] = dw_dsp_out(&g, oc, a[0]);
                    out[oc + 1] = dw_dsp_out(&g, oc + 1, a[1]);
                    out[oc + 2] = dw_dsp_out(&g, oc + 2, a[2]);
                    out[oc + 3] = dw_dsp_out(&g, oc + 3, a[3]);
                }
                for (; oc < C; oc++) { /* the last C % 4 channels, one at a time */
                    int32_t acc = bias ? bias[oc] : 0;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            acc += ((int32_t)xpix[ky * dy + kx * dx + oc] + g.in_off) * g.w[(ky * g.kw + kx) * C + oc];
                        }
                    }
                    out[oc] = dw_dsp_out(&g, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

#else

static mf_status run(const mf_call *c) { return run_portable(c); }

#endif
const mf_kernel mf_kernel_depthwise_conv2d_s8 = {2, "depthwise_conv2d_s8", 4, 5, 1u << 2, "iiIIIiii", check, run};
