/* The test firmware: runs one program on an emulated board, with everything exchanged through
 * host files over semihosting (firmware.h), so that one build per board runs every model.
 *
 *   run.cfg, program.mfp, input<i>.bin  ->  mf_program_load, mf_init, mf_set_input, mf_invoke
 *   ->  output<i>.bin, trace.bin (or the trace on UART0), result.bin (status, instructions, stack)
 *
 * Instructions are counted with SysTick under QEMU -icount (board/mf_timer.h); the trace's clock is
 * the MF_TIMER source the firmware was built with.
 */
#include <string.h>

#include "cmsdk_uart.h"
#include "firmware.h"
#include "mcuforge.h"
#include "mf_timer.h"
#include "mf_trace_uart.h"
#include "semihost.h"

#define icount_now mf_icount_now


extern uint32_t _sstack, _estack, _sheap, _eheap;

static fw_result result;
static uint8_t *heap_next;

/* A bump allocator over the board's HEAP region, 16-byte aligned (the runtime's requirement). */
static uint8_t *heap_take(uint32_t n) {
    uintptr_t at = ((uintptr_t)heap_next + 15u) & ~(uintptr_t)15u;
    if (at + n > (uintptr_t)&_eheap || at + n < at) return NULL;
    heap_next = (uint8_t *)(at + n);
    return (uint8_t *)at;
}

static void copy_text(char *dst, size_t size, const char *src) {
    strncpy(dst, src, size - 1);
    dst[size - 1] = '\0';
}

static int fail(uint32_t stage, int32_t status, const char *message) {
    result.stage = stage;
    result.status = status;
    copy_text(result.status_name, sizeof result.status_name,
              status > 0 ? mf_status_name((mf_status)status) : "FW_ERROR");
    copy_text(result.message, sizeof result.message, message);
    return FW_EXIT_FAILED;
}

/* Reads a whole host file into the heap; NULL if it is missing or the heap is too small. */
static uint8_t *read_file(const char *name, uint32_t *size) {
    int32_t fd = sh_open(name, "rb");
    if (fd < 0) return NULL;
    int32_t length = sh_flen(fd);
    uint8_t *buf = length >= 0 ? heap_take((uint32_t)length) : NULL;
    if (buf != NULL && length > 0 && sh_read(fd, buf, (size_t)length) != 0) buf = NULL;
    sh_close(fd);
    *size = (uint32_t)length;
    return buf;
}

/* "<prefix><i><suffix>": the numbered input and output files (no printf on the board). */
static void numbered_name(char *out, const char *prefix, uint32_t i, const char *suffix) {
    char digits[10];
    int n = 0;
    do { digits[n++] = (char)('0' + i % 10u); i /= 10u; } while (i > 0);
    while (*prefix) *out++ = *prefix++;
    while (n > 0) *out++ = digits[--n];
    while (*suffix) *out++ = *suffix++;
    *out = '\0';
}

static int write_file(const char *name, const void *data, size_t n) {
    int32_t fd = sh_open(name, "wb");
    if (fd < 0) return -1;
    int32_t left = n > 0 ? sh_write(fd, data, n) : 0;
    sh_close(fd);
    return left == 0 ? 0 : -1;
}

#if MF_TRACE
/* The trace goes to a RAM buffer and reaches the host file when the buffer is full: a semihosting
 * call per record would be slow, and the time between two records must be the runtime's own.
 * The buffer never overflows: a full buffer is written out first. If writing fails (the host file is
 * gone or the disk full), the rest of the stream is dropped and counted, never written over the
 * buffer, so the file holds an intact prefix (the reader flags it truncated) and result.bin says how
 * many bytes were lost. */
typedef struct {
    int32_t fd;
    uint8_t *buf;
    uint32_t used, capacity, total, dropped;
    int failed;
} trace_file;

static void trace_flush(trace_file *t) {
    if (t->used > 0 && !t->failed && sh_write(t->fd, t->buf, t->used) != 0) {
        t->failed = 1;
        t->dropped += t->used;
    }
    t->used = 0;
}

static void trace_write(void *user, const uint8_t *bytes, size_t n) {
    trace_file *t = (trace_file *)user;
    t->total += (uint32_t)n;
    while (n > 0 && !t->failed) {
        if (t->used == t->capacity) trace_flush(t);
        if (t->failed) break;
        size_t room = t->capacity - t->used, take = n < room ? n : room;
        memcpy(t->buf + t->used, bytes, take);
        t->used += (uint32_t)take;
        bytes += take;
        n -= take;
    }
    t->dropped += (uint32_t)n; /* what is left after a failed write */
}

static int start_trace(mf_trace_sink *sink, const mf_context *ctx) {
    return mf_timer_start() == 0 && mf_trace_begin(sink, ctx) == MF_OK;
}
#endif

/* Exactly 10 instructions per iteration on every core (8 nops, subs, bne): checks that
 * icount_now() counts instructions, since SysTick only counts clock ticks. The cost of reading the
 * time (an empty interval) is subtracted. */
#define CALIBRATION_LOOPS 100000u
static uint64_t calibration_run(void) {
    uint32_t n = CALIBRATION_LOOPS;
    uint64_t t0 = icount_now();
    uint64_t t1 = icount_now();
    __asm__ volatile("1: nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n subs %0, %0, #1\n bne 1b"
                     : "+r"(n) : : "cc");
    uint64_t t2 = icount_now();
    return (t2 - t1) - (t1 - t0);
}

static uint32_t stack_pointer(void) {
    uint32_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

static uint32_t lowest_used_stack_address(void) {
    const uint32_t *p = &_sstack;
    while (p < &_estack && *p == FW_STACK_FILL) p++;
    return (uint32_t)p;
}

/* Word i of run.cfg, 0 when the file is shorter (older hosts write only the trace mode). */
static uint32_t config_word(const uint8_t *config, uint32_t size, uint32_t i) {
    if (size < 4u * (i + 1u)) return 0;
    const uint8_t *w = config + 4u * i;
    return (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
}

/* A program split across RAM regions (mcuforge.regions): region k at the address run.cfg word 5 + k gives (the
 * host's board table, firmware/boards.py), or from the heap for 0. MF_ERR_ARENA_TOO_SMALL: the heap ran out. */
static mf_status init_regions(mf_context *ctx, const mf_program *prog, const uint8_t *config, uint32_t size) {
    uint32_t regions = mf_program_region_count(prog);
    if (config_word(config, size, 4) != regions) return MF_ERR_ARG;
    uint8_t *buffers[MF_MAX_REGIONS];
    size_t sizes[MF_MAX_REGIONS];
    for (uint32_t k = 0; k < regions; k++) {
        uint32_t at = config_word(config, size, 5u + k);
        sizes[k] = mf_program_region_bytes(prog, k);
        buffers[k] = at ? (uint8_t *)(uintptr_t)at : heap_take((uint32_t)sizes[k]);
        if (buffers[k] == NULL) return MF_ERR_ARENA_TOO_SMALL;
    }
    return mf_init_regions(ctx, prog, buffers, sizes, regions);
}

static int run(void) {
    char name[24];
    uint32_t size;

    uint8_t *config = read_file(FW_FILE_CONFIG, &size);
    if (config == NULL || size < 4) return fail(FW_STAGE_FILES, -1, "cannot read " FW_FILE_CONFIG);
    const uint32_t size_config = size;
    uint32_t trace_mode = config_word(config, size, 0);
    uint32_t trace_sink = config_word(config, size, 1);
    uint32_t arena_shortfall = config_word(config, size, 2);
    uint32_t trace_buffer_bytes = config_word(config, size, 3);
    if (trace_buffer_bytes == 0) trace_buffer_bytes = FW_TRACE_BUFFER_BYTES;
    (void)trace_sink, (void)trace_buffer_bytes; /* only a build with MF_TRACE has a trace sink and buffer */
    if (trace_mode != FW_TRACE_OFF && !MF_TRACE)
        return fail(FW_STAGE_TRACE, -1, "trace asked of a firmware built without MF_TRACE");

    const uint8_t *file = read_file(FW_FILE_PROGRAM, &size);
    if (file == NULL) return fail(FW_STAGE_FILES, -1, "cannot read " FW_FILE_PROGRAM " into RAM");
    result.program_bytes = size;

    static mf_program prog;
    static mf_context ctx;
    mf_status st = mf_program_load(&prog, file, size);
    result.error_op = prog.error_op;
    result.error_tensor = prog.error_tensor;
    if (st != MF_OK) return fail(FW_STAGE_LOAD, st, "mf_program_load rejected the program");

    uint32_t arena_bytes = mf_program_arena_bytes(&prog);
    result.arena_bytes = arena_bytes;
    if (mf_program_region_count(&prog) > 0) {
        st = init_regions(&ctx, &prog, config, size_config);
        if (st != MF_OK) return st == MF_ERR_ARENA_TOO_SMALL ? fail(FW_STAGE_MEMORY, -1, "a region does not fit")
                                                             : fail(FW_STAGE_INIT, st, "mf_init_regions failed");
    } else {
        uint8_t *arena = heap_take(arena_bytes > 0 ? arena_bytes : 16u);
        if (arena == NULL) return fail(FW_STAGE_MEMORY, -1, "the arena does not fit the board's RAM");
        /* A marked arena: a refused mf_init (too small) must not have written one byte of it. */
        memset(arena, 0xA5, arena_bytes);
        uint32_t given = arena_shortfall < arena_bytes ? arena_bytes - arena_shortfall : 0u;
        st = mf_init(&ctx, &prog, arena, given);
        if (st != MF_OK) {
            for (uint32_t i = 0; i < arena_bytes; i++) {
                if (arena[i] != 0xA5) return fail(FW_STAGE_INIT, st, "mf_init failed after writing the arena");
            }
            return fail(FW_STAGE_INIT, st, "mf_init failed (arena untouched)");
        }
    }

    uint32_t inputs = mf_program_input_count(&prog);
    for (uint32_t i = 0; i < inputs; i++) {
        numbered_name(name, FW_FILE_INPUT_PREFIX, i, ".bin");
        const uint8_t *data = read_file(name, &size);
        if (data == NULL) return fail(FW_STAGE_FILES, -1, "cannot read an input file into RAM");
        st = mf_set_input(&ctx, i, data, size);
        if (st != MF_OK) return fail(FW_STAGE_INPUT, st, "mf_set_input rejected an input");
    }

    mf_trace_sink *sink = NULL;
#if MF_TRACE
    static trace_file tfile;
    static mf_trace_sink tsink;
    static mf_trace_uart tuart;
    const uint8_t full = trace_mode == FW_TRACE_FULL;
    if (trace_mode != FW_TRACE_OFF && trace_sink == FW_SINK_UART) {
        /* The trace on UART0 as it is written; a ring buffer for the bursts between ops. */
        uint8_t *ring = heap_take(FW_UART_RING_BYTES);
        if (ring == NULL) return fail(FW_STAGE_TRACE, -1, "no room for the UART ring buffer");
        mf_cmsdk_uart_init(BOARD_UART, 16u);
        mf_trace_uart_init(&tuart, mf_cmsdk_uart_write, (void *)BOARD_UART, ring, FW_UART_RING_BYTES,
                           mf_timer_now, mf_timer_unit(), full);
        sink = &tuart.sink;
    } else if (trace_mode != FW_TRACE_OFF) {
        tfile.capacity = trace_buffer_bytes;
        tfile.buf = heap_take(tfile.capacity);
        tfile.fd = sh_open(FW_FILE_TRACE, "wb");
        if (tfile.buf == NULL || tfile.fd < 0) return fail(FW_STAGE_TRACE, -1, "cannot open the trace");
        tsink.write = trace_write;
        tsink.now = mf_timer_now;
        tsink.user = &tfile;
        tsink.time_unit = mf_timer_unit();
        tsink.full = full;
        sink = &tsink;
    }
    if (sink != NULL && !start_trace(sink, &ctx))
        return fail(FW_STAGE_TRACE, -1, "the trace's timer or mf_trace_begin failed");
#endif

    uint32_t sp_before = stack_pointer();
    uint64_t t0 = icount_now();
    st = mf_invoke(&ctx, sink);
    uint64_t t1 = icount_now();
    uint32_t lowest = lowest_used_stack_address();
    result.invoke_instructions = t1 - t0;
    result.invoke_stack_bytes = sp_before > lowest ? sp_before - lowest : 0u;
    result.error_op = ctx.error_op;

#if MF_TRACE
    if (sink != NULL) {
        /* The trace is closed even after a failed invoke: its RUN_END carries the status. */
        mf_status end = mf_trace_end(sink);
        int failed;
        if (sink == &tuart.sink) {
            failed = mf_trace_uart_flush(&tuart) != 0;
            result.trace_bytes = tuart.bytes_sent;
            result.trace_dropped = tuart.sink.dropped_records;
        } else {
            trace_flush(&tfile);
            sh_close(tfile.fd);
            result.trace_bytes = tfile.total;
            result.trace_dropped_bytes = tfile.dropped;
            failed = tfile.failed;
        }
        if (st == MF_OK && end != MF_OK) return fail(FW_STAGE_TRACE, end, "mf_trace_end failed");
        if (st == MF_OK && failed) {
            return fail(FW_STAGE_TRACE, -1, sink == &tuart.sink ? "writing the trace to UART0 failed"
                                                                 : "writing trace.bin failed: bytes dropped");
        }
    }
#endif
    if (st != MF_OK) return fail(FW_STAGE_INVOKE, st, "mf_invoke failed");

    uint32_t outputs = mf_program_output_count(&prog);
    result.output_count = outputs;
    for (uint32_t i = 0; i < outputs; i++) {
        size_t nbytes = 0;
        const void *out = mf_output(&ctx, i, &nbytes);
        numbered_name(name, FW_FILE_OUTPUT_PREFIX, i, ".bin");
        if (out == NULL || write_file(name, out, nbytes) != 0)
            return fail(FW_STAGE_OUTPUT, -1, "cannot write an output file");
    }
    copy_text(result.status_name, sizeof result.status_name, "MF_OK");
    return FW_EXIT_OK;
}

int main(void) {
    heap_next = (uint8_t *)&_sheap;
    result.magic = FW_RESULT_MAGIC;
    result.version = FW_RESULT_VERSION;
    result.error_op = -1;
    result.error_tensor = -1;
    result.clock_hz = BOARD_HZ;
    result.stack_size = (uint32_t)((uintptr_t)&_estack - (uintptr_t)&_sstack);

    mf_systick_start();
    result.calibration_instructions = calibration_run();
    result.calibration_expected = CALIBRATION_LOOPS * 10u;

    int code = run();
    uint32_t lowest = lowest_used_stack_address();
    result.stack_bytes = (uint32_t)&_estack - lowest;
    if (lowest == (uint32_t)&_sstack && code == FW_EXIT_OK)
        code = fail(FW_STAGE_MEMORY, -1, "the stack reached its limit (high-water mark = stack size)");
    if (write_file(FW_FILE_RESULT, &result, sizeof result) != 0) {
        sh_puts("mcuforge firmware: cannot write " FW_FILE_RESULT "\n");
        return FW_EXIT_FAILED;
    }
    return code;
}
