/*
 * aten_fp32: an fp32 fallback op, dispatched by its aten name (attribute 0) to the table in
 * kernels/fp32/aten_list.h. Arguments are the op's generic `args` (a LIST; TENSOR values are
 * indices into the op's inputs) and `kwargs` (a DICT). An aten name without an entry is
 * MF_ERR_UNSUPPORTED_OP at load time.
 */
#include "mf_kernel_util.h"

static const mf_aten_op *find(const mf_call *c) {
    uint32_t length;
    const char *target = mf_value_str(mf_attr(c, 0), &length);
    return mf_aten_find(target, length);
}

static mf_status check(const mf_call *c) {
    const mf_aten_op *op = find(c);
    if (op == NULL) return MF_ERR_UNSUPPORTED_OP;
    return op->check(c, mf_attr(c, 1), mf_attr(c, 2));
}

static mf_status run(const mf_call *c) {
    const mf_aten_op *op = find(c);
    if (op == NULL) return MF_ERR_UNSUPPORTED_OP;
    return op->run(c, mf_attr(c, 1), mf_attr(c, 2));
}

const mf_kernel mf_kernel_aten_fp32 = {40, "aten_fp32", 0, 255, 0, "saa", check, run};
