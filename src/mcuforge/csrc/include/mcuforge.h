/*
 * mcuforge C runtime: the public API.
 *
 * One way through, one entry point per step:
 *
 *     mf_program prog;   mf_context ctx;
 *     mf_program_load(&prog, file_bytes, file_size);          -- validates everything, copies nothing
 *     size_t need = mf_program_arena_bytes(&prog);            -- the RAM the caller must provide
 *     mf_init(&ctx, &prog, arena, arena_size);
 *     mf_set_input(&ctx, 0, input, input_nbytes);             -- program dtype and layout (NHWC)
 *     mf_invoke(&ctx, NULL);                                  -- or a trace sink, see below
 *     const void *out = mf_output(&ctx, 0, &out_nbytes);
 *
 * Rules: C99, no malloc, no global mutable state (everything lives in the structs the caller
 * owns), every function returns an mf_status or reports one. The program bytes are read in place:
 * place them 16-byte aligned in flash (at least 4-byte aligned: kernels read int32/float
 * constants through typed pointers; mf_program_load rejects a less aligned buffer with MF_ERR_ARG).
 * A malformed program is rejected by mf_program_load with an error code and never crashes it;
 * after a successful load mf_invoke cannot read or write outside the file and the arena.
 *
 * File format: docs/format.md. Trace stream: docs/trace.md.
 */
#ifndef MCUFORGE_H
#define MCUFORGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Build configuration
 * ------------------------------------------------------------------------------------------- */

/* Kernel path of this build: the program file's isa_id codes, plus MF_ISA_HOST for a build that
 * is not for a Cortex-M (tests, Python binding). Override with -DMF_ISA=<n>. */
#define MF_ISA_SCALAR 0
#define MF_ISA_DSP 1
#define MF_ISA_MVE 2
#define MF_ISA_HOST 255

#ifndef MF_ISA
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define MF_ISA MF_ISA_MVE
#elif defined(__ARM_FEATURE_DSP)
#define MF_ISA MF_ISA_DSP
#elif defined(__arm__) || defined(__thumb__)
#define MF_ISA MF_ISA_SCALAR
#else
#define MF_ISA MF_ISA_HOST
#endif
#endif

/* Event tracing: -DMF_TRACE=1 compiles it in. Without it mf_invoke ignores its sink argument and
 * the trace code is not built: no calls, no records, no timer reads. */
#ifndef MF_TRACE
#define MF_TRACE 0
#endif

#define MF_MAX_RANK 6

/* ---------------------------------------------------------------------------------------------
 * Status codes (stable numbers: the trace's RUN_END status and the Python binding use them)
 * ------------------------------------------------------------------------------------------- */
typedef enum {
    MF_OK = 0,
    MF_ERR_MAGIC = 1,            /* not an mcuforge program */
    MF_ERR_VERSION = 2,          /* format major version other than 2 and 3 */
    MF_ERR_TRUNCATED = 3,        /* file shorter than its header says (or than a header) */
    MF_ERR_CRC = 4,              /* header or payload CRC mismatch */
    MF_ERR_BOUNDS = 5,           /* an offset, size, count or index outside its file/arena range */
    MF_ERR_FORMAT = 6,           /* a field with a bad value: unknown code, bad alignment, ... */
    MF_ERR_TARGET = 7,           /* program built for another ISA than this runtime */
    MF_ERR_UNSUPPORTED_OP = 8,   /* op kind or aten op this runtime has no kernel for */
    MF_ERR_ARENA_TOO_SMALL = 9,  /* arena smaller than mf_program_arena_bytes() */
    MF_ERR_ARG = 10,             /* bad API argument (NULL, index out of range, wrong size) */
    MF_ERR_SHAPE = 11,           /* an op's tensors/attributes do not fit its kernel */
    MF_ERR_STATE = 12,           /* call out of order (e.g. mf_invoke before mf_init) */
    MF_ERR_NO_DELEGATE = 13,     /* program has NPU delegate ops and no (matching) delegate was registered */
    MF_ERR_NPU_UNREACHABLE = 14  /* a buffer the NPU would read or write lies where it cannot reach
                                    (mf_board_npu_reaches) */
} mf_status;

/* "MF_OK", "MF_ERR_CRC", ...; "MF_ERR_UNKNOWN" for other values. Never NULL. */
const char *mf_status_name(mf_status s);

/* ---------------------------------------------------------------------------------------------
 * Program: a validated view over the file bytes (no copy)
 * ------------------------------------------------------------------------------------------- */

/* Tensor dtype codes (program file). MF_INT4: constant weights packed two per byte in CMSIS-NN's s4
 * layout (nbytes = ceil(elements / 2)). */
enum { MF_INT8 = 0, MF_INT16 = 1, MF_INT32 = 2, MF_FLOAT32 = 3, MF_INT64 = 4, MF_BOOL = 5, MF_INT4 = 6 };
/* Op precision codes (op record byte 3 since format 1.1; 0: not recorded, a 1.0 file). */
enum {
    MF_PREC_NONE = 0, MF_PREC_FP32 = 1, MF_PREC_A8 = 2, MF_PREC_A8W8 = 3, MF_PREC_A8W4 = 4, MF_PREC_A16 = 5,
    MF_PREC_A16W8 = 6
};
/* Tensor layout codes. MF_LAYOUT_S4_HALVES: conv2d_s4 / fully_connected_s4 int4 weights whose rows (an even
 * length) are blocks of 32 weights, byte j of a block holding weight j (low nibble) and h + j (high nibble), h
 * half the block (16, or half the row's remainder): docs/format.md "Layouts", csrc/kernels/mf_s4.h.
 * MF_LAYOUT_S8_PAIRS (3.5): fully_connected_s8 / _per_channel_s8 int8 weights (O, I), O and I multiples of 4, in
 * blocks of 4 rows and groups of 4 features, each group 4 words of a pair of rows a, b: [a[k] ^ 0x80, b[k],
 * a[k + 2] ^ 0x80, b[k + 2]] (docs/format.md "Layouts", csrc/kernels/fully_connected_s8.c). */
enum { MF_LAYOUT_PLAIN = 0, MF_LAYOUT_NHWC = 1, MF_LAYOUT_S4_HALVES = 2, MF_LAYOUT_S8_PAIRS = 3 };

/* A program split across a board's RAM regions (format 3.2, docs/format.md "Region table") holds 2..MF_MAX_REGIONS
 * regions; a single-arena program none. */
#define MF_MAX_REGIONS 8

/* Filled by mf_program_load; read it through the functions below. */
typedef struct {
    const uint8_t *data; /* the file */
    uint32_t size;
    uint32_t header_size, payload_crc32;
    uint16_t target_id, isa_id;
    uint32_t arena_bytes;   /* activations: header arena_bytes */
    uint32_t scratch_bytes; /* the largest op scratch_bytes (each op's buffer is planned in the arena) */
    uint32_t tensors_offset, tensor_count, tensor_record_size;
    uint32_t ops_offset, op_count, op_record_size;
    uint32_t index_offset, index_count;
    uint32_t attrs_offset, attr_word_count;
    uint32_t strings_offset, string_bytes;
    uint32_t constants_offset, constants_size;
    uint32_t inputs_start, input_count, outputs_start, output_count;
    /* The region table (format 3.2): 0 regions for a single-arena program. Region k holds arena offsets
     * [region_start[k], region_start[k] + region_bytes[k]); region_name[k] is a string table offset. */
    uint32_t region_count;
    uint32_t region_start[MF_MAX_REGIONS], region_bytes[MF_MAX_REGIONS], region_name[MF_MAX_REGIONS];
    /* Constants in RAM (format 3.3): nonzero when mf_init copies the constants section to arena offset
     * constants_at (inside one region, sharing no byte with any buffer) and the kernels read them there. */
    uint32_t constants_in_ram, constants_at;
    /* Where the last mf_program_load failure was found: -1 when not in an op / tensor. */
    int32_t error_op;
    int32_t error_tensor;
} mf_program;

/* Parse and validate a program file (every check of docs/format.md "Validation", the target ISA,
 * and every op against its kernel's requirements: shapes, dtypes, attribute ranges, aten op name).
 * On failure the status says why and p->error_op / p->error_tensor say where. */
mf_status mf_program_load(mf_program *p, const uint8_t *data, size_t size);

/* Bytes of RAM mf_init needs: the planned arena (activations and op scratch buffers alike). */
uint32_t mf_program_arena_bytes(const mf_program *p);

/* The program's RAM regions (0: one arena, for mf_init), and each one's name ("DTCM") and bytes: the
 * buffers mf_init_regions takes, in this order. NULL / 0 for k out of range. */
uint32_t mf_program_region_count(const mf_program *p);
const char *mf_program_region_name(const mf_program *p, uint32_t k);
uint32_t mf_program_region_bytes(const mf_program *p, uint32_t k);

/* A tensor as the program describes it. */
typedef struct {
    const char *name; /* NUL-terminated, in the program's string table */
    uint32_t name_length;
    uint8_t dtype, rank, layout, is_constant;
    uint32_t shape[MF_MAX_RANK]; /* shape[0..rank) */
    uint8_t has_qparams;
    float scale; /* real = scale * (q - zero_point) when has_qparams */
    int32_t zero_point;
    uint32_t offset; /* arena offset (activation) or constants-section offset */
    uint32_t nbytes;
} mf_tensor_info;

uint32_t mf_program_input_count(const mf_program *p);
uint32_t mf_program_output_count(const mf_program *p);
uint32_t mf_program_op_count(const mf_program *p);
uint32_t mf_program_tensor_count(const mf_program *p);
mf_status mf_program_tensor(const mf_program *p, uint32_t tensor_index, mf_tensor_info *info);
mf_status mf_program_input(const mf_program *p, uint32_t i, mf_tensor_info *info);
mf_status mf_program_output(const mf_program *p, uint32_t i, mf_tensor_info *info);
/* Kind name of op i ("conv2d_s8", "aten_fp32", ...); "?" if out of range. For aten_fp32 ops,
 * mf_program_op_target gives the aten name ("aten.gelu.default"), else "". */
const char *mf_program_op_kind(const mf_program *p, uint32_t op_index);
const char *mf_program_op_target(const mf_program *p, uint32_t op_index);

/* ---------------------------------------------------------------------------------------------
 * Tracing (docs/trace.md). Compiled in with -DMF_TRACE=1.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    void (*write)(void *user, const uint8_t *bytes, size_t n); /* gets the stream, in pieces */
    uint64_t (*now)(void *user);                               /* monotonic time in time_unit */
    void *user;
    uint8_t time_unit; /* 0 ns, 1 cycles, 2 instructions */
    uint8_t full;      /* 1: a TENSOR record with each op output's bytes */
    /* Kept by the runtime between calls; zero them (or call mf_trace_begin) before use. */
    uint32_t record_count; /* records written (each record's sequence byte is this, mod 256) */
    uint32_t run_index;
    /* Optional, for a sink slower than the ops (a UART; NULL: every record is written). Asked before
     * each record, or an op's OP_START + OP_END together, of `nbytes`: 1 to write it, 0 to drop it.
     * With `wait` 0 (op records of an events trace) it must answer at once; with `wait` 1 (every other
     * record) it may wait, bounded, and answers 0 only when the sink has failed. Dropped records are
     * counted below and reported in the stream by a DROPPED record before the next one written
     * (docs/trace.md); run and stream records are never dropped while the sink works. */
    int (*reserve)(void *user, size_t nbytes, int wait);
    uint32_t dropped_pending;       /* records dropped since the last DROPPED record */
    uint32_t dropped_pending_bytes;
    uint32_t dropped_records;       /* records dropped over the stream */
} mf_trace_sink;

/* ---------------------------------------------------------------------------------------------
 * Execution context
 * ------------------------------------------------------------------------------------------- */
/* Where each region's arena is: base[k] holds arena offsets [start[k], start[k] + bytes); one region
 * (count 1, start 0) for a single arena. Set by mf_init / mf_init_regions. */
typedef struct {
    uint32_t count;
    uint8_t *base[MF_MAX_REGIONS];
    uint32_t start[MF_MAX_REGIONS];
    const uint8_t *constants; /* the constants section: in the program file, or its copy in RAM */
} mf_arena_map;

typedef struct {
    const mf_program *program;
    uint8_t *arena; /* region 0's buffer (the whole arena unless the program has regions) */
    size_t arena_size;
    mf_arena_map map;
    uint32_t ready; /* set by mf_init */
    /* The last failure of mf_set_input/mf_invoke: status and failing op (-1: not in an op). */
    mf_status error;
    int32_t error_op;
    const struct mf_delegate *delegate; /* set by mf_init_delegate; NULL: no NPU */
} mf_context;

/* Bind a loaded program to an arena of at least mf_program_arena_bytes(p) bytes, 16-byte aligned
 * (MF_ERR_ARG otherwise: kernels use typed pointers into it). The arena is zeroed. */
mf_status mf_init(mf_context *ctx, const mf_program *p, uint8_t *arena, size_t arena_size);

/* mf_init with one buffer per RAM region of a program split across regions (mf_program_region_count
 * buffers, each 16-byte aligned and of at least mf_program_region_bytes(p, k) bytes: MF_ERR_ARG /
 * MF_ERR_ARENA_TOO_SMALL otherwise; each is zeroed). A single-arena program takes count 1 (one buffer, as
 * mf_init). mf_init on a program with regions runs it in one buffer of mf_program_arena_bytes (the regions
 * end to end). */
mf_status mf_init_regions(mf_context *ctx, const mf_program *p, uint8_t *const *buffers, const size_t *sizes,
                          uint32_t count);

/* ---------------------------------------------------------------------------------------------
 * NPU delegates (docs/ethos-u.md). A program compiled for "cortex-mXX+ethos-uYY-ZZZ" holds delegate
 * ops: a subgraph compiled by Vela into a command stream and a weights blob, in the layout Arm's
 * Ethos-U core driver takes (ethosu_invoke_v3: the command stream, then base_addr[] with region 0 =
 * weights, 1 = scratch, 2 = fast scratch). A board with the NPU registers its driver with
 * mf_init_delegate; mf_init on such a program fails with MF_ERR_NO_DELEGATE.
 * ------------------------------------------------------------------------------------------- */
#define MF_DELEGATE_REGIONS 3

typedef struct {
    uint32_t op_index;                    /* the delegate op */
    const char *npu;                      /* NPU configuration it was compiled for: "ethos-u55-128" */
    const uint8_t *command_stream;        /* Vela's driver payload ("COP1"), in the program (flash) */
    size_t command_stream_size;
    const uint8_t *weights;               /* read-only region, in the program (flash) */
    size_t weights_size;
    uint8_t *scratch;                     /* scratch region, in the arena; NPU inputs/outputs inside */
    size_t scratch_size;
    uint64_t base_addr[MF_DELEGATE_REGIONS];      /* ethosu_invoke_v3's base_addr[] */
    size_t base_addr_size[MF_DELEGATE_REGIONS];   /* and base_addr_size[] */
    int num_base_addr;
} mf_delegate_call;

typedef struct mf_delegate {
    const char *npu; /* the configuration this driver runs ("ethos-u55-128"); NULL: any */
    void *user;
    /* Once per delegate op, by mf_init_delegate (NULL: nothing to prepare). */
    mf_status (*init)(void *user, const mf_delegate_call *call);
    /* Each mf_invoke, per delegate op: run the command stream. The runtime has copied the NPU's inputs
     * into the scratch region and copies its outputs out afterwards. */
    mf_status (*execute)(void *user, const mf_delegate_call *call);
} mf_delegate;

/* mf_init, with an NPU driver for the program's delegate ops (delegate may be NULL for a program
 * without them). MF_ERR_NO_DELEGATE: delegate ops and no delegate, or one for another NPU.
 * MF_ERR_NPU_UNREACHABLE (ctx->error_op: the delegate op): a buffer the NPU would read or write (the op's
 * scratch region in the arena, its command stream or weights where the constants are) is not where
 * mf_board_npu_reaches says the NPU reaches; checked before any byte of the arena is written. */
mf_status mf_init_delegate(mf_context *ctx, const mf_program *p, uint8_t *arena, size_t arena_size,
                           const mf_delegate *delegate);
/* mf_init_regions with an NPU driver: one buffer per RAM region (as mf_init_regions), each delegate op's
 * buffers checked as by mf_init_delegate before any buffer is written. */
mf_status mf_init_regions_delegate(mf_context *ctx, const mf_program *p, uint8_t *const *buffers,
                                   const size_t *sizes, uint32_t count, const mf_delegate *delegate);
/* Whether the board's NPU reaches [address, address + nbytes) with its own DMA (nonzero: yes). The runtime
 * asks before it hands a buffer to the NPU. The runtime's definition is weak and says yes to everything; a
 * board whose NPU does not reach some memory (the Cortex-M55's TCMs on Corstone-300) defines its own from its
 * memory map (docs/memory.md, "NPU reach"). */
int mf_board_npu_reaches(const void *address, size_t nbytes);
/* Number of delegate (NPU) ops in a loaded program. */
uint32_t mf_program_delegate_count(const mf_program *p);

/* Copy graph input i (exactly its nbytes, program dtype and layout) into the arena. */
mf_status mf_set_input(mf_context *ctx, uint32_t i, const void *data, size_t nbytes);

/* Run every op once. trace: NULL for no events (or a build without MF_TRACE). On failure
 * ctx->error_op names the op. */
mf_status mf_invoke(mf_context *ctx, mf_trace_sink *trace);

/* Graph output i (in the arena, or in the program for a constant output); NULL if out of range. */
const void *mf_output(const mf_context *ctx, uint32_t i, size_t *nbytes);

/* Trace stream framing: mf_trace_begin writes STREAM_START and the ALLOC records (arena, then each
 * activation's offset, size and lifetime) and resets the sink's counters; each traced mf_invoke
 * adds one run (an op's records are written after it ran: its time is the kernel's, not the
 * sink's); mf_trace_end writes STREAM_END. Both return MF_ERR_STATE in a build without MF_TRACE
 * (and write nothing); MF_ERR_STATE too when the sink's reserve says it has failed. */
mf_status mf_trace_begin(mf_trace_sink *trace, const mf_context *ctx);
mf_status mf_trace_end(mf_trace_sink *trace);

/* ---------------------------------------------------------------------------------------------
 * Quantization helpers (bit-exact with mcuforge.kernels.quantize_per_tensor / dequantize_per_tensor)
 * ------------------------------------------------------------------------------------------- */
void mf_quantize_f32_s8(const float *x, int8_t *q, uint32_t n, float scale, int32_t zero_point);
void mf_dequantize_s8_f32(const int8_t *q, float *x, uint32_t n, float scale, int32_t zero_point);
/* The same for int16 values (range [-32768, 32767]; the A16W8 programs' inputs and outputs). */
void mf_quantize_f32_s16(const float *x, int16_t *q, uint32_t n, float scale, int32_t zero_point);
void mf_dequantize_s16_f32(const int16_t *q, float *x, uint32_t n, float scale, int32_t zero_point);

#ifdef __cplusplus
}
#endif
#endif /* MCUFORGE_H */
