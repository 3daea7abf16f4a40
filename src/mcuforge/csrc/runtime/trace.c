/*
 * The trace stream (docs/trace.md, format 1.1): framed records, each `a5 5a type seq length payload
 * crc32`, written through the caller's sink. A sink with a `reserve` function may refuse op records
 * it has no room for: they are counted and reported by a DROPPED record before the next record
 * written. Built only with MF_TRACE; without it the two public entry points report MF_ERR_STATE and
 * nothing else exists.
 */
#include "mf_internal.h"
#include "mf_trace_internal.h"

enum {
    REC_STREAM_START = 1, REC_RUN_START = 2, REC_RUN_END = 3, REC_OP_START = 4, REC_OP_END = 5,
    REC_TENSOR = 6, REC_ALLOC = 7, REC_STREAM_END = 8, REC_DROPPED = 9
};

#if MF_TRACE

#define MAX_RECORD_PAYLOAD (1u << 24)
#define FRAMING_BYTES 12u /* header 8 + CRC 4 */
#define OP_RECORD_BYTES (FRAMING_BYTES + 16u)
#define DROPPED_RECORD_BYTES (FRAMING_BYTES + 8u)
#define FLAG_TENSORS 1u
#define FLAG_LOSSY 2u

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
    frame[3] = (uint8_t)t->record_count; /* sequence byte: records written before this one, mod 256 */
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

/* May `records` records of `nbytes` bytes be written? Always, without a reserve function. Else the
 * sink decides; a refused record is counted, and the next admitted one is preceded by a DROPPED
 * record (the sink is asked for room for both). */
static int admit(mf_trace_sink *t, uint32_t records, uint32_t nbytes, int wait) {
    if (t->reserve == NULL) return 1;
    const uint32_t report = t->dropped_pending ? DROPPED_RECORD_BYTES : 0u;
    if (t->reserve(t->user, (size_t)nbytes + report, wait)) {
        if (report) {
            uint8_t b[8];
            put_u32(b, t->dropped_pending);
            put_u32(b + 4, t->dropped_pending_bytes);
            t->dropped_pending = 0;
            t->dropped_pending_bytes = 0;
            record(t, REC_DROPPED, b, sizeof b, NULL, 0);
        }
        return 1;
    }
    t->dropped_pending += records;
    t->dropped_pending_bytes += nbytes;
    t->dropped_records += records;
    return 0;
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
    if (admit(t, 1, FRAMING_BYTES + sizeof b, 1)) record(t, REC_ALLOC, b, sizeof b, NULL, 0);
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
    t->dropped_pending = 0;
    t->dropped_pending_bytes = 0;
    t->dropped_records = 0;
    uint8_t b[16] = {0};
    b[0] = 1; /* version 1.1 */
    b[2] = 1;
    b[4] = t->time_unit;
    b[5] = (uint8_t)((t->full ? FLAG_TENSORS : 0u) | (t->reserve != NULL ? FLAG_LOSSY : 0u));
    put_u32(b + 8, p->payload_crc32);
    put_u32(b + 12, p->op_count);
    if (!admit(t, 1, FRAMING_BYTES + sizeof b, 1)) return MF_ERR_STATE;
    record(t, REC_STREAM_START, b, sizeof b, NULL, 0);
    alloc_record(t, 0, 0, 0, mf_program_arena_bytes(p), 0, p->op_count ? p->op_count - 1 : 0);
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        mf_tensor tensor;
        uint32_t first, last;
        mf_tensor_read(p, i, &tensor);
        if (tensor.flags & MF_TENSOR_FLAG_CONSTANT) continue;
        if (!lifetime(p, i, &first, &last)) continue;
        alloc_record(t, 1, i, tensor.offset, mf_tensor_extent(&tensor), first, last);
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
    if (!admit(t, 1, FRAMING_BYTES + sizeof b, 1)) return MF_ERR_STATE;
    put_u32(b, t->record_count); /* after admit: a DROPPED record it wrote is counted */
    record(t, REC_STREAM_END, b, sizeof b, NULL, 0);
    return MF_OK;
}

/* Run records may wait for room: readers rely on them to place ops after a gap. */
void mf_trace_run_start(mf_trace_sink *t, uint32_t run_index) {
    uint8_t b[12];
    put_u32(b, run_index);
    put_u64(b + 4, t->now(t->user));
    if (admit(t, 1, FRAMING_BYTES + sizeof b, 1)) record(t, REC_RUN_START, b, sizeof b, NULL, 0);
}

void mf_trace_run_end(mf_trace_sink *t, uint32_t run_index, mf_status status) {
    uint8_t b[16];
    put_u32(b, run_index);
    put_u64(b + 4, t->now(t->user));
    put_u32(b + 12, (uint32_t)status);
    if (admit(t, 1, FRAMING_BYTES + sizeof b, 1)) record(t, REC_RUN_END, b, sizeof b, NULL, 0);
    t->run_index = run_index + 1;
}

static void op_event_at(mf_trace_sink *t, uint8_t type, uint32_t op_index, uint64_t now) {
    uint8_t b[16];
    put_u32(b, op_index);
    put_u32(b + 4, op_index); /* debug_handle: the op index in format 1.0 */
    put_u64(b + 8, now);
    record(t, type, b, sizeof b, NULL, 0);
}

/* TENSOR records of op i's outputs (full mode), each waiting for room. */
static void op_tensors(mf_trace_sink *t, const mf_context *ctx, uint32_t op_index) {
    mf_call c;
    mf_call_read(ctx->program, op_index, &ctx->map, &c);
    for (uint32_t slot = 0; slot < c.n_out; slot++) {
        mf_tensor out;
        mf_call_output(&c, slot, &out);
        if (out.nbytes > MAX_RECORD_PAYLOAD - 16u) continue; /* beyond the record size limit */
        if (out.pitch != 0) continue; /* a slice of a concat's output (format 3.4): the concat's record has it */
        uint8_t b[16] = {0};
        put_u32(b, op_index);
        put_u32(b + 4, slot);
        put_u32(b + 8, out.index);
        b[12] = out.dtype;
        if (admit(t, 1, FRAMING_BYTES + sizeof b + out.nbytes, 1))
            record(t, REC_TENSOR, b, sizeof b, (const uint8_t *)out.data, out.nbytes);
    }
}

void mf_trace_op(mf_trace_sink *t, const mf_context *ctx, uint32_t op_index, uint64_t start, uint64_t end,
                 int ended) {
    if (!t->full) {
        /* Events: an op's OP_START and OP_END are kept or dropped together, never waited for. */
        const uint32_t records = ended ? 2u : 1u;
        if (!admit(t, records, records * OP_RECORD_BYTES, 0)) return;
        op_event_at(t, REC_OP_START, op_index, start);
        if (ended) op_event_at(t, REC_OP_END, op_index, end);
        return;
    }
    /* Full: every record waits for room (the op's times were read before any of them). */
    if (admit(t, 1, OP_RECORD_BYTES, 1)) op_event_at(t, REC_OP_START, op_index, start);
    if (!ended) return;
    op_tensors(t, ctx, op_index);
    if (admit(t, 1, OP_RECORD_BYTES, 1)) op_event_at(t, REC_OP_END, op_index, end);
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
