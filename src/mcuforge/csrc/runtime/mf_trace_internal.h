/* Trace record writers used by the executor (docs/trace.md); only built with MF_TRACE. */
#ifndef MF_TRACE_INTERNAL_H
#define MF_TRACE_INTERNAL_H

#include "mcuforge.h"

#if MF_TRACE
void mf_trace_run_start(mf_trace_sink *t, uint32_t run_index);
void mf_trace_run_end(mf_trace_sink *t, uint32_t run_index, mf_status status);
/* An op's records, written after it ran: OP_START at `start`, in full mode a TENSOR per output, and
 * OP_END at `end` (ended 1), or only its OP_START when it failed (ended 0). Nothing is written
 * between the two time reads, so an op's time is its kernel's whatever the sink costs. */
void mf_trace_op(mf_trace_sink *t, const mf_context *ctx, uint32_t op_index, uint64_t start, uint64_t end,
                 int ended);
#endif

#endif /* MF_TRACE_INTERNAL_H */
