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

/* -128 <= act_min <= act_max <= 127 from attributes k and k + 1. */
static inline int mf_attr_act(const mf_call *c, uint32_t k, int32_t *lo, int32_t *hi) {
    *lo = mf_value_int(mf_attr(c, k));
    *hi = mf_value_int(mf_attr(c, k + 1));
    return -128 <= *lo && *lo <= *hi && *hi <= 127;
}

/* Per-channel (length `channels`) or per-tensor (length 1) multipliers and shifts: int32 constants
 * with every shift in [-31, 30], so mf_requantize never shifts out of range. */
mf_status mf_check_requant(const mf_tensor *mult, const mf_tensor *shift, uint32_t channels);

/* sum((x[i] + x_offset) * w[i]) over n int8 pairs; the caller keeps n small enough not to overflow. */
int32_t mf_dot_s8(const int8_t *x, const int8_t *w, uint32_t n, int32_t x_offset);

/* int32 addition with two's complement wrap-around (the C kernels' accumulators wrap). */
static inline int32_t mf_add_wrap(int32_t a, int32_t b) {
    uint32_t u = (uint32_t)a + (uint32_t)b;
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

/* Largest dot-product depth: 65536 * 255 * 128 < 2^31, so an int32 accumulator cannot overflow. */
#define MF_MAX_DOT_DEPTH 65536u

#endif /* MF_KERNEL_UTIL_H */
