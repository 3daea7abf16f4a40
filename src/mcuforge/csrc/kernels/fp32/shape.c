/*
 * fp32-fallback data movement, any dtype, bit-exact: view / reshape / _unsafe_view / clone /
 * contiguous / alias / flatten / squeeze / unsqueeze (a byte copy: the output's shape is already
 * in the program), permute, cat.
 */
#include "fp32_util.h"

static mf_status copy_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value v;
    mf_tensor x, o;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, &x) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    return x.dtype == o.dtype && x.numel == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status copy_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value v;
    mf_tensor x, o;
    mf_fp32_arg(args, kwargs, 0, "self", &v);
    mf_fp32_tensor(c, v, &x);
    mf_call_output(c, 0, &o);
    if (x.nbytes && x.data != o.data) memmove(o.data, x.data, x.nbytes);
    return MF_OK;
}

const mf_aten_op mf_aten_view = {"aten.view.default", copy_check, copy_run};
const mf_aten_op mf_aten_reshape = {"aten.reshape.default", copy_check, copy_run};
const mf_aten_op mf_aten__unsafe_view = {"aten._unsafe_view.default", copy_check, copy_run};
const mf_aten_op mf_aten_clone = {"aten.clone.default", copy_check, copy_run};
const mf_aten_op mf_aten_contiguous = {"aten.contiguous.default", copy_check, copy_run};
const mf_aten_op mf_aten_alias = {"aten.alias.default", copy_check, copy_run};
const mf_aten_op mf_aten_flatten = {"aten.flatten.using_ints", copy_check, copy_run};
const mf_aten_op mf_aten_squeeze_dim = {"aten.squeeze.dim", copy_check, copy_run};
const mf_aten_op mf_aten_squeeze_dims = {"aten.squeeze.dims", copy_check, copy_run};
const mf_aten_op mf_aten_unsqueeze = {"aten.unsqueeze.default", copy_check, copy_run};

/* ---- permute(self, dims) ---- */
static int permute_args(const mf_call *c, mf_value args, mf_value kwargs, mf_tensor *x, uint32_t perm[MF_MAX_RANK]) {
    mf_value v;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, x)) return 0;
    if (!mf_fp32_arg(args, kwargs, 1, "dims", &v) || mf_seq_len(v) != x->rank) return 0;
    uint32_t seen = 0;
    for (uint32_t k = 0; k < x->rank; k++) {
        int64_t d;
        if (!mf_seq_int(v, k, &d) || !mf_fp32_dim(d, x->rank, &perm[k]) || (seen >> perm[k]) & 1u) return 0;
        seen |= 1u << perm[k];
    }
    return 1;
}

static mf_status permute_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor x, o;
    uint32_t perm[MF_MAX_RANK];
    if (!permute_args(c, args, kwargs, &x, perm) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    return x.dtype == o.dtype && x.numel == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status permute_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor x, o;
    uint32_t perm[MF_MAX_RANK];
    permute_args(c, args, kwargs, &x, perm);
    mf_call_output(c, 0, &o);
    mf_permute_copy(&x, perm, o.data);
    return MF_OK;
}

const mf_aten_op mf_aten_permute = {"aten.permute.default", permute_check, permute_run};

/* ---- cat(tensors, dim=0) ---- */
static int cat_args(mf_value args, mf_value kwargs, mf_value *list, int64_t *dim) {
    mf_value v;
    if (!mf_fp32_arg(args, kwargs, 0, "tensors", list) || mf_value_tag(*list) != MF_TAG_LIST) return 0;
    *dim = 0;
    if (mf_fp32_arg(args, kwargs, 1, "dim", &v)) {
        if (mf_value_tag(v) != MF_TAG_INT && mf_value_tag(v) != MF_TAG_INT64) return 0;
        *dim = mf_value_int64(v);
    }
    return mf_value_count(*list) > 0;
}

static mf_status cat_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value list, item;
    mf_tensor first, t, o;
    int64_t d;
    uint32_t dim;
    if (!cat_args(args, kwargs, &list, &d) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    uint64_t total = 0;
    for (uint32_t i = 0; i < mf_value_count(list); i++) {
        if (!mf_list_item(list, i, &item) || !mf_fp32_tensor(c, item, &t)) return MF_ERR_SHAPE;
        if (i == 0) {
            first = t;
            if (t.rank == 0 || !mf_fp32_dim(d, t.rank, &dim)) return MF_ERR_SHAPE;
        }
        if (t.dtype != first.dtype || t.rank != first.rank) return MF_ERR_SHAPE;
        for (uint32_t k = 0; k < t.rank; k++) {
            if (k != dim && t.shape[k] != first.shape[k]) return MF_ERR_SHAPE;
        }
        total += t.numel;
    }
    return o.dtype == first.dtype && total == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status cat_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value list, item;
    mf_tensor t, o;
    int64_t d;
    uint32_t dim;
    cat_args(args, kwargs, &list, &d);
    mf_call_output(c, 0, &o);
    mf_list_item(list, 0, &item);
    mf_fp32_tensor(c, item, &t);
    mf_fp32_dim(d, t.rank, &dim);
    uint32_t outer = 1;
    for (uint32_t k = 0; k < dim; k++) outer *= t.shape[k];
    const uint32_t n = mf_value_count(list);
    uint8_t *out = (uint8_t *)o.data;
    for (uint32_t a = 0; a < outer; a++) {
        for (uint32_t i = 0; i < n; i++) {
            mf_list_item(list, i, &item);
            mf_fp32_tensor(c, item, &t);
            const size_t chunk = outer ? t.nbytes / outer : 0;
            memcpy(out, (const uint8_t *)t.data + (size_t)a * chunk, chunk);
            out += chunk;
        }
    }
    return MF_OK;
}

const mf_aten_op mf_aten_cat = {"aten.cat.default", cat_check, cat_run};
