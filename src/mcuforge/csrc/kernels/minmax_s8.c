/*
 * maximum_s8 / minimum_s8: int8 elementwise maximum and minimum, bit-exact with CMSIS-NN arm_maximum_s8 /
 * arm_minimum_s8 and mcuforge.kernels.minmax. No requantization: a, b and the output share one
 * quantization, so out[i] = a[i] >= b[i] ? a[i] : b[i] (minimum: <=). a and b broadcast like numpy over
 * ranks <= 4 (CMSIS-NN's N, H, W, C dims, any of which may be 1 in either input).
 *
 * The output is walked in rows along its last dim: each input either has that row (stride 1) or one value
 * repeated along it (stride 0). Equal element counts are one row; an input of one element is one value
 * for the whole output. A row runs 16 lanes at a time on MVE (VMAX/VMIN, the tail predicated), 4 on DSP
 * cores (SSUB8 sets a byte's GE flag where a >= b, SEL picks by it), one at a time elsewhere.
 */
#include "broadcast.h"
#include "mf_simd.h"

static mf_status check(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    if (!mf_call_binary_s8(c, &a, &b, &o)) return MF_ERR_SHAPE;
    if (a.rank > 4 || b.rank > 4 || o.rank > 4) return MF_ERR_SHAPE; /* cmsis_nn_dims: N, H, W, C */
    if (!mf_bcast_init(&it, &a, &b) || it.rank != o.rank || it.numel != o.numel) return MF_ERR_SHAPE;
    for (uint32_t k = 0; k < o.rank; k++)
        if (it.shape[k] != o.shape[k]) return MF_ERR_SHAPE;
    return MF_OK;
}

static inline int8_t pick(int8_t x, int8_t y, int is_max) {
    if (is_max) return x >= y ? x : y;
    return x <= y ? x : y;
}

/* out[i] = pick(a[i * sa], b[i * sb]) for i < n; sa, sb are 0 or 1, never both 0 unless n == 1. */
static void row_portable(const int8_t *a, uint32_t sa, const int8_t *b, uint32_t sb, int8_t *out, uint32_t n,
                         int is_max) {
    for (uint32_t i = 0; i < n; i++) out[i] = pick(a[i * sa], b[i * sb], is_max);
}

#if defined(MF_USE_MVE)

static void row(const int8_t *a, uint32_t sa, const int8_t *b, uint32_t sb, int8_t *out, uint32_t n, int is_max) {
    if (sa == 0 && sb == 0) { /* one value each (n == 1) */
        row_portable(a, 0, b, 0, out, n, is_max);
        return;
    }
    if (sb == 0) { /* the repeated value second: max and min commute */
        const int8_t *t = a;
        a = b;
        b = t;
        sb = 1;
        sa = 0;
    }
    const int8x16_t one = vdupq_n_s8(*a);
    for (int32_t left = (int32_t)n; left > 0; left -= 16, b += 16, out += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)left);
        const int8x16_t va = sa ? vldrbq_z_s8(a, p) : one, vb = vldrbq_z_s8(b, p);
        vstrbq_p_s8(out, is_max ? vmaxq_s8(va, vb) : vminq_s8(va, vb), p);
        if (sa) a += 16;
    }
}

#elif defined(MF_USE_DSP)

/* Four byte lanes: SSUB8 sets lane k's GE flag where x_k - y_k >= 0; SEL then takes x_k there, else y_k.
 * One asm block, so nothing can touch the GE flags between the two. */
static inline int32_t max4(int32_t x, int32_t y) {
    int32_t r;
    __asm__("ssub8 %0, %1, %2\n\tsel %0, %1, %2" : "=&r"(r) : "r"(x), "r"(y) : "cc");
    return r;
}
static inline int32_t min4(int32_t x, int32_t y) {
    int32_t r;
    __asm__("ssub8 %0, %1, %2\n\tsel %0, %2, %1" : "=&r"(r) : "r"(x), "r"(y) : "cc");
    return r;
}

static void row(const int8_t *a, uint32_t sa, const int8_t *b, uint32_t sb, int8_t *out, uint32_t n, int is_max) {
    const int32_t a4 = (int32_t)((uint32_t)(uint8_t)*a * 0x01010101u), b4 = (int32_t)((uint32_t)(uint8_t)*b * 0x01010101u);
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const int32_t x = sa ? mf_ld32(a + i) : a4, y = sb ? mf_ld32(b + i) : b4;
        mf_st32(out + i, is_max ? max4(x, y) : min4(x, y));
    }
    row_portable(a + i * sa, sa, b + i * sb, sb, out + i, n - i, is_max);
}

#else

static void row(const int8_t *a, uint32_t sa, const int8_t *b, uint32_t sb, int8_t *out, uint32_t n, int is_max) {
    row_portable(a, sa, b, sb, out, n, is_max);
}

#endif

/* The last dim of t (1 for a scalar), and t without it (the rows' shape). */
static uint32_t split_rows(const mf_tensor *t, mf_tensor *rows) {
    *rows = *t;
    if (t->rank == 0) return 1;
    rows->rank = (uint8_t)(t->rank - 1);
    return t->shape[t->rank - 1];
}

static mf_status run_op(const mf_call *c, int is_max) {
    mf_tensor a, b, o, ar, br;
    mf_bcast it;
    mf_call_binary_s8(c, &a, &b, &o);
    const int8_t *ad = (const int8_t *)a.data, *bd = (const int8_t *)b.data;
    int8_t *out = (int8_t *)o.data;
    if (o.numel == 0) return MF_OK;
    if (a.numel == o.numel && b.numel == o.numel) {
        row(ad, 1, bd, 1, out, o.numel, is_max);
        return MF_OK;
    }
    if (a.numel == 1 || b.numel == 1) {
        row(ad, a.numel != 1, bd, b.numel != 1, out, o.numel, is_max);
        return MF_OK;
    }
    /* o.rank >= 1 here (a rank-0 output has one element, handled above) */
    const uint32_t la = split_rows(&a, &ar), lb = split_rows(&b, &br), n = o.shape[o.rank - 1];
    mf_bcast_init(&it, &ar, &br);
    for (uint32_t r = 0; r < it.numel; r++, mf_bcast_step(&it), out += n)
        row(ad + it.ia * la, la == n, bd + it.ib * lb, lb == n, out, n, is_max);
    return MF_OK;
}

static mf_status run_max(const mf_call *c) { return run_op(c, 1); }
static mf_status run_min(const mf_call *c) { return run_op(c, 0); }

const mf_kernel mf_kernel_maximum_s8 = {26, "maximum_s8", 2, 2, 0, "", check, run_max};
const mf_kernel mf_kernel_minimum_s8 = {27, "minimum_s8", 2, 2, 0, "", check, run_min};
