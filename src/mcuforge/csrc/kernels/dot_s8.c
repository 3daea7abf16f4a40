/*
 * The int8 dot product with an input offset, shared by conv2d_s8 and fully_connected_s8; the
 * requant parameter check shared by the kernels with per-channel requantization, and the
 * parameter checks of the weighted ops (mf_check_weighted_params).
 * Portable C, and a DSP path (SMLAD on two 16-bit lanes, CMSIS-NN's approach) when the
 * compiler targets a core with the DSP extension. Both give the same int32 (no overflow is
 * possible within MF_MAX_DOT_DEPTH, so the order of the additions does not matter).
 */
#include "mf_kernel_util.h"

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
/* GCC 12's arm_acle.h has no __ror; this idiom compiles to one ROR. */
#define MF_ROR8(v) (((uint32_t)(v) >> 8) | ((uint32_t)(v) << 24))

int32_t mf_dot_s8(const int8_t *x, const int8_t *w, uint32_t n, int32_t x_offset) {
    /* x_offset in [-127, 128]: (x + offset) fits an int16 lane */
    const uint32_t off16 = ((uint32_t)x_offset & 0xFFFFu) | ((uint32_t)x_offset << 16);
    int32_t acc = 0;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        int32_t xw, ww;
        memcpy(&xw, x + i, 4); /* unaligned-safe; one LDR on cores that allow it */
        memcpy(&ww, w + i, 4);
        int32_t x02 = __sadd16(__sxtb16(xw), (int32_t)off16);       /* bytes 0 and 2 */
        int32_t x13 = __sadd16(__sxtb16(MF_ROR8(xw)), (int32_t)off16); /* bytes 1, 3 */
        int32_t w02 = __sxtb16(ww);
        int32_t w13 = __sxtb16(MF_ROR8(ww));
        acc = __smlad(x02, w02, acc);
        acc = __smlad(x13, w13, acc);
    }
    for (; i < n; i++) acc += ((int32_t)x[i] + x_offset) * w[i];
    return acc;
}

#else

int32_t mf_dot_s8(const int8_t *x, const int8_t *w, uint32_t n, int32_t x_offset) {
    int32_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += ((int32_t)x[i] + x_offset) * w[i];
    return acc;
}

#endif

mf_status mf_check_requant(const mf_tensor *mult, const mf_tensor *shift, uint32_t channels) {
    if (!mf_is(mult, MF_INT32, 1) || !mf_is(shift, MF_INT32, 1)) return MF_ERR_SHAPE;
    if (mult->shape[0] != shift->shape[0]) return MF_ERR_SHAPE;
    if (mult->shape[0] != 1 && mult->shape[0] != channels) return MF_ERR_SHAPE;
    if (!(shift->flags & MF_TENSOR_FLAG_CONSTANT)) return MF_ERR_SHAPE; /* checked here, not per run */
    const int32_t *s = (const int32_t *)shift->data;
    for (uint32_t i = 0; i < shift->shape[0]; i++) {
        if (s[i] < -31 || s[i] > 30) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

mf_status mf_check_weighted_params(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                   const mf_tensor *shift, uint32_t channels, uint32_t a_act_min) {
    int32_t lo, hi;
    if (bias && (!mf_is(bias, MF_INT32, 1) || bias->shape[0] != channels)) return MF_ERR_SHAPE;
    if (!mf_attr_act(c, a_act_min, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, MF_WEIGHTED_IN_OFF), -127, 128)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, MF_WEIGHTED_OUT_OFF), -128, 127)) return MF_ERR_SHAPE;
    return mf_check_requant(mult, shift, channels);
}
