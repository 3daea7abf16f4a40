/*
 * aten_fp32: an fp32 fallback op, dispatched by its table index (attribute 3: the position of its
 * aten op in kernels/fp32/aten_list.h, sorted by name) -- one array read per run. The load-time check
 * requires the entry's aten name to be the op's (attribute 0), so a program compiled against another
 * table is MF_ERR_UNSUPPORTED_OP, never the wrong op. Arguments are the op's generic `args` (a LIST;
 * TENSOR values are indices into the op's inputs) and `kwargs` (a DICT).
 */
#include "mf_kernel_util.h"

enum { A_TARGET, A_ARGS, A_KWARGS, A_TABLE_INDEX };

static mf_status check(const mf_call *c) {
    const mf_aten_op *op = mf_aten_at(mf_attr_int(c, A_TABLE_INDEX));
    if (op == NULL || !mf_value_is_str(mf_attr(c, A_TARGET), op->target)) return MF_ERR_UNSUPPORTED_OP;
    return op->check(c, mf_attr(c, A_ARGS), mf_attr(c, A_KWARGS));
}

static mf_status run(const mf_call *c) {
    const mf_aten_op *op = mf_aten_at(mf_attr_int(c, A_TABLE_INDEX)); /* checked at load */
    return op->run(c, mf_attr(c, A_ARGS), mf_attr(c, A_KWARGS));
}

const mf_kernel mf_kernel_aten_fp32 = {MF_KIND_HEAD_aten_fp32, check, run};
