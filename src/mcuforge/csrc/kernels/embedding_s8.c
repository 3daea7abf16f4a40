/* embedding_s8: rows of a constant int8 table (rows, D) picked by int64 or int32 indices,
 * out[i, :] = table[indices[i], :] (mcuforge.kernels.embedding). An index outside [0, rows) stops the
 * run with MF_ERR_SHAPE, as the fp32 embedding does (torch raises; so does the Python kernel). */
#include "mf_kernel_util.h"

static mf_status check(const mf_call *c) {
    mf_tensor ix, t, o;
    if (c->n_in != 2 || c->n_out != 1) return MF_ERR_SHAPE;
    mf_call_input(c, 0, &ix);
    mf_call_input(c, 1, &t);
    mf_call_output(c, 0, &o);
    if (ix.dtype != MF_INT64 && ix.dtype != MF_INT32) return MF_ERR_SHAPE;
    if (!mf_is(&t, MF_INT8, 2) || !(t.flags & MF_TENSOR_FLAG_CONSTANT) || t.shape[0] == 0u) return MF_ERR_SHAPE;
    if (o.dtype != MF_INT8 || o.rank != ix.rank + 1u || o.shape[o.rank - 1u] != t.shape[1]) return MF_ERR_SHAPE;
    for (uint32_t k = 0; k < ix.rank; k++) {
        if (o.shape[k] != ix.shape[k]) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

static mf_status run(const mf_call *c) {
    mf_tensor ix, t, o;
    mf_call_input(c, 0, &ix);
    mf_call_input(c, 1, &t);
    mf_call_output(c, 0, &o);
    const uint32_t rows = t.shape[0], depth = t.shape[1];
    const uint8_t *id = (const uint8_t *)ix.data;
    const int8_t *table = (const int8_t *)t.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < ix.numel; i++) {
        int64_t v;
        if (ix.dtype == MF_INT64) {
            memcpy(&v, id + (size_t)i * 8u, 8);
        } else {
            int32_t v32;
            memcpy(&v32, id + (size_t)i * 4u, 4);
            v = v32;
        }
        if (v < 0 || v >= (int64_t)rows) return MF_ERR_SHAPE;
        memcpy(out + (size_t)i * depth, table + (size_t)v * depth, depth);
    }
    return MF_OK;
}

const mf_kernel mf_kernel_embedding_s8 = {MF_KIND_HEAD_embedding_s8, check, run};
