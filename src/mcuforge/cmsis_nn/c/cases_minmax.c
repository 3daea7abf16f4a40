/* CMSIS-NN's int8 elementwise maximum and minimum behind the harness's signature (mfcmp.h).
 *
 * ints: n1, h1, w1, c1, n2, h2, w2, c2, n, h, w, c (12): the two inputs' and the output's cmsis_nn_dims
 * inputs: a int8 [n1, h1, w1, c1], b int8 [n2, h2, w2, c2]; output: int8 [n, h, w, c]
 * mcuforge/cmsis_nn/ops_minmax.py builds them. */
#include "mfcmp.h"

typedef arm_cmsis_nn_status (*minmax_fn)(const cmsis_nn_context *, const int8_t *, const cmsis_nn_dims *,
                                         const int8_t *, const cmsis_nn_dims *, int8_t *, const cmsis_nn_dims *);

static int32_t minmax_s8(minmax_fn fn, const int32_t *k, const void *const *in, void *output, void *scratch) {
    cmsis_nn_context ctx;
    ctx.buf = scratch; /* neither kernel uses it */
    ctx.size = 0;
    const cmsis_nn_dims a = mfc_dims(k[0], k[1], k[2], k[3]), b = mfc_dims(k[4], k[5], k[6], k[7]);
    const cmsis_nn_dims out = mfc_dims(k[8], k[9], k[10], k[11]);
    return fn(&ctx, (const int8_t *)in[0], &a, (const int8_t *)in[1], &b, (int8_t *)output, &out);
}

int32_t mfcmp_maximum_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                         int32_t scratch_bytes) {
    (void)scratch_bytes;
    return minmax_s8(arm_maximum_s8, ints, inputs, output, scratch);
}

int32_t mfcmp_minimum_s8(const int32_t *ints, const void *const *inputs, void *output, void *scratch,
                         int32_t scratch_bytes) {
    (void)scratch_bytes;
    return minmax_s8(arm_minimum_s8, ints, inputs, output, scratch);
}
