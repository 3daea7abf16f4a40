/*
 * lstm_s8 and gru_s8: one recurrent layer over a whole sequence, int8 input, output and weights, int32
 * biases, int16 gates and state; bit-exact with mcuforge.kernels.lstm / mcuforge.kernels.gru (their
 * docstrings state the equations). Batch first: x (N, T, I) int8, out (N, T, H) int8, from the zero state;
 * weights int8 (gates H, I) and (gates H, H) in torch's gate order; int32 effective biases (zero points
 * folded in); one multiplier/shift per gate and matrix (attributes).
 *   lstm_s8: CMSIS-NN's arm_lstm_unidirectional_s8 (gates i, f, g, o; int16 cell state at scale 2^p; the
 *            int8 output is the next step's hidden state).
 *   gru_s8:  a GRU in the same style (gates r, z, n; the hidden state int16 Q0.15).
 *
 * Batch rows are independent, so each runs its whole sequence in turn: the op's scratch holds one row's
 * int16 state and four int16 vectors (10 H bytes, mcuforge.ir.kernel_scratch_bytes). Input dot products
 * (and lstm_s8's recurrent ones, of the int8 output) are mf_dot_s8 (portable, DSP SMLAD and MVE VMLADAVA
 * paths, kernels/dot_s8.c); gru_s8's recurrent ones, of its int16 state, mf_dot_s16 (portable, DSP SMLALD,
 * MVE VMLALDAVA, kernels/dot_s16.c); sigmoid and tanh are mf_activation_s16 (arm_nn_activation_s16,
 * kernels/quant_s16.c).
 */
#include "mf_s16.h"

/* The first four attributes of both kinds: the per-gate input and hidden multipliers and shifts. */
enum { A_IN_MULT, A_IN_SHIFT, A_H_MULT, A_H_SHIFT };

typedef struct {
    mf_tensor x, wi, wh, bi, bh, o;
} layer_operands;

static void read_operands(const mf_call *c, layer_operands *t) {
    mf_call_input(c, 0, &t->x);
    mf_call_input(c, 1, &t->wi);
    mf_call_input(c, 2, &t->wh);
    mf_call_input(c, 3, &t->bi);
    mf_call_input(c, 4, &t->bh);
    mf_call_output(c, 0, &t->o);
}

static int gate_list(const mf_call *c, uint32_t k, uint32_t gates, int32_t lo, int32_t hi) {
    mf_value v = mf_attr(c, k);
    if (mf_value_count(v) != gates) return 0;
    for (uint32_t g = 0; g < gates; g++) {
        if (!mf_in_range(mf_value_ints_at(v, g), lo, hi)) return 0;
    }
    return 1;
}

/* The checks both kinds share: operand dtypes and shapes for `gates` gates, the per-gate lists, the scratch
 * of 10 H bytes. */
static mf_status check_layer(const mf_call *c, uint32_t gates) {
    layer_operands t;
    if (c->n_in != 5 || c->n_out != 1) return MF_ERR_SHAPE;
    read_operands(c, &t);
    if (!mf_is(&t.x, MF_INT8, 3) || !mf_is(&t.wi, MF_INT8, 2) || !mf_is(&t.wh, MF_INT8, 2) ||
        !mf_is(&t.o, MF_INT8, 3)) {
        return MF_ERR_SHAPE;
    }
    const uint32_t h = t.wh.shape[1];
    if (h == 0 || t.wh.shape[0] != gates * h || t.wi.shape[0] != gates * h || t.wi.shape[1] != t.x.shape[2]) {
        return MF_ERR_SHAPE;
    }
    if (t.x.shape[2] > MF_MAX_DOT_DEPTH || h > MF_MAX_DOT_DEPTH) return MF_ERR_SHAPE;
    if (t.o.shape[0] != t.x.shape[0] || t.o.shape[1] != t.x.shape[1] || t.o.shape[2] != h) return MF_ERR_SHAPE;
    if (!mf_is(&t.bi, MF_INT32, 1) || !mf_is(&t.bh, MF_INT32, 1) || t.bi.shape[0] != gates * h ||
        t.bh.shape[0] != gates * h) {
        return MF_ERR_SHAPE;
    }
    if (!gate_list(c, A_IN_MULT, gates, INT32_MIN, INT32_MAX) || !gate_list(c, A_IN_SHIFT, gates, -31, 30) ||
        !gate_list(c, A_H_MULT, gates, INT32_MIN, INT32_MAX) || !gate_list(c, A_H_SHIFT, gates, -31, 30)) {
        return MF_ERR_SHAPE;
    }
    /* the kernels need their scratch, as planned (mcuforge/kinds/scratch.py) */
    return c->scratch_bytes >= mf_scratch_recurrent_state(h) ? MF_OK : MF_ERR_SHAPE;
}

/* The per-gate multipliers and shifts, read once per run. */
typedef struct {
    int32_t mi[4], si[4], mh[4], sh[4];
} gate_requant;

static void read_gates(const mf_call *c, uint32_t gates, gate_requant *q) {
    for (uint32_t g = 0; g < gates; g++) {
        q->mi[g] = mf_value_ints_at(mf_attr(c, A_IN_MULT), g);
        q->si[g] = mf_value_ints_at(mf_attr(c, A_IN_SHIFT), g);
        q->mh[g] = mf_value_ints_at(mf_attr(c, A_H_MULT), g);
        q->sh[g] = mf_value_ints_at(mf_attr(c, A_H_SHIFT), g);
    }
}

/* One run's view of a layer: its dimensions, typed operands and per-gate requantization. */
typedef struct {
    uint32_t n, steps, in, h;
    const int8_t *x, *wi, *wh;
    const int32_t *bi, *bh;
    int8_t *out;
    gate_requant q;
} layer_view;

static void read_layer(const mf_call *c, uint32_t gates, layer_view *v) {
    layer_operands t;
    read_operands(c, &t);
    v->n = t.x.shape[0];
    v->steps = t.x.shape[1];
    v->in = t.x.shape[2];
    v->h = t.wh.shape[1];
    v->x = (const int8_t *)t.x.data;
    v->wi = (const int8_t *)t.wi.data;
    v->wh = (const int8_t *)t.wh.data;
    v->bi = (const int32_t *)t.bi.data;
    v->bh = (const int32_t *)t.bh.data;
    v->out = (int8_t *)t.o.data;
    read_gates(c, gates, &v->q);
}

/* clamp16(requantize(w . x + bias)): a gate row's input term, Q3.12. */
static int32_t input_term(const int8_t *xt, const int8_t *w, uint32_t in, int32_t bias, int32_t m, int32_t s) {
    return mf_clamp_s16(mf_requantize(mf_add_wrap(mf_dot_s8(xt, w, in, 0), bias), m, s), INT16_MIN, INT16_MAX);
}

/* ---- lstm_s8 ---- */
enum {
    L_F2C_MULT = 4, L_F2C_SHIFT, L_I2C_MULT, L_I2C_SHIFT, L_OUT_MULT, L_OUT_SHIFT, L_OUT_OFF, L_CELL_POWER,
    L_CELL_CLIP
};
/* tanh of the cell state: arm_nn_activation_s16 with left shift power + 12, which takes -31 .. 14 (a negative
 * one is a rounding right shift); 2 keeps the int16 cell within the table's reach */
enum { CELL_POWER_MIN = MF_ACTIVATION_MIN_LEFT_SHIFT - 12, CELL_POWER_MAX = 2 };

static mf_status check_lstm(const mf_call *c) {
    const mf_status s = check_layer(c, 4);
    if (s != MF_OK) return s;
    if (!mf_in_range(mf_attr_int(c, L_F2C_SHIFT), -31, 30) || !mf_in_range(mf_attr_int(c, L_I2C_SHIFT), -31, 30) ||
        !mf_in_range(mf_attr_int(c, L_OUT_SHIFT), -31, 30) || !mf_in_range(mf_attr_int(c, L_OUT_OFF), -128, 127) ||
        !mf_in_range(mf_attr_int(c, L_CELL_POWER), CELL_POWER_MIN, CELL_POWER_MAX) ||
        !mf_in_range(mf_attr_int(c, L_CELL_CLIP), 1, INT16_MAX)) {
        return MF_ERR_SHAPE;
    }
    return MF_OK;
}

static mf_status run_lstm(const mf_call *c) {
    layer_view lay;
    read_layer(c, 4, &lay);
    const uint32_t n = lay.n, steps = lay.steps, in = lay.in, h = lay.h;
    const int32_t f2c_m = mf_attr_int(c, L_F2C_MULT), f2c_s = mf_attr_int(c, L_F2C_SHIFT);
    const int32_t i2c_m = mf_attr_int(c, L_I2C_MULT), i2c_s = mf_attr_int(c, L_I2C_SHIFT);
    const int32_t out_m = mf_attr_int(c, L_OUT_MULT), out_s = mf_attr_int(c, L_OUT_SHIFT);
    const int32_t out_off = mf_attr_int(c, L_OUT_OFF), clip = mf_attr_int(c, L_CELL_CLIP);
    const int32_t tanh_shift = mf_attr_int(c, L_CELL_POWER) + 12;
    int16_t *cell = (int16_t *)(void *)c->scratch; /* 16-byte aligned */
    int16_t *gates = cell + h;                      /* i, f, g, o: h values each */
    int16_t *ig = gates, *fg = gates + h, *cg = gates + 2 * h, *og = gates + 3 * h;

    for (uint32_t b = 0; b < n; b++) {
        for (uint32_t j = 0; j < h; j++) cell[j] = 0;
        for (uint32_t s = 0; s < steps; s++) {
            const int8_t *xt = lay.x + ((size_t)b * steps + s) * in;
            const int8_t *hp = s ? lay.out + ((size_t)b * steps + s - 1) * h : NULL; /* none at step 0 */
            /* arm_nn_lstm_calculate_gate_s8_s16 before the activation: the input term, then the hidden
             * term added (an int32 sum, wrapping as on the core), each clamped to int16 */
            for (uint32_t r = 0; r < 4 * h; r++) {
                const uint32_t g = r / h;
                int32_t v = input_term(xt, lay.wi + (size_t)r * in, in, lay.bi[r], lay.q.mi[g], lay.q.si[g]);
                if (hp) {
                    const int32_t dot = mf_dot_s8(hp, lay.wh + (size_t)r * h, h, 0);
                    const int32_t hr = mf_requantize(mf_add_wrap(dot, lay.bh[r]), lay.q.mh[g], lay.q.sh[g]);
                    v = mf_clamp_s16(mf_add_wrap(v, hr), INT16_MIN, INT16_MAX);
                }
                gates[r] = (int16_t)v;
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
            int8_t *ht = lay.out + ((size_t)b * steps + s) * h;
            for (uint32_t j = 0; j < h; j++) {
                ht[j] = mf_clamp_s8(mf_add_wrap(mf_requantize((int32_t)og[j] * ig[j], out_m, out_s), out_off), -128, 127);
            }
        }
    }
    return MF_OK;
}

/* ---- gru_s8 ---- */

enum { G_OUT_MULT = 4, G_OUT_SHIFT, G_OUT_OFF };
#define Q15_MULT (1 << 30) /* requantize by 2^-15: a Q0.15 factor times a value */
#define Q15_SHIFT (-14)

static mf_status check_gru(const mf_call *c) {
    const mf_status s = check_layer(c, 3);
    if (s != MF_OK) return s;
    return mf_in_range(mf_attr_int(c, G_OUT_SHIFT), -31, 30) && mf_in_range(mf_attr_int(c, G_OUT_OFF), -128, 127)
               ? MF_OK
               : MF_ERR_SHAPE;
}

/* sum(h[j] * w[j]) of the int16 state and an int8 weight row as an int32 that wraps around: mf_dot_s16's exact
 * sum (portable, DSP and MVE paths) reduced modulo 2^32, the same value as a wrapping int32 accumulation. */
static int32_t dot_s16_s8(const int16_t *h, const int8_t *w, uint32_t n) {
    const uint32_t low = (uint32_t)(uint64_t)mf_dot_s16(h, w, n);
    int32_t v;
    memcpy(&v, &low, 4);
    return v;
}

static mf_status run_gru(const mf_call *c) {
    layer_view lay;
    read_layer(c, 3, &lay);
    const uint32_t n = lay.n, steps = lay.steps, in = lay.in, h = lay.h;
    const int32_t out_m = mf_attr_int(c, G_OUT_MULT), out_s = mf_attr_int(c, G_OUT_SHIFT);
    const int32_t out_off = mf_attr_int(c, G_OUT_OFF);
    int16_t *state = (int16_t *)(void *)c->scratch; /* 16-byte aligned */
    int16_t *rz = state + h;                         /* r and z: 2h values */
    int16_t *xn = rz + 2 * h, *hn = xn + h;          /* the n gate's input and hidden terms */

    for (uint32_t b = 0; b < n; b++) {
        for (uint32_t j = 0; j < h; j++) state[j] = 0;
        for (uint32_t s = 0; s < steps; s++) {
            const int8_t *xt = lay.x + ((size_t)b * steps + s) * in;
            for (uint32_t r = 0; r < 3 * h; r++) {
                const uint32_t g = r / h;
                const int32_t xi = input_term(xt, lay.wi + (size_t)r * in, in, lay.bi[r], lay.q.mi[g], lay.q.si[g]);
                const int32_t dot = dot_s16_s8(state, lay.wh + (size_t)r * h, h);
                const int32_t hi = mf_requantize(mf_add_wrap(dot, lay.bh[r]), lay.q.mh[g], lay.q.sh[g]);
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
            int8_t *ht = lay.out + ((size_t)b * steps + s) * h;
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

const mf_kernel mf_kernel_lstm_s8 = {MF_KIND_HEAD_lstm_s8, check_lstm, run_lstm};
const mf_kernel mf_kernel_gru_s8 = {MF_KIND_HEAD_gru_s8, check_gru, run_gru};
