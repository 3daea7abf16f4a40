/*
 * Read access to a validated program: tensor and op records, the index pool, attribute values,
 * the public info functions, status names and CRC-32.
 */
#include "mf_internal.h"

/* CRC-32 (zlib/IEEE, reflected 0xEDB88320), four bits per step: a 64-byte table in flash keeps it
 * about 8x faster than bit by bit, which matters because trace records are framed inside op time. */
static const uint32_t crc32_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
    0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t mf_crc32_update(uint32_t crc, const uint8_t *data, size_t n) {
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= data[i];
        crc = (crc >> 4) ^ crc32_nibble[crc & 15u];
        crc = (crc >> 4) ^ crc32_nibble[crc & 15u];
    }
    return ~crc;
}

const char *mf_status_name(mf_status s) {
    static const char *const names[] = {
        "MF_OK", "MF_ERR_MAGIC", "MF_ERR_VERSION", "MF_ERR_TRUNCATED", "MF_ERR_CRC", "MF_ERR_BOUNDS",
        "MF_ERR_FORMAT", "MF_ERR_TARGET", "MF_ERR_UNSUPPORTED_OP", "MF_ERR_ARENA_TOO_SMALL", "MF_ERR_ARG",
        "MF_ERR_SHAPE", "MF_ERR_STATE", "MF_ERR_NO_DELEGATE", "MF_ERR_NPU_UNREACHABLE",
    };
    unsigned i = (unsigned)s;
    return i < sizeof names / sizeof names[0] ? names[i] : "MF_ERR_UNKNOWN";
}

uint32_t mf_dtype_size(uint8_t dtype) {
    static const uint8_t sizes[] = {1, 2, 4, 4, 8, 1};
    return dtype < sizeof sizes ? sizes[dtype] : 0;
}

/* ---- tensors ---- */
void mf_tensor_read(const mf_program *p, uint32_t i, mf_tensor *t) {
    const uint8_t *r = p->data + p->tensors_offset + (size_t)i * p->tensor_record_size;
    t->index = i;
    t->dtype = r[8];
    t->rank = r[9];
    t->layout = r[10];
    t->flags = r[11];
    t->numel = 1;
    for (uint32_t k = 0; k < MF_MAX_RANK; k++) {
        t->shape[k] = mf_rd_u32(r + 12 + 4 * k);
        if (k < t->rank) t->numel *= t->shape[k];
    }
    t->scale = mf_rd_f32(r + 36);
    t->zero_point = mf_rd_i32(r + 40);
    t->offset = mf_rd_u32(r + 44);
    t->nbytes = mf_rd_u32(r + 48);
    t->pitch = (t->flags & MF_TENSOR_FLAG_PITCHED) && p->tensor_record_size >= MF_TENSOR_PITCHED_RECORD_SIZE
                   ? mf_rd_u32(r + 52)
                   : 0u;
    t->data = NULL;
}

uint8_t *mf_arena_at(const mf_arena_map *map, uint32_t offset) {
    if (map == NULL || map->base[0] == NULL) return NULL;
    uint32_t k = 0;
    /* the regions lie end to end and every buffer inside one (checked at load): the last that starts at or
     * before the offset holds it */
    while (k + 1u < map->count && map->start[k + 1u] <= offset) k++;
    return map->base[k] + (offset - map->start[k]);
}

void mf_tensor_bind(const mf_program *p, const mf_arena_map *arena, mf_tensor *t) {
    if (t->flags & MF_TENSOR_FLAG_CONSTANT) {
        /* const is dropped for a uniform view; outputs are never constants (checked at load) */
        const uint8_t *base = arena != NULL && arena->constants != NULL ? arena->constants
                                                                         : p->data + p->constants_offset;
        t->data = (void *)(uintptr_t)(base + t->offset);
    } else {
        t->data = mf_arena_at(arena, t->offset);
    }
}

int32_t mf_index_entry(const mf_program *p, uint32_t i) {
    return mf_rd_i32(p->data + p->index_offset + 4u * i);
}

const char *mf_string(const mf_program *p, uint32_t offset) {
    return (const char *)(p->data + p->strings_offset + offset);
}

int mf_same_shape(const mf_tensor *a, const mf_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (uint32_t k = 0; k < a->rank; k++) {
        if (a->shape[k] != b->shape[k]) return 0;
    }
    return 1;
}

/* ---- ops ---- */
void mf_call_read(const mf_program *p, uint32_t op_index, const mf_arena_map *arena, mf_call *c) {
    const uint8_t *r = p->data + p->ops_offset + (size_t)op_index * p->op_record_size;
    c->prog = p;
    c->op_index = op_index;
    c->kind = mf_rd_u16(r);
    c->backend = r[2];
    c->precision = r[3];
    c->in_start = mf_rd_u32(r + 4);
    c->n_in = mf_rd_u32(r + 8);
    c->out_start = mf_rd_u32(r + 12);
    c->n_out = mf_rd_u32(r + 16);
    c->attrs_start = mf_rd_u32(r + 20);
    c->attr_words = mf_rd_u32(r + 24);
    c->scratch_bytes = mf_rd_u32(r + 28);
    c->scratch_offset = mf_rd_u32(r + 32);
    c->arena = arena;
    c->scratch = c->scratch_bytes ? mf_arena_at(arena, c->scratch_offset) : NULL;
}

int mf_call_input(const mf_call *c, uint32_t i, mf_tensor *t) {
    memset(t, 0, sizeof *t);
    if (i >= c->n_in) return 0;
    int32_t idx = mf_index_entry(c->prog, c->in_start + i);
    if (idx < 0) return 0;
    mf_tensor_read(c->prog, (uint32_t)idx, t);
    mf_tensor_bind(c->prog, c->arena, t);
    return 1;
}

void mf_call_output(const mf_call *c, uint32_t i, mf_tensor *t) {
    memset(t, 0, sizeof *t);
    if (i >= c->n_out) return;
    mf_tensor_read(c->prog, (uint32_t)mf_index_entry(c->prog, c->out_start + i), t);
    mf_tensor_bind(c->prog, c->arena, t);
}

/* ---- attribute values ---- */
uint32_t mf_value_words(mf_value v) {
    switch (mf_value_tag(v)) {
    case MF_TAG_NONE: return 1;
    case MF_TAG_INT: case MF_TAG_FLOAT: case MF_TAG_BOOL: case MF_TAG_TENSOR: return 2;
    case MF_TAG_INT64: case MF_TAG_STR: return 3;
    case MF_TAG_INTS: case MF_TAG_FLOATS: return 1 + mf_value_count(v);
    default: return 2 + mf_attr_word(v.prog, v.pos + 1); /* LIST, DICT */
    }
}

mf_value mf_attr(const mf_call *c, uint32_t k) {
    mf_value v = {c->prog, c->attrs_start};
    for (uint32_t i = 0; i < k; i++) v = mf_value_next(v);
    return v;
}

int mf_attr_present(const mf_call *c, uint32_t k) {
    mf_value v = {c->prog, c->attrs_start};
    const uint32_t end = c->attrs_start + c->attr_words;
    for (uint32_t i = 0; i < k && v.pos < end; i++) v = mf_value_next(v);
    return v.pos < end;
}

int64_t mf_value_int64(mf_value v) {
    uint8_t tag = mf_value_tag(v);
    if (tag == MF_TAG_INT || tag == MF_TAG_BOOL) return (int64_t)(int32_t)mf_attr_word(v.prog, v.pos + 1);
    if (tag == MF_TAG_INT64) {
        uint64_t u = (uint64_t)mf_attr_word(v.prog, v.pos + 1) | ((uint64_t)mf_attr_word(v.prog, v.pos + 2) << 32);
        int64_t s;
        memcpy(&s, &u, 8);
        return s;
    }
    return 0;
}

int32_t mf_value_int(mf_value v) {
    int64_t x = mf_value_int64(v);
    return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
}

float mf_value_float(mf_value v) {
    uint8_t tag = mf_value_tag(v);
    if (tag == MF_TAG_FLOAT) return mf_rd_f32(v.prog->data + v.prog->attrs_offset + 4u * (v.pos + 1));
    return (float)mf_value_int64(v);
}

int32_t mf_value_ints_at(mf_value v, uint32_t i) {
    return (int32_t)mf_attr_word(v.prog, v.pos + 1 + i);
}

float mf_value_floats_at(mf_value v, uint32_t i) {
    return mf_rd_f32(v.prog->data + v.prog->attrs_offset + 4u * (v.pos + 1 + i));
}

uint32_t mf_seq_len(mf_value v) {
    uint8_t tag = mf_value_tag(v);
    return (tag == MF_TAG_LIST || tag == MF_TAG_INTS || tag == MF_TAG_FLOATS) ? mf_value_count(v) : 0;
}

int mf_list_item(mf_value v, uint32_t i, mf_value *out) {
    if (mf_value_tag(v) != MF_TAG_LIST || i >= mf_value_count(v)) return 0;
    mf_value e = {v.prog, v.pos + 2};
    for (uint32_t k = 0; k < i; k++) e = mf_value_next(e);
    *out = e;
    return 1;
}

int mf_seq_int(mf_value v, uint32_t i, int64_t *out) {
    uint8_t tag = mf_value_tag(v);
    if (tag == MF_TAG_INTS && i < mf_value_count(v)) {
        *out = mf_value_ints_at(v, i);
        return 1;
    }
    mf_value e;
    if (tag == MF_TAG_LIST && mf_list_item(v, i, &e)) {
        uint8_t et = mf_value_tag(e);
        if (et != MF_TAG_INT && et != MF_TAG_INT64) return 0;
        *out = mf_value_int64(e);
        return 1;
    }
    return 0;
}

const char *mf_value_str(mf_value v, uint32_t *length) {
    if (mf_value_tag(v) != MF_TAG_STR) {
        if (length) *length = 0;
        return "";
    }
    if (length) *length = mf_attr_word(v.prog, v.pos + 2);
    return mf_string(v.prog, mf_attr_word(v.prog, v.pos + 1));
}

int mf_value_is_str(mf_value v, const char *s) {
    uint32_t n;
    const char *t = mf_value_str(v, &n);
    return mf_value_tag(v) == MF_TAG_STR && strlen(s) == n && memcmp(s, t, n) == 0;
}

int mf_dict_get(mf_value v, const char *key, mf_value *out) {
    if (mf_value_tag(v) != MF_TAG_DICT) return 0;
    uint32_t n = mf_value_count(v);
    mf_value k = {v.prog, v.pos + 2};
    for (uint32_t i = 0; i < n; i++) {
        mf_value val = mf_value_next(k);
        if (mf_value_is_str(k, key)) {
            *out = val;
            return 1;
        }
        k = mf_value_next(val);
    }
    return 0;
}

/* ---- public info ---- */
uint32_t mf_program_input_count(const mf_program *p) { return p && p->data ? p->input_count : 0; }
uint32_t mf_program_output_count(const mf_program *p) { return p && p->data ? p->output_count : 0; }
uint32_t mf_program_op_count(const mf_program *p) { return p && p->data ? p->op_count : 0; }
uint32_t mf_program_tensor_count(const mf_program *p) { return p && p->data ? p->tensor_count : 0; }

mf_status mf_program_tensor(const mf_program *p, uint32_t tensor_index, mf_tensor_info *info) {
    if (p == NULL || p->data == NULL || info == NULL || tensor_index >= p->tensor_count) return MF_ERR_ARG;
    mf_tensor t;
    mf_tensor_read(p, tensor_index, &t);
    const uint8_t *r = p->data + p->tensors_offset + (size_t)tensor_index * p->tensor_record_size;
    info->name = mf_string(p, mf_rd_u32(r));
    info->name_length = mf_rd_u32(r + 4);
    info->dtype = t.dtype;
    info->rank = t.rank;
    info->layout = t.layout;
    info->is_constant = (uint8_t)(t.flags & MF_TENSOR_FLAG_CONSTANT);
    memcpy(info->shape, t.shape, sizeof info->shape);
    info->has_qparams = (uint8_t)((t.flags & MF_TENSOR_FLAG_QPARAMS) >> 1);
    info->scale = t.scale;
    info->zero_point = t.zero_point;
    info->offset = t.offset;
    info->nbytes = t.nbytes;
    return MF_OK;
}

mf_status mf_program_input(const mf_program *p, uint32_t i, mf_tensor_info *info) {
    if (p == NULL || p->data == NULL || i >= p->input_count) return MF_ERR_ARG;
    return mf_program_tensor(p, (uint32_t)mf_index_entry(p, p->inputs_start + i), info);
}

mf_status mf_program_output(const mf_program *p, uint32_t i, mf_tensor_info *info) {
    if (p == NULL || p->data == NULL || i >= p->output_count) return MF_ERR_ARG;
    return mf_program_tensor(p, (uint32_t)mf_index_entry(p, p->outputs_start + i), info);
}

const char *mf_program_op_kind(const mf_program *p, uint32_t op_index) {
    if (p == NULL || p->data == NULL || op_index >= p->op_count) return "?";
    mf_call c;
    mf_call_read(p, op_index, NULL, &c);
    const mf_kernel *k = mf_kernel_lookup(c.kind);
    return k ? k->name : "?";
}

const char *mf_program_op_target(const mf_program *p, uint32_t op_index) {
    if (p == NULL || p->data == NULL || op_index >= p->op_count) return "";
    mf_call c;
    mf_call_read(p, op_index, NULL, &c);
    if (c.kind != MF_KIND_ATEN_FP32) return "";
    return mf_value_str(mf_attr(&c, 0), NULL);
}
