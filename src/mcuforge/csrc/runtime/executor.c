/*
 * mf_init / mf_set_input / mf_invoke / mf_output: run a loaded program op by op in the caller's
 * arena. Every op was checked against its kernel at load time, so a kernel's run function only
 * computes; a status it returns still stops the run and names the op.
 */
#include "mf_internal.h"
#include "mf_trace_internal.h"

/* Where the kernels read the constants: in place in the program file, or (format 3.3) a copy in the arena
 * bytes the planner reserved for it. Only the address here: copy_constants writes the copy once the buffers
 * have passed every check. */
static void bind_constants(mf_context *ctx) {
    const mf_program *p = ctx->program;
    ctx->map.constants = p->constants_in_ram ? mf_arena_at(&ctx->map, p->constants_at)
                                             : p->data + p->constants_offset;
}

static void copy_constants(mf_context *ctx) {
    const mf_program *p = ctx->program;
    if (p->constants_in_ram && p->constants_size) {
        memcpy(mf_arena_at(&ctx->map, p->constants_at), p->data + p->constants_offset, p->constants_size);
    }
}

mf_status mf_init(mf_context *ctx, const mf_program *p, uint8_t *arena, size_t arena_size) {
    return mf_init_delegate(ctx, p, arena, arena_size, NULL);
}

mf_status mf_init_delegate(mf_context *ctx, const mf_program *p, uint8_t *arena, size_t arena_size,
                           const mf_delegate *delegate) {
    if (ctx == NULL) return MF_ERR_ARG;
    memset(ctx, 0, sizeof *ctx);
    ctx->error_op = -1;
    if (p == NULL || p->data == NULL) return ctx->error = MF_ERR_STATE;
    if (arena == NULL && mf_program_arena_bytes(p) > 0) return ctx->error = MF_ERR_ARG;
    if ((uintptr_t)arena & 15u) return ctx->error = MF_ERR_ARG;
    if (arena_size < mf_program_arena_bytes(p)) return ctx->error = MF_ERR_ARENA_TOO_SMALL;
    ctx->program = p;
    ctx->arena = arena;
    ctx->arena_size = arena_size;
    ctx->map.count = 1; /* a program with regions too: they lie end to end in this one buffer */
    ctx->map.base[0] = arena;
    ctx->delegate = delegate;
    bind_constants(ctx);
    /* the NPU's buffers checked before the arena is written: a refused call leaves it untouched */
    if (mf_delegate_reach(ctx) != MF_OK) return ctx->error;
    if (arena != NULL) memset(arena, 0, mf_program_arena_bytes(p));
    copy_constants(ctx);
    ctx->ready = 1;
    return mf_delegate_bind(ctx); /* MF_ERR_NO_DELEGATE (and not ready) if NPU ops have no driver */
}

mf_status mf_init_regions(mf_context *ctx, const mf_program *p, uint8_t *const *buffers, const size_t *sizes,
                          uint32_t count) {
    return mf_init_regions_delegate(ctx, p, buffers, sizes, count, NULL);
}

mf_status mf_init_regions_delegate(mf_context *ctx, const mf_program *p, uint8_t *const *buffers,
                                   const size_t *sizes, uint32_t count, const mf_delegate *delegate) {
    if (ctx == NULL) return MF_ERR_ARG;
    if (p == NULL || p->data == NULL) {
        memset(ctx, 0, sizeof *ctx);
        ctx->error_op = -1;
        return ctx->error = MF_ERR_STATE;
    }
    uint32_t regions = p->region_count ? p->region_count : 1u;
    if (count != regions || buffers == NULL || sizes == NULL) {
        memset(ctx, 0, sizeof *ctx);
        ctx->error_op = -1;
        return ctx->error = MF_ERR_ARG;
    }
    if (p->region_count == 0) return mf_init_delegate(ctx, p, buffers[0], sizes[0], delegate);
    /* every buffer checked before any is written: a refused call leaves them untouched */
    for (uint32_t k = 0; k < count; k++) {
        mf_status s = MF_OK;
        if (buffers[k] == NULL || ((uintptr_t)buffers[k] & 15u)) s = MF_ERR_ARG;
        else if (sizes[k] < p->region_bytes[k]) s = MF_ERR_ARENA_TOO_SMALL;
        if (s != MF_OK) {
            memset(ctx, 0, sizeof *ctx);
            ctx->error_op = -1;
            return ctx->error = s;
        }
    }
    memset(ctx, 0, sizeof *ctx);
    ctx->error_op = -1;
    ctx->program = p;
    ctx->arena = buffers[0];
    ctx->arena_size = sizes[0];
    ctx->map.count = count;
    for (uint32_t k = 0; k < count; k++) {
        ctx->map.base[k] = buffers[k];
        ctx->map.start[k] = p->region_start[k];
    }
    ctx->delegate = delegate;
    bind_constants(ctx);
    if (mf_delegate_reach(ctx) != MF_OK) return ctx->error; /* before any buffer is written */
    for (uint32_t k = 0; k < count; k++) memset(buffers[k], 0, p->region_bytes[k]);
    copy_constants(ctx);
    ctx->ready = 1;
    return mf_delegate_bind(ctx); /* MF_ERR_NO_DELEGATE (and not ready) if NPU ops have no driver */
}

mf_status mf_set_input(mf_context *ctx, uint32_t i, const void *data, size_t nbytes) {
    if (ctx == NULL) return MF_ERR_ARG;
    if (!ctx->ready) return ctx->error = MF_ERR_STATE;
    const mf_program *p = ctx->program;
    if (i >= p->input_count || (data == NULL && nbytes > 0)) return ctx->error = MF_ERR_ARG;
    mf_tensor t;
    mf_tensor_read(p, (uint32_t)mf_index_entry(p, p->inputs_start + i), &t);
    if (nbytes != t.nbytes) return ctx->error = MF_ERR_ARG;
    if (nbytes) memcpy(mf_arena_at(&ctx->map, t.offset), data, nbytes);
    return MF_OK;
}

static mf_status run_op(mf_context *ctx, uint32_t i) {
    mf_call c;
    mf_call_read(ctx->program, i, &ctx->map, &c);
    if (c.kind == MF_KIND_DELEGATE) return mf_delegate_run(ctx, &c);
    const mf_kernel *k = mf_kernel_find(c.kind);
    return k ? k->run(&c) : MF_ERR_UNSUPPORTED_OP;
}

/* The two op loops are functions of their own (not inlined into mf_invoke), so that the untraced one
 * compiles to the same instructions whether tracing is compiled in or not (tests/test_trace_cost.py). */
#if defined(__GNUC__)
#define MF_NOINLINE __attribute__((noinline))
#else
#define MF_NOINLINE
#endif

/* Every op in order: an untraced mf_invoke. */
MF_NOINLINE static mf_status run_ops(mf_context *ctx) {
    const mf_program *p = ctx->program;
    for (uint32_t i = 0; i < p->op_count; i++) {
        const mf_status s = run_op(ctx, i);
        if (s != MF_OK) {
            ctx->error_op = (int32_t)i;
            return s;
        }
    }
    return MF_OK;
}

#if MF_TRACE
/* Every op in order, timed around its kernel alone; its trace records are written after it, so the
 * sink's cost is not in the op's time. */
MF_NOINLINE static mf_status run_ops_traced(mf_context *ctx, mf_trace_sink *trace) {
    const mf_program *p = ctx->program;
    mf_status s = MF_OK;
    uint32_t run = trace->run_index;
    mf_trace_run_start(trace, run);
    for (uint32_t i = 0; i < p->op_count && s == MF_OK; i++) {
        const uint64_t start = trace->now(trace->user);
        s = run_op(ctx, i);
        const uint64_t end = trace->now(trace->user);
        if (s != MF_OK) ctx->error_op = (int32_t)i;
        mf_trace_op(trace, ctx, i, start, end, s == MF_OK);
    }
    mf_trace_run_end(trace, run, s);
    return s;
}
#endif

mf_status mf_invoke(mf_context *ctx, mf_trace_sink *trace) {
    if (ctx == NULL) return MF_ERR_ARG;
    if (!ctx->ready) return ctx->error = MF_ERR_STATE;
    ctx->error_op = -1;
#if MF_TRACE
    if (trace != NULL) {
        if (trace->write == NULL || trace->now == NULL) return ctx->error = MF_ERR_ARG;
        return ctx->error = run_ops_traced(ctx, trace);
    }
#else
    (void)trace; /* compiled out: the sink is not even looked at */
#endif
    return ctx->error = run_ops(ctx);
}

const void *mf_output(const mf_context *ctx, uint32_t i, size_t *nbytes) {
    if (nbytes) *nbytes = 0;
    if (ctx == NULL || !ctx->ready || i >= ctx->program->output_count) return NULL;
    const mf_program *p = ctx->program;
    mf_tensor t;
    mf_tensor_read(p, (uint32_t)mf_index_entry(p, p->outputs_start + i), &t);
    mf_tensor_bind(p, &ctx->map, &t);
    if (nbytes) *nbytes = t.nbytes;
    return t.data;
}
