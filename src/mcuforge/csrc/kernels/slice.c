/*
 * slice: x[begin:end:step] per stored dim of x, with Python's slice semantics (negative and
 * out-of-range bounds, negative steps), for any element type; the output may drop size-1 dims
 * (same elements, same order). Data movement: bytes are copied, not converted. outside (optional, 0):
 * 1 when the planner put the output over bytes of x outside the box (the loader checks it misses the box);
 * the kernel reads only the box's elements either way.
 */
#include "mf_kernel_util.h"

enum { A_BEGIN, A_END, A_STEP, A_OUTSIDE };

/* PySlice_AdjustIndices for a dim of n elements (step != 0): first index and element count. */
static void slice_dim(int64_t n, int64_t begin, int64_t end, int64_t step, int64_t *start, uint32_t *count) {
    if (begin < 0) {
        begin += n;
        if (begin < 0) begin = step < 0 ? -1 : 0;
    } else if (begin >= n) {
        begin = step < 0 ? n - 1 : n;
    }
    if (end < 0) {
        end += n;
        if (end < 0) end = step < 0 ? -1 : 0;
    } else if (end >= n) {
        end = step < 0 ? n - 1 : n;
    }
    int64_t len = 0;
    if (step > 0 && begin < end) len = (end - begin - 1) / step + 1;
    if (step < 0 && end < begin) len = (begin - end - 1) / (-step) + 1;
    *start = begin;
    *count = (uint32_t)len; /* <= n < 2^32 */
}

static mf_status check(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (x.dtype != o.dtype) return MF_ERR_SHAPE;
    const int32_t outside = mf_attr_int_or(c, A_OUTSIDE, 0);
    if (outside != 0 && outside != 1) return MF_ERR_SHAPE;
    mf_value b = mf_attr(c, A_BEGIN), e = mf_attr(c, A_END), s = mf_attr(c, A_STEP);
    if (mf_value_count(b) != x.rank || mf_value_count(e) != x.rank || mf_value_count(s) != x.rank) {
        return MF_ERR_SHAPE;
    }
    uint64_t numel = 1;
    for (uint32_t k = 0; k < x.rank; k++) {
        const int32_t step = mf_value_ints_at(s, k);
        if (step == 0) return MF_ERR_SHAPE;
        int64_t start;
        uint32_t count;
        slice_dim(x.shape[k], mf_value_ints_at(b, k), mf_value_ints_at(e, k), step, &start, &count);
        numel *= count; /* count <= x.shape[k]: at most x's numel (with zeros as 1s) < 2^32 */
    }
    return numel == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_value b = mf_attr(c, A_BEGIN), e = mf_attr(c, A_END), s = mf_attr(c, A_STEP);
    const uint32_t rank = x.rank, item = mf_dtype_size(x.dtype);
    if (o.numel == 0) return MF_OK;
    /* Element offsets (in items) relative to the current position: step[k] moves one output index
     * along dim k; count[k] is the output extent of dim k. */
    int64_t step[MF_MAX_RANK], src = 0;
    uint32_t count[MF_MAX_RANK], idx[MF_MAX_RANK] = {0};
    int64_t stride = 1;
    for (int k = (int)rank - 1; k >= 0; k--) {
        int64_t start;
        const int32_t st = mf_value_ints_at(s, (uint32_t)k);
        slice_dim(x.shape[k], mf_value_ints_at(b, (uint32_t)k), mf_value_ints_at(e, (uint32_t)k), st, &start,
                  &count[k]);
        src += start * stride;
        step[k] = (int64_t)st * stride;
        stride *= x.shape[k];
    }
    const uint8_t *xd = (const uint8_t *)x.data;
    uint8_t *out = (uint8_t *)o.data;
    /* innermost dim: one block copy when it is contiguous */
    const uint32_t inner = rank ? count[rank - 1] : 1u;
    const int contiguous = rank == 0 || step[rank - 1] == 1;
    const uint32_t outer = o.numel / inner;
    for (uint32_t r = 0; r < outer; r++) {
        if (contiguous) {
            memcpy(out, xd + (size_t)src * item, (size_t)inner * item);
            out += (size_t)inner * item;
        } else {
            int64_t p = src;
            for (uint32_t i = 0; i < inner; i++, p += step[rank - 1]) {
                memcpy(out, xd + (size_t)p * item, item);
                out += item;
            }
        }
        for (int k = (int)rank - 2; k >= 0; k--) {
            idx[k]++;
            src += step[k];
            if (idx[k] < count[k]) break;
            src -= step[k] * idx[k];
            idx[k] = 0;
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_slice = {MF_KIND_HEAD_slice, check, run};
