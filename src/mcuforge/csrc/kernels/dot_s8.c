/*
 * The int8 dot product with an input offset, shared by conv2d_s8 and fully_connected_s8; the
 * requant parameter check shared by the kernels with per-channel requantization, and the
 * parameter checks of the weighted ops (mf_check_weighted_params).
 * Portable C; a DSP path (SMLAD on two 16-bit lanes, CMSIS-NN's approach) when the compiler
 * targets a core with the DSP extension; an MVE path (VMLADAVA over 16 int8 lanes, tail-predicated,
 * the offset entering as offset * sum(w) by VADDVA) on Helium cores. All give the same int32 (no
 * overflow is possible within MF_MAX_DOT_DEPTH, so the order of the additions does not matter).
 */
#include "mf_simd.h"

#if defined(MF_USE_MVE)

int32_t mf_dot_s8(const int8_t *x, const int8_t *w, uint32_t n, int32_t x_offset) {
    int32_t acc = 0, wsum = 0;
    for (int32_t left = (int32_t)n; left > 0; left -= 16) {
        const mve_pred16_t p = vctp8q((uint32_t)left);
        const int8x16_t wv = vldrbq_z_s8(w, p);
        acc = vmladavaq_s8(acc, vldrbq_z_s8(x, p), wv);
        wsum = vaddvaq_s8(wsum, wv);
        x += 16;
        w += 16;
    }
    return mf_add_wrap(acc, wsum * x_offset); /* |wsum| <= 2^23, |x_offset| <= 128 */
}

#elif defined(MF_USE_DSP)

int32_t mf_dot_s8(const int8_t *x, const int8_t *w, uint32_t n, int32_t x_offset) {
    /* x_offset in [-127, 128]: (x + offset) fits an int16 lane */
    const int32_t off16 = mf_pack_off16(x_offset);
    int32_t acc = 0;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const int32_t xw = mf_ld32(x + i), ww = mf_ld32(w + i); /* one LDR each, any alignment */
        acc = mf_smlad(mf_sxtab16(off16, xw), mf_sxtb16(ww), acc);           /* bytes 0 and 2 */
        acc = mf_smlad(mf_sxtab16_ror8(off16, xw), mf_sxtb16_ror8(ww), acc); /* bytes 1 and 3 */
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
    if (!mf_is(mult, MF_INT32, 1) || !mf_is(shift, MF_INT8, 1)) return MF_ERR_SHAPE;
    if (mult->shape[0] != shift->shape[0]) return MF_ERR_SHAPE;
    if (mult->shape[0] != 1 && mult->shape[0] != channels) return MF_ERR_SHAPE;
    if (!(shift->flags & MF_TENSOR_FLAG_CONSTANT)) return MF_ERR_SHAPE; /* checked here, not per run */
    const mf_shift *s = (const mf_shift *)shift->data;
    for (uint32_t i = 0; i < shift->shape[0]; i++) {
        if (s[i] < -31 || s[i] > 30) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

mf_status mf_check_weighted_params_ex(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                      const mf_tensor *shift, uint32_t channels, uint32_t a_act_min,
                                      int any_out_off) {
    int32_t lo, hi;
    if (bias && (!mf_is(bias, MF_INT32, 1) || bias->shape[0] != channels)) return MF_ERR_SHAPE;
    if (!mf_attr_act(c, a_act_min, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, MF_WEIGHTED_IN_OFF), -127, 128)) return MF_ERR_SHAPE;
    if (!any_out_off && !mf_in_range(mf_attr_int(c, MF_WEIGHTED_OUT_OFF), -128, 127)) return MF_ERR_SHAPE;
    return mf_check_requant(mult, shift, channels);
}

mf_status mf_check_weighted_params(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                   const mf_tensor *shift, uint32_t channels, uint32_t a_act_min) {
    return mf_check_weighted_params_ex(c, bias, mult, shift, channels, a_act_min, 0);
}
