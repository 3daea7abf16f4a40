/* The dispatch tables: op kind id -> kernel, aten name -> fp32 op. Generated from
 * kernels/kernel_list.h and kernels/fp32/aten_list.h (one line per kernel there).
 *
 * Both lookups run once per op per mf_invoke, so they are cheap: kernel_list.h lists the kernels
 * in increasing kind id (tests/test_c_runtime.py checks it), so a kind is a binary search of at
 * most five probes; an aten name is compared first by the character after "aten." and only then
 * in full (no strlen), a few instructions per table entry. Either falls back to a plain scan, so a
 * list out of order is slower, never wrong. */
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
#include "../kernels/fp32/aten_list.h"
#undef MF_ATEN

static const mf_aten_op *const aten_ops[] = {
#define MF_ATEN(symbol) &mf_aten_##symbol,
#include "../kernels/fp32/aten_list.h"
#undef MF_ATEN
    NULL};

/* Every aten name starts with "aten." (5 characters): the 6th tells most entries apart. */
#define ATEN_PREFIX 5u

const mf_aten_op *mf_aten_find(const char *target, uint32_t length) {
    if (length <= ATEN_PREFIX) return NULL;
    const char first = target[ATEN_PREFIX];
    for (size_t i = 0; aten_ops[i] != NULL; i++) {
        const char *name = aten_ops[i]->target;
        if (name[ATEN_PREFIX] != first) continue;
        uint32_t j = 0; /* never reads past name's NUL, whatever bytes target holds */
        while (j < length && name[j] != '\0' && name[j] == target[j]) j++;
        if (j == length && name[j] == '\0') return aten_ops[i];
    }
    return NULL;
}
