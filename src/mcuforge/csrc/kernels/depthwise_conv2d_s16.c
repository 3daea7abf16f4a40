/*
 * depthwise_conv2d_s16: int16 x int8 depthwise convolution, bit-exact with CMSIS-NN
 * arm_depthwise_conv_s16 and mcuforge.kernels.depthwise_conv2d_s16 (any depth multiplier M: output
 * channel oc = ic * M + m reads input channel ic). Weights 1HW(C*M), optional int64 bias, per-channel
 * arm_nn_requantize_s64; taps outside the input are skipped; the accumulator is the exact int64 sum.
 *
 * run_portable is the statement of the math. With depth multiplier 1 and at most 511 taps (so that int32
 * sums of |x * w| <= 2^22 cannot overflow) the DSP and MVE cores take run_fast, the same sums: a block
 * of channels per load -- DSP 4 channels (two words of int16 inputs, one word of weights widened by
 * SXTB16; SMLABB/SMLATB/SMLABT/SMLATT), MVE 8 (int16 lanes, VMULLB/VMULLT into even and odd int32 lanes),
 * the channel tail predicated (MVE) or scalar (DSP) -- then the scalar output stage per channel.
 */
#include "mf_s16.h"
#include "mf_simd.h"

enum { A_STRIDE, A_PAD, A_DIL, A_MULT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT16, 4) || !mf_is(&w, MF_INT8, 4) || !mf_is(&o, MF_INT16, 4)) return MF_ERR_SHAPE;
    const int32_t dm = mf_attr_int(c, A_MULT);
    if (dm < 1 || w.shape[0] != 1 || (uint64_t)x.shape[3] * (uint32_t)dm != w.shape[3]) return MF_ERR_SHAPE;
    if (o.shape[0] != x.shape[0] || o.shape[3] != w.shape[3]) return MF_ERR_SHAPE;
    int32_t st[2], pd[2], dl[2];
    if (!mf_attr_conv_window(c, A_STRIDE, st, pd, dl)) return MF_ERR_SHAPE;
    const uint64_t taps = (uint64_t)w.shape[1] * w.shape[2];
    return mf_check_weighted_s16(c, has_bias ? &b : NULL, &m, &s, w.shape[3], taps, A_ACT_MIN);
}

static mf_status run_portable(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const uint32_t dm = (uint32_t)mf_attr_int(c, A_MULT);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int16_t *xd = (const int16_t *)x.data;
    const int8_t *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], oc_n = w.shape[3], kh = w.shape[1], kw = w.shape[2];
    int16_t *out = (int16_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            const int64_t y0 = (int64_t)oy * st[0] - pd[0];
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t x0 = (int64_t)ox * st[1] - pd[1];
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    const uint32_t ic = oc / dm;
                    int64_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const size_t xi = (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch + ic;
                            acc += (int32_t)xd[xi] * wd[((size_t)ky * kw + kx) * oc_n + oc];
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
#define DW_MAX_TAPS 511u
#if defined(MF_USE_MVE)
#define DW_BLOCK 8u
#else
#define DW_BLOCK 4u
#endif

/* One output pixel's window: the in-bounds taps' input pixels (element offsets of channel 0) and weight rows. */
typedef struct {
    const int16_t *x;
    const int8_t *w;
    int64_t y0, x0;
    int32_t h, wi, st_dl[2];
    uint32_t ch, kh, kw;
} dw_window;

/* The sums of channels c0 .. c0 + n - 1 (n <= DW_BLOCK) over the window's in-bounds taps. */
static void block_sums(const dw_window *g, uint32_t c0, uint32_t n, int32_t *acc) {
#if defined(MF_USE_MVE)
    const mve_pred16_t p = vctp16q(n);
    int32x4_t even = vdupq_n_s32(0), odd = vdupq_n_s32(0);
#else
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (uint32_t i = 0; i < n; i++) acc[i] = 0;
#endif
    for (uint32_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = g->y0 + (int64_t)ky * g->st_dl[0];
        if (iy < 0 || iy >= g->h) continue;
        for (uint32_t kx = 0; kx < g->kw; kx++) {
            const int64_t ix = g->x0 + (int64_t)kx * g->st_dl[1];
            if (ix < 0 || ix >= g->wi) continue;
            const int16_t *xp = g->x + ((size_t)iy * (size_t)g->wi + (size_t)ix) * g->ch + c0;
            const int8_t *wp = g->w + ((size_t)ky * g->kw + kx) * g->ch + c0;
#if defined(MF_USE_MVE)
            const int16x8_t xv = vldrhq_z_s16(xp, p), wv = vldrbq_z_s16(wp, p);
            even = vaddq_s32(even, vmullbq_int_s16(xv, wv)); /* lanes 0, 2, 4, 6 */
            odd = vaddq_s32(odd, vmulltq_int_s16(xv, wv));   /* lanes 1, 3, 5, 7 */
#else
            if (n == 4) {
                const int32_t x01 = mf_ld32(xp), x23 = mf_ld32(xp + 2), ww = mf_ld32(wp);
                const int32_t w02 = mf_sxtb16(ww), w13 = mf_sxtb16_ror8(ww); /* (w0, w2), (w1, w3) */
                a0 = __smlabb(x01, w02, a0);
                a1 = __smlatb(x01, w13, a1);
                a2 = __smlabt(x23, w02, a2);
                a3 = __smlatt(x23, w13, a3);
            } else {
                for (uint32_t i = 0; i < n; i++) acc[i] += (int32_t)xp[i] * wp[i];
            }
#endif
        }
    }
#if defined(MF_USE_MVE)
    int32_t e[4], o[4];
    vst1q_s32(e, even);
    vst1q_s32(o, odd);
    for (uint32_t i = 0; i < n; i++) acc[i] = (i & 1u) ? o[i >> 1] : e[i >> 1];
#else
    if (n == 4) {
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
#endif
}

static mf_status run_fast(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    dw_window g = {NULL, (const int8_t *)w.data, 0, 0, (int32_t)x.shape[1], (int32_t)x.shape[2], {dl[0], dl[1]},
                   x.shape[3], w.shape[1], w.shape[2]};
    int32_t acc[DW_BLOCK];
    int16_t *out = (int16_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        g.x = (const int16_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g.ch;
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            g.y0 = (int64_t)oy * st[0] - pd[0];
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                g.x0 = (int64_t)ox * st[1] - pd[1];
                for (uint32_t c0 = 0; c0 < g.ch; c0 += DW_BLOCK) {
                    const uint32_t k_n = g.ch - c0 < DW_BLOCK ? g.ch - c0 : DW_BLOCK;
                    block_sums(&g, c0, k_n, acc);
                    for (uint32_t k = 0; k < k_n; k++) out[c0 + k] = mf_requant_s16_channel(&rq, c0 + k, acc[k]);
                }
                out += g.ch;
            }
        }
    }
    return MF_OK;
}
#endif

#if defined(MF_USE_MVE)
/* The sums of one output pixel over 8 channels (two int32 vectors: the even channels c0, c0 + 2, .. and the odd
 * ones; lanes past p load nothing) and the taps ky0..ky1-1 x kx0..kx1-1 of the window whose tap (0, 0) is at input
 * element offset `at` (its channel c0): xs / ws, the element steps of a tap row and a tap in the input and the
 * weights. One 8-lane load of inputs (VLDRH.S16) and of weights (VLDRB.S16, widened as it loads) per tap, the
 * products by VMULLB / VMULLT (exact in int32) into the even and odd sums. */
static inline __attribute__((always_inline)) void dw_mve_sums8(const int16_t *xc, int32_t at, const int8_t *wc,
                                                                uint32_t ky0, uint32_t ky1, uint32_t kx0, uint32_t kx1,
                                                                int32_t row_step, int32_t tap_step, uint32_t kw,
                                                                uint32_t ch, mve_pred16_t p, int32x4_t *even,
                                                                int32x4_t *odd) {
    int32x4_t se = *even, so = *odd;
    for (uint32_t ky = ky0; ky < ky1; ky++) {
        const int16_t *xp = xc + (at + (int32_t)ky * row_step + (int32_t)kx0 * tap_step); /* inside */
        const int8_t *wp = wc + (ky * kw + kx0) * ch;
        for (uint32_t kx = kx0; kx < kx1; kx++, xp += tap_step, wp += ch) {
            const int16x8_t xv = vldrhq_z_s16(xp, p), wv = vldrbq_z_s16(wp, p);
            se = vaddq_s32(se, vmullbq_int_s16(xv, wv));
            so = vaddq_s32(so, vmulltq_int_s16(xv, wv));
        }
    }
    *even = se, *odd = so;
}

/* The MVE int32 path (depth multiplier 1, mf_s16_mve_ok): 8 channels a pass in two int32 vectors (even and odd
 * channels: one VLDRH.S16 and one widening VLDRB.S16 per tap, VMULLB / VMULLT, VADD; VMOVNB / VMOVNT put the 8
 * outputs back in order), the channels' bias and VRMULH multipliers read once for every
 * output pixel of the pass, the in-bounds taps of a pixel found once per output row and column (no test in
 * the tap loop), the output stage vectorized (bias first, VRMULH, clamp, VSTRH.32). 0 when it does not
 * apply. */
static int run_mve(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_requant_s16 rq;
    mf_requant_s16_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *wd = (const int8_t *)w.data;
    const uint32_t ch = x.shape[3], kh = w.shape[1], kw = w.shape[2];
    if (!mf_s16_mve_ok(&rq, wd, kh * kw, ch, ch)) return 0;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t oh = o.shape[1], ow = o.shape[2];
    const int32_t row_step = dl[0] * wi * (int32_t)ch, tap_step = dl[1] * (int32_t)ch;
    const int32x4_t lo = vdupq_n_s32(rq.lo), hi = vdupq_n_s32(rq.hi);
    for (uint32_t c0 = 0; c0 < ch; c0 += 8) {
        const uint32_t k_n = ch - c0 < 8 ? ch - c0 : 8;
        const mve_pred16_t p = vctp16q(k_n);
        /* channel c0 + k's bias and multiplier in lane k / 2 of the even (k even) or odd vector */
        int32_t bias8[8] = {0}, mult8[8] = {0};
        for (uint32_t k = 0; k < k_n; k++) {
            const uint32_t at = (k & 1u) * 4u + (k >> 1);
            if (rq.bias) memcpy(&bias8[at], rq.bias + 8u * (c0 + k), 4); /* the low word: |bias| < 2^31 */
            mult8[at] = mf_s16_mve_mult(&rq, rq.per_channel ? c0 + k : 0);
        }
        const int32x4_t mult_e = vld1q_s32(mult8), mult_o = vld1q_s32(mult8 + 4);
        const int8_t *wc = wd + c0;
        for (uint32_t n = 0; n < x.shape[0]; n++) {
            const int16_t *xc = (const int16_t *)x.data + (size_t)n * (size_t)h * (size_t)wi * ch + c0;
            int16_t *out = (int16_t *)o.data + (size_t)n * oh * ow * ch + c0;
            for (uint32_t oy = 0; oy < oh; oy++) {
                const int32_t y0 = (int32_t)oy * st[0] - pd[0];
                uint32_t ky0 = 0, ky1 = kh; /* the taps ky0 .. ky1 - 1 inside the input rows */
                while (ky0 < kh && y0 + (int32_t)ky0 * dl[0] < 0) ky0++;
                while (ky1 > ky0 && y0 + (int32_t)(ky1 - 1) * dl[0] >= h) ky1--;
                for (uint32_t ox = 0; ox < ow; ox++, out += ch) {
                    const int32_t x0 = (int32_t)ox * st[1] - pd[1];
                    uint32_t kx0 = 0, kx1 = kw;
                    while (kx0 < kw && x0 + (int32_t)kx0 * dl[1] < 0) kx0++;
                    while (kx1 > kx0 && x0 + (int32_t)(kx1 - 1) * dl[1] >= wi) kx1--;
                    int32x4_t a0 = vld1q_s32(bias8), a1 = vld1q_s32(bias8 + 4);
                    dw_mve_sums8(xc, (y0 * wi + x0) * (int32_t)ch, wc, ky0, ky1, kx0, kx1, row_step, tap_step, kw, ch,
                                 p, &a0, &a1);
                    a0 = vminq_s32(vmaxq_s32(vrmulhq_s32(a0, mult_e), lo), hi);
                    a1 = vminq_s32(vmaxq_s32(vrmulhq_s32(a1, mult_o), lo), hi);
                    /* even channels into the bottom halves, odd into the top: the 8 int16 outputs in order */
                    vstrhq_p_s16(out, vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), a0), a1), p);
                }
            }
        }
    }
    return 1;
}
#endif

static mf_status run(const mf_call *c) {
#if defined(MF_USE_MVE)
    if (mf_attr_int(c, A_MULT) == 1 && run_mve(c)) return MF_OK;
#endif
#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
    mf_tensor w;
    mf_call_input(c, 1, &w);
    if (mf_attr_int(c, A_MULT) == 1 && (uint64_t)w.shape[1] * w.shape[2] <= DW_MAX_TAPS) return run_fast(c);
#endif
    return run_portable(c);
}

const mf_kernel mf_kernel_depthwise_conv2d_s16 = {MF_KIND_HEAD_depthwise_conv2d_s16, check, run};
