/*
 * Helpers of the int16-activation (A16W8) kernels: CMSIS-NN's s16 arithmetic, bit-exact with
 * mcuforge/kernels/quant_s16.py. s16 activations are symmetric (zero point 0): no offsets.
 *
 *   mf_reduce_multiplier / mf_requantize_s64   REDUCE_MULTIPLIER, arm_nn_requantize_s64
 *   mf_table_lookup_s16                        the 513-entry interpolation of arm_softmax_s16
 *   mf_activation_s16                          arm_nn_activation_s16 (sigmoid / tanh), kernels/quant_s16.c
 */
#ifndef MF_S16_H
#define MF_S16_H

#include "mf_kernel_util.h"

/* shifts of arm_nn_requantize_s64 (its right shift 14 - shift stays in 0 .. 45; CMSIS-NN documents up to 7
 * and computes up to 14 the same way) */
#define MF_S64_SHIFT_MIN (-31)
#define MF_S64_SHIFT_MAX 14
/* |bias| < 2^46 and depth <= 2^24 keep |acc| < 2^47: acc * reduced multiplier fits int64 */
#define MF_S16_BIAS_LIMIT (1ll << 46)
#define MF_S16_MAX_DEPTH (1u << 24)
#define MF_LUT_S16_ENTRIES 513u

/* int32 / int16 from the low bits, two's complement (well defined, unlike a narrowing cast). */
static inline int32_t mf_s16_wrap32(uint32_t u) {
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}
static inline int16_t mf_wrap16(int32_t v) {
    const uint16_t u = (uint16_t)(uint32_t)v;
    int16_t r;
    memcpy(&r, &u, 2);
    return r;
}

static inline int16_t mf_clamp_s16(int32_t v, int32_t lo, int32_t hi) {
    return (int16_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* REDUCE_MULTIPLIER: the Q31 multiplier rounded to Q15, 0x7FFF from 0x7FFF0000 on. */
static inline int32_t mf_reduce_multiplier(int32_t m) {
    return m < 0x7FFF0000 ? (int32_t)(((int64_t)m + (1 << 15)) >> 16) : 0x7FFF;
}

/* arm_nn_requantize_s64: (val * rm) >> (14 - shift) cast to int32, then (r + 1) >> 1 in int32 (both
 * wrap as on the target): val * rm / 2^(15 - shift) rounded half up. >> of a negative value is an
 * arithmetic shift on every compiler we target, as CMSIS-NN assumes. */
static inline int32_t mf_requantize_s64(int64_t val, int32_t reduced_multiplier, int32_t shift) {
    const int64_t prod = val * reduced_multiplier;
    const int32_t r = mf_s16_wrap32((uint32_t)(uint64_t)(prod >> (14 - shift)));
    return mf_s16_wrap32((uint32_t)r + 1u) >> 1;
}

/* Interpolated lookup in an int16[513] table (arm_softmax_s16's, generic_int16_table_lookup):
 * entry 256 + (x >> 7), the low 7 bits interpolate towards the next entry; int16 locals wrap. */
static inline int16_t mf_table_lookup_s16(int16_t x, const int16_t *table) {
    const int32_t index = 256 + (x >> 7);
    const int32_t offset = x & 0x7F;
    const int32_t base = table[index];
    const int32_t slope = mf_wrap16(table[index + 1] - base);
    return mf_wrap16(base + mf_wrap16((slope * offset + 64) >> 7));
}

/* sum(x[i] * w[i]) over n int16 x int8 pairs, exact (kernels/dot_s16.c: portable, DSP, MVE). */
int64_t mf_dot_s16(const int16_t *x, const int8_t *w, uint32_t n);
/* acc[r] = mf_dot_s16(x, w + r * depth, depth) for the n_rows weight rows (r < n_rows), the input loads
 * shared between rows on the DSP and MVE paths. */
void mf_dot_s16_rows(const int16_t *x, const int8_t *w, uint32_t depth, uint32_t n_rows, int64_t *acc);
/* Columns per int32 block of the MVE sums: 504 (a multiple of 8) <= 511 products of at most 2^22. */
#define MF_S16_BLOCK 504u

/* Two int16 operands and one int16 output (add_s16, mul_s16, batch_matmul_s16): 1 when the op has
 * exactly those tensors. */
static inline int mf_call_binary_s16(const mf_call *c, mf_tensor *a, mf_tensor *b, mf_tensor *o) {
    if (c->n_in != 2 || c->n_out != 1) return 0;
    mf_call_input(c, 0, a);
    mf_call_input(c, 1, b);
    mf_call_output(c, 0, o);
    return mf_is(a, MF_INT16, -1) && mf_is(b, MF_INT16, -1) && mf_is(o, MF_INT16, -1);
}

/* -32768 <= act_min <= act_max <= 32767 from attributes k and k + 1. */
static inline int mf_attr_act_s16(const mf_call *c, uint32_t k, int32_t *lo, int32_t *hi) {
    *lo = mf_attr_int(c, k);
    *hi = mf_attr_int(c, k + 1);
    return -32768 <= *lo && *lo <= *hi && *hi <= 32767;
}

/* The load-time checks of an s16 weighted op (conv2d_s16, depthwise_conv2d_s16, fully_connected_s16):
 * an int64 constant bias of `channels` values below 2^46 in magnitude (NULL: none), constant int32
 * multipliers (above INT32_MIN) and int8 shifts (mf_shift, in [-31, 14]) of length 1 or `channels`, the activation
 * range in attributes a_act_min and a_act_min + 1, and a depth of at most MF_S16_MAX_DEPTH. */
mf_status mf_check_weighted_s16(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                const mf_tensor *shift, uint32_t channels, uint64_t depth, uint32_t a_act_min);
/* The same, also taking arm_convolve_s16's int32-bias form (conv2d_s16): an int32 constant bias, then the
 * multipliers and shifts as arm_nn_requantize takes them (mf_check_requant: shifts in [-31, 30]). */
mf_status mf_check_weighted_s16_any_bias(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                         const mf_tensor *shift, uint32_t channels, uint64_t depth,
                                         uint32_t a_act_min);

/* A weighted s16 op's output stage, read once per run. */
typedef struct {
    const uint8_t *bias; /* int64 (or, int32_bias, int32) little-endian values; NULL: no bias */
    int int32_bias;      /* arm_convolve_s16's int32-bias form: int32 accumulator, arm_nn_requantize */
    const int32_t *mult;
    const mf_shift *shift;
    uint32_t per_channel;
    int32_t lo, hi;
} mf_requant_s16;

void mf_requant_s16_init(mf_requant_s16 *q, const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                         const mf_tensor *shift, uint32_t a_act_min);

/* Output channel oc from its exact int64 accumulator: + bias, arm_nn_requantize_s64, clamp; in the int32-bias
 * form the accumulator modulo 2^32 (CMSIS-NN's int32 sum) + bias (wrapping), arm_nn_requantize, clamp. */
static inline int16_t mf_requant_s16_channel(const mf_requant_s16 *q, uint32_t oc, int64_t acc) {
    const uint32_t k = q->per_channel ? oc : 0;
    if (q->int32_bias) {
        int32_t sum = mf_s16_wrap32((uint32_t)(uint64_t)acc);
        if (q->bias) {
            int32_t b;
            memcpy(&b, q->bias + 4u * oc, 4);
            sum = mf_add_wrap(sum, b);
        }
        return mf_clamp_s16(mf_requantize(sum, q->mult[k], q->shift[k]), q->lo, q->hi);
    }
    if (q->bias) {
        int64_t b;
        memcpy(&b, q->bias + 8u * oc, 8); /* little-endian targets; the constant need not be 8-aligned */
        acc += b;
    }
    return mf_clamp_s16(mf_requantize_s64(acc, mf_reduce_multiplier(q->mult[k]), q->shift[k]), q->lo, q->hi);
}

/* The MVE int32 path of the s16 weighted kernels (kernels/dot_s16.c; defined on MVE builds only).
 * mf_s16_mve_ok: 1 when its int32 sums and VRMULH output stage give mf_requant_s16_channel's bits for every
 * filter of w (oc_n filters of depth weights: tap_step 1, rows of depth; else tap t of filter oc at
 * w[t * tap_step + oc], depthwise). mf_s16_mve_mult: channel k's VRMULH multiplier, reduced multiplier
 * << (17 + shift). mf_s16_mve_cols4: the outputs of filters oc0 .. oc0 + count - 1 (w: filter oc0's row) for
 * n_cols (1..4) patches cols[i] of depth values, pixel i's at out + i * out_step + oc. */
int mf_s16_mve_ok(const mf_requant_s16 *q, const int8_t *w, uint32_t depth, uint32_t oc_n, uint32_t tap_step);
int32_t mf_s16_mve_mult(const mf_requant_s16 *q, uint32_t k);
/* mf_s16_mve_rows4: the outputs of the oc_n filters of w (rows of depth) for one input x, 4 filters a pass. */
void mf_s16_mve_rows4(const mf_requant_s16 *q, const int16_t *x, const int8_t *w, uint32_t depth, uint32_t oc_n,
                      int16_t *out);
void mf_s16_mve_cols4(const mf_requant_s16 *q, const int16_t *const *cols, uint32_t n_cols, const int8_t *w,
                      uint32_t depth, uint32_t oc0, uint32_t count, int16_t *out, uint32_t out_step);

/* arm_nn_activation_s16 on n values: sigmoid (is_tanh 0) or tanh (1) of int16 inputs in Q3.12 shifted left
 * by left_shift (-31 .. 14; a negative one is a right shift rounding half up), Q0.15 outputs, from the
 * 256-entry Q0.16 sigmoid table of mcuforge.kernels.lut_s16 (CMSIS-NN's sigmoid_table_uint16).
 * Reusable by other kernels (the gates of recurrent cells). */
void mf_activation_s16(const int16_t *x, int16_t *out, uint32_t n, int32_t left_shift, int is_tanh);
#define MF_ACTIVATION_MIN_LEFT_SHIFT (-31)
#define MF_ACTIVATION_MAX_LEFT_SHIFT 14

#endif /* MF_S16_H */
