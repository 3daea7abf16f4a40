/*
 * fp32 resizing of NCHW ("plain" layout, as the lowering stores 4-D fp32-op tensors) images:
 * upsample_nearest2d.vec (bit-exact with torch: the same float source-index arithmetic) and
 * upsample_bilinear2d.vec, align_corners False / True (torch's index and weight arithmetic and
 * summation order; within float rounding of torch, whose compiler may fuse multiply-adds).
 */
#include <math.h>

#include "fp32_util.h"
#include "mf_math.h"

/* Element i of a sequence of numbers (FLOATS, INTS or a LIST of numbers) as float. */
static int seq_float(mf_value v, uint32_t i, float *out) {
    mf_value item;
    const uint8_t tag = mf_value_tag(v);
    if (i >= mf_seq_len(v)) return 0;
    if (tag == MF_TAG_FLOATS) {
        *out = mf_value_floats_at(v, i);
        return 1;
    }
    if (tag == MF_TAG_INTS) {
        *out = (float)mf_value_ints_at(v, i);
        return 1;
    }
    return mf_list_item(v, i, &item) && mf_fp32_number(item, out);
}

typedef struct {
    mf_tensor x;
    uint32_t n, ch, ih, iw, oh, ow;
    int has_scale, align_corners;
    float sh, sw; /* scale_factors */
} resize_args;

/* Arguments of upsample_{nearest,bilinear}2d.vec: (input, output_size?, [align_corners,]
 * scale_factors?); exactly one of output_size / scale_factors, consistent with the output. */
static int resize_read(const mf_call *c, mf_value args, mf_value kwargs, int bilinear, resize_args *a) {
    mf_value v, size_v, scale_v;
    mf_tensor o;
    memset(a, 0, sizeof *a);
    if (!mf_fp32_arg(args, kwargs, 0, "input", &v) || !mf_fp32_tensor(c, v, &a->x)) return 0;
    if (a->x.dtype != MF_FLOAT32 || a->x.rank != 4 || a->x.layout != MF_LAYOUT_PLAIN || c->n_out != 1) return 0;
    mf_call_output(c, 0, &o);
    if (o.dtype != MF_FLOAT32 || o.rank != 4 || o.layout != MF_LAYOUT_PLAIN) return 0;
    if (o.shape[0] != a->x.shape[0] || o.shape[1] != a->x.shape[1]) return 0;
    a->n = a->x.shape[0];
    a->ch = a->x.shape[1];
    a->ih = a->x.shape[2];
    a->iw = a->x.shape[3];
    a->oh = o.shape[2];
    a->ow = o.shape[3];
    if (a->ih == 0 || a->iw == 0) return 0;
    if (bilinear) {
        if (!mf_fp32_arg(args, kwargs, 2, "align_corners", &v) || mf_value_tag(v) != MF_TAG_BOOL) return 0;
        a->align_corners = mf_value_int(v) != 0;
    }
    const int has_size = mf_fp32_arg(args, kwargs, 1, "output_size", &size_v);
    a->has_scale = mf_fp32_arg(args, kwargs, bilinear ? 3 : 2, "scale_factors", &scale_v);
    if (has_size == a->has_scale) return 0;
    if (has_size) {
        int64_t h, w;
        if (mf_seq_len(size_v) != 2 || !mf_seq_int(size_v, 0, &h) || !mf_seq_int(size_v, 1, &w)) return 0;
        return h == (int64_t)a->oh && w == (int64_t)a->ow;
    }
    if (mf_seq_len(scale_v) != 2 || !seq_float(scale_v, 0, &a->sh) || !seq_float(scale_v, 1, &a->sw)) return 0;
    return a->sh > 0.0f && a->sw > 0.0f && a->sh < HUGE_VALF && a->sw < HUGE_VALF;
}

/* torch's compute_scales_value<float>: 1 / scale_factor (in double, rounded), else in / out. */
static float src_scale(int has_scale, float factor, uint32_t in, uint32_t out) {
    if (has_scale) return (float)(1.0 / (double)factor);
    return (float)in / (float)out;
}

/* torch's nearest_neighbor_compute_source_index: min(floor(dst * scale), in - 1). */
static uint32_t nearest_src(float scale, uint32_t dst, uint32_t in) {
    const float s = (float)dst * scale;
    if (!(s < (float)(in - 1))) return in - 1;
    return (uint32_t)s; /* s >= 0: truncation is floor */
}

static mf_status nearest_check(const mf_call *c, mf_value args, mf_value kwargs) {
    resize_args a;
    return resize_read(c, args, kwargs, 0, &a) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status nearest_run(const mf_call *c, mf_value args, mf_value kwargs) {
    resize_args a;
    mf_tensor o;
    resize_read(c, args, kwargs, 0, &a);
    mf_call_output(c, 0, &o);
    const float sh = src_scale(a.has_scale, a.sh, a.ih, a.oh), sw = src_scale(a.has_scale, a.sw, a.iw, a.ow);
    const float *x = (const float *)a.x.data;
    float *out = (float *)o.data;
    for (uint32_t p = 0; p < a.n * a.ch; p++) {
        const float *plane = x + (size_t)p * a.ih * a.iw;
        for (uint32_t i = 0; i < a.oh; i++) {
            const float *row = plane + (size_t)nearest_src(sh, i, a.ih) * a.iw;
            for (uint32_t j = 0; j < a.ow; j++) *out++ = row[nearest_src(sw, j, a.iw)];
        }
    }
    return MF_OK;
}

const mf_aten_op mf_aten_upsample_nearest2d_vec = {"aten.upsample_nearest2d.vec", nearest_check, nearest_run};

/* torch's compute_source_index_and_lambda (linear, float opmath): i0, i1 and weights l0, l1. */
static void linear_src(const resize_args *a, float factor, uint32_t in, uint32_t out, uint32_t dst,
                       uint32_t *i0, uint32_t *i1, float *l0, float *l1) {
    if (in == out) {
        *i0 = *i1 = dst;
        *l0 = 1.0f;
        *l1 = 0.0f;
        return;
    }
    float scale, real;
    if (a->align_corners) {
        scale = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
        real = scale * (float)dst;
    } else {
        scale = src_scale(a->has_scale, factor, in, out);
        real = scale * ((float)dst + 0.5f) - 0.5f;
        if (real < 0.0f) real = 0.0f;
    }
    uint32_t k = real < (float)(in - 1) ? (uint32_t)real : in - 1;
    float lam = real - (float)k;
    lam = lam < 0.0f ? 0.0f : (lam > 1.0f ? 1.0f : lam);
    *i0 = k;
    *i1 = k < in - 1 ? k + 1 : k;
    *l1 = lam;
    *l0 = 1.0f - lam;
}

static mf_status bilinear_check(const mf_call *c, mf_value args, mf_value kwargs) {
    resize_args a;
    return resize_read(c, args, kwargs, 1, &a) ? MF_OK : MF_ERR_SHAPE;
}

static mf_status bilinear_run(const mf_call *c, mf_value args, mf_value kwargs) {
    resize_args a;
    mf_tensor o;
    resize_read(c, args, kwargs, 1, &a);
    mf_call_output(c, 0, &o);
    const float *x = (const float *)a.x.data;
    float *out = (float *)o.data;
    for (uint32_t p = 0; p < a.n * a.ch; p++) {
        const float *plane = x + (size_t)p * a.ih * a.iw;
        for (uint32_t i = 0; i < a.oh; i++) {
            uint32_t h0, h1;
            float lh0, lh1;
            linear_src(&a, a.sh, a.ih, a.oh, i, &h0, &h1, &lh0, &lh1);
            const float *r0 = plane + (size_t)h0 * a.iw, *r1 = plane + (size_t)h1 * a.iw;
            for (uint32_t j = 0; j < a.ow; j++) {
                uint32_t w0, w1;
                float lw0, lw1;
                linear_src(&a, a.sw, a.iw, a.ow, j, &w0, &w1, &lw0, &lw1);
                /* torch's Interpolate<2>: (x00 lw0 + x01 lw1) lh0 + (x10 lw0 + x11 lw1) lh1 */
                const float t0 = r0[w0] * lw0 + r0[w1] * lw1;
                const float t1 = r1[w0] * lw0 + r1[w1] * lw1;
                *out++ = mf_canonf(t0 * lh0 + t1 * lh1);
            }
        }
    }
    return MF_OK;
}

const mf_aten_op mf_aten_upsample_bilinear2d_vec = {"aten.upsample_bilinear2d.vec", bilinear_check, bilinear_run};
