/* Helpers for the kernels' load-time checks and inner loops. */
#ifndef MF_KERNEL_UTIL_H
#define MF_KERNEL_UTIL_H

#include "../runtime/mf_internal.h"

/* dtype matches and rank is `rank` (-1: any rank). */
static inline int mf_is(const mf_tensor *t, uint8_t dtype, int rank) {
    return t->dtype == dtype && (rank < 0 || t->rank == (uint8_t)rank);
}

/* INTS attribute k with exactly two values, each >= lo. */
static inline int mf_attr_pair(const mf_call *c, uint32_t k, int32_t lo, int32_t out[2]) {
    mf_value v = mf_attr(c, k);
    out[0] = out[1] = lo;
    if (mf_value_count(v) != 2) return 0;
    out[0] = mf_value_ints_at(v, 0);
    out[1] = mf_value_ints_at(v, 1);
    return out[0] >= lo && out[1] >= lo;
}

/* The window of conv2d_s8 / depthwise_conv2d_s8: stride (>= 1), padding (>= 0) and dilation (>= 1)
 * pairs from attributes k, k + 1, k + 2. */
static inline int mf_attr_conv_window(const mf_call *c, uint32_t k, int32_t st[2], int32_t pd[2], int32_t dl[2]) {
    const int st_ok = mf_attr_pair(c, k, 1, st), pd_ok = mf_attr_pair(c, k + 1, 0, pd);
    const int dl_ok = mf_attr_pair(c, k + 2, 1, dl); /* all three read: run() uses them unchecked */
    return st_ok && pd_ok && dl_ok;
}

/* -128 <= act_min <= act_max <= 127 from attributes k and k + 1. */
static inline int mf_attr_act(const mf_call *c, uint32_t k, int32_t *lo, int32_t *hi) {
    *lo = mf_value_int(mf_attr(c, k));
    *hi = mf_value_int(mf_attr(c, k + 1));
    return -128 <= *lo && *lo <= *hi && *hi <= 127;
}

/* int32 addition with two's complement wrap-around (the C kernels' accumulators wrap). */
static inline int32_t mf_add_wrap(int32_t a, int32_t b) {
    uint32_t u = (uint32_t)a + (uint32_t)b;
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

/* int32 multiplication with two's complement wrap-around. */
static inline int32_t mf_mul_wrap(int32_t a, int32_t b) {
    uint32_t u = (uint32_t)a * (uint32_t)b;
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

/* Integer attribute k. */
static inline int32_t mf_attr_int(const mf_call *c, uint32_t k) { return mf_value_int(mf_attr(c, k)); }

/* Integer attribute k, or `otherwise` where the op has none (an optional trailing attribute). */
static inline int32_t mf_attr_int_or(const mf_call *c, uint32_t k, int32_t otherwise) {
    return mf_attr_present(c, k) ? mf_attr_int(c, k) : otherwise;
}

/* A requantization shift: the weighted ops' `shifts` input is an int8 constant (program format 2.0),
 * each value in [-31, 30]. Kernels read it through mf_channel_requant: q->shift[k] (an int8, promoted
 * to int32 wherever it is used) or, on MVE, mf_shifts_x4 / mf_shifts_gather_x4 (mf_simd.h). */
typedef int8_t mf_shift;

/* Per-channel (length `channels`) or per-tensor (length 1) multipliers and shifts: int32 multipliers,
 * int8 shifts (mf_shift), constants, every shift in [-31, 30], so mf_requantize never shifts out of
 * range. */
mf_status mf_check_requant(const mf_tensor *mult, const mf_tensor *shift, uint32_t channels);

/* The output stage of every CMSIS-NN int8 kernel: arm_nn_requantize, + output offset (wrapping),
 * clamp to the activation range [lo, hi]. */
static inline int8_t mf_requant_s8(int32_t acc, int32_t mult, int32_t shift, int32_t out_off, int32_t lo,
                                   int32_t hi) {
    return mf_clamp_s8(mf_add_wrap(mf_requantize(acc, mult, shift), out_off), lo, hi);
}

/* Two-operand int8 ops (add_s8, mul_s8, batch_matmul_s8): reads inputs 0, 1 and output 0. Returns 1
 * when the op has exactly those tensors and all are int8 (the load-time check; run() may ignore it). */
static inline int mf_call_binary_s8(const mf_call *c, mf_tensor *a, mf_tensor *b, mf_tensor *o) {
    if (c->n_in != 2 || c->n_out != 1) return 0;
    mf_call_input(c, 0, a);
    mf_call_input(c, 1, b);
    mf_call_output(c, 0, o);
    return mf_is(a, MF_INT8, -1) && mf_is(b, MF_INT8, -1) && mf_is(o, MF_INT8, -1);
}

/*
 * Weighted int8 ops (conv2d_s8, depthwise_conv2d_s8, fully_connected_s8, transpose_conv2d_s8) share
 * one operand list -- input, weights, optional int32 bias, requant multipliers, requant shifts; one
 * output -- and their first attributes: 0 input offset, 1 output offset (mcuforge/ir.py OP_KINDS).
 */
enum { MF_WEIGHTED_IN_OFF = 0, MF_WEIGHTED_OUT_OFF = 1 };

/* Reads the operands of a weighted op; returns whether the bias is present. */
static inline int mf_call_weighted(const mf_call *c, mf_tensor *x, mf_tensor *w, mf_tensor *bias, mf_tensor *mult,
                                   mf_tensor *shift, mf_tensor *o) {
    mf_call_input(c, 0, x);
    mf_call_input(c, 1, w);
    const int has_bias = mf_call_input(c, 2, bias);
    mf_call_input(c, 3, mult);
    mf_call_input(c, 4, shift);
    mf_call_output(c, 0, o);
    return has_bias;
}

/* The load-time checks of a weighted op beyond its geometry: an int32 bias of `channels` values (bias
 * NULL: none), the activation range in attributes a_act_min and a_act_min + 1, the input offset in
 * [-127, 128], the output offset in [-128, 127] and the requant constants (mf_check_requant). */
mf_status mf_check_weighted_params(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                   const mf_tensor *shift, uint32_t channels, uint32_t a_act_min);

/* A weighted op's output stage, read once per run: bias, per-channel (or per-tensor) requantization,
 * output offset and activation range. */
typedef struct {
    const int32_t *bias; /* NULL: no int32 bias */
    const int32_t *mult; /* NULL: 16-bit multipliers */
    const mf_shift *shift;
    uint32_t per_channel; /* 0: mult[0] and shift[0] for every channel */
    int32_t out_off, lo, hi;
    /* The s4 kinds' compact parameters (format 3.0), read through mf_s4.h's accessors: an int16 bias, and
     * int16 multipliers m standing for the Q31 multiplier m << 16. NULL: int32 ones above (or no bias). */
    const int16_t *bias16, *mult16;
} mf_channel_requant;

static inline void mf_channel_requant_init(mf_channel_requant *q, const mf_call *c, const mf_tensor *bias,
                                           const mf_tensor *mult, const mf_tensor *shift, uint32_t a_act_min) {
    const int narrow_bias = bias && bias->dtype == MF_INT16, narrow_mult = mult->dtype == MF_INT16;
    q->bias = bias && !narrow_bias ? (const int32_t *)bias->data : NULL;
    q->bias16 = narrow_bias ? (const int16_t *)bias->data : NULL;
    q->mult = narrow_mult ? NULL : (const int32_t *)mult->data;
    q->mult16 = narrow_mult ? (const int16_t *)mult->data : NULL;
    q->shift = (const mf_shift *)shift->data;
    q->per_channel = mult->shape[0] != 1;
    q->out_off = mf_attr_int(c, MF_WEIGHTED_OUT_OFF);
    mf_attr_act(c, a_act_min, &q->lo, &q->hi);
}

/* The output stage's parameters of channel oc as CMSIS-NN's int32 arguments, whether the program stores
 * them compactly (the s4 kinds: an int16 bias, 16-bit multipliers m << 16) or not. */
static inline int32_t mf_rq_bias(const mf_channel_requant *q, uint32_t oc) {
    return q->bias16 ? q->bias16[oc] : q->bias ? q->bias[oc] : 0;
}
static inline int32_t mf_rq_mult(const mf_channel_requant *q, uint32_t oc) {
    const uint32_t k = q->per_channel ? oc : 0;
    return q->mult16 ? (int32_t)((uint32_t)q->mult16[k] << 16) : q->mult[k];
}

/* What a weighted kernel's run reads first: input, weights, output, input offset, output stage and, for
 * a convolution, its window (stride, padding, dilation from attribute a_window on; a_window < 0: none). */
typedef struct {
    mf_tensor x, w, o;
    int32_t in_off;
    mf_channel_requant rq;
    int32_t st[2], pd[2], dl[2];
} mf_weighted_run;

static inline void mf_weighted_run_init(mf_weighted_run *k, const mf_call *c, uint32_t a_act_min, int a_window) {
    mf_tensor b, m, s;
    const int has_bias = mf_call_weighted(c, &k->x, &k->w, &b, &m, &s, &k->o);
    k->in_off = mf_attr_int(c, MF_WEIGHTED_IN_OFF);
    mf_channel_requant_init(&k->rq, c, has_bias ? &b : NULL, &m, &s, a_act_min); /* keeps data pointers only */
    if (a_window >= 0) mf_attr_conv_window(c, (uint32_t)a_window, k->st, k->pd, k->dl);
}

/* Output channel oc from its int32 accumulator: + bias (wrapping, so where the bias enters the sum
 * does not matter), then mf_requant_s8 with the channel's parameters. */
static inline int8_t mf_channel_requant_s8(const mf_channel_requant *q, uint32_t oc, int32_t acc) {
    if (q->bias) acc = mf_add_wrap(acc, q->bias[oc]);
    const uint32_t k = q->per_channel ? oc : 0;
    return mf_requant_s8(acc, q->mult[k], q->shift[k], q->out_off, q->lo, q->hi);
}

/* The load-time checks of the weighted kinds, shared by their int8- and int4-weight forms
 * (kernels/weighted_check.c): operands, shapes, window and output-stage parameters, weights of
 * weight_dtype. */
mf_status mf_check_conv2d(const mf_call *c, uint8_t weight_dtype);
mf_status mf_check_depthwise_conv2d(const mf_call *c, uint8_t weight_dtype);
mf_status mf_check_fully_connected(const mf_call *c, uint8_t weight_dtype);

/* sum((x[i] + x_offset) * w[i]) over n int8 pairs; the caller keeps n small enough not to overflow. */
int32_t mf_dot_s8(const int8_t *x, const int8_t *w, uint32_t n, int32_t x_offset);

/* out = x with its dims permuted (out dim k = x dim perm[k], perm a permutation of 0 .. rank - 1);
 * bytes are copied, so any element type. Shared by the transpose kernel and aten.permute. */
void mf_permute_copy(const mf_tensor *x, const uint32_t perm[MF_MAX_RANK], void *out);

/* Largest dot-product depth: 65536 * 255 * 128 < 2^31, so an int32 accumulator cannot overflow. */
#define MF_MAX_DOT_DEPTH 65536u

#endif /* MF_KERNEL_UTIL_H */
