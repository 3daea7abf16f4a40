/*
 * fp32-fallback selection and indexing, bit-exact with torch (comparisons, copies, lookups):
 * comparisons gt/ge/lt/le/eq/ne (.Tensor with broadcasting, .Scalar) -> bool,
 * where.self (3-way broadcasting, any dtype), expand (any dtype), embedding (int64 / int32
 * indices; an index out of range stops the run with MF_ERR_SHAPE naming the op, as torch raises).
 */
#include "fp32_util.h"

/* ---- broadcasting of up to 3 inputs onto a given output shape ---- */
typedef struct {
    uint32_t rank, n;
    uint32_t shape[MF_MAX_RANK], idx[MF_MAX_RANK];
    uint32_t stride[3][MF_MAX_RANK]; /* element strides, 0 along a stretched / missing dim */
    uint32_t off[3];
} nbcast;

/* 0 unless every input broadcasts to the output shape `o`. */
static int nbcast_init(nbcast *it, const mf_tensor *o, const mf_tensor *const *ins, uint32_t n) {
    memset(it, 0, sizeof *it);
    it->rank = o->rank;
    it->n = n;
    for (uint32_t k = 0; k < o->rank; k++) it->shape[k] = o->shape[k];
    for (uint32_t j = 0; j < n; j++) {
        const mf_tensor *t = ins[j];
        if (t->rank > o->rank) return 0;
        uint32_t s = 1;
        for (int k = (int)t->rank - 1; k >= 0; k--) {
            const uint32_t ok = (uint32_t)k + o->rank - t->rank;
            if (t->shape[k] != o->shape[ok] && t->shape[k] != 1) return 0;
            it->stride[j][ok] = t->shape[k] == 1 ? 0 : s;
            s *= t->shape[k];
        }
    }
    return 1;
}

static void nbcast_step(nbcast *it) {
    for (int k = (int)it->rank - 1; k >= 0; k--) {
        it->idx[k]++;
        for (uint32_t j = 0; j < it->n; j++) it->off[j] += it->stride[j][k];
        if (it->idx[k] < it->shape[k]) return;
        for (uint32_t j = 0; j < it->n; j++) it->off[j] -= it->stride[j][k] * it->idx[k];
        it->idx[k] = 0;
    }
}

/* The broadcast shape of the inputs equals the output's (not merely broadcastable to it). */
static int is_broadcast_shape(const mf_tensor *o, const mf_tensor *const *ins, uint32_t n) {
    uint32_t rank = 0;
    for (uint32_t j = 0; j < n; j++) rank = ins[j]->rank > rank ? ins[j]->rank : rank;
    if (rank != o->rank) return 0;
    for (uint32_t k = 0; k < rank; k++) {
        uint32_t d = 1;
        for (uint32_t j = 0; j < n; j++) {
            const int kk = (int)k - (int)(rank - ins[j]->rank);
            if (kk >= 0 && ins[j]->shape[kk] != 1) d = ins[j]->shape[kk];
        }
        if (d != o->shape[k]) return 0;
    }
    return 1;
}

/* ---- comparisons: self (float32) op other (float32 tensor or number) -> bool ---- */
typedef enum { CMP_GT, CMP_GE, CMP_LT, CMP_LE, CMP_EQ, CMP_NE } cmp_kind;

static int cmp_operands(const mf_call *c, mf_value args, mf_value kwargs, mf_tensor *a, mf_tensor *b, float *scalar) {
    mf_value v;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, a) || a->dtype != MF_FLOAT32) return 0;
    if (!mf_fp32_arg(args, kwargs, 1, "other", &v)) return 0;
    if (mf_fp32_tensor(c, v, b)) return b->dtype == MF_FLOAT32;
    if (!mf_fp32_number(v, scalar)) return 0;
    memset(b, 0, sizeof *b);
    b->dtype = MF_FLOAT32;
    b->numel = 1;
    b->data = scalar;
    return 1;
}

static mf_status cmp_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor a, b, o;
    float s;
    nbcast it;
    if (!cmp_operands(c, args, kwargs, &a, &b, &s) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    const mf_tensor *ins[2] = {&a, &b};
    if (o.dtype != MF_BOOL || !is_broadcast_shape(&o, ins, 2) || !nbcast_init(&it, &o, ins, 2)) return MF_ERR_SHAPE;
    return MF_OK;
}

static mf_status cmp_run(const mf_call *c, mf_value args, mf_value kwargs, cmp_kind kind) {
    mf_tensor a, b, o;
    float s;
    nbcast it;
    cmp_operands(c, args, kwargs, &a, &b, &s);
    mf_call_output(c, 0, &o);
    const mf_tensor *ins[2] = {&a, &b};
    nbcast_init(&it, &o, ins, 2);
    const float *ad = (const float *)a.data, *bd = (const float *)b.data;
    uint8_t *out = (uint8_t *)o.data;
    for (uint32_t i = 0; i < o.numel; i++, nbcast_step(&it)) {
        const float x = ad[it.off[0]], y = bd[it.off[1]];
        int r;
        switch (kind) {
        case CMP_GT: r = x > y; break;
        case CMP_GE: r = x >= y; break;
        case CMP_LT: r = x < y; break;
        case CMP_LE: r = x <= y; break;
        case CMP_EQ: r = x == y; break;
        default: r = x != y; break;
        }
        out[i] = (uint8_t)r;
    }
    return MF_OK;
}

/* The aten names are spelled out: mcuforge.cruntime.c_aten_ops() reads them from this source. */
#define COMPARE(op, kind, tensor_name, scalar_name)                                             \
    static mf_status run_##op(const mf_call *c, mf_value a, mf_value k) { return cmp_run(c, a, k, kind); } \
    const mf_aten_op mf_aten_##op##_Tensor = {tensor_name, cmp_check, run_##op};                \
    const mf_aten_op mf_aten_##op##_Scalar = {scalar_name, cmp_check, run_##op};

COMPARE(gt, CMP_GT, "aten.gt.Tensor", "aten.gt.Scalar")
COMPARE(ge, CMP_GE, "aten.ge.Tensor", "aten.ge.Scalar")
COMPARE(lt, CMP_LT, "aten.lt.Tensor", "aten.lt.Scalar")
COMPARE(le, CMP_LE, "aten.le.Tensor", "aten.le.Scalar")
COMPARE(eq, CMP_EQ, "aten.eq.Tensor", "aten.eq.Scalar")
COMPARE(ne, CMP_NE, "aten.ne.Tensor", "aten.ne.Scalar")

/* ---- where.self(condition, self, other) ---- */
static int where_args(const mf_call *c, mf_value args, mf_value kwargs, mf_tensor t[3]) {
    static const char *const names[3] = {"condition", "self", "other"};
    mf_value v;
    for (uint32_t j = 0; j < 3; j++) {
        if (!mf_fp32_arg(args, kwargs, j, names[j], &v) || !mf_fp32_tensor(c, v, &t[j])) return 0;
    }
    return 1;
}

static mf_status where_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor t[3], o;
    nbcast it;
    if (!where_args(c, args, kwargs, t) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    const mf_tensor *ins[3] = {&t[0], &t[1], &t[2]};
    if (t[0].dtype != MF_BOOL || t[1].dtype != o.dtype || t[2].dtype != o.dtype || mf_dtype_size(o.dtype) == 0) {
        return MF_ERR_SHAPE;
    }
    return is_broadcast_shape(&o, ins, 3) && nbcast_init(&it, &o, ins, 3) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status where_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor t[3], o;
    nbcast it;
    where_args(c, args, kwargs, t);
    mf_call_output(c, 0, &o);
    const mf_tensor *ins[3] = {&t[0], &t[1], &t[2]};
    nbcast_init(&it, &o, ins, 3);
    const uint32_t item = mf_dtype_size(o.dtype);
    const uint8_t *cond = (const uint8_t *)t[0].data;
    const uint8_t *x = (const uint8_t *)t[1].data, *y = (const uint8_t *)t[2].data;
    uint8_t *out = (uint8_t *)o.data;
    for (uint32_t i = 0; i < o.numel; i++, nbcast_step(&it)) {
        const uint8_t *src = cond[it.off[0]] ? x + (size_t)it.off[1] * item : y + (size_t)it.off[2] * item;
        memcpy(out + (size_t)i * item, src, item);
    }
    return MF_OK;
}

const mf_aten_op mf_aten_where_self = {"aten.where.self", where_check, where_run};

/* ---- expand(self, size, *, implicit=False): size[k] = -1 keeps the dim ---- */
static mf_status expand_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value v;
    mf_tensor x, o;
    nbcast it;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, &x) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    if (!mf_fp32_arg(args, kwargs, 1, "size", &v) || mf_seq_len(v) != o.rank) return MF_ERR_SHAPE;
    for (uint32_t k = 0; k < o.rank; k++) {
        int64_t d;
        const int kx = (int)k - (int)(o.rank - x.rank);
        if (!mf_seq_int(v, k, &d)) return MF_ERR_SHAPE;
        if (d == -1 && kx >= 0) d = x.shape[kx];
        if (d != (int64_t)o.shape[k]) return MF_ERR_SHAPE;
    }
    const mf_tensor *ins[1] = {&x};
    return x.dtype == o.dtype && mf_dtype_size(o.dtype) && nbcast_init(&it, &o, ins, 1) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status expand_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value v;
    mf_tensor x, o;
    nbcast it;
    mf_fp32_arg(args, kwargs, 0, "self", &v);
    mf_fp32_tensor(c, v, &x);
    mf_call_output(c, 0, &o);
    const mf_tensor *ins[1] = {&x};
    nbcast_init(&it, &o, ins, 1);
    const uint32_t item = mf_dtype_size(o.dtype);
    const uint8_t *xd = (const uint8_t *)x.data;
    uint8_t *out = (uint8_t *)o.data;
    for (uint32_t i = 0; i < o.numel; i++, nbcast_step(&it)) {
        memcpy(out + (size_t)i * item, xd + (size_t)it.off[0] * item, item);
    }
    return MF_OK;
}

const mf_aten_op mf_aten_expand = {"aten.expand.default", expand_check, expand_run};

/* ---- embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False) ---- */
static int embedding_args(const mf_call *c, mf_value args, mf_value kwargs, mf_tensor *w, mf_tensor *ix) {
    mf_value v;
    if (!mf_fp32_arg(args, kwargs, 0, "weight", &v) || !mf_fp32_tensor(c, v, w)) return 0;
    if (!mf_fp32_arg(args, kwargs, 1, "indices", &v) || !mf_fp32_tensor(c, v, ix)) return 0;
    return 1;
}

static mf_status embedding_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor w, ix, o;
    if (!embedding_args(c, args, kwargs, &w, &ix) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    if (w.rank != 2 || w.shape[0] == 0 || mf_dtype_size(w.dtype) == 0 || o.dtype != w.dtype) return MF_ERR_SHAPE;
    if (ix.dtype != MF_INT64 && ix.dtype != MF_INT32) return MF_ERR_SHAPE;
    if (o.rank != ix.rank + 1 || o.shape[ix.rank] != w.shape[1]) return MF_ERR_SHAPE;
    for (uint32_t k = 0; k < ix.rank; k++) {
        if (o.shape[k] != ix.shape[k]) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

static mf_status embedding_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor w, ix, o;
    embedding_args(c, args, kwargs, &w, &ix);
    mf_call_output(c, 0, &o);
    const size_t row = (size_t)w.shape[1] * mf_dtype_size(w.dtype);
    uint8_t *out = (uint8_t *)o.data;
    for (uint32_t i = 0; i < ix.numel; i++) {
        int64_t k;
        if (ix.dtype == MF_INT64) {
            memcpy(&k, (const uint8_t *)ix.data + (size_t)i * 8u, 8);
        } else {
            int32_t k32;
            memcpy(&k32, (const uint8_t *)ix.data + (size_t)i * 4u, 4);
            k = k32;
        }
        if (k < 0 || k >= (int64_t)w.shape[0]) return MF_ERR_SHAPE; /* torch: index out of range */
        memcpy(out + (size_t)i * row, (const uint8_t *)w.data + (size_t)k * row, row);
    }
    return MF_OK;
}

const mf_aten_op mf_aten_embedding = {"aten.embedding.default", embedding_check, embedding_run};
