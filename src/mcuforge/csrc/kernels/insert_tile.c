/*
 * insert_tile: out = dst (zeros without one) with tile written at begin[k] per stored dim of dst
 * (mcuforge.patches: the result of one spatial patch landing in the patched chain's output). Any
 * element type; bytes are copied, not converted. The planner may place out onto dst (in place): the
 * copy of dst is then skipped and only the tile's bytes are written. fill (optional, 1 when absent): 0
 * leaves the output's other bytes as they are without dst (the planner placed the output over the dead
 * bytes of the graph input: later tiles cover them, mcuforge.plan.input_overlap).
 */
#include "mf_kernel_util.h"

enum { A_BEGIN, A_FILL };

static mf_status check(const mf_call *c) {
    mf_tensor t, d, o;
    if (c->n_in < 1 || c->n_in > 2 || c->n_out != 1) return MF_ERR_SHAPE;
    if (!mf_call_input(c, 0, &t)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    if (t.dtype != o.dtype || t.rank != o.rank || o.rank < 1) return MF_ERR_SHAPE;
    if (c->n_in == 2 && mf_call_input(c, 1, &d)) {
        if (d.dtype != o.dtype || d.rank != o.rank) return MF_ERR_SHAPE;
        for (uint32_t k = 0; k < o.rank; k++) {
            if (d.shape[k] != o.shape[k]) return MF_ERR_SHAPE;
        }
    }
    mf_value b = mf_attr(c, A_BEGIN);
    if (mf_value_count(b) != o.rank) return MF_ERR_SHAPE;
    const int32_t fill = mf_attr_int_or(c, A_FILL, 1);
    if (fill != 0 && fill != 1) return MF_ERR_SHAPE;
    for (uint32_t k = 0; k < o.rank; k++) {
        const int32_t at = mf_value_ints_at(b, k);
        if (at < 0 || (uint64_t)(uint32_t)at + t.shape[k] > o.shape[k]) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor t, d, o;
    mf_call_input(c, 0, &t);
    mf_call_output(c, 0, &o);
    uint8_t *out = (uint8_t *)o.data;
    if (c->n_in == 2 && mf_call_input(c, 1, &d)) {
        if (d.data != o.data) memcpy(out, d.data, o.nbytes);
    } else if (t.data != o.data && mf_attr_int_or(c, A_FILL, 1)) {
        memset(out, 0, o.nbytes);
    }
    if (t.numel == 0 || t.data == o.data) return MF_OK; /* an empty tile; a tile that is the whole output */
    mf_value b = mf_attr(c, A_BEGIN);
    const uint32_t rank = o.rank, item = mf_dtype_size(o.dtype);
    /* Row-major strides of out (in bytes), and the tile's innermost run copied as one block. */
    size_t stride[MF_MAX_RANK], base = 0;
    size_t s = item;
    for (int k = (int)rank - 1; k >= 0; k--) {
        stride[k] = s;
        base += (size_t)(uint32_t)mf_value_ints_at(b, (uint32_t)k) * s;
        s *= o.shape[k];
    }
    const size_t run_bytes = (size_t)t.shape[rank - 1] * item;
    const uint32_t rows = t.numel / t.shape[rank - 1];
    uint32_t idx[MF_MAX_RANK] = {0};
    const uint8_t *src = (const uint8_t *)t.data;
    for (uint32_t r = 0; r < rows; r++) {
        size_t at = base;
        for (uint32_t k = 0; k + 1 < rank; k++) at += idx[k] * stride[k];
        memcpy(out + at, src + (size_t)r * run_bytes, run_bytes);
        for (int k = (int)rank - 2; k >= 0; k--) { /* the next row of the tile: odometer over the outer dims */
            if (++idx[k] < t.shape[k]) break;
            idx[k] = 0;
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_insert_tile = {MF_KIND_HEAD_insert_tile, check, run};
