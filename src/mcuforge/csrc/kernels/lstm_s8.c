/*
 * lstm_s8: one LSTM layer over a whole sequence, bit-exact with CMSIS-NN arm_lstm_unidirectional_s8 and
 * mcuforge.kernels.lstm (see its docstring for the equations). Batch first: x (N, T, I) int8, out (N, T, H)
 * int8, from the zero state; weights int8 (4H, I) and (4H, H) in torch's gate order (i, f, g, o); int32
 * effective biases (zero points folded in); one multiplier/shift per gate and matrix (attributes).
 *
 * Batch rows are independent, so each runs its whole sequence in turn: the op's scratch holds one row's
 * int16 cell state and its four int16 gate vectors (10 H bytes, mcuforge.ir.kernel_scratch_bytes). The
 * hidden state of step t - 1 is the output row already written. The dot products are mf_dot_s8 (portable,
 * DSP SMLAD and MVE VMLADAVA paths, kernels/dot_s8.c); sigmoid and tanh are mf_activation_s16
 * (arm_nn_activation_s16, kernels/quant_s16.c).
 */
#include "mf_s16.h"

enum {
    A_IN_MULT, A_IN_SHIFT, A_H_MULT, A_H_SHIFT, A_F2C_MULT, A_F2C_SHIFT, A_I2C_MULT, A_I2C_SHIFT, A_OUT_MULT,
    A_OUT_SHIFT, A_OUT_OFF, A_CELL_POWER, A_CELL_CLIP
};
enum { GATES = 4, CELL_POWER_MIN = -12, CELL_POWER_MAX = 2 };

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
    if (!mf_in_range(mf_attr_int(c, A_F2C_SHIFT), -31, 30) || !mf_in_range(mf_attr_int(c, A_I2C_SHIFT), -31, 30) ||
        !mf_in_range(mf_attr_int(c, A_OUT_SHIFT), -31, 30) || !mf_in_range(mf_attr_int(c, A_OUT_OFF), -128, 127) ||
        !mf_in_range(mf_attr_int(c, A_CELL_POWER), CELL_POWER_MIN, CELL_POWER_MAX) ||
        !mf_in_range(mf_attr_int(c, A_CELL_CLIP), 1, INT16_MAX)) {
        return MF_ERR_SHAPE;
    }
    /* The kernel needs its scratch: one row's cell state and gates, int16 each. */
    return c->scratch_bytes >= 2u * 5u * h ? MF_OK : MF_ERR_SHAPE;
}

/* One gate row's int16 pre-activation (arm_nn_lstm_calculate_gate_s8_s16 before the activation): the
 * input term requantized and clamped, then the hidden term (none at step 0) added and clamped. */
static int16_t gate_input(const int8_t *xt, const int8_t *wi, uint32_t in, int32_t bi, int32_t mi, int32_t si,
                          const int8_t *hp, const int8_t *wh, uint32_t h, int32_t bh, int32_t mh, int32_t sh) {
    int32_t v = mf_clamp_s16(mf_requantize(mf_add_wrap(mf_dot_s8(xt, wi, in, 0), bi), mi, si), INT16_MIN, INT16_MAX);
    if (hp) {
        const int32_t r = mf_requantize(mf_add_wrap(mf_dot_s8(hp, wh, h, 0), bh), mh, sh);
        v = mf_clamp_s16(mf_add_wrap(v, r), INT16_MIN, INT16_MAX); /* int32 sum, wrapping as on the core */
    }
    return (int16_t)v;
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
    const int32_t f2c_m = mf_attr_int(c, A_F2C_MULT), f2c_s = mf_attr_int(c, A_F2C_SHIFT);
    const int32_t i2c_m = mf_attr_int(c, A_I2C_MULT), i2c_s = mf_attr_int(c, A_I2C_SHIFT);
    const int32_t out_m = mf_attr_int(c, A_OUT_MULT), out_s = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t out_off = mf_attr_int(c, A_OUT_OFF), clip = mf_attr_int(c, A_CELL_CLIP);
    const int32_t tanh_shift = mf_attr_int(c, A_CELL_POWER) + 12;
    int16_t *cell = (int16_t *)(void *)c->scratch; /* 16-byte aligned */
    int16_t *gates = cell + h;                      /* i, f, g, o: h values each */
    int16_t *ig = gates, *fg = gates + h, *cg = gates + 2 * h, *og = gates + 3 * h;

    for (uint32_t b = 0; b < n; b++) {
        for (uint32_t j = 0; j < h; j++) cell[j] = 0;
        for (uint32_t t = 0; t < steps; t++) {
            const int8_t *xt = xd + ((size_t)b * steps + t) * in;
            const int8_t *hp = t ? out + ((size_t)b * steps + t - 1) * h : NULL;
            for (uint32_t r = 0; r < GATES * h; r++) {
                const uint32_t g = r / h;
                gates[r] = gate_input(xt, wid + (size_t)r * in, in, bid[r], mi[g], si[g], hp, whd + (size_t)r * h, h,
                                      bhd[r], mh[g], sh[g]);
            }
            mf_activation_s16(ig, ig, 2 * h, 0, 0); /* i and f */
            mf_activation_s16(cg, cg, h, 0, 1);
            mf_activation_s16(og, og, h, 0, 0);
            for (uint32_t j = 0; j < h; j++) {
                const int32_t kept = mf_clamp_s16(mf_requantize((int32_t)fg[j] * cell[j], f2c_m, f2c_s), INT16_MIN,
                                                  INT16_MAX);
                const int32_t added = mf_requantize((int32_t)ig[j] * cg[j], i2c_m, i2c_s);
                cell[j] = (int16_t)mf_clamp_s16(mf_add_wrap(kept, added), -clip, clip);
            }
            mf_activation_s16(cell, ig, h, tanh_shift, 1); /* tanh(c) where i was: i is used */
            int8_t *ht = out + ((size_t)b * steps + t) * h;
            for (uint32_t j = 0; j < h; j++) {
                ht[j] = mf_clamp_s8(mf_add_wrap(mf_requantize((int32_t)og[j] * ig[j], out_m, out_s), out_off), -128, 127);
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_lstm_s8 = {80, "lstm_s8", 5, 5, 0, "IIIIiiiiiiiii", check, run};
