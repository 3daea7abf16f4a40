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
 *   loop bounds; 3x3 windows inside the input run along a row without bounds; the output stage is
 *   SMMULR-based (mf_dsp_requantize_small) when no accumulator can reach 2^30; the 3x3 path also
 *   runs depthwise_conv2d_s4 on its unpacked weights (mf_depthwise_dsp_3x3), takes the padding's
 *   windows by their tap masks, unrolled (the usual edge and corner masks as constants), and reads
 *   each channel group's output parameters once (dw_out_params). Where the short requantization serves
 *   a group (every shift in [-21, -1]), its 3x3 windows run in assembly from a table built once per
 *   group (dw3_tab: accumulators' start with the input offset folded in, weights pre-extended and
 *   doubled, output constants): two windows per pass from a ring of input rows copied with the zero
 *   point around (dw3_rows, stride 1 or 2 across, no dilation across: padding costs nothing there;
 *   rows along the longer output side), or one window per pass on the image and the padding's windows
 *   on patches (dw3_run, dw3_edge); outputs of fewer than 16 pixels keep the C loop (the table's cost);
 *   where the rows have stride 1 and no dilation (and 8 to DWP_NC - 3 windows), a ring per channel of
 *   rows sign-extended once (dwp_fill) and four windows of one channel per asm pass, two taps per SMLAD
 *   (dwp: mf_dwp_run_int8 / mf_dwp_run_clamp; at stride 2 along the rows, 12 to 27 windows, one SMLAD a tap
 *   pair with no PKHBT: mf_dwp2_run_int8 / _clamp), the rings in the op's planned scratch (the planner's
 *   mf_scratch_depthwise_conv2d_s8_dwp; with less scratch, dw3_buffered); the same path runs the op written
 *   over its input where the planner chose that (dw_dsp_in_place); small maps at stride 1 (at most 6 windows
 *   a row, 6 rows: MobileNet's 6 x 6 layers) widen each channel's padded map once, two rows a word, and run
 *   2 x 2 windows per asm pass with the channel's weights in registers (dwv: mf_dwv_run_int8 / _clamp); 3 x 3
 *   outputs at stride 1 or 2 (MobileNet's 3 x 3 tails) run on the same maps, every window once (dwv3, dwv3s2);
 * - MVE (cortex-m55): groups of eight channels outer, products by VMULLB/VMULLT of int16 lanes
 *   into even/odd int32 accumulators (a vector of 16 int8 channels would need four accumulators
 *   plus operands: more than the eight Q registers). 3x3 kernels: the windows inside the input as
 *   one asm block (DW_BLOCK3X3_ASM: from bias + offset * sum(w), so x needs no offset, nine taps
 *   unrolled), the others as asm runs of windows sharing their row/column masks (DW_EDGE3X3_ASM:
 *   from the bias, x + offset, taps outside skipped); other kernels and the last partial group
 *   through dw_pixel. The output stage: a vector requantization (VQRDMULH + rounding shift,
 *   CMSIS-NN's arm_requantize_mve, shorter when every shift is negative), saturating narrowing into
 *   channel order, clamp, one store of eight bytes. A multiplier of INT32_MIN (where VQRDMULH
 *   saturates and the C code wraps) takes the portable path; an -O0 build runs every pixel
 *   through dw_pixel (the asm needs an optimized build's registers). The same path runs
 *   depthwise_conv2d_s4 on its weights unpacked to int8 (mf_depthwise_mve), whose bias and multipliers
 *   may be int16 (dw_group_init reads either).
 */
#include "mf_in_place.h"
#include "mf_scalar.h"

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

#if defined(MF_USE_DSP) || defined(MF_USE_MVE) || defined(MF_USE_SCALAR_FAST)
/* The geometry of a depth-multiplier-1 depthwise convolution, read once per run. */
typedef struct {
    const int8_t *x, *w;
    int8_t *out;
    int32_t batch, h, wi, ch, kh, kw, oh, ow, st[2], pd[2], dl[2], in_off;
    mf_channel_requant rq;
    uint8_t *scratch; /* the DSP 3x3 path's rings (dwp), scratch_bytes of them; NULL: none */
    uint32_t scratch_bytes;
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
    g->scratch = NULL, g->scratch_bytes = 0;
}

/* Window positions fit int32 with room to spare (the fast paths' arithmetic); absurd strides,
 * paddings or dilations take the portable path. */
static int dw_geom_fits(const dw_geom *g) {
    const int64_t lim = (int64_t)1 << 28;
    const int64_t y = (int64_t)(g->oh - 1) * g->st[0] + g->pd[0] + (int64_t)(g->kh - 1) * g->dl[0] + g->h;
    const int64_t x = (int64_t)(g->ow - 1) * g->st[1] + g->pd[1] + (int64_t)(g->kw - 1) * g->dl[1] + g->wi;
    return y < lim && x < lim && (int64_t)g->h * g->wi * g->ch < lim;
}

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
/* The geometry of the call on the int8 weights at w (the op's own, or depthwise_conv2d_s4's unpacked) for
 * mf_depthwise_mve / mf_depthwise_dsp_3x3: 0 when they do not take it (a depth multiplier other than 1, an
 * absurd geometry). */
static int dw_geom_on(const mf_call *c, const int8_t *w, dw_geom *g) {
    if (mf_attr_int(c, A_MULT) != 1) return 0;
    dw_geom_read(c, g);
    g->w = w;
    return dw_geom_fits(g);
}
#endif

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

/* One group of eight channels c0 .. c0 + 7 (the last group predicated), read once for all pixels.
 * The products of a tap come out of VMULLB/VMULLT as the even channels (0, 2, 4, 6: accumulator e,
 * index 0) and the odd ones (1, 3, 5, 7: o, index 1); the per-lane constants are in that order.
 * The asm below reads the fields at the byte offsets noted. */
typedef struct {
    int16x8_t w[9];      /* 0..143: the 3x3 weights widened, tap by tap */
    int32x4_t base[2];   /* 144, 160: bias + in_off * sum(w): windows inside the input read x as is */
    int32x4_t mult[2];   /* 176, 192 */
    int32x4_t nright[2]; /* 208, 224: min(shift, 0) */
    int32x4_t left[2];   /* 240, 256: max(shift, 0) */
    int32x4_t fix[2];    /* 272, 288: -1 in lanes whose right shift is > 0 */
    int32x4_t ooff;      /* 304: the output offset */
    int16x8_t lo, hi;    /* 320, 336: the activation range */
    int32x4_t bias[2];   /* 352, 368: the bias alone: windows leaving the input add in_off to x */
    int32_t cx, xadj, oadj, xstep, ostep; /* 384..400: per call (block width; row and pixel steps) */
    int32_t in_off;
    mve_pred16_t p;      /* the group's channels */
    int full;            /* all eight */
} dw_group;
typedef char dw_group_layout[offsetof(dw_group, bias) == 352 && offsetof(dw_group, cx) == 384 ? 1 : -1];

/* The requantization of one accumulator (mf_requantize_x4 with the group's lane constants). */
static inline int32x4_t dw_requant(const dw_group *G, int j, int32x4_t acc) {
    const int32x4_t h = vqrdmulhq_s32(vshlq_s32(acc, G->left[j]), G->mult[j]);
    return vrshlq_s32(vqaddq_s32(h, vandq_s32(vshrq_n_s32(h, 31), G->fix[j])), G->nright[j]);
}

/* The output stage of one pixel: requantized, + output offset (wrapping, in int32), narrowed with
 * saturation into the channels' order (VQMOVNB: even, VQMOVNT: odd -- clamping a saturated value to
 * [lo, hi] inside int16 gives the clamp of the value), clamped, eight bytes stored. */
static inline void dw_store(const dw_group *G, int32x4_t e, int32x4_t o, int8_t *out) {
    e = vaddq_s32(dw_requant(G, 0, e), G->ooff);
    o = vaddq_s32(dw_requant(G, 1, o), G->ooff);
    int16x8_t v = vqmovnbq_s32(vdupq_n_s16(0), e);
    v = vqmovntq_s32(v, o);
    v = vminq_s16(vmaxq_s16(v, G->lo), G->hi);
    vstrbq_p_s16(out, v, G->p);
}

static void dw_group_init(const dw_geom *g, int32_t c0, dw_group *G) {
    const int32_t n = g->ch - c0 < 8 ? g->ch - c0 : 8;
    G->p = vctp16q((uint32_t)n);
    G->full = n == 8;
    G->in_off = g->in_off;
    int32x4_t se = vdupq_n_s32(0), so = vdupq_n_s32(0);
    const int32_t taps = g->kh * g->kw;
    for (int32_t t = 0; t < taps; t++) {
        const int16x8_t w = vldrbq_z_s16(g->w + (size_t)t * (size_t)g->ch + c0, G->p);
        if (t < 9) G->w[t] = w;
        se = vaddq_s32(se, vmovlbq_s16(w));
        so = vaddq_s32(so, vmovltq_s16(w));
    }
    const mf_channel_requant *q = &g->rq;
    for (int j = 0; j < 2; j++) {
        /* lane i of accumulator j: channel c0 + 2 i + j (lanes past n read nothing) */
        const uint32x4_t chan = vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0, 1), 2), (uint32_t)j);
        const mve_pred16_t pj = vcmphiq_u32(vdupq_n_u32((uint32_t)n), chan);
        const int32x4_t bias = mf_rq_bias_gather_x4(q, (uint32_t)c0, chan, pj); /* int32, or s4's int16 */
        G->bias[j] = bias;
        /* |sum(w)| <= 2^23, |in_off| <= 128; the bias wraps as the C path's does */
        G->base[j] = vaddq_s32(bias, vmulq_n_s32(j ? so : se, g->in_off));
        const int32x4_t sh = q->per_channel ? mf_shifts_gather_x4(q->shift + c0, chan, pj) : vdupq_n_s32(q->shift[0]);
        G->mult[j] = mf_rq_mult_gather_x4(q, (uint32_t)c0, chan, pj);
        G->left[j] = vmaxq_s32(sh, vdupq_n_s32(0));
        G->nright[j] = vminq_s32(sh, vdupq_n_s32(0));
        G->fix[j] = vshrq_n_s32(G->nright[j], 31);
    }
    G->ooff = vdupq_n_s32(q->out_off);
    G->lo = vdupq_n_s16((int16_t)q->lo);
    G->hi = vdupq_n_s16((int16_t)q->hi);
}

#if defined(__OPTIMIZE__)
/* The asm loops need more registers than an unoptimized build leaves (its frame pointer and stack
 * copies): a -O0 build runs every pixel through dw_pixel. */
#define DW_ASM 1

/* Pieces of the asm 3x3 loops' text (full groups): a tap (x at register R, its weights at G + W),
 * the same with x + in_off (register off), and the requantization of accumulator A (q0 even, q1
 * odd; its constants at the offsets given), general or with every shift negative (no left shift,
 * the rounding fix-up in every lane). Q registers: q0/q1 accumulators, q2 x, q3 w, q4 products and
 * constants, q5/q6 lo/hi, q7 the output offset. */
#define DW_TAP(R, W)                                                                                  \
    "   vldrb.s16    q2, [" R "]\n"                                                                \
    "   vldrw.32     q3, [%[G], #" W "]\n"                                                        \
    "   vmullb.s16   q4, q2, q3\n"                                                                 \
    "   vadd.i32     q0, q0, q4\n"                                                                 \
    "   vmullt.s16   q4, q2, q3\n"                                                                 \
    "   vadd.i32     q1, q1, q4\n"
#define DW_OTAP(R, W)                                                                                 \
    "   vldrb.s16    q2, [" R "]\n"                                                                \
    "   vadd.i16     q2, q2, %[off]\n"                                                             \
    "   vldrw.32     q3, [%[G], #" W "]\n"                                                        \
    "   vmullb.s16   q4, q2, q3\n"                                                                 \
    "   vadd.i32     q0, q0, q4\n"                                                                 \
    "   vmullt.s16   q4, q2, q3\n"                                                                 \
    "   vadd.i32     q1, q1, q4\n"
#define DW_REQ_GENERAL(A, LEFT, MULT, FIX, NRIGHT)                                                    \
    "   vldrw.32     q4, [%[G], #" LEFT "]\n"                                                     \
    "   vshl.s32     " A ", " A ", q4\n"                                                           \
    "   vldrw.32     q4, [%[G], #" MULT "]\n"                                                     \
    "   vqrdmulh.s32 " A ", " A ", q4\n"                                                           \
    "   vldrw.32     q4, [%[G], #" FIX "]\n"                                                      \
    "   vshr.s32     q2, " A ", #31\n"                                                             \
    "   vand         q2, q2, q4\n"                                                                 \
    "   vqadd.s32    " A ", " A ", q2\n"                                                           \
    "   vldrw.32     q4, [%[G], #" NRIGHT "]\n"                                                   \
    "   vrshl.s32    " A ", " A ", q4\n"                                                           \
    "   vadd.i32     " A ", " A ", q7\n"
#define DW_REQ_NEGATIVE(A, LEFT, MULT, FIX, NRIGHT)                                                   \
    "   vldrw.32     q4, [%[G], #" MULT "]\n"                                                     \
    "   vqrdmulh.s32 " A ", " A ", q4\n"                                                           \
    "   vshr.s32     q2, " A ", #31\n"                                                             \
    "   vqadd.s32    " A ", " A ", q2\n"                                                           \
    "   vldrw.32     q4, [%[G], #" NRIGHT "]\n"                                                   \
    "   vrshl.s32    " A ", " A ", q4\n"                                                           \
    "   vadd.i32     " A ", " A ", q7\n"
/* the output stage (dw_store) and the next pixel */
#define DW_OUT(REQ)                                                                                   \
    REQ("q0", "240", "176", "272", "208")                                                          \
    REQ("q1", "256", "192", "288", "224")                                                          \
    "   vqmovnb.s32  q2, q0\n"                                                                     \
    "   vqmovnt.s32  q2, q1\n"                                                                     \
    "   vmax.s16     q2, q2, q5\n"                                                                 \
    "   vmin.s16     q2, q2, q6\n"                                                                 \
    "   vstrb.16     q2, [%[out]]\n"
#define DW_CONSTS "   vldrw.32     q7, [%[G], #304]\n   vldrw.32     q5, [%[G], #320]\n   vldrw.32     q6, [%[G], #336]\n"

/* A block of output pixels whose 3x3 windows lie inside the input: `rows` rows of G->cx pixels (>= 1
 * each), xp the first window's top-left tap (channel c0), the next window `step` bytes on (G->xadj
 * more after a row), the next output G->ostep on (G->oadj more after a row). Each pixel: from the base,
 * nine taps (x widened, VMULLB/VMULLT into the even/odd accumulators), dw_store. */
#define DW_BLOCK3X3_ASM(REQ)                                                                          \
    __asm__ volatile(DW_CONSTS                                                                     \
                     "4: ldr          %[count], [%[G], #384]\n"                                   \
                     "3: vldrw.32     q0, [%[G], #144]\n"                                          \
                     "   vldrw.32     q1, [%[G], #160]\n"                                          \
                     DW_TAP("%[xp]", "0")                                                          \
                     "   add          %[r], %[xp], %[dx]\n"                                        \
                     DW_TAP("%[r]", "16")                                                          \
                     "   add          %[r], %[r], %[dx]\n"                                         \
                     DW_TAP("%[r]", "32")                                                          \
                     "   add          %[rr], %[xp], %[dy]\n"                                       \
                     DW_TAP("%[rr]", "48")                                                         \
                     "   add          %[r], %[rr], %[dx]\n"                                        \
                     DW_TAP("%[r]", "64")                                                          \
                     "   add          %[r], %[r], %[dx]\n"                                         \
                     DW_TAP("%[r]", "80")                                                          \
                     "   add          %[rr], %[rr], %[dy]\n"                                       \
                     DW_TAP("%[rr]", "96")                                                         \
                     "   add          %[r], %[rr], %[dx]\n"                                        \
                     DW_TAP("%[r]", "112")                                                         \
                     "   add          %[r], %[r], %[dx]\n"                                         \
                     DW_TAP("%[r]", "128")                                                         \
                     DW_OUT(REQ)                                                                   \
                     "   ldr          %[r], [%[G], #400]\n"                                       \
                     "   add          %[out], %[out], %[r]\n"                                      \
                     "   add          %[xp], %[xp], %[step]\n"                                     \
                     "   subs         %[count], %[count], #1\n"                                    \
                     "   bne          3b\n"                                                        \
                     "   ldr          %[r], [%[G], #388]\n"                                       \
                     "   add          %[xp], %[xp], %[r]\n"                                        \
                     "   ldr          %[r], [%[G], #392]\n"                                       \
                     "   add          %[out], %[out], %[r]\n"                                      \
                     "   subs         %[rows], %[rows], #1\n"                                      \
                     "   bne          4b\n"                                                        \
                     : [xp] "+&l"(xp), [out] "+&l"(out), [rows] "+&r"(rows), [count] "=&r"(count),        \
                       [r] "=&l"(r), [rr] "=&l"(rr)                                                  \
                     : [G] "r"(G), [dx] "r"(dx), [dy] "r"(dy), [step] "r"(step)                       \
                     : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory", "cc")

static __attribute__((noinline)) void dw_block3x3(const dw_group *G, const int8_t *xp, int8_t *out, int32_t rows,
                                                  int32_t dx, int32_t dy, int32_t step, int negative) {
    const int8_t *r, *rr;
    int32_t count;
    if (negative) {
        DW_BLOCK3X3_ASM(DW_REQ_NEGATIVE);
    } else {
        DW_BLOCK3X3_ASM(DW_REQ_GENERAL);
    }
    (void)r, (void)rr, (void)count;
}

/* One tap of a window that may leave the input: skipped unless bit B of the row mask (kernel row
 * inside) and of the column mask (kernel column inside) are set. */
#define DW_MTAP(R, W, CB)                                                                             \
    "   tst          %[cm], #" CB "\n"                                                             \
    "   beq          1f\n" DW_OTAP(R, W) "1:\n"
#define DW_MROW(RB, W0, W1, W2)                                                                       \
    "   tst          %[rm], #" RB "\n"                                                             \
    "   beq          5f\n" DW_MTAP("%[r]", W0, "1") "   add          %[r], %[r], %[dx]\n"          \
    DW_MTAP("%[r]", W1, "2") "   add          %[r], %[r], %[dx]\n" DW_MTAP("%[r]", W2, "4") "5:\n"

/* `count` (>= 1) output pixels whose 3x3 windows share the row mask rm and column mask cm (bit k: kernel
 * row / column k inside the input): xp the windows' top-left tap (maybe outside the input, read only
 * through the taps inside), the next G->xstep bytes on, outputs G->ostep apart. Each pixel: from the
 * bias, the inside taps with x + in_off, dw_store. */
#define DW_EDGE3X3_ASM(REQ)                                                                           \
    __asm__ volatile(DW_CONSTS                                                                     \
                     "3: vldrw.32     q0, [%[G], #352]\n"                                          \
                     "   vldrw.32     q1, [%[G], #368]\n"                                          \
                     "   mov          %[r], %[xp]\n"                                               \
                     DW_MROW("1", "0", "16", "32")                                                 \
                     "   add          %[r], %[xp], %[dy]\n"                                        \
                     DW_MROW("2", "48", "64", "80")                                                \
                     "   add          %[r], %[xp], %[dy]\n"                                        \
                     "   add          %[r], %[r], %[dy]\n"                                         \
                     DW_MROW("4", "96", "112", "128")                                              \
                     DW_OUT(REQ)                                                                   \
                     "   ldr          %[r], [%[G], #400]\n"                                       \
                     "   add          %[out], %[out], %[r]\n"                                      \
                     "   ldr          %[r], [%[G], #396]\n"                                       \
                     "   add          %[xp], %[xp], %[r]\n"                                        \
                     "   subs         %[count], %[count], #1\n"                                    \
                     "   bne          3b\n"                                                        \
                     : [xp] "+&l"(xp), [out] "+&l"(out), [count] "+&r"(count), [r] "=&l"(r)                 \
                     : [G] "r"(G), [dx] "r"(dx), [dy] "r"(dy), [rm] "r"(rm), [cm] "r"(cm), [off] "r"(off) \
                     : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory", "cc")

static __attribute__((noinline)) void dw_edge3x3(const dw_group *G, const int8_t *xp, int8_t *out, int32_t count,
                                                 int32_t dx, int32_t dy, uint32_t rm, uint32_t cm, int negative) {
    const int8_t *r;
    const int32_t off = G->in_off;
    if (negative) {
        DW_EDGE3X3_ASM(DW_REQ_NEGATIVE);
    } else {
        DW_EDGE3X3_ASM(DW_REQ_GENERAL);
    }
    (void)r;
}
#else
#define DW_ASM 0
#endif

static inline int16x8_t dw_load(const dw_group *G, const int8_t *p) { return vldrbq_z_s16(p, G->p); }

/* One window of any kernel (the path of kernels other than 3x3 and of the last, partial group): the
 * taps [ky0, ky1) x [kx0, kx1) inside the input, from the bias, x + in_off, the loads predicated. */
static void dw_pixel(const dw_geom *g, const dw_group *G, const int8_t *xb, int32_t c0, int32_t y0, int32_t x0,
                     int8_t *out) {
    int32_t ky0, ky1, kx0, kx1;
    dw_tap_range(y0, g->dl[0], g->kh, g->h, &ky0, &ky1);
    dw_tap_range(x0, g->dl[1], g->kw, g->wi, &kx0, &kx1);
    const int32_t C = g->ch, dx = g->dl[1] * C;
    const int16_t off = (int16_t)g->in_off;
    const int w9 = g->kh * g->kw <= 9;
    int32x4_t e = G->bias[0], o = G->bias[1];
    for (int32_t ky = ky0; ky < ky1; ky++) {
        const int8_t *xp = xb + ((ptrdiff_t)(y0 + ky * g->dl[0]) * g->wi + (x0 + kx0 * g->dl[1])) * C + c0;
        for (int32_t kx = kx0; kx < kx1; kx++, xp += dx) {
            const int32_t t = ky * g->kw + kx;
            const int16x8_t x = vaddq_n_s16(dw_load(G, xp), off);
            const int16x8_t w = w9 ? G->w[t] : dw_load(G, g->w + (size_t)t * (size_t)C + c0);
            e = vaddq_s32(e, vmullbq_int_s16(x, w));
            o = vaddq_s32(o, vmulltq_int_s16(x, w));
        }
    }
    dw_store(G, e, o, out);
}

/* Bit k: tap position start + k * dil (k < 3) lies in [0, size). */
static inline uint32_t dw_mask3(int32_t start, int32_t dil, int32_t size) {
    uint32_t m = 0;
    for (int32_t k = 0; k < 3; k++, start += dil) m |= (uint32_t)(start >= 0 && start < size) << k;
    return m;
}

/* xb + off as an address, maybe outside the tensor (a window's corner): only taps inside are read. */
static inline const int8_t *dw_at(const int8_t *xb, ptrdiff_t off) {
    return (const int8_t *)(uintptr_t)((uintptr_t)xb + (uintptr_t)off);
}

int mf_depthwise_mve(const mf_call *c, const int8_t *w) {
    dw_geom g = {0}; /* zeroed: -O1's flow analysis cannot see that dw_geom_on fills it (-Wmaybe-uninitialized) */
    if (!dw_geom_on(c, w, &g) || !mf_requant_vector_ok(&g.rq, (uint32_t)g.ch)) return 0;
    const int32_t C = g.ch, row = g.wi * C, dy = g.dl[0] * row, dx = g.dl[1] * C, step = g.st[1] * C;
    const int32_t ystep = g.st[0] * row, orow = g.ow * C;
    (void)dy, (void)dx, (void)step, (void)ystep; /* unused without the asm loops */
    const int fast3x3 = DW_ASM && g.kh == 3 && g.kw == 3;
    /* output columns [ox_lo, ox_hi) and rows [oy_lo, oy_hi) whose windows lie inside the input */
    const int32_t ox_lo = (g.pd[1] + g.st[1] - 1) / g.st[1], oy_lo = (g.pd[0] + g.st[0] - 1) / g.st[0];
    const int32_t span_x = g.wi - 1 - (g.kw - 1) * g.dl[1] + g.pd[1];
    const int32_t span_y = g.h - 1 - (g.kh - 1) * g.dl[0] + g.pd[0];
    int32_t ox_hi = span_x < 0 ? 0 : span_x / g.st[1] + 1, oy_hi = span_y < 0 ? 0 : span_y / g.st[0] + 1;
    if (ox_hi > g.ow) ox_hi = g.ow;
    if (oy_hi > g.oh) oy_hi = g.oh;
    if (ox_hi < ox_lo) ox_hi = ox_lo;
    if (oy_hi < oy_lo) oy_hi = oy_lo;
    int negative = 1; /* every shift < 0: the asm loops' shorter requantization */
    for (int32_t i = 0; i < (g.rq.per_channel ? C : 1); i++) negative &= g.rq.shift[i] < 0;
    dw_group G;
    for (int32_t c0 = 0; c0 < C; c0 += 8) {
        dw_group_init(&g, c0, &G);
        for (int32_t b = 0; b < g.batch; b++) {
            const int8_t *xb = g.x + (size_t)b * (size_t)g.h * (size_t)row + c0;
            int8_t *out = g.out + (size_t)b * (size_t)g.oh * (size_t)orow + c0;
            if (!fast3x3 || !G.full) { /* any kernel, or the last channels: pixel by pixel */
                for (int32_t oy = 0; oy < g.oh; oy++) {
                    for (int32_t ox = 0; ox < g.ow; ox++) {
                        dw_pixel(&g, &G, xb - c0, c0, oy * g.st[0] - g.pd[0], ox * g.st[1] - g.pd[1],
                                 out + (ptrdiff_t)oy * orow + (ptrdiff_t)ox * C);
                    }
                }
                continue;
            }
#if DW_ASM
            /* the windows inside the input: one block */
            if (oy_lo < oy_hi && ox_lo < ox_hi) {
                G.cx = ox_hi - ox_lo;
                G.xadj = ystep - G.cx * step;
                G.oadj = orow - G.cx * C;
                G.ostep = C;
                dw_block3x3(&G, dw_at(xb, (ptrdiff_t)(oy_lo * g.st[0] - g.pd[0]) * row + (ptrdiff_t)(ox_lo * g.st[1] - g.pd[1]) * C),
                            out + (ptrdiff_t)oy_lo * orow + (ptrdiff_t)ox_lo * C, oy_hi - oy_lo, dx, dy, step, negative);
            }
            /* the others, in runs sharing their row and column masks: the edge columns of the inside
             * rows (down a column), then each edge row (the inside columns as one run) */
            for (int32_t ox = 0; ox < g.ow && oy_lo < oy_hi; ox++) {
                if (ox == ox_lo) ox = ox_hi;
                if (ox >= g.ow) break;
                const int32_t x0 = ox * g.st[1] - g.pd[1], y0 = oy_lo * g.st[0] - g.pd[0];
                G.xstep = ystep, G.ostep = orow;
                dw_edge3x3(&G, dw_at(xb, (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C), out + (ptrdiff_t)oy_lo * orow + (ptrdiff_t)ox * C,
                           oy_hi - oy_lo, dx, dy, 7u, dw_mask3(x0, g.dl[1], g.wi), negative);
            }
            for (int32_t oy = 0; oy < g.oh; oy++) {
                if (oy == oy_lo) oy = oy_hi;
                if (oy >= g.oh) break;
                const int32_t y0 = oy * g.st[0] - g.pd[0];
                const uint32_t rm = dw_mask3(y0, g.dl[0], g.h);
                G.xstep = step, G.ostep = C;
                for (int32_t ox = 0; ox < g.ow; ox++) {
                    const int32_t x0 = ox * g.st[1] - g.pd[1];
                    const int32_t n = ox == ox_lo && ox_lo < ox_hi ? ox_hi - ox_lo : 1;
                    dw_edge3x3(&G, dw_at(xb, (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C), out + (ptrdiff_t)oy * orow + (ptrdiff_t)ox * C,
                               n, dx, dy, rm, n > 1 ? 7u : dw_mask3(x0, g.dl[1], g.wi), negative);
                    ox += n - 1;
                }
            }
#endif
        }
    }
    return 1;
}

static mf_status run(const mf_call *c) {
    mf_tensor w;
    mf_call_input(c, 1, &w);
    return mf_depthwise_mve(c, (const int8_t *)w.data) ? MF_OK : run_portable(c);
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

/* dw_dsp_out from the channel's parameters read once (mf_dsp_channel_any). */
static inline int8_t dw_dsp_out_of(const dw_geom *g, const mf_dsp_channel *c, int32_t acc) {
    const mf_channel_requant *q = &g->rq;
    return mf_clamp_s8(mf_add_wrap(dw_dsp_requant(acc, c->mult, -c->n), q->out_off), q->lo, q->hi);
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

/* The four outputs of channels oc .. oc + 3: the short requantization when it serves the op (small),
 * dw_dsp_out_of otherwise. */
static inline void dw_dsp_out4(const dw_geom *g, const mf_dsp_channel ch4[4], int small, const int32_t a[4],
                               int8_t *out) {
    if (small) {
        for (int i = 0; i < 4; i++) out[i] = mf_dsp_out_s8(&g->rq, &ch4[i], a[i]);
    } else {
        for (int i = 0; i < 4; i++) out[i] = dw_dsp_out_of(g, &ch4[i], mf_add_wrap(a[i], ch4[i].bias));
    }
}

/* A channel group's output stage for the short requantization (small): each channel's bias, multiplier
 * and rounding (half = 2^(n - 1), 0 when n = 0; neg = -1 when n > 0) read once, the same bits as
 * mf_dsp_out_s8; full: the clamp is the int8 range (one SSAT). */
typedef struct {
    int32_t bias[4], mult[4], n[4], neg[4], half[4];
    int32_t out_off, lo, hi, full;
} dw_out_params;

static void dw_out_params_of(const dw_geom *g, const mf_dsp_channel ch4[4], dw_out_params *q) {
    for (int i = 0; i < 4; i++) {
        q->bias[i] = ch4[i].bias, q->mult[i] = ch4[i].mult, q->n[i] = ch4[i].n;
        q->half[i] = (int32_t)((1u << ch4[i].n) >> 1); /* n <= 31: 2^30 at most */
        q->neg[i] = ch4[i].n > 0 ? -1 : 0;
    }
    q->out_off = g->rq.out_off, q->lo = g->rq.lo, q->hi = g->rq.hi;
    q->full = g->rq.lo == -128 && g->rq.hi == 127;
}

/* mf_dsp_small_ok for the group's four channels alone (a 3x3 window: nine terms): every shift <= 0 and every
 * |bias| < 2^30 - 9 * 255 * 128. Per group, from the parameters the group reads anyway, not per op: the op-wide
 * test walked every channel's shift and bias before the first window (MobileNet 0.25's 6 x 6 x 128 layers 154.5
 * -> 152.0 k cycles each on the cortex-m4 model), and one channel's large bias no longer sends every other group
 * to the general stage. */
static inline int dw_bias_small(const dw_out_params *q) {
    /* b ^ (b >> 31) is |b|, or |b| - 1 for b < 0, and the four ORed at least their largest: one compare a group,
     * which errs only towards the general stage (a |bias| near 2^29 or more). At the edge, b = -(2^30 - 9 * 255 *
     * 128) passes: then acc >= -2^30 and 2 acc >= -2^31 still fits SMMULR's operand (the identity of
     * mf_dsp_requantize_small needs no more) */
    uint32_t a = 0;
    for (int i = 0; i < 4; i++) a |= (uint32_t)(q->bias[i] ^ (q->bias[i] >> 31));
    return a < (1u << 30) - 9u * 255u * 128u;
}
static inline int dw_group_small(const dw_out_params *q) {
    return q->n[0] >= 0 && q->n[1] >= 0 && q->n[2] >= 0 && q->n[3] >= 0 && dw_bias_small(q);
}

static inline __attribute__((always_inline)) void dw_out4_small(const dw_out_params *q, const int32_t a[4],
                                                                int8_t *out) {
    int32_t v[4];
    for (int i = 0; i < 4; i++) {
        int32_t t;
        __asm__("smmulr %0, %1, %2" : "=r"(t) : "r"(mf_wrap32((uint32_t)(a[i] + q->bias[i]) << 1)), "r"(q->mult[i]));
        v[i] = ((t + ((t >> 31) & q->neg[i]) + q->half[i]) >> q->n[i]) + q->out_off;
    }
    if (q->full) {
        for (int i = 0; i < 4; i++) out[i] = (int8_t)__ssat(v[i], 8);
    } else {
        for (int i = 0; i < 4; i++) out[i] = mf_clamp_s8(v[i], q->lo, q->hi);
    }
}

/* The taps of one 3x3 window whose bit t (ky * 3 + kx) is set in mask, for 4 channels: x at xpix +
 * (t / 3) dy + (t % 3) dx. A constant mask of 0x1ff (inside the input) leaves no test. */
static inline __attribute__((always_inline)) void dw_win9(int32_t p[4], const int8_t *xpix, int32_t dx, int32_t dy,
                                                          const int32_t *wv, int32_t off16, uint32_t mask) {
    for (int t = 0; t < 9; t++) {
        if (mask & (1u << t)) dw_dsp_tap4w(p, xpix + (t / 3) * dy + (t % 3) * dx, wv[2 * t], wv[2 * t + 1], off16);
    }
}

/* The 3-bit mask of the taps k (0..2) whose position start + k * dil lies in [0, size). */
static inline uint32_t dw_dsp_mask3(int32_t start, int32_t dil, int32_t size) {
    uint32_t m = 0;
    for (int32_t k = 0; k < 3; k++) {
        const int32_t at = start + k * dil;
        m |= (at >= 0 && at < size) ? 1u << k : 0u;
    }
    return m;
}

/* The 3x3 windows of one channel group in assembly (dw3_run): the group's table, built once (dw3_tab_of),
 * holds everything the loop reads, at fixed offsets, so the loop keeps four accumulators, the three row
 * pointers and its temporaries in registers and reloads nothing from the stack:
 * - the accumulators' start 2 (bias + in_off * sum(w)): the taps then read x without the offset, and a tap
 *   outside the input reads the zero point -in_off (its products cancel the offset's share), so the
 *   padding's windows run the same loop on a patch of nine words (dw3_edge);
 * - each tap's weights sign-extended to halfword pairs (lanes 0/2, then 1/3) and doubled: the
 *   accumulators hold 2 acc, SMMULR's operand (|acc| < 2^30: mf_dsp_small_ok), so the output stage is
 *   SMMULR, the rounding (v - (v < 0) + 2^(n-1) + out_off 2^n) >> n (mf_dsp_requantize_small with the
 *   output offset folded in; 1 <= n <= 21 keeps it inside int32), SSAT (and the clamp when the
 *   activation range is not int8's);
 * - the window step, output step, the run's first row pointers and its end.
 * Per tap: one LDR of four channels' x, two of weights, two SXTB16, four SMLAxy (10 cycles on the
 * Cortex-M4 model, against 13 for the C loop whose weights GCC spills). */
typedef struct {
    int32_t acc[4];              /*   0 */
    int32_t w[18];               /*  16: tap t at 16 + 8 t */
    int32_t mult[4];             /*  88 */
    int32_t half[4];             /* 104: 2^(n-1) + out_off * 2^n */
    int32_t n[4];                /* 120 */
    int32_t step, ostep;         /* 136, 140: bytes between windows, between outputs */
    const int8_t *row[3];        /* 144: the first window's three rows */
    const int8_t *end;           /* 156: row[0] after the last window */
    int32_t lo, hi;              /* 160, 164: the activation range */
    int8_t *out;                 /* 168: dw3_rows' next output */
    const int32_t *bend;         /* 172: dw3_rows' buffer position after the row's last pair */
    int32_t rowadv;              /* 176: dw3_rows: bytes from there to the next row's first window */
    int32_t rowstep;             /* 180: dw3_rows: bytes between rows' first windows (bend's step) */
    const int32_t *rend;         /* 184: dw3_rows: the buffer position after the last row */
    int32_t odd;                 /* 188: dw3_rows: 1 when a row ends with a single window */
} dw3_tab;
typedef char dw3_tab_layout[offsetof(dw3_tab, mult) == 88 && offsetof(dw3_tab, step) == 136 &&
                                    offsetof(dw3_tab, row) == 144 && offsetof(dw3_tab, lo) == 160 &&
                                    offsetof(dw3_tab, bend) == 172 && offsetof(dw3_tab, odd) == 188 ? 1 : -1];

/* Halfwords a (low) and b (high) of one word. */
static inline int32_t dw3_pair(int32_t a, int32_t b) {
    return mf_wrap32(((uint32_t)a & 0xFFFFu) | ((uint32_t)b << 16));
}

/* The table of channels oc .. oc + 3; 0 when the group's output stage is not this one's (a shift >= 0 or
 * < -21: dw_out4_small's path then; a bias that lets an accumulator reach 2^30: the general one). */
static int dw3_tab_ok(const dw_geom *g, const dw_out_params *q) {
    for (int i = 0; i < 4; i++) {
        if (q->n[i] < 1 || q->n[i] > 21) return 0;
    }
    if (!dw_bias_small(q)) return 0; /* the shifts are < 0: dw_group_small's other half */
    /* the zero point -in_off is an int8 (the patch's padding); the offsets fold into 2^n steps */
    if (g->in_off < -127 || g->in_off > 128 || q->out_off < -255 || q->out_off > 255) return 0;
    return q->lo >= -128 && q->hi <= 127 && q->lo <= q->hi;
}

/* Both halfwords added (SADD16). */
static inline int32_t dw3_add16(int32_t a, int32_t b) {
    int32_t r;
    __asm__("sadd16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

static int dw3_tab_of(const dw_geom *g, const dw_out_params *q, int32_t oc, dw3_tab *T) {
    const int32_t C = g->ch;
    if (!dw3_tab_ok(g, q)) return 0;
    /* one word a tap: its halfword pairs (lanes 0/2, 1/3) doubled, and their sums (|sum| <= 1152), by SADD16
     * on the pairs (not lane by lane: 350 -> 305 cycles a table on the Cortex-M4 model) */
    int32_t sum02 = 0, sum13 = 0; /* of the doubled weights (|2 sum| <= 2304) */
    const int8_t *w = g->w + oc;
#pragma GCC unroll 1
    for (int32_t *d = T->w; d != T->w + 18; d += 2, w += C) {
        const int32_t ww = mf_ld32(w), p02 = mf_sxtb16(ww), p13 = mf_sxtb16_ror8(ww);
        const int32_t d02 = dw3_add16(p02, p02), d13 = dw3_add16(p13, p13);
        d[0] = d02, d[1] = d13;
        sum02 = dw3_add16(sum02, d02), sum13 = dw3_add16(sum13, d13);
    }
    const int32_t sum[4] = {(int16_t)(uint16_t)sum02 >> 1, (int16_t)(uint16_t)sum13 >> 1, sum02 >> 17, sum13 >> 17};
    for (int i = 0; i < 4; i++) {
        /* wraps as the C path's bias + sum does; the total 2 acc fits (mf_dsp_small_ok) */
        T->acc[i] = mf_wrap32(2u * (uint32_t)mf_add_wrap(q->bias[i], g->in_off * sum[i]));
        T->mult[i] = q->mult[i];
        T->n[i] = q->n[i];
        T->half[i] = (1 << (q->n[i] - 1)) + q->out_off * (1 << q->n[i]);
    }
    T->ostep = C;
    T->lo = q->lo, T->hi = q->hi;
    return 1;
}

#if defined(__OPTIMIZE__) && defined(__thumb2__)
/* One tap: x at ADDR, weights of tap t (r0..r3: channels 0..3; r4/r5 weights, r6/r8 x). */
#define DW3_TAP(ADDR, t)                                                                                               \
    "ldr r6, " ADDR "\n\t"                                                                                            \
    "ldr r4, [%[T], #16 + 8 * " #t "]\n\t"                                                                            \
    "ldr r5, [%[T], #20 + 8 * " #t "]\n\t"                                                                            \
    "sxtb16 r8, r6\n\t"                                                                                               \
    "sxtb16 r6, r6, ror #8\n\t"                                                                                       \
    "smlabb r0, r8, r4, r0\n\t"                                                                                       \
    "smlatt r2, r8, r4, r2\n\t"                                                                                       \
    "smlabb r1, r6, r5, r1\n\t"                                                                                       \
    "smlatt r3, r6, r5, r3\n\t"
#define DW3_CLAMP(r) "cmp " r ", r4\n\tit lt\n\tmovlt " r ", r4\n\tcmp " r ", r5\n\tit gt\n\tmovgt " r ", r5\n\t"
/* The loop; CLAMP: the activation range's clamp after SSAT, or nothing (int8's range). */
#define DW3_ASM(CLAMP)                                                                                                 \
    "ldr r10, [%[T], #144]\n\t"                                                                                       \
    "ldr r11, [%[T], #148]\n\t"                                                                                       \
    "ldr r12, [%[T], #152]\n\t"                                                                                       \
    "1:\n\t"                                                                                                          \
    "ldm %[T], {r0, r1, r2, r3}\n\t"                                                                                  \
    DW3_TAP("[r10]", 0) DW3_TAP("[r10, %[D]]", 1) DW3_TAP("[r10, %[D], lsl #1]", 2)                                   \
    DW3_TAP("[r11]", 3) DW3_TAP("[r11, %[D]]", 4) DW3_TAP("[r11, %[D], lsl #1]", 5)                                   \
    DW3_TAP("[r12]", 6) DW3_TAP("[r12, %[D]]", 7) DW3_TAP("[r12, %[D], lsl #1]", 8)                                   \
    "ldr r4, [%[T], #88]\n\t"                                                                                         \
    "ldr r5, [%[T], #92]\n\t"                                                                                         \
    "ldr r6, [%[T], #96]\n\t"                                                                                         \
    "ldr r8, [%[T], #100]\n\t"                                                                                        \
    "smmulr r0, r0, r4\n\t"                                                                                           \
    "smmulr r1, r1, r5\n\t"                                                                                           \
    "smmulr r2, r2, r6\n\t"                                                                                           \
    "smmulr r3, r3, r8\n\t"                                                                                           \
    "ldr r4, [%[T], #104]\n\t"                                                                                        \
    "ldr r5, [%[T], #108]\n\t"                                                                                        \
    "ldr r6, [%[T], #112]\n\t"                                                                                        \
    "ldr r8, [%[T], #116]\n\t"                                                                                        \
    "add r0, r0, r0, asr #31\n\t"                                                                                     \
    "add r1, r1, r1, asr #31\n\t"                                                                                     \
    "add r2, r2, r2, asr #31\n\t"                                                                                     \
    "add r3, r3, r3, asr #31\n\t"                                                                                     \
    "add r0, r0, r4\n\t"                                                                                              \
    "add r1, r1, r5\n\t"                                                                                              \
    "add r2, r2, r6\n\t"                                                                                              \
    "add r3, r3, r8\n\t"                                                                                              \
    "ldr r4, [%[T], #120]\n\t"                                                                                        \
    "ldr r5, [%[T], #124]\n\t"                                                                                        \
    "ldr r6, [%[T], #128]\n\t"                                                                                        \
    "ldr r8, [%[T], #132]\n\t"                                                                                        \
    "asr r0, r0, r4\n\t"                                                                                              \
    "asr r1, r1, r5\n\t"                                                                                              \
    "asr r2, r2, r6\n\t"                                                                                              \
    "asr r3, r3, r8\n\t"                                                                                              \
    "ssat r0, #8, r0\n\t"                                                                                             \
    "ssat r1, #8, r1\n\t"                                                                                             \
    "ssat r2, #8, r2\n\t"                                                                                             \
    "ssat r3, #8, r3\n\t"                                                                                             \
    CLAMP                                                                                                             \
    "strb r0, [%[o]]\n\t"                                                                                             \
    "strb r1, [%[o], #1]\n\t"                                                                                         \
    "strb r2, [%[o], #2]\n\t"                                                                                         \
    "strb r3, [%[o], #3]\n\t"                                                                                         \
    "ldr r4, [%[T], #136]\n\t"                                                                                        \
    "ldr r5, [%[T], #140]\n\t"                                                                                        \
    "ldr r6, [%[T], #156]\n\t"                                                                                        \
    "add r10, r10, r4\n\t"                                                                                            \
    "add r11, r11, r4\n\t"                                                                                            \
    "add r12, r12, r4\n\t"                                                                                            \
    "add %[o], %[o], r5\n\t"                                                                                          \
    "cmp r10, r6\n\t"                                                                                                 \
    "bne 1b\n\t"
#endif

/* The windows of T's run (at least one): rows T->row[k], taps dx apart, windows T->step apart, outputs at
 * out, T->ostep apart. */
static __attribute__((noinline)) void dw3_run(const dw3_tab *T, int32_t dx, int8_t *out) {
#if defined(__OPTIMIZE__) && defined(__thumb2__)
    if (T->lo == -128 && T->hi == 127) {
        __asm__ volatile(DW3_ASM("")
                         : [o] "+r"(out)
                         : [T] "r"(T), [D] "r"(dx)
                         : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r10", "r11", "r12", "cc", "memory");
    } else {
        __asm__ volatile(DW3_ASM("ldr r4, [%[T], #160]\n\tldr r5, [%[T], #164]\n\t" DW3_CLAMP("r0") DW3_CLAMP("r1")
                                     DW3_CLAMP("r2") DW3_CLAMP("r3"))
                         : [o] "+r"(out)
                         : [T] "r"(T), [D] "r"(dx)
                         : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r10", "r11", "r12", "cc", "memory");
    }
#else
    const int8_t *r[3] = {T->row[0], T->row[1], T->row[2]};
    do {
        uint32_t a[4];
        for (int i = 0; i < 4; i++) a[i] = (uint32_t)T->acc[i];
        for (int t = 0; t < 9; t++) {
            const int8_t *x = r[t / 3] + (t % 3) * dx;
            for (int i = 0; i < 4; i++) {
                const int32_t wp = T->w[2 * t + (i & 1)];
                const int32_t w = (int16_t)(i & 2 ? (uint32_t)wp >> 16 : (uint32_t)wp & 0xFFFFu);
                a[i] += (uint32_t)(x[i] * w); /* wraps as SMLAxy does */
            }
        }
        for (int i = 0; i < 4; i++) {
            int32_t v;
            __asm__("smmulr %0, %1, %2" : "=r"(v) : "r"(mf_wrap32(a[i])), "r"(T->mult[i]));
            v = (v + (v >> 31) + T->half[i]) >> T->n[i];
            out[i] = mf_clamp_s8(v, T->lo, T->hi);
        }
        for (int k = 0; k < 3; k++) r[k] += T->step;
        out += T->ostep;
    } while (r[0] != T->end);
#endif
}

/* The windows [ox, ox + n) of an output row inside the input: one run. */
static inline void dw3_inside(dw3_tab *T, const int8_t *r0, int32_t dx, int32_t dy, int32_t step, int32_t n,
                              int8_t *out) {
    T->row[0] = r0, T->row[1] = r0 + dy, T->row[2] = r0 + 2 * dy;
    T->step = step;
    T->end = r0 + (ptrdiff_t)n * step;
    dw3_run(T, dx, out);
}

/* A window leaving the input: its taps (mask bit ky * 3 + kx) copied into a patch, the others the zero
 * point, then a run of one. */
static void dw3_edge(dw3_tab *T, const int8_t *xpix, int32_t dx, int32_t dy, uint32_t mask, int32_t pad,
                     int8_t *out) {
    int32_t patch[9];
    for (int t = 0; t < 9; t++) patch[t] = mask & (1u << t) ? mf_ld32(xpix + (t / 3) * dy + (t % 3) * dx) : pad;
    const int8_t *p = (const int8_t *)patch;
    T->row[0] = p, T->row[1] = p + 12, T->row[2] = p + 24;
    T->step = 4;
    T->end = p + 4;
    dw3_run(T, 4, out);
}

/* Two windows per pass (dw3_rows): the rows a run of windows reads, copied into a buffer with the
 * zero point outside the input (dw3_fill): column-major, the three rows of a column side by side
 * (word 3 j + k: row k, column j). Every tap of both windows is then at a constant offset from one
 * pointer, which leaves registers for eight accumulators: each tap's weights, loaded once, serve both
 * windows, and each channel's output constants both outputs (18 cycles per tap pair, 124 per window
 * on the Cortex-M4 model against 148 for dw3_run). Horizontal dilation 1, stride 1 or 2. */
#define DW3_NB 40 /* the buffer's columns (480 bytes of stack) */

/* Row k of the buffer at d = buf + k: n columns from src (column 0; NULL: a row outside the input), the
 * columns outside [lo, hi) the zero point's word. */
static __attribute__((noinline)) void dw3_fill(const int8_t *src, int32_t C, int32_t lo, int32_t hi, int32_t n,
                                               int32_t pad, int32_t *d) {
    int32_t j = 0;
    if (src) {
        for (; j < lo; j++, d += 3) *d = pad;
        src += (ptrdiff_t)lo * C;
        /* two columns an iteration: the loads pipeline and the loop's branch is paid once for two (9 cycles
         * a word on the Cortex-M4 model before, 5.5 after) */
        for (; j + 2 <= hi; j += 2, d += 6, src += 2 * C) {
            const int32_t a = mf_ld32(src), b = mf_ld32(src + C);
            d[0] = a, d[3] = b;
        }
        if (j < hi) *d = mf_ld32(src), j++, d += 3;
    }
    for (; j + 2 <= n; j += 2, d += 6) d[0] = pad, d[3] = pad;
    if (j < n) *d = pad;
}

#if defined(__OPTIMIZE__) && defined(__thumb2__)
/* Tap (k, kx) of windows A (accumulators r0..r3: DW3P_TAP1, below) and B (r4, r5, r6, r8; S columns on); the
 * buffer's columns P words apart (3: dw3_fill's rows side by side; DW3S_P: dw3_small's whole map). */
#define DW3P_TAP(k, kx, S, P)                                                                                          \
    DW3P_TAP1(k, kx, P)                                                                                                   \
    "ldr r12, [%[r], #4 * (" #P " * (" #kx " + " #S ") + " #k ")]\n\t"                                                 \
    "sxtb16 %[e], r12\n\t"                                                                                            \
    "sxtb16 r12, r12, ror #8\n\t"                                                                                     \
    "smlabb r4, %[e], r10, r4\n\t"                                                                                    \
    "smlatt r6, %[e], r10, r6\n\t"                                                                                    \
    "smlabb r5, r12, r11, r5\n\t"                                                                                     \
    "smlatt r8, r12, r11, r8\n\t"
#define DW3P_ROW(k, S, P) DW3P_TAP(k, 0, S, P) DW3P_TAP(k, 1, S, P) DW3P_TAP(k, 2, S, P)
/* Tap (0, 0), window B first: its accumulators start from A's start values (r0..r3, loaded by LDM)
 * instead of four MOVs (4 cycles a pass on the Cortex-M4 model). */
#define DW3P_TAP0(S, P)                                                                                                 \
    "ldr r12, [%[r], #4 * (" #P " * " #S ")]\n\t"                                                                         \
    "ldr r10, [%[T], #16]\n\t"                                                                                         \
    "ldr r11, [%[T], #20]\n\t"                                                                                         \
    "sxtb16 %[e], r12\n\t"                                                                                            \
    "sxtb16 r12, r12, ror #8\n\t"                                                                                     \
    "smlabb r4, %[e], r10, r0\n\t"                                                                                    \
    "smlatt r6, %[e], r10, r2\n\t"                                                                                    \
    "smlabb r5, r12, r11, r1\n\t"                                                                                     \
    "smlatt r8, r12, r11, r3\n\t"                                                                                     \
    "ldr r12, [%[r]]\n\t"                                                                                              \
    "sxtb16 %[e], r12\n\t"                                                                                            \
    "sxtb16 r12, r12, ror #8\n\t"                                                                                     \
    "smlabb r0, %[e], r10, r0\n\t"                                                                                    \
    "smlatt r2, %[e], r10, r2\n\t"                                                                                    \
    "smlabb r1, r12, r11, r1\n\t"                                                                                     \
    "smlatt r3, r12, r11, r3\n\t"
/* Channel i's output stage for both windows (registers a, b). */
#define DW3P_OUT(a, b, i)                                                                                              \
    "ldr r10, [%[T], #88 + 4 * " #i "]\n\t"                                                                           \
    "ldr r11, [%[T], #104 + 4 * " #i "]\n\t"                                                                          \
    "ldr r12, [%[T], #120 + 4 * " #i "]\n\t"                                                                          \
    "smmulr " a ", " a ", r10\n\t"                                                                                    \
    "smmulr " b ", " b ", r10\n\t"                                                                                    \
    "add " a ", " a ", " a ", asr #31\n\t"                                                                            \
    "add " b ", " b ", " b ", asr #31\n\t"                                                                            \
    "add " a ", " a ", r11\n\t"                                                                                       \
    "add " b ", " b ", r11\n\t"                                                                                       \
    "asr " a ", " a ", r12\n\t"                                                                                       \
    "asr " b ", " b ", r12\n\t"                                                                                       \
    "ssat " a ", #8, " a "\n\t"                                                                                       \
    "ssat " b ", #8, " b "\n\t"
#define DW3P_CLAMP(r) "cmp " r ", r10\n\tit lt\n\tmovlt " r ", r10\n\tcmp " r ", r11\n\tit gt\n\tmovgt " r ", r11\n\t"
#define DW3P_CLAMPS                                                                                                    \
    "ldr r10, [%[T], #160]\n\t"                                                                                       \
    "ldr r11, [%[T], #164]\n\t" DW3P_CLAMP("r0") DW3P_CLAMP("r1") DW3P_CLAMP("r2") DW3P_CLAMP("r3")                   \
        DW3P_CLAMP("r4") DW3P_CLAMP("r5") DW3P_CLAMP("r6") DW3P_CLAMP("r8")
#define DW3P_ASM(S, P, CLAMP)                                                                                          \
    "1:\n\t"                                                                                                          \
    "ldm %[T], {r0, r1, r2, r3}\n\t" DW3P_TAP0(S, P) DW3P_TAP(0, 1, S, P) DW3P_TAP(0, 2, S, P) DW3P_ROW(1, S, P)    \
    DW3P_ROW(2, S, P)                                                                                                  \
    DW3P_OUT("r0", "r4", 0) DW3P_OUT("r1", "r5", 1) DW3P_OUT("r2", "r6", 2) DW3P_OUT("r3", "r8", 3) CLAMP           \
    "ldr r12, [%[T], #168]\n\t"                                                                                        \
    "ldr r10, [%[T], #140]\n\t"                                                                                        \
    "ldr r11, [%[T], #172]\n\t"                                                                                        \
    "strb r0, [r12]\n\t"                                                                                               \
    "strb r1, [r12, #1]\n\t"                                                                                           \
    "strb r2, [r12, #2]\n\t"                                                                                           \
    "strb r3, [r12, #3]\n\t"                                                                                           \
    "add r12, r12, r10\n\t"                                                                                            \
    "add %[r], %[r], #8 * " #P " * " #S "\n\t"                                                                         \
    "strb r4, [r12]\n\t"                                                                                               \
    "strb r5, [r12, #1]\n\t"                                                                                           \
    "strb r6, [r12, #2]\n\t"                                                                                           \
    "strb r8, [r12, #3]\n\t"                                                                                           \
    "add r12, r12, r10\n\t"                                                                                            \
    "str r12, [%[T], #168]\n\t"                                                                                    \
    "cmp %[r], r11\n\t"                                                                                                \
    "bne 1b\n\t"
/* A row's odd last window (window A alone, r0..r3) at the pairs' end: in the same call, not a dw3_run of its own
 * (its call, table reads and row pointers per row). */
#define DW3P_TAP1(k, kx, P)                                                                                            \
    "ldr r12, [%[r], #4 * (" #P " * " #kx " + " #k ")]\n\t"                                                            \
    "ldr r10, [%[T], #16 + 8 * (3 * " #k " + " #kx ")]\n\t"                                                          \
    "ldr r11, [%[T], #20 + 8 * (3 * " #k " + " #kx ")]\n\t"                                                          \
    "sxtb16 %[e], r12\n\t"                                                                                            \
    "sxtb16 r12, r12, ror #8\n\t"                                                                                     \
    "smlabb r0, %[e], r10, r0\n\t"                                                                                    \
    "smlatt r2, %[e], r10, r2\n\t"                                                                                    \
    "smlabb r1, r12, r11, r1\n\t"                                                                                     \
    "smlatt r3, r12, r11, r3\n\t"
#define DW3P_OUT1(a, i)                                                                                                \
    "ldr r10, [%[T], #88 + 4 * " #i "]\n\t"                                                                           \
    "ldr r11, [%[T], #104 + 4 * " #i "]\n\t"                                                                          \
    "ldr r12, [%[T], #120 + 4 * " #i "]\n\t"                                                                          \
    "smmulr " a ", " a ", r10\n\t"                                                                                    \
    "add " a ", " a ", " a ", asr #31\n\t"                                                                            \
    "add " a ", " a ", r11\n\t"                                                                                       \
    "asr " a ", " a ", r12\n\t"                                                                                       \
    "ssat " a ", #8, " a "\n\t"
#define DW3P_CLAMPS1                                                                                                   \
    "ldr r10, [%[T], #160]\n\t"                                                                                       \
    "ldr r11, [%[T], #164]\n\t" DW3P_CLAMP("r0") DW3P_CLAMP("r1") DW3P_CLAMP("r2") DW3P_CLAMP("r3")
#define DW3P_ONE(P, CLAMP1)                                                                                            \
    "ldm %[T], {r0, r1, r2, r3}\n\t" DW3P_TAP1(0, 0, P) DW3P_TAP1(0, 1, P) DW3P_TAP1(0, 2, P) DW3P_TAP1(1, 0, P)      \
    DW3P_TAP1(1, 1, P) DW3P_TAP1(1, 2, P) DW3P_TAP1(2, 0, P) DW3P_TAP1(2, 1, P) DW3P_TAP1(2, 2, P)                     \
    DW3P_OUT1("r0", 0) DW3P_OUT1("r1", 1) DW3P_OUT1("r2", 2) DW3P_OUT1("r3", 3) CLAMP1                                \
    "ldr r12, [%[T], #168]\n\t"                                                                                       \
    "ldr r10, [%[T], #140]\n\t"                                                                                       \
    "strb r0, [r12]\n\t"                                                                                              \
    "strb r1, [r12, #1]\n\t"                                                                                          \
    "strb r2, [r12, #2]\n\t"                                                                                          \
    "strb r3, [r12, #3]\n\t"                                                                                          \
    "add r12, r12, r10\n\t"                                                                                           \
    "str r12, [%[T], #168]\n\t"
/* Every output row of a group in one call (dw3_rows): a row's pairs (none when it has one window), its odd last
 * window, then the buffer pointer on to the next row's first window (T->rowadv) and the pairs' end with it
 * (T->rowstep), until T->rend. The outputs run on from row to row (T->out: a row's last output is followed by the
 * next row's first, or the caller's rows are one). */
#define DW3P_ROWS(S, P, CLAMP, CLAMP1)                                                                                 \
    "0:\n\t"                                                                                                          \
    "ldr r11, [%[T], #172]\n\t"                                                                                       \
    "cmp %[r], r11\n\t"                                                                                               \
    "beq 2f\n\t" DW3P_ASM(S, P, CLAMP) "2:\n\t"                                                                        \
    "ldr r10, [%[T], #188]\n\t"                                                                                       \
    "cmp r10, #0\n\t"                                                                                                 \
    "beq 3f\n\t" DW3P_ONE(P, CLAMP1) "3:\n\t"                                                                          \
    "ldr r10, [%[T], #176]\n\t"                                                                                       \
    "ldr r11, [%[T], #172]\n\t"                                                                                       \
    "ldr r12, [%[T], #180]\n\t"                                                                                       \
    "add %[r], %[r], r10\n\t"                                                                                         \
    "add r11, r11, r12\n\t"                                                                                           \
    "ldr r10, [%[T], #184]\n\t"                                                                                       \
    "str r11, [%[T], #172]\n\t"                                                                                       \
    "cmp %[r], r10\n\t"                                                                                               \
    "bne 0b\n\t"
#define DW3P_CALL(S, P, CLAMP, CLAMP1)                                                                                 \
    __asm__ volatile(DW3P_ROWS(S, P, CLAMP, CLAMP1)                                                                    \
                     : [r] "+r"(buf), [e] "=&r"(e)                                                                     \
                     : [T] "r"(T)                                                                                      \
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r10", "r11", "r12", "cc", "memory")
#endif

/* Rows of m windows (m >= 1; windows s columns apart, columns P words apart; row 0's first window at buf, the rows
 * T->rowstep bytes apart, T->rend after the last) from T->out on, T->ostep apart, the rows' outputs one after the
 * other: dw3_rows' fields of T for them. */
static inline void dw3_rows_of(dw3_tab *T, const int32_t *buf, int32_t s, int32_t P, int32_t m, int32_t rows,
                               int32_t rowstep, int8_t *out) {
    const int32_t pairs = 2 * s * P * (m / 2); /* words from a row's first window to its odd one */
    T->out = out;
    T->bend = buf + pairs;
    T->odd = m & 1;
    T->rowstep = 4 * rowstep;
    T->rowadv = 4 * (rowstep - pairs);
    T->rend = buf + (ptrdiff_t)rows * rowstep;
}

#if !(defined(__OPTIMIZE__) && defined(__thumb2__))
/* dw3_rows without the asm: window by window through dw3_run. */
static void dw3_rows_c(dw3_tab *T, const int32_t *buf, int32_t s, int32_t P) {
    for (;;) {
        const int32_t *e = T->bend + (T->odd ? s * P : 0);
        for (; buf != e; buf += s * P) {
            const int8_t *p = (const int8_t *)buf;
            T->row[0] = p, T->row[1] = p + 4, T->row[2] = p + 8;
            T->step = 4 * s * P;
            T->end = p + 4 * s * P;
            dw3_run(T, 4 * P, T->out);
            T->out += T->ostep;
        }
        buf = (const int32_t *)(const void *)((const int8_t *)T->bend + T->rowadv);
        T->bend = (const int32_t *)(const void *)((const int8_t *)T->bend + T->rowstep);
        if (buf == T->rend) return;
    }
}
#endif

/* (The pair loop's stores: the buffer's end loaded with the output pointer and step, the buffer step between the
 * two windows' stores (no address stall): 22 -> 20 cycles a pass on the Cortex-M4 model.)
 * The rows of T (dw3_rows_of) from buf: window pairs (a pair's windows s and 2 s columns apart, pairs 2 s apart),
 * the buffer's columns 3 words apart (dw3_fill's). */
static __attribute__((noinline)) void dw3_rows(dw3_tab *T, const int32_t *buf, int32_t s) {
#if defined(__OPTIMIZE__) && defined(__thumb2__)
    int32_t e;
    const int full = T->lo == -128 && T->hi == 127;
    if (s == 1) {
        if (full) {
            DW3P_CALL(1, 3, "", "");
        } else {
            DW3P_CALL(1, 3, DW3P_CLAMPS, DW3P_CLAMPS1);
        }
    } else {
        if (full) {
            DW3P_CALL(2, 3, "", "");
        } else {
            DW3P_CALL(2, 3, DW3P_CLAMPS, DW3P_CLAMPS1);
        }
    }
    (void)e;
#else
    dw3_rows_c(T, buf, s, 3);
#endif
}

/* Small maps (MobileNet's 6 x 6 and 3 x 3 tails): the per-row work of dw3_buffered (ring refills, the
 * table's three rotations) costs there as much as the windows. dw3_small copies the group's whole padded map
 * once, column-major (column j's rows k at word j DW3S_P + k, the zero point outside the input), and runs
 * every output row's windows from it by dw3_rows' loop with the columns DW3S_P words apart (dw3s_rows):
 * one table, no rotation, no refill. Dilation 1, stride 1 or 2 across, any stride down; the map's padded
 * rows at most DW3S_P, columns at most DW3S_Q (676 bytes of stack; beyond 8 rows or 12 columns at stride 2
 * across only: MobileNet's 12 x 12 to 6 x 6, 158.2 -> 113.6 k cycles on the cortex-m4 model, 99.1 -> 71.4 k on
 * the cortex-m7; at stride 1 the larger maps keep dwp's passes, 8 windows a row or more). The cycle
 * model (VWW, cycles/MAC, before -> after): 6x6 maps 6.43 -> 4.9 on cortex-m4 (the pair loop 3.6 of them),
 * 4.16 -> 3.06 on cortex-m7; 3x3 maps 9.07 -> 8.6 and 6.29 -> 5.25 (the group's table, copy and calls over
 * 9 windows); stride 2 to 3x3 9.35 -> 9.6 on cortex-m4 (the C loop there, as the code now compiles, 9.57: the
 * same) and 6.40 -> 5.86 on cortex-m7, so stride 2 stays (no per-core switch in the build yet). */
#define DW3S_P 13
#define DW3S_Q 13

static __attribute__((noinline)) void dw3s_rows(dw3_tab *T, const int32_t *buf, int32_t s) {
#if defined(__OPTIMIZE__) && defined(__thumb2__)
    int32_t e;
    const int full = T->lo == -128 && T->hi == 127;
    if (s == 1) {
        if (full) {
            DW3P_CALL(1, 13, "", "");
        } else {
            DW3P_CALL(1, 13, DW3P_CLAMPS, DW3P_CLAMPS1);
        }
    } else {
        if (full) {
            DW3P_CALL(2, 13, "", "");
        } else {
            DW3P_CALL(2, 13, DW3P_CLAMPS, DW3P_CLAMPS1);
        }
    }
    (void)e;
#else
    dw3_rows_c(T, buf, s, DW3S_P);
#endif
}
typedef char dw3s_p_is_13[DW3S_P == 13 ? 1 : -1]; /* dw3s_rows' asm spells it */

static int dw3_small_ok(const dw_geom *g) {
    return g->dl[0] == 1 && g->dl[1] == 1 && (g->st[1] == 1 || g->st[1] == 2) && g->oh >= 1 && g->ow >= 1 &&
           g->pd[0] >= 0 && g->pd[1] >= 0 && g->st[0] >= 1 &&
           (g->oh - 1) * g->st[0] + 3 <= DW3S_P && (g->ow - 1) * g->st[1] + 3 <= DW3S_Q &&
           (g->st[1] == 2 || ((g->oh - 1) * g->st[0] + 3 <= 8 && (g->ow - 1) + 3 <= 12));
}

/* Channel groups oc, oc + 4, ... of every window of a small map (dw3_small_ok) while their output stage is
 * dw3_tab's (T: oc's table, dw3_tab_of): returns the first group not run (C & ~3 when all were). The map's
 * padding is the zero point once for all groups, each group then writes only the input's pixels: the padding
 * once per group, the group's call and its table's read-back cost 6 k cycles over MobileNet's 64 groups of
 * 3 x 3 (cortex-m4 model). */
static __attribute__((noinline)) int32_t dw3_small(const dw_geom *g, dw3_tab *T, int32_t oc) {
    const int32_t C = g->ch, s = g->st[1], rows = (g->oh - 1) * g->st[0] + 3, cols = (g->ow - 1) * s + 3;
    const int32_t pad = mf_wrap32((uint32_t)(uint8_t)(int8_t)-g->in_off * 0x01010101u);
    /* the input's columns and rows inside the buffer */
    const int32_t x_hi = g->wi < cols - g->pd[1] ? g->wi : cols - g->pd[1];
    const int32_t y_hi = g->h < rows - g->pd[0] ? g->h : rows - g->pd[0];
    const ptrdiff_t row = (ptrdiff_t)g->wi * C;
    int32_t buf[DW3S_P * DW3S_Q];
    dw3_tab Tn; /* the next groups' tables */
    for (int32_t *d = buf; d != buf + DW3S_P * cols; d += DW3S_P) { /* the zero point, the input over it */
        for (int32_t k = 0; k < rows; k++) d[k] = pad;
    }
    for (; oc + 4 <= C; oc += 4) {
        if (T == NULL) { /* the next group's table (the first is the caller's) */
            mf_dsp_channel ch4[4];
            for (int i = 0; i < 4; i++) ch4[i] = mf_dsp_channel_any(&g->rq, (uint32_t)(oc + i));
            dw_out_params q;
            dw_out_params_of(g, ch4, &q);
            if (!dw3_tab_of(g, &q, oc, &Tn)) break;
            T = &Tn;
        }
        T->ostep = C;
        for (int32_t b = 0; b < g->batch; b++) {
            const int8_t *xb = g->x + (size_t)b * (size_t)g->h * (size_t)g->wi * (size_t)C + oc;
            int8_t *out = g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C + oc;
            for (int32_t ix = 0; ix < x_hi; ix++) {
                const int8_t *src = xb + (ptrdiff_t)ix * C;
                int32_t *d = buf + (ix + g->pd[1]) * DW3S_P + g->pd[0];
                for (int32_t iy = 0; iy < y_hi; iy++, src += row) d[iy] = mf_ld32(src);
            }
            /* every row in one call (output row oy + 1 follows row oy's last output): 3 x 3 outputs, MobileNet's
             * 256 channels, 155.3 -> 131.6 k cycles on the cortex-m4 model */
            dw3_rows_of(T, buf, s, DW3S_P, g->ow, g->oh, g->st[0], out);
            dw3s_rows(T, buf, s);
        }
        T = NULL;
    }
    return oc;
}

/* The image as dw3_buffered walks it: rows along the longer output side (an image column when the
 * output is taller than wide: fewer, longer runs), in view coordinates; strides in bytes. */
typedef struct {
    int32_t h, w, oh, ow, st[2], pd[2], dl[2];
    ptrdiff_t x_row, x_col, o_row, o_col;
} dw3_view;

static void dw3_view_of(const dw_geom *g, int t, dw3_view *v) {
    const ptrdiff_t C = g->ch, x_row = (ptrdiff_t)g->wi * C, o_row = (ptrdiff_t)g->ow * C;
    v->h = t ? g->wi : g->h, v->w = t ? g->h : g->wi;
    v->oh = t ? g->ow : g->oh, v->ow = t ? g->oh : g->ow;
    for (int a = 0; a < 2; a++) v->st[a] = g->st[a ^ t], v->pd[a] = g->pd[a ^ t], v->dl[a] = g->dl[a ^ t];
    v->x_row = t ? C : x_row, v->x_col = t ? x_row : C;
    v->o_row = t ? C : o_row, v->o_col = t ? o_row : C;
}

/* dw3_buffered takes the view: horizontal dilation 1, horizontal stride 1 or 2. */
static int dw3_view_ok(const dw3_view *v) { return v->dl[1] == 1 && (v->st[1] == 1 || v->st[1] == 2); }

/* m windows from buf (the first window's column 0; windows s columns apart) into out (ostep = T->ostep
 * apart): pairs and an odd last window, one dw3_rows call. */
static void dw3_row_run(dw3_tab *T, const int32_t *buf, int32_t s, int32_t m, int8_t *out) {
    /* one row (a row step of 0: rend is buf, where the row's end steps back to), its odd window in the same call */
    dw3_rows_of(T, buf, s, 3, m, 1, 0, out);
    dw3_rows(T, buf, s);
}

/* View row iy of the group's channels (view columns [c0, c0 + n)) into buffer row (slot) q. */
static void dw3_fill_row(const dw3_view *v, const int8_t *xb, int32_t iy, int32_t c0, int32_t n, int32_t pad,
                         int32_t *buf, int32_t q) {
    const int32_t lo = c0 >= 0 ? 0 : -c0 < n ? -c0 : n, hi = v->w - c0 < n ? v->w - c0 : n;
    const int8_t *src = iy >= 0 && iy < v->h ? xb + iy * v->x_row + c0 * v->x_col : NULL;
    dw3_fill(src, (int32_t)v->x_col, lo, hi, n, pad, buf + q);
}

/* The output rows of one image (of the view) through the buffer. When a whole row fits and the window's
 * rows are consecutive, the buffer is a ring: input row iy stays in slot iy mod 3 while windows read it,
 * and the output row whose first input row is y0 runs on the table whose weight rows are rotated to
 * match (Tp[y0 mod 3]); each input row is copied once. Otherwise each output row refills all three
 * slots in runs of at most DW3_NB columns. */
static void dw3_buffered(const dw3_view *v, dw3_tab Tp[3], const int8_t *xb, int32_t pad, int8_t *out) {
    const int32_t s = v->st[1];
    const int32_t n_all = ((v->ow + 1) / 2 * 2 - 1) * s + 3; /* columns of a whole row, pairs included */
    int32_t buf[3 * DW3_NB];
    if (n_all <= DW3_NB && v->dl[0] == 1) {
        int32_t tag[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
        for (int32_t oy = 0; oy < v->oh; oy++, out += v->o_row) {
            const int32_t y0 = oy * v->st[0] - v->pd[0];
            for (int32_t k = 0; k < 3; k++) {
                const int32_t iy = y0 + k, q = ((iy % 3) + 3) % 3;
                if (tag[q] != iy) {
                    dw3_fill_row(v, xb, iy, -v->pd[1], n_all, pad, buf, q);
                    tag[q] = iy;
                }
            }
            dw3_row_run(&Tp[((y0 % 3) + 3) % 3], buf, s, v->ow, out);
        }
        return;
    }
    const int32_t per = 2 * ((DW3_NB - 3) / (2 * s)); /* windows per run, even */
    for (int32_t oy = 0; oy < v->oh; oy++, out += v->o_row) {
        const int32_t y0 = oy * v->st[0] - v->pd[0];
        for (int32_t a = 0; a < v->ow; a += per) {
            const int32_t m = v->ow - a < per ? v->ow - a : per, n = ((m + 1) / 2 * 2 - 1) * s + 3;
            for (int32_t k = 0; k < 3; k++) dw3_fill_row(v, xb, y0 + k * v->dl[0], a * s - v->pd[1], n, pad, buf, k);
            dw3_row_run(&Tp[0], buf, s, m, out + a * v->o_col);
        }
    }
}

#if defined(__OPTIMIZE__) && defined(__thumb2__)
/* Channel-planar windows (dwp): for stride 1 and no dilation along the view's rows, each channel of the
 * group gets its own ring of three input rows, sign-extended to int16 once as they are copied in
 * (dwp_fill: pre-widened ring rows, the zero point outside the input). Then two taps of a window's row are
 * one SMLAD of a halfword pair of x by a pair of weights, and one asm pass (dwp_run) computes four windows
 * of one channel from three words per row: windows 0 and 2 read aligned pairs, windows 1 and 3 the pairs
 * PKHBT makes across two words (SMLADX: the pair is swapped), the third taps SMLAxy on a halfword of the
 * same words. The channel's five weight words and the pass's accumulators, row pointer and temporaries fill
 * the core registers; its output constants come from the channel's block (dwp_ch). Per window: 10.5 cycles
 * of MACs on the Cortex-M4 model against 20 for dw3_rows' (four channels: no pairs of taps). A row of
 * windows runs in passes of four; the last windows, when the row is not a multiple of 4, are one more
 * pass that ends at the row's end (it recomputes windows of the one before: the same bytes). */
#define DWP_NC 56 /* halfwords between a channel's ring rows: the most columns a ring row holds */
#define DWP_RB 112 /* bytes between ring rows (DWP_RB = 2 DWP_NC, an immediate in the asm) */
#define DWP2_MIN 12 /* dwp2 (stride 2 along the rows) from rows of this many windows (ir.py DWP2_MIN): once dwp_put
                       * paired its bytes before widening them, MobileNet 0.25's 12-window rows (op 7, 24 x 24 x 32 to
                       * 12 x 12) run faster here than in dw3_buffered's ring: 230.0 -> 224.3 k cycles on the
                       * Cortex-M4 model, 139.6 -> 134.4 k on the M7, 223.4 -> 222.9 k on the M33 (before, rows of 16:
                       * 190,790 cycles against 198,222 for dw3_buffered); shorter rows were not measured */
/* The rings live in the op's planned scratch (mf_scratch_depthwise_conv2d_s8_dwp: kinds/scratch.py), laid
 * out for the layer: ring rows of `cols` halfwords (the view's windows + 3, rounded up to 4), DWP_NC apart
 * for one channel, so k = DWP_NC / cols channels share those rows side by side (channel i at column
 * (i % k) cols) and the next k channels start 3 DWP_NC on (i / k): KWS's 25-window rows take 2 x 28
 * columns of each 56, 672 bytes for the four channels' rings, not 1344. */
static inline int32_t dwp_cols(int32_t ow, int32_t s) { return s == 1 ? (ow + 3 + 3) & ~3 : (2 * ow + 2 + 3) & ~3; }
static inline int32_t dwp_chan(int32_t cols, int32_t i) {
    const int32_t k = (DWP_NC + 3) / (cols + 1); /* DWP_NC / cols for cols 12..56, as the formula writes it */
    return (i % k) * cols + (i / k) * 3 * DWP_NC;
}

/* One channel's pass state and constants; the asm reads them at these offsets. */
typedef struct {
    const int16_t *x;      /*  0: ring slot 0 at the pass's first window */
    int8_t *out;           /*  4: the pass's first output */
    int32_t ostep;         /*  8: bytes between outputs */
    const int16_t *end;    /* 12: x after the last pass of four */
    int32_t ones;          /* 16: single windows after the passes (0..3) */
    int32_t unused;        /* 20 */
    const int32_t *w;      /* 24: the rotation's five words (rot) */
    int32_t acc, mult, half, n, lo, hi; /* 28..48: as dw3_tab's */
    int32_t rot[3][5];     /* 52: for the output rows whose first input row is in slot p: taps 0, 1 of slots
                              0..2 (halfword pairs), tap 2 of slots 0 (low) and 1 (high), tap 2 of slot 2 */
} dwp_ch;
typedef char dwp_ch_layout[offsetof(dwp_ch, w) == 24 && offsetof(dwp_ch, acc) == 28 &&
                                    offsetof(dwp_ch, lo) == 44 && offsetof(dwp_ch, rot) == 52 ? 1 : -1];

/* The first row (slot 0: taps 0/1 in r5, tap 2 in r8's low half) of windows 0..3 from the accumulators' start
 * in r1: windows 1..3 read it before window 0 adds to it, and the pairs PKHBT makes land in their windows'
 * registers (no MOVs to copy the start). */
#define DWP_ROW0                                                                                                      \
    "ldr r10, [r0]\n\t"                                                                                               \
    "ldr r11, [r0, #4]\n\t"                                                                                           \
    "ldr r12, [r0, #8]\n\t"                                                                                           \
    "smlad r3, r11, r5, r1\n\t"                                                                                       \
    "smlabb r3, r12, r8, r3\n\t"                                                                                      \
    "pkhbt r4, r12, r11\n\t"                                                                                          \
    "smladx r4, r4, r5, r1\n\t"                                                                                       \
    "smlatb r4, r12, r8, r4\n\t"                                                                                      \
    "pkhbt r2, r11, r10\n\t"                                                                                          \
    "smladx r2, r2, r5, r1\n\t"                                                                                       \
    "smlatb r2, r11, r8, r2\n\t"                                                                                      \
    "smlad r1, r10, r5, r1\n\t"                                                                                       \
    "smlabb r1, r11, r8, r1\n\t"
/* One row (ring slot at byte OFF, taps 0/1 in register W, tap 2 in half Y (b or t) of W2) of windows 0..3:
 * r10..r12 x columns 0..5 as halfword pairs. */
#define DWP_ROW(OFF, W, W2, Y)                                                                                        \
    "ldr r10, [r0, #" #OFF "]\n\t"                                                                                    \
    "ldr r11, [r0, #" #OFF " + 4]\n\t"                                                                                \
    "ldr r12, [r0, #" #OFF " + 8]\n\t"                                                                                \
    "smlad r1, r10, " W ", r1\n\t"                                                                                     \
    "smlab" Y " r1, r11, " W2 ", r1\n\t"                                                                               \
    "pkhbt r10, r11, r10\n\t"                                                                                         \
    "smladx r2, r10, " W ", r2\n\t"                                                                                    \
    "smlat" Y " r2, r11, " W2 ", r2\n\t"                                                                               \
    "smlad r3, r11, " W ", r3\n\t"                                                                                     \
    "smlab" Y " r3, r12, " W2 ", r3\n\t"                                                                               \
    "pkhbt r11, r12, r11\n\t"                                                                                         \
    "smladx r4, r11, " W ", r4\n\t"                                                                                    \
    "smlat" Y " r4, r12, " W2 ", r4\n\t"
/* dw3_tab's output stage (SMMULR, rounding with the output offset, SSAT) of register r; r10..r12 mult, half, n. */
#define DWP_OUT(r)                                                                                                    \
    "smmulr " r ", " r ", r10\n\t"                                                                                    \
    "add " r ", " r ", " r ", asr #31\n\t"                                                                            \
    "add " r ", " r ", r11\n\t"                                                                                       \
    "asr " r ", " r ", r12\n\t"                                                                                       \
    "ssat " r ", #8, " r "\n\t"
#define DWP_CLAMP1(r) "cmp " r ", r10\n\tit lt\n\tmovlt " r ", r10\n\tcmp " r ", r11\n\tit gt\n\tmovgt " r ", r11\n\t"
#define DWP_CLAMP4                                                                                                    \
    "ldr r10, [lr, #44]\n\t"                                                                                          \
    "ldr r11, [lr, #48]\n\t" DWP_CLAMP1("r1") DWP_CLAMP1("r2") DWP_CLAMP1("r3") DWP_CLAMP1("r4")
/* One window's row (slot at byte OFF, taps 0/1 in W, tap 2 in half Y of W2) into r1: its columns 0/1 an
 * aligned pair at r0 + O (ONE0), or the pair PKHBT makes of the words at r0 (ONE1: the window one column on). */
#define DWP_ONE0(OFF, O, W, W2, Y)                                                                                     \
    "ldr r10, [r0, #" #OFF " + " #O "]\n\t"                                                                          \
    "ldr r11, [r0, #" #OFF " + " #O " + 4]\n\t"                                                                      \
    "smlad r1, r10, " W ", r1\n\t"                                                                                     \
    "smlab" Y " r1, r11, " W2 ", r1\n\t"
#define DWP_ONE1(OFF, W, W2, Y)                                                                                        \
    "ldr r10, [r0, #" #OFF "]\n\t"                                                                                    \
    "ldr r11, [r0, #" #OFF " + 4]\n\t"                                                                                \
    "pkhbt r10, r11, r10\n\t"                                                                                         \
    "smladx r1, r10, " W ", r1\n\t"                                                                                    \
    "smlat" Y " r1, r11, " W2 ", r1\n\t"
/* A pass's four outputs (r1..r4), out on, x (r0) on by ADV bytes, and the flags of x against the passes' end. The
 * first register-offset STRB right after the loads (1 cycle, not 2, on the Cortex-M4 model; the loads it reads
 * two issue groups before it, no stall on the M7's) and the end loaded with them: 19 -> 17 cycles a pass. */
#define DWP_STORE4(ADV)                                                                                                \
    "ldr r11, [lr, #8]\n\t"                                                                                           \
    "ldr r10, [lr, #4]\n\t"                                                                                           \
    "ldr r12, [lr, #12]\n\t"                                                                                          \
    "strb r2, [r10, r11]\n\t"                                                                                         \
    "strb r1, [r10]\n\t"                                                                                              \
    "add r10, r10, r11, lsl #1\n\t"                                                                                   \
    "add r0, r0, #" ADV "\n\t"                                                                                        \
    "strb r3, [r10]\n\t"                                                                                              \
    "strb r4, [r10, r11]\n\t"                                                                                         \
    "add r10, r10, r11, lsl #1\n\t"                                                                                   \
    "str r10, [lr, #4]\n\t"                                                                                           \
    "cmp r0, r12\n\t"
/* The single window's output (r1): constants, output stage, CLAMP1 (or nothing), one store, out on. */
#define DWP_ONE_OUT(CLAMP1)                                                                                            \
    "ldr r10, [lr, #32]\n\t"                                                                                          \
    "ldr r11, [lr, #36]\n\t"                                                                                          \
    "ldr r12, [lr, #40]\n\t" DWP_OUT("r1") CLAMP1                                                                     \
    "ldr r10, [lr, #4]\n\t"                                                                                           \
    "ldr r11, [lr, #8]\n\t"                                                                                           \
    "strb r1, [r10]\n\t"                                                                                              \
    "add r10, r10, r11\n\t"                                                                                           \
    "str r10, [lr, #4]\n\t"
#define DWP_CLAMP_ONE "ldr r10, [lr, #44]\n\tldr r11, [lr, #48]\n\t" DWP_CLAMP1("r1")
/* One call runs the row of all four channels of the group (blocks c[0..3], sizeof(dwp_ch) apart: the block
 * end kept on the stack), not a call per channel: the calls' saves and restores and the caller's loop cost
 * more than the end test (KWS: 20 calls a group and image row before). */
#define DWP_ENTRY                                                                                                     \
    "push {r4-r11, lr}\n\t"                                                                                           \
    "add r1, r0, #448\n\t"                                                                                            \
    "push {r1, r2}\n\t"                                                                                               \
    "mov lr, r0\n"                                                                                                    \
    "0:\n\t"
#define DWP_NEXT                                                                                                      \
    "add lr, lr, #112\n\t"                                                                                            \
    "ldr r10, [sp]\n\t"                                                                                               \
    "cmp lr, r10\n\t"                                                                                                 \
    "bne 0b\n\t"                                                                                                      \
    "add sp, sp, #8\n\t"                                                                                              \
    "pop {r4-r11, pc}\n\t"
typedef char dwp_ch_size[sizeof(dwp_ch) == 112 ? 1 : -1]; /* DWP_ENTRY/DWP_NEXT's 112 and 448 */
/* The function NAME(dwp_ch c[4]): per channel, registers r0 x, r1..r4 accumulators, r5..r9 weights, r10..r12
 * temporaries, lr the channel block. A function of its own in asm (not an asm statement): it takes every core register.
 * Passes of four windows while x != end, then c->ones single windows (the row's last 0..3: columns 0, 1, 2
 * of the next pass). */
#define DWP_FUNC(NAME, CLAMP, CLAMP_ONE)                                                                               \
    __asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t"                                                       \
            ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n"                     \
            #NAME ":\n\t"                                                                                              \
            DWP_ENTRY                                                                                                  \
            "ldr r1, [lr, #24]\n\t"                                                                                    \
            "ldr r0, [lr]\n\t"                                                                                         \
            "ldm r1, {r5-r9}\n\t"                                                                                      \
            "ldr r10, [lr, #12]\n\t"                                                                                   \
            "cmp r0, r10\n\t"                                                                                          \
            "beq 3f\n"                                                                                                 \
            "1:\n\t"                                                                                                   \
            "ldr r1, [lr, #28]\n\t" DWP_ROW0 DWP_ROW(112, "r6", "r8", "t") DWP_ROW(224, "r7", "r9", "b")               \
            "ldr r10, [lr, #32]\n\t"                                                                                   \
            "ldr r11, [lr, #36]\n\t"                                                                                   \
            "ldr r12, [lr, #40]\n\t" DWP_OUT("r1") DWP_OUT("r2") DWP_OUT("r3") DWP_OUT("r4") CLAMP                     \
            DWP_STORE4("8")                                                                                \
            "bne 1b\n"                                                                                                 \
            "3:\n\t"                                                                                                   \
            "ldr r2, [lr, #16]\n\t"                                                                                    \
            "cmp r2, #0\n\t"                                                                                           \
            "beq 2f\n\t"                                                                                               \
            "ldr r1, [lr, #28]\n\t" DWP_ONE0(0, 0, "r5", "r8", "b") DWP_ONE0(112, 0, "r6", "r8", "t")                  \
            DWP_ONE0(224, 0, "r7", "r9", "b") DWP_ONE_OUT(CLAMP_ONE)                                                   \
            "cmp r2, #1\n\t"                                                                                           \
            "beq 2f\n\t"                                                                                               \
            "ldr r1, [lr, #28]\n\t" DWP_ONE1(0, "r5", "r8", "b") DWP_ONE1(112, "r6", "r8", "t")                        \
            DWP_ONE1(224, "r7", "r9", "b") DWP_ONE_OUT(CLAMP_ONE)                                                      \
            "cmp r2, #2\n\t"                                                                                           \
            "beq 2f\n\t"                                                                                               \
            "ldr r1, [lr, #28]\n\t" DWP_ONE0(0, 4, "r5", "r8", "b") DWP_ONE0(112, 4, "r6", "r8", "t")                  \
            DWP_ONE0(224, 4, "r7", "r9", "b") DWP_ONE_OUT(CLAMP_ONE)                                                   \
            "2:\n\t" DWP_NEXT                                                                                          \
            ".size " #NAME ", . - " #NAME "\n\t"                                                                       \
            ".popsection\n")
void mf_dwp_run_int8(dwp_ch *c); /* c: the group's four blocks */
void mf_dwp_run_clamp(dwp_ch *c);
DWP_FUNC(mf_dwp_run_int8, "", "");
DWP_FUNC(mf_dwp_run_clamp, DWP_CLAMP4, DWP_CLAMP_ONE);

/* Stride 2 along the rows (dwp2): window a of a pass reads columns 2a .. 2a + 2, so its taps 0/1 are the aligned
 * pair of word a (one SMLAD) and its tap 2 the low half of word a + 1, the next window's pair: five words a row
 * for four windows, no PKHBT. Row 0 takes taps 0/1 from r5 and tap 2 from r8's low half; DWP2_ROW0 also loads
 * the accumulators' start (lr + 28). */
#if defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 8)
/* A Cortex-M7 (a double-precision FPU on an Armv7E-M core, as conv2d_s8's DSP_PW_RUNS): its dual issue pairs a
 * load with the MACs around it, and a word loaded just before its MAC stalls it, so the loads stay spread
 * between the MACs there (the runs of loads below: VWW op 3 204.0 -> 206.3 k cycles on the Cortex-M7 model).
 * Row 0: the accumulators' start in r1; windows 1..3 read it before window 0 adds to it. */
#define DWP2_ROW0                                                                                                     \
    "ldr r1, [lr, #28]\n\t"                                                                                           \
    "ldr r10, [r0, #8]\n\t"                                                                                           \
    "ldr r11, [r0, #12]\n\t"                                                                                          \
    "ldr r12, [r0, #16]\n\t"                                                                                          \
    "smlad r3, r10, r5, r1\n\t"                                                                                       \
    "smlabb r3, r11, r8, r3\n\t"                                                                                      \
    "smlad r4, r11, r5, r1\n\t"                                                                                       \
    "smlabb r4, r12, r8, r4\n\t"                                                                                      \
    "ldr r11, [r0, #4]\n\t"                                                                                           \
    "ldr r12, [r0]\n\t"                                                                                               \
    "smlad r2, r11, r5, r1\n\t"                                                                                       \
    "smlabb r2, r10, r8, r2\n\t"                                                                                      \
    "smlad r1, r12, r5, r1\n\t"                                                                                       \
    "smlabb r1, r11, r8, r1\n\t"
#define DWP2_ROW(OFF, W, W2, Y)                                                                                       \
    "ldr r10, [r0, #" #OFF "]\n\t"                                                                                    \
    "ldr r11, [r0, #" #OFF " + 4]\n\t"                                                                                \
    "ldr r12, [r0, #" #OFF " + 8]\n\t"                                                                                \
    "smlad r1, r10, " W ", r1\n\t"                                                                                     \
    "smlab" Y " r1, r11, " W2 ", r1\n\t"                                                                               \
    "ldr r10, [r0, #" #OFF " + 12]\n\t"                                                                               \
    "smlad r2, r11, " W ", r2\n\t"                                                                                     \
    "smlab" Y " r2, r12, " W2 ", r2\n\t"                                                                               \
    "ldr r11, [r0, #" #OFF " + 16]\n\t"                                                                               \
    "smlad r3, r12, " W ", r3\n\t"                                                                                     \
    "smlab" Y " r3, r10, " W2 ", r3\n\t"                                                                               \
    "smlad r4, r10, " W ", r4\n\t"                                                                                     \
    "smlab" Y " r4, r11, " W2 ", r4\n\t"
#else
/* Row 0 on the Cortex-M4 (and M33): the accumulators' start in r11 and the five words in r1..r4, r10, six loads
 * in a row (pipelined on the Cortex-M4: one cycle each after the first), each window's SMLAD writing the register
 * of the word it reads first (window a + 1 has read word a + 1 by then). */
#define DWP2_ROW0                                                                                                     \
    "ldr r11, [lr, #28]\n\t"                                                                                          \
    "ldr r1, [r0]\n\t"                                                                                                \
    "ldr r2, [r0, #4]\n\t"                                                                                            \
    "ldr r3, [r0, #8]\n\t"                                                                                            \
    "ldr r4, [r0, #12]\n\t"                                                                                           \
    "ldr r10, [r0, #16]\n\t"                                                                                          \
    "smlad r1, r1, r5, r11\n\t"                                                                                       \
    "smlabb r1, r2, r8, r1\n\t"                                                                                       \
    "smlad r2, r2, r5, r11\n\t"                                                                                       \
    "smlabb r2, r3, r8, r2\n\t"                                                                                       \
    "smlad r3, r3, r5, r11\n\t"                                                                                       \
    "smlabb r3, r4, r8, r3\n\t"                                                                                       \
    "smlad r4, r4, r5, r11\n\t"                                                                                       \
    "smlabb r4, r10, r8, r4\n\t"
/* One row (slot at byte OFF, taps 0/1 in W, tap 2 in half Y of W2) of windows 0..3: words 0..2, windows 0 and 1,
 * then words 3 and 4 into the registers of words 0 and 1 (two loads in a row, not one between MACs: 16 -> 15
 * cycles a row on the Cortex-M4 model). */
#define DWP2_ROW(OFF, W, W2, Y)                                                                                       \
    "ldr r10, [r0, #" #OFF "]\n\t"                                                                                    \
    "ldr r11, [r0, #" #OFF " + 4]\n\t"                                                                                \
    "ldr r12, [r0, #" #OFF " + 8]\n\t"                                                                                \
    "smlad r1, r10, " W ", r1\n\t"                                                                                     \
    "smlab" Y " r1, r11, " W2 ", r1\n\t"                                                                               \
    "smlad r2, r11, " W ", r2\n\t"                                                                                     \
    "smlab" Y " r2, r12, " W2 ", r2\n\t"                                                                               \
    "ldr r10, [r0, #" #OFF " + 12]\n\t"                                                                               \
    "ldr r11, [r0, #" #OFF " + 16]\n\t"                                                                               \
    "smlad r3, r12, " W ", r3\n\t"                                                                                     \
    "smlab" Y " r3, r10, " W2 ", r3\n\t"                                                                               \
    "smlad r4, r10, " W ", r4\n\t"                                                                                     \
    "smlab" Y " r4, r11, " W2 ", r4\n\t"
#endif
/* dwp2's function NAME(dwp_ch *c): as DWP_FUNC, passes of four windows 16 bytes on; single window k (the row's
 * last 0..3) at word k of the pass after. */
#define DWP2_FUNC(NAME, CLAMP, CLAMP_ONE)                                                                              \
    __asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t"                                                       \
            ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n"                     \
            #NAME ":\n\t"                                                                                              \
            DWP_ENTRY                                                                                                  \
            "ldr r1, [lr, #24]\n\t"                                                                                    \
            "ldr r0, [lr]\n\t"                                                                                         \
            "ldm r1, {r5-r9}\n\t"                                                                                      \
            "ldr r10, [lr, #12]\n\t"                                                                                   \
            "cmp r0, r10\n\t"                                                                                          \
            "beq 3f\n"                                                                                                 \
            "1:\n\t"                                                                                                   \
            DWP2_ROW0 DWP2_ROW(112, "r6", "r8", "t") DWP2_ROW(224, "r7", "r9", "b")            \
            "ldr r10, [lr, #32]\n\t"                                                                                   \
            "ldr r11, [lr, #36]\n\t"                                                                                   \
            "ldr r12, [lr, #40]\n\t" DWP_OUT("r1") DWP_OUT("r2") DWP_OUT("r3") DWP_OUT("r4") CLAMP                     \
            DWP_STORE4("16")                                                                                \
            "bne 1b\n"                                                                                                 \
            "3:\n\t"                                                                                                   \
            "ldr r2, [lr, #16]\n\t"                                                                                    \
            "cmp r2, #0\n\t"                                                                                           \
            "beq 2f\n\t"                                                                                               \
            "ldr r1, [lr, #28]\n\t" DWP_ONE0(0, 0, "r5", "r8", "b") DWP_ONE0(112, 0, "r6", "r8", "t")                  \
            DWP_ONE0(224, 0, "r7", "r9", "b") DWP_ONE_OUT(CLAMP_ONE)                                                   \
            "cmp r2, #1\n\t"                                                                                           \
            "beq 2f\n\t"                                                                                               \
            "ldr r1, [lr, #28]\n\t" DWP_ONE0(0, 4, "r5", "r8", "b") DWP_ONE0(112, 4, "r6", "r8", "t")                  \
            DWP_ONE0(224, 4, "r7", "r9", "b") DWP_ONE_OUT(CLAMP_ONE)                                                   \
            "cmp r2, #2\n\t"                                                                                           \
            "beq 2f\n\t"                                                                                               \
            "ldr r1, [lr, #28]\n\t" DWP_ONE0(0, 8, "r5", "r8", "b") DWP_ONE0(112, 8, "r6", "r8", "t")                  \
            DWP_ONE0(224, 8, "r7", "r9", "b") DWP_ONE_OUT(CLAMP_ONE)                                                   \
            "2:\n\t" DWP_NEXT                                                                                          \
            ".size " #NAME ", . - " #NAME "\n\t"                                                                       \
            ".popsection\n")
void mf_dwp2_run_int8(dwp_ch *c); /* c: the group's four blocks */
void mf_dwp2_run_clamp(dwp_ch *c);
DWP2_FUNC(mf_dwp2_run_int8, "", "");
DWP2_FUNC(mf_dwp2_run_clamp, DWP_CLAMP4, DWP_CLAMP_ONE);

/* The four channels' pass blocks of group oc (weights of view tap (k, j): the image's (j, k) when transposed,
 * doubled as dw3_tab's; T: the group's table). */
static void dwp_blocks(const dw_geom *g, const dw3_tab *T, int t, int32_t oc, dwp_ch ch[4]) {
    const int32_t C = g->ch;
    /* a word of four channels a tap, sign-extended to halfword pairs (channels 0/2: e, 1/3: o) and doubled
     * (SADD16), each rotation's words paired by PKHBT/PKHTB: not byte by byte (about 690 -> 260 cycles a group on
     * the Cortex-M4 model; MobileNet 0.25 and DS-CNN run it for each group of their dwp layers) */
    int32_t e[3][3], o[3][3];
    for (int32_t k = 0; k < 3; k++) {
        for (int32_t j = 0; j < 3; j++) {
            const int32_t ww = mf_ld32(g->w + (t ? 3 * j + k : 3 * k + j) * C + oc);
            const int32_t pe = mf_sxtb16(ww), po = mf_sxtb16_ror8(ww);
            e[k][j] = dw3_add16(pe, pe), o[k][j] = dw3_add16(po, po);
        }
    }
    for (int i = 0; i < 4; i++) {
        dwp_ch *c = &ch[i];
        c->acc = T->acc[i], c->mult = T->mult[i], c->half = T->half[i], c->n = T->n[i];
        c->lo = T->lo, c->hi = T->hi;
    }
    for (int32_t p = 0; p < 3; p++) { /* slot q holds the window's row (q - p) mod 3 */
        const int32_t k0 = (3 - p) % 3, k1 = (4 - p) % 3, k2 = (5 - p) % 3;
        const int32_t a[5][2] = {{k0, 0}, {k1, 0}, {k2, 0}, {k0, 2}, {k2, 2}}; /* the words' low taps */
        const int32_t b[5][2] = {{k0, 1}, {k1, 1}, {k2, 1}, {k1, 2}, {-1, 0}}; /* and high (-1: none) */
        for (int32_t r = 0; r < 5; r++) {
            const int32_t ea = e[a[r][0]][a[r][1]], oa = o[a[r][0]][a[r][1]];
            const int32_t eb = b[r][0] < 0 ? 0 : e[b[r][0]][b[r][1]], ob = b[r][0] < 0 ? 0 : o[b[r][0]][b[r][1]];
            ch[0].rot[p][r] = mf_pkhbt(ea, eb), ch[2].rot[p][r] = mf_pkhtb(ea, eb);
            ch[1].rot[p][r] = mf_pkhbt(oa, ob), ch[3].rot[p][r] = mf_pkhtb(oa, ob);
        }
    }
}

/* Columns u, v (4 channels each) as the four channels' halfword pairs at d (channel i at byte o_i of it): the
 * bytes paired first (channels 0/1 of u and v in one word, 2/3 in another: PKHBT, PKHTB), then sign-extended
 * (SXTB16 and its ROR #8 give channel 0's or 1's pair): six operations, not eight (the rings' fill, e.g.
 * MobileNet's 48 x 48 x 16 at stride 2: 386.7 -> 372.5 k cycles for the op on the cortex-m4 model). */
static inline __attribute__((always_inline)) void dwp_put(uint8_t *d, int32_t o1, int32_t o2, int32_t o3, int32_t u,
                                                          int32_t v) {
    const int32_t lo = mf_pkhbt(u, v), hi = mf_pkhtb(u, v); /* bytes u0 u1 v0 v1, u2 u3 v2 v3 */
    mf_st32(d, mf_sxtb16(lo));
    mf_st32(d + o1, mf_sxtb16_ror8(lo));
    mf_st32(d + o2, mf_sxtb16(hi));
    mf_st32(d + o3, mf_sxtb16_ror8(hi));
}

/* Where a ring row's n columns (even; column 0 at view column c0 <= 0) meet a view row of w columns: pairs of
 * columns (2 k, 2 k + 1) of the zero point alone (z0 of them first, z1 last), one straddling the input's left or
 * right edge (left, right: 0 or 1) and m inside from view column a0. The same for every row of the view: planned
 * once (dwp_plan_of), so that a row's fill is straight loops (dwp_fill), with none of the per-row edge arithmetic
 * (MobileNet 0.25 op 9, 12 x 12 x 64: 334.7 -> 329.8 k cycles on the Cortex-M4 model; DS-CNN 270.3 -> 268.6 k). */
typedef struct {
    int32_t z0, left, m, right, z1, a0;
} dwp_plan;

static void dwp_plan_of(int32_t c0, int32_t w, int32_t n, dwp_plan *p) {
    const int32_t pairs = n / 2, inside = (w - c0) / 2; /* pairs k < inside end before view column w */
    int32_t k = -c0 / 2 < pairs ? -c0 / 2 : pairs;       /* pairs k < -c0 / 2 end before view column 0 */
    p->z0 = k, p->left = p->m = p->right = 0;
    if (k < pairs && c0 + 2 * k < 0) p->left = 1, k++; /* column 2 k + 1 is view column 0 < w */
    p->a0 = c0 + 2 * k;
    if (k < inside) p->m = (inside < pairs ? inside : pairs) - k, k += p->m;
    if (k < pairs && c0 + 2 * k < w) p->right = 1, k++;
    p->z1 = pairs - k;
}

/* A ring row's fill from its first straddling or inside column pair on (the plan's z0 and z1 pairs of the zero point
 * alone stay in C: none in MobileNet's or DS-CNN's rows): the fixed part, planned once per image (dwp_fills), and
 * the row. */
typedef struct {
    int32_t o1, o2, o3;  /*  0: the channels' ring offsets (bytes) from channel 0's */
    int32_t m;           /* 12: inside column pairs */
    int32_t xcol;        /* 16: bytes between view columns */
    int32_t s_off;       /* 20: bytes from the view row to the first column read (the left edge's, if any) */
    int32_t left, right; /* 24, 28: a pair straddling the input's left (right) edge (0 or 1) */
    int32_t zp;          /* 32: the zero point (4 bytes) */
} dwp_fills;
typedef char dwp_fills_layout[offsetof(dwp_fills, s_off) == 20 && offsetof(dwp_fills, zp) == 32 ? 1 : -1];

/* mf_dwp_fill_in(s, d, f) widens the row at s (a view row) into the four channels' rings at d, d + o1, d + o2,
 * d + o3 (word-aligned): the left edge's pair (the zero point, then column a0 - 1), f->m inside pairs, the right
 * edge's pair. In asm, the edges too (in C, around the call, they cost about 50 cycles a row more on the
 * Cortex-M4 model: the call's arguments and the pointers rebuilt, the edges' loads and multiplies); the inside
 * pairs through one pointer per channel's ring (post-indexed stores, 1 cycle each on the Cortex-M4 model; register
 * offsets d + o_i, 2: 22 -> 18 cycles a column pair, MobileNet 0.25's dwp fills 479 -> 441 k cycles), two
 * pairs an iteration: the loop's compare and branch paid once for both, each pair's loads issued before
 * the first PKHBT reads them (C compiled to one pair an iteration with a load-use stall; unrolled in C,
 * dwp_image's registers spilled: MobileNet 0.25's dwp ops 12.46 -> 12.50 M cycles in total). */
__asm__(".pushsection .text.mf_dwp_fill_in,\"ax\",%progbits\n\t"
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type mf_dwp_fill_in, %function\n\t.thumb_func\n"
        "mf_dwp_fill_in:\n\t"
        "push {r2, r4-r11, lr}\n\t" /* f at [sp]: the right edge's reads after the loop took r3 */
        "mov r3, r2\n\t"
        "mov r2, r1\n\t"
        "ldm r3!, {r4-r7}\n\t"
        "ldm r3, {r1, r8-r11}\n\t" /* xcol, s_off, left, right, zp */
        "add r4, r2, r4\n\t"
        "add r5, r2, r5\n\t"
        "add r6, r2, r6\n\t"
        "add r0, r0, r8\n\t"
        "cmp r9, #0\n\t"
        "beq 1f\n\t"
        "ldr r8, [r0]\n\t" /* the left edge: u the zero point, v column a0 - 1 */
        "add r0, r0, r1\n\t"
        "pkhbt r12, r11, r8, lsl #16\n\t"
        "pkhtb r8, r8, r11, asr #16\n\t"
        "sxtb16 r9, r12\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "str r9, [r2], #4\n\t"
        "str r12, [r4], #4\n\t"
        "sxtb16 r9, r8\n\t"
        "sxtb16 r8, r8, ror #8\n\t"
        "str r9, [r5], #4\n\t"
        "str r8, [r6], #4\n"
        "1:\n\t"
        "tst r7, #1\n\t"
        "beq 1f\n\t"
        "ldr r8, [r0]\n\t"
        "ldr r9, [r0, r1]\n\t"
        "add r0, r0, r1, lsl #1\n\t"
        "pkhbt r10, r8, r9, lsl #16\n\t"
        "pkhtb r9, r9, r8, asr #16\n\t"
        "sxtb16 r8, r10\n\t"
        "sxtb16 r10, r10, ror #8\n\t"
        "str r8, [r2], #4\n\t"
        "str r10, [r4], #4\n\t"
        "sxtb16 r8, r9\n\t"
        "sxtb16 r9, r9, ror #8\n\t"
        "str r8, [r5], #4\n\t"
        "str r9, [r6], #4\n"
        "1:\n\t"
        "lsrs r7, r7, #1\n\t"
        "beq 3f\n\t"
        "add r3, r1, r1, lsl #1\n"
        "2:\n\t"
        "ldr r8, [r0]\n\t"
        "ldr r9, [r0, r1]\n\t"
        "ldr r11, [r0, r1, lsl #1]\n\t"
        "ldr r12, [r0, r3]\n\t"
        "add r0, r0, r1, lsl #2\n\t"
        "pkhbt r10, r8, r9, lsl #16\n\t"
        "pkhtb r9, r9, r8, asr #16\n\t"
        "pkhbt lr, r11, r12, lsl #16\n\t"
        "pkhtb r12, r12, r11, asr #16\n\t"
        "sxtb16 r8, r10\n\t"
        "sxtb16 r10, r10, ror #8\n\t"
        "sxtb16 r11, lr\n\t"
        "sxtb16 lr, lr, ror #8\n\t"
        "str r8, [r2], #4\n\t"
        "str r11, [r2], #4\n\t"
        "str r10, [r4], #4\n\t"
        "str lr, [r4], #4\n\t"
        "sxtb16 r8, r9\n\t"
        "sxtb16 r9, r9, ror #8\n\t"
        "sxtb16 r11, r12\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "str r8, [r5], #4\n\t"
        "str r11, [r5], #4\n\t"
        "str r9, [r6], #4\n\t"
        "str r12, [r6], #4\n\t"
        "subs r7, r7, #1\n\t"
        "bne 2b\n"
        "3:\n\t"
        "ldr r3, [sp]\n\t"
        "ldr r10, [r3, #28]\n\t"
        "cmp r10, #0\n\t"
        "beq 4f\n\t"
        "ldr r11, [r3, #32]\n\t"
        "ldr r8, [r0]\n\t" /* the right edge: u column a0 + 2 m, v the zero point */
        "pkhbt r12, r8, r11, lsl #16\n\t"
        "pkhtb r8, r11, r8, asr #16\n\t"
        "sxtb16 r9, r12\n\t"
        "sxtb16 r12, r12, ror #8\n\t"
        "str r9, [r2]\n\t"
        "str r12, [r4]\n\t"
        "sxtb16 r9, r8\n\t"
        "sxtb16 r8, r8, ror #8\n\t"
        "str r9, [r5]\n\t"
        "str r8, [r6]\n"
        "4:\n\t"
        "pop {r2, r4-r11, pc}\n\t"
        ".size mf_dwp_fill_in, . - mf_dwp_fill_in\n\t"
        ".popsection\n");
void mf_dwp_fill_in(const int8_t *s, uint8_t *d, const dwp_fills *f);

/* Slot d of the four channels' rings (channel i at byte o_i of it, o_0 = 0: dwp_chan): the plan's columns of
 * view row src (NULL: a row outside the input), the zero point zp (4 bytes) outside the input; f: the plan's
 * edges and inside pairs for mf_dwp_fill_in. */
static inline __attribute__((always_inline)) void dwp_fill(const int8_t *src, const dwp_plan *p, const dwp_fills *f,
                                                           int32_t zp, int16_t *d16, int32_t o1, int32_t o2,
                                                           int32_t o3) {
    uint8_t *d = (uint8_t *)d16;
    if (src == NULL) {
        for (const uint8_t *e = d + 4 * (p->z0 + p->left + p->m + p->right + p->z1); d != e; d += 4) {
            dwp_put(d, o1, o2, o3, zp, zp);
        }
        return;
    }
    for (const uint8_t *e = d + 4 * p->z0; d != e; d += 4) dwp_put(d, o1, o2, o3, zp, zp);
    mf_dwp_fill_in(src, d, f);
    d += 4 * (p->left + p->m + p->right);
    for (const uint8_t *e = d + 4 * p->z1; d != e; d += 4) dwp_put(d, o1, o2, o3, zp, zp);
}

/* dwp takes the view: stride 1 and no dilation along its rows, no dilation across, a row of 8 to
 * DWP_NC - 3 windows (the ring holds them and the columns the last passes read). Shorter rows stay with
 * dw3_rows: a call per channel and row and the single windows cost more than the passes save there
 * (MobileNet's 6 x 6 layers: 267,223 cycles on the Cortex-M4 model by dw3_rows' pairs, 302,423 by dwp). */
static inline __attribute__((always_inline)) int dwp_ok(const dw3_view *v) {
    if (v->dl[1] != 1 || v->dl[0] != 1) return 0;
    if (v->st[1] == 2) return v->ow >= DWP2_MIN && 2 * v->ow + 2 <= DWP_NC; /* dwp2: 2 ow + 2 columns */
    return v->st[1] == 1 && v->ow >= 8 && v->ow + 3 <= DWP_NC;
}

/* The scratch bytes dwp's rings take for the view (a multiple of 4). */
static inline __attribute__((always_inline)) uint32_t dwp_ring_bytes(const dw3_view *v) {
    return mf_scratch_depthwise_conv2d_s8_dwp((uint32_t)dwp_cols(v->ow, v->st[1]));
}

/* Every output row of one image (of the view) for the group's four channels (ch: dwp_blocks); ring: the
 * scratch, word-aligned (the asm reads it by words), dwp_ring_bytes(v) of it. */
static __attribute__((noinline)) void dwp_image(const dw3_view *v, dwp_ch ch[4], const int8_t *xb, int32_t zp,
                                                int8_t *out, int16_t *ring) {
    const int32_t s2 = v->st[1] == 2, ow = v->ow, cols = dwp_cols(ow, v->st[1]);
    const int32_t n = s2 ? 2 * ow + 2 : (ow + 3) & ~1; /* the columns the windows read (even) */
    const int32_t o1 = 2 * dwp_chan(cols, 1), o2 = 2 * dwp_chan(cols, 2), o3 = 2 * dwp_chan(cols, 3); /* bytes */
    int32_t tag[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
    dwp_plan plan;
    dwp_plan_of(-v->pd[1], v->w, n, &plan);
    const dwp_fills f = {o1, o2, o3, plan.m, (int32_t)v->x_col, (plan.a0 - plan.left) * (int32_t)v->x_col,
                         plan.left, plan.right, zp};
    const int full = ch[0].lo == -128 && ch[0].hi == 127;
    void (*const run)(dwp_ch *) = s2 ? full ? mf_dwp2_run_int8 : mf_dwp2_run_clamp
                                     : full ? mf_dwp_run_int8 : mf_dwp_run_clamp; /* chosen once */
    for (int i = 0; i < 4; i++) { /* the same every row (the asm moves only out on) */
        dwp_ch *c = &ch[i];
        const int16_t *x = ring + dwp_chan(cols, i);
        c->x = x, c->ostep = (int32_t)v->o_col, c->end = x + (s2 ? 8 : 4) * (ow / 4), c->ones = ow % 4;
    }
    /* the slot of row y0 (y0 mod 3) kept by steps, not divisions: three of them a row cost more than a pass */
    const int32_t dp = v->st[0] % 3;
    int32_t p = (3 - v->pd[0] % 3) % 3; /* pd[0] >= 0: the slot of row -pd[0] */
    for (int32_t oy = 0, y0 = -v->pd[0]; oy < v->oh; oy++, out += v->o_row, y0 += v->st[0]) {
        for (int32_t k = 0, q = p; k < 3; k++, q = q == 2 ? 0 : q + 1) {
            const int32_t iy = y0 + k;
            if (tag[q] != iy) {
                const int8_t *src = iy >= 0 && iy < v->h ? xb + iy * v->x_row : NULL;
                dwp_fill(src, &plan, &f, zp, ring + q * DWP_NC, o1, o2, o3);
                tag[q] = iy;
            }
        }
        for (int i = 0; i < 4; i++) ch[i].out = out + i, ch[i].w = ch[i].rot[p];
        run(ch); /* the four channels' rows */
        p += dp, p -= p >= 3 ? 3 : 0;
    }
}

/* Small maps, stride 1 (dwv: MobileNet's 6 x 6 x 128 and 3 x 3 x 256 layers): each channel of the group gets
 * its whole padded map, sign-extended to int16, with two padded rows in one word: word (r, x) of a channel
 * holds rows 2 r (low half) and 2 r + 1 (high) of column x (dwp_put fills the four channels at once, the zero
 * point outside the input). A window whose top row is even then takes a column's rows 0/1 as one SMLAD and row
 * 2 as one SMLABT, and the window one row down the same two words by SMLATB and SMLAD: one pass computes the
 * 2 x 2 windows of output rows 2 k, 2 k + 1 and columns x, x + 1 from eight words, with the channel's six weight
 * words {w0j, w1j}, {w1j, w2j} in registers for the whole row (4 channels a call, no per-row refill, no
 * rotation). Per pass on the Cortex-M4 model: 24 MACs, 8 loads, the output stage of four windows. */
#define DWV_R 4  /* pair rows of a channel's map */
#define DWV_Q 8  /* words between pair rows (DWV_PITCH bytes, an immediate in the asm) */
#define DWV_PITCH "32"

/* One channel's constants and row state; the asm reads them at these offsets. */
typedef struct {
    const int32_t *x;  /*  0: the row pair's map position (pair row k, column 0) */
    int8_t *out;       /*  4: the row pair's first output (row 2 k, column 0) */
    int32_t ostep;     /*  8: bytes between outputs */
    int32_t xlast;     /* 12: 4 (ow - 1) */
    int32_t w[6];      /* 16: {w0j, w1j} j = 0..2, then {w1j, w2j} (doubled, as dw3_tab's) */
    int32_t acc, mult, half, n, lo, hi; /* 40..60: as dw3_tab's */
    int8_t *oa, *ob;   /* 64, 68: the pass's outputs (row 2 k; row 2 k + 1, or row 2 k again) */
    const int32_t *xend; /* 72: x + 4 (ow - 1) */
    int32_t orow2;     /* 76: bytes between row pairs' outputs */
    int32_t pairs;     /* 80: row pairs left */
    int32_t oblast;    /* 84: ob - oa of the last pair (0 when the rows are odd) */
    int32_t orow;      /* 88: ob - oa of the others */
} dwv_ch;
typedef char dwv_ch_layout[offsetof(dwv_ch, w) == 16 && offsetof(dwv_ch, acc) == 40 && offsetof(dwv_ch, oa) == 64 &&
                                   offsetof(dwv_ch, orow) == 88 && sizeof(dwv_ch) == 92 ? 1 : -1];

/* The column's words: P0 (rows 0/1) in r10, P2 (rows 2/3) in r11. */
#define DWV_LD(O) "ldr r10, [r0, #" #O "]\n\tldr r11, [r0, #" DWV_PITCH " + " #O "]\n\t"
/* Window a (row 2k) and b (row 2k + 1) of column weights j: W01 in WA, W12 in WB; FROM: the accumulators' input. */
#define DWV_MAC(A, B, WA, WB, FA, FB)                                                                                   \
    "smlad " A ", r10, " WA ", " FA "\n\t"                                                                            \
    "smlatb " B ", r10, " WA ", " FB "\n\t"                                                                           \
    "smlabt " A ", r11, " WB ", " A "\n\t"                                                                            \
    "smlad " B ", r11, " WB ", " B "\n\t"
/* a pass's four windows (2 x 2) from the channel's weights in r3..r8: sums in r1, r2, r9, r12 */
#define DWV_2X2                                                                                                        \
    DWV_LD(0) DWV_MAC("r1", "r2", "r3", "r6", "r12", "r12")                                                            \
    DWV_LD(4) DWV_MAC("r1", "r2", "r4", "r7", "r1", "r2") DWV_MAC("r9", "r12", "r3", "r6", "r12", "r12")               \
    DWV_LD(8) DWV_MAC("r1", "r2", "r5", "r8", "r1", "r2") DWV_MAC("r9", "r12", "r4", "r7", "r9", "r12")                \
    DWV_LD(12) DWV_MAC("r9", "r12", "r5", "r8", "r9", "r12")
#define DWV_OUT4                                                                                                       \
    "ldr r10, [lr, #44]\n\t"                                                                                          \
    "ldr r11, [lr, #48]\n\t"                                                                                          \
    "smmulr r1, r1, r10\n\t"                                                                                          \
    "smmulr r2, r2, r10\n\t"                                                                                          \
    "smmulr r9, r9, r10\n\t"                                                                                          \
    "smmulr r12, r12, r10\n\t"                                                                                        \
    "ldr r10, [lr, #52]\n\t"                                                                                          \
    "add r1, r1, r1, asr #31\n\t"                                                                                     \
    "add r2, r2, r2, asr #31\n\t"                                                                                     \
    "add r9, r9, r9, asr #31\n\t"                                                                                     \
    "add r12, r12, r12, asr #31\n\t"                                                                                  \
    "add r1, r1, r11\n\t"                                                                                             \
    "add r2, r2, r11\n\t"                                                                                             \
    "add r9, r9, r11\n\t"                                                                                             \
    "add r12, r12, r11\n\t"                                                                                           \
    "asr r1, r1, r10\n\t"                                                                                             \
    "asr r2, r2, r10\n\t"                                                                                             \
    "asr r9, r9, r10\n\t"                                                                                             \
    "asr r12, r12, r10\n\t"                                                                                           \
    "ssat r1, #8, r1\n\t"                                                                                             \
    "ssat r2, #8, r2\n\t"                                                                                             \
    "ssat r9, #8, r9\n\t"                                                                                             \
    "ssat r12, #8, r12\n\t"
#define DWV_CLAMP4                                                                                                     \
    "ldr r10, [lr, #56]\n\t"                                                                                          \
    "ldr r11, [lr, #60]\n\t" DWP_CLAMP1("r1") DWP_CLAMP1("r2") DWP_CLAMP1("r9") DWP_CLAMP1("r12")
/* (A pass's stores: row 2 k + 1's pointer, then row 2 k's and the row's end loaded once the first two outputs are
 * stored, so that a register-offset STRB follows a load: 22 -> 20 cycles a pass on the Cortex-M4 model.)
 * NAME(dwv_ch c[4]): every row pair of the four channels (c->pairs of them from c->x, c->out); the outputs of
 * row 2 k + 1 are c->orow bytes below row 2 k's, c->oblast for the last pair (0 for an odd last row: row
 * 2 k + 1's bytes are stored first, then row 2 k's over them). Registers: r0 x, r1/r2 windows (0, a/b), r9/r12 windows (1, a/b), r3..r8
 * weights, r10/r11 the column, lr the channel block. Passes of two columns while x < xend; a row of odd width
 * ends with a pass one column back (its first window again: the same bytes). */
#define DWV_FUNC(NAME, CLAMP)                                                                                          \
    __asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t"                                                       \
            ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n"                     \
            #NAME ":\n\t"                                                                                              \
            "push {r4-r11, lr}\n\t"                                                                                    \
            "add r12, r0, #368\n\t"                                                                                    \
            "push {r0, r12}\n\t"                                                                                       \
            "mov lr, r0\n"                                                                                             \
            "0:\n\t"                                                                                                   \
            "add r1, lr, #16\n\t"                                                                                      \
            "ldm r1, {r3-r8}\n"                                                                                        \
            "5:\n\t"                                                                                                   \
            "ldr r0, [lr]\n\t"                                                                                         \
            "ldr r1, [lr, #12]\n\t"                                                                                    \
            "ldr r2, [lr, #80]\n\t"                                                                                    \
            "add r1, r1, r0\n\t"                                                                                       \
            "str r1, [lr, #72]\n\t"                                                                                    \
            "ldr r1, [lr, #4]\n\t"                                                                                     \
            "ldr r9, [lr, #88]\n\t"                                                                                    \
            "cmp r2, #1\n\t"                                                                                           \
            "it eq\n\t"                                                                                                \
            "ldreq r9, [lr, #84]\n\t"                                                                                  \
            "add r9, r9, r1\n\t"                                                                                       \
            "str r1, [lr, #64]\n\t"                                                                                    \
            "str r9, [lr, #68]\n"                                                                                      \
            "1:\n\t"                                                                                                   \
            "ldr r12, [lr, #40]\n\t"                                                                                   \
            DWV_2X2                                                                                                    \
            DWV_OUT4 CLAMP                                                                                             \
            "ldr r10, [lr, #68]\n\t"                                                                                   \
            "ldr r11, [lr, #8]\n\t"                                                                                    \
            "strb r2, [r10]\n\t"                                                                                       \
            "strb r12, [r10, r11]\n\t"                                                                                 \
            "add r10, r10, r11, lsl #1\n\t"                                                                            \
            "ldr r2, [lr, #64]\n\t"                                                                                    \
            "ldr r12, [lr, #72]\n\t"                                                                                   \
            "strb r9, [r2, r11]\n\t"                                                                                   \
            "strb r1, [r2]\n\t"                                                                                        \
            "add r2, r2, r11, lsl #1\n\t"                                                                              \
            "str r2, [lr, #64]\n\t"                                                                                    \
            "str r10, [lr, #68]\n\t"                                                                                   \
            "add r0, r0, #8\n\t"                                                                                       \
            "cmp r0, r12\n\t"                                                                                          \
            "blo 1b\n\t"                                                                                               \
            "bne 2f\n\t"                                                                                               \
            "sub r0, r0, #4\n\t"                                                                                       \
            "ldr r10, [lr, #64]\n\t"                                                                                   \
            "ldr r12, [lr, #68]\n\t"                                                                                   \
            "sub r10, r10, r11\n\t"                                                                                    \
            "sub r12, r12, r11\n\t"                                                                                    \
            "str r10, [lr, #64]\n\t"                                                                                   \
            "str r12, [lr, #68]\n\t"                                                                                   \
            "b 1b\n"                                                                                                   \
            "2:\n\t"                                                                                                   \
            "ldr r0, [lr]\n\t"                                                                                         \
            "ldr r1, [lr, #4]\n\t"                                                                                     \
            "ldr r2, [lr, #76]\n\t"                                                                                    \
            "ldr r9, [lr, #80]\n\t"                                                                                    \
            "add r0, r0, #" DWV_PITCH "\n\t"                                                                           \
            "add r1, r1, r2\n\t"                                                                                       \
            "str r0, [lr]\n\t"                                                                                         \
            "str r1, [lr, #4]\n\t"                                                                                     \
            "subs r9, r9, #1\n\t"                                                                                      \
            "str r9, [lr, #80]\n\t"                                                                                    \
            "bne 5b\n\t"                                                                                               \
            "add lr, lr, #92\n\t"                                                                                      \
            "ldr r10, [sp, #4]\n\t"                                                                                    \
            "cmp lr, r10\n\t"                                                                                          \
            "bne 0b\n\t"                                                                                               \
            "add sp, sp, #8\n\t"                                                                                       \
            "pop {r4-r11, pc}\n\t"                                                                                     \
            ".size " #NAME ", . - " #NAME "\n\t"                                                                       \
            ".popsection\n")
void mf_dwv_run_int8(dwv_ch *c); /* c: the group's four blocks */
void mf_dwv_run_clamp(dwv_ch *c);
DWV_FUNC(mf_dwv_run_int8, "");
DWV_FUNC(mf_dwv_run_clamp, DWV_CLAMP4);

/* 3 x 3 outputs at stride 1 (dwv3: MobileNet's 3 x 3 x 256 layer), on dwv's maps and channel blocks: dwv's passes
 * would run 16 windows for the 9 (a pass one row and one column back; 163.9 k cycles on the cortex-m4 model against
 * dw3_small's 131.6 k). Per channel: dwv's pass for rows 0/1, columns 0/1 (r1, r2, r9, r12), then column 2 of rows
 * 0/1 (r1, r2: the same MACs from columns 2..4), then row 2 (pair rows 1 and 2: a window whose top row is even,
 * one SMLAD and one SMLABT a column, r1, r2, r9): 54 MACs, 24 loads, the channel's weights loaded once. The
 * outputs of a 3 x 3 map are 9 consecutive pixels, c->ostep apart (out + k ostep, k = 3 row + column). */
#define DWV3_OUT1(R)                                                                                                   \
    "smmulr " R ", " R ", r10\n\t"                                                                                    \
    "add " R ", " R ", " R ", asr #31\n\t"                                                                            \
    "add " R ", " R ", r11\n\t"                                                                                       \
    "asr " R ", " R ", r12\n\t"                                                                                       \
    "ssat " R ", #8, " R "\n\t"
#define DWV3_CLAMP2 "ldr r10, [lr, #56]\n\tldr r11, [lr, #60]\n\t" DWP_CLAMP1("r1") DWP_CLAMP1("r2")
#define DWV3_CLAMP3 DWV3_CLAMP2 DWP_CLAMP1("r9")
/* Row 2's column x (pair row 1 at byte 32 + 4 x in r10, pair row 2 in r11) into window A with column weights J. */
#define DWV3_MAC2(A, WA, WB, FA) "smlad " A ", r10, " WA ", " FA "\n\tsmlabt " A ", r11, " WB ", " A "\n\t"
/* dwv3's and dwv3s2's function NAME(dwv_ch *c): the group's four channel blocks (92 bytes each) one after the other,
 * each channel's weights in r3..r8 and its map in r0, then BODY */
#define DWV3_CHANNELS(NAME, BODY)                                                                                      \
    __asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t"                                                       \
            ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n"                     \
            #NAME ":\n\t"                                                                                              \
            "push {r4-r11, lr}\n\t"                                                                                    \
            "add r12, r0, #368\n\t"                                                                                    \
            "push {r0, r12}\n\t"                                                                                       \
            "mov lr, r0\n"                                                                                             \
            "0:\n\t"                                                                                                   \
            "add r1, lr, #16\n\t"                                                                                      \
            "ldm r1, {r3-r8}\n\t"                                                                                      \
            "ldr r0, [lr]\n\t" BODY                                                                                    \
            "add lr, lr, #92\n\t"                                                                                      \
            "ldr r10, [sp, #4]\n\t"                                                                                    \
            "cmp lr, r10\n\t"                                                                                          \
            "bne 0b\n\t"                                                                                               \
            "add sp, sp, #8\n\t"                                                                                       \
            "pop {r4-r11, pc}\n\t"                                                                                     \
            ".size " #NAME ", . - " #NAME "\n\t"                                                                       \
            ".popsection\n")
/* a row's three outputs r1, r2, r9 requantized (the channel's constants at lr + 44..52), clamped and stored from
 * out + 3 R ostep (OUT: r10 = out, r11 = ostep on to that) */
#define DWV3_STORE3(OUT, CLAMP3)                                                                                       \
    "ldr r10, [lr, #44]\n\t"                                                                                          \
    "ldr r11, [lr, #48]\n\t"                                                                                          \
    "ldr r12, [lr, #52]\n\t"                                                                                          \
    DWV3_OUT1("r1") DWV3_OUT1("r2") DWV3_OUT1("r9") CLAMP3                                                            \
    "ldr r10, [lr, #4]\n\t"                                                                                           \
    "ldr r11, [lr, #8]\n\t" OUT                                                                                       \
    "strb r1, [r10]\n\t"                                                                                              \
    "strb r2, [r10, r11]\n\t"                                                                                         \
    "add r10, r10, r11, lsl #1\n\t"                                                                                   \
    "strb r9, [r10]\n\t"
#define DWV3_FUNC(NAME, CLAMP4, CLAMP2, CLAMP3)                                                                        \
    DWV3_CHANNELS(NAME,                                                                                                \
            "ldr r12, [lr, #40]\n\t"                                                                                   \
            DWV_2X2                                                                                                    \
            DWV_OUT4 CLAMP4                                                                                            \
            "ldr r10, [lr, #4]\n\t"                                                                                    \
            "ldr r11, [lr, #8]\n\t"                                                                                    \
            "strb r1, [r10]\n\t"                                                                                       \
            "strb r9, [r10, r11]\n\t"                                                                                  \
            "add r10, r10, r11, lsl #1\n\t"                                                                            \
            "add r10, r10, r11\n\t"                                                                                    \
            "strb r2, [r10]\n\t"                                                                                       \
            "strb r12, [r10, r11]\n\t"                                                                                 \
            "ldr r12, [lr, #40]\n\t"                                                                                   \
            DWV_LD(8) DWV_MAC("r1", "r2", "r3", "r6", "r12", "r12")                                                    \
            DWV_LD(12) DWV_MAC("r1", "r2", "r4", "r7", "r1", "r2")                                                     \
            DWV_LD(16) DWV_MAC("r1", "r2", "r5", "r8", "r1", "r2")                                                     \
            "ldr r10, [lr, #44]\n\t"                                                                                   \
            "ldr r11, [lr, #48]\n\t"                                                                                   \
            "ldr r12, [lr, #52]\n\t"                                                                                   \
            DWV3_OUT1("r1") DWV3_OUT1("r2") CLAMP2                                                                     \
            "ldr r10, [lr, #4]\n\t"                                                                                    \
            "ldr r11, [lr, #8]\n\t"                                                                                    \
            "add r10, r10, r11, lsl #1\n\t"                                                                            \
            "strb r1, [r10]\n\t"                                                                                       \
            "add r10, r10, r11, lsl #1\n\t"                                                                            \
            "strb r2, [r10, r11]\n\t"                                                                                  \
            "ldr r12, [lr, #40]\n\t"                                                                                   \
            "ldr r10, [r0, #32]\n\t"                                                                                   \
            "ldr r11, [r0, #64]\n\t"                                                                                   \
            DWV3_MAC2("r1", "r3", "r6", "r12")                                                                         \
            "ldr r10, [r0, #36]\n\t"                                                                                   \
            "ldr r11, [r0, #68]\n\t"                                                                                   \
            DWV3_MAC2("r1", "r4", "r7", "r1") DWV3_MAC2("r2", "r3", "r6", "r12")                                       \
            "ldr r10, [r0, #40]\n\t"                                                                                   \
            "ldr r11, [r0, #72]\n\t"                                                                                   \
            DWV3_MAC2("r1", "r5", "r8", "r1") DWV3_MAC2("r2", "r4", "r7", "r2") DWV3_MAC2("r9", "r3", "r6", "r12")    \
            "ldr r10, [r0, #44]\n\t"                                                                                   \
            "ldr r11, [r0, #76]\n\t"                                                                                   \
            DWV3_MAC2("r2", "r5", "r8", "r2") DWV3_MAC2("r9", "r4", "r7", "r9")                                        \
            "ldr r10, [r0, #48]\n\t"                                                                                   \
            "ldr r11, [r0, #80]\n\t"                                                                                   \
            DWV3_MAC2("r9", "r5", "r8", "r9")                                                                          \
            DWV3_STORE3("add r10, r10, r11, lsl #2\n\tadd r10, r10, r11, lsl #1\n\t", CLAMP3))
void mf_dwv3_run_int8(dwv_ch *c); /* c: the group's four blocks */
void mf_dwv3_run_clamp(dwv_ch *c);
DWV3_FUNC(mf_dwv3_run_int8, "", "", "");
DWV3_FUNC(mf_dwv3_run_clamp, DWV_CLAMP4, DWV3_CLAMP2, DWV3_CLAMP3);

/* 3 x 3 outputs at stride 2 (dwv3s2: MobileNet's 6 x 6 x 128 to 3 x 3), on dwv's maps: every window's top row is
 * even (2 r), so each is dwv's window a, one SMLAD and one SMLABT a column of pair rows r and r + 1, and windows
 * c = 0..2 of a row read columns 2 c .. 2 c + 2 (column 2 c + 2 both for window c and c + 1): 14 loads, 18 MACs and
 * three outputs a row, the channel's weights loaded once. Output row R: pair rows at bytes 32 R and 32 R + 32;
 * OUT: the row's first output (out + 3 R ostep) from r10 = out, r11 = ostep. */
#define DWV3S2_LD(R, X) "ldr r10, [r0, #32 * " #R " + 4 * " #X "]\n\tldr r11, [r0, #32 * " #R " + 32 + 4 * " #X "]\n\t"
#define DWV3S2_ROW(R, OUT, CLAMP3)                                                                                     \
    "ldr r12, [lr, #40]\n\t"                                                                                          \
    DWV3S2_LD(R, 0) DWV3_MAC2("r1", "r3", "r6", "r12")                                                                \
    DWV3S2_LD(R, 1) DWV3_MAC2("r1", "r4", "r7", "r1")                                                                 \
    DWV3S2_LD(R, 2) DWV3_MAC2("r1", "r5", "r8", "r1") DWV3_MAC2("r2", "r3", "r6", "r12")                              \
    DWV3S2_LD(R, 3) DWV3_MAC2("r2", "r4", "r7", "r2")                                                                 \
    DWV3S2_LD(R, 4) DWV3_MAC2("r2", "r5", "r8", "r2") DWV3_MAC2("r9", "r3", "r6", "r12")                              \
    DWV3S2_LD(R, 5) DWV3_MAC2("r9", "r4", "r7", "r9")                                                                 \
    DWV3S2_LD(R, 6) DWV3_MAC2("r9", "r5", "r8", "r9")                                                                 \
    DWV3_STORE3(OUT, CLAMP3)
#define DWV3S2_FUNC(NAME, CLAMP3)                                                                                      \
    DWV3_CHANNELS(NAME, DWV3S2_ROW(0, "", CLAMP3)                                                                      \
                  DWV3S2_ROW(1, "add r10, r10, r11, lsl #1\n\tadd r10, r10, r11\n\t", CLAMP3)                          \
                  DWV3S2_ROW(2, "add r10, r10, r11, lsl #2\n\tadd r10, r10, r11, lsl #1\n\t", CLAMP3))
void mf_dwv3s2_run_int8(dwv_ch *c); /* c: the group's four blocks */
void mf_dwv3s2_run_clamp(dwv_ch *c);
DWV3S2_FUNC(mf_dwv3s2_run_int8, "");
DWV3S2_FUNC(mf_dwv3s2_run_clamp, DWV3_CLAMP3);

/* Both halfwords doubled (SADD16; mf_sadd16 adds two words' halfwords): the weights' pairs, in [-256, 254], and
 * their sums. */
static inline int32_t dwv_dbl(int32_t p) { return mf_sadd16(p, p); }

/* dwv takes the map: stride 1, no dilation, two to DWV_Q - 2 windows a row, the padded rows in DWV_R pair rows
 * (or 3 x 3 outputs at stride 2: dwv3s2, MobileNet's 6 x 6 x 128 to 3 x 3, 75.5 -> 72.2 k cycles on the cortex-m4
 * model against dw3_small, 47.5 -> 47.0 k on the cortex-m7);
 * an odd row count or width costs a pass's recomputed windows: at most 1.2 times the windows, or 3 x 3 outputs
 * exactly (dwv3's passes, no recomputed window: MobileNet's 3 x 3 x 256, 131.6 -> 106.1 k cycles on the cortex-m4
 * model, 83.0 -> 69.8 k on the cortex-m7). */
static int dwv_ok(const dw_geom *g) {
    if (g->dl[0] == 1 && g->dl[1] == 1 && g->st[0] == 2 && g->st[1] == 2 && g->pd[0] >= 0 && g->pd[1] >= 0 &&
        g->oh == 3 && g->ow == 3) {
        return 1; /* dwv3s2: padded rows and columns 0..6 (the fill keeps inside the map) */
    }
    return g->dl[0] == 1 && g->dl[1] == 1 && g->st[0] == 1 && g->st[1] == 1 && g->pd[0] >= 0 && g->pd[1] >= 0 &&
           g->oh >= 1 && g->ow >= 2 && g->ow + 2 <= DWV_Q && (g->oh + 1) / 2 + 1 <= DWV_R &&
           (5 * (g->oh + (g->oh & 1)) * (g->ow + (g->ow & 1)) <= 6 * g->oh * g->ow || (g->oh == 3 && g->ow == 3));
}

/* Channel groups oc, oc + 4, ... of every window of a small map (dwv_ok) while their output stage is dw3_tab's
 * (dw3_tab_ok; oc's is): returns the first group not run (C & ~3 when all were). The maps' padding is the zero
 * point once for all groups: each group then writes only the input's pixels. */
static __attribute__((noinline)) int32_t dwv_groups(const dw_geom *g, int32_t oc) {
    enum { MAP = DWV_R * DWV_Q }; /* words of a channel's map */
    const int32_t C = g->ch;
    const int32_t zz = dw3_pair(-g->in_off, -g->in_off); /* the zero point widened, in both halves */
    const int32_t zb = mf_wrap32((uint32_t)(uint8_t)(int8_t)-g->in_off * 0x01010101u); /* and as four int8 */
    int16_t buf[8 * MAP] __attribute__((aligned(4))); /* the four maps' halfwords (the asm reads words) */
    dwv_ch ch[4];
    for (uint8_t *d = (uint8_t *)buf; d != (uint8_t *)(buf + 8 * MAP); d += 16) {
        mf_st32(d, zz), mf_st32(d + 4, zz), mf_st32(d + 8, zz), mf_st32(d + 12, zz);
    }
    const ptrdiff_t row = (ptrdiff_t)g->wi * C;
    const int32_t y_hi = g->h < 2 * DWV_R - g->pd[0] ? g->h : 2 * DWV_R - g->pd[0];
    const int32_t x_hi = g->wi < DWV_Q - g->pd[1] ? g->wi : DWV_Q - g->pd[1];
    for (int i = 0; i < 4; i++) { /* the fields every group shares (the asm does not write them) */
        dwv_ch *c = &ch[i];
        c->ostep = C, c->xlast = 4 * (g->ow - 1), c->lo = g->rq.lo, c->hi = g->rq.hi;
        c->orow = g->ow * C, c->orow2 = 2 * c->orow, c->oblast = g->oh & 1 ? 0 : c->orow;
    }
    const int full = g->rq.lo == -128 && g->rq.hi == 127; /* the op's range: every group's (chosen once) */
    /* (a table, not nested conditionals: those cost the cortex-m7 model 0.7 k cycles on each 6 x 6 x 128 layer) */
    static void (*const runs[3][2])(dwv_ch *) = {{mf_dwv_run_clamp, mf_dwv_run_int8},
                                                   {mf_dwv3_run_clamp, mf_dwv3_run_int8},
                                                   {mf_dwv3s2_run_clamp, mf_dwv3s2_run_int8}};
    void (*const run)(dwv_ch *) = runs[g->st[0] == 2 ? 2 : g->oh == 3 && g->ow == 3][full];
    for (; oc + 4 <= C; oc += 4) {
        mf_dsp_channel ch4[4];
        for (int i = 0; i < 4; i++) ch4[i] = mf_dsp_channel_any(&g->rq, (uint32_t)(oc + i));
        dw_out_params qv, *q = &qv;
        dw_out_params_of(g, ch4, q);
        if (!dw3_tab_ok(g, q)) break;
        /* the weights a word of four channels at a time: sign-extended to halfword pairs (channels 0/2, 1/3),
         * doubled (SADD16), a column's rows paired by PKHBT/PKHTB, the sums in the pairs' halves (|sum| <=
         * 1152), not byte by byte: with the fill's row pairs below, dwv_groups 47.0 -> 42.6 k cycles on
         * MobileNet's 6 x 6 x 128 (cortex-m4 model) */
        int32_t sum02 = 0, sum13 = 0;
        for (int32_t j = 0; j < 3; j++) {
            const int8_t *w = g->w + j * C + oc;
            const int32_t u0 = mf_ld32(w), u1 = mf_ld32(w + 3 * C), u2 = mf_ld32(w + 6 * C);
            const int32_t e0 = dwv_dbl(mf_sxtb16(u0)), e1 = dwv_dbl(mf_sxtb16(u1)), e2 = dwv_dbl(mf_sxtb16(u2));
            const int32_t o0 = dwv_dbl(mf_sxtb16_ror8(u0)), o1 = dwv_dbl(mf_sxtb16_ror8(u1));
            const int32_t o2 = dwv_dbl(mf_sxtb16_ror8(u2));
            sum02 = mf_sadd16(sum02, mf_sadd16(e0, mf_sadd16(e1, e2)));
            sum13 = mf_sadd16(sum13, mf_sadd16(o0, mf_sadd16(o1, o2)));
            ch[0].w[j] = mf_pkhbt(e0, e1), ch[0].w[3 + j] = mf_pkhbt(e1, e2);
            ch[1].w[j] = mf_pkhbt(o0, o1), ch[1].w[3 + j] = mf_pkhbt(o1, o2);
            ch[2].w[j] = mf_pkhtb(e0, e1), ch[2].w[3 + j] = mf_pkhtb(e1, e2);
            ch[3].w[j] = mf_pkhtb(o0, o1), ch[3].w[3 + j] = mf_pkhtb(o1, o2);
        }
        const int32_t sums[4] = {(int16_t)(uint16_t)sum02 >> 1, (int16_t)(uint16_t)sum13 >> 1, sum02 >> 17,
                                 sum13 >> 17}; /* the doubled sums halved */
        for (int i = 0; i < 4; i++) {
            dwv_ch *c = &ch[i];
            const int32_t sum = sums[i];
            /* as dw3_tab_of's */
            c->acc = mf_wrap32(2u * (uint32_t)mf_add_wrap(q->bias[i], g->in_off * sum));
            c->mult = q->mult[i], c->n = q->n[i];
            c->half = (1 << (q->n[i] - 1)) + q->out_off * (1 << q->n[i]);
        }
        /* the input's four channels into their maps: padded rows 2 k, 2 k + 1 (input rows iy, iy + 1, iy = 2 k -
         * pd[0]) are the halves of pair row k, filled together by dwp_put (a row outside the input reads the zero
         * point: a source that does not move): four word stores for two pixels, not eight halfword ones */
        for (int32_t b = 0; b < g->batch; b++) {
            const int8_t *xb = g->x + (size_t)b * (size_t)g->h * (size_t)row + oc;
            for (int32_t k = 0, iy = -g->pd[0]; iy < y_hi; k++, iy += 2) {
                const int in0 = iy >= 0, in1 = iy + 1 >= 0 && iy + 1 < y_hi;
                if (!in0 && !in1) continue;
                const int8_t *s0 = in0 ? xb + iy * row : (const int8_t *)&zb, *s1 = in1 ? xb + (iy + 1) * row
                                                                                      : (const int8_t *)&zb;
                const ptrdiff_t c0 = in0 ? C : 0, c1 = in1 ? C : 0;
                uint8_t *d = (uint8_t *)buf + 4 * (k * DWV_Q + g->pd[1]), *end = d + 4 * x_hi;
                for (; d != end; d += 4, s0 += c0, s1 += c1) dwp_put(d, 4 * MAP, 8 * MAP, 12 * MAP, mf_ld32(s0),
                                                                     mf_ld32(s1));
            }
            int8_t *out = g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C + oc;
            for (int i = 0; i < 4; i++) {
                ch[i].x = (const int32_t *)(const void *)(buf + 2 * i * MAP);
                ch[i].out = out + i, ch[i].pairs = (g->oh + 1) / 2;
            }
            run(ch);
        }
    }
    return oc;
}
#define DWP 1
#endif

/* (Not inlined into dw_dsp_3x3_groups: its rotated tables and rings' blocks would sit in that frame under dwv_groups'
 * maps too -- VWW's stack high-water on cortex-m4 3,644 bytes with them, 3,028 without; 3,116 before dwv.)
 * Channels oc .. oc + 3 of every window: through dw3_buffered where a view of the image takes it
 * (rows along the longer output side when both do; whole output rows, the padding's windows included);
 * otherwise a row's windows inside the input as one dw3_run on the image and the others one by one on
 * patches (dw3_edge). */
static __attribute__((noinline)) void dw3_group(const dw_geom *g, dw3_tab *T, int32_t oc, int32_t ox_lo,
                                                int32_t ox_hi) {
    const int32_t C = g->ch, row = g->wi * C;
    const int32_t dy = g->dl[0] * row, dx = g->dl[1] * C, step = g->st[1] * C;
    const int32_t pad = mf_wrap32((uint32_t)(uint8_t)(int8_t)-g->in_off * 0x01010101u);
    dw3_view v;
    int t = g->oh > g->ow; /* 1: the view's rows are image columns */
    dw3_view_of(g, t, &v);
    if (!dw3_view_ok(&v)) t = !t, dw3_view_of(g, t, &v);
    const int buffered = dw3_view_ok(&v);
#if defined(DWP)
    /* channel-planar windows (dwp) where the planned scratch holds the rings (else dw3_buffered) */
    if (buffered && dwp_ok(&v) && g->scratch != NULL && ((uintptr_t)g->scratch & 3u) == 0 &&
        g->scratch_bytes >= dwp_ring_bytes(&v)) {
        dwp_ch ch[4];
        dwp_blocks(g, T, t, oc, ch);
        for (int32_t b = 0; b < g->batch; b++) {
            dwp_image(&v, ch, g->x + (size_t)b * (size_t)g->h * (size_t)row + oc, pad,
                      g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C + oc,
                      (int16_t *)(void *)g->scratch);
        }
        return;
    }
#endif
    dw3_tab Tp[3];
    if (buffered) { /* Tp[p]: view tap (k, j) (the image's (j, k) when transposed) in slot (p + k) mod 3 */
        for (int32_t p = 0; p < 3; p++) {
            Tp[p] = *T;
            Tp[p].ostep = (int32_t)v.o_col;
            for (int32_t k = 0; k < 3; k++) {
                for (int32_t j = 0; j < 3; j++) {
                    const int32_t src = t ? 3 * j + k : 3 * k + j, dst = 3 * ((p + k) % 3) + j;
                    Tp[p].w[2 * dst] = T->w[2 * src], Tp[p].w[2 * dst + 1] = T->w[2 * src + 1];
                }
            }
        }
    }
    for (int32_t b = 0; b < g->batch; b++) {
        const int8_t *xb = g->x + (size_t)b * (size_t)g->h * (size_t)row + oc;
        int8_t *orow = g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C + oc;
        if (buffered) {
            dw3_buffered(&v, Tp, xb, pad, orow);
            continue;
        }
        for (int32_t oy = 0; oy < g->oh; oy++, orow += (ptrdiff_t)g->ow * C) {
            const int32_t y0 = oy * g->st[0] - g->pd[0];
            const uint32_t rmask = dw_dsp_mask3(y0, g->dl[0], g->h);
            const int8_t *xrow = xb + (ptrdiff_t)y0 * row;
            const int inside = rmask == 7u && ox_hi > ox_lo;
            int8_t *out = orow;
            for (int32_t ox = 0; ox < g->ow; ox++, out += C) {
                const int32_t x0 = ox * g->st[1] - g->pd[1];
                if (inside && ox == ox_lo) {
                    dw3_inside(T, xrow + (ptrdiff_t)x0 * C, dx, dy, step, ox_hi - ox_lo, out);
                    out += (ptrdiff_t)(ox_hi - ox_lo - 1) * C;
                    ox = ox_hi - 1;
                    continue;
                }
                const uint32_t cmask = dw_dsp_mask3(x0, g->dl[1], g->wi);
                const uint32_t mask = (rmask & 1u ? cmask : 0u) | (rmask & 2u ? cmask << 3 : 0u) |
                                      (rmask & 4u ? cmask << 6 : 0u);
                dw3_edge(T, xrow + (ptrdiff_t)x0 * C, dx, dy, mask, pad, out);
            }
        }
    }
}

/* 3x3 windows, channel groups of four outer, pixels inner: the group's nine weight words,
 * sign-extended once into 18 halfword pairs, and its channels' output parameters, read once. A row's
 * windows inside the input run without bounds (three row pointers, the taps dx apart); the others
 * (the padding's edges) take the taps of their row and column masks, unrolled (dw_win9). Channels
 * [0, ch & ~3). Each group's output stage is the short requantization where its own channels allow it
 * (dw_group_small); in_place: the call when written over its input (dw_dsp_in_place), whose groups without the
 * table run the portable in-place kernel; else NULL. */
static void dw_dsp_3x3_groups(const dw_geom *g, const mf_call *in_place) {
    const int32_t C = g->ch, row = g->wi * C, off16 = mf_pack_off16(g->in_off);
    const int32_t dy = g->dl[0] * row, dx = g->dl[1] * C, step = g->st[1] * C;
    /* output columns [ox_lo, ox_hi) whose windows lie inside the input's width */
    const int32_t ox_lo = (g->pd[1] + g->st[1] - 1) / g->st[1];
    const int32_t span_x = g->wi - 1 - 2 * g->dl[1] + g->pd[1];
    int32_t ox_hi = span_x < 0 ? 0 : span_x / g->st[1] + 1;
    if (ox_hi > g->ow) ox_hi = g->ow;
    if (ox_hi < ox_lo) ox_hi = ox_lo;
#if defined(DWP)
    const int dwv = in_place == NULL && dwv_ok(g); /* the small maps' row pairs (dwv_groups) */
#endif
    for (int32_t oc = 0; oc + 4 <= C; oc += 4) {
        mf_dsp_channel ch4[4];
        for (int i = 0; i < 4; i++) ch4[i] = mf_dsp_channel_any(&g->rq, (uint32_t)(oc + i)); /* s8's or s4's */
        dw_out_params q;
        dw_out_params_of(g, ch4, &q);
        dw3_tab T;
        /* the table and its rotations cost about as much as 16 windows save (MobileNet's 3 x 3 outputs) */
        /* a small map: its whole padded map copied once (dw3_small; not written over its input) */
#if defined(DWP)
        /* a small map at stride 1: the channels' padded maps widened once, row pairs (dwv) */
        if (dwv && dw3_tab_ok(g, &q)) {
            oc = dwv_groups(g, oc) - 4; /* this group and the next ones the path takes */
            continue;
        }
#endif
        if (in_place == NULL && dw3_small_ok(g) && dw3_tab_of(g, &q, oc, &T)) {
            oc = dw3_small(g, &T, oc) - 4; /* this group and the next ones the path takes */
            continue;
        }
        if (g->batch * g->oh * g->ow >= 16 && dw3_tab_of(g, &q, oc, &T)) {
            dw3_group(g, &T, oc, ox_lo, ox_hi);
            continue;
        }
        if (in_place != NULL) {
            mf_depthwise_s8_in_place_channels(in_place, (uint32_t)oc, (uint32_t)oc + 4u);
            continue;
        }
        const int small = dw_group_small(&q); /* the C loop's output stage */
        int32_t wv[18]; /* the C loop's weights (the table's paths above read their own) */
        for (int32_t t = 0; t < 9; t++) {
            const int32_t ww = mf_ld32(g->w + t * C + oc);
            wv[2 * t] = mf_sxtb16(ww);
            wv[2 * t + 1] = mf_sxtb16_ror8(ww);
        }
        for (int32_t b = 0; b < g->batch; b++) {
            const int8_t *xb = g->x + (size_t)b * (size_t)g->h * (size_t)row + oc;
            int8_t *out = g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C + oc;
            for (int32_t oy = 0; oy < g->oh; oy++) {
                const int32_t y0 = oy * g->st[0] - g->pd[0];
                const uint32_t rmask = dw_dsp_mask3(y0, g->dl[0], g->h);
                const int row_in = rmask == 7u;
                for (int32_t ox = 0; ox < g->ow; ox++, out += C) {
                    const int32_t x0 = ox * g->st[1] - g->pd[1];
                    int32_t a[4] = {0, 0, 0, 0};
                    if (row_in && ox >= ox_lo && ox < ox_hi) {
                        /* inside: the windows up to ox_hi without bounds */
                        const int8_t *r0 = xb + (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C;
                        for (; ox < ox_hi; ox++, out += C, r0 += step) {
                            int32_t p[4] = {0, 0, 0, 0};
                            dw_win9(p, r0, dx, dy, wv, off16, 0x1ffu);
                            if (small) {
                                dw_out4_small(&q, p, out);
                            } else {
                                dw_dsp_out4(g, ch4, 0, p, out);
                            }
                        }
                        ox--, out -= C;
                        continue;
                    }
                    const uint32_t cmask = dw_dsp_mask3(x0, g->dl[1], g->wi);
                    const uint32_t mask = (rmask & 1u ? cmask : 0u) | (rmask & 2u ? cmask << 3 : 0u) |
                                          (rmask & 4u ? cmask << 6 : 0u);
                    const int8_t *xpix = xb + (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C;
                    switch (mask) { /* the padding's usual windows with their mask a constant: no tests */
                    case 0x1b6u: dw_win9(a, xpix, dx, dy, wv, off16, 0x1b6u); break; /* left column */
                    case 0x0dbu: dw_win9(a, xpix, dx, dy, wv, off16, 0x0dbu); break; /* right column */
                    case 0x1f8u: dw_win9(a, xpix, dx, dy, wv, off16, 0x1f8u); break; /* top row */
                    case 0x03fu: dw_win9(a, xpix, dx, dy, wv, off16, 0x03fu); break; /* bottom row */
                    case 0x1b0u: dw_win9(a, xpix, dx, dy, wv, off16, 0x1b0u); break; /* corners */
                    case 0x0d8u: dw_win9(a, xpix, dx, dy, wv, off16, 0x0d8u); break;
                    case 0x036u: dw_win9(a, xpix, dx, dy, wv, off16, 0x036u); break;
                    case 0x01bu: dw_win9(a, xpix, dx, dy, wv, off16, 0x01bu); break;
                    default: dw_win9(a, xpix, dx, dy, wv, off16, mask); break;
                    }
                    if (small) {
                        dw_out4_small(&q, a, out);
                    } else {
                        dw_dsp_out4(g, ch4, 0, a, out);
                    }
                }
            }
        }
    }
}

#if defined(DWP)
/* Written over its input (the planner's choice, mcuforge.plan.choose_in_place; its kernel where
 * mcuforge.ir.dwp_in_place_ok holds): each channel group that the channel-planar path takes runs it with the
 * output at the input's bytes, the other channels through depthwise_in_place.c. Why that is exact: a group
 * reads and writes only its own four channels (dwp_fill loads one word, channels oc .. oc + 3, per pixel), so
 * per channel it is a one-channel image, pixel p at byte p C + c of both tensors. dwp_image copies view rows
 * into the ring in increasing order, all three rows of output row oy before that row's asm runs, so once
 * output row oy is written the rows still to be read are view rows >= oy st + 3 - pd >= oy + 1 (pd <= 2).
 * Not transposed (view = image): row oy writes pixels oy OW .. oy OW + OW - 1 < (oy + 1) W (OW <= W), all
 * before the first pixel of row oy + 1, and read already. Transposed (view rows are image columns), the output
 * the input's size: row oy writes image column oy, read already (later reads: columns >= oy + 1). Returns 0
 * (nothing done) where the shape or the output stage does not take the path: the caller runs the portable
 * in-place kernel. */
static int dw_dsp_in_place(const mf_call *c) {
    if (mf_attr_int(c, A_MULT) != 1) return 0;
    dw_geom g;
    dw_geom_read(c, &g);
    if (!dw_geom_fits(&g) || g.kh != 3 || g.kw != 3 || g.batch != 1 || g.oh * g.ow < 16) return 0;
    dw3_view v; /* dw3_group's view */
    int t = g.oh > g.ow;
    dw3_view_of(&g, t, &v);
    if (!dw3_view_ok(&v)) t = !t, dw3_view_of(&g, t, &v);
    if (!dw3_view_ok(&v) || !dwp_ok(&v) || v.pd[0] > 2 || (t ? g.oh != g.h || g.ow != g.wi : g.ow > g.wi)) return 0;
    if (c->scratch == NULL || ((uintptr_t)c->scratch & 3u) != 0 || c->scratch_bytes < dwp_ring_bytes(&v)) return 0;
    /* a group whose table holds runs dwp (dw3_group's test, above, holds for every group), the others the
     * portable in-place kernel (dw_dsp_3x3_groups' in_place): no other path, which would not be exact here */
    const int32_t C = g.ch;
    g.scratch = c->scratch, g.scratch_bytes = c->scratch_bytes;
    dw_dsp_3x3_groups(&g, c);
    mf_depthwise_s8_in_place_channels(c, (uint32_t)(C & ~3), (uint32_t)C);
    return 1;
}
#define DW_IN_PLACE_FAST 1
#endif

int mf_depthwise_dsp_3x3(const mf_call *c, const int8_t *w) {
    dw_geom g;
    if (!dw_geom_on(c, w, &g) || g.kh != 3 || g.kw != 3 || g.ch % 4) return 0;
    /* no rings: its scratch holds the unpacked weights (w) */
    dw_dsp_3x3_groups(&g, NULL);
    return 1;
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
        g.scratch = c->scratch, g.scratch_bytes = c->scratch_bytes;
        dw_dsp_3x3_groups(&g, NULL);
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

#elif defined(MF_USE_SCALAR_FAST)

/* Scalar cores (cortex-m3): one output channel at a time, along the longer output axis (a "row" below is
 * an image column when the output is taller than wide: all strides are the view's). Each input row the
 * window reaches is packed once into a ring of rows in the scratch: word j = V(j) + V(j + stride) * 2^23,
 * V(j) = x + offset at padded position j (0 in the padding), so one SMLAL by a weight computes a tap of
 * two adjacent outputs (mf_scalar.h); rows outside the input read a row of zeros. An output row's pair
 * sums go to a row of sums, then through the output stage (mf_sc_store). 3x3 windows with strides 1
 * and 2 along the row (any dilation across) take mf_sc_dw3_row. Requires at most MF_SC_CHUNK taps (the
 * pair sums' bound), a window spanning at most DW_SC_MAX_SPAN rows, and the scratch below
 * (mcuforge.ir.kernel_scratch_bytes computes the same). */
#define DW_SC_MAX_SPAN 16

typedef struct {
    const int8_t *x; /* image, channel 0 */
    int8_t *out;     /* image's output, channel 0 */
    int32_t h, w, oh, ow, kh, kw, st[2], pd[2], dl[2]; /* the view: rows x columns */
    size_t x_row, x_col, out_row, out_col;           /* bytes between rows / columns */
    int32_t t_row, t_col;                            /* weight taps (in weight rows) between ky / kx */
    uint32_t dm, oc_n, taps, span, wq, pairs, fast3x3;
    int32_t in_off;
} dw_sc_view;

/* The view of g: transposed when the output is taller than wide (fewer, longer rows). */
static void dw_sc_view_of(const dw_geom *g, uint32_t dm, dw_sc_view *v) {
    const int t = g->oh > g->ow; /* 0: rows are image rows, 1: image columns */
    const uint32_t C = (uint32_t)g->ch;
    v->dm = dm;
    v->oc_n = C * dm;
    v->h = t ? g->wi : g->h, v->w = t ? g->h : g->wi;
    v->oh = t ? g->ow : g->oh, v->ow = t ? g->oh : g->ow;
    v->kh = t ? g->kw : g->kh, v->kw = t ? g->kh : g->kw;
    for (int a = 0; a < 2; a++) {
        v->st[a] = g->st[a ^ t], v->pd[a] = g->pd[a ^ t], v->dl[a] = g->dl[a ^ t];
    }
    const size_t x_row = (size_t)g->wi * C, out_row = (size_t)g->ow * v->oc_n;
    v->x_row = t ? C : x_row, v->x_col = t ? x_row : C;
    v->out_row = t ? v->oc_n : out_row, v->out_col = t ? out_row : v->oc_n;
    v->t_row = t ? 1 : g->kw, v->t_col = t ? g->kw : 1;
    v->taps = (uint32_t)(g->kh * g->kw);
    v->span = (uint32_t)((v->kh - 1) * v->dl[0] + 1);
    v->wq = (uint32_t)((v->ow - 1) * v->st[1] + (v->kw - 1) * v->dl[1] + 1);
    v->pairs = (uint32_t)(v->ow + 1) / 2;
    v->fast3x3 = v->kh == 3 && v->kw == 3 && v->dl[1] == 1 && (v->st[1] == 1 || v->st[1] == 2);
    v->in_off = g->in_off;
}

/* The scratch (words): the channel's taps, the ring of span packed rows, a row of zeros, the sums
 * (mcuforge/kinds/scratch.py: the planner's formula). */
static uint32_t dw_sc_scratch_bytes(const dw_sc_view *v) {
    return mf_scratch_depthwise_conv2d_s8_rows(v->taps, v->span, v->wq, v->pairs);
}

/* V(j) for padded position j of a row (x at its position 0). */
static inline int32_t dw_sc_v(const dw_sc_view *v, const int8_t *x, int32_t j) {
    const int32_t i = j - v->pd[1];
    return i >= 0 && i < v->w ? x[(size_t)i * v->x_col] + v->in_off : 0;
}

/* The packed row P[j] = V(j) + V(j + s) * 2^23, j < wq, of input row x (position 0). */
static void dw_sc_row(const dw_sc_view *v, const int8_t *x, int32_t *P) {
    const int32_t s = v->st[1], wq = (int32_t)v->wq, pair_off = mf_sc_pair(v->in_off, v->in_off);
    const size_t step = v->x_col;
    int32_t j_lo = v->pd[1], j_hi = v->pd[1] + v->w - s; /* both positions inside the input */
    if (j_hi > wq) j_hi = wq;
    if (j_lo > j_hi) j_lo = j_hi = wq;
    int32_t j = 0;
    for (; j < j_lo; j++) P[j] = mf_sc_pair(dw_sc_v(v, x, j), dw_sc_v(v, x, j + s));
    const int8_t *a = x + (size_t)(j - v->pd[1]) * step, *b = a + (size_t)s * step;
    for (; j < j_hi; j++, a += step, b += step) P[j] = mf_sc_pair(*a, *b) + pair_off;
    for (; j < wq; j++) P[j] = mf_sc_pair(dw_sc_v(v, x, j), dw_sc_v(v, x, j + s));
}

/* The pair sums of one output row, any window: rows[ky] the packed rows, wt the taps (view order). */
static void dw_sc_row_sums(const dw_sc_view *v, int32_t *const *rows, const int32_t *wt, int32_t *sums) {
    const int32_t kw = v->kw, dx = v->dl[1], step = 2 * v->st[1];
    for (uint32_t i = 0; i < v->pairs; i++, sums += 2) {
        int64_t a = MF_SC_ROUND;
        for (int32_t ky = 0; ky < v->kh; ky++) {
            const int32_t *p = rows[ky] + (int32_t)i * step, *w = wt + ky * kw;
            for (int32_t kx = 0; kx < kw; kx++, p += dx) a += (int64_t)w[kx] * *p;
        }
        sums[0] = mf_sc_low(a);
        sums[1] = mf_sc_high(a);
    }
}

/* Output channel oc of one image, with the output stage `variant`. */
static void dw_sc_channel(const dw_sc_view *v, const dw_geom *g, uint32_t oc, int32_t *scratch, int variant) {
    int32_t *wt = scratch, *ring = wt + v->taps, *zero = ring + v->span * v->wq, *sums = zero + v->wq;
    for (int32_t ky = 0, t = 0; ky < v->kh; ky++) {
        for (int32_t kx = 0; kx < v->kw; kx++) wt[t++] = g->w[(size_t)(ky * v->t_row + kx * v->t_col) * v->oc_n + oc];
    }
    const mf_sc_channel ch = mf_sc_channel_of(&g->rq, oc, variant);
    int32_t tag[DW_SC_MAX_SPAN];
    for (uint32_t i = 0; i < v->span; i++) tag[i] = -1;
    const int8_t *xc = v->x + oc / v->dm;
    int8_t *out = v->out + oc;
    int32_t *rows[DW_SC_MAX_SPAN];
    for (int32_t oy = 0; oy < v->oh; oy++, out += v->out_row) {
        const int32_t y0 = oy * v->st[0] - v->pd[0];
        for (int32_t ky = 0; ky < v->kh; ky++) {
            const int32_t iy = y0 + ky * v->dl[0];
            if (iy < 0 || iy >= v->h) {
                rows[ky] = zero;
                continue;
            }
            const uint32_t slot = (uint32_t)iy % v->span;
            rows[ky] = ring + slot * v->wq;
            if (tag[slot] != iy) {
                dw_sc_row(v, xc + (size_t)iy * v->x_row, rows[ky]);
                tag[slot] = iy;
            }
        }
        if (v->fast3x3) {
            mf_sc_dw3_row(rows[0], rows[1], rows[2], wt, (uint32_t)v->st[1], v->pairs, sums);
        } else {
            dw_sc_row_sums(v, rows, wt, sums);
        }
        mf_sc_store(&g->rq, &ch, variant, sums, (uint32_t)v->ow, out, (uint32_t)v->out_col);
    }
}

/* The pixel-major path (3x3, depth multiplier 1, the output stage MF_SC_FAST_SAT): four channels at a
 * time, each output pixel's nine words of four channel bytes through mf_sc_dw4_sat; the window's start
 * folded into the accumulators (bias + offset * sum(w)), a pixel whose window leaves the input reading
 * its taps from a patch where the outside ones hold the zero point. No per-row or per-channel packing:
 * the path for small images, where the row path's overheads dominate. Its scratch (words) follows the
 * row path's: the group table, the taps' offsets inside the image and in the patch, the patch. */
#define DW_PX_WORDS 96u

static void dw_px_groups(const dw_geom *g, int32_t *px) {
    const int32_t C = g->ch, row = g->wi * C, off = g->in_off;
    int32_t *tab = px, *toff = px + MF_SC_DW4_WORDS, *toff_patch = toff + 9, *patch = toff_patch + 9;
    const int8_t zp = (int8_t)-off;
    const int32_t pad = mf_wrap32((uint32_t)(uint8_t)zp * 0x01010101u);
    for (int32_t t = 0; t < 9; t++) {
        toff[t] = (t / 3) * g->dl[0] * row + (t % 3) * g->dl[1] * C;
        toff_patch[t] = 4 * t;
    }
    const mf_channel_requant *q = &g->rq;
    for (int32_t c0 = 0; c0 + 4 <= C; c0 += 4) {
        for (int32_t i = 0; i < 4; i++) {
            int32_t sum = 0;
            for (int32_t t = 0; t < 9; t++) sum += tab[4 + 4 * t + i] = g->w[t * C + c0 + i];
            tab[i] = mf_add_wrap(q->bias ? q->bias[c0 + i] : 0, off * sum);
            const mf_sc_channel ch = mf_sc_channel_of(q, (uint32_t)(c0 + i), MF_SC_FAST_SAT);
            tab[40 + 3 * i] = ch.mult, tab[41 + 3 * i] = ch.k_high, tab[42 + 3 * i] = ch.right_m1;
        }
        for (int32_t b = 0; b < g->batch; b++) {
            const int8_t *xb = g->x + (size_t)b * (size_t)g->h * (size_t)row + c0;
            int8_t *out = g->out + (size_t)b * (size_t)g->oh * (size_t)g->ow * (size_t)C + c0;
            for (int32_t oy = 0; oy < g->oh; oy++) {
                const int32_t y0 = oy * g->st[0] - g->pd[0];
                const int rows_in = y0 >= 0 && y0 + 2 * g->dl[0] < g->h;
                for (int32_t ox = 0; ox < g->ow; ox++, out += C) {
                    const int32_t x0 = ox * g->st[1] - g->pd[1];
                    if (rows_in && x0 >= 0 && x0 + 2 * g->dl[1] < g->wi) {
                        mf_sc_dw4_sat(tab, toff, xb + (ptrdiff_t)y0 * row + (ptrdiff_t)x0 * C, out);
                        continue;
                    }
                    for (int32_t t = 0; t < 9; t++) {
                        const int32_t iy = y0 + (t / 3) * g->dl[0], ix = x0 + (t % 3) * g->dl[1];
                        patch[t] = iy >= 0 && iy < g->h && ix >= 0 && ix < g->wi
                                       ? mf_ld32(xb + (ptrdiff_t)iy * row + (ptrdiff_t)ix * C) : pad;
                    }
                    mf_sc_dw4_sat(tab, toff_patch, (const int8_t *)patch, out);
                }
            }
        }
    }
}

static mf_status run(const mf_call *c) {
    dw_geom g;
    dw_geom_read(c, &g);
    dw_sc_view v;
    dw_sc_view_of(&g, (uint32_t)mf_attr_int(c, A_MULT), &v);
    if (!dw_geom_fits(&g) || v.taps > MF_SC_CHUNK || v.span > DW_SC_MAX_SPAN ||
        c->scratch_bytes < dw_sc_scratch_bytes(&v)) {
        return run_portable(c);
    }
    const int variant = mf_sc_variant(&g.rq, v.oc_n);
    int32_t *scratch = (int32_t *)(void *)c->scratch;
    uint32_t oc0 = 0; /* channels before it are done */
    /* pixel-major where the row path's overheads dominate (measured on the MLPerf Tiny layers): strided
     * windows and images whose longer output side is under 16 */
    const int small = g.st[0] > 1 || g.st[1] > 1 || (g.oh < 16 && g.ow < 16);
    if (small && v.dm == 1 && g.kh == 3 && g.kw == 3 && variant == MF_SC_FAST_SAT && g.ch >= 4 &&
        c->scratch_bytes >= dw_sc_scratch_bytes(&v) + 4u * DW_PX_WORDS) {
        dw_px_groups(&g, scratch + dw_sc_scratch_bytes(&v) / 4u);
        oc0 = (uint32_t)g.ch & ~3u;
    }
    for (uint32_t i = 0; i < v.wq; i++) scratch[v.taps + v.span * v.wq + i] = 0; /* the row of zeros */
    for (int32_t b = 0; b < g.batch; b++) {
        v.x = g.x + (size_t)b * (size_t)g.h * (size_t)g.wi * (size_t)g.ch;
        v.out = g.out + (size_t)b * (size_t)g.oh * (size_t)g.ow * v.oc_n;
        for (uint32_t oc = oc0; oc < v.oc_n; oc++) dw_sc_channel(&v, &g, oc, scratch, variant);
    }
    return MF_OK;
}

#else

static mf_status run(const mf_call *c) { return run_portable(c); }

#endif
/* Written over its input where the planner chose it (mcuforge.plan.choose_in_place): depthwise_in_place.c. */
static mf_status check_any(const mf_call *c) {
    const mf_status st = check(c);
    return st != MF_OK || !mf_output_on_input(c) ? st : mf_depthwise_s8_in_place_check(c);
}

static mf_status run_in_place(const mf_call *c) {
#if defined(DW_IN_PLACE_FAST)
    if (dw_dsp_in_place(c)) return MF_OK; /* the DSP channel-planar path over its input */
#endif
    return mf_depthwise_s8_in_place(c);
}

static mf_status run_any(const mf_call *c) { return mf_output_on_input(c) ? run_in_place(c) : run(c); }

const mf_kernel mf_kernel_depthwise_conv2d_s8 = {MF_KIND_HEAD_depthwise_conv2d_s8, check_any, run_any};
