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
 *   MVE: mf_dot_s4 per output, sixteen weights decoded to int8 lanes per VMLADAVA.
 */
#include "mf_s4.h"

enum { A_IN_OFF, A_OUT_OFF, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is_s4_weight(&w, 2) || !mf_is(&o, MF_INT8, -1)) return MF_ERR_SHAPE;
    const uint32_t depth = w.shape[1], oc = w.shape[0];
    if (depth == 0 || x.numel % depth || depth > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    if ((uint64_t)(x.numel / depth) * oc != o.numel) return MF_ERR_SHAPE;
    return mf_check_weighted_params(c, has_bias ? &b : NULL, &m, &s, oc, A_ACT_MIN);
}

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
        out[oc] = mf_channel_requant_s8_inline(rq, oc, acc);
    }
}
#endif

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const uint32_t depth = w.shape[1], oc_n = w.shape[0], rows = x.numel / depth;
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    int8_t *out = (int8_t *)o.data;
#if defined(MF_USE_DSP)
    if (c->scratch_bytes >= 2u * depth) {
        int16_t *cols = (int16_t *)(void *)c->scratch;
        for (uint32_t r = 0; r < rows; r++) {
            const int32_t sum = mf_s4_widen(xd + (size_t)r * depth, depth, in_off, cols);
            run_row_widened(cols, sum, wd, oc_n, depth, &rq, out + (size_t)r * oc_n);
        }
        return MF_OK;
    }
#endif
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t oc = 0; oc < oc_n; oc++) {
            const int32_t acc = mf_dot_s4(xd + (size_t)r * depth, wd, oc * depth, depth, in_off);
            *out++ = mf_channel_requant_s8(&rq, oc, acc);
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_fully_connected_s4 = {17, "fully_connected_s4", 4, 5, 1u << 2, "iiii", check, run};
