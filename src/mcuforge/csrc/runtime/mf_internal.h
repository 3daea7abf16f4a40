/*
 * Internals shared by the loader, the executor, the trace writer and the kernels:
 * byte readers, tensor and op views, attribute values, the kernel tables.
 *
 * Everything here reads a program that mf_program_load has validated, so the accessors
 * only guard what the format validation does not (they never read outside the file).
 */
#ifndef MF_INTERNAL_H
#define MF_INTERNAL_H

#include <string.h>

#include "mcuforge.h"
#include "kind_table.h"

/* ---- little-endian field readers (any alignment, any host byte order) ---- */
static inline uint16_t mf_rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t mf_rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline int32_t mf_rd_i32(const uint8_t *p) {
    uint32_t u = mf_rd_u32(p);
    int32_t v;
    memcpy(&v, &u, 4); /* two's complement reinterpretation without implementation-defined casts */
    return v;
}
static inline float mf_rd_f32(const uint8_t *p) {
    uint32_t u = mf_rd_u32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint32_t mf_crc32_update(uint32_t crc, const uint8_t *data, size_t n); /* crc starts at 0 */

/* ---- format constants ---- */
#define MF_FORMAT_MAJOR 3u
/* 2.x files are 3.0's layout without the s4 kinds' int16 bias and multipliers: read as they are. */
#define MF_FORMAT_MAJOR_OLDEST 2u
#define MF_HEADER_SIZE 128u
#define MF_TENSOR_RECORD_SIZE 52u
#define MF_TENSOR_PITCHED_RECORD_SIZE 56u /* 3.4: a u32 pitch after the 52 bytes */
#define MF_OP_RECORD_SIZE 36u
#define MF_TENSOR_FLAG_CONSTANT 1u
#define MF_TENSOR_FLAG_QPARAMS 2u
#define MF_TENSOR_FLAG_PITCHED 4u
#define MF_MAX_VALUE_DEPTH 8u
#define MF_ABSENT_INPUT (-1)

enum {
    MF_TAG_NONE = 0, MF_TAG_INT = 1, MF_TAG_INT64 = 2, MF_TAG_FLOAT = 3, MF_TAG_BOOL = 4, MF_TAG_INTS = 5,
    MF_TAG_FLOATS = 6, MF_TAG_STR = 7, MF_TAG_TENSOR = 8, MF_TAG_LIST = 9, MF_TAG_DICT = 10
};

/* Attribute type letters of a kind's attribute list: i int, f float, I ints, s str, a any; a '?' marks the
 * attributes after it as optional trailing ones: an op's attributes may end before any of them (format 3.1,
 * docs/format.md), and its kernel reads their defaults (mf_attr_present). */

/* ---- tensors ---- */
typedef struct {
    uint32_t index;
    uint8_t dtype, rank, layout, flags;
    uint32_t shape[MF_MAX_RANK];
    float scale;
    int32_t zero_point;
    uint32_t offset, nbytes, numel;
    /* format 3.4: elements from one pixel's channels to the next's of a pitched tensor (a 4-D int8 NHWC output
     * written into its channel slice of a concat's output: conv2d_s8, avgpool_s8, maxpool_s8 write it, the concat
     * reads it); 0 for a dense tensor */
    uint32_t pitch;
    void *data; /* arena or flash; NULL while checking at load time (no arena yet) */
} mf_tensor;

uint32_t mf_dtype_size(uint8_t dtype); /* 0 for an unknown code */
/* The arena bytes a tensor spans from its offset: nbytes, or up to a pitched tensor's last channel. */
static inline uint32_t mf_tensor_extent(const mf_tensor *t) {
    if (t->pitch == 0 || t->numel == 0) return t->nbytes;
    return (t->numel / t->shape[3] - 1u) * t->pitch + t->shape[3];
}
/* Tensor record i (validated program, i < tensor_count). */
void mf_tensor_read(const mf_program *p, uint32_t i, mf_tensor *t);
/* The address of arena offset ``offset`` (in the region that holds it); NULL for a NULL map. */
uint8_t *mf_arena_at(const mf_arena_map *map, uint32_t offset);
/* Resolve t->data for an arena (NULL arena: activations get NULL). */
void mf_tensor_bind(const mf_program *p, const mf_arena_map *arena, mf_tensor *t);
int32_t mf_index_entry(const mf_program *p, uint32_t i);
const char *mf_string(const mf_program *p, uint32_t offset);

/* Target ids of the program file (docs/format.md "Targets") that kernels tell apart beyond the isa:
 * cortex-m3's scalar fast paths plan scratch that cortex-m0plus's portable kernels do not. */
#define MF_TARGET_CORTEX_M0PLUS 1u
#define MF_TARGET_CORTEX_M3 2u

/* ---- ops ---- */
typedef struct {
    const mf_program *prog;
    uint32_t op_index;
    uint16_t kind;
    uint8_t backend;
    uint8_t precision; /* MF_PREC_*, validated against the kind at load */
    uint32_t in_start, n_in, out_start, n_out, attrs_start, attr_words, scratch_bytes, scratch_offset;
    const mf_arena_map *arena; /* NULL at load time: kernels' check functions see shapes only */
    uint8_t *scratch; /* scratch_bytes bytes at arena + scratch_offset (NULL without scratch) */
} mf_call;

void mf_call_read(const mf_program *p, uint32_t op_index, const mf_arena_map *arena, mf_call *c);
/* Input i into *t; returns 0 when the input is absent (-1 at an optional position). */
int mf_call_input(const mf_call *c, uint32_t i, mf_tensor *t);
void mf_call_output(const mf_call *c, uint32_t i, mf_tensor *t);

/* ---- attribute values (validated: tags, counts and sizes are consistent) ---- */
typedef struct {
    const mf_program *prog;
    uint32_t pos; /* word index of the tag word in the attrs pool */
} mf_value;

static inline uint32_t mf_attr_word(const mf_program *p, uint32_t pos) {
    return mf_rd_u32(p->data + p->attrs_offset + 4u * pos);
}
static inline uint8_t mf_value_tag(mf_value v) { return (uint8_t)(mf_attr_word(v.prog, v.pos) & 0xFFu); }
static inline uint32_t mf_value_count(mf_value v) { return mf_attr_word(v.prog, v.pos) >> 8; }
uint32_t mf_value_words(mf_value v); /* tag word + payload */
static inline mf_value mf_value_next(mf_value v) {
    mf_value n = {v.prog, v.pos + mf_value_words(v)};
    return n;
}
/* Attribute k of the op, in the kind's attribute order. */
mf_value mf_attr(const mf_call *c, uint32_t k);
/* 1 when the op has attribute k (an optional trailing one may be absent), else 0. */
int mf_attr_present(const mf_call *c, uint32_t k);
/* INT (and INT64, saturated to int32) and BOOL as an int32. */
int32_t mf_value_int(mf_value v);
int64_t mf_value_int64(mf_value v);
float mf_value_float(mf_value v); /* FLOAT, or an INT/BOOL converted */
int32_t mf_value_ints_at(mf_value v, uint32_t i); /* INTS element */
float mf_value_floats_at(mf_value v, uint32_t i);  /* FLOATS element */
/* Element i of a sequence value (LIST, INTS, FLOATS): for INTS/FLOATS the int/float is read with
 * mf_seq_int/mf_seq_float below, which accept any of the three. Returns 0 if out of range. */
uint32_t mf_seq_len(mf_value v); /* LIST/INTS/FLOATS count; 0 for anything else */
int mf_seq_int(mf_value v, uint32_t i, int64_t *out);
int mf_list_item(mf_value v, uint32_t i, mf_value *out); /* LIST only */
int mf_value_is_str(mf_value v, const char *s);          /* STR equal to the C string s */
const char *mf_value_str(mf_value v, uint32_t *length);   /* STR */
/* DICT lookup; returns 0 when the key is absent (or v is not a DICT). */
int mf_dict_get(mf_value v, const char *key, mf_value *out);

/* ---- the kernel tables ---- */
typedef struct {
    uint16_t kind;
    const char *name;
    uint8_t n_in_min, n_in_max; /* 255: any number (aten_fp32) */
    uint8_t optional_mask;      /* bit i: input i may be absent (-1) */
    const char *attr_types;     /* one letter per attribute, see above */
    mf_status (*check)(const mf_call *c); /* load time: dtypes, shapes, attribute ranges */
    mf_status (*run)(const mf_call *c);
} mf_kernel;

const mf_kernel *mf_kernel_find(uint16_t kind);

/* ---- NPU delegate ops (runtime/delegate.c) ---- */
/* mf_kernel_find, plus the delegate op's load-time checks. */
const mf_kernel *mf_kernel_lookup(uint16_t kind);
/* At mf_init: MF_ERR_NO_DELEGATE if the program has delegate ops that ctx->delegate cannot run; else
 * the delegate's init per delegate op. */
mf_status mf_delegate_bind(mf_context *ctx);
/* At mf_init, before any buffer is written (ctx's map and constants address set): MF_ERR_NPU_UNREACHABLE,
 * in ctx->error / error_op, if a delegate op's scratch, command stream or weights lie where
 * mf_board_npu_reaches says the NPU does not reach; MF_OK without a delegate (nothing goes to an NPU). */
mf_status mf_delegate_reach(mf_context *ctx);
/* One delegate op: inputs into the NPU scratch region, the delegate's execute, outputs out. */
mf_status mf_delegate_run(mf_context *ctx, const mf_call *c);

/* An fp32 fallback op, selected by its aten name. */
typedef struct {
    const char *target; /* "aten.gelu.default" */
    mf_status (*check)(const mf_call *c, mf_value args, mf_value kwargs);
    mf_status (*run)(const mf_call *c, mf_value args, mf_value kwargs);
} mf_aten_op;

/* The fp32 op at `index` of kernels/fp32/aten_list.h (aten name order); NULL outside the table or
 * for an entry an exported project left out. */
const mf_aten_op *mf_aten_at(int32_t index);
/* By name (tools and tests; the runtime dispatches by index). */
const mf_aten_op *mf_aten_find(const char *target, uint32_t length);

/* ---- shared kernel helpers ---- */
/* arm_nn_requantize, default (double rounding) form. */
int32_t mf_requantize(int32_t val, int32_t multiplier, int32_t shift);
static inline int8_t mf_clamp_s8(int32_t v, int32_t lo, int32_t hi) {
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}
/* Both ints in [lo, hi]. */
static inline int mf_in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }
/* Tensor shape equality over the rank. */
int mf_same_shape(const mf_tensor *a, const mf_tensor *b);

#endif /* MF_INTERNAL_H */
