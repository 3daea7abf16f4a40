/*
 * maximum_s8 / minimum_s8: int8 elementwise maximum and minimum, bit-exact with CMSIS-NN arm_maximum_s8 /
 * arm_minimum_s8 and mcuforge.kernels.minmax. No requantization: a, b and the output share one
 * quantization, so out[i] = a[i] >= b[i] ? a[i] : b[i] (minimum: <=). a and b broadcast like numpy over
 * ranks <= 4 (CMSIS-NN's N, H, W, C dims, any of which may be 1 in either input).
 *
 * The output is walked in rows along its last dim (three plain loops over the others, as 4 dims): each
 * input either has that row (stride 1) or one value repeated along it (stride 0). Equal element counts are one row; an input of one element is one value
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

/* t's shape as 4 dims (leading 1s: numpy's alignment, CMSIS-NN's N, H, W, C) and the element stride of
 * each (0 along a dim of 1, which the output repeats). */
static void dims4(const mf_tensor *t, uint32_t dim[4], uint32_t stride[4]) {
    const uint32_t lead = 4u - t->rank; /* rank <= 4: checked at load */
    uint32_t step = 1;
    for (int k = 3; k >= 0; k--) {
        dim[k] = (uint32_t)k < lead ? 1u : t->shape[(uint32_t)k - lead];
        stride[k] = dim[k] == 1u ? 0u : step;
        step *= dim[k];
    }
}

static mf_status run_op(const mf_call *c, int is_max) {
    mf_tensor a, b, o;
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
    /* Rows along the last dim: three plain loops over the others (the shapes broadcast: checked at load). */
    uint32_t da[4], sa[4], db[4], sb[4], dout[4], so[4];
    dims4(&a, da, sa);
    dims4(&b, db, sb);
    dims4(&o, dout, so);
    const uint32_t n = dout[3], ra = da[3] == n, rb = db[3] == n;
    for (uint32_t i = 0; i < dout[0]; i++)
        for (uint32_t j = 0; j < dout[1]; j++)
            for (uint32_t k = 0; k < dout[2]; k++, out += n)
                row(ad + i * sa[0] + j * sa[1] + k * sa[2], ra, bd + i * sb[0] + j * sb[1] + k * sb[2], rb, out, n,
                    is_max);
    return MF_OK;
}

static mf_status run_max(const mf_call *c) { return run_op(c, 1); }
static mf_status run_min(const mf_call *c) { return run_op(c, 0); }

const mf_kernel mf_kernel_maximum_s8 = {MF_KIND_HEAD_maximum_s8, check, run_max};
const mf_kernel mf_kernel_minimum_s8 = {MF_KIND_HEAD_minimum_s8, check, run_min};
