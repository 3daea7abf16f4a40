/*
 * pad_s8: int8 constant padding (CMSIS-NN arm_pad_s8, any rank; mcuforge.kernels.pad_s8).
 * pads = (before, after) per stored dim of x, flattened; every byte outside the copied input is pad_value.
 */
#include "mf_kernel_util.h"

enum { A_PADS, A_PAD_VALUE };

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (!mf_is(&x, MF_INT8, -1) || !mf_is(&o, MF_INT8, -1)) return MF_ERR_SHAPE;
    mf_value pads = mf_attr(c, A_PADS);
    if (mf_value_count(pads) != 2u * x.rank) return MF_ERR_SHAPE;
    uint64_t numel = 1; /* padded element count, saturated at 2^32 (o.numel is below) */
    int empty = 0;
    for (uint32_t k = 0; k < x.rank; k++) {
        const int32_t before = mf_value_ints_at(pads, 2 * k), after = mf_value_ints_at(pads, 2 * k + 1);
        if (before < 0 || after < 0) return MF_ERR_SHAPE;
        const uint64_t dim = (uint64_t)x.shape[k] + (uint64_t)before + (uint64_t)after;
        if (dim > 0xFFFFFFFFull) return MF_ERR_SHAPE;
        empty |= dim == 0;
        numel *= dim ? dim : 1u;
        if (numel > 0xFFFFFFFFull) numel = 0x100000000ull;
    }
    if ((empty ? 0u : numel) != o.numel) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_value_int(mf_attr(c, A_PAD_VALUE)), -128, 127)) return MF_ERR_SHAPE;
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_value pads = mf_attr(c, A_PADS);
    const int32_t pad_value = mf_value_int(mf_attr(c, A_PAD_VALUE));
    const int8_t *xd = (const int8_t *)x.data;
    int8_t *out = (int8_t *)o.data;
    const int8_t fill = (int8_t)pad_value;
    uint32_t fill_byte;
    memcpy(&fill_byte, &fill, 1); /* low byte of fill_byte: the two's complement of pad_value */
    if (o.numel) memset(out, (int)(fill_byte & 0xFFu), o.numel);
    if (x.numel == 0) return MF_OK;
    if (x.rank == 0) {
        out[0] = xd[0];
        return MF_OK;
    }
    /* Copy the input row by row (rows along the last dim) to its place in the output. */
    const uint32_t rank = x.rank, last = x.shape[rank - 1];
    uint32_t ostride[MF_MAX_RANK], idx[MF_MAX_RANK] = {0};
    uint32_t s = 1;
    size_t dst = 0;
    for (int k = (int)rank - 1; k >= 0; k--) {
        const uint32_t before = (uint32_t)mf_value_ints_at(pads, 2u * (uint32_t)k);
        const uint32_t after = (uint32_t)mf_value_ints_at(pads, 2u * (uint32_t)k + 1u);
        ostride[k] = s;
        dst += (size_t)before * s;
        s *= x.shape[k] + before + after;
    }
    const uint32_t rows = x.numel / last;
    for (uint32_t r = 0; r < rows; r++) {
        memcpy(out + dst, xd + (size_t)r * last, last);
        for (int k = (int)rank - 2; k >= 0; k--) {
            idx[k]++;
            dst += ostride[k];
            if (idx[k] < x.shape[k]) break;
            dst -= (size_t)ostride[k] * idx[k];
            idx[k] = 0;
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_pad_s8 = {MF_KIND_HEAD_pad_s8, check, run};
