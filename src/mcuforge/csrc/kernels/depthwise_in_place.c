/*
 * depthwise_conv2d_s8 written over its input: TinyEngine's in-place depthwise convolution, where the planner
 * chose it (mcuforge.plan.choose_in_place: depth multiplier 1, batch 1, an output no larger than the input, at
 * the input's first byte). One channel at a time: its Ho x Wo outputs into the op's scratch, then into that
 * channel's slots p * C + c (p < Ho * Wo <= H * W), which only channel c reads, and it is done with them. The
 * arithmetic is the portable path's (depthwise_conv2d_s8.c run_portable, CMSIS-NN's): the same bytes as the
 * op out of place. On the DSP cores, depthwise_conv2d_s8.c runs the 3x3 channel groups its channel-planar path
 * takes (dw_dsp_in_place) and calls mf_depthwise_s8_in_place_channels for the other channels.
 */
#include "mf_in_place.h"

enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_MULT, A_ACT_MIN, A_ACT_MAX };

int mf_output_on_input(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in < 1 || c->n_out < 1 || !mf_call_input(c, 0, &x)) return 0;
    mf_call_output(c, 0, &o);
    return !(x.flags & MF_TENSOR_FLAG_CONSTANT) && !(o.flags & MF_TENSOR_FLAG_CONSTANT) && x.offset == o.offset &&
           x.nbytes > 0;
}

mf_status mf_depthwise_s8_in_place_check(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (mf_attr_int(c, A_MULT) != 1 || x.rank != 4 || o.rank != 4 || x.shape[0] != 1 || o.shape[0] != 1 ||
        o.shape[3] != x.shape[3] || o.nbytes > x.nbytes) {
        return MF_ERR_SHAPE;
    }
    return c->scratch_bytes >= (uint64_t)o.shape[1] * o.shape[2] ? MF_OK : MF_ERR_SHAPE;
}

mf_status mf_depthwise_s8_in_place(const mf_call *c) {
    mf_tensor x;
    mf_call_input(c, 0, &x);
    mf_depthwise_s8_in_place_channels(c, 0, x.shape[3]);
    return MF_OK;
}

void mf_depthwise_s8_in_place_channels(const mf_call *c, uint32_t c0, uint32_t c1) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *wd = (const int8_t *)w.data;
    int8_t *data = (int8_t *)x.data; /* input, then output: the same bytes */
    int8_t *channel = (int8_t *)c->scratch;
    const int64_t h = x.shape[1], wi = x.shape[2];
    const uint32_t ch = x.shape[3], kh = w.shape[1], kw = w.shape[2], oh = o.shape[1], ow = o.shape[2];
    for (uint32_t oc = c0; oc < c1; oc++) {
        int8_t *out = channel;
        for (uint32_t oy = 0; oy < oh; oy++) {
            const int64_t y0 = (int64_t)oy * st[0] - pd[0];
            for (uint32_t ox = 0; ox < ow; ox++) {
                const int64_t x0 = (int64_t)ox * st[1] - pd[1];
                int32_t acc = 0;
                for (uint32_t ky = 0; ky < kh; ky++) {
                    const int64_t iy = y0 + (int64_t)ky * dl[0];
                    if (iy < 0 || iy >= h) continue; /* taps outside the input are skipped */
                    for (uint32_t kx = 0; kx < kw; kx++) {
                        const int64_t ix = x0 + (int64_t)kx * dl[1];
                        if (ix < 0 || ix >= wi) continue;
                        const size_t xi = ((size_t)iy * (size_t)wi + (size_t)ix) * ch + oc;
                        acc += ((int32_t)data[xi] + in_off) * wd[((size_t)ky * kw + kx) * ch + oc];
                    }
                }
                *out++ = mf_channel_requant_s8(&rq, oc, acc);
            }
        }
        for (size_t p = 0; p < (size_t)oh * ow; p++) data[p * ch + oc] = channel[p];
    }
}
