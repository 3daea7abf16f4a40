/*
 * Host-only helpers for the Python binding (ctypes) and the command-line driver: a monotonic
 * nanosecond clock for traces, and sizes/field access so that Python never mirrors the layout
 * of mf_program, mf_context or mf_trace_sink. Not part of a firmware build.
 */
#define _POSIX_C_SOURCE 199309L
#include <time.h>

#include "mcuforge.h"

uint64_t mf_host_now_ns(void *user) {
    struct timespec ts;
    (void)user;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t mf_host_sizeof_program(void) { return sizeof(mf_program); }
size_t mf_host_sizeof_context(void) { return sizeof(mf_context); }
size_t mf_host_sizeof_trace_sink(void) { return sizeof(mf_trace_sink); }
int32_t mf_host_program_error_op(const mf_program *p) { return p->error_op; }
int32_t mf_host_program_error_tensor(const mf_program *p) { return p->error_tensor; }
int32_t mf_host_context_error_op(const mf_context *ctx) { return ctx->error_op; }
int mf_host_trace_compiled(void) { return MF_TRACE; }
int mf_host_isa(void) { return MF_ISA; }

/* A sink writing through `write` with host nanosecond times (time unit 0). */
void mf_host_trace_init(mf_trace_sink *t, void (*write)(void *, const uint8_t *, size_t), void *user,
                        uint8_t full) {
    t->write = write;
    t->now = mf_host_now_ns;
    t->user = user;
    t->time_unit = 0;
    t->full = full;
    t->record_count = 0;
    t->run_index = 0;
    t->reserve = NULL; /* never drops: writing to memory */
    t->dropped_pending = 0;
    t->dropped_pending_bytes = 0;
    t->dropped_records = 0;
}

/* The host's NPU reach, as a board defines mf_board_npu_reaches (replacing the runtime's weak default):
 * here the tests mark one address range the "NPU" does not reach (an empty range: it reaches everything),
 * to check that mf_init_delegate / mf_init_regions_delegate refuse such a buffer before writing any. */
static uintptr_t unreachable_lo, unreachable_hi;

void mf_host_npu_unreachable(const void *address, size_t nbytes) {
    unreachable_lo = (uintptr_t)address;
    unreachable_hi = (uintptr_t)address + nbytes;
}

int mf_board_npu_reaches(const void *address, size_t nbytes) {
    const uintptr_t lo = (uintptr_t)address, hi = lo + nbytes;
    return hi <= unreachable_lo || unreachable_hi <= lo;
}
