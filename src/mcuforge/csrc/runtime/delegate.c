/*
 * NPU delegate ops (kind 50, docs/ethos-u.md): a subgraph compiled by Vela for an Ethos-U.
 *
 * Inputs: input_count activations, then constant int8 1-D blobs: the command stream (Vela's "COP1"
 * driver payload), the weights (base pointer region 0) and optionally a TOSA flatbuffer (for host
 * checks; ignored here). The op's scratch buffer is Vela's scratch region (region 1): the NPU reads
 * its inputs and writes its outputs there, at input_offsets / output_offsets. The runtime never runs
 * the NPU itself: a board registers its driver (mf_delegate) with mf_init_delegate.
 */
#include "mf_internal.h"

/* Attributes, in kind order: npu, input_count, input_offsets, output_offsets, npu_cycles,
 * sram_bytes, flash_bytes, macs. */
enum { A_NPU = 0, A_INPUT_COUNT = 1, A_INPUT_OFFSETS = 2, A_OUTPUT_OFFSETS = 3 };

static int blob_ok(const mf_tensor *t) {
    return (t->flags & MF_TENSOR_FLAG_CONSTANT) && t->dtype == MF_INT8 && t->rank == 1;
}

static int io_fits(const mf_call *c, mf_value offsets, uint32_t i, const mf_tensor *t) {
    int64_t off;
    if (!mf_seq_int(offsets, i, &off) || off < 0) return 0;
    return (uint64_t)off + t->nbytes <= c->scratch_bytes;
}

static mf_status check(const mf_call *c) {
    const int32_t n_act = mf_value_int(mf_attr(c, A_INPUT_COUNT));
    uint32_t name_length = 0;
    if (n_act < 0 || (uint32_t)n_act + 2u > c->n_in || c->n_in - (uint32_t)n_act > 3u) return MF_ERR_FORMAT;
    mf_value_str(mf_attr(c, A_NPU), &name_length);
    if (name_length == 0) return MF_ERR_FORMAT;
    mf_value in_off = mf_attr(c, A_INPUT_OFFSETS), out_off = mf_attr(c, A_OUTPUT_OFFSETS);
    if (mf_seq_len(in_off) != (uint32_t)n_act || mf_seq_len(out_off) != c->n_out) return MF_ERR_FORMAT;
    for (uint32_t i = 0; i < c->n_in; i++) {
        mf_tensor t;
        if (!mf_call_input(c, i, &t)) return MF_ERR_FORMAT;
        if (i < (uint32_t)n_act) {
            if ((t.flags & MF_TENSOR_FLAG_CONSTANT) || !io_fits(c, in_off, i, &t)) return MF_ERR_BOUNDS;
        } else if (!blob_ok(&t)) {
            return MF_ERR_FORMAT;
        }
    }
    for (uint32_t i = 0; i < c->n_out; i++) {
        mf_tensor t;
        mf_call_output(c, i, &t);
        if (!io_fits(c, out_off, i, &t)) return MF_ERR_BOUNDS;
    }
    return MF_OK;
}

/* Never called through the table: the executor runs delegate ops with mf_delegate_run. */
static mf_status run(const mf_call *c) {
    (void)c;
    return MF_ERR_NO_DELEGATE;
}

static const mf_kernel delegate_kernel = {MF_KIND_HEAD_delegate, check, run};

const mf_kernel *mf_kernel_lookup(uint16_t kind) {
    return kind == MF_KIND_DELEGATE ? &delegate_kernel : mf_kernel_find(kind);
}

uint32_t mf_program_delegate_count(const mf_program *p) {
    uint32_t n = 0;
    if (p == NULL || p->data == NULL) return 0;
    for (uint32_t i = 0; i < p->op_count; i++) {
        mf_call c;
        mf_call_read(p, i, NULL, &c);
        n += c.kind == MF_KIND_DELEGATE;
    }
    return n;
}

static void delegate_call(const mf_call *c, mf_delegate_call *d) {
    mf_tensor cmd, weights;
    const uint32_t n_act = (uint32_t)mf_value_int(mf_attr(c, A_INPUT_COUNT));
    mf_call_input(c, n_act, &cmd);
    mf_call_input(c, n_act + 1u, &weights);
    mf_tensor_bind(c->prog, c->arena, &cmd);
    mf_tensor_bind(c->prog, c->arena, &weights);
    memset(d, 0, sizeof *d);
    d->op_index = c->op_index;
    d->npu = mf_value_str(mf_attr(c, A_NPU), NULL);
    d->command_stream = (const uint8_t *)cmd.data;
    d->command_stream_size = cmd.nbytes;
    d->weights = (const uint8_t *)weights.data;
    d->weights_size = weights.nbytes;
    d->scratch = c->scratch;
    d->scratch_size = c->scratch_bytes;
    d->base_addr[0] = (uint64_t)(uintptr_t)d->weights;
    d->base_addr_size[0] = d->weights_size;
    d->base_addr[1] = (uint64_t)(uintptr_t)d->scratch;
    d->base_addr_size[1] = d->scratch_size;
    d->base_addr[2] = (uint64_t)(uintptr_t)d->scratch; /* no fast scratch (Shared_Sram): size 0 */
    d->base_addr_size[2] = 0;
    d->num_base_addr = MF_DELEGATE_REGIONS;
}

static int npu_matches(const mf_delegate *d, const mf_call *c) {
    uint32_t length = 0;
    const char *npu = mf_value_str(mf_attr(c, A_NPU), &length);
    return d->npu == NULL || (strlen(d->npu) == length && memcmp(d->npu, npu, length) == 0);
}

/* The default for a board that says nothing about its NPU's reach: every address (the host, a board whose
 * NPU reaches all its RAM). Weak, so that a board's own definition replaces it at link time. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((weak))
#endif
int mf_board_npu_reaches(const void *address, size_t nbytes) {
    (void)address;
    (void)nbytes;
    return 1;
}

static int reaches(const void *address, size_t nbytes) {
    return nbytes == 0 || mf_board_npu_reaches(address, nbytes);
}

mf_status mf_delegate_reach(mf_context *ctx) {
    const mf_program *p = ctx->program;
    if (ctx->delegate == NULL) return MF_OK;
    for (uint32_t i = 0; i < p->op_count; i++) {
        mf_call c;
        mf_call_read(p, i, &ctx->map, &c);
        if (c.kind != MF_KIND_DELEGATE) continue;
        mf_delegate_call call;
        delegate_call(&c, &call); /* the addresses the driver would get; nothing is read or written */
        if (!reaches(call.scratch, call.scratch_size) || !reaches(call.command_stream, call.command_stream_size) ||
            !reaches(call.weights, call.weights_size)) {
            ctx->ready = 0;
            ctx->error_op = (int32_t)i;
            return ctx->error = MF_ERR_NPU_UNREACHABLE;
        }
    }
    return MF_OK;
}

mf_status mf_delegate_bind(mf_context *ctx) {
    const mf_program *p = ctx->program;
    for (uint32_t i = 0; i < p->op_count; i++) {
        mf_call c;
        mf_call_read(p, i, &ctx->map, &c);
        if (c.kind != MF_KIND_DELEGATE) continue;
        const mf_delegate *d = ctx->delegate;
        mf_status s = MF_OK;
        if (d == NULL || d->execute == NULL || !npu_matches(d, &c)) {
            s = MF_ERR_NO_DELEGATE;
        } else if (d->init != NULL) {
            mf_delegate_call call;
            delegate_call(&c, &call);
            s = d->init(d->user, &call);
        }
        if (s != MF_OK) {
            ctx->ready = 0;
            ctx->error_op = (int32_t)i;
            return ctx->error = s;
        }
    }
    return MF_OK;
}

mf_status mf_delegate_run(mf_context *ctx, const mf_call *c) {
    const mf_delegate *d = ctx->delegate;
    if (d == NULL || d->execute == NULL) return MF_ERR_NO_DELEGATE;
    const uint32_t n_act = (uint32_t)mf_value_int(mf_attr(c, A_INPUT_COUNT));
    mf_value in_off = mf_attr(c, A_INPUT_OFFSETS), out_off = mf_attr(c, A_OUTPUT_OFFSETS);
    for (uint32_t i = 0; i < n_act; i++) {
        mf_tensor t;
        int64_t off = 0;
        mf_call_input(c, i, &t);
        mf_tensor_bind(c->prog, c->arena, &t);
        mf_seq_int(in_off, i, &off);
        if (t.nbytes) memcpy(c->scratch + off, t.data, t.nbytes);
    }
    mf_delegate_call call;
    delegate_call(c, &call);
    mf_status s = d->execute(d->user, &call);
    if (s != MF_OK) return s;
    for (uint32_t i = 0; i < c->n_out; i++) {
        mf_tensor t;
        int64_t off = 0;
        mf_call_output(c, i, &t);
        mf_tensor_bind(c->prog, c->arena, &t);
        mf_seq_int(out_off, i, &off);
        if (t.nbytes) memmove(t.data, c->scratch + off, t.nbytes);
    }
    return MF_OK;
}
