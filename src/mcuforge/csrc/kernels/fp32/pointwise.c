/*
 * fp32 pointwise aten ops: unary activations and math, binary arithmetic with numpy/torch
 * broadcasting (the other operand a tensor or a number).
 *
 * Bit-exact with torch's fp32 CPU kernels: relu, neg, abs, clamp, clamp_min, clamp_max, hardtanh,
 * floor, ceil, round, reciprocal, leaky_relu, minimum, maximum, pow with exponent 0, 1, 2, 3, -1, -2
 * and the binary ops add/sub (alpha 1), mul, div -- single IEEE operations. Within float rounding
 * (a few ulp: mf_math vs torch's vectorized approximations): sigmoid, tanh, exp, log, erf, elu,
 * gelu, silu, hardswish, hardsigmoid, sqrt, rsqrt and pow 0.5 / -0.5 (torch's AVX2 sqrt is not
 * correctly rounded), other integer powers (1 ulp), general powers (~|e log x| ulp), add/sub with
 * alpha != 1 (torch may fuse the multiply-add).
 *
 * Same bytes on every target: transcendentals come from mf_math (not libm), sqrtf is correctly
 * rounded everywhere, and every computed NaN is the canonical one (mf_canonf) -- FPUs differ in
 * the NaN an invalid operation makes. relu/neg/abs/clamp only move or flip bits and keep NaNs.
 */
#include <math.h>

#include "fp32_util.h"
#include "mf_math.h"

/* ---- unary ---- */
typedef struct {
    float lo, hi; /* clamp / hardtanh bounds (+-inf when absent) */
    int tanh_approx; /* gelu approximate="tanh" */
    float a, b, s;   /* leaky_relu slope; elu alpha * scale, scale, input_scale; pow exponent (a) */
} unary_params;

typedef float (*unary_fn)(float x, const unary_params *p);

static float f_relu(float x, const unary_params *p) { (void)p; return x > 0.0f ? x : (x != x ? x : 0.0f); }
static float f_neg(float x, const unary_params *p) { (void)p; return -x; }
static float f_abs(float x, const unary_params *p) { (void)p; return fabsf(x); }
static float f_sqrt(float x, const unary_params *p) { (void)p; return mf_canonf(sqrtf(x)); }
static float f_rsqrt(float x, const unary_params *p) { (void)p; return mf_canonf(1.0f / sqrtf(x)); }
static float f_exp(float x, const unary_params *p) { (void)p; return mf_expf(x); }
static float f_log(float x, const unary_params *p) { (void)p; return mf_logf(x); }
static float f_tanh(float x, const unary_params *p) { (void)p; return mf_tanhf(x); }
static float f_sigmoid(float x, const unary_params *p) { (void)p; return mf_sigmoidf(x); }
static float f_silu(float x, const unary_params *p) { (void)p; return mf_siluf(x); }
static float f_clamp(float x, const unary_params *p) {
    if (x != x) return x; /* torch propagates NaN */
    return x < p->lo ? p->lo : (x > p->hi ? p->hi : x);
}
static float f_hardswish(float x, const unary_params *p) {
    (void)p;
    float r = x + 3.0f;
    r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
    return mf_canonf(x * r / 6.0f);
}
static float f_hardsigmoid(float x, const unary_params *p) {
    (void)p;
    float r = x + 3.0f;
    r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
    return mf_canonf(r / 6.0f);
}
static float f_gelu(float x, const unary_params *p) {
    return p->tanh_approx ? mf_gelu_tanhf(x) : mf_geluf(x);
}

static float f_erf(float x, const unary_params *p) { (void)p; return mf_erff(x); }
static float f_reciprocal(float x, const unary_params *p) { (void)p; return mf_canonf(1.0f / x); }

/* Rounding to an integer: exact, |x| >= 2^23 (and inf, NaN) are integers already. trunc via an
 * int32 conversion, round (half to even, as torch / nearbyint) via the 2^23 trick; a zero result
 * keeps the sign of x (ceil(-0.5) = -0). */
#define MF_TWO23 8388608.0f
static float with_sign_of(float r, float x) {
    return mf_bits_float((mf_float_bits(r) & 0x7fffffffu) | (mf_float_bits(x) & 0x80000000u));
}
static float f_floor(float x, const unary_params *p) {
    (void)p;
    if (!(fabsf(x) < MF_TWO23)) return mf_canonf(x);
    float t = (float)(int32_t)x;
    if (t > x) t -= 1.0f;
    return t == 0.0f ? with_sign_of(t, x) : t;
}
static float f_ceil(float x, const unary_params *p) {
    (void)p;
    if (!(fabsf(x) < MF_TWO23)) return mf_canonf(x);
    float t = (float)(int32_t)x;
    if (t < x) t += 1.0f;
    return t == 0.0f ? with_sign_of(t, x) : t;
}
static float f_round(float x, const unary_params *p) {
    (void)p;
    if (!(fabsf(x) < MF_TWO23)) return mf_canonf(x);
    const float r = (fabsf(x) + MF_TWO23) - MF_TWO23; /* round to nearest, ties to even */
    return with_sign_of(r, x);
}
static float f_leaky_relu(float x, const unary_params *p) { return x > 0.0f ? x : mf_canonf(x * p->a); }
/* elu(x, alpha, scale, input_scale) = x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale */
static float f_elu(float x, const unary_params *p) {
    return mf_canonf(x > 0.0f || x != x ? x * p->b : mf_expm1f(x * p->s) * p->a);
}

/* x^e, torch's float special cases: e = 2, 3, -1, -2 by float multiplications / a division (as
 * torch, bit-exact), 0.5 and -0.5 by sqrt. Other integer exponents: repeated squaring in double
 * (soft or hardware double: both IEEE, the same bits), one rounding to float at the end -- within
 * 1 ulp of the exact power. Other exponents: e^(e log x) in float (error ~|e log x| ulp). */
static float pow_int(float x, float e) {
    const int neg = e < 0.0f;
    uint32_t n = (uint32_t)(neg ? -e : e);
    double base = (double)x, r = 1.0;
    while (n) {
        if (n & 1u) r *= base;
        n >>= 1;
        if (n) base *= base;
    }
    return mf_canonf((float)(neg ? 1.0 / r : r));
}
static float f_pow(float x, const unary_params *p) {
    const float e = p->a;
    if (e == 0.0f) return 1.0f; /* even for NaN x */
    if (e == 1.0f) return x;
    if (e == 2.0f) return mf_canonf(x * x);
    if (e == 3.0f) return mf_canonf(x * x * x);
    if (e == -1.0f) return mf_canonf(1.0f / x);
    if (e == -2.0f) return mf_canonf(1.0f / (x * x));
    if (e == 0.5f) return mf_canonf(sqrtf(x));
    if (e == -0.5f) return mf_canonf(1.0f / sqrtf(x));
    if (mf_isnanf(x) || mf_isnanf(e)) return mf_nanf();
    if (fabsf(e) < 2147483648.0f && (float)(int32_t)e == e) return pow_int(x, e);
    if (fabsf(e) >= 2147483648.0f) { /* an even integer (float spacing >= 256): the sign of x does not matter */
        const float ax = fabsf(x);
        if (ax == 1.0f) return 1.0f;
        return (ax > 1.0f) == (e > 0.0f) ? HUGE_VALF : 0.0f;
    }
    if (x == 1.0f) return 1.0f;
    if (x == -HUGE_VALF) return e > 0.0f ? HUGE_VALF : 0.0f; /* C99 F.9.4.4 */
    if (x < 0.0f) return mf_nanf(); /* negative base, fractional exponent */
    if (x == 0.0f) return e > 0.0f ? 0.0f : HUGE_VALF;
    if (x == HUGE_VALF) return e > 0.0f ? HUGE_VALF : 0.0f;
    return mf_expf(e * mf_logf(x));
}

/* Reads the op's bounds / options; 0 when an argument has the wrong type. */
static int unary_read(const mf_call *c, mf_value args, mf_value kwargs, unary_fn fn, unary_params *p) {
    mf_value v;
    p->lo = -HUGE_VALF;
    p->hi = HUGE_VALF;
    p->tanh_approx = 0;
    p->a = p->b = p->s = 1.0f;
    (void)c;
    if (fn == f_leaky_relu) {
        p->a = 0.01f;
        if (mf_fp32_arg(args, kwargs, 1, "negative_slope", &v) && !mf_fp32_number(v, &p->a)) return 0;
    }
    if (fn == f_elu) {
        float alpha = 1.0f;
        if (mf_fp32_arg(args, kwargs, 1, "alpha", &v) && !mf_fp32_number(v, &alpha)) return 0;
        if (mf_fp32_arg(args, kwargs, 2, "scale", &v) && !mf_fp32_number(v, &p->b)) return 0;
        if (mf_fp32_arg(args, kwargs, 3, "input_scale", &v) && !mf_fp32_number(v, &p->s)) return 0;
        p->a = alpha * p->b; /* torch's negcoef */
    }
    if (fn == f_pow && (!mf_fp32_arg(args, kwargs, 1, "exponent", &v) || !mf_fp32_number(v, &p->a))) return 0;
    if (fn == f_gelu && mf_fp32_arg(args, kwargs, 1, "approximate", &v)) {
        if (mf_value_is_str(v, "tanh")) p->tanh_approx = 1;
        else if (!mf_value_is_str(v, "none")) return 0;
    }
    return 1;
}

static mf_status unary_check_io(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_value v;
    mf_tensor x, o;
    if (!mf_fp32_arg(args, kwargs, 0, "self", &v) || !mf_fp32_tensor(c, v, &x)) return MF_ERR_SHAPE;
    if (!mf_fp32_outputs_f32(c, 1)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    return x.dtype == MF_FLOAT32 && x.numel == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status unary_run(const mf_call *c, mf_value args, mf_value kwargs, unary_fn fn, const unary_params *p) {
    mf_value v;
    mf_tensor x, o;
    (void)kwargs;
    mf_fp32_arg(args, kwargs, 0, "self", &v);
    mf_fp32_tensor(c, v, &x);
    mf_call_output(c, 0, &o);
    const float *xd = (const float *)x.data;
    float *out = (float *)o.data;
    for (uint32_t i = 0; i < x.numel; i++) out[i] = fn(xd[i], p);
    return MF_OK;
}

/* Bounds of clamp(self, min?, max?), hardtanh(self, min_val=-1, max_val=1) (mode 0 / 1) and
 * clamp_min(self, min) / clamp_max(self, max) (mode 2 / 3, the bound required). */
static int bounds(mf_value args, mf_value kwargs, int mode, unary_params *p) {
    mf_value v;
    p->lo = mode == 1 ? -1.0f : -HUGE_VALF;
    p->hi = mode == 1 ? 1.0f : HUGE_VALF;
    p->tanh_approx = 0;
    if (mode == 2) return mf_fp32_arg(args, kwargs, 1, "min", &v) && mf_fp32_number(v, &p->lo);
    if (mode == 3) return mf_fp32_arg(args, kwargs, 1, "max", &v) && mf_fp32_number(v, &p->hi);
    if (mf_fp32_arg(args, kwargs, 1, mode ? "min_val" : "min", &v) && !mf_fp32_number(v, &p->lo)) return 0;
    if (mf_fp32_arg(args, kwargs, 2, mode ? "max_val" : "max", &v) && !mf_fp32_number(v, &p->hi)) return 0;
    return 1;
}

#define UNARY(symbol, name, fn)                                                                 \
    static mf_status check_##symbol(const mf_call *c, mf_value a, mf_value k) {                 \
        unary_params p;                                                                         \
        if (!unary_read(c, a, k, fn, &p)) return MF_ERR_SHAPE;                                  \
        return unary_check_io(c, a, k);                                                         \
    }                                                                                           \
    static mf_status run_##symbol(const mf_call *c, mf_value a, mf_value k) {                   \
        unary_params p;                                                                         \
        unary_read(c, a, k, fn, &p);                                                            \
        return unary_run(c, a, k, fn, &p);                                                      \
    }                                                                                           \
    const mf_aten_op mf_aten_##symbol = {name, check_##symbol, run_##symbol};

UNARY(relu, "aten.relu.default", f_relu)
UNARY(neg, "aten.neg.default", f_neg)
UNARY(abs, "aten.abs.default", f_abs)
UNARY(sqrt, "aten.sqrt.default", f_sqrt)
UNARY(rsqrt, "aten.rsqrt.default", f_rsqrt)
UNARY(exp, "aten.exp.default", f_exp)
UNARY(log, "aten.log.default", f_log)
UNARY(tanh, "aten.tanh.default", f_tanh)
UNARY(sigmoid, "aten.sigmoid.default", f_sigmoid)
UNARY(silu, "aten.silu.default", f_silu)
UNARY(hardswish, "aten.hardswish.default", f_hardswish)
UNARY(hardsigmoid, "aten.hardsigmoid.default", f_hardsigmoid)
UNARY(gelu, "aten.gelu.default", f_gelu)
UNARY(erf, "aten.erf.default", f_erf)
UNARY(reciprocal, "aten.reciprocal.default", f_reciprocal)
UNARY(floor, "aten.floor.default", f_floor)
UNARY(ceil, "aten.ceil.default", f_ceil)
UNARY(round, "aten.round.default", f_round)
UNARY(leaky_relu, "aten.leaky_relu.default", f_leaky_relu)
UNARY(elu, "aten.elu.default", f_elu)
UNARY(pow_Tensor_Scalar, "aten.pow.Tensor_Scalar", f_pow)

#define BOUNDED(symbol, name, hardtanh)                                                         \
    static mf_status check_##symbol(const mf_call *c, mf_value a, mf_value k) {                 \
        unary_params p;                                                                         \
        if (!bounds(a, k, hardtanh, &p)) return MF_ERR_SHAPE;                                   \
        return unary_check_io(c, a, k);                                                         \
    }                                                                                           \
    static mf_status run_##symbol(const mf_call *c, mf_value a, mf_value k) {                   \
        unary_params p;                                                                         \
        bounds(a, k, hardtanh, &p);                                                             \
        return unary_run(c, a, k, f_clamp, &p);                                                 \
    }                                                                                           \
    const mf_aten_op mf_aten_##symbol = {name, check_##symbol, run_##symbol};

BOUNDED(clamp, "aten.clamp.default", 0)
BOUNDED(hardtanh, "aten.hardtanh.default", 1)
BOUNDED(clamp_min, "aten.clamp_min.default", 2)
BOUNDED(clamp_max, "aten.clamp_max.default", 3)

/* ---- binary ---- */
typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MIN, OP_MAX } binary_kind;

/* Operand `pos`: a float32 tensor, or a number viewed as a rank-0 tensor stored in *scalar. */
static int operand(const mf_call *c, mf_value args, mf_value kwargs, uint32_t pos, mf_tensor *t, float *scalar) {
    mf_value v;
    if (!mf_fp32_arg(args, kwargs, pos, pos ? "other" : "self", &v)) return 0;
    if (mf_fp32_tensor(c, v, t)) return t->dtype == MF_FLOAT32;
    if (!mf_fp32_number(v, scalar)) return 0;
    memset(t, 0, sizeof *t);
    t->dtype = MF_FLOAT32;
    t->numel = 1;
    t->data = scalar;
    return 1;
}

static int alpha_of(mf_value args, mf_value kwargs, float *alpha) {
    mf_value v;
    *alpha = 1.0f;
    return !mf_fp32_arg(args, kwargs, 2, "alpha", &v) || mf_fp32_number(v, alpha);
}

static mf_status binary_check(const mf_call *c, mf_value args, mf_value kwargs) {
    mf_tensor a, b, o;
    float sa, sb, alpha;
    mf_bcast it;
    if (!operand(c, args, kwargs, 0, &a, &sa) || !operand(c, args, kwargs, 1, &b, &sb)) return MF_ERR_SHAPE;
    if (!alpha_of(args, kwargs, &alpha) || !mf_fp32_outputs_f32(c, 1)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    return mf_bcast_init(&it, &a, &b) && it.numel == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status binary_run(const mf_call *c, mf_value args, mf_value kwargs, binary_kind kind) {
    mf_tensor a, b, o;
    float sa, sb, alpha;
    mf_bcast it;
    operand(c, args, kwargs, 0, &a, &sa);
    operand(c, args, kwargs, 1, &b, &sb);
    alpha_of(args, kwargs, &alpha);
    mf_call_output(c, 0, &o);
    mf_bcast_init(&it, &a, &b);
    const float *ad = (const float *)a.data, *bd = (const float *)b.data;
    float *out = (float *)o.data;
    for (uint32_t i = 0; i < it.numel; i++, mf_bcast_step(&it)) {
        const float x = ad[it.ia], y = bd[it.ib];
        float r;
        switch (kind) {
        case OP_ADD: r = alpha == 1.0f ? x + y : x + alpha * y; break;
        case OP_SUB: r = alpha == 1.0f ? x - y : x - alpha * y; break;
        case OP_MUL: r = x * y; break;
        /* NaN propagates; equal values (+-0) give y, as torch's vectorized min/max */
        case OP_MIN: r = x != x || y != y ? mf_nanf() : (x < y ? x : y); break;
        case OP_MAX: r = x != x || y != y ? mf_nanf() : (x > y ? x : y); break;
        default: r = x / y; break;
        }
        out[i] = mf_canonf(r); /* inf - inf, 0 * inf, 0 / 0: one NaN on every target */
    }
    return MF_OK;
}

#define BINARY(symbol, name, kind)                                                              \
    static mf_status run_##symbol(const mf_call *c, mf_value a, mf_value k) {                   \
        return binary_run(c, a, k, kind);                                                       \
    }                                                                                           \
    const mf_aten_op mf_aten_##symbol = {name, binary_check, run_##symbol};

BINARY(add_Tensor, "aten.add.Tensor", OP_ADD)
BINARY(add_Scalar, "aten.add.Scalar", OP_ADD)
BINARY(sub_Tensor, "aten.sub.Tensor", OP_SUB)
BINARY(sub_Scalar, "aten.sub.Scalar", OP_SUB)
BINARY(mul_Tensor, "aten.mul.Tensor", OP_MUL)
BINARY(mul_Scalar, "aten.mul.Scalar", OP_MUL)
BINARY(div_Tensor, "aten.div.Tensor", OP_DIV)
BINARY(div_Scalar, "aten.div.Scalar", OP_DIV)
BINARY(minimum, "aten.minimum.default", OP_MIN)
BINARY(maximum, "aten.maximum.default", OP_MAX)
