/*
 * avgpool_s8 and maxpool_s8: bit-exact with CMSIS-NN arm_avgpool_s8 and arm_max_pool_s8. Padding
 * positions are not part of a window: an average divides by the in-bounds count, rounding half
 * away from zero. A window entirely in padding is rejected at load time (CMSIS: argument error).
 * The output size is an attribute, as CMSIS-NN takes it (output_x, output_y): torch's ceil_mode
 * and the default floor rule are both a choice of it; every window must hit the input (the window
 * helpers of mf_pool.h, shared with pooling_s16.c).
 *
 * MVE (cortex-m55): an average over a window of at most 255 inputs (so that the int16 sums cannot
 * overflow: 255 * 128 < 2^15) sums eight channels per VLDRB.S16 + VADD (16 a pass, whole-width window
 * rows as one run), then divides each channel's sum in scalar code exactly as below; a maximum takes 16 channels per VLDRB + VMAX (tail-predicated),
 * clamped as a vector.
 * DSP (cortex-m4/m7/m33): four channels per word: an average (at most 255 inputs) sums them as two
 * pairs of int16 lanes (SXTAB16), a maximum keeps four byte lanes by SSUB8 + SEL; the last ch % 4
 * channels and larger averages take the portable loop.
 */
#include "mf_pool.h"
#include "mf_simd.h"

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    mf_pool_window p;
    int32_t lo, hi;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, 4) || !mf_is(&o, MF_INT8, -1) || !mf_pool_window_read(c, &p)) return MF_ERR_SHAPE;
    if (!mf_attr_act(c, MF_POOL_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    return mf_pool_shapes_ok(&x, &o, &p) ? MF_OK : MF_ERR_SHAPE;
}

#if defined(MF_USE_MVE)
/* The averages of window [y_lo, y_hi) x [x_lo, x_hi) (count <= 255 inputs) of image xd, all channels.
 * Sixteen channels a pass by two unpredicated VLDRB.S16 + VADD (the last ch % 16 channels eight at a
 * time, predicated); window rows of the whole image width are one run of positions, ch bytes apart
 * (a global pool: one loop). Each channel's sum is divided in scalar code as the portable loop does. */
static void avg_window_mve(const int8_t *xd, uint32_t w, uint32_t ch, uint32_t y_lo, uint32_t y_hi, uint32_t x_lo,
                           uint32_t x_hi, int32_t count, int32_t lo, int32_t hi, int8_t *out) {
    const int whole_rows = x_lo == 0 && x_hi == w;
    const uint32_t runs = whole_rows ? 1u : y_hi - y_lo, run = whole_rows ? (y_hi - y_lo) * w : x_hi - x_lo;
    int16_t sums[16];
    for (uint32_t c0 = 0; c0 < ch; c0 += 16) {
        const uint32_t left = ch - c0, n = left < 16 ? left : 16;
        if (left >= 16) {
            int16x8_t acc0 = vdupq_n_s16(0), acc1 = vdupq_n_s16(0);
            for (uint32_t r = 0; r < runs; r++) {
                const int8_t *xp = xd + ((size_t)(y_lo + r) * w + x_lo) * ch + c0;
                for (uint32_t i = 0; i < run; i++, xp += ch) {
                    acc0 = vaddq_s16(acc0, vldrbq_s16(xp));
                    acc1 = vaddq_s16(acc1, vldrbq_s16(xp + 8));
                }
            }
            vst1q_s16(sums, acc0);
            vst1q_s16(sums + 8, acc1);
        } else {
            for (uint32_t h = 0; h < n; h += 8) {
                const mve_pred16_t p = vctp16q(n - h);
                int16x8_t acc = vdupq_n_s16(0);
                for (uint32_t r = 0; r < runs; r++) {
                    const int8_t *xp = xd + ((size_t)(y_lo + r) * w + x_lo) * ch + c0 + h;
                    for (uint32_t i = 0; i < run; i++, xp += ch) acc = vaddq_s16(acc, vldrbq_z_s16(xp, p));
                }
                vst1q_s16(sums + h, acc);
            }
        }
        for (uint32_t i = 0; i < n; i++) {
            const int32_t a = sums[i];
            out[c0 + i] = mf_clamp_s8(a > 0 ? (a + count / 2) / count : (a - count / 2) / count, lo, hi);
        }
    }
}
#endif

#if defined(MF_USE_MVE)
/* The maxima of window [y_lo, y_hi) x [x_lo, x_hi) of image xd, all channels, clamped to [lo, hi]. */
static void max_window_mve(const int8_t *xd, uint32_t w, uint32_t ch, uint32_t y_lo, uint32_t y_hi, uint32_t x_lo,
                           uint32_t x_hi, int32_t lo, int32_t hi, int8_t *out) {
    const int8x16_t vlo = vdupq_n_s8((int8_t)lo), vhi = vdupq_n_s8((int8_t)hi);
    for (uint32_t c0 = 0; c0 < ch; c0 += 16) {
        const mve_pred16_t p = vctp8q(ch - c0);
        int8x16_t m = vdupq_n_s8(-128); /* every window holds an input (>= -128): the same as -129 */
        for (uint32_t iy = y_lo; iy < y_hi; iy++) {
            const int8_t *xp = xd + ((size_t)iy * w + x_lo) * ch + c0;
            for (uint32_t ix = x_lo; ix < x_hi; ix++, xp += ch) m = vmaxq_s8(m, vldrbq_z_s8(xp, p));
        }
        vstrbq_p_s8(out + c0, vminq_s8(vmaxq_s8(m, vlo), vhi), p);
    }
}
#endif

#if defined(MF_USE_DSP)
/* Four signed byte lanes' maxima (SSUB8 sets the GE flags where a >= b, SEL picks those lanes of a). */
static inline int32_t max8x4(int32_t a, int32_t b) {
    int32_t r;
    __asm__("ssub8 %0, %1, %2\n\tsel %0, %1, %2" : "=&r"(r) : "r"(a), "r"(b) : "cc");
    return r;
}

/* Channels [0, ch & ~3) of window [y_lo, y_hi) x [x_lo, x_hi) of image xd: the maxima (is_max) or the
 * averages of `count` inputs (count <= 255: the int16 lanes' sums stay below 2^15), clamped; the same
 * bits as the portable loop. */
static void window_dsp(const int8_t *xd, uint32_t w, uint32_t ch, uint32_t y_lo, uint32_t y_hi, uint32_t x_lo,
                       uint32_t x_hi, int32_t count, int32_t lo, int32_t hi, int is_max, int8_t *out) {
    const size_t row = (size_t)w * ch;
    for (uint32_t c0 = 0; c0 + 4 <= ch; c0 += 4) {
        const int8_t *xr = xd + (size_t)y_lo * row + (size_t)x_lo * ch + c0;
        int32_t v[4];
        if (is_max) {
            int32_t m = mf_wrap32(0x80808080u);
            for (uint32_t iy = y_lo; iy < y_hi; iy++, xr += row) {
                const int8_t *xp = xr;
                for (uint32_t ix = x_lo; ix < x_hi; ix++, xp += ch) m = max8x4(m, mf_ld32(xp));
            }
            for (int i = 0; i < 4; i++) v[i] = (int8_t)(m >> (8 * i));
        } else {
            int32_t s02 = 0, s13 = 0;
            for (uint32_t iy = y_lo; iy < y_hi; iy++, xr += row) {
                const int8_t *xp = xr;
                for (uint32_t ix = x_lo; ix < x_hi; ix++, xp += ch) {
                    const int32_t x4 = mf_ld32(xp);
                    s02 = mf_sxtab16(s02, x4);
                    s13 = mf_sxtab16_ror8(s13, x4);
                }
            }
            const int32_t sums[4] = {(int16_t)s02, (int16_t)s13, s02 >> 16, s13 >> 16};
            for (int i = 0; i < 4; i++) {
                const int32_t a = sums[i];
                v[i] = a > 0 ? (a + count / 2) / count : (a - count / 2) / count;
            }
        }
        for (int i = 0; i < 4; i++) out[c0 + (uint32_t)i] = mf_clamp_s8(v[i], lo, hi);
    }
}
#endif

static mf_status run(const mf_call *c, int is_max) {
    mf_tensor x, o;
    mf_pool_window p;
    int32_t lo, hi;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_pool_window_read(c, &p);
    mf_attr_act(c, MF_POOL_ACT_MIN, &lo, &hi);
    const uint32_t h = x.shape[1], w = x.shape[2], ch = x.shape[3];
    const uint32_t oh = (uint32_t)p.out[0], ow = (uint32_t)p.out[1];
    const int8_t *xd = (const int8_t *)x.data;
    /* a pitched output (format 3.4: its channels in a slice of a concat's output) has its pixels pitch apart */
    const size_t ps = o.pitch ? o.pitch : ch;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < oh; oy++) {
            uint32_t y_lo, y_hi;
            mf_pool_clip((int64_t)oy * p.st[0] - p.pd[0], p.k[0], h, &y_lo, &y_hi);
            for (uint32_t ox = 0; ox < ow; ox++) {
                uint32_t x_lo, x_hi;
                mf_pool_clip((int64_t)ox * p.st[1] - p.pd[1], p.k[1], w, &x_lo, &x_hi);
                const int32_t count = (int32_t)((y_hi - y_lo) * (x_hi - x_lo));
                int8_t *out = (int8_t *)o.data + (((size_t)n * oh + oy) * ow + ox) * ps;
                uint32_t cc = 0; /* channels before it are done */
#if defined(MF_USE_MVE)
                if (!is_max && count <= 255) {
                    avg_window_mve(xd + (size_t)n * h * w * ch, w, ch, y_lo, y_hi, x_lo, x_hi, count, lo, hi, out);
                    continue;
                }
                if (is_max) {
                    max_window_mve(xd + (size_t)n * h * w * ch, w, ch, y_lo, y_hi, x_lo, x_hi, lo, hi, out);
                    continue;
                }
#elif defined(MF_USE_DSP)
                if (is_max || count <= 255) {
                    window_dsp(xd + (size_t)n * h * w * ch, w, ch, y_lo, y_hi, x_lo, x_hi, count, lo, hi, is_max, out);
                    cc = ch & ~3u;
                    out += cc;
                }
#endif
                for (; cc < ch; cc++) {
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
                    *out++ = mf_clamp_s8(acc, lo, hi);
                }
            }
        }
    }
    return MF_OK;
}

static mf_status run_avg(const mf_call *c) { return run(c, 0); }
static mf_status run_max(const mf_call *c) { return run(c, 1); }

const mf_kernel mf_kernel_avgpool_s8 = {MF_KIND_HEAD_avgpool_s8, check, run_avg};
const mf_kernel mf_kernel_maxpool_s8 = {MF_KIND_HEAD_maxpool_s8, check, run_max};
