/*
 * conv2d_s4: int8 2-D convolution with int4 weights, bit-exact with CMSIS-NN arm_convolve_s4 (and
 * mcuforge.kernels.conv2d_s4). NHWC input, OHWI weights packed two per byte as one run of nibbles
 * (mf_s4.h: with an odd patch size every other filter starts in a high nibble), per-channel
 * requantization, taps outside the input skipped; groups as conv2d_s8 takes them.
 *
 * run() is the portable statement of the math (mf_dot_s4 per kernel tap). With the op's scratch
 * (mcuforge.ir.kernel_scratch_bytes), the DSP and MVE paths compute the same int32 sums as a matrix
 * multiply: each output pixel's patch is copied (im2col) into the scratch -- taps outside the input hold
 * the input zero point, whose (x + input offset) is 0; a 1x1 convolution without padding reads the input
 * pixel in place -- and a block of patches meets each filter:
 *   DSP: 2 patches widened to int16 with the offset added (mf_s4_widen), a word of eight weights decoded
 *        once for both (mf_s4_mac8);
 *   MVE: 4 int8 patches; 32 weights decoded once (low and high nibbles of 16 bytes) for the four patches,
 *        each deinterleaved by VLD2 into its even and odd taps (VMLADAVA), the offset entering once per
 *        filter as offset * sum(weights) (VADDVA); the depth % 32 tail 16 weights at a time, predicated.
 *        A 1x1 convolution without padding runs filters outer instead (pointwise_filters): each filter
 *        unpacked once to int8 in the scratch, then met by the input pixels in place, four per pass.
 *        Both only when the unpacked path below does not take the op.
 * MVE, unpacked (run_unpacked): the filters unpacked to int8 into the op's scratch as many at a time as
 * its plan holds (mf_scratch_conv2d_s4_mve_unpacked: up to 4 KB of whole filters, at most 64, after
 * conv2d_s8's im2col patches), each chunk run by conv2d_s8's MVE path (mf_conv2d_mve: im2col blocks of
 * four pixels, the rows loop, the output stage's table with the offset folded into the bias): every
 * weight decoded once per op, the tap loop int8's. It takes the op when it has that planned scratch,
 * conv2d_s8's path would take it, and a filter is at most 4096 taps; the cost is the patches copied once
 * per chunk instead of once. The buffer is planned scratch, not stack, so the RAM is known at compile time.
 * S4_HALVES weights (mf_s4.h; a Helium program's, rows of an even length): on MVE the unpacked path as above
 * (mf_s4_halves_unpack) but for rows of whole 32-tap blocks from 128 taps on, which run_halves takes (faster
 * there than the unpacked path's patches copied per chunk), else run_halves: blocks of four output pixels
 * (patches im2col'd into the packed plan's scratch, or a 1x1's read in place) met by every filter, each 16-byte
 * weight load split into its low and high nibbles once for the four pixels (halves_rows: the MAC loop and output
 * stage in asm); elsewhere the portable path.
 */
#include "mf_conv_mve.h"
#include "mf_s4.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) { return mf_check_conv2d(c, MF_INT4); }

/* Not inlined into run(): its frame would sit under the MVE paths' (the stack high-water). */
static __attribute__((noinline)) mf_status run_portable(const mf_call *c) {
    mf_weighted_run k;
    mf_weighted_run_init(&k, c, A_ACT_MIN, A_STRIDE);
    const mf_tensor x = k.x, w = k.w, o = k.o;
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], wc = w.shape[3], oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    const uint32_t oc_per_group = oc_n / (ch / wc);
    const int halves = w.layout == MF_LAYOUT_S4_HALVES;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t y0 = (int64_t)oy * k.st[0] - k.pd[0], x0 = (int64_t)ox * k.st[1] - k.pd[1];
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    int32_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * k.dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * k.dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const int8_t *xp = xd + (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch +
                                               (size_t)(oc / oc_per_group) * wc;
                            const uint32_t tap = (ky * kw + kx) * wc;
                            acc += halves ? mf_dot_s4_halves(xp, wd, kh * kw * wc, oc, tap, wc, k.in_off)
                                          : mf_dot_s4(xp, wd, oc * kh * kw * wc + tap, wc, k.in_off);
                        }
                    }
                    *out++ = mf_s4_requant(&k.rq, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)

typedef struct {
    const int8_t *x;         /* input image n, first channel of the group */
    int32_t h, w;            /* input height, width */
    uint32_t ch, wc, kh, kw; /* input channels, filter channels, kernel */
    int32_t st[2], pd[2], dl[2];
    int8_t zero_point;       /* -input offset: a tap outside the input */
} conv_geom;

/* The patch of output pixel (oy, ox), in the weights' (ky, kx, c) order. */
static void patch_s8(const conv_geom *g, uint32_t p, uint32_t ow, int8_t *col) {
    const int32_t y0 = (int32_t)(p / ow) * g->st[0] - g->pd[0], x0 = (int32_t)(p % ow) * g->st[1] - g->pd[1];
    for (uint32_t ky = 0; ky < g->kh; ky++) {
        const int32_t iy = y0 + (int32_t)ky * g->dl[0];
        for (uint32_t kx = 0; kx < g->kw; kx++, col += g->wc) {
            const int32_t ix = x0 + (int32_t)kx * g->dl[1];
            if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) {
                memset(col, (uint8_t)g->zero_point, g->wc);
            } else {
                memcpy(col, g->x + ((size_t)iy * (size_t)g->w + (size_t)ix) * g->ch, g->wc);
            }
        }
    }
}

/* The patch of output pixel p of a 1x1 convolution without padding: the input pixel's channels. */
static inline const int8_t *in_place(const conv_geom *g, uint32_t p, uint32_t ow) {
    const size_t iy = (size_t)(p / ow) * (size_t)g->st[0], ix = (size_t)(p % ow) * (size_t)g->st[1];
    return g->x + (iy * (size_t)g->w + ix) * g->ch;
}

#if defined(MF_USE_DSP)
#define NCOLS 2u

/* Filters [oc0, oc0 + rows) on two widened patches (stride d8: depth rounded up to 8); col1 NULL: one. */
static void mat_mult_2cols(const int16_t *col0, const int16_t *col1, const int32_t sums[2], const int8_t *w,
                           uint32_t oc0, uint32_t rows, uint32_t depth, const mf_channel_requant *rq, int8_t *out0,
                           int8_t *out1) {
    const uint32_t d8 = depth & ~7u;
    for (uint32_t r = 0; r < rows; r++) {
        const uint32_t oc = oc0 + r, start = oc * depth;
        const uint8_t *p = (const uint8_t *)w + (start >> 1);
        int32_t a0 = 0, a1 = 0;
        for (uint32_t g = 0; g < d8; g += 8, p += 4) {
            const uint32_t word = mf_s4_word(p, start & 1u);
            a0 = mf_s4_mac8(word, col0 + g, a0);
            if (col1 != NULL) a1 = mf_s4_mac8(word, col1 + g, a1);
        }
        a0 = mf_add_wrap(a0, -8 * sums[0]);
        a1 = mf_add_wrap(a1, -8 * sums[1]);
        for (uint32_t k = d8; k < depth; k++) {
            const int32_t wk = mf_s4_at(w, start + k);
            a0 += col0[k] * wk;
            if (col1 != NULL) a1 += col1[k] * wk;
        }
        out0[r] = mf_s4_requant_inline(rq, oc, a0);
        if (col1 != NULL) out1[r] = mf_s4_requant_inline(rq, oc, a1);
    }
}

#else /* MVE */
#define NCOLS 4u

/* Filters [oc0, oc0 + rows) on n_cols (<= 4) int8 patches; pixel i's outputs at out + pixel_offsets[i]. The
 * four outputs of a filter share its requantization: one vector requantize, one scatter store (or the scalar
 * requantization when a multiplier is INT32_MIN, see mf_requantize_x4). */
static void mat_mult_4cols(const int8_t *const cols[4], uint32_t n_cols, const int8_t *w, uint32_t oc0, uint32_t rows,
                           uint32_t depth, int32_t in_off, const mf_channel_requant *rq, int vector_rq, int8_t *out,
                           const uint32x4_t pixel_offsets) {
    /* the sums become a vector by two VMOVs (mf_mve_lanes4): the store offsets are built the same way */
    const uint32_t step = vgetq_lane_u32(pixel_offsets, 1); /* oc_n: pixel i's outputs at out + i * step */
    const uint32x4_t offs = vreinterpretq_u32_s32(
        mf_mve_lanes4(0, (int32_t)step, (int32_t)(2u * step), (int32_t)(3u * step)));
    const mve_pred16_t store = vcmphiq_u32(vdupq_n_u32(n_cols * step), offs);
    const int32x4_t lo = vdupq_n_s32(rq->lo), hi = vdupq_n_s32(rq->hi);
    const int8_t *c0 = cols[0], *c1 = cols[1], *c2 = cols[2], *c3 = cols[3];
    const uint32_t d32 = depth & ~31u;
    for (uint32_t r = 0; r < rows; r++) {
        const uint32_t oc = oc0 + r, start = oc * depth;
        const uint8_t *p = (const uint8_t *)w + (start >> 1);
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, ws = 0; /* scalars: an array lived in memory */
        uint32_t k0 = 0;
#if defined(__OPTIMIZE__)
        if (!(start & 1u) && d32) { /* the same loop in asm (GCC's spilled the patch pointers): low nibbles
                                     * = even taps (VSHL, VSHR), high = odd, VLD20/VLD21 deinterleaving */
            const uint8_t *pp = p;
            const int8_t *x0 = c0, *x1 = c1, *x2 = c2, *x3 = c3;
            __asm__ volatile("   wls          lr, %[iters], 1f\n"
                             "2: vldrb.8      q3, [%[p]], #16\n"
                             "   vld20.8      {q0, q1}, [%[x0]]\n"
                             "   vshl.i8      q4, q3, #4\n"
                             "   vld21.8      {q0, q1}, [%[x0]]!\n"
                             "   vshr.s8      q4, q4, #4\n"
                             "   vshr.s8      q3, q3, #4\n"
                             "   vmladava.s8  %[a0], q0, q4\n"
                             "   vld20.8      {q5, q6}, [%[x1]]\n"
                             "   vmladava.s8  %[a0], q1, q3\n"
                             "   vld21.8      {q5, q6}, [%[x1]]!\n"
                             "   vmladava.s8  %[a1], q5, q4\n"
                             "   vld20.8      {q0, q1}, [%[x2]]\n"
                             "   vmladava.s8  %[a1], q6, q3\n"
                             "   vld21.8      {q0, q1}, [%[x2]]!\n"
                             "   vmladava.s8  %[a2], q0, q4\n"
                             "   vld20.8      {q5, q6}, [%[x3]]\n"
                             "   vmladava.s8  %[a2], q1, q3\n"
                             "   vld21.8      {q5, q6}, [%[x3]]!\n"
                             "   vmladava.s8  %[a3], q5, q4\n"
                             "   vaddva.s8    %[ws], q4\n"
                             "   vmladava.s8  %[a3], q6, q3\n"
                             "   vaddva.s8    %[ws], q3\n"
                             "   le           lr, 2b\n"
                             "1:\n"
                             : [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2), [a3] "+Te"(a3), [ws] "+Te"(ws),
                               [p] "+r"(pp), [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3)
                             : [iters] "r"(d32 / 32u)
                             : "q0", "q1", "q3", "q4", "q5", "q6", "lr", "memory");
            k0 = d32;
        }
#endif
        for (uint32_t k = k0; k < d32; k += 32) { /* 32 weights decoded once, each patch deinterleaved by VLD2 */
            int8x16_t ev, od;
            mf_s4_split32(p + k / 2, start & 1u, &ev, &od);
            ws = vaddvaq_s8(vaddvaq_s8(ws, ev), od);
            int8x16x2_t xv = vld2q_s8(c0 + k);
            a0 = vmladavaq_s8(vmladavaq_s8(a0, xv.val[0], ev), xv.val[1], od);
            xv = vld2q_s8(c1 + k);
            a1 = vmladavaq_s8(vmladavaq_s8(a1, xv.val[0], ev), xv.val[1], od);
            xv = vld2q_s8(c2 + k);
            a2 = vmladavaq_s8(vmladavaq_s8(a2, xv.val[0], ev), xv.val[1], od);
            xv = vld2q_s8(c3 + k);
            a3 = vmladavaq_s8(vmladavaq_s8(a3, xv.val[0], ev), xv.val[1], od);
        }
        for (uint32_t k = d32; k < depth; k += 16) { /* the tail, 16 at a time, predicated */
            const mve_pred16_t pred = vctp8q(depth - k);
            const int8x16_t wv = mf_s4_decode16(p + k / 2, start & 1u, depth - k);
            ws = vaddvaq_s8(ws, wv);
            a0 = vmladavaq_s8(a0, vldrbq_z_s8(c0 + k, pred), wv);
            a1 = vmladavaq_s8(a1, vldrbq_z_s8(c1 + k, pred), wv);
            a2 = vmladavaq_s8(a2, vldrbq_z_s8(c2 + k, pred), wv);
            a3 = vmladavaq_s8(a3, vldrbq_z_s8(c3 + k, pred), wv);
        }
        const int32_t corr = ws * in_off; /* |sum(w)| <= 2^19, |in_off| <= 128 */
        if (vector_rq) {
            const uint32_t k = rq->per_channel ? oc : 0;
            int32x4_t acc = vaddq_n_s32(mf_mve_lanes4(a0, a1, a2, a3), mf_add_wrap(corr, mf_rq_bias(rq, oc)));
            acc = vaddq_n_s32(mf_requantize_x4_n(acc, mf_rq_mult(rq, oc), rq->shift[k]), rq->out_off);
            acc = vminq_s32(vmaxq_s32(acc, lo), hi);
            vstrbq_scatter_offset_p_s32(out + r, offs, acc, store);
        } else {
            const int32_t a[4] = {a0, a1, a2, a3};
            for (uint32_t i = 0; i < n_cols; i++) {
                out[step * i + r] = mf_s4_requant_inline(rq, oc, mf_add_wrap(a[i], corr));
            }
        }
    }
}
#endif

#if defined(MF_USE_MVE)
/* n bytes from src to dst (not overlapping): one tail-predicated loop of 16 bytes an iteration (WLSTP/LETP), a few
 * cycles where a call of memcpy costs tens for a window row's 48. */
static inline void copy_run(int8_t *dst, const int8_t *src, uint32_t n) {
#if defined(__OPTIMIZE__)
    __asm__ volatile("   wlstp.8      lr, %[n], 1f\n"
                     "2: vldrb.8      q0, [%[s]], #16\n"
                     "   vstrb.8      q0, [%[d]], #16\n"
                     "   letp         lr, 2b\n"
                     "1:\n"
                     : [s] "+r"(src), [d] "+r"(dst)
                     : [n] "r"(n)
                     : "q0", "lr", "memory");
#else
    memcpy(dst, src, n);
#endif
}

/* patch_s8 with each window row inside the input copied as one run when its taps are adjacent over every
 * channel (dilation 1, one group): kw * wc bytes by one copy_run instead of kw memcpys. */
static void patch_s8_rows(const conv_geom *g, uint32_t p, uint32_t ow, int8_t *col) {
    if (g->dl[1] != 1 || g->wc != g->ch) {
        patch_s8(g, p, ow, col);
        return;
    }
    const int32_t y0 = (int32_t)(p / ow) * g->st[0] - g->pd[0], x0 = (int32_t)(p % ow) * g->st[1] - g->pd[1];
    const int x_inside = x0 >= 0 && x0 + (int32_t)g->kw - 1 < g->w;
    for (uint32_t ky = 0; ky < g->kh; ky++) {
        const int32_t iy = y0 + (int32_t)ky * g->dl[0];
        if (x_inside && iy >= 0 && iy < g->h) {
            copy_run(col, g->x + ((size_t)iy * (size_t)g->w + (size_t)x0) * g->ch, g->kw * g->wc);
            col += g->kw * g->wc;
            continue;
        }
        for (uint32_t kx = 0; kx < g->kw; kx++, col += g->wc) {
            const int32_t ix = x0 + (int32_t)kx;
            if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) {
                memset(col, (uint8_t)g->zero_point, g->wc);
            } else {
                memcpy(col, g->x + ((size_t)iy * (size_t)g->w + (size_t)ix) * g->ch, g->wc);
            }
        }
    }
}
#endif

#if defined(MF_USE_MVE)
/* A 1x1 convolution without padding: filters outer, each unpacked once to int8 (wbuf: depth bytes of the
 * scratch) with its weight sum, then met by the input pixels in place, four at a time: per 16 taps one load
 * of the filter shared by the four (VMLADAVA); the outputs of a filter at out + pixel * oc_n. */
static __attribute__((noinline)) void pointwise_filters(const conv_geom *g, uint32_t pixels, uint32_t ow,
                                                       const int8_t *w, uint32_t oc0, uint32_t rows, uint32_t depth,
                                                       uint32_t oc_n, int32_t in_off, const mf_channel_requant *rq,
                                                       int vector_rq, int halves, int8_t *wbuf, int8_t *out) {
    /* pixel i's output at i * oc_n, in the lane order of mf_mve_lanes4 (how the sums are put together) */
    const uint32x4_t pixel_offsets = vreinterpretq_u32_s32(
        mf_mve_lanes4(0, (int32_t)oc_n, (int32_t)(2u * oc_n), (int32_t)(3u * oc_n)));
    const int32x4_t lo = vdupq_n_s32(rq->lo), hi = vdupq_n_s32(rq->hi);
    const int unit_stride = g->st[0] == 1 && g->st[1] == 1 && ow == (uint32_t)g->w;
    for (uint32_t r = 0; r < rows; r++) {
        const uint32_t oc = oc0 + r, start = oc * depth;
        const uint8_t *p = (const uint8_t *)w + (start >> 1);
        int32_t ws = 0;
        if (halves) { /* S4_HALVES: the row at byte oc * depth / 2 (= start >> 1, depth even) */
            mf_s4_halves_unpack((const int8_t *)p, depth, wbuf);
            ws = in_off != 0 ? mf_s4_halves_sum((const int8_t *)p, depth) : 0;
        }
        for (uint32_t k = 0; !halves && k < depth; k += 16) {
            const int8x16_t wv = mf_s4_decode16(p + k / 2, start & 1u, depth - k);
            ws = vaddvaq_s8(ws, wv);
            vstrbq_p_s8(wbuf + k, wv, vctp8q(depth - k));
        }
        const int32_t base = mf_add_wrap(ws * in_off, mf_rq_bias(rq, oc)); /* |sum(w)| <= 2^19, |in_off| <= 128 */
        const int32_t mult = mf_rq_mult(rq, oc), shift = rq->shift[rq->per_channel ? oc : 0];
        for (uint32_t p0 = 0; p0 < pixels; p0 += 4) {
            const uint32_t n_cols = pixels - p0 < 4u ? pixels - p0 : 4u;
            const int8_t *c0, *c1, *c2, *c3; /* pixels past n_cols repeat p0, their outputs not written */
            if (unit_stride) { /* the pixels are consecutive in the input */
                c0 = g->x + (size_t)p0 * g->ch;
                c1 = n_cols > 1 ? c0 + g->ch : c0;
                c2 = n_cols > 2 ? c0 + 2 * g->ch : c0;
                c3 = n_cols > 3 ? c0 + 3 * g->ch : c0;
            } else {
                c0 = in_place(g, p0, ow);
                c1 = n_cols > 1 ? in_place(g, p0 + 1, ow) : c0;
                c2 = n_cols > 2 ? in_place(g, p0 + 2, ow) : c0;
                c3 = n_cols > 3 ? in_place(g, p0 + 3, ow) : c0;
            }
            int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            const int8_t *wp = wbuf;
#if defined(__OPTIMIZE__)
            /* one tail-predicated loop (WLSTP/LETP), loads and VMLADAVAs interleaved: the Cortex-M55 overlaps
             * a load with the multiply-accumulate after it (GCC's loop grouped the loads, kept a counter) */
            __asm__ volatile("   wlstp.8      lr, %[n], 1f\n"
                             "2: vldrb.8      q0, [%[w]], #16\n"
                             "   vldrb.8      q1, [%[x0]], #16\n"
                             "   vmladava.s8  %[a0], q1, q0\n"
                             "   vldrb.8      q2, [%[x1]], #16\n"
                             "   vmladava.s8  %[a1], q2, q0\n"
                             "   vldrb.8      q1, [%[x2]], #16\n"
                             "   vmladava.s8  %[a2], q1, q0\n"
                             "   vldrb.8      q2, [%[x3]], #16\n"
                             "   vmladava.s8  %[a3], q2, q0\n"
                             "   letp         lr, 2b\n"
                             "1:\n"
                             : [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2), [a3] "+Te"(a3), [w] "+r"(wp),
                               [x0] "+r"(c0), [x1] "+r"(c1), [x2] "+r"(c2), [x3] "+r"(c3)
                             : [n] "r"(depth)
                             : "q0", "q1", "q2", "lr", "memory");
#else
            const uint32_t d16 = depth & ~15u;
            uint32_t k = 0;
            for (; k < d16; k += 16, wp += 16, c0 += 16, c1 += 16, c2 += 16, c3 += 16) { /* whole vectors */
                const int8x16_t wv = vld1q_s8(wp);
                a0 = vmladavaq_s8(a0, vld1q_s8(c0), wv);
                a1 = vmladavaq_s8(a1, vld1q_s8(c1), wv);
                a2 = vmladavaq_s8(a2, vld1q_s8(c2), wv);
                a3 = vmladavaq_s8(a3, vld1q_s8(c3), wv);
            }
            if (k < depth) { /* the tail, predicated */
                const mve_pred16_t pred = vctp8q(depth - k);
                const int8x16_t wv = vldrbq_z_s8(wp, pred);
                a0 = vmladavaq_s8(a0, vldrbq_z_s8(c0, pred), wv);
                a1 = vmladavaq_s8(a1, vldrbq_z_s8(c1, pred), wv);
                a2 = vmladavaq_s8(a2, vldrbq_z_s8(c2, pred), wv);
                a3 = vmladavaq_s8(a3, vldrbq_z_s8(c3, pred), wv);
            }
#endif
            int8_t *o = out + (size_t)p0 * oc_n + r;
            if (vector_rq) { /* the sums as one vector by two VMOVs, its lanes' store offsets built alike */
                int32x4_t acc = vaddq_n_s32(mf_mve_lanes4(a0, a1, a2, a3), base);
                acc = vaddq_n_s32(mf_requantize_x4_n(acc, mult, shift), rq->out_off);
                acc = vminq_s32(vmaxq_s32(acc, lo), hi);
                vstrbq_scatter_offset_p_s32(o, pixel_offsets, acc, vcmphiq_u32(vdupq_n_u32(n_cols * oc_n), pixel_offsets));
            } else {
                const int32_t a[4] = {a0, a1, a2, a3};
                for (uint32_t i = 0; i < n_cols; i++) {
                    o[(size_t)i * oc_n] = mf_s4_requant_inline(rq, oc, mf_add_wrap(a[i], ws * in_off));
                }
            }
        }
    }
}
#endif

#if defined(MF_USE_MVE)
#if defined(__OPTIMIZE__) /* halves_rows' asm needs an optimized build's registers */
#define HALVES_TABLE 64u /* filters per table (768 bytes of run_halves' stack, as conv2d_s8's MVE_TABLE) */

/* A filter's output-stage constants: bias + in_off * sum(w) (wrapping as the accumulation does), multiplier and
 * shift (the tensor's for every filter when per tensor); conv2d_s8's mve_filter. */
typedef struct {
    int32_t base, mult, shift;
} halves_filter;

/* halves_rows' per-call values, read by its asm from memory (the asm has no register to spare for them). */
typedef struct {
    const int8_t *x;   /* patch 0; patch i at x + i * depth */
    uint32_t depth;    /* the patches' stride */
    uint32_t iters;    /* whole blocks of 32 taps (>= 1) */
    uint32_t th;       /* the last block's half (0: none) */
    uint32_t store;    /* the scatter store's predicate (the n_cols pixels' lanes) */
    int32_t out_off;
} halves_frame;

/* One filter (weights at p, moved on to the next row; constants at t) on four patches: the MAC loop of
 * halves_4cols in asm (loads, ALU operations and VMLADAVAs alternating: the Cortex-M55 overlaps neighbours of
 * different units), TAIL the last block, then conv2d_s8's output stage on the four sums as one vector (MVE_REQ_GENERAL,
 * mf_conv_mve.h), + output offset, clamp, the byte scatter store of the lanes in the store predicate. */
#define HALVES_TAIL                                                                                   \
    "   ldr          lr, [%[fr], #12]\n"                                                           \
    "   cmp          lr, #0\n"                                                                     \
    "   beq          6f\n"                                                                         \
    "   vctp.8       lr\n"                                                                         \
    "   vpstt\n"                                                                                   \
    "   vldrbt.8     q2, [%[p]]\n"                                                             \
    "   vldrbt.8     q0, [%[x0]]\n"                                                                \
    "   add          %[p], %[p], lr\n"                                                             \
    "   add          %[x0], %[x0], lr\n"                                                           \
    "   vshl.i8      q3, q2, #4\n"                                                                 \
    "   vpst\n"                                                                                    \
    "   vldrbt.8     q1, [%[x0]]\n"                                                                \
    "   vand         q2, q2, %q[high]\n"                                                           \
    "   vmladava.s8  %[a0], q0, q3\n"                                                              \
    "   vpst\n"                                                                                    \
    "   vldrbt.8     q0, [%[x1]]\n"                                                                \
    "   vmladava.s8  %[a0], q1, q2\n"                                                              \
    "   add          %[x1], %[x1], lr\n"                                                           \
    "   vpst\n"                                                                                    \
    "   vldrbt.8     q1, [%[x1]]\n"                                                                \
    "   vmladava.s8  %[a1], q0, q3\n"                                                              \
    "   vpst\n"                                                                                    \
    "   vldrbt.8     q0, [%[x2]]\n"                                                                \
    "   vmladava.s8  %[a1], q1, q2\n"                                                              \
    "   add          %[x2], %[x2], lr\n"                                                           \
    "   vpst\n"                                                                                    \
    "   vldrbt.8     q1, [%[x2]]\n"                                                                \
    "   vmladava.s8  %[a2], q0, q3\n"                                                              \
    "   vpst\n"                                                                                    \
    "   vldrbt.8     q0, [%[x3]]\n"                                                                \
    "   vmladava.s8  %[a2], q1, q2\n"                                                              \
    "   add          %[x3], %[x3], lr\n"                                                           \
    "   vpst\n"                                                                                    \
    "   vldrbt.8     q1, [%[x3]]\n"                                                                \
    "   vmladava.s8  %[a3], q0, q3\n"                                                              \
    "   vmladava.s8  %[a3], q1, q2\n"                                                              \
    "6:\n"
#define HALVES_ROW_ASM(TAIL)                                                                          \
    __asm__ volatile("   ldrd         %[x0], %[x3], [%[fr]]\n"                                      \
                     "   ldr          %[a0], [%[fr], #8]\n"                                         \
                     "   add          %[x1], %[x0], %[x3]\n"                                        \
                     "   add          %[x2], %[x1], %[x3]\n"                                        \
                     "   add          %[x3], %[x2], %[x3]\n"                                        \
                     "   dls          lr, %[a0]\n"                                                  \
                     "   movs         %[a0], #0\n"                                                  \
                     "   movs         %[a1], #0\n"                                                  \
                     "   movs         %[a2], #0\n"                                                  \
                     "   movs         %[a3], #0\n"                                                  \
                     "2: vldrb.8      q2, [%[p]], #16\n"                                            \
                     "   vshl.i8      q3, q2, #4\n"                                                 \
                     "   vldrb.8      q0, [%[x0]], #32\n"                                           \
                     "   vand         q2, q2, %q[high]\n"                                           \
                     "   vldrb.8      q1, [%[x0], #-16]\n"                                          \
                     "   vmladava.s8  %[a0], q0, q3\n"                                              \
                     "   vldrb.8      q0, [%[x1]], #32\n"                                           \
                     "   vmladava.s8  %[a0], q1, q2\n"                                              \
                     "   vldrb.8      q1, [%[x1], #-16]\n"                                          \
                     "   vmladava.s8  %[a1], q0, q3\n"                                              \
                     "   vldrb.8      q0, [%[x2]], #32\n"                                           \
                     "   vmladava.s8  %[a1], q1, q2\n"                                              \
                     "   vldrb.8      q1, [%[x2], #-16]\n"                                          \
                     "   vmladava.s8  %[a2], q0, q3\n"                                              \
                     "   vldrb.8      q0, [%[x3]], #32\n"                                           \
                     "   vmladava.s8  %[a2], q1, q2\n"                                              \
                     "   vldrb.8      q1, [%[x3], #-16]\n"                                          \
                     "   vmladava.s8  %[a3], q0, q3\n"                                              \
                     "   vmladava.s8  %[a3], q1, q2\n"                                              \
                     "   le           lr, 2b\n" TAIL                                                \
                     "   vmov         q3[2], q3[0], %[a0], %[a2]\n"                                 \
                     "   vmov         q3[3], q3[1], %[a1], %[a3]\n"                                 \
                     "   ldr          %[a0], [%[t]]\n"                                              \
                     "   ldrd         %[a2], %[a3], [%[t], #4]\n"                                   \
                     "   vshr.s32     q3, q3, #4\n"                                                 \
                     "   vadd.i32     q3, q3, %[a0]\n" MVE_REQ_GENERAL                              \
                     "   ldrd         %[a0], %[a1], [%[fr], #16]\n"                                 \
                     "   vadd.i32     q3, q3, %[a1]\n"                                              \
                     "   vmax.s32     q3, q3, %q[lo]\n"                                             \
                     "   vmin.s32     q3, q3, %q[hi]\n"                                             \
                     "   vmsr         p0, %[a0]\n"                                                  \
                     "   vpst\n"                                                                    \
                     "   vstrbt.32    q3, [%[out], %q[offs]]\n"                                     \
                     : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [x0] "=&r"(x0),   \
                       [x1] "=&r"(x1), [x2] "=&r"(x2), [x3] "=&r"(x3), [p] "+&r"(p)                          \
                     : [fr] "r"(fr), [t] "r"(t), [out] "r"(out), [high] "w"(high), [lo] "w"(lo), [hi] "w"(hi), \
                       [offs] "w"(offs)                                                              \
                     : "q0", "q1", "q2", "q3", "lr", "memory", "cc")

/* halves_4cols' common case (an optimized build, the vector requantization, a row of 32 taps or more, the four
 * patches depth bytes apart from fr->x): every filter by HALVES_ROW_ASM, the C loop only stepping the pointers. */
static __attribute__((noinline)) void halves_rows(const halves_frame *fr, const int8_t *w, uint32_t rows,
                                                  const halves_filter *t, const mf_channel_requant *rq, int8_t *out,
                                                  uint32_t step) {
    const uint32x4_t offs = vreinterpretq_u32_s32(
        mf_mve_lanes4(0, (int32_t)step, (int32_t)(2u * step), (int32_t)(3u * step)));
    const int32x4_t lo = vdupq_n_s32(rq->lo), hi = vdupq_n_s32(rq->hi);
    const int8x16_t high = vdupq_n_s8(MF_S4_HALVES_HIGH);
    const int8_t *p = w;
    int32_t a0, a1, a2, a3;
    const int8_t *x0, *x1, *x2, *x3;
    for (uint32_t r = 0; r < rows; r++, t++, out++) HALVES_ROW_ASM(HALVES_TAIL);
    (void)a0, (void)a1, (void)a2, (void)a3, (void)x0, (void)x1, (void)x2, (void)x3;
}

/* t[f] for filters f0 .. f0 + n - 1 (S4_HALVES rows at w, the first f0's): bias + in_off * sum(w), wrapping as the
 * accumulation does (|sum(w)| <= 2^19, |in_off| <= 128), multiplier, shift. */
static void halves_table(halves_filter *t, const int8_t *w, uint32_t f0, uint32_t n, uint32_t depth, int32_t in_off,
                         const mf_channel_requant *rq) {
    for (uint32_t f = 0; f < n; f++, w += depth / 2u) {
        const int32_t corr = in_off != 0 ? mf_s4_halves_sum(w, depth) * in_off : 0;
        t[f].base = mf_add_wrap(corr, mf_rq_bias(rq, f0 + f));
        t[f].mult = mf_rq_mult(rq, f0 + f);
        t[f].shift = rq->shift[rq->per_channel ? f0 + f : 0u];
    }
}
#endif

#if defined(__OPTIMIZE__)
/* run_halves' common case (an optimized build, the vector requantization, 32 taps or more): the group's filters a
 * table at a time, each table's filters on blocks of four pixels by halves_rows, the patches depth bytes apart --
 * copied into the scratch, or in place when the block's four pixels are consecutive in the input (a 1x1 of unit
 * stride whose output rows are the input's). */
static __attribute__((noinline)) void run_halves_rows(const mf_call *c, const mf_weighted_run *k, conv_geom *g,
                                                      int pointwise) {
    const mf_tensor x = k->x, w = k->w, o = k->o;
    const uint32_t oc_n = w.shape[0], groups = g->ch / g->wc, opg = oc_n / groups;
    const uint32_t depth = g->kh * g->kw * g->wc, half = depth / 2u, ow = o.shape[2], pixels = o.shape[1] * ow;
    const int8_t *wd = (const int8_t *)w.data;
    int8_t *scratch = (int8_t *)c->scratch;
    const int consecutive = pointwise && g->st[0] == 1 && g->st[1] == 1 && ow == (uint32_t)g->w && groups == 1u;
    const uint32x4_t lanes = vreinterpretq_u32_s32(
        mf_mve_lanes4(0, (int32_t)oc_n, (int32_t)(2u * oc_n), (int32_t)(3u * oc_n)));
    halves_frame fr = {.depth = depth, .iters = depth / 32u, .th = (depth & 31u) >> 1, .out_off = k->rq.out_off};
    halves_filter table[HALVES_TABLE];
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g->ch;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * oc_n;
        for (uint32_t grp = 0; grp < groups; grp++) {
            g->x = image + (size_t)grp * g->wc;
            const uint32_t f0 = grp * opg;
            for (uint32_t f = 0; f < opg; f += HALVES_TABLE) {
                const uint32_t nf = opg - f < HALVES_TABLE ? opg - f : HALVES_TABLE;
                const int8_t *wf = wd + (size_t)(f0 + f) * half;
                halves_table(table, wf, f0 + f, nf, depth, k->in_off, &k->rq);
                for (uint32_t p0 = 0; p0 < pixels; p0 += 4u) {
                    const uint32_t n_cols = pixels - p0 < 4u ? pixels - p0 : 4u;
                    if (consecutive && n_cols == 4u) {
                        fr.x = g->x + (size_t)p0 * g->ch;
                    } else {
                        for (uint32_t i = 0; i < n_cols; i++) {
                            if (pointwise) {
                                memcpy(scratch + (size_t)i * depth, in_place(g, p0 + i, ow), depth);
                            } else {
                                patch_s8_rows(g, p0 + i, ow, scratch + (size_t)i * depth);
                            }
                        }
                        fr.x = scratch; /* patches past n_cols: stale bytes, their outputs not written */
                    }
                    fr.store = vcmphiq_u32(vdupq_n_u32(n_cols * oc_n), lanes);
                    halves_rows(&fr, wf, nf, table, &k->rq, out_image + (size_t)p0 * oc_n + f0 + f, oc_n);
                }
            }
        }
    }
}
#endif

/* conv2d_s4 on Helium with S4_HALVES weights and the packed plan's scratch (or more): run_halves_rows where it
 * applies, else one pixel at a time, each patch copied (im2col) into the scratch or, for a 1x1 convolution without
 * padding, read in place. */
static __attribute__((noinline)) void run_halves(const mf_call *c) {
    mf_weighted_run k;
    mf_weighted_run_init(&k, c, A_ACT_MIN, A_STRIDE);
    const mf_tensor x = k.x, w = k.w, o = k.o;
    conv_geom g = {.st = {k.st[0], k.st[1]}, .pd = {k.pd[0], k.pd[1]}, .dl = {k.dl[0], k.dl[1]}};
    g.h = (int32_t)x.shape[1];
    g.w = (int32_t)x.shape[2];
    g.ch = x.shape[3];
    g.wc = w.shape[3];
    g.kh = w.shape[1];
    g.kw = w.shape[2];
    g.zero_point = (int8_t)(-k.in_off);
    const uint32_t oc_n = w.shape[0], groups = g.ch / g.wc, opg = oc_n / groups;
    const uint32_t depth = g.kh * g.kw * g.wc, half = depth / 2u, ow = o.shape[2], pixels = o.shape[1] * ow;
    const int8_t *wd = (const int8_t *)w.data;
    int8_t *scratch = (int8_t *)c->scratch;
    const int pointwise = g.kh == 1 && g.kw == 1 && g.pd[0] == 0 && g.pd[1] == 0 &&
                          ((int32_t)o.shape[1] - 1) * g.st[0] < g.h && ((int32_t)ow - 1) * g.st[1] < g.w;
    const int vector_rq = mf_requant_vector_ok(&k.rq, oc_n);
#if defined(__OPTIMIZE__)
    if (vector_rq && depth >= 32u) {
        run_halves_rows(c, &k, &g, pointwise);
        return;
    }
#endif
    /* else each pixel's patch a fully connected row (mf_s4_halves_row, fully_connected_s4's): four filters a pass
     * sharing the patch's loads, the offset's in_off * sum(w) summed per pixel */
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g.ch;
        int8_t *out = (int8_t *)o.data + (size_t)n * pixels * oc_n;
        for (uint32_t p = 0; p < pixels; p++, out += oc_n) {
            for (uint32_t grp = 0; grp < groups; grp++) {
                g.x = image + (size_t)grp * g.wc;
                const int8_t *patch = scratch;
                if (pointwise) {
                    patch = in_place(&g, p, ow);
                } else {
                    patch_s8_rows(&g, p, ow, scratch);
                }
                const uint32_t f0 = grp * opg;
                mf_s4_halves_row(patch, wd + (size_t)f0 * half, f0, opg, depth, k.in_off, NULL, &k.rq, vector_rq,
                                 out + f0);
            }
        }
    }
}
#endif

#if defined(MF_USE_DSP)
/* The DSP columns' stride: the patch rounded up to 8 (mf_scratch_conv2d_s4_im2col plans 5 of them). */
static uint32_t depth8(uint32_t depth) { return (depth + 7u) & ~7u; }
#endif

static mf_status run_fast(const mf_call *c) {
    mf_weighted_run k;
    mf_weighted_run_init(&k, c, A_ACT_MIN, A_STRIDE);
    const mf_tensor x = k.x, w = k.w, o = k.o;
    conv_geom g = {.st = {k.st[0], k.st[1]}, .pd = {k.pd[0], k.pd[1]}, .dl = {k.dl[0], k.dl[1]}};
    g.h = (int32_t)x.shape[1];
    g.w = (int32_t)x.shape[2];
    g.ch = x.shape[3];
    g.wc = w.shape[3];
    g.kh = w.shape[1];
    g.kw = w.shape[2];
    g.zero_point = (int8_t)(-k.in_off);
    const uint32_t oc_n = w.shape[0], groups = g.ch / g.wc, opg = oc_n / groups;
    const uint32_t depth = g.kh * g.kw * g.wc, ow = o.shape[2], pixels = o.shape[1] * ow;
    const int8_t *wd = (const int8_t *)w.data;
    int8_t *scratch = (int8_t *)c->scratch;
    /* 1x1, no padding: the patch is the input pixel itself, read in place */
    const int pointwise = g.kh == 1 && g.kw == 1 && g.pd[0] == 0 && g.pd[1] == 0 &&
                          ((int32_t)o.shape[1] - 1) * g.st[0] < g.h && ((int32_t)ow - 1) * g.st[1] < g.w;
#if defined(MF_USE_MVE)
    const int vector_rq = mf_requant_vector_ok(&k.rq, oc_n);
    const uint32x4_t pixel_offsets = vmulq_n_u32(vidupq_n_u32(0, 1), oc_n);
#endif
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g.ch;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * oc_n;
        for (uint32_t grp = 0; grp < groups; grp++) {
            g.x = image + (size_t)grp * g.wc;
#if defined(MF_USE_MVE)
            if (pointwise) {
                pointwise_filters(&g, pixels, ow, wd, grp * opg, opg, depth, oc_n, k.in_off, &k.rq, vector_rq,
                                  w.layout == MF_LAYOUT_S4_HALVES, scratch, out_image + grp * opg);
                continue;
            }
#endif
            for (uint32_t p0 = 0; p0 < pixels; p0 += NCOLS) {
                const uint32_t n_cols = pixels - p0 < NCOLS ? pixels - p0 : NCOLS;
                int8_t *out0 = out_image + (size_t)p0 * oc_n + grp * opg;
#if defined(MF_USE_DSP)
                int16_t *cols = (int16_t *)(void *)scratch;
                int8_t *staging = scratch + 4u * depth8(depth);
                int32_t sums[2] = {0, 0};
                for (uint32_t i = 0; i < n_cols; i++) {
                    const int8_t *patch = staging;
                    if (pointwise) {
                        patch = in_place(&g, p0 + i, ow);
                    } else {
                        patch_s8(&g, p0 + i, ow, staging);
                    }
                    sums[i] = mf_s4_widen(patch, depth, k.in_off, cols + (size_t)i * depth8(depth));
                }
                mat_mult_2cols(cols, n_cols > 1 ? cols + depth8(depth) : NULL, sums, wd, grp * opg, opg, depth, &k.rq,
                               out0, out0 + oc_n);
#else
                const int8_t *cols[4];
                for (uint32_t i = 0; i < NCOLS; i++) {
                    if (i >= n_cols) {
                        cols[i] = cols[0]; /* repeats patch 0, its outputs not written */
                    } else if (pointwise) {
                        cols[i] = in_place(&g, p0 + i, ow);
                    } else {
                        int8_t *col = scratch + (size_t)i * depth;
                        patch_s8_rows(&g, p0 + i, ow, col);
                        cols[i] = col;
                    }
                }
                mat_mult_4cols(cols, n_cols, wd, grp * opg, opg, depth, k.in_off, &k.rq, vector_rq, out0, pixel_offsets);
#endif
            }
        }
    }
    return MF_OK;
}

/* The op declares the fast path's scratch (kernel_scratch_bytes) and its geometry fits the int32 index
 * arithmetic (the portable path takes whatever is left). */
static int fast_path_fits(const mf_call *c) {
    mf_tensor w;
    mf_call_input(c, 1, &w);
    return c->scratch_bytes >= mf_scratch_conv2d_s4_im2col(w.shape[1] * w.shape[2] * w.shape[3]) &&
           mf_s4_window_fits(c, A_STRIDE);
}
#endif /* MF_USE_DSP || MF_USE_MVE */

#if defined(MF_USE_MVE)
/* The packed weights (ctx of s4_unpack). */
typedef struct {
    const int8_t *w;
    uint32_t depth;
    int halves; /* MF_LAYOUT_S4_HALVES */
} s4_weights;

/* Filters oc0 .. oc0 + n - 1 unpacked to int8 rows of depth bytes in buf (mf_s4_decode16, 16 at a time). */
static const int8_t *s4_unpack(const void *ctx, uint32_t oc0, uint32_t n, int8_t *buf) {
    const s4_weights *s = (const s4_weights *)ctx;
    const uint32_t depth = s->depth;
    for (uint32_t f = 0; f < n; f++) {
        const uint32_t start = (oc0 + f) * depth;
        const uint8_t *p = (const uint8_t *)s->w + (start >> 1);
        int8_t *row = buf + (size_t)f * depth;
        if (s->halves) {
            mf_s4_halves_unpack((const int8_t *)p, depth, row);
            continue;
        }
        for (uint32_t k = 0; k < depth; k += 16) {
            vstrbq_p_s8(row + k, mf_s4_decode16(p + k / 2, start & 1u, depth - k), vctp8q(depth - k));
        }
    }
    return buf;
}

/* conv2d_s8's MVE path (mf_conv2d_mve) on the filters unpacked `chunk` at a time into the scratch after
 * the im2col patches: the unpacking once per weight for the whole op, the tap loop int8's. */
static __attribute__((noinline)) void run_unpacked(const mf_call *c, uint32_t chunk) {
    mf_tensor w;
    mf_call_input(c, 1, &w);
    const uint32_t depth = w.shape[1] * w.shape[2] * w.shape[3];
    const s4_weights ctx = {(const int8_t *)w.data, depth, w.layout == MF_LAYOUT_S4_HALVES};
    int8_t *scratch = (int8_t *)c->scratch;
    mf_conv2d_mve(c, s4_unpack, &ctx, scratch + mf_scratch_conv2d_s8_im2col(depth), chunk, scratch);
}

/* The filters the unpacked path takes at a time, or 0 when it does not take the op: it needs this path's
 * planned scratch (a program planned for the packed paths' smaller one, or none, runs those), a filter in
 * the chunk (none beyond 4096 taps) and conv2d_s8's MVE path taking the op. */
static uint32_t unpacked_chunk(const mf_call *c) {
    mf_tensor w;
    mf_call_input(c, 1, &w);
    const uint32_t depth = w.shape[1] * w.shape[2] * w.shape[3];
    const uint32_t need = mf_scratch_conv2d_s4_mve_unpacked(depth, w.shape[0]);
    if (depth == 0u || c->scratch_bytes < need) return 0u;
    const uint32_t chunk = (need - mf_scratch_conv2d_s8_im2col(depth)) / depth; /* the plan's rows after im2col */
    return chunk != 0u && mf_conv2d_mve_fits(c) ? chunk : 0u;
}
#endif

#if defined(MF_USE_MVE)
/* A 1x1 convolution without padding whose windows stay inside the input (run_fast's `pointwise`). */
static int conv_pointwise(const mf_call *c) {
    mf_weighted_run k;
    mf_weighted_run_init(&k, c, A_ACT_MIN, A_STRIDE);
    return k.w.shape[1] == 1 && k.w.shape[2] == 1 && k.pd[0] == 0 && k.pd[1] == 0 &&
           ((int32_t)k.o.shape[1] - 1) * k.st[0] < (int32_t)k.x.shape[1] &&
           ((int32_t)k.o.shape[2] - 1) * k.st[1] < (int32_t)k.x.shape[2];
}
#endif

static mf_status run(const mf_call *c) {
#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
    mf_tensor w;
    mf_call_input(c, 1, &w);
    const int halves = w.layout == MF_LAYOUT_S4_HALVES;
#endif
#if defined(MF_USE_MVE)
    /* S4_HALVES rows of whole 32-tap blocks, 128 taps or more: run_halves' asm beats the unpacked path, whose
     * patches are copied once per chunk of filters (resnet8's 3x3 layers of 32 and 64 channels: 10-30 % fewer
     * estimated cycles); shorter rows or a last partial block: the unpacked path where it has its scratch */
    const uint32_t depth = w.shape[1] * w.shape[2] * w.shape[3];
    const int halves_first = halves && (depth & 31u) == 0u && depth >= 128u;
    const uint32_t chunk = halves_first ? 0u : unpacked_chunk(c);
    if (chunk != 0u) {
        run_unpacked(c, chunk);
        return MF_OK;
    }
    if (halves && fast_path_fits(c)) { /* blocks of four pixels on the packed filters */
        /* a 1x1 of fewer than 32 taps (halves_rows' asm does not take it): run_fast's pointwise_filters, each
         * filter unpacked once, meets the pixels in place */
        if (depth < 32u && conv_pointwise(c)) return run_fast(c);
        run_halves(c);
        return MF_OK;
    }
#endif
#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
    if (!halves && fast_path_fits(c)) return run_fast(c); /* S4_HALVES on a DSP core: the portable path */
#endif
    return run_portable(c);
}

const mf_kernel mf_kernel_conv2d_s4 = {MF_KIND_HEAD_conv2d_s4, check, run};
