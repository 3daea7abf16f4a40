/*
 * depthwise_conv2d_s4: int8 depthwise convolution with int4 weights, bit-exact with CMSIS-NN
 * arm_depthwise_conv_s4 (and mcuforge.kernels.depthwise_conv2d_s4): any depth multiplier M, output
 * channel oc = ic * M + m reads input channel ic only; weights 1HW(C*M) packed two per byte as one run
 * of nibbles (mf_s4.h), so with an odd C*M every other tap's channels start in a high nibble; taps
 * outside the input are skipped.
 *
 * run_portable() is the readable statement of the math (a nibble read per tap). A depthwise layer
 * holds few weights (kh * kw per channel), so the DSP and MVE paths (depth multiplier 1, the op's
 * scratch: mcuforge.ir.kernel_scratch_bytes) first unpack them to int8 in the scratch, then:
 *   DSP: 3x3 kernels on a multiple of four channels: depthwise_conv2d_s8's DSP path (mf_depthwise_dsp_3x3)
 *        on the unpacked weights; other kernels per output pixel, over the taps inside the input, four
 *        channels per word, SXTAB16 adds the input offset to two byte lanes, SMLABB/SMLATT accumulate;
 *   MVE: depthwise_conv2d_s8's MVE path (mf_depthwise_mve) on the unpacked weights: the same int32 sums,
 *        the bias and multipliers read as the s4 kinds store them (int16 or int32) once per group of
 *        eight channels; where it does not apply (a multiplier of INT32_MIN, an absurd geometry), the
 *        portable path.
 */
#include "mf_s4.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_MULT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) { return mf_check_depthwise_conv2d(c, MF_INT4); }

static mf_status run_portable(const mf_call *c) {
    mf_weighted_run k;
    mf_weighted_run_init(&k, c, A_ACT_MIN, A_STRIDE);
    const mf_tensor x = k.x, w = k.w, o = k.o;
    const uint32_t dm = (uint32_t)mf_attr_int(c, A_MULT);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int64_t h = x.shape[1], wi = x.shape[2];
    const uint32_t ch = x.shape[3], oc_n = w.shape[3], kh = w.shape[1], kw = w.shape[2];
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            const int64_t y0 = (int64_t)oy * k.st[0] - k.pd[0];
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t x0 = (int64_t)ox * k.st[1] - k.pd[1];
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    const uint32_t ic = oc / dm;
                    int32_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * k.dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * k.dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const size_t xi = (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch + ic;
                            acc += ((int32_t)xd[xi] + k.in_off) * mf_s4_at(wd, (ky * kw + kx) * oc_n + oc);
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
/* The weights, packed, unpacked to int8 at wdec (the op's scratch: numel bytes). */
static void unpack(const mf_tensor *w, int8_t *wdec) {
    const uint8_t *p = (const uint8_t *)w->data;
    const uint32_t pairs = w->numel / 2u;
    for (uint32_t j = 0; j < pairs; j++) { /* a byte at a time: its low nibble, then its high one */
        wdec[2u * j] = (int8_t)((int32_t)((p[j] & 0xFu) ^ 8u) - 8);
        wdec[2u * j + 1u] = (int8_t)((int32_t)((p[j] >> 4) ^ 8u) - 8);
    }
    if (w->numel & 1u) wdec[w->numel - 1u] = (int8_t)mf_s4_at((const int8_t *)w->data, w->numel - 1u);
}
#endif

#if defined(MF_USE_DSP)
/* Depth multiplier 1, the scratch for the unpacked weights, and a geometry within the int32 index arithmetic. */
static int fast_path_fits(const mf_call *c) {
    mf_tensor w;
    mf_call_input(c, 1, &w);
    return mf_attr_int(c, A_MULT) == 1 && c->scratch_bytes >= mf_scratch_depthwise_conv2d_s4_weights(w.numel) &&
           mf_s4_window_fits(c, A_STRIDE);
}

/* The taps k in [*k0, *k1) (0 <= k < n) whose position start + k * dil lies in [0, size). */
static void tap_range(int32_t start, int32_t dil, int32_t n, int32_t size, int32_t *k0, int32_t *k1) {
    const int32_t lo = start < 0 ? (-start + dil - 1) / dil : 0;
    const int32_t hi = start >= size ? 0 : (size - 1 - start) / dil + 1;
    *k0 = lo < n ? lo : n;
    *k1 = hi < n ? (hi > *k0 ? hi : *k0) : n;
}

static inline int32_t smlabb(int32_t a, int32_t b, int32_t acc) {
    int32_t r;
    __asm__("smlabb %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
static inline int32_t smlatt(int32_t a, int32_t b, int32_t acc) {
    int32_t r;
    __asm__("smlatt %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}

/* One output pixel, channels [0, ch): the taps [ky0, ky1) x [kx0, kx1), x read at xb + (iy * w + ix) * ch. */
static void pixel(const int8_t *xb, const int8_t *wdec, uint32_t ch, int32_t wi, int32_t iy0, int32_t ix0,
                  const int32_t dl[2], int32_t kw, int32_t ky0, int32_t ky1, int32_t kx0, int32_t kx1, int32_t in_off,
                  const mf_channel_requant *rq, int8_t *out) {
    const int32_t off16 = mf_pack_off16(in_off);
    uint32_t c = 0;
    for (; c + 4 <= ch; c += 4) {
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int32_t ky = ky0; ky < ky1; ky++) {
            const int8_t *xr = xb + ((size_t)(iy0 + ky * dl[0]) * (size_t)wi) * ch + c;
            const int8_t *wr = wdec + (size_t)ky * (size_t)kw * ch + c;
            for (int32_t kx = kx0; kx < kx1; kx++) {
                const int32_t xv = mf_ld32(xr + (size_t)(ix0 + kx * dl[1]) * ch), wv = mf_ld32(wr + (size_t)kx * ch);
                const int32_t x02 = mf_sxtab16(off16, xv), x13 = mf_sxtab16_ror8(off16, xv);
                const int32_t w02 = mf_sxtb16(wv), w13 = mf_sxtb16_ror8(wv);
                a0 = smlabb(x02, w02, a0);
                a2 = smlatt(x02, w02, a2);
                a1 = smlabb(x13, w13, a1);
                a3 = smlatt(x13, w13, a3);
            }
        }
        out[c] = mf_s4_requant_inline(rq, c, a0);
        out[c + 1] = mf_s4_requant_inline(rq, c + 1, a1);
        out[c + 2] = mf_s4_requant_inline(rq, c + 2, a2);
        out[c + 3] = mf_s4_requant_inline(rq, c + 3, a3);
    }
    for (; c < ch; c++) {
        int32_t acc = 0;
        for (int32_t ky = ky0; ky < ky1; ky++) {
            for (int32_t kx = kx0; kx < kx1; kx++) {
                const size_t xi = ((size_t)(iy0 + ky * dl[0]) * (size_t)wi + (size_t)(ix0 + kx * dl[1])) * ch + c;
                acc += ((int32_t)xb[xi] + in_off) * wdec[((size_t)ky * (size_t)kw + (size_t)kx) * ch + c];
            }
        }
        out[c] = mf_s4_requant_inline(rq, c, acc);
    }
}

/* The weights unpacked at wdec (taps, ch): pixel by pixel. */
static mf_status run_fast(const mf_call *c, const int8_t *wdec) {
    mf_weighted_run k;
    mf_weighted_run_init(&k, c, A_ACT_MIN, A_STRIDE);
    const mf_tensor x = k.x, w = k.w, o = k.o;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2], kh = (int32_t)w.shape[1], kw = (int32_t)w.shape[2];
    const uint32_t ch = x.shape[3];
    int8_t *out = (int8_t *)o.data;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *xb = (const int8_t *)x.data + (size_t)n * (size_t)h * (size_t)wi * ch;
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            const int32_t y0 = (int32_t)oy * k.st[0] - k.pd[0];
            int32_t ky0, ky1;
            tap_range(y0, k.dl[0], kh, h, &ky0, &ky1);
            for (uint32_t ox = 0; ox < o.shape[2]; ox++, out += ch) {
                const int32_t x0 = (int32_t)ox * k.st[1] - k.pd[1];
                int32_t kx0, kx1;
                tap_range(x0, k.dl[1], kw, wi, &kx0, &kx1);
                pixel(xb, wdec, ch, wi, y0, x0, k.dl, kw, ky0, ky1, kx0, kx1, k.in_off, &k.rq, out);
            }
        }
    }
    return MF_OK;
}
#endif

static mf_status run(const mf_call *c) {
#if defined(MF_USE_DSP)
    if (fast_path_fits(c)) { /* 3x3: depthwise_conv2d_s8's DSP path on the unpacked weights */
        mf_tensor w;
        mf_call_input(c, 1, &w);
        unpack(&w, (int8_t *)c->scratch);
        if (mf_depthwise_dsp_3x3(c, (const int8_t *)c->scratch)) return MF_OK;
        return run_fast(c, (const int8_t *)c->scratch);
    }
#elif defined(MF_USE_MVE)
    mf_tensor w;
    mf_call_input(c, 1, &w);
    if (c->scratch_bytes >= mf_scratch_depthwise_conv2d_s4_weights(w.numel)) { /* depthwise_conv2d_s8's MVE path */
        unpack(&w, (int8_t *)c->scratch);
        if (mf_depthwise_mve(c, (const int8_t *)c->scratch)) return MF_OK;
    }
#endif
    return run_portable(c);
}

const mf_kernel mf_kernel_depthwise_conv2d_s4 = {MF_KIND_HEAD_depthwise_conv2d_s4, check, run};
