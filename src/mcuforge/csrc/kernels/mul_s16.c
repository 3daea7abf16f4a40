/*
 * mul_s16: int16 elementwise multiply, bit-exact with CMSIS-NN arm_elementwise_mul_s16 and
 * mcuforge.kernels.mul_s16: requantize(a * b), clamp (|a * b| <= 2^30: no overflow), with numpy
 * broadcasting of the two inputs. No offsets: s16 zero points are 0.
 */
#include "broadcast.h"
#include "mf_s16.h"

enum { A_OUT_MULT, A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX };

static mf_status check(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    int32_t lo, hi;
    if (!mf_call_binary_s16(c, &a, &b, &o)) return MF_ERR_SHAPE;
    if (!mf_bcast_init(&it, &a, &b) || it.numel != o.numel) return MF_ERR_SHAPE;
    if (!mf_attr_act_s16(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    return mf_in_range(mf_attr_int(c, A_OUT_SHIFT), -31, 30) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    mf_call_binary_s16(c, &a, &b, &o);
    mf_bcast_init(&it, &a, &b);
    const int32_t mult = mf_attr_int(c, A_OUT_MULT), shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    const int16_t *ad = (const int16_t *)a.data, *bd = (const int16_t *)b.data;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t i = 0; i < it.numel; i++, mf_bcast_step(&it)) {
        out[i] = mf_clamp_s16(mf_requantize((int32_t)ad[it.ia] * bd[it.ib], mult, shift), lo, hi);
    }
    return MF_OK;
}

const mf_kernel mf_kernel_mul_s16 = {MF_KIND_HEAD_mul_s16, check, run};
