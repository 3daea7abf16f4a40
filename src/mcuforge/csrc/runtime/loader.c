/*
 * mf_program_load: parse and validate a program file (docs/format.md, "Validation", in order),
 * then check every op against its kernel. Every offset + size is computed in 64 bits, every
 * count is checked against the bytes or words left before it is used, and value recursion is
 * bounded by the nesting limit, so no input makes this code read outside [data, data + size).
 */
#include "mf_internal.h"

/* Target id -> isa id (docs/format.md "Targets"); 0xFF: unknown id. */
static uint8_t target_isa(uint16_t target_id) {
    static const uint8_t isa[] = {0xFF, 0, 0, 1, 1, 1, 2, 2};
    return target_id < sizeof isa ? isa[target_id] : 0xFF;
}

static mf_status fail_tensor(mf_program *p, int32_t tensor, mf_status s) {
    p->error_tensor = tensor;
    return s;
}

static mf_status fail_op(mf_program *p, int32_t op, mf_status s) {
    p->error_op = op;
    return s;
}

/* ---- 1..3: magic, version, sizes, CRCs ---- */
static mf_status check_header(mf_program *p, const uint8_t *d, size_t len) {
    static const uint8_t magic[4] = {'M', 'C', 'U', 'F'};
    size_t n = len < 4 ? len : 4;
    if (memcmp(d, magic, n) != 0) return MF_ERR_MAGIC;
    if (len < 8) return MF_ERR_TRUNCATED;
    const uint32_t major = mf_rd_u16(d + 4);
    if (major != MF_FORMAT_MAJOR && major != MF_FORMAT_MAJOR_OLDEST) return MF_ERR_VERSION;
    if (len < MF_HEADER_SIZE) return MF_ERR_TRUNCATED;
    uint32_t header_size = mf_rd_u32(d + 8);
    if (header_size < MF_HEADER_SIZE || header_size % 4) return MF_ERR_FORMAT;
    if (header_size > len) return MF_ERR_TRUNCATED;
    static const uint8_t zero[4] = {0, 0, 0, 0};
    uint32_t crc = mf_crc32_update(0, d, 104);
    crc = mf_crc32_update(crc, zero, 4);
    crc = mf_crc32_update(crc, d + 108, header_size - 108u);
    if (crc != mf_rd_u32(d + 104)) return MF_ERR_CRC;
    uint32_t file_size = mf_rd_u32(d + 12);
    if (file_size < header_size) return MF_ERR_FORMAT;
    if ((size_t)file_size > len) return MF_ERR_TRUNCATED;
    if ((size_t)file_size < len) return MF_ERR_FORMAT; /* trailing bytes */
    p->payload_crc32 = mf_rd_u32(d + 16);
    if (mf_crc32_update(0, d + header_size, file_size - header_size) != p->payload_crc32) return MF_ERR_CRC;
    p->header_size = header_size;
    p->size = file_size;
    return MF_OK;
}

/* ---- 4..6: target, record sizes, sections ---- */
/* The six sections (tensors, ops, index, attributes, strings, constants): offset and byte size of each,
 * for the header's bounds check and the region table's no-overlap check. */
#define MF_SECTIONS 6
static void section_spans(const mf_program *p, uint64_t off[MF_SECTIONS], uint64_t size[MF_SECTIONS]) {
    off[0] = p->tensors_offset, size[0] = (uint64_t)p->tensor_count * p->tensor_record_size;
    off[1] = p->ops_offset, size[1] = (uint64_t)p->op_count * p->op_record_size;
    off[2] = p->index_offset, size[2] = 4ull * p->index_count;
    off[3] = p->attrs_offset, size[3] = 4ull * p->attr_word_count;
    off[4] = p->strings_offset, size[4] = p->string_bytes;
    off[5] = p->constants_offset, size[5] = p->constants_size;
}

static mf_status check_sections(mf_program *p) {
    const uint8_t *d = p->data;
    p->target_id = mf_rd_u16(d + 20);
    p->isa_id = mf_rd_u16(d + 22);
    uint8_t isa = target_isa(p->target_id);
    if (isa == 0xFF || p->isa_id != isa) return MF_ERR_FORMAT;
    /* A host build runs the portable kernels, which give the same bytes as every optimized path. */
    if (MF_ISA != MF_ISA_HOST && p->isa_id != MF_ISA) return MF_ERR_TARGET;
    p->arena_bytes = mf_rd_u32(d + 24);
    p->tensors_offset = mf_rd_u32(d + 32);
    p->tensor_count = mf_rd_u32(d + 36);
    p->tensor_record_size = mf_rd_u32(d + 40);
    p->ops_offset = mf_rd_u32(d + 44);
    p->op_count = mf_rd_u32(d + 48);
    p->op_record_size = mf_rd_u32(d + 52);
    p->index_offset = mf_rd_u32(d + 56);
    p->index_count = mf_rd_u32(d + 60);
    p->attrs_offset = mf_rd_u32(d + 64);
    p->attr_word_count = mf_rd_u32(d + 68);
    p->strings_offset = mf_rd_u32(d + 72);
    p->string_bytes = mf_rd_u32(d + 76);
    p->constants_offset = mf_rd_u32(d + 80);
    p->constants_size = mf_rd_u32(d + 84);
    p->inputs_start = mf_rd_u32(d + 88);
    p->input_count = mf_rd_u32(d + 92);
    p->outputs_start = mf_rd_u32(d + 96);
    p->output_count = mf_rd_u32(d + 100);
    if (p->tensor_record_size < MF_TENSOR_RECORD_SIZE || p->tensor_record_size % 4) return MF_ERR_FORMAT;
    if (p->op_record_size < MF_OP_RECORD_SIZE || p->op_record_size % 4) return MF_ERR_FORMAT;
    uint64_t off[MF_SECTIONS], size[MF_SECTIONS];
    section_spans(p, off, size);
    for (int i = 0; i < MF_SECTIONS; i++) {
        if (off[i] % (i == 5 ? 16u : 4u)) return MF_ERR_FORMAT;
        if (off[i] < p->header_size || off[i] + size[i] > p->size) return MF_ERR_BOUNDS;
    }
    for (int i = 0; i < 6; i++) {
        for (int j = i + 1; j < 6; j++) {
            if (size[i] && size[j] && off[i] < off[j] + size[j] && off[j] < off[i] + size[i]) {
                return MF_ERR_FORMAT;
            }
        }
    }
    return MF_OK;
}

/* ---- 7: strings ---- */
static int valid_utf8(const uint8_t *s, uint32_t n) {
    uint32_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        uint32_t extra, cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { extra = 1; cp = c & 0x1Fu; }
        else if (c >= 0xE0 && c <= 0xEF) { extra = 2; cp = c & 0x0Fu; }
        else if (c >= 0xF0 && c <= 0xF4) { extra = 3; cp = c & 0x07u; }
        else return 0;
        if (extra > n - i - 1) return 0;
        for (uint32_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        /* overlong forms, UTF-16 surrogates and code points above U+10FFFF are not UTF-8 */
        if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF)) {
            return 0;
        }
        i += extra + 1;
    }
    return 1;
}

static mf_status check_string(const mf_program *p, uint32_t offset, uint32_t length) {
    if (offset >= p->string_bytes || length >= p->string_bytes - offset) return MF_ERR_BOUNDS;
    const uint8_t *s = p->data + p->strings_offset + offset;
    if (s[length] != 0) return MF_ERR_FORMAT;
    return valid_utf8(s, length) ? MF_OK : MF_ERR_FORMAT;
}

/* ---- region table (3.2, docs/format.md "Region table"): header bytes 108..115 ---- */
static mf_status check_regions(mf_program *p) {
    const uint8_t *d = p->data;
    uint32_t offset = mf_rd_u32(d + 108), count = mf_rd_u32(d + 112);
    if (offset == 0 && count == 0) return MF_OK;
    if (mf_rd_u16(d + 4) == 3 && mf_rd_u16(d + 6) < 2) return MF_ERR_FORMAT; /* reserved before 3.2 */
    if (count < 2 || count > MF_MAX_REGIONS) return MF_ERR_FORMAT;
    const uint64_t end = (uint64_t)offset + 16u * count;
    if (offset % 4u || offset < p->header_size || end > p->size) return MF_ERR_BOUNDS;
    uint64_t off[MF_SECTIONS], size[MF_SECTIONS];
    section_spans(p, off, size);
    for (int i = 0; i < MF_SECTIONS; i++) {
        if (size[i] && off[i] < end && offset < off[i] + size[i]) return MF_ERR_FORMAT;
    }
    uint64_t start = 0;
    for (uint32_t k = 0; k < count; k++) {
        const uint8_t *r = d + offset + 16u * k;
        mf_status s = check_string(p, mf_rd_u32(r), mf_rd_u32(r + 4));
        if (s != MF_OK) return s;
        uint32_t first = mf_rd_u32(r + 8), nbytes = mf_rd_u32(r + 12);
        if (first != start || nbytes == 0 || nbytes % 16u) return MF_ERR_FORMAT;
        p->region_name[k] = mf_rd_u32(r);
        p->region_start[k] = first;
        p->region_bytes[k] = nbytes;
        start += nbytes;
    }
    if (start != p->arena_bytes) return MF_ERR_FORMAT;
    p->region_count = count;
    return MF_OK;
}

/* ---- constants in RAM (3.3, docs/format.md "Header"): header bytes 116..123 ---- */
static mf_status check_constants_copy(mf_program *p) {
    const uint8_t *d = p->data;
    uint32_t flags = mf_rd_u32(d + 116), at = mf_rd_u32(d + 120);
    if (flags == 0 && at == 0) return MF_OK;
    if (mf_rd_u16(d + 4) == 3 && mf_rd_u16(d + 6) < 3) return MF_ERR_FORMAT; /* reserved before 3.3 */
    if (flags != 1u || at % 16u) return MF_ERR_FORMAT;
    if ((uint64_t)at + p->constants_size > p->arena_bytes) return MF_ERR_BOUNDS;
    p->constants_in_ram = 1;
    p->constants_at = at;
    return MF_OK;
}

/* Arena bytes [offset, offset + nbytes) share none with the constants' copy in RAM (none without one). */
static int clear_of_constants(const mf_program *p, uint64_t offset, uint64_t nbytes) {
    if (!p->constants_in_ram || nbytes == 0 || p->constants_size == 0) return 1;
    return offset + nbytes <= p->constants_at || (uint64_t)p->constants_at + p->constants_size <= offset;
}

/* Arena bytes [offset, offset + nbytes) lie inside one region (always, for a single arena): a runtime maps
 * each buffer to its region's memory. */
static int in_one_region(const mf_program *p, uint64_t offset, uint64_t nbytes) {
    if (p->region_count == 0 || nbytes == 0) return 1;
    for (uint32_t k = 0; k < p->region_count; k++) {
        if (offset >= p->region_start[k] && offset + nbytes <= (uint64_t)p->region_start[k] + p->region_bytes[k]) {
            return 1;
        }
    }
    return 0;
}

/* ---- 8, 9: tensors ---- */
static mf_status check_tensor(const mf_program *p, uint32_t i) {
    const uint8_t *r = p->data + p->tensors_offset + (size_t)i * p->tensor_record_size;
    uint32_t name_length = mf_rd_u32(r + 4);
    mf_status s = check_string(p, mf_rd_u32(r), name_length);
    if (s != MF_OK) return s;
    if (name_length == 0) return MF_ERR_FORMAT;
    uint8_t dtype = r[8], rank = r[9], layout = r[10], flags = r[11];
    const int int4 = dtype == MF_INT4; /* packed two per byte: constants only */
    uint32_t itemsize = int4 ? 1u : mf_dtype_size(dtype);
    if (itemsize == 0 || layout > MF_LAYOUT_S8_PAIRS || (flags & ~7u) || rank > MF_MAX_RANK) return MF_ERR_FORMAT;
    /* 3.4: the pitch field exists in records of 56 bytes or more; nonzero exactly with the pitched flag, on a 4-D
     * int8 NHWC activation, at least its channel count */
    const uint32_t pitch = p->tensor_record_size >= MF_TENSOR_PITCHED_RECORD_SIZE ? mf_rd_u32(r + 52) : 0u;
    if ((flags & MF_TENSOR_FLAG_PITCHED) != 0 && p->tensor_record_size < MF_TENSOR_PITCHED_RECORD_SIZE) {
        return MF_ERR_FORMAT;
    }
    if ((pitch != 0) != ((flags & MF_TENSOR_FLAG_PITCHED) != 0)) return MF_ERR_FORMAT;
    if (pitch != 0 && ((flags & MF_TENSOR_FLAG_CONSTANT) || dtype != MF_INT8 || rank != 4 || layout != MF_LAYOUT_NHWC ||
                       pitch < mf_rd_u32(r + 24))) {
        return MF_ERR_FORMAT;
    }
    if (int4 && !(flags & MF_TENSOR_FLAG_CONSTANT)) return MF_ERR_FORMAT;
    if (layout == MF_LAYOUT_S4_HALVES && (!int4 || rank < 2)) return MF_ERR_FORMAT; /* rows of int4 weights */
    /* S8_PAIRS: constant int8 (O, I) weights, O and I positive multiples of 4 */
    if (layout == MF_LAYOUT_S8_PAIRS) {
        const uint32_t o = mf_rd_u32(r + 12), in = mf_rd_u32(r + 16);
        if (dtype != MF_INT8 || rank != 2 || !(flags & MF_TENSOR_FLAG_CONSTANT) || o == 0u || in == 0u || (o & 3u) ||
            (in & 3u)) {
            return MF_ERR_FORMAT;
        }
    }
    uint64_t numel = 1;
    for (uint32_t k = 0; k < MF_MAX_RANK; k++) {
        uint32_t dim = mf_rd_u32(r + 12 + 4 * k);
        if (k >= rank) {
            if (dim) return MF_ERR_FORMAT;
            continue;
        }
        numel *= dim ? dim : 1u; /* step by step: each factor < 2^32, product checked each time */
        if (numel > 0xFFFFFFFFull) return MF_ERR_FORMAT;
    }
    numel = 1;
    for (uint32_t k = 0; k < rank; k++) numel *= mf_rd_u32(r + 12 + 4 * k);
    /* S4_HALVES rows start at bytes: each row an even count (then nbytes is numel / 2, as checked below) */
    if (layout == MF_LAYOUT_S4_HALVES && numel != 0 && (numel / mf_rd_u32(r + 12)) % 2u != 0u) return MF_ERR_FORMAT;
    if (mf_rd_u32(r + 48) != (int4 ? (numel + 1u) / 2u : numel * itemsize)) return MF_ERR_FORMAT;
    float scale = mf_rd_f32(r + 36);
    int32_t zero_point = mf_rd_i32(r + 40);
    if (flags & MF_TENSOR_FLAG_QPARAMS) {
        /* finite and > 0; written without isfinite so that soft-float builds need nothing */
        if (!(scale > 0.0f && scale <= 3.40282347e+38f)) return MF_ERR_FORMAT;
    } else if (scale != 0.0f || zero_point != 0) {
        return MF_ERR_FORMAT;
    }
    uint64_t offset = mf_rd_u32(r + 44), nbytes = mf_rd_u32(r + 48);
    if (flags & MF_TENSOR_FLAG_CONSTANT) {
        if (offset % 16) return MF_ERR_FORMAT;
        if (offset + nbytes > p->constants_size) return MF_ERR_BOUNDS;
        /* an odd int4 count leaves the last byte's high nibble unused: it must be 0 */
        if (int4 && (numel & 1u) && (p->data[p->constants_offset + offset + nbytes - 1u] >> 4) != 0) {
            return MF_ERR_FORMAT;
        }
    } else {
        if (pitch != 0 && numel != 0) { /* the span up to the last pixel's last channel (shape[3] <= pitch) */
            const uint64_t ch = mf_rd_u32(r + 24);
            nbytes = (numel / ch - 1u) * (uint64_t)pitch + ch;
        }
        if (offset + nbytes > p->arena_bytes) return MF_ERR_BOUNDS;
        if (!in_one_region(p, offset, nbytes) || !clear_of_constants(p, offset, nbytes)) return MF_ERR_FORMAT;
        /* Not in format.md 1.0 (the planner aligns to 16): kernels use typed pointers. */
        if (offset % itemsize) return MF_ERR_FORMAT;
    }
    return MF_OK;
}

static mf_status check_tensors(mf_program *p) {
    uint64_t constant_bytes = 0;
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        mf_status s = check_tensor(p, i);
        if (s != MF_OK) return fail_tensor(p, (int32_t)i, s);
        mf_tensor t;
        mf_tensor_read(p, i, &t);
        if (t.flags & MF_TENSOR_FLAG_CONSTANT) constant_bytes += t.nbytes;
    }
    /* Unique names: quadratic, but programs have tens to hundreds of tensors and no heap. */
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        const uint8_t *a = p->data + p->tensors_offset + (size_t)i * p->tensor_record_size;
        for (uint32_t j = 0; j < i; j++) {
            const uint8_t *b = p->data + p->tensors_offset + (size_t)j * p->tensor_record_size;
            uint32_t la = mf_rd_u32(a + 4), lb = mf_rd_u32(b + 4);
            if (la == lb && memcmp(p->data + p->strings_offset + mf_rd_u32(a),
                                   p->data + p->strings_offset + mf_rd_u32(b), la) == 0) {
                return fail_tensor(p, (int32_t)i, MF_ERR_FORMAT);
            }
        }
    }
    if (constant_bytes != mf_rd_u32(p->data + 28)) return MF_ERR_FORMAT;
    return MF_OK;
}

/* ---- 11: attribute values ---- */
static mf_status check_value(const mf_program *p, uint32_t pos, uint32_t end, uint32_t depth,
                             uint32_t n_inputs, uint32_t *next) {
    if (pos >= end) return MF_ERR_BOUNDS;
    uint32_t word = mf_attr_word(p, pos);
    uint32_t tag = word & 0xFFu, count = word >> 8;
    uint32_t left = end - pos - 1; /* payload words available */
    switch (tag) {
    case MF_TAG_NONE:
        if (count != 0) return MF_ERR_FORMAT;
        *next = pos + 1;
        return MF_OK;
    case MF_TAG_INT: case MF_TAG_FLOAT: case MF_TAG_BOOL: case MF_TAG_TENSOR:
        if (count != 1) return MF_ERR_FORMAT;
        if (left < 1) return MF_ERR_BOUNDS;
        if (tag == MF_TAG_BOOL && mf_attr_word(p, pos + 1) > 1) return MF_ERR_FORMAT;
        if (tag == MF_TAG_TENSOR && mf_attr_word(p, pos + 1) >= n_inputs) return MF_ERR_BOUNDS;
        *next = pos + 2;
        return MF_OK;
    case MF_TAG_INT64: case MF_TAG_STR:
        if (count != 1) return MF_ERR_FORMAT;
        if (left < 2) return MF_ERR_BOUNDS;
        if (tag == MF_TAG_STR) {
            mf_status s = check_string(p, mf_attr_word(p, pos + 1), mf_attr_word(p, pos + 2));
            if (s != MF_OK) return s;
        }
        *next = pos + 3;
        return MF_OK;
    case MF_TAG_INTS: case MF_TAG_FLOATS:
        if (count > left) return MF_ERR_BOUNDS;
        *next = pos + 1 + count;
        return MF_OK;
    case MF_TAG_LIST: case MF_TAG_DICT: {
        if (depth >= MF_MAX_VALUE_DEPTH) return MF_ERR_FORMAT;
        if (left < 1) return MF_ERR_BOUNDS;
        uint32_t size = mf_attr_word(p, pos + 1);
        if (size > left - 1) return MF_ERR_BOUNDS;
        uint32_t inner_end = pos + 2 + size, q = pos + 2;
        for (uint32_t k = 0; k < count; k++) {
            if (tag == MF_TAG_DICT) {
                if (q >= inner_end) return MF_ERR_BOUNDS;
                if ((mf_attr_word(p, q) & 0xFFu) != MF_TAG_STR) return MF_ERR_FORMAT;
                uint32_t key = q;
                mf_status s = check_value(p, q, inner_end, depth + 1, n_inputs, &q);
                if (s != MF_OK) return s;
                /* unique keys: compare with the keys before this one */
                uint32_t r = pos + 2;
                while (r < key) {
                    uint32_t lr = mf_attr_word(p, r + 2), lk = mf_attr_word(p, key + 2);
                    if (lr == lk && memcmp(p->data + p->strings_offset + mf_attr_word(p, r + 1),
                                           p->data + p->strings_offset + mf_attr_word(p, key + 1), lk) == 0) {
                        return MF_ERR_FORMAT;
                    }
                    mf_value v = {p, r + 3}; /* skip the key (3 words) and its value */
                    r = r + 3 + mf_value_words(v);
                }
            }
            mf_status s = check_value(p, q, inner_end, depth + 1, n_inputs, &q);
            if (s != MF_OK) return s;
        }
        if (q != inner_end) return MF_ERR_FORMAT;
        *next = inner_end;
        return MF_OK;
    }
    default:
        return MF_ERR_FORMAT;
    }
}

static mf_status check_attrs(const mf_program *p, const mf_call *c, const char *types) {
    uint32_t end = c->attrs_start + c->attr_words, pos = c->attrs_start;
    int optional = 0; /* past a '?': the attributes may end here */
    for (const char *t = types; *t; t++) {
        if (*t == '?') {
            optional = 1;
            continue;
        }
        if (pos >= end) {
            if (optional) break;
            return MF_ERR_BOUNDS;
        }
        mf_status s = check_value(p, pos, end, 0, c->n_in, &pos);
        if (s != MF_OK) return s;
    }
    if (pos != end) return MF_ERR_FORMAT;
    /* typed attributes: the tag of their type */
    pos = c->attrs_start;
    for (const char *t = types; *t && pos < end; t++) {
        if (*t == '?') continue;
        mf_value v = {p, pos};
        uint8_t tag = mf_value_tag(v);
        uint8_t want = *t == 'i' ? MF_TAG_INT : *t == 'f' ? MF_TAG_FLOAT : *t == 'I' ? MF_TAG_INTS
                     : *t == 's' ? MF_TAG_STR : 0xFF;
        if (want != 0xFF && tag != want) return MF_ERR_FORMAT;
        pos += mf_value_words(v);
    }
    return MF_OK;
}

/* ---- 10: ops ---- */
/* Arena bytes [offset, offset + nbytes) of index-pool entry e; 0 for a constant, an absent input or an
 * empty tensor (they take no arena bytes). */
static int arena_span(const mf_program *p, uint32_t e, uint32_t *lo, uint32_t *hi) {
    int32_t idx = mf_index_entry(p, e);
    if (idx < 0) return 0;
    mf_tensor t;
    mf_tensor_read(p, (uint32_t)idx, &t);
    if ((t.flags & MF_TENSOR_FLAG_CONSTANT) || t.nbytes == 0) return 0;
    *lo = t.offset;
    *hi = t.offset + mf_tensor_extent(&t); /* no wrap: offset + extent <= arena_bytes was checked */
    return 1;
}

/* Whether pitched input k of a concat_s8 (format 3.4) lies on its channel slice of the output: the concat along
 * axis 3 of 4-D tensors, the output dense with pitch channels, the input at the output's offset plus the channels
 * of the inputs before it. */
static int concat_channel_slice(const mf_program *p, const mf_call *c, uint32_t k, uint32_t o_lo, uint32_t s_lo) {
    mf_tensor t, o;
    mf_call_output(c, 0, &o);
    int32_t idx = mf_index_entry(p, c->in_start + k);
    if (idx < 0 || mf_value_int(mf_attr(c, 0)) != 3 || o.rank != 4 || o.pitch != 0) return 0;
    mf_tensor_read(p, (uint32_t)idx, &t);
    if (t.pitch != o.shape[3]) return 0;
    uint64_t at = o_lo;
    for (uint32_t i = 0; i < k; i++) {
        idx = mf_index_entry(p, c->in_start + i);
        if (idx < 0) return 0;
        mf_tensor_read(p, (uint32_t)idx, &t);
        if (t.rank != 4) return 0;
        at += t.shape[3];
    }
    return at == s_lo;
}

/* A pitched tensor is written only as the one output of conv2d_s8, avgpool_s8 or maxpool_s8 (their kernels write
 * pixel p at out + p * pitch) and read only by a concat_s8 on its channel slice (concat_channel_slice, checked
 * with the overlaps); every other kernel reads and writes dense tensors. */
static int pitch_uses_ok(const mf_program *p, const mf_call *c) {
    for (uint32_t j = 0; j < c->n_in + c->n_out; j++) {
        const int32_t idx = mf_index_entry(p, j < c->n_in ? c->in_start + j : c->out_start + (j - c->n_in));
        if (idx < 0) continue;
        mf_tensor t;
        mf_tensor_read(p, (uint32_t)idx, &t);
        if (t.pitch == 0) continue;
        if (j < c->n_in) {
            uint32_t lo, hi, o_lo, o_hi;
            if (c->kind != MF_KIND_CONCAT_S8 || c->n_out != 1 || !arena_span(p, c->in_start + j, &lo, &hi) ||
                !arena_span(p, c->out_start, &o_lo, &o_hi) || hi > o_hi || !concat_channel_slice(p, c, j, o_lo, lo)) {
                return 0;
            }
        } else if ((c->kind != MF_KIND_CONV2D_S8 && c->kind != MF_KIND_AVGPOOL_S8 && c->kind != MF_KIND_MAXPOOL_S8) ||
                   c->n_out != 1) {
            return 0;
        }
    }
    return 1;
}

/* Whether input k of a concat_s8 lies exactly on its own slice of the output (concat by placement: its
 * producer wrote it there and the kernel copies nothing): every axis before the concat axis has extent 1,
 * so the slice is the contiguous bytes after inputs 0..k-1. Runs after check_attrs (the axis is an int). */
static int concat_slice(const mf_program *p, const mf_call *c, uint32_t k, uint32_t o_lo, uint32_t s_lo) {
    if (c->kind != MF_KIND_CONCAT_S8 || c->n_out != 1) return 0;
    mf_tensor t;
    int32_t idx = mf_index_entry(p, c->in_start + k);
    if (idx < 0) return 0;
    mf_tensor_read(p, (uint32_t)idx, &t);
    const int32_t axis = mf_value_int(mf_attr(c, 0));
    if (axis < 0 || (uint32_t)axis >= t.rank) return 0;
    if (t.pitch != 0) return concat_channel_slice(p, c, k, o_lo, s_lo);
    for (int32_t a = 0; a < axis; a++) {
        if (t.shape[a] != 1) return 0;
    }
    uint64_t at = o_lo;
    for (uint32_t i = 0; i < k; i++) {
        idx = mf_index_entry(p, c->in_start + i);
        if (idx < 0) return 0;
        mf_tensor_read(p, (uint32_t)idx, &t);
        at += t.nbytes;
    }
    return at == s_lo; /* the caller checked the input ends inside the output */
}

/* Whether a slice marked outside (attribute 3 = 1) has its output [o_lo, o_hi) clear of every byte its box
 * reads in its input at s_lo: a 4-D input, unit steps, 0 <= begin < end <= extent per dim; each (batch, row)
 * of the box is one byte range, from its first column's first channel to its last column's last channel
 * (the planner put the output over dead rows of an overlapped graph input: mcuforge.plan.input_bands). */
static int slice_outside(const mf_program *p, const mf_call *c, uint32_t o_lo, uint32_t o_hi, uint32_t s_lo) {
    if (c->kind != MF_KIND_SLICE || c->n_in != 1 || !mf_attr_present(c, 3) || mf_value_int(mf_attr(c, 3)) != 1) {
        return 0;
    }
    mf_tensor t;
    const int32_t idx = mf_index_entry(p, c->in_start);
    if (idx < 0) return 0;
    mf_tensor_read(p, (uint32_t)idx, &t);
    const mf_value b = mf_attr(c, 0), e = mf_attr(c, 1), s = mf_attr(c, 2);
    if (t.rank != 4 || mf_value_count(b) != 4 || mf_value_count(e) != 4 || mf_value_count(s) != 4) return 0;
    int64_t lo[4], hi[4];
    for (uint32_t k = 0; k < 4; k++) {
        lo[k] = mf_value_ints_at(b, k);
        hi[k] = mf_value_ints_at(e, k);
        if (mf_value_ints_at(s, k) != 1 || lo[k] < 0 || lo[k] >= hi[k] || hi[k] > (int64_t)t.shape[k]) return 0;
    }
    const uint64_t item = t.numel ? t.nbytes / t.numel : 1u;
    const uint64_t w = t.shape[2], ch = t.shape[3];
    for (int64_t n = lo[0]; n < hi[0]; n++) {
        for (int64_t r = lo[1]; r < hi[1]; r++) {
            const uint64_t row = ((uint64_t)n * t.shape[1] + (uint64_t)r) * w;
            const uint64_t first = s_lo + ((row + (uint64_t)lo[2]) * ch + (uint64_t)lo[3]) * item;
            const uint64_t last = s_lo + ((row + (uint64_t)hi[2] - 1u) * ch + (uint64_t)hi[3]) * item;
            if (o_lo < last && first < o_hi) return 0;
        }
    }
    return 1;
}

/* No output shares arena bytes with an activation input or another output: kernels read their inputs
 * while writing (memcpy included). The planner's exceptions: an output at the first byte of an input
 * that its kind may write in place, ending inside it (a strided in-place depthwise output is smaller);
 * a concat_s8 input on its own slice of the output (concat_slice); a slice marked outside whose output
 * misses its box (slice_outside). */
static int outputs_apart(const mf_program *p, const mf_call *c) {
    for (uint32_t j = 0; j < c->n_out; j++) {
        uint32_t o_lo, o_hi, s_lo, s_hi;
        if (!arena_span(p, c->out_start + j, &o_lo, &o_hi)) continue;
        for (uint32_t k = 0; k < c->n_in + j; k++) {
            uint32_t e = k < c->n_in ? c->in_start + k : c->out_start + (k - c->n_in);
            if (!arena_span(p, e, &s_lo, &s_hi) || !(o_lo < s_hi && s_lo < o_hi)) continue;
            if (k < c->n_in && mf_kind_in_place(c->kind, k) && o_lo == s_lo && o_hi <= s_hi) continue;
            if (k < c->n_in && j == 0 && s_hi <= o_hi && concat_slice(p, c, k, o_lo, s_lo)) continue;
            if (k == 0 && j == 0 && slice_outside(p, c, o_lo, o_hi, s_lo)) continue;
            return 0;
        }
    }
    return 1;
}

/* The op's scratch buffer: 16-byte aligned inside the arena, no byte shared with the op's
 * activations (the kernel reads and writes them meanwhile); offset 0 without scratch. Runs after
 * the input and output indices are checked. */
static mf_status check_scratch(const mf_program *p, const mf_call *c) {
    if (c->scratch_bytes == 0) return c->scratch_offset == 0 ? MF_OK : MF_ERR_FORMAT;
    const uint64_t lo = c->scratch_offset, hi = lo + c->scratch_bytes;
    if (lo % 16u) return MF_ERR_FORMAT;
    if (hi > p->arena_bytes) return MF_ERR_BOUNDS;
    if (!in_one_region(p, lo, c->scratch_bytes) || !clear_of_constants(p, lo, c->scratch_bytes)) {
        return MF_ERR_FORMAT;
    }
    for (uint32_t j = 0; j < c->n_in + c->n_out; j++) {
        const int32_t idx = mf_index_entry(p, j < c->n_in ? c->in_start + j : c->out_start + (j - c->n_in));
        if (idx < 0) continue;
        mf_tensor t;
        mf_tensor_read(p, (uint32_t)idx, &t);
        if (t.flags & MF_TENSOR_FLAG_CONSTANT || t.nbytes == 0) continue;
        if (lo < (uint64_t)t.offset + mf_tensor_extent(&t) && t.offset < hi) return MF_ERR_FORMAT;
    }
    return MF_OK;
}

/* int4 tensors are the packed weights of the s4 kernels (input 1, kind_table.h) and nothing else; S4_HALVES
 * (and S8_PAIRS) ones only those of the kernels that read that layout. */
static int int4_use_ok(const mf_program *p, uint16_t kind, uint32_t input, int32_t tensor) {
    mf_tensor t;
    mf_tensor_read(p, (uint32_t)tensor, &t);
    if (t.layout == MF_LAYOUT_S4_HALVES) {
        return input == 1u && (kind == MF_KIND_CONV2D_S4 || kind == MF_KIND_FULLY_CONNECTED_S4);
    }
    if (t.layout == MF_LAYOUT_S8_PAIRS) {
        return input == 1u && (kind == MF_KIND_FULLY_CONNECTED_S8 || kind == MF_KIND_FULLY_CONNECTED_PER_CHANNEL_S8);
    }
    return t.dtype != MF_INT4 || mf_kind_int4_input(kind, input);
}

static mf_status check_op(const mf_program *p, uint32_t i) {
    mf_call c;
    mf_call_read(p, i, NULL, &c);
    const mf_kernel *k = mf_kernel_lookup(c.kind);
    if (k == NULL) return MF_ERR_UNSUPPORTED_OP;
    if (c.backend > 2 || (c.backend == 2) != (c.kind == MF_KIND_DELEGATE)) return MF_ERR_FORMAT; /* 2: npu */
    if (c.precision > MF_PREC_A16W8) return MF_ERR_FORMAT;
    if (c.precision != MF_PREC_NONE && !((mf_kind_precisions(c.kind) >> c.precision) & 1u)) return MF_ERR_FORMAT;
    if (k->n_in_max != 255 && (c.n_in < k->n_in_min || c.n_in > k->n_in_max)) return MF_ERR_FORMAT;
    if (c.in_start > p->index_count || c.n_in > p->index_count - c.in_start) return MF_ERR_BOUNDS;
    if (c.out_start > p->index_count || c.n_out > p->index_count - c.out_start) return MF_ERR_BOUNDS;
    for (uint32_t j = 0; j < c.n_in; j++) {
        int32_t idx = mf_index_entry(p, c.in_start + j);
        if (idx == MF_ABSENT_INPUT && j < 8 && (k->optional_mask >> j) & 1u) continue;
        if (idx < 0 || (uint32_t)idx >= p->tensor_count) return MF_ERR_BOUNDS;
        if (!int4_use_ok(p, c.kind, j, idx)) return MF_ERR_FORMAT;
    }
    for (uint32_t j = 0; j < c.n_out; j++) {
        int32_t idx = mf_index_entry(p, c.out_start + j);
        if (idx < 0 || (uint32_t)idx >= p->tensor_count) return MF_ERR_BOUNDS;
        mf_tensor t;
        mf_tensor_read(p, (uint32_t)idx, &t);
        if (t.flags & MF_TENSOR_FLAG_CONSTANT) return MF_ERR_FORMAT;
    }
    if (c.attrs_start > p->attr_word_count || c.attr_words > p->attr_word_count - c.attrs_start) {
        return MF_ERR_BOUNDS;
    }
    mf_status s = check_attrs(p, &c, k->attr_types);
    if (s != MF_OK) return s;
    if (!outputs_apart(p, &c) || !pitch_uses_ok(p, &c)) return MF_ERR_FORMAT;
    return check_scratch(p, &c);
}

/* ---- 12: graph inputs and outputs ---- */
static mf_status check_graph_io(const mf_program *p, uint32_t start, uint32_t count, int is_input) {
    if (start > p->index_count || count > p->index_count - start) return MF_ERR_BOUNDS;
    for (uint32_t j = 0; j < count; j++) {
        int32_t idx = mf_index_entry(p, start + j);
        if (idx < 0 || (uint32_t)idx >= p->tensor_count) return MF_ERR_BOUNDS;
        mf_tensor t;
        mf_tensor_read(p, (uint32_t)idx, &t);
        if (is_input && (t.flags & MF_TENSOR_FLAG_CONSTANT)) return MF_ERR_FORMAT;
        if (t.dtype == MF_INT4) return MF_ERR_FORMAT; /* packed weights are no graph input or output */
        if (t.pitch != 0) return MF_ERR_FORMAT;      /* graph inputs and outputs are dense */
    }
    return MF_OK;
}

/* ---- beyond the format: each op fits its kernel ---- */
static mf_status check_kernels(mf_program *p) {
    uint32_t scratch = 0;
    for (uint32_t i = 0; i < p->op_count; i++) {
        mf_call c;
        mf_call_read(p, i, NULL, &c);
        const mf_kernel *k = mf_kernel_lookup(c.kind);
        mf_status s = k->check(&c);
        if (s != MF_OK) return fail_op(p, (int32_t)i, s);
        if (c.scratch_bytes > scratch) scratch = c.scratch_bytes;
    }
    p->scratch_bytes = scratch;
    return MF_OK;
}

mf_status mf_program_load(mf_program *p, const uint8_t *data, size_t size) {
    if (p == NULL) return MF_ERR_ARG;
    memset(p, 0, sizeof *p);
    p->error_op = -1;
    p->error_tensor = -1;
    if (data == NULL || ((uintptr_t)data & 3u)) return MF_ERR_ARG;
    if ((size >> 16 >> 16) != 0) return MF_ERR_FORMAT; /* > 4 GiB; no -Wtype-limits error with a 32-bit size_t */
    p->data = data;
    mf_status s = check_header(p, data, size);
    if (s == MF_OK) s = check_sections(p);
    if (s == MF_OK) s = check_regions(p);
    if (s == MF_OK) s = check_constants_copy(p);
    if (s == MF_OK && p->constants_in_ram && !in_one_region(p, p->constants_at, p->constants_size)) {
        s = MF_ERR_FORMAT;
    }
    if (s == MF_OK) s = check_tensors(p);
    for (uint32_t i = 0; s == MF_OK && i < p->op_count; i++) {
        s = check_op(p, i);
        if (s != MF_OK) fail_op(p, (int32_t)i, s);
    }
    if (s == MF_OK) s = check_graph_io(p, p->inputs_start, p->input_count, 1);
    if (s == MF_OK) s = check_graph_io(p, p->outputs_start, p->output_count, 0);
    if (s == MF_OK) s = check_kernels(p);
    if (s != MF_OK) {
        /* keep the error location; nothing else of a rejected program may be used */
        int32_t op = p->error_op, tensor = p->error_tensor;
        memset(p, 0, sizeof *p);
        p->error_op = op;
        p->error_tensor = tensor;
    }
    return s;
}

uint32_t mf_program_arena_bytes(const mf_program *p) {
    if (p == NULL || p->data == NULL) return 0;
    return p->arena_bytes;
}

uint32_t mf_program_region_count(const mf_program *p) {
    return p == NULL || p->data == NULL ? 0 : p->region_count;
}

const char *mf_program_region_name(const mf_program *p, uint32_t k) {
    if (p == NULL || p->data == NULL || k >= p->region_count) return NULL;
    return mf_string(p, p->region_name[k]);
}

uint32_t mf_program_region_bytes(const mf_program *p, uint32_t k) {
    if (p == NULL || p->data == NULL || k >= p->region_count) return 0;
    return p->region_bytes[k];
}
