/* Trace record writers used by the executor (docs/trace.md); only built with MF_TRACE. */
#ifndef MF_TRACE_INTERNAL_H
#define MF_TRACE_INTERNAL_H

#include "mcuforge.h"

#if MF_TRACE
void mf_trace_run_start(mf_trace_sink *t, uint32_t run_index);
void mf_trace_run_end(mf_trace_sink *t, uint32_t run_index, mf_status status);
void mf_trace_op_start(mf_trace_sink *t, uint32_t op_index);
/* OP_END with a time read before the op's TENSOR records were written: dumping outputs is not op time. */
void mf_trace_op_end_at(mf_trace_sink *t, uint32_t op_index, uint64_t end);
/* TENSOR records of op i's outputs, in full mode. */
void mf_trace_op_tensors(mf_trace_sink *t, const mf_context *ctx, uint32_t op_index);
#endif

#endif /* MF_TRACE_INTERNAL_H */
