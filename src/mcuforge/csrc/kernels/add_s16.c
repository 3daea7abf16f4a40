/*
 * add_s16: int16 elementwise add, bit-exact with CMSIS-NN arm_elementwise_add_s16 (TFLite int16 ADD
 * parameters: left shift 15, per-input multipliers) and mcuforge.kernels.add_s16, with numpy
 * broadcasting of the two inputs (CMSIS takes equal shapes). No offsets: s16 zero points are 0.
 * Every intermediate value is int32, wrapping.
 */
#include "broadcast.h"
#include "mf_s16.h"
#include "mf_simd.h"

enum { A_A_MULT, A_A_SHIFT, A_B_MULT, A_B_SHIFT, A_LEFT_SHIFT, A_OUT_MULT, A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    int32_t lo, hi;
    if (!mf_call_binary_s16(c, &a, &b, &o)) return MF_ERR_SHAPE;
    if (!mf_bcast_init(&it, &a, &b) || it.numel != o.numel) return MF_ERR_SHAPE;
    if (!mf_attr_act_s16(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_LEFT_SHIFT), 0, 30)) return MF_ERR_SHAPE;
    const uint32_t shifts[3] = {A_A_SHIFT, A_B_SHIFT, A_OUT_SHIFT};
    for (uint32_t i = 0; i < 3; i++) {
        if (!mf_in_range(mf_attr_int(c, shifts[i]), -31, 30)) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

#if defined(MF_USE_MVE)
/* Inputs of the output's shape on MVE: four lanes at a time (VLDRH.S32 widens), each step as the loop
 * below (<< left wrapping, mf_requantize_x4_n: mf_requantize's bits when no multiplier is INT32_MIN, the
 * sum wrapping), clamp, VSTRH.32; tail-predicated. 0 when it does not apply. */
static int run_mve(const mf_call *c, const mf_tensor *a, const mf_tensor *b, const mf_tensor *o) {
    const int32_t a_mult = mf_attr_int(c, A_A_MULT), a_shift = mf_attr_int(c, A_A_SHIFT);
    const int32_t b_mult = mf_attr_int(c, A_B_MULT), b_shift = mf_attr_int(c, A_B_SHIFT);
    const int32_t left = mf_attr_int(c, A_LEFT_SHIFT);
    const int32_t out_mult = mf_attr_int(c, A_OUT_MULT), out_shift = mf_attr_int(c, A_OUT_SHIFT);
    if (a->numel != o->numel || b->numel != o->numel) return 0;
    if (a_mult == INT32_MIN || b_mult == INT32_MIN || out_mult == INT32_MIN) return 0;
    const int32x4_t lo = vdupq_n_s32(mf_attr_int(c, A_ACT_MIN)), hi = vdupq_n_s32(mf_attr_int(c, A_ACT_MAX));
    const int16_t *ad = (const int16_t *)a->data, *bd = (const int16_t *)b->data;
    int16_t *out = (int16_t *)o->data;
    for (int32_t n = (int32_t)o->numel; n > 0; n -= 4, ad += 4, bd += 4, out += 4) {
        const mve_pred16_t p = vctp32q((uint32_t)n);
        const int32x4_t sa = mf_requantize_x4_n(vshlq_r_s32(vldrhq_z_s32(ad, p), left), a_mult, a_shift);
        const int32x4_t sb = mf_requantize_x4_n(vshlq_r_s32(vldrhq_z_s32(bd, p), left), b_mult, b_shift);
        const int32x4_t v = mf_requantize_x4_n(vaddq_s32(sa, sb), out_mult, out_shift);
        vstrhq_p_s32(out, vminq_s32(vmaxq_s32(v, lo), hi), p);
    }
    return 1;
}
#endif

static mf_status run(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    mf_call_binary_s16(c, &a, &b, &o);
#if defined(MF_USE_MVE)
    if (run_mve(c, &a, &b, &o)) return MF_OK;
#endif
    mf_bcast_init(&it, &a, &b);
    const int32_t a_mult = mf_attr_int(c, A_A_MULT), a_shift = mf_attr_int(c, A_A_SHIFT);
    const int32_t b_mult = mf_attr_int(c, A_B_MULT), b_shift = mf_attr_int(c, A_B_SHIFT);
    const int32_t left = mf_attr_int(c, A_LEFT_SHIFT);
    const int32_t out_mult = mf_attr_int(c, A_OUT_MULT), out_shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    const int16_t *ad = (const int16_t *)a.data, *bd = (const int16_t *)b.data;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t i = 0; i < it.numel; i++, mf_bcast_step(&it)) {
        const int32_t a1 = mf_requantize(mf_s16_wrap32((uint32_t)(int32_t)ad[it.ia] << left), a_mult, a_shift);
        const int32_t b1 = mf_requantize(mf_s16_wrap32((uint32_t)(int32_t)bd[it.ib] << left), b_mult, b_shift);
        out[i] = mf_clamp_s16(mf_requantize(mf_add_wrap(a1, b1), out_mult, out_shift), lo, hi);
    }
    return MF_OK;
}

const mf_kernel mf_kernel_add_s16 = {MF_KIND_HEAD_add_s16, check, run};
