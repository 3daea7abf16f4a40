/*
 * The trace stream (docs/trace.md): framed records, each `a5 5a type 0 length payload crc32`,
 * written through the caller's sink. Built only with MF_TRACE; without it the two public entry
 * points report MF_ERR_STATE and nothing else exists.
 */
#include "mf_internal.h"
#include "mf_trace_internal.h"

enum {
    REC_STREAM_START = 1, REC_RUN_START = 2, REC_RUN_END = 3, REC_OP_START = 4, REC_OP_END = 5,
    REC_TENSOR = 6, REC_ALLOC = 7, REC_STREAM_END = 8
};

#if MF_TRACE

#define MAX_RECORD_PAYLOAD (1u << 24)

static void put_u32(uint8_t *b, uint32_t v) {
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)(v >> 16);
    b[3] = (uint8_t)(v >> 24);
}

static void put_u64(uint8_t *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b + 4, (uint32_t)(v >> 32));
}

/* One record: the fixed payload `head` (head_n bytes) followed by `body` (body_n bytes, may be
 * NULL), written in pieces so that a tensor's bytes go straight from the arena to the sink. */
static void record(mf_trace_sink *t, uint8_t type, const uint8_t *head, uint32_t head_n,
                   const uint8_t *body, uint32_t body_n) {
    uint8_t frame[8];
    uint8_t crc_bytes[4];
    frame[0] = 0xA5;
    frame[1] = 0x5A;
    frame[2] = type;
    frame[3] = 0;
    put_u32(frame + 4, head_n + body_n);
    uint32_t crc = mf_crc32_update(0, frame + 2, 6);
    crc = mf_crc32_update(crc, head, head_n);
    if (body_n) crc = mf_crc32_update(crc, body, body_n);
    put_u32(crc_bytes, crc);
    t->write(t->user, frame, 8);
    t->write(t->user, head, head_n);
    if (body_n) t->write(t->user, body, body_n);
    t->write(t->user, crc_bytes, 4);
    t->record_count++;
}

static void alloc_record(mf_trace_sink *t, uint8_t kind, uint32_t id, uint32_t offset, uint32_t size,
                         uint32_t first_op, uint32_t last_op) {
    uint8_t b[24] = {0};
    b[0] = kind;
    put_u32(b + 4, id);
    put_u32(b + 8, offset);
    put_u32(b + 12, size);
    put_u32(b + 16, first_op);
    put_u32(b + 20, last_op);
    record(t, REC_ALLOC, b, sizeof b, NULL, 0);
}

/* First and last op touching activation `tensor` (graph inputs live from op 0, outputs to the
 * last op); 0 if no op or graph I/O list names it. */
static int lifetime(const mf_program *p, uint32_t tensor, uint32_t *first, uint32_t *last) {
    uint32_t lo = 0xFFFFFFFFu, hi = 0;
    for (uint32_t i = 0; i < p->op_count; i++) {
        mf_call c;
        mf_call_read(p, i, NULL, &c);
        for (uint32_t j = 0; j < c.n_in + c.n_out; j++) {
            uint32_t entry = j < c.n_in ? c.in_start + j : c.out_start + (j - c.n_in);
            if (mf_index_entry(p, entry) == (int32_t)tensor) {
                if (i < lo) lo = i;
                if (i > hi) hi = i;
            }
        }
    }
    for (uint32_t j = 0; j < p->input_count; j++) {
        if (mf_index_entry(p, p->inputs_start + j) == (int32_t)tensor) lo = 0;
    }
    for (uint32_t j = 0; j < p->output_count; j++) {
        if (mf_index_entry(p, p->outputs_start + j) == (int32_t)tensor) {
            hi = p->op_count ? p->op_count - 1 : 0;
            if (lo == 0xFFFFFFFFu) lo = hi;
        }
    }
    if (lo == 0xFFFFFFFFu) return 0;
    *first = lo;
    *last = hi < lo ? lo : hi;
    return 1;
}

mf_status mf_trace_begin(mf_trace_sink *t, const mf_context *ctx) {
    if (t == NULL || t->write == NULL || t->now == NULL || ctx == NULL || !ctx->ready) return MF_ERR_ARG;
    const mf_program *p = ctx->program;
    t->record_count = 0;
    t->run_index = 0;
    uint8_t b[16] = {0};
    b[0] = 1; /* version 1.0 */
    b[4] = t->time_unit;
    b[5] = t->full ? 1 : 0;
    put_u32(b + 8, p->payload_crc32);
    put_u32(b + 12, p->op_count);
    record(t, REC_STREAM_START, b, sizeof b, NULL, 0);
    alloc_record(t, 0, 0, 0, mf_program_arena_bytes(p), 0, p->op_count ? p->op_count - 1 : 0);
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        mf_tensor tensor;
        uint32_t first, last;
        mf_tensor_read(p, i, &tensor);
        if (tensor.flags & MF_TENSOR_FLAG_CONSTANT) continue;
        if (!lifetime(p, i, &first, &last)) continue;
        alloc_record(t, 1, i, tensor.offset, tensor.nbytes, first, last);
    }
    for (uint32_t i = 0; i < p->op_count; i++) { /* each op's scratch buffer, live during its op */
        mf_call c;
        mf_call_read(p, i, NULL, &c);
        if (c.scratch_bytes) alloc_record(t, 2, i, c.scratch_offset, c.scratch_bytes, i, i);
    }
    return MF_OK;
}

mf_status mf_trace_end(mf_trace_sink *t) {
    if (t == NULL || t->write == NULL) return MF_ERR_ARG;
    uint8_t b[4];
    put_u32(b, t->record_count);
    record(t, REC_STREAM_END, b, sizeof b, NULL, 0);
    return MF_OK;
}

void mf_trace_run_start(mf_trace_sink *t, uint32_t run_index) {
    uint8_t b[12];
    put_u32(b, run_index);
    put_u64(b + 4, t->now(t->user));
    record(t, REC_RUN_START, b, sizeof b, NULL, 0);
}

void mf_trace_run_end(mf_trace_sink *t, uint32_t run_index, mf_status status) {
    uint8_t b[16];
    put_u32(b, run_index);
    put_u64(b + 4, t->now(t->user));
    put_u32(b + 12, (uint32_t)status);
    record(t, REC_RUN_END, b, sizeof b, NULL, 0);
    t->run_index = run_index + 1;
}

static void op_event_at(mf_trace_sink *t, uint8_t type, uint32_t op_index, uint64_t now) {
    uint8_t b[16];
    put_u32(b, op_index);
    put_u32(b + 4, op_index); /* debug_handle: the op index in format 1.0 */
    put_u64(b + 8, now);
    record(t, type, b, sizeof b, NULL, 0);
}

void mf_trace_op_start(mf_trace_sink *t, uint32_t op_index) {
    op_event_at(t, REC_OP_START, op_index, t->now(t->user));
}

void mf_trace_op_end_at(mf_trace_sink *t, uint32_t op_index, uint64_t end) {
    op_event_at(t, REC_OP_END, op_index, end);
}

void mf_trace_op_tensors(mf_trace_sink *t, const mf_context *ctx, uint32_t op_index) {
    if (!t->full) return;
    mf_call c;
    mf_call_read(ctx->program, op_index, ctx->arena, &c);
    for (uint32_t slot = 0; slot < c.n_out; slot++) {
        mf_tensor out;
        mf_call_output(&c, slot, &out);
        if (out.nbytes > MAX_RECORD_PAYLOAD - 16u) continue; /* beyond the record size limit */
        uint8_t b[16] = {0};
        put_u32(b, op_index);
        put_u32(b + 4, slot);
        put_u32(b + 8, out.index);
        b[12] = out.dtype;
        record(t, REC_TENSOR, b, sizeof b, (const uint8_t *)out.data, out.nbytes);
    }
}

#else /* !MF_TRACE */

mf_status mf_trace_begin(mf_trace_sink *t, const mf_context *ctx) {
    (void)t;
    (void)ctx;
    return MF_ERR_STATE;
}

mf_status mf_trace_end(mf_trace_sink *t) {
    (void)t;
    return MF_ERR_STATE;
}

#endif
