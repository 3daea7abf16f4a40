/* The dispatch tables: op kind id -> kernel, aten name -> fp32 op. Generated from
 * kernels/kernel_list.h and kernels/fp32/aten_list.h (one line per kernel there). */
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

const mf_kernel *mf_kernel_find(uint16_t kind) {
    for (size_t i = 0; kernels[i] != NULL; i++) {
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

const mf_aten_op *mf_aten_find(const char *target, uint32_t length) {
    for (size_t i = 0; aten_ops[i] != NULL; i++) {
        const char *name = aten_ops[i]->target;
        if (strlen(name) == length && memcmp(name, target, length) == 0) return aten_ops[i];
    }
    return NULL;
}
