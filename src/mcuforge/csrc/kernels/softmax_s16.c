/*
 * softmax_s16: int16 softmax over the last axis, bit-exact with CMSIS-NN arm_softmax_s16 and
 * mcuforge.kernels.softmax_s16 (output scale 1/32768, zero point 0). Inputs 1 and 2 are the int16[513]
 * exp and 1/(1+x) tables (TFLite's gen_lut, stored by the compiler). The load-time check keeps every
 * row's exp sum in [2, 2^31) (exp entries >= 0, the zero-difference entries >= 2, rows of at most 65536),
 * so CLZ and the final shift are always defined. Where CMSIS's int32 and int16 locals wrap, this code
 * wraps the same way without undefined behaviour (64-bit intermediates, mf_wrap16).
 */
#include "mf_s16.h"

enum { A_MULT, A_SHIFT };

#define MF_SOFTMAX_S16_MAX_ROW 65536u

static int table_ok(const mf_tensor *t) {
    return mf_is(t, MF_INT16, 1) && t->shape[0] == MF_LUT_S16_ENTRIES && (t->flags & MF_TENSOR_FLAG_CONSTANT);
}

static mf_status check(const mf_call *c) {
    mf_tensor x, e, r, o;
    if (c->n_in != 3 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &e);
    mf_call_input(c, 2, &r);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT16, -1) || !mf_is(&o, MF_INT16, -1) || x.numel != o.numel || x.rank == 0) return MF_ERR_SHAPE;
    const uint32_t row = x.shape[x.rank - 1];
    if (row == 0 || row > MF_SOFTMAX_S16_MAX_ROW) return MF_ERR_SHAPE;
    if (!table_ok(&e) || !table_ok(&r)) return MF_ERR_SHAPE;
    const int16_t *exp_lut = (const int16_t *)e.data;
    for (uint32_t i = 0; i < MF_LUT_S16_ENTRIES; i++) {
        if (exp_lut[i] < 0) return MF_ERR_SHAPE;
    }
    if (exp_lut[511] < 2 || exp_lut[512] < 2) return MF_ERR_SHAPE;
    return mf_in_range(mf_attr_int(c, A_SHIFT), -31, 30) ? MF_OK : MF_ERR_SHAPE;
}

static uint32_t clz32(uint32_t v) {
    uint32_t n = 0;
    while (n < 32u && !(v & (0x80000000u >> n))) n++;
    return n;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, e, r, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &e);
    mf_call_input(c, 2, &r);
    mf_call_output(c, 0, &o);
    const int32_t mult = mf_attr_int(c, A_MULT), shift = mf_attr_int(c, A_SHIFT);
    const int16_t *exp_lut = (const int16_t *)e.data, *one_by_one = (const int16_t *)r.data;
    const uint32_t row = x.shape[x.rank - 1], rows = x.numel / row;
    const int16_t *in = (const int16_t *)x.data;
    int16_t *out = (int16_t *)o.data;
    for (uint32_t k = 0; k < rows; k++, in += row, out += row) {
        int16_t max = in[0];
        for (uint32_t i = 1; i < row; i++) max = in[i] > max ? in[i] : max;
        uint32_t sum = 0; /* in [2, 2^31): see check */
        for (uint32_t i = 0; i < row; i++) {
            const int32_t scaled = mf_add_wrap(mf_requantize((int32_t)in[i] - max, mult, shift), 32767); /* int32, as CMSIS */
            const int16_t sym = mf_clamp_s16(scaled, -32768, 32767);
            out[i] = mf_table_lookup_s16(sym, exp_lut); /* cached in the output, as CMSIS-NN does */
            sum += (uint32_t)out[i];
        }
        const uint32_t headroom = clz32(sum);
        /* ((sum << (headroom - 1)) + 2^13) >> 14 in int32 may pass INT32_MAX (CMSIS wraps there); in 64 bits
         * the value differs by a multiple of 2^18, which the int16 cast below discards */
        const int64_t shifted = ((int64_t)sum << (headroom - 1u)) + (1 << 13);
        const int16_t sym_sum = mf_wrap16((int32_t)((shifted >> 14) - 98304));
        const int32_t recip = mf_table_lookup_s16(sym_sum, one_by_one);
        const uint32_t right = 30u - headroom;
        for (uint32_t i = 0; i < row; i++) {
            const int32_t prod = (int32_t)out[i] * recip; /* int16 x int16 */
            out[i] = mf_wrap16(((prod >> right) + 1) >> 1);
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_softmax_s16 = {MF_KIND_HEAD_softmax_s16, check, run};
