/*
 * gru_s8: one GRU layer over a whole sequence in the style of CMSIS-NN's LSTM (int8 input, output and
 * weights, int32 bias, int16 gates, an int16 Q0.15 hidden state), bit-exact with mcuforge.kernels.gru
 * (see its docstring for the equations). Batch first: x (N, T, I) int8, out (N, T, H) int8, from the zero
 * state; weights int8 (3H, I) and (3H, H) in torch's gate order (r, z, n); int32 effective biases; one
 * multiplier/shift per gate and matrix (attributes).
 *
 * Batch rows are independent, so each runs its whole sequence in turn; the op's scratch holds one row's
 * int16 state and four int16 vectors (r and z pre-activations, then the n gate's input and hidden terms):
 * 10 H bytes (mcuforge.ir.kernel_scratch_bytes). Input dot products are mf_dot_s8 (portable, DSP SMLAD and
 * MVE VMLADAVA paths, kernels/dot_s8.c); the recurrent ones (int16 state, int8 weights) a plain int32 loop;
 * sigmoid and tanh are mf_activation_s16 (arm_nn_activation_s16, kernels/quant_s16.c).
 */
#include "mf_s16.h"

enum { A_IN_MULT, A_IN_SHIFT, A_H_MULT, A_H_SHIFT, A_OUT_MULT, A_OUT_SHIFT, A_OUT_OFF };
enum { GATES = 3 };
#define Q15_MULT (1 << 30) /* requantize by 2^-15: a Q0.15 factor times a value */
#define Q15_SHIFT (-14)

static int gate_list(const mf_call *c, uint32_t k, int32_t lo, int32_t hi) {
    mf_value v = mf_attr(c, k);
    if (mf_value_count(v) != GATES) return 0;
    for (uint32_t g = 0; g < GATES; g++) {
        if (!mf_in_range(mf_value_ints_at(v, g), lo, hi)) return 0;
    }
    return 1;
}

static mf_status check(const mf_call *c) {
    mf_tensor x, wi, wh, bi, bh, o;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &wi);
    mf_call_input(c, 2, &wh);
    mf_call_input(c, 3, &bi);
    mf_call_input(c, 4, &bh);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, 3) || !mf_is(&wi, MF_INT8, 2) || !mf_is(&wh, MF_INT8, 2) || !mf_is(&o, MF_INT8, 3)) {
        return MF_ERR_SHAPE;
    }
    const uint32_t h = wh.shape[1];
    if (h == 0 || wh.shape[0] != GATES * h || wi.shape[0] != GATES * h || wi.shape[1] != x.shape[2]) return MF_ERR_SHAPE;
    if (x.shape[2] > MF_MAX_DOT_DEPTH || h > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    if (o.shape[0] != x.shape[0] || o.shape[1] != x.shape[1] || o.shape[2] != h) return MF_ERR_SHAPE;
    if (!mf_is(&bi, MF_INT32, 1) || !mf_is(&bh, MF_INT32, 1) || bi.shape[0] != GATES * h || bh.shape[0] != GATES * h) {
        return MF_ERR_SHAPE;
    }
    if (!gate_list(c, A_IN_MULT, INT32_MIN, INT32_MAX) || !gate_list(c, A_IN_SHIFT, -31, 30) ||
        !gate_list(c, A_H_MULT, INT32_MIN, INT32_MAX) || !gate_list(c, A_H_SHIFT, -31, 30)) {
        return MF_ERR_SHAPE;
    }
    if (!mf_in_range(mf_attr_int(c, A_OUT_SHIFT), -31, 30) || !mf_in_range(mf_attr_int(c, A_OUT_OFF), -128, 127)) {
        return MF_ERR_SHAPE;
    }
    return c->scratch_bytes >= 2u * 5u * h ? MF_OK : MF_ERR_SHAPE;
}

/* sum(h[j] * w[j]) of the int16 state and an int8 weight row, int32 with wrap-around. */
static int32_t dot_s16_s8(const int16_t *h, const int8_t *w, uint32_t n) {
    uint32_t acc = 0;
    for (uint32_t j = 0; j < n; j++) acc += (uint32_t)((int32_t)h[j] * w[j]);
    int32_t v;
    memcpy(&v, &acc, 4);
    return v;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, wi, wh, bi, bh, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &wi);
    mf_call_input(c, 2, &wh);
    mf_call_input(c, 3, &bi);
    mf_call_input(c, 4, &bh);
    mf_call_output(c, 0, &o);
    const uint32_t n = x.shape[0], steps = x.shape[1], in = x.shape[2], h = wh.shape[1];
    const int8_t *xd = (const int8_t *)x.data, *wid = (const int8_t *)wi.data, *whd = (const int8_t *)wh.data;
    const int32_t *bid = (const int32_t *)bi.data, *bhd = (const int32_t *)bh.data;
    int8_t *out = (int8_t *)o.data;
    int32_t mi[GATES], si[GATES], mh[GATES], sh[GATES];
    for (uint32_t g = 0; g < GATES; g++) {
        mi[g] = mf_value_ints_at(mf_attr(c, A_IN_MULT), g);
        si[g] = mf_value_ints_at(mf_attr(c, A_IN_SHIFT), g);
        mh[g] = mf_value_ints_at(mf_attr(c, A_H_MULT), g);
        sh[g] = mf_value_ints_at(mf_attr(c, A_H_SHIFT), g);
    }
    const int32_t out_m = mf_attr_int(c, A_OUT_MULT), out_s = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t out_off = mf_attr_int(c, A_OUT_OFF);
    int16_t *state = (int16_t *)(void *)c->scratch; /* 16-byte aligned */
    int16_t *rz = state + h;                         /* r and z: 2h values */
    int16_t *xn = rz + 2 * h, *hn = xn + h;          /* the n gate's input and hidden terms */

    for (uint32_t b = 0; b < n; b++) {
        for (uint32_t j = 0; j < h; j++) state[j] = 0;
        for (uint32_t t = 0; t < steps; t++) {
            const int8_t *xt = xd + ((size_t)b * steps + t) * in;
            for (uint32_t r = 0; r < GATES * h; r++) {
                const uint32_t g = r / h;
                const int32_t xi = mf_clamp_s16(mf_requantize(mf_add_wrap(mf_dot_s8(xt, wid + (size_t)r * in, in, 0),
                                                                          bid[r]), mi[g], si[g]), INT16_MIN, INT16_MAX);
                const int32_t hi = mf_requantize(mf_add_wrap(dot_s16_s8(state, whd + (size_t)r * h, h), bhd[r]), mh[g],
                                                 sh[g]);
                if (g < 2) {
                    rz[r] = mf_clamp_s16(mf_add_wrap(xi, hi), INT16_MIN, INT16_MAX);
                } else {
                    xn[r - 2 * h] = (int16_t)xi;
                    hn[r - 2 * h] = mf_clamp_s16(hi, INT16_MIN, INT16_MAX);
                }
            }
            mf_activation_s16(rz, rz, 2 * h, 0, 0);
            for (uint32_t j = 0; j < h; j++) {
                const int32_t rn = mf_clamp_s16(mf_requantize((int32_t)rz[j] * hn[j], Q15_MULT, Q15_SHIFT), INT16_MIN,
                                                INT16_MAX);
                xn[j] = mf_clamp_s16(xn[j] + rn, INT16_MIN, INT16_MAX);
            }
            mf_activation_s16(xn, xn, h, 0, 1); /* the candidate n */
            int8_t *ht = out + ((size_t)b * steps + t) * h;
            for (uint32_t j = 0; j < h; j++) {
                const int32_t cand = xn[j], z = rz[h + j];
                const int32_t v = mf_clamp_s16(cand + mf_requantize(z * (state[j] - cand), Q15_MULT, Q15_SHIFT),
                                               INT16_MIN, INT16_MAX);
                state[j] = (int16_t)v;
                ht[j] = mf_clamp_s8(mf_add_wrap(mf_requantize(v, out_m, out_s), out_off), -128, 127);
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_gru_s8 = {81, "gru_s8", 5, 5, 0, "IIIIiii", check, run};
