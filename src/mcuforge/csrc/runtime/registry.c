/* The dispatch tables: op kind id -> kernel, fp32 table index -> fp32 op. Generated from
 * kernels/kernel_list.h and kernels/fp32/aten_list.h (one line per kernel there).
 *
 * Both lookups run once per op per mf_invoke, so they are cheap: kernel_list.h lists the kernels
 * in increasing kind id (tests/test_c_runtime.py checks it), so a kind is a binary search of at
 * most five probes (a plain scan if the list were out of order: slower, never wrong); an aten_fp32
 * op carries the index of its aten op in aten_list.h's name order (its table_index attribute,
 * checked against the name when the program is loaded), so it is one array read. */
#include "mf_internal.h"

#define MF_KERNEL(name) extern const mf_kernel mf_kernel_##name;
#include "../kernels/kernel_list.h"
#undef MF_KERNEL

/* Each table ends with NULL, which also keeps it a valid C array when an export-c build lists no
 * entry (a program without fp32 ops exports an empty aten_list.h). */
static const mf_kernel *const kernels[] = {
#define MF_KERNEL(name) &mf_kernel_##name,
#include "../kernels/kernel_list.h"
#undef MF_KERNEL
    NULL};

#define KERNEL_COUNT (sizeof kernels / sizeof kernels[0] - 1) /* without the NULL */

const mf_kernel *mf_kernel_find(uint16_t kind) {
    size_t lo = 0, hi = KERNEL_COUNT;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const uint16_t k = kernels[mid]->kind;
        if (k == kind) return kernels[mid];
        if (k < kind) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for (size_t i = 0; i < KERNEL_COUNT; i++) { /* kernel_list.h out of kind order */
        if (kernels[i]->kind == kind) return kernels[i];
    }
    return NULL;
}

#define MF_ATEN(symbol) extern const mf_aten_op mf_aten_##symbol;
#define MF_ATEN_UNUSED(symbol)
#include "../kernels/fp32/aten_list.h"
#undef MF_ATEN
#undef MF_ATEN_UNUSED

/* In aten name order; an exported project's unused entries are NULL (their position kept). */
static const mf_aten_op *const aten_ops[] = {
#define MF_ATEN(symbol) &mf_aten_##symbol,
#define MF_ATEN_UNUSED(symbol) NULL,
#include "../kernels/fp32/aten_list.h"
#undef MF_ATEN
#undef MF_ATEN_UNUSED
    NULL};

#define ATEN_COUNT (sizeof aten_ops / sizeof aten_ops[0] - 1) /* without the final NULL */

const mf_aten_op *mf_aten_at(int32_t index) {
    return index >= 0 && (uint32_t)index < ATEN_COUNT ? aten_ops[index] : NULL;
}

const mf_aten_op *mf_aten_find(const char *target, uint32_t length) {
    for (size_t i = 0; i < ATEN_COUNT; i++) {
        const char *name = aten_ops[i] ? aten_ops[i]->target : NULL;
        if (name == NULL) continue;
        uint32_t j = 0; /* never reads past name's NUL, whatever bytes target holds */
        while (j < length && name[j] != '\0' && name[j] == target[j]) j++;
        if (j == length && name[j] == '\0') return aten_ops[i];
    }
    return NULL;
}
