/* reshape and transpose: data movement for any element type (bytes are copied, not converted). */
#include "mf_kernel_util.h"

static mf_status check_reshape(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    return x.dtype == o.dtype && x.numel == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run_reshape(const mf_call *c) {
    mf_tensor x, o;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (x.nbytes && x.data != o.data) memmove(o.data, x.data, x.nbytes);
    return MF_OK;
}

static mf_status check_transpose(const mf_call *c) {
    mf_tensor x, o;
    if (c->n_in != 1 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    if (x.dtype != o.dtype || x.numel != o.numel) return MF_ERR_SHAPE;
    mf_value perm = mf_attr(c, 0);
    if (mf_value_count(perm) != x.rank) return MF_ERR_SHAPE;
    uint32_t seen = 0;
    for (uint32_t k = 0; k < x.rank; k++) {
        int32_t d = mf_value_ints_at(perm, k);
        if (d < 0 || d >= x.rank || (seen >> d) & 1u) return MF_ERR_SHAPE;
        seen |= 1u << d;
    }
    return MF_OK;
}

/* Walks the output in order, stepping the source index with the permuted strides of x. */
void mf_permute_copy(const mf_tensor *x, const uint32_t perm[MF_MAX_RANK], void *out) {
    const uint32_t rank = x->rank, item = mf_dtype_size(x->dtype);
    uint32_t x_stride[MF_MAX_RANK], shape[MF_MAX_RANK], stride[MF_MAX_RANK], idx[MF_MAX_RANK] = {0};
    uint32_t s = 1;
    for (int k = (int)rank - 1; k >= 0; k--) {
        x_stride[k] = s;
        s *= x->shape[k];
    }
    for (uint32_t k = 0; k < rank; k++) {
        shape[k] = x->shape[perm[k]];
        stride[k] = x_stride[perm[k]];
    }
    const uint8_t *xd = (const uint8_t *)x->data;
    uint8_t *dst = (uint8_t *)out;
    uint32_t src = 0;
    for (uint32_t i = 0; i < x->numel; i++) {
        memcpy(dst + (size_t)i * item, xd + (size_t)src * item, item);
        for (int k = (int)rank - 1; k >= 0; k--) {
            idx[k]++;
            src += stride[k];
            if (idx[k] < shape[k]) break;
            src -= stride[k] * idx[k];
            idx[k] = 0;
        }
    }
}

/* out dim k = x dim perm[k] (perm checked at load time). */
static mf_status run_transpose(const mf_call *c) {
    mf_tensor x, o;
    uint32_t perm[MF_MAX_RANK];
    mf_call_input(c, 0, &x);
    mf_call_output(c, 0, &o);
    mf_value perm_attr = mf_attr(c, 0);
    for (uint32_t k = 0; k < x.rank; k++) perm[k] = (uint32_t)mf_value_ints_at(perm_attr, k);
    mf_permute_copy(&x, perm, o.data);
    return MF_OK;
}

const mf_kernel mf_kernel_reshape = {MF_KIND_HEAD_reshape, check_reshape, run_reshape};
const mf_kernel mf_kernel_transpose = {MF_KIND_HEAD_transpose, check_transpose, run_transpose};
