/* What the test firmware and the host (mcuforge/firmware/qemu.py) agree on: file names, exit
 * statuses and the result record. All integers little-endian (every Cortex-M here). */
#ifndef MCUFORGE_FW_FIRMWARE_H
#define MCUFORGE_FW_FIRMWARE_H

#include <stdint.h>

/* Files in QEMU's working directory (semihosting paths are relative to it). */
/* in: u32 trace mode (FW_TRACE_*), u32 trace sink (FW_SINK_*); optionally u32 arena shortfall (give
 * mf_init that many bytes less than the program needs: the guard test), u32 trace buffer bytes (0:
 * FW_TRACE_BUFFER_BYTES) */
#define FW_FILE_CONFIG "run.cfg"
#define FW_FILE_PROGRAM "program.mfp" /* in: the program file */
#define FW_FILE_INPUT_PREFIX "input"   /* in: input<i>.bin, graph input i, program dtype and layout */
#define FW_FILE_OUTPUT_PREFIX "output" /* out: output<i>.bin, graph output i */
#define FW_FILE_TRACE "trace.bin"     /* out: the trace stream (docs/trace.md) */
#define FW_FILE_RESULT "result.bin"   /* out: fw_result */

/* Start-up fills the free stack with this, so that its high-water mark can be measured. */
#define FW_STACK_FILL 0xC5C5C5C5u

enum { FW_TRACE_OFF = 0, FW_TRACE_EVENTS = 1, FW_TRACE_FULL = 2 };
/* Where the trace goes: trace.bin over semihosting, or UART0 (BOARD_UART, the board's CMSDK UART). */
enum { FW_SINK_FILE = 0, FW_SINK_UART = 1 };
#define FW_UART_RING_BYTES 4096u
#define FW_TRACE_BUFFER_BYTES (64u * 1024u) /* the trace's RAM buffer, written to trace.bin when full */

/* QEMU exit statuses (SYS_EXIT_EXTENDED). */
enum { FW_EXIT_OK = 0, FW_EXIT_FAILED = 1, FW_EXIT_FAULT = 3 };

/* The step that failed (stage), when status != 0. */
enum {
    FW_STAGE_NONE = 0, FW_STAGE_FILES = 1, FW_STAGE_LOAD = 2, FW_STAGE_INIT = 3, FW_STAGE_INPUT = 4,
    FW_STAGE_INVOKE = 5, FW_STAGE_OUTPUT = 6, FW_STAGE_TRACE = 7, FW_STAGE_MEMORY = 8,
};

#define FW_RESULT_MAGIC 0x5352464Du /* "MFRS" */
#define FW_RESULT_VERSION 1u

/* result.bin: 168 bytes, written last; its absence means the firmware never finished. */
typedef struct {
    uint32_t magic, version;
    int32_t status;        /* mf_status of the failing step; 0 when everything worked */
    uint32_t stage;        /* FW_STAGE_* of the failure */
    int32_t error_op;      /* failing op (load or invoke), -1 if none */
    int32_t error_tensor;  /* failing tensor (load), -1 if none */
    uint64_t invoke_instructions;      /* mf_invoke, start to end (SysTick resolution) */
    uint64_t calibration_instructions; /* a fixed loop of calibration_expected instructions */
    uint32_t calibration_expected;
    uint32_t stack_bytes;              /* stack high-water mark, from the top of the stack */
    uint32_t invoke_stack_bytes;       /* of it, below main's frame: what mf_invoke & co. used */
    uint32_t stack_size;               /* the stack reserved by the linker script */
    uint32_t arena_bytes, program_bytes, output_count, trace_bytes;
    uint32_t clock_hz;
    uint32_t trace_dropped;            /* trace records the UART sink had no room for */
    uint32_t trace_dropped_bytes;      /* trace bytes lost because writing trace.bin failed (never overflowed) */
    char status_name[32];
    char message[52];
} fw_result;
/* C99 has no static_assert: a negative array size stops the build if the layout drifts. */
typedef char fw_result_is_168_bytes[sizeof(fw_result) == 168 ? 1 : -1];

#endif
