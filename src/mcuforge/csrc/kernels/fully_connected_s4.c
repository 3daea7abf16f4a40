/*
 * fully_connected_s4: int8 fully connected with int4 weights, bit-exact with CMSIS-NN arm_fully_connected_s4
 * (per-tensor requantization) and mcuforge.kernels.fully_connected_s4; multipliers and shifts of length O
 * requantize each output channel as arm_fully_connected_per_channel_s8 does. Weights (O, I) packed two per
 * byte row after row (mf_s4.h), so with an odd I every other row starts in a high nibble. The input is read
 * as rows of I features, whatever its shape.
 *
 * run() is the portable statement of the math. The optimized paths give the same int32 sums:
 *   DSP: each input row widened once into the op's scratch (int16 with the offset added, in the decode
 *        order of mf_s4_mac8), then a word of eight weights per step into SMLADs; without the scratch
 *        (an older program) mf_dot_s4 per output;
 *   MVE: four outputs at a time: 32 activations per VLD2 (even and odd lanes) against the low and high
 *        nibbles of 16 weight bytes of each row (VMLADAVA), the offset as offset * sum(weights) (VADDVA);
 *        the depth % 32 tail 16 weights at a time, predicated. With an even depth (rows start at bytes)
 *        the rows go in pairs (pair_even): the nibbles used as 16 x the weights (low shifted up, high
 *        masked: no sign extension), sums divided by 16 after, every value in a register.
 *   S4_HALVES weights (mf_s4.h; a Helium program's, even depths): MVE four rows a pass (mf_s4_halves_row,
 *        dot_s4.c: two contiguous activation loads per 32 weights, no deinterleaving); elsewhere the portable
 *        statement (mf_dot_s4_halves).
 */
#include "mf_s4.h"

enum { A_IN_OFF, A_OUT_OFF, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) { return mf_check_fully_connected(c, MF_INT4); }

#if defined(MF_USE_DSP)
/* Outputs of one input row widened into cols (sum: mf_s4_widen's); weights w from nibble 0. */
static void run_row_widened(const int16_t *cols, int32_t sum, const int8_t *w, uint32_t oc_n, uint32_t depth,
                            const mf_channel_requant *rq, int8_t *out) {
    const uint32_t d8 = depth & ~7u;
    for (uint32_t oc = 0; oc < oc_n; oc++) {
        const uint32_t start = oc * depth;
        const uint8_t *p = (const uint8_t *)w + (start >> 1);
        int32_t acc = 0;
        for (uint32_t g = 0; g < d8; g += 8, p += 4) acc = mf_s4_mac8(mf_s4_word(p, start & 1u), cols + g, acc);
        acc = mf_add_wrap(acc, -8 * sum);
        for (uint32_t k = d8; k < depth; k++) acc += cols[k] * mf_s4_at(w, start + k);
        out[oc] = mf_s4_requant_inline(rq, oc, acc);
    }
}
#endif

#if defined(MF_USE_MVE)
/* Outputs oc .. oc + n - 1 (n <= 4) of one input row: 32 activations per VLD2 shared by the four rows (rows
 * past n repeat row oc, their outputs unwritten), then the tail 16 at a time, predicated. */
static void rows4(const int8_t *x, const int8_t *w, uint32_t oc, uint32_t n, uint32_t depth, int32_t in_off,
                  const mf_channel_requant *rq, int vector_rq, int8_t *out) {
    const uint8_t *p[4];
    uint32_t odd[4];
    int32_t a[4] = {0, 0, 0, 0}, ws[4] = {0, 0, 0, 0};
    for (uint32_t i = 0; i < 4; i++) {
        const uint32_t start = (oc + (i < n ? i : 0)) * depth;
        p[i] = (const uint8_t *)w + (start >> 1);
        odd[i] = start & 1u;
    }
    const uint32_t d32 = depth & ~31u;
    for (uint32_t k = 0; k < d32; k += 32) {
        const int8x16x2_t xv = vld2q_s8(x + k);
        for (uint32_t i = 0; i < 4; i++) {
            int8x16_t ev, od;
            mf_s4_split32(p[i] + k / 2, odd[i], &ev, &od);
            a[i] = vmladavaq_s8(vmladavaq_s8(a[i], xv.val[0], ev), xv.val[1], od);
            ws[i] = vaddvaq_s8(vaddvaq_s8(ws[i], ev), od);
        }
    }
    for (uint32_t k = d32; k < depth; k += 16) {
        const int8x16_t xv = vldrbq_z_s8(x + k, vctp8q(depth - k));
        for (uint32_t i = 0; i < 4; i++) {
            const int8x16_t wv = mf_s4_decode16(p[i] + k / 2, odd[i], depth - k);
            a[i] = vmladavaq_s8(a[i], xv, wv);
            ws[i] = vaddvaq_s8(ws[i], wv);
        }
    }
    if (vector_rq) { /* the four outputs requantized at once, as fully_connected_s8's MVE path */
        const mve_pred16_t p4 = vctp32q(n);
        int32x4_t acc = vmlaq_n_s32(vld1q_s32(a), vld1q_s32(ws), in_off); /* |ws| <= 2^19 */
        acc = vaddq_s32(acc, mf_rq_bias_x4(rq, oc, p4));
        const int32x4_t mult = mf_rq_mult_x4(rq, oc, p4);
        const int32x4_t shift = rq->per_channel ? mf_shifts_x4(rq->shift + oc, p4) : vdupq_n_s32(rq->shift[0]);
        int32x4_t v = vaddq_n_s32(mf_requantize_x4(acc, mult, shift), rq->out_off);
        v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(rq->lo)), vdupq_n_s32(rq->hi));
        vstrbq_p_s32(out, v, p4);
        return;
    }
    for (uint32_t i = 0; i < n; i++) out[i] = mf_s4_requant_inline(rq, oc + i, mf_add_wrap(a[i], ws[i] * in_off));
}

/* The sums of two rows starting at bytes p0, p1 (an even depth) against x, 32 activations per VLD2 (even and
 * odd lanes): a byte's low nibble shifted up (VSHL) and its high nibble masked (VAND) are 16 x the weights,
 * no sign extension needed, so the steps sum 16 x the products and 16 x the weights, exact in int32
 * (|x * w| <= 2^10: 16 x 2^10 x depth < 2^31 for depth < 2^17), divided by 16 after; the tail 16 at a
 * time (mf_s4_decode16). *s0, *s1: sum(x * w) + in_off * sum(w). */
static inline __attribute__((always_inline)) void pair_even(const int8_t *x, const int8_t *p0, const int8_t *p1,
                                                            uint32_t depth, int32_t in_off, int32_t *s0, int32_t *s1) {
    const int8x16_t high = vdupq_n_s8((int8_t)0xF0);
    int32_t a0 = 0, a1 = 0, w0 = 0, w1 = 0;
    const uint32_t d32 = depth & ~31u;
    for (uint32_t k = 0; k < d32; k += 32, p0 += 16, p1 += 16) {
        const int8x16x2_t xv = vld2q_s8(x + k);
        const int8x16_t v0 = vldrbq_s8(p0), v1 = vldrbq_s8(p1);
        const int8x16_t l0 = vshlq_n_s8(v0, 4), h0 = vandq_s8(v0, high);
        const int8x16_t l1 = vshlq_n_s8(v1, 4), h1 = vandq_s8(v1, high);
        a0 = vmladavaq_s8(vmladavaq_s8(a0, xv.val[0], l0), xv.val[1], h0);
        a1 = vmladavaq_s8(vmladavaq_s8(a1, xv.val[0], l1), xv.val[1], h1);
        w0 = vaddvaq_s8(vaddvaq_s8(w0, l0), h0);
        w1 = vaddvaq_s8(vaddvaq_s8(w1, l1), h1);
    }
    a0 >>= 4, a1 >>= 4, w0 >>= 4, w1 >>= 4; /* exact: multiples of 16 */
    for (uint32_t k = d32; k < depth; k += 16, p0 += 8, p1 += 8) {
        const int8x16_t xv = vldrbq_z_s8(x + k, vctp8q(depth - k));
        const int8x16_t v0 = mf_s4_decode16((const uint8_t *)p0, 0u, depth - k);
        const int8x16_t v1 = mf_s4_decode16((const uint8_t *)p1, 0u, depth - k);
        a0 = vmladavaq_s8(a0, xv, v0), w0 = vaddvaq_s8(w0, v0);
        a1 = vmladavaq_s8(a1, xv, v1), w1 = vaddvaq_s8(w1, v1);
    }
    *s0 = mf_add_wrap(a0, w0 * in_off); /* |sum(w)| <= 2^19, |in_off| <= 128 */
    *s1 = mf_add_wrap(a1, w1 * in_off);
}

/* The output stage of outputs oc .. oc + n - 1 (n <= 4) from their int32 sums a (offset included). */
static void out4(const int32_t a[4], uint32_t oc, uint32_t n, const mf_channel_requant *rq, int vector_rq,
                 int8_t *out) {
    if (vector_rq) { /* the four outputs requantized at once (lanes past n: not stored) */
        const mve_pred16_t p4 = vctp32q(n);
        const int32x4_t acc = vaddq_s32(vldrwq_z_s32(a, p4), mf_rq_bias_x4(rq, oc, p4));
        const int32x4_t mult = mf_rq_mult_x4(rq, oc, p4);
        const int32x4_t shift = rq->per_channel ? mf_shifts_x4(rq->shift + oc, p4) : vdupq_n_s32(rq->shift[0]);
        int32x4_t v = vaddq_n_s32(mf_requantize_x4(acc, mult, shift), rq->out_off);
        v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(rq->lo)), vdupq_n_s32(rq->hi));
        vstrbq_p_s32(out, v, p4);
        return;
    }
    for (uint32_t i = 0; i < n; i++) out[i] = mf_s4_requant_inline(rq, oc + i, a[i]);
}

/* rows4 for an even depth (every row starts at a byte): two pairs of rows (pair_even), then the output
 * stage. */
static void rows4_even(const int8_t *x, const int8_t *w, uint32_t oc, uint32_t n, uint32_t depth, int32_t in_off,
                       const mf_channel_requant *rq, int vector_rq, int8_t *out) {
    const uint32_t half = depth / 2u;
    const int8_t *p0 = w + (size_t)oc * half;
    const int8_t *p1 = n > 1 ? p0 + half : p0, *p2 = n > 2 ? p0 + 2u * half : p0, *p3 = n > 3 ? p0 + 3u * half : p0;
    int32_t a[4];
    pair_even(x, p0, p1, depth, in_off, &a[0], &a[1]);
    if (n > 2) pair_even(x, p2, p3, depth, in_off, &a[2], &a[3]);
    out4(a, oc, n, rq, vector_rq, out);
}

#endif

static mf_status run(const mf_call *c) {
    mf_weighted_run k;
    mf_weighted_run_init(&k, c, A_ACT_MIN, -1);
    const mf_tensor x = k.x, w = k.w, o = k.o;
    const uint32_t depth = w.shape[1], oc_n = w.shape[0], rows = x.numel / depth;
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    int8_t *out = (int8_t *)o.data;
    if (w.layout == MF_LAYOUT_S4_HALVES) {
#if defined(MF_USE_MVE)
        const int vector_rq = mf_requant_vector_ok(&k.rq, oc_n);
        for (uint32_t r = 0; r < rows; r++) {
            mf_s4_halves_row(xd + (size_t)r * depth, wd, 0, oc_n, depth, k.in_off, NULL, &k.rq, vector_rq,
                             out + (size_t)r * oc_n);
        }
#else
        for (uint32_t r = 0; r < rows; r++) { /* a Helium program on another core: the portable statement */
            for (uint32_t oc = 0; oc < oc_n; oc++) {
                const int32_t acc = mf_dot_s4_halves(xd + (size_t)r * depth, wd, depth, oc, 0, depth, k.in_off);
                *out++ = mf_s4_requant(&k.rq, oc, acc);
            }
        }
#endif
        return MF_OK;
    }
#if defined(MF_USE_DSP)
    if (c->scratch_bytes >= mf_scratch_fully_connected_s4_row(depth)) { /* as planned: mcuforge/kinds/scratch.py */
        int16_t *cols = (int16_t *)(void *)c->scratch;
        for (uint32_t r = 0; r < rows; r++) {
            const int32_t sum = mf_s4_widen(xd + (size_t)r * depth, depth, k.in_off, cols);
            run_row_widened(cols, sum, wd, oc_n, depth, &k.rq, out + (size_t)r * oc_n);
        }
        return MF_OK;
    }
#elif defined(MF_USE_MVE)
    const int vector_rq = mf_requant_vector_ok(&k.rq, oc_n);
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t oc = 0; oc < oc_n; oc += 4) {
            const uint32_t n = oc_n - oc < 4u ? oc_n - oc : 4u;
            if ((depth & 1u) == 0) {
                rows4_even(xd + (size_t)r * depth, wd, oc, n, depth, k.in_off, &k.rq, vector_rq,
                           out + (size_t)r * oc_n + oc);
            } else {
                rows4(xd + (size_t)r * depth, wd, oc, n, depth, k.in_off, &k.rq, vector_rq, out + (size_t)r * oc_n + oc);
            }
        }
    }
    return MF_OK;
#endif
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t oc = 0; oc < oc_n; oc++) {
            const int32_t acc = mf_dot_s4(xd + (size_t)r * depth, wd, oc * depth, depth, k.in_off);
            *out++ = mf_s4_requant(&k.rq, oc, acc);
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_fully_connected_s4 = {MF_KIND_HEAD_fully_connected_s4, check, run};
