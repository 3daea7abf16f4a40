/*
 * libFuzzer harness: the C runtime's whole path, mf_program_load -> mf_init -> mf_set_input ->
 * mf_invoke (traced) -> mf_output, on any bytes. Built with clang -fsanitize=fuzzer,address,undefined
 * (mcuforge.fuzz.build_fuzzer); docs/fuzzing.md says how to run it.
 *
 * Each input is tried twice: as it is (so the CRC checks are exercised), then with both CRCs
 * recomputed (so that mutations reach the structural checks, the kernels' checks and the kernels
 * themselves instead of stopping at a CRC mismatch). The program and the arena are heap blocks of
 * exactly their size, so AddressSanitizer reports any read past the file or write past the arena.
 *
 * Besides "no crash", the harness asserts the runtime's guards (abort() is a finding):
 *  - mf_program_load returns a known status; a failed load leaves nothing usable;
 *  - an arena one byte smaller than mf_program_arena_bytes() is MF_ERR_ARENA_TOO_SMALL and not one
 *    byte of it is written;
 *  - an input of the wrong size (one byte more or less) is MF_ERR_ARG;
 *  - mf_invoke returns a known status; the trace stream it writes is framed record by record.
 */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcuforge.h"
#include "mf_internal.h"

/* Programs whose arena exceeds this are only loaded, not run: a valid program may legitimately
 * ask for more RAM (and time) than a fuzzer should spend on one input. */
#define MAX_ARENA (1u << 20)
#define MAX_TRACE_PAYLOAD (1u << 24)

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_program: guard violated: %s\n", what);
        abort();
    }
}

static void *alloc_exact(size_t n) {
    void *p = NULL;
    /* exactly n bytes (ASan's redzone starts right after), 16-byte aligned as the runtime requires */
    return posix_memalign(&p, 16, n ? n : 1) == 0 ? p : NULL;
}

/* ---- a trace sink that checks the stream's framing as it arrives (docs/trace.md) ---- */
typedef struct {
    uint8_t frame[8];
    uint32_t have;      /* bytes of the current record's 8-byte frame received */
    uint64_t left;      /* payload + CRC bytes of the current record still to come */
    uint64_t bytes, records;
    uint64_t clock;
} trace_check;

static void trace_write(void *user, const uint8_t *bytes, size_t n) {
    trace_check *t = (trace_check *)user;
    require(bytes != NULL || n == 0, "trace write of NULL bytes");
    t->bytes += n;
    for (size_t i = 0; i < n;) {
        if (t->left > 0) {
            size_t take = (size_t)(t->left < n - i ? t->left : n - i);
            volatile uint8_t sink = bytes[i + take - 1]; /* ASan: the runtime's pointer covers them */
            (void)sink;
            t->left -= take;
            i += take;
            continue;
        }
        t->frame[t->have++] = bytes[i++];
        if (t->have == 8) {
            require(t->frame[0] == 0xA5 && t->frame[1] == 0x5A, "trace record sync");
            require(t->frame[3] == (uint8_t)t->records, "trace record sequence"); /* records before it, mod 256 */
            uint32_t length = mf_rd_u32(t->frame + 4);
            require(length <= MAX_TRACE_PAYLOAD, "trace record length");
            t->left = (uint64_t)length + 4u;
            t->have = 0;
            t->records++;
        }
    }
}

static uint64_t trace_now(void *user) { return ++((trace_check *)user)->clock; }

/* ---- a stand-in NPU driver: touches every region it is given, as a real one would ---- */
static mf_status npu_touch(void *user, const mf_delegate_call *call) {
    (void)user;
    volatile uint32_t sum = 0;
    for (size_t i = 0; i < call->command_stream_size; i++) sum += call->command_stream[i];
    for (size_t i = 0; i < call->weights_size; i++) sum += call->weights[i];
    for (size_t i = 0; i < call->scratch_size; i++) call->scratch[i] = (uint8_t)(call->scratch[i] + 1u);
    (void)sum;
    return MF_OK;
}

static const mf_delegate fake_npu = {NULL, NULL, npu_touch, npu_touch};

static int known_status(mf_status s) { return (unsigned)s <= (unsigned)MF_ERR_NPU_UNREACHABLE; }

static void run_program(const mf_program *p, const uint8_t *seed, size_t seed_n) {
    const uint32_t need = mf_program_arena_bytes(p);
    if (need > MAX_ARENA) return;
    uint8_t *arena = (uint8_t *)alloc_exact(need);
    require(arena != NULL, "arena allocation");
    mf_context ctx;
    if (need > 0) { /* a short arena is refused before any write */
        memset(arena, 0xA5, need);
        require(mf_init(&ctx, p, arena, need - 1u) == MF_ERR_ARENA_TOO_SMALL, "short arena refused");
        for (uint32_t i = 0; i < need; i++) require(arena[i] == 0xA5, "short arena left untouched");
    }
    mf_status s = mf_init_delegate(&ctx, p, arena, need, &fake_npu);
    require(known_status(s), "mf_init status");
    if (s != MF_OK) {
        free(arena);
        return;
    }
    for (uint32_t i = 0; i < mf_program_input_count(p); i++) {
        mf_tensor_info info;
        require(mf_program_input(p, i, &info) == MF_OK, "input info");
        uint8_t *value = (uint8_t *)alloc_exact((size_t)info.nbytes + 1u);
        require(value != NULL, "input allocation");
        for (uint32_t k = 0; k <= info.nbytes; k++) value[k] = seed_n ? seed[(k * 7u + i) % seed_n] : (uint8_t)k;
        require(mf_set_input(&ctx, i, value, (size_t)info.nbytes + 1u) == MF_ERR_ARG, "oversized input refused");
        if (info.nbytes > 0) {
            require(mf_set_input(&ctx, i, value, info.nbytes - 1u) == MF_ERR_ARG, "undersized input refused");
        }
        require(mf_set_input(&ctx, i, value, info.nbytes) == MF_OK, "input of the right size");
        free(value);
    }
    trace_check check;
    memset(&check, 0, sizeof check);
    mf_trace_sink sink;
    memset(&sink, 0, sizeof sink);
    sink.write = trace_write;
    sink.now = trace_now;
    sink.user = &check;
    sink.full = (uint8_t)(seed_n & 1u);
    require(mf_trace_begin(&sink, &ctx) == MF_OK, "trace begin");
    s = mf_invoke(&ctx, &sink);
    require(known_status(s), "mf_invoke status");
    require(mf_trace_end(&sink) == MF_OK, "trace end");
    require(check.have == 0 && check.left == 0, "trace stream ends on a record boundary");
    require(check.records == sink.record_count, "trace records counted");
    if (s == MF_OK) {
        for (uint32_t i = 0; i < mf_program_output_count(p); i++) {
            size_t n = 0;
            const volatile uint8_t *out = (const volatile uint8_t *)mf_output(&ctx, i, &n);
            require(out != NULL || n == 0, "output pointer");
            uint8_t acc = 0;
            for (size_t k = 0; k < n; k++) acc ^= out[k];
            (void)acc;
        }
    }
    free(arena);
}

static void try_program(const uint8_t *data, size_t size) {
    mf_program p;
    mf_status s = mf_program_load(&p, data, size);
    require(known_status(s), "mf_program_load status");
    if (s != MF_OK) {
        require(mf_program_arena_bytes(&p) == 0 && mf_program_op_count(&p) == 0, "rejected program unusable");
        return;
    }
    for (uint32_t i = 0; i < mf_program_tensor_count(&p); i++) {
        mf_tensor_info info;
        require(mf_program_tensor(&p, i, &info) == MF_OK, "tensor info");
        /* the length is authoritative (a name may hold a NUL); the byte after it is a NUL */
        require(info.name[info.name_length] == '\0', "tensor name NUL-terminated at its length");
    }
    for (uint32_t i = 0; i < mf_program_op_count(&p); i++) {
        require(mf_program_op_kind(&p, i)[0] != '?', "op kind of a loaded program");
        (void)strlen(mf_program_op_target(&p, i));
    }
    run_program(&p, data, size);
}

static void put_u32(uint8_t *b, uint32_t v) {
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}

/* Recompute the payload CRC and the header CRC from the header's own sizes (when they are sane). */
static int fix_crcs(uint8_t *d, size_t size) {
    if (size < 128) return 0;
    uint32_t header_size = mf_rd_u32(d + 8), file_size = mf_rd_u32(d + 12);
    if (header_size < 128 || header_size > size || header_size % 4) header_size = 128;
    if (file_size < header_size || file_size > size) file_size = (uint32_t)size;
    uint32_t crc = mf_crc32_update(0, d + header_size, file_size - header_size);
    put_u32(d + 16, crc);
    static const uint8_t zero[4] = {0, 0, 0, 0};
    crc = mf_crc32_update(0, d, 104);
    crc = mf_crc32_update(crc, zero, 4);
    crc = mf_crc32_update(crc, d + 108, header_size - 108u);
    put_u32(d + 104, crc);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = (uint8_t *)alloc_exact(size);
    if (buf == NULL) return 0;
    if (size) memcpy(buf, data, size);
    try_program(buf, size);
    if (fix_crcs(buf, size) && memcmp(buf, data, size) != 0) try_program(buf, size);
    free(buf);
    return 0;
}
