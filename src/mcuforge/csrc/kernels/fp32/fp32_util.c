#include "fp32_util.h"

int mf_fp32_arg(mf_value args, mf_value kwargs, uint32_t pos, const char *name, mf_value *out) {
    int found = mf_list_item(args, pos, out);
    if (!found && name) found = mf_dict_get(kwargs, name, out);
    return found && mf_value_tag(*out) != MF_TAG_NONE;
}

int mf_fp32_tensor(const mf_call *c, mf_value v, mf_tensor *t) {
    if (mf_value_tag(v) != MF_TAG_TENSOR) return 0;
    return mf_call_input(c, mf_attr_word(v.prog, v.pos + 1), t);
}

int mf_fp32_number(mf_value v, float *out) {
    uint8_t tag = mf_value_tag(v);
    if (tag != MF_TAG_INT && tag != MF_TAG_INT64 && tag != MF_TAG_FLOAT && tag != MF_TAG_BOOL) return 0;
    *out = mf_value_float(v);
    return 1;
}

int mf_fp32_dim(int64_t d, uint32_t rank, uint32_t *out) {
    int64_t r = rank == 0 ? 1 : rank; /* torch lets a scalar take dim 0 / -1 */
    if (d < -r || d >= r) return 0;
    *out = (uint32_t)(d < 0 ? d + r : d);
    return 1;
}

int mf_fp32_outputs_f32(const mf_call *c, uint32_t n_out) {
    if (c->n_out != n_out) return 0;
    for (uint32_t i = 0; i < n_out; i++) {
        mf_tensor o;
        mf_call_output(c, i, &o);
        if (o.dtype != MF_FLOAT32) return 0;
    }
    return 1;
}
