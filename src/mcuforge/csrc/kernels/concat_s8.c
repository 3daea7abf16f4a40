/*
 * concat_s8: int8 concatenation along a stored axis (CMSIS-NN arm_concatenation_s8_{x,y,z,w}, any rank;
 * mcuforge.kernels.concat_s8). A byte copy: every input already has the output's quantization. An input the
 * planner placed on its slice of the output (mcuforge.plan, concat by placement) is not copied.
 */
#include "mf_kernel_util.h"

static mf_status check(const mf_call *c) {
    mf_tensor first, t, o;
    if (c->n_in < 1 || c->n_out != 1) return MF_ERR_SHAPE;
    if (!mf_call_input(c, 0, &first)) return MF_ERR_SHAPE;
    mf_call_output(c, 0, &o);
    if (!mf_is(&first, MF_INT8, -1) || first.rank < 1 || !mf_is(&o, MF_INT8, -1)) return MF_ERR_SHAPE;
    const int32_t axis = mf_value_int(mf_attr(c, 0));
    if (axis < 0 || axis >= (int32_t)first.rank) return MF_ERR_SHAPE;
    uint64_t total = 0;
    for (uint32_t i = 0; i < c->n_in; i++) {
        if (!mf_call_input(c, i, &t) || !mf_is(&t, MF_INT8, first.rank)) return MF_ERR_SHAPE;
        for (uint32_t k = 0; k < t.rank; k++) {
            if (k != (uint32_t)axis && t.shape[k] != first.shape[k]) return MF_ERR_SHAPE;
        }
        total += t.numel;
    }
    return total == o.numel ? MF_OK : MF_ERR_SHAPE;
}

static mf_status run(const mf_call *c) {
    mf_tensor t, o;
    mf_call_input(c, 0, &t);
    mf_call_output(c, 0, &o);
    const uint32_t axis = (uint32_t)mf_value_int(mf_attr(c, 0));
    uint32_t outer = 1, inner = 1; /* dims before the axis; dims after it (shared by every input) */
    for (uint32_t k = 0; k < axis; k++) outer *= t.shape[k];
    for (uint32_t k = axis + 1; k < t.rank; k++) inner *= t.shape[k];
    const size_t out_row = (size_t)(o.numel / (outer ? outer : 1u)); /* bytes per outer index, all inputs */
    uint8_t *out = (uint8_t *)o.data;
    size_t col = 0; /* where input i starts within an output row */
    for (uint32_t i = 0; i < c->n_in; i++) {
        mf_call_input(c, i, &t);
        const size_t chunk = (size_t)t.shape[axis] * inner;
        /* a pitched input (format 3.4, a channel concat's slice; inner is 1) has its pixels pitch apart */
        const size_t src_row = t.pitch ? t.pitch : chunk;
        const uint8_t *src = (const uint8_t *)t.data;
        for (uint32_t n = 0; chunk && n < outer; n++) {
            uint8_t *dst = out + (size_t)n * out_row + col;
            /* concat by placement: the producer already wrote this input on its slice (the loader allows no
             * other overlap), so there is nothing to copy */
            if (dst != src + (size_t)n * src_row) memcpy(dst, src + (size_t)n * src_row, chunk);
        }
        col += chunk;
    }
    return MF_OK;
}

const mf_kernel mf_kernel_concat_s8 = {MF_KIND_HEAD_concat_s8, check, run};
