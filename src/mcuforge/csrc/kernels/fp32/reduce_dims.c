/*
 * fp32 reductions over a set of dims: sum.dim_IntList, amax, amin, var / std (.correction and
 * .dim), argmax / argmin (int64 output), and group_norm / native_group_norm.
 *
 * amax, amin, argmax, argmin are bit-exact with torch (comparisons only; NaN propagates / is the
 * arg-extreme, as torch). sum, var, std, group_norm are within float rounding: they sum
 * sequentially in float32 (two passes for the variance), torch uses cascade sums and Welford.
 * Same bytes on every target; NaN results are canonical.
 */
#include <math.h>

#include "fp32_util.h"
#include "mf_math.h"

/* Rows of a reduction: for output element o (kept dims in row-major order) the input elements
 * are base(o) + the offsets of the reduced dims' odometer. */
typedef struct {
    uint32_t nk, nr;                                        /* kept / reduced dim counts */
    uint32_t kshape[MF_MAX_RANK], kstride[MF_MAX_RANK];     /* kept dims: sizes, input strides */
    uint32_t rshape[MF_MAX_RANK], rstride[MF_MAX_RANK];     /* reduced dims */
    uint32_t n_out, n_red;
} rows;

static void rows_init(rows *r, const mf_tensor *x, uint32_t mask) {
    uint32_t stride[MF_MAX_RANK], s = 1;
    for (int k = (int)x->rank - 1; k >= 0; k--) {
        stride[k] = s;
        s *= x->shape[k];
    }
    memset(r, 0, sizeof *r);
    r->n_out = r->n_red = 1;
    for (uint32_t k = 0; k < x->rank; k++) {
        if ((mask >> k) & 1u) {
            r->rshape[r->nr] = x->shape[k];
            r->rstride[r->nr++] = stride[k];
            r->n_red *= x->shape[k];
        } else {
            r->kshape[r->nk] = x->shape[k];
            r->kstride[r->nk++] = stride[k];
            r->n_out *= x->shape[k];
        }
    }
}

/* Input offset of element i of an odometer over (shape, stride, n) (row-major). */
static uint32_t odo_offset(uint32_t i, const uint32_t *shape, const uint32_t *stride, uint32_t n) {
    uint32_t off = 0;
    for (int k = (int)n - 1; k >= 0; k--) {
        off += (i % shape[k]) * stride[k];
        i /= shape[k];
    }
    return off;
}

/* Bit k set: dim k reduced. Argument `pos` ("dim"): absent, None or [] reduces all dims; an int
 * (argmax / argmin) or a list of distinct dims. 0 on a bad dim. */
static int dims_mask(mf_value args, mf_value kwargs, uint32_t pos, uint32_t rank, uint32_t *mask) {
    mf_value v;
    uint32_t k;
    *mask = 0;
    const uint32_t all = rank ? (1u << rank) - 1u : 0u;
    if (!mf_fp32_arg(args, kwargs, pos, "dim", &v)) {
        *mask = all;
        return 1;
    }
    const uint8_t tag = mf_value_tag(v);
    if (tag == MF_TAG_INT || tag == MF_TAG_INT64) {
        if (!mf_fp32_dim(mf_value_int64(v), rank, &k)) return 0;
        *mask = rank ? 1u << k : 0u;
        return 1;
    }
    if (tag != MF_TAG_INTS && tag != MF_TAG_LIST) return 0;
    if (mf_seq_len(v) == 0) {
        *mask = all;
        return 1;
    }
    for (uint32_t i = 0; i < mf_seq_len(v); i++) {
        int64_t d;
        if (!mf_seq_int(v, i, &d) || !mf_fp32_dim(d, rank, &k)) return 0;
        if (rank && (*mask >> k) & 1u) return 0; /* torch: "dim appears multiple times" */
        if (rank) *mask |= 1u << k;
    }
    return 1;
}

/* ---- sum / amax / amin / var / std / argmax / argmin ---- */
typedef enum { R_SUM, R_AMAX, R_AMIN, R_VAR, R_STD, R_ARGMAX, R_ARGMIN } red_kind;

typedef struct {
    mf_tensor x;
    uint32_t mask;
    float correction;
} red_args;

/* dim is argument 1 for all; var.correction's correction is a kwarg (default 1); var.dim /
 * std.dim have unbiased (argument 2, default True). */
static int red_read(const mf_call *c, mf_value args, mf_value kwargs, red_kind kind, int dim_overload, red_args *a) {
    mf_value v;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, &a->x) || a->x.dtype != MF_FLOAT32) return 0;
    if (a->x.numel == 0 || !dims_mask(args, kwargs, 1, a->x.rank, &a->mask)) return 0;
    a->correction = 1.0f;
    if (kind == R_VAR || kind == R_STD) {
        if (dim_overload) {
            if (mf_fp32_arg(args, kwargs, 2, "unbiased", &v)) {
                if (mf_value_tag(v) != MF_TAG_BOOL) return 0;
                a->correction = mf_value_int(v) ? 1.0f : 0.0f;
            }
        } else if (mf_fp32_arg(args, kwargs, 99, "correction", &v) && !mf_fp32_number(v, &a->correction)) {
            return 0;
        }
    }
    return 1;
}

static mf_status red_check(const mf_call *c, mf_value args, mf_value kwargs, red_kind kind, int dim_overload) {
    red_args a;
    mf_tensor o;
    rows r;
    if (!red_read(c, args, kwargs, kind, dim_overload, &a) || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    rows_init(&r, &a.x, a.mask);
    const uint8_t want = kind == R_ARGMAX || kind == R_ARGMIN ? MF_INT64 : MF_FLOAT32;
    return o.dtype == want && o.numel == r.n_out ? MF_OK : MF_ERR_SHAPE;
}

static mf_status red_run(const mf_call *c, mf_value args, mf_value kwargs, red_kind kind, int dim_overload) {
    red_args a;
    mf_tensor o;
    rows r;
    red_read(c, args, kwargs, kind, dim_overload, &a);
    mf_call_output(c, 0, &o);
    rows_init(&r, &a.x, a.mask);
    const float *xd = (const float *)a.x.data;
    for (uint32_t i = 0; i < r.n_out; i++) {
        const float *base = xd + odo_offset(i, r.kshape, r.kstride, r.nk);
        float acc = kind == R_SUM || kind == R_VAR || kind == R_STD ? 0.0f : base[0];
        uint32_t best = 0;
        for (uint32_t j = 0; j < r.n_red; j++) {
            const float v = base[odo_offset(j, r.rshape, r.rstride, r.nr)];
            switch (kind) {
            case R_SUM: case R_VAR: case R_STD: acc += v; break;
            case R_AMAX: if (acc == acc && (v != v || v > acc)) acc = v; break;
            case R_AMIN: if (acc == acc && (v != v || v < acc)) acc = v; break;
            case R_ARGMAX: if (acc == acc && (v != v || v > acc)) { acc = v; best = j; } break;
            default: if (acc == acc && (v != v || v < acc)) { acc = v; best = j; } break;
            }
        }
        if (kind == R_VAR || kind == R_STD) {
            const float mean = acc / (float)r.n_red;
            float sq = 0.0f;
            for (uint32_t j = 0; j < r.n_red; j++) {
                const float d = base[odo_offset(j, r.rshape, r.rstride, r.nr)] - mean;
                sq += d * d;
            }
            const float dof = (float)r.n_red - a.correction;
            acc = sq / (dof > 0.0f ? dof : 0.0f); /* torch: max(0, N - correction) */
            if (kind == R_STD) acc = sqrtf(acc);
        }
        if (kind == R_ARGMAX || kind == R_ARGMIN) {
            const int64_t b = (int64_t)best;
            memcpy((uint8_t *)o.data + (size_t)i * 8u, &b, 8);
        } else {
            ((float *)o.data)[i] = mf_canonf(acc);
        }
    }
    return MF_OK;
}

#define REDUCE(symbol, name, kind, dim_overload)                                                \
    static mf_status check_##symbol(const mf_call *c, mf_value a, mf_value k) {                 \
        return red_check(c, a, k, kind, dim_overload);                                          \
    }                                                                                           \
    static mf_status run_##symbol(const mf_call *c, mf_value a, mf_value k) {                   \
        return red_run(c, a, k, kind, dim_overload);                                            \
    }                                                                                           \
    const mf_aten_op mf_aten_##symbol = {name, check_##symbol, run_##symbol};

REDUCE(sum_dim_IntList, "aten.sum.dim_IntList", R_SUM, 0)
REDUCE(amax, "aten.amax.default", R_AMAX, 0)
REDUCE(amin, "aten.amin.default", R_AMIN, 0)
REDUCE(var_correction, "aten.var.correction", R_VAR, 0)
REDUCE(var_dim, "aten.var.dim", R_VAR, 1)
REDUCE(std_correction, "aten.std.correction", R_STD, 0)
REDUCE(std_dim, "aten.std.dim", R_STD, 1)
REDUCE(argmax, "aten.argmax.default", R_ARGMAX, 0)
REDUCE(argmin, "aten.argmin.default", R_ARGMIN, 0)

/* ---- group_norm(input, num_groups, weight?, bias?, eps=1e-5, cudnn_enabled) and
 *      native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd) ---- */
typedef struct {
    mf_tensor x, w, b;
    int has_w, has_b;
    uint32_t n, ch, hw, groups;
    float eps;
} gn_args;

static int gn_read(const mf_call *c, mf_value args, mf_value kwargs, int native, gn_args *a) {
    mf_value v;
    int64_t g;
    memset(a, 0, sizeof *a);
    if (!mf_fp32_arg(args, kwargs, 0, "input", &v) || !mf_fp32_tensor(c, v, &a->x) || a->x.dtype != MF_FLOAT32) return 0;
    if (a->x.rank < 2 || a->x.numel == 0) return 0;
    a->n = a->x.shape[0];
    a->ch = a->x.shape[1];
    a->hw = a->x.numel / a->n / a->ch;
    const uint32_t wpos = native ? 1 : 2;
    if (!mf_fp32_arg(args, kwargs, native ? 6 : 1, native ? "group" : "num_groups", &v)) return 0;
    if (mf_value_tag(v) != MF_TAG_INT && mf_value_tag(v) != MF_TAG_INT64) return 0;
    g = mf_value_int64(v);
    if (g <= 0 || g > (int64_t)a->ch || a->ch % (uint32_t)g) return 0;
    a->groups = (uint32_t)g;
    if (native) { /* N, C, HxW must describe the input */
        static const char *const names[3] = {"N", "C", "HxW"};
        const uint32_t want[3] = {a->n, a->ch, a->hw};
        for (uint32_t i = 0; i < 3; i++) {
            if (!mf_fp32_arg(args, kwargs, 3 + i, names[i], &v)) return 0;
            if (mf_value_tag(v) != MF_TAG_INT && mf_value_tag(v) != MF_TAG_INT64) return 0;
            if (mf_value_int64(v) != (int64_t)want[i]) return 0;
        }
    }
    if (mf_fp32_arg(args, kwargs, wpos, "weight", &v)) {
        if (!mf_fp32_tensor(c, v, &a->w) || a->w.dtype != MF_FLOAT32 || a->w.numel != a->ch) return 0;
        a->has_w = 1;
    }
    if (mf_fp32_arg(args, kwargs, wpos + 1, "bias", &v)) {
        if (!mf_fp32_tensor(c, v, &a->b) || a->b.dtype != MF_FLOAT32 || a->b.numel != a->ch) return 0;
        a->has_b = 1;
    }
    a->eps = 1e-5f;
    if (mf_fp32_arg(args, kwargs, native ? 7 : 4, "eps", &v) && !mf_fp32_number(v, &a->eps)) return 0;
    return native ? mf_fp32_arg(args, kwargs, 7, "eps", &v) : 1;
}

static mf_status gn_check(const mf_call *c, mf_value args, mf_value kwargs, int native) {
    gn_args a;
    mf_tensor o;
    const uint32_t n_out = native ? 3 : 1;
    if (!gn_read(c, args, kwargs, native, &a) || !mf_fp32_outputs_f32(c, n_out)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    if (o.numel != a.x.numel) return MF_ERR_SHAPE;
    for (uint32_t i = 1; i < n_out; i++) {
        mf_call_output(c, i, &o);
        if (o.numel != a.n * a.groups) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

static mf_status gn_run(const mf_call *c, mf_value args, mf_value kwargs, int native) {
    gn_args a;
    mf_tensor o, mean_t, rstd_t;
    gn_read(c, args, kwargs, native, &a);
    mf_call_output(c, 0, &o);
    if (native) {
        mf_call_output(c, 1, &mean_t);
        mf_call_output(c, 2, &rstd_t);
    }
    const float *w = a.has_w ? (const float *)a.w.data : NULL, *b = a.has_b ? (const float *)a.b.data : NULL;
    const uint32_t cg = a.ch / a.groups, inner = cg * a.hw;
    const float count = (float)inner;
    for (uint32_t r = 0; r < a.n * a.groups; r++) {
        const float *x = (const float *)a.x.data + (size_t)r * inner;
        float *out = (float *)o.data + (size_t)r * inner;
        float sum = 0.0f, sq = 0.0f;
        for (uint32_t i = 0; i < inner; i++) sum += x[i];
        const float mean = sum / count;
        for (uint32_t i = 0; i < inner; i++) sq += (x[i] - mean) * (x[i] - mean);
        const float rstd = 1.0f / sqrtf(sq / count + a.eps);
        for (uint32_t k = 0; k < cg; k++) {
            const uint32_t ch = (r % a.groups) * cg + k;
            /* torch: y = x * scale + shift, scale = rstd * gamma, shift = beta - scale * mean */
            const float scale = w ? rstd * w[ch] : rstd;
            const float shift = (b ? b[ch] : 0.0f) - scale * mean;
            for (uint32_t i = 0; i < a.hw; i++) {
                out[k * a.hw + i] = mf_canonf(x[k * a.hw + i] * scale + shift);
            }
        }
        if (native) {
            ((float *)mean_t.data)[r] = mf_canonf(mean);
            ((float *)rstd_t.data)[r] = mf_canonf(rstd);
        }
    }
    return MF_OK;
}

static mf_status group_norm_check(const mf_call *c, mf_value a, mf_value k) { return gn_check(c, a, k, 0); }
static mf_status group_norm_run(const mf_call *c, mf_value a, mf_value k) { return gn_run(c, a, k, 0); }
static mf_status native_group_norm_check(const mf_call *c, mf_value a, mf_value k) { return gn_check(c, a, k, 1); }
static mf_status native_group_norm_run(const mf_call *c, mf_value a, mf_value k) { return gn_run(c, a, k, 1); }

const mf_aten_op mf_aten_group_norm = {"aten.group_norm.default", group_norm_check, group_norm_run};
const mf_aten_op mf_aten_native_group_norm = {"aten.native_group_norm.default", native_group_norm_check,
                                             native_group_norm_run};
