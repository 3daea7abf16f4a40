/* What every comparison function (c/cases_*.c) shares: the signature, the harness's own error codes
 * and small helpers around CMSIS-NN's types.
 *
 *   int32_t mfcmp_<name>(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
 *                        int32_t scratch_bytes);
 *
 * ints: the case's integer parameters (dims, offsets, multipliers...) in the order the function's
 * comment lists; inputs: data pointers in a fixed order; output: where the result goes; scratch: the
 * buffer handed to CMSIS-NN as ctx.buf. A function returns 0, or the arm_cmsis_nn_status of the call,
 * or a harness error below. The harness (mcuforge/cmsis_nn/harness.py) finds every non-static
 * definition of a function named mfcmp_* in c/cases_*.c by scanning the text (on the board it
 * generates a dispatch table from that scan): write each definition as
 *
 *   int32_t mfcmp_name(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
 *                      int32_t scratch_bytes) {
 *
 * starting at the beginning of a line, and give helpers other names (or make them static).
 */
#ifndef MFCMP_H
#define MFCMP_H

#include <stdint.h>

#include "arm_nnfunctions.h"

/* scratch_bytes is less than what the CMSIS-NN call asks (its *_get_buffer_size);
 * mfc_scratch_needed holds the size it asked. */
#define MFCMP_ERR_SCRATCH (-1001)
/* The case's ints or inputs are not what the function takes (a count, a size, a flag out of range). */
#define MFCMP_ERR_ARGS (-1002)

typedef int32_t (*mfcmp_fn)(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                            int32_t scratch_bytes);

/* The scratch size the last MFCMP_ERR_SCRATCH asked for (support.c). */
extern int32_t mfc_scratch_needed;

/* ctx for a CMSIS-NN call that asks `need` bytes of scratch: buf = scratch (never NULL: some paths refuse a
 * NULL buffer even where they ask none), size = need; returns
 * MFCMP_ERR_SCRATCH (and records need) when scratch_bytes is smaller, else 0. A negative need (a
 * *_get_buffer_size error) is MFCMP_ERR_ARGS. */
static inline int32_t mfc_context(cmsis_nn_context *ctx, void *scratch, int32_t scratch_bytes, int32_t need) {
    if (need < 0) return MFCMP_ERR_ARGS;
    if (need > scratch_bytes) {
        mfc_scratch_needed = need;
        return MFCMP_ERR_SCRATCH;
    }
    ctx->buf = scratch;
    ctx->size = need;
    return 0;
}

static inline cmsis_nn_dims mfc_dims(int32_t n, int32_t h, int32_t w, int32_t c) {
    cmsis_nn_dims d;
    d.n = n;
    d.h = h;
    d.w = w;
    d.c = c;
    return d;
}

static inline cmsis_nn_tile mfc_tile(int32_t h, int32_t w) {
    cmsis_nn_tile t;
    t.h = h;
    t.w = w;
    return t;
}

static inline cmsis_nn_activation mfc_activation(int32_t min, int32_t max) {
    cmsis_nn_activation a;
    a.min = min;
    a.max = max;
    return a;
}

#endif /* MFCMP_H */
