/* flip_s8: an int8 tensor reversed along the stored dims `dims` (torch.flip), out[.., i, ..] = x[.., n-1-i, ..]
 * (mcuforge.kernels.flip). A byte copy: the output shares the input's quantization. The output is walked row by
 * row (the last dim): each row is the source row of the mirrored outer index, copied whole or reversed. */
#include "mf_kernel_util.h"

/* Bit d set when stored dim d is flipped; 0 with *ok = 0 when `dims` are not distinct dims of a rank-`rank` tensor. */
static uint32_t flipped_mask(const mf_call *c, uint32_t rank, int *ok) {
    mf_value dims = mf_attr(c, 0);
    uint32_t mask = 0;
    *ok = mf_value_count(dims) <= rank;
    for (uint32_t k = 0; *ok && k < mf_value_count(dims); k++) {
        int32_t d = mf_value_ints_at(dims, k);
        if (d < 0 || (uint32_t)d >= rank || (mask >> d) & 1u) *ok = 0;
        else mask |= 1u << d;
    }
    return mask;
}

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    int ok;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (x.dtype != MF_INT8 || o.dtype != MF_INT8 || x.rank != o.rank) return MF_ERR_SHAPE;
    for (uint32_t k = 0; k < x.rank; k++) {
        if (x.shape[k] != o.shape[k]) return MF_ERR_SHAPE;
    }
    (void)flipped_mask(c, x.rank, &ok);
    return ok ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, o;
    int ok;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (x.numel == 0u) return MF_OK;
    if (x.rank == 0u) {
        memcpy(o.data, x.data, 1);
        return MF_OK;
    }
    const uint32_t mask = flipped_mask(c, x.rank, &ok), last = x.rank - 1u, row = x.shape[last];
    const int reverse_rows = (int)((mask >> last) & 1u);
    uint32_t stride[MF_MAX_RANK], idx[MF_MAX_RANK] = {0};
    uint32_t s = 1;
    for (int k = (int)last; k >= 0; k--) {
        stride[k] = s;
        s *= x.shape[k];
    }
    const int8_t *src = (const int8_t *)x.data;
    int8_t *dst = (int8_t *)o.data;
    for (uint32_t r = 0; r < x.numel / row; r++, dst += row) {
        size_t from = 0; /* the source row: the outer index with each flipped dim mirrored */
        for (uint32_t k = 0; k < last; k++) {
            from += (size_t)((mask >> k) & 1u ? x.shape[k] - 1u - idx[k] : idx[k]) * stride[k];
        }
        if (reverse_rows) {
            for (uint32_t i = 0; i < row; i++) dst[i] = src[from + row - 1u - i];
        } else {
            memcpy(dst, src + from, row);
        }
        for (int k = (int)last - 1; k >= 0; k--) { /* next outer index, last dim fastest */
            if (++idx[k] < x.shape[k]) break;
            idx[k] = 0;
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_flip_s8 = {MF_KIND_HEAD_flip_s8, check, run};
