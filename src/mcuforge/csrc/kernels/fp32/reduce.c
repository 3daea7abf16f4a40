/*
 * fp32 reductions: mean.dim, softmax (_softmax / softmax.int), layer_norm / native_layer_norm.
 * All within float rounding of torch, not bit-exact: torch sums in a different order (cascade,
 * vectorized) and uses its own exp; these sum sequentially in row-major order in float32 with
 * mf_expf (mf_math.h), so the bytes are the same on every target; NaN results are canonical.
 */
#include <math.h>

#include "fp32_util.h"
#include "mf_math.h"

/* ---- mean.dim(self, dim?, keepdim=False, *, dtype=None) ---- */

/* Bit k set: dimension k is reduced. dim None or [] reduces everything. 0 on a bad dim. */
static int reduced_dims(mf_value args, mf_value kwargs, uint32_t rank, uint32_t *mask) {
    mf_value v;
    *mask = 0;
    if (!mf_fp32_arg(args, kwargs, 1, "dim", &v) || mf_seq_len(v) == 0) {
        *mask = rank ? (1u << rank) - 1u : 0u;
        return 1;
    }
    for (uint32_t i = 0; i < mf_seq_len(v); i++) {
        int64_t d;
        uint32_t k;
        if (!mf_seq_int(v, i, &d) || !mf_fp32_dim(d, rank, &k)) return 0;
        if (rank && (*mask >> k) & 1u) return 0; /* torch: "dim appears multiple times" */
        if (rank) *mask |= 1u << k;
    }
    return 1;
}

static mf_status mean_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value v;
    mf_tensor x, o;
    uint32_t mask;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, &x) || x.dtype != MF_FLOAT32) {
        return MF_ERR_SHAPE;
    }
    if (!reduced_dims(args, kwargs, x.rank, &mask) || !mf_fp32_outputs_f32(c, 1)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    uint64_t kept = 1;
    for (uint32_t k = 0; k < x.rank; k++) kept *= (mask >> k) & 1u ? 1u : x.shape[k];
    return x.numel && kept == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status mean_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value v;
    mf_tensor x, o;
    uint32_t mask, ostride[MF_MAX_RANK] = {0}, idx[MF_MAX_RANK] = {0};
    mf_fp32_arg(args, kwargs, 0, "self", &v);
    mf_fp32_tensor(c, v, &x);
    reduced_dims(args, kwargs, x.rank, &mask);
    mf_call_output(c, 0, &o);
    uint32_t s = 1;
    for (int k = (int)x.rank - 1; k >= 0; k--) {
        if ((mask >> k) & 1u) continue;
        ostride[k] = s;
        s *= x.shape[k];
    }
    const float *xd = (const float *)x.data;
    float *out = (float *)o.data;
    for (uint32_t i = 0; i < o.numel; i++) out[i] = 0.0f;
    uint32_t oi = 0;
    for (uint32_t i = 0; i < x.numel; i++) {
        out[oi] += xd[i];
        for (int k = (int)x.rank - 1; k >= 0; k--) {
            idx[k]++;
            oi += ostride[k];
            if (idx[k] < x.shape[k]) break;
            oi -= ostride[k] * idx[k];
            idx[k] = 0;
        }
    }
    const float count = (float)(x.numel / o.numel);
    for (uint32_t i = 0; i < o.numel; i++) out[i] = mf_canonf(out[i] / count);
    return MF_OK;
}

const mf_aten_op mf_aten_mean_dim = {"aten.mean.dim", mean_check, mean_run};

/* ---- softmax(self, dim, half_to_float / dtype) ---- */
static int softmax_args(const mf_call *c, mf_value args, mf_value kwargs, mf_tensor *x, uint32_t *dim) {
    mf_value v;
    int64_t d;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, x) || x->dtype != MF_FLOAT32) return 0;
    if (!mf_fp32_arg(args, kwargs, 1, "dim", &v)) return 0;
    uint8_t tag = mf_value_tag(v);
    if (tag != MF_TAG_INT && tag != MF_TAG_INT64) return 0;
    d = mf_value_int64(v);
    return mf_fp32_dim(d, x->rank, dim);
}

static mf_status softmax_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor x, o;
    uint32_t dim;
    if (!softmax_args(c, args, kwargs, &x, &dim) || !mf_fp32_outputs_f32(c, 1)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    return o.numel == x.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status softmax_run(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor x, o;
    uint32_t dim;
    softmax_args(c, args, kwargs, &x, &dim);
    mf_call_output(c, 0, &o);
    uint32_t outer = 1, n = x.rank ? x.shape[dim] : 1, inner = 1;
    for (uint32_t k = 0; k < dim && k < x.rank; k++) outer *= x.shape[k];
    for (uint32_t k = dim + 1; k < x.rank; k++) inner *= x.shape[k];
    const float *xd = (const float *)x.data;
    float *out = (float *)o.data;
    for (uint32_t a = 0; a < outer; a++) {
        for (uint32_t b = 0; b < inner; b++) {
            const size_t base = (size_t)a * n * inner + b;
            float mx = -HUGE_VALF, sum = 0.0f;
            for (uint32_t i = 0; i < n; i++) mx = xd[base + (size_t)i * inner] > mx ? xd[base + (size_t)i * inner] : mx;
            for (uint32_t i = 0; i < n; i++) {
                const float e = mf_expf(xd[base + (size_t)i * inner] - mx);
                out[base + (size_t)i * inner] = e;
                sum += e;
            }
            for (uint32_t i = 0; i < n; i++) {
                out[base + (size_t)i * inner] = mf_canonf(out[base + (size_t)i * inner] / sum);
            }
        }
    }
    return MF_OK;
}

const mf_aten_op mf_aten_softmax_int = {"aten.softmax.int", softmax_check, softmax_run};
const mf_aten_op mf_aten__softmax = {"aten._softmax.default", softmax_check, softmax_run};

/* ---- layer_norm(input, normalized_shape, weight?, bias?, eps=1e-5, cudnn_enable) and
 *      native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd) ---- */
typedef struct {
    mf_tensor x, w, b;
    int has_w, has_b;
    uint32_t rows, inner;
    float eps;
} ln_args;

static int ln_read(const mf_call *c, mf_value args, mf_value kwargs, ln_args *a) {
    mf_value v;
    memset(a, 0, sizeof *a);
    if (!mf_fp32_arg(args, kwargs, 0, "input", &v) || !mf_fp32_tensor(c, v, &a->x) || a->x.dtype != MF_FLOAT32) {
        return 0;
    }
    if (!mf_fp32_arg(args, kwargs, 1, "normalized_shape", &v)) return 0;
    const uint32_t k = mf_seq_len(v);
    if (k == 0 || k > a->x.rank) return 0;
    uint64_t inner = 1;
    for (uint32_t i = 0; i < k; i++) {
        int64_t d;
        if (!mf_seq_int(v, i, &d) || d != (int64_t)a->x.shape[a->x.rank - k + i]) return 0;
        inner *= (uint64_t)d;
    }
    if (inner == 0) return 0;
    a->inner = (uint32_t)inner;
    a->rows = a->x.numel / a->inner;
    if (mf_fp32_arg(args, kwargs, 2, "weight", &v)) {
        if (!mf_fp32_tensor(c, v, &a->w) || a->w.dtype != MF_FLOAT32 || a->w.numel != a->inner) return 0;
        a->has_w = 1;
    }
    if (mf_fp32_arg(args, kwargs, 3, "bias", &v)) {
        if (!mf_fp32_tensor(c, v, &a->b) || a->b.dtype != MF_FLOAT32 || a->b.numel != a->inner) return 0;
        a->has_b = 1;
    }
    a->eps = 1e-5f;
    if (mf_fp32_arg(args, kwargs, 4, "eps", &v) && !mf_fp32_number(v, &a->eps)) return 0;
    return 1;
}

static mf_status ln_check(const mf_call *c, mf_value args, mf_value kwargs, uint32_t n_out) {
    ln_args a;
    mf_tensor o;
    if (!ln_read(c, args, kwargs, &a) || !mf_fp32_outputs_f32(c, n_out)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    if (o.numel != a.x.numel) return MF_ERR_SHAPE;
    for (uint32_t i = 1; i < n_out; i++) {
        mf_call_output(c, i, &o);
        if (o.numel != a.rows) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

static mf_status ln_run(const mf_call *c, mf_value args, mf_value kwargs) {
    ln_args a;
    mf_tensor o, mean_t, rstd_t;
    ln_read(c, args, kwargs, &a);
    mf_call_output(c, 0, &o);
    const int stats = c->n_out == 3;
    if (stats) {
        mf_call_output(c, 1, &mean_t);
        mf_call_output(c, 2, &rstd_t);
    }
    const float *w = a.has_w ? (const float *)a.w.data : NULL, *b = a.has_b ? (const float *)a.b.data : NULL;
    const float n = (float)a.inner;
    for (uint32_t r = 0; r < a.rows; r++) {
        const float *x = (const float *)a.x.data + (size_t)r * a.inner;
        float *out = (float *)o.data + (size_t)r * a.inner;
        float sum = 0.0f, sq = 0.0f;
        for (uint32_t i = 0; i < a.inner; i++) sum += x[i];
        const float mean = sum / n;
        for (uint32_t i = 0; i < a.inner; i++) sq += (x[i] - mean) * (x[i] - mean);
        const float rstd = 1.0f / sqrtf(sq / n + a.eps);
        for (uint32_t i = 0; i < a.inner; i++) {
            float y = (x[i] - mean) * rstd;
            if (w) y *= w[i];
            if (b) y += b[i];
            out[i] = mf_canonf(y);
        }
        if (stats) {
            ((float *)mean_t.data)[r] = mf_canonf(mean);
            ((float *)rstd_t.data)[r] = mf_canonf(rstd);
        }
    }
    return MF_OK;
}

static mf_status layer_norm_check(const mf_call *c, mf_value a, mf_value k) { return ln_check(c, a, k, 1); }
static mf_status native_layer_norm_check(const mf_call *c, mf_value a, mf_value k) { return ln_check(c, a, k, 3); }

const mf_aten_op mf_aten_layer_norm = {"aten.layer_norm.default", layer_norm_check, ln_run};
const mf_aten_op mf_aten_native_layer_norm = {"aten.native_layer_norm.default", native_layer_norm_check, ln_run};
