/*
 * fully_connected_s8: bit-exact with CMSIS-NN arm_fully_connected_s8 (per-tensor requantization; length-O
 * multipliers and shifts, as format 1.0 files hold them, requantize per channel) and
 * fully_connected_per_channel_s8: arm_fully_connected_per_channel_s8, the same kernel with one multiplier
 * and shift per output channel required. The input is read as rows of weight.shape[1] features, whatever
 * its shape (the host runtime's reshape(-1, I)).
 *
 * run() is the portable statement of the math. The optimized paths give the same int32 sums:
 *   DSP: 3 output channels per loop (the last 2 or 1 apart), 4 features per step -- the input widened once per step with
 *        the offset added (SXTAB16), the weights with SXTB16, two SMLADs per channel (the loop in asm,
 *        fc_rows3_asm, over whole groups of 8 features); with input offset 0 (what the lowering gives:
 *        it folds the offset into the bias) 4 channels per loop first (rows4: fc_rows4_asm, the input and
 *        four rows reached from one pointer, its instructions ordered for the Cortex-M4's load pipelining
 *        and the Cortex-M7's dual issue), their sums started at bias + extra and requantized 4 at a time in
 *        asm (fc_out4_asm), the 4 bytes clamped together and stored as one word; with S8_PAIRS weights
 *        (below, what the compiler stores for these cores) rows_pairs: 4 channels per block, each weight word
 *        two rows' bytes, one SXTB16 per word where the plain layout takes two;
 *   MVE: 4 output channels per loop over 16 lanes: one input load, VMLADAVA per channel. The
 *        lowering folds the input offset into the bias of every fully connected layer; then the loop
 *        is one tail-predicated asm block (rows4_asm; for whole groups of 4 with vector requantization
 *        rows4_requant, the same block inline and the 4 outputs requantized as one vector). With an offset, the weights' sums are taken
 *        by VADDVA in the same (C) loop and the offset enters as offset * sum(weights).
 *
 * S8_PAIRS weights (layout 3, docs/format.md "Layouts", mcuforge.kernels.fc_pairs; O and I multiples of 4) are
 * read by the DSP cores' rows_pairs with input offset 0, and by every other path through pairs_weight (the
 * portable arithmetic: a program for a DSP core runs on the others, slowly).
 *
 * filter_offset (optional fifth attribute, 0 when absent: CMSIS-NN's fc_params->filter_offset, the negated
 * weight zero point, in [-127, 128]): sum((x + in_off) * (w + f_off)) = sum((x + in_off) * w) + f_off * sum(x +
 * in_off), the second term one int32 per input row (`extra`), added to every output of the row on every
 * path; all of it wraps as CMSIS-NN's int32 sums do.
 */
#include "mf_scalar.h"

enum { A_IN_OFF, A_OUT_OFF, A_ACT_MIN, A_ACT_MAX, A_FILTER_OFF };

static mf_status check(const mf_call *c) {
    const mf_status s = mf_check_fully_connected(c, MF_INT8);
    if (s != MF_OK) return s;
    const int32_t f_off = mf_attr_int_or(c, A_FILTER_OFF, 0);
    return -127 <= f_off && f_off <= 128 ? MF_OK : MF_ERR_SHAPE;
}

/* f_off * sum(x[k] + in_off) over one input row (wrapping): what the filter offset adds to each output. */
static int32_t filter_offset_term(const int8_t *x, uint32_t depth, int32_t in_off, int32_t f_off) {
    if (f_off == 0) return 0;
    int32_t sum = 0; /* |sum| <= 128 * MF_MAX_DOT_DEPTH */
    for (uint32_t k = 0; k < depth; k++) sum += x[k];
    return mf_mul_wrap(f_off, sum + (int32_t)depth * in_off);
}

#if defined(MF_USE_DSP)
#if defined(__OPTIMIZE__)
/* One group of 4 features of rows3's loop: the input word and two rows' weight words as one run of
 * loads (pipelined: 4 cycles for 3 on the Cortex-M4), the third row's word after. */
#define FC_ROWS3_GROUP                                                                                 \
    "   ldr     %[xv], [%[x]], #4\n"                                                                  \
    "   ldr     %[v], [%[p0]], #4\n"                                                                  \
    "   ldr     %[v2], [%[p1]], #4\n"                                                                 \
    "   sxtab16 %[x02], %[off], %[xv]\n"                                                              \
    "   sxtab16 %[xv], %[off], %[xv], ror #8\n"                                                       \
    "   sxtb16  %[t], %[v]\n"                                                                         \
    "   sxtb16  %[v], %[v], ror #8\n"                                                                 \
    "   smlad   %[a0], %[x02], %[t], %[a0]\n"                                                         \
    "   smlad   %[a0], %[xv], %[v], %[a0]\n"                                                          \
    "   sxtb16  %[t], %[v2]\n"                                                                        \
    "   sxtb16  %[v2], %[v2], ror #8\n"                                                               \
    "   smlad   %[a1], %[x02], %[t], %[a1]\n"                                                         \
    "   smlad   %[a1], %[xv], %[v2], %[a1]\n"                                                        \
    "   ldr     %[v], [%[p2]], #4\n"                                                                  \
    "   sxtb16  %[t], %[v]\n"                                                                         \
    "   sxtb16  %[v], %[v], ror #8\n"                                                                 \
    "   smlad   %[a2], %[x02], %[t], %[a2]\n"                                                         \
    "   smlad   %[a2], %[xv], %[v], %[a2]\n"

/* rows3's loop over the first n8 features (a multiple of 8, > 0) in asm, two groups per iteration: the
 * compiler's code reloads values from the stack in it. Fourteen registers: every core register but sp
 * and pc. Moves x, p0, p1, p2 past them. */
static inline __attribute__((always_inline)) void fc_rows3_asm(const int8_t **xp, const int8_t **q0,
                                                              const int8_t **q1, const int8_t **q2, uint32_t n8,
                                                              int32_t off16, int32_t acc[3]) {
    const int8_t *x = *xp, *p0 = *q0, *p1 = *q1, *p2 = *q2, *xend = x + n8;
    int32_t a0 = 0, a1 = 0, a2 = 0, xv, v, v2, t, x02;
    __asm__ volatile("1:\n" FC_ROWS3_GROUP FC_ROWS3_GROUP
                     "   cmp     %[x], %[xend]\n"
                     "   bne     1b\n"
                     : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [x] "+r"(x), [p0] "+r"(p0), [p1] "+r"(p1),
                       [p2] "+r"(p2), [xv] "=&r"(xv), [v] "=&r"(v), [v2] "=&r"(v2), [t] "=&r"(t), [x02] "=&r"(x02)
                     : [xend] "r"(xend), [off] "r"(off16)
                     : "cc", "memory");
    (void)xv, (void)v, (void)v2, (void)t, (void)x02;
    *xp = x, *q0 = p0, *q1 = p1, *q2 = p2;
    acc[0] = a0, acc[1] = a1, acc[2] = a2;
}
#define FC_ROWS3_ASM 1
#endif

#if defined(__OPTIMIZE__) /* -O0 keeps a frame pointer: the loop's 14 registers do not fit */
/* Two groups of 4 features of rows4's loop (input offset 0). One pointer, p0, walks row 0 and reaches the
 * input (p0 + dx) and rows 1-3 (p0 + ds, p0 + 2 * ds, p0 + d3) by register offsets, so that four rows,
 * their sums and five temporaries fit the 14 registers. Per group the loads go in two runs (3 then 2:
 * pipelined on the Cortex-M4) and the rest is ordered for the Cortex-M7's dual issue (an SMLAD beside an
 * SXTB16 or a load, no loaded value used by the next issue group): the order was searched with
 * mcuforge.cycles' models under the data dependencies, 50 + 2 cycles per pass on the cortex-m4 model (the
 * same as the plain order) and 24 + 1 on the cortex-m7 one (26 + 1 plain). Row 0's load moves p0. */
#define FC_ROWS4_PAIR                           \
    "   ldr     %[xv], [%[p0], %[dx]]\n"        \
    "   ldr     %[v], [%[p0], %[ds]]\n"         \
    "   ldr     %[t], [%[p0], %[ds], lsl #1]\n" \
    "   sxtb16  %[x02], %[xv]\n"                \
    "   sxtb16  %[s], %[v]\n"                   \
    "   sxtb16  %[xv], %[xv], ror #8\n"         \
    "   smlad   %[a1], %[x02], %[s], %[a1]\n"   \
    "   sxtb16  %[s], %[t]\n"                   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a2], %[x02], %[s], %[a2]\n"   \
    "   smlad   %[a1], %[xv], %[v], %[a1]\n"    \
    "   ldr     %[v], [%[p0], %[d3]]\n"         \
    "   ldr     %[s], [%[p0]], #4\n"            \
    "   sxtb16  %[t], %[t], ror #8\n"           \
    "   smlad   %[a2], %[xv], %[t], %[a2]\n"    \
    "   sxtb16  %[t], %[v]\n"                   \
    "   smlad   %[a3], %[x02], %[t], %[a3]\n"   \
    "   sxtb16  %[t], %[s]\n"                   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a0], %[x02], %[t], %[a0]\n"   \
    "   sxtb16  %[s], %[s], ror #8\n"           \
    "   smlad   %[a3], %[xv], %[v], %[a3]\n"    \
    "   smlad   %[a0], %[xv], %[s], %[a0]\n"    \
    "   ldr     %[v], [%[p0], %[ds]]\n"         \
    "   ldr     %[xv], [%[p0], %[dx]]\n"        \
    "   ldr     %[t], [%[p0], %[ds], lsl #1]\n" \
    "   sxtb16  %[s], %[v]\n"                   \
    "   sxtb16  %[x02], %[xv]\n"                \
    "   sxtb16  %[xv], %[xv], ror #8\n"         \
    "   smlad   %[a1], %[x02], %[s], %[a1]\n"   \
    "   sxtb16  %[s], %[t]\n"                   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a2], %[x02], %[s], %[a2]\n"   \
    "   smlad   %[a1], %[xv], %[v], %[a1]\n"    \
    "   ldr     %[v], [%[p0], %[d3]]\n"         \
    "   ldr     %[s], [%[p0]], #4\n"            \
    "   sxtb16  %[t], %[t], ror #8\n"           \
    "   smlad   %[a2], %[xv], %[t], %[a2]\n"    \
    "   sxtb16  %[t], %[v]\n"                   \
    "   smlad   %[a3], %[x02], %[t], %[a3]\n"   \
    "   sxtb16  %[t], %[s]\n"                   \
    "   sxtb16  %[s], %[s], ror #8\n"           \
    "   smlad   %[a0], %[x02], %[t], %[a0]\n"   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a0], %[xv], %[s], %[a0]\n"    \
    "   smlad   %[a3], %[xv], %[v], %[a3]\n"

/* Four groups (16 features) of rows4's loop, ordered as FC_ROWS4_PAIR was (searched): per pass 100 + 2
 * cycles on the cortex-m4 model, 48 + 1 on the cortex-m7 one. */
#define FC_ROWS4_QUAD                           \
    "   ldr     %[xv], [%[p0], %[dx]]\n"        \
    "   ldr     %[v], [%[p0], %[ds]]\n"         \
    "   ldr     %[t], [%[p0], %[ds], lsl #1]\n" \
    "   sxtb16  %[x02], %[xv]\n"                \
    "   sxtb16  %[s], %[v]\n"                   \
    "   sxtb16  %[xv], %[xv], ror #8\n"         \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a1], %[x02], %[s], %[a1]\n"   \
    "   sxtb16  %[s], %[t]\n"                   \
    "   smlad   %[a1], %[xv], %[v], %[a1]\n"    \
    "   smlad   %[a2], %[x02], %[s], %[a2]\n"   \
    "   ldr     %[v], [%[p0], %[d3]]\n"         \
    "   ldr     %[s], [%[p0]], #4\n"            \
    "   sxtb16  %[t], %[t], ror #8\n"           \
    "   smlad   %[a2], %[xv], %[t], %[a2]\n"    \
    "   sxtb16  %[t], %[v]\n"                   \
    "   smlad   %[a3], %[x02], %[t], %[a3]\n"   \
    "   sxtb16  %[t], %[s]\n"                   \
    "   smlad   %[a0], %[x02], %[t], %[a0]\n"   \
    "   sxtb16  %[s], %[s], ror #8\n"           \
    "   smlad   %[a0], %[xv], %[s], %[a0]\n"    \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a3], %[xv], %[v], %[a3]\n"    \
    "   ldr     %[xv], [%[p0], %[dx]]\n"        \
    "   ldr     %[v], [%[p0], %[ds]]\n"         \
    "   ldr     %[t], [%[p0], %[ds], lsl #1]\n" \
    "   sxtb16  %[x02], %[xv]\n"                \
    "   sxtb16  %[s], %[v]\n"                   \
    "   sxtb16  %[xv], %[xv], ror #8\n"         \
    "   smlad   %[a1], %[x02], %[s], %[a1]\n"   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   sxtb16  %[s], %[t]\n"                   \
    "   smlad   %[a1], %[xv], %[v], %[a1]\n"    \
    "   smlad   %[a2], %[x02], %[s], %[a2]\n"   \
    "   ldr     %[v], [%[p0], %[d3]]\n"         \
    "   ldr     %[s], [%[p0]], #4\n"            \
    "   sxtb16  %[t], %[t], ror #8\n"           \
    "   smlad   %[a2], %[xv], %[t], %[a2]\n"    \
    "   sxtb16  %[t], %[v]\n"                   \
    "   smlad   %[a3], %[x02], %[t], %[a3]\n"   \
    "   sxtb16  %[t], %[s]\n"                   \
    "   smlad   %[a0], %[x02], %[t], %[a0]\n"   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a3], %[xv], %[v], %[a3]\n"    \
    "   sxtb16  %[s], %[s], ror #8\n"           \
    "   smlad   %[a0], %[xv], %[s], %[a0]\n"    \
    "   ldr     %[xv], [%[p0], %[dx]]\n"        \
    "   ldr     %[v], [%[p0], %[ds]]\n"         \
    "   ldr     %[t], [%[p0], %[ds], lsl #1]\n" \
    "   sxtb16  %[x02], %[xv]\n"                \
    "   sxtb16  %[s], %[v]\n"                   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   sxtb16  %[xv], %[xv], ror #8\n"         \
    "   smlad   %[a1], %[x02], %[s], %[a1]\n"   \
    "   smlad   %[a1], %[xv], %[v], %[a1]\n"    \
    "   sxtb16  %[s], %[t]\n"                   \
    "   smlad   %[a2], %[x02], %[s], %[a2]\n"   \
    "   ldr     %[v], [%[p0], %[d3]]\n"         \
    "   ldr     %[s], [%[p0]], #4\n"            \
    "   sxtb16  %[t], %[t], ror #8\n"           \
    "   smlad   %[a2], %[xv], %[t], %[a2]\n"    \
    "   sxtb16  %[t], %[v]\n"                   \
    "   smlad   %[a3], %[x02], %[t], %[a3]\n"   \
    "   sxtb16  %[t], %[s]\n"                   \
    "   smlad   %[a0], %[x02], %[t], %[a0]\n"   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   smlad   %[a3], %[xv], %[v], %[a3]\n"    \
    "   sxtb16  %[s], %[s], ror #8\n"           \
    "   smlad   %[a0], %[xv], %[s], %[a0]\n"    \
    "   ldr     %[xv], [%[p0], %[dx]]\n"        \
    "   ldr     %[v], [%[p0], %[ds]]\n"         \
    "   ldr     %[t], [%[p0], %[ds], lsl #1]\n" \
    "   sxtb16  %[x02], %[xv]\n"                \
    "   sxtb16  %[s], %[v]\n"                   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   sxtb16  %[xv], %[xv], ror #8\n"         \
    "   smlad   %[a1], %[x02], %[s], %[a1]\n"   \
    "   sxtb16  %[s], %[t]\n"                   \
    "   smlad   %[a1], %[xv], %[v], %[a1]\n"    \
    "   smlad   %[a2], %[x02], %[s], %[a2]\n"   \
    "   ldr     %[v], [%[p0], %[d3]]\n"         \
    "   ldr     %[s], [%[p0]], #4\n"            \
    "   sxtb16  %[t], %[t], ror #8\n"           \
    "   smlad   %[a2], %[xv], %[t], %[a2]\n"    \
    "   sxtb16  %[t], %[v]\n"                   \
    "   smlad   %[a3], %[x02], %[t], %[a3]\n"   \
    "   sxtb16  %[v], %[v], ror #8\n"           \
    "   sxtb16  %[t], %[s]\n"                   \
    "   smlad   %[a3], %[xv], %[v], %[a3]\n"    \
    "   smlad   %[a0], %[x02], %[t], %[a0]\n"   \
    "   sxtb16  %[s], %[s], ror #8\n"           \
    "   smlad   %[a0], %[xv], %[s], %[a0]\n"

/* acc[i] += the sum of row p0 + i * depth (i < 4) against x (input offset 0) over the first n8 features (a
 * multiple of 8, > 0): one FC_ROWS4_PAIR when n8 / 8 is odd, one FC_ROWS4_QUAD when n8 / 16 is, then eight
 * groups (32 features) per iteration, the loop's end read from memory (13 registers: with 14, GCC found
 * none left where rows4's loop keeps values across the asm, at -O3 for cortex-m7): 6 cycles per 32
 * features on the cortex-m4 model where a register end once per 16 took 8; returns p0 moved past them
 * (the input moves with it: x + (p0' - p0)). */
static inline __attribute__((always_inline)) const int8_t *fc_rows4_asm(const int8_t *x, const int8_t *p0,
                                                                       uint32_t depth, uint32_t n8, int32_t acc[4]) {
    const int8_t *const pend = p0 + n8;
    const int32_t dx = (int32_t)(x - p0), ds = (int32_t)depth, d3 = 3 * (int32_t)depth;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], xv, x02, v, t, s;
    if (n8 & 8u) /* an odd number of groups of 8: one pair first */
        __asm__ volatile(FC_ROWS4_PAIR
                         : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [p0] "+r"(p0), [xv] "=&r"(xv),
                           [x02] "=&r"(x02), [v] "=&r"(v), [t] "=&r"(t), [s] "=&r"(s)
                         : [dx] "r"(dx), [ds] "r"(ds), [d3] "r"(d3)
                         : "memory");
    if (n8 & 16u)
        __asm__ volatile(FC_ROWS4_QUAD
                         : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [p0] "+r"(p0), [xv] "=&r"(xv),
                           [x02] "=&r"(x02), [v] "=&r"(v), [t] "=&r"(t), [s] "=&r"(s)
                         : [dx] "r"(dx), [ds] "r"(ds), [d3] "r"(d3)
                         : "memory");
    if (n8 >= 32u)
        __asm__ volatile("1:\n" FC_ROWS4_QUAD FC_ROWS4_QUAD
                         "   ldr     %[t], %[pend]\n"
                         "   cmp     %[p0], %[t]\n"
                         "   bne     1b\n"
                         : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [p0] "+r"(p0), [xv] "=&r"(xv),
                           [x02] "=&r"(x02), [v] "=&r"(v), [t] "=&r"(t), [s] "=&r"(s)
                         : [dx] "r"(dx), [ds] "r"(ds), [d3] "r"(d3), [pend] "m"(pend)
                         : "cc", "memory");
    (void)xv, (void)x02, (void)v, (void)t, (void)s;
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
    return p0;
}
#define FC_ROWS4_ASM 1
#endif

/* Outputs oc .. oc + n - 1 (n <= 3) of one input row; weight rows past n repeat row oc, unwritten.
 * Three rows keep the loop's 14 values in registers (the loop in asm: fc_rows3_asm). */
static void rows3(const int8_t *x, const int8_t *p0, const int8_t *p1, const int8_t *p2, uint32_t n,
                  uint32_t depth, int32_t in_off, int32_t extra, const mf_channel_requant *rq, uint32_t oc,
                  int8_t *out) {
    const int32_t off16 = mf_pack_off16(in_off);
    const uint32_t d4 = depth & ~3u;
    int32_t a0 = 0, a1 = 0, a2 = 0;
    uint32_t i = d4 >> 2;
#if defined(FC_ROWS3_ASM)
    if (d4 >= 8) {
        int32_t acc[3];
        fc_rows3_asm(&x, &p0, &p1, &p2, d4 & ~7u, off16, acc);
        a0 = acc[0], a1 = acc[1], a2 = acc[2];
        i = (d4 & 7u) >> 2; /* one group left when d4 is not a multiple of 8 */
    }
#endif
    for (; i > 0; i--) {
        const int32_t xv = mf_ld32(x);
        x += 4;
        const int32_t x02 = mf_sxtab16(off16, xv), x13 = mf_sxtab16_ror8(off16, xv);
        int32_t v = mf_ld32(p0);
        p0 += 4;
        a0 = mf_smlad(x02, mf_sxtb16(v), a0);
        a0 = mf_smlad(x13, mf_sxtb16_ror8(v), a0);
        v = mf_ld32(p1);
        p1 += 4;
        a1 = mf_smlad(x02, mf_sxtb16(v), a1);
        a1 = mf_smlad(x13, mf_sxtb16_ror8(v), a1);
        v = mf_ld32(p2);
        p2 += 4;
        a2 = mf_smlad(x02, mf_sxtb16(v), a2);
        a2 = mf_smlad(x13, mf_sxtb16_ror8(v), a2);
    }
    for (uint32_t k = 0; k < depth - d4; k++) {
        const int32_t xo = x[k] + in_off;
        a0 += xo * p0[k];
        a1 += xo * p1[k];
        a2 += xo * p2[k];
    }
    out[0] = mf_channel_requant_s8_inline(rq, oc, mf_add_wrap(a0, extra));
    if (n > 1) out[1] = mf_channel_requant_s8_inline(rq, oc + 1, mf_add_wrap(a1, extra));
    if (n > 2) out[2] = mf_channel_requant_s8_inline(rq, oc + 2, mf_add_wrap(a2, extra));
}

/* Outputs oc and oc + 1 of one input row (the last two when the count is not a multiple of 3). */
static void rows2(const int8_t *x, const int8_t *p0, const int8_t *p1, uint32_t depth, int32_t in_off,
                  int32_t extra, const mf_channel_requant *rq, uint32_t oc, int8_t *out) {
    const int32_t off16 = mf_pack_off16(in_off);
    const uint32_t d4 = depth & ~3u;
    int32_t a0 = 0, a1 = 0;
    for (uint32_t i = d4 >> 2; i > 0; i--) {
        const int32_t xv = mf_ld32(x);
        x += 4;
        const int32_t x02 = mf_sxtab16(off16, xv), x13 = mf_sxtab16_ror8(off16, xv);
        int32_t v = mf_ld32(p0);
        p0 += 4;
        a0 = mf_smlad(x02, mf_sxtb16(v), a0);
        a0 = mf_smlad(x13, mf_sxtb16_ror8(v), a0);
        v = mf_ld32(p1);
        p1 += 4;
        a1 = mf_smlad(x02, mf_sxtb16(v), a1);
        a1 = mf_smlad(x13, mf_sxtb16_ror8(v), a1);
    }
    for (uint32_t k = 0; k < depth - d4; k++) {
        const int32_t xo = x[k] + in_off;
        a0 += xo * p0[k];
        a1 += xo * p1[k];
    }
    out[0] = mf_channel_requant_s8_inline(rq, oc, mf_add_wrap(a0, extra));
    out[1] = mf_channel_requant_s8_inline(rq, oc + 1, mf_add_wrap(a1, extra));
}

#if defined(FC_ROWS4_ASM)
/* One output of fc_out4_asm: the sum in A (bias and extra in it already) requantized as
 * mf_requantize_inline does, + output offset, SSAT to int8 into A; the channel's multiplier and shift at
 * [pm, #MOFF] and [ps, #SOFF]. Three temporaries: m, s, l. The doubling high multiply h is SMULL + 2^30
 * (ADDS/ADC) and the 64-bit >> 31 (LSL/ORR). The rounding divide by 2^right (half away from zero) is
 * h asr right, + 1 when CMSIS-NN's remainder test holds: remainder > 2^(right - 1) - 1 + (h < 0), that is
 * t >= 2^31 + (h < 0) for t = h << (32 - right), the remainder at the top of a word (0 when right = 0:
 * LSL by 32 gives 0, no rounding), taken as the carry of t + 2^31 - (h < 0) (CMN) into ADC.
 * 17 instructions and 2 loads, no branch. */
#define FC_OUT1(A, MOFF, SOFF)                      \
    "   ldr     %[m], [%[pm], #" MOFF "]\n"         \
    "   ldrsb   %[s], [%[ps], #" SOFF "]\n"         \
    "   bic     %[l], %[s], %[s], asr #31\n"        \
    "   sub     %[s], %[l], %[s]\n"                 \
    "   lsl     %[" A "], %[" A "], %[l]\n"         \
    "   smull   %[l], %[m], %[" A "], %[m]\n"       \
    "   adds    %[l], %[l], #0x40000000\n"          \
    "   adc     %[m], %[m], #0\n"                   \
    "   lsl     %[m], %[m], #1\n"                   \
    "   orr     %[" A "], %[m], %[l], lsr #31\n"    \
    "   asr     %[l], %[" A "], %[s]\n"             \
    "   rsb     %[s], %[s], #32\n"                  \
    "   lsl     %[s], %[" A "], %[s]\n"             \
    "   lsr     %[m], %[" A "], #31\n"              \
    "   rsb     %[m], %[m], #0x80000000\n"          \
    "   cmn     %[s], %[m]\n"                       \
    "   adc     %[l], %[l], #0\n"                   \
    "   add     %[l], %[l], %[off]\n"               \
    "   ssat    %[" A "], #8, %[l]\n"

/* The output stage of 4 channels in asm: their sums a0..a3 (bias and extra added) requantized (FC_OUT1,
 * the multipliers and shifts at pm[0..3], ps[0..3]), packed into one word of 4 bytes (BFI) and clamped to
 * [lo, hi] on all 4 bytes at once (SSUB8 sets GE where a byte is >= the bound, SEL picks): the same bits
 * as mf_channel_requant_s8. GCC's code for the same arithmetic in C, one output at a time, reloaded its
 * constants from the stack. lo4, hi4: lo and hi in every byte. */
static inline __attribute__((always_inline)) int32_t fc_out4_asm(int32_t a0, int32_t a1, int32_t a2, int32_t a3,
                                                                 const int32_t *pm, const mf_shift *ps, int32_t off,
                                                                 int32_t lo4, int32_t hi4) {
    int32_t m, s, l;
    __asm__(FC_OUT1("a0", "0", "0") FC_OUT1("a1", "4", "1") FC_OUT1("a2", "8", "2") FC_OUT1("a3", "12", "3")
            "   bfi     %[a0], %[a1], #8, #8\n"
            "   bfi     %[a0], %[a2], #16, #8\n"
            "   bfi     %[a0], %[a3], #24, #8\n"
            : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3), [m] "=&r"(m), [s] "=&r"(s),
              [l] "=&r"(l)
            : [pm] "r"(pm), [ps] "r"(ps), [off] "r"(off)
            : "cc");
    /* a separate statement: the two bounds beside the 10 registers above left GCC none at -O1/-O2/-Os */
    __asm__("   ssub8   %[m], %[a0], %[lo4]\n"
            "   sel     %[a0], %[a0], %[lo4]\n"
            "   ssub8   %[m], %[hi4], %[a0]\n"
            "   sel     %[a0], %[a0], %[hi4]\n"
            : [a0] "+&r"(a0), [m] "=&r"(m)
            : [lo4] "r"(lo4), [hi4] "r"(hi4)
            : "cc");
    (void)m, (void)s, (void)l;
    return a0;
}

/* fc_out4_asm's parameters for a run of blocks of 4 channels: per channel, pm/ps step 4 channels a block;
 * per tensor, the one multiplier and shift 4 times, read in place of 4 channels' (step 0). lo4, hi4: the
 * activation bounds in every byte. */
typedef struct {
    int32_t mult4[4];
    mf_shift shift4[4];
    const int32_t *pm;
    const mf_shift *ps;
    uint32_t step;
    int32_t lo4, hi4;
} out4_params;

static inline __attribute__((always_inline)) void out4_init(out4_params *q, const mf_channel_requant *rq) {
    q->pm = rq->mult, q->ps = rq->shift, q->step = rq->per_channel ? 4u : 0u;
    if (!rq->per_channel) {
        for (uint32_t i = 0; i < 4; i++) q->mult4[i] = rq->mult[0], q->shift4[i] = rq->shift[0];
        q->pm = q->mult4, q->ps = q->shift4;
    }
    q->lo4 = mf_wrap32(0x01010101u * (uint8_t)rq->lo), q->hi4 = mf_wrap32(0x01010101u * (uint8_t)rq->hi);
}

/* s[i] += the sum of row p0 + i * depth (i < 4) against x (input offset 0): fc_rows4_asm over whole groups
 * of 8 features, the rest in C. A function of its own: inlined in rows4's loop, GCC found no registers for
 * the asm's 14 beside the loop's values. */
static __attribute__((noinline)) void fc_sums4(const int8_t *x, const int8_t *p0, uint32_t depth, int32_t s[4]) {
    const uint32_t d8 = depth & ~7u;
    if (d8 > 0) fc_rows4_asm(x, p0, depth, d8, s);
    for (uint32_t k = d8; k < depth; k++) {
        const int32_t xo = x[k];
        for (uint32_t i = 0; i < 4; i++) s[i] += xo * p0[i * depth + k];
    }
}

/* Input offset 0 (the lowering folds it into the bias): whole groups of 4 output channels, their sums
 * started at bias + extra, then fc_rows4_asm over whole groups of 8 features, the rest in C, and the 4
 * outputs by fc_out4_asm, stored as one word. Returns the channels done. */
static inline __attribute__((always_inline)) uint32_t rows4_body(const int8_t *x, const int8_t *w, uint32_t oc_n,
                                                                 uint32_t depth, int32_t extra,
                                                                 const mf_channel_requant *rq, int8_t *out,
                                                                 const int whole) {
    const uint32_t done = oc_n & ~3u;
    const int32_t *const bias = rq->bias;
    out4_params q;
    out4_init(&q, rq);
    const int32_t *pm = q.pm, lo4 = q.lo4, hi4 = q.hi4, out_off = rq->out_off;
    const mf_shift *ps = q.ps;
    const uint32_t step = q.step;
    for (uint32_t oc = 0; oc < done; oc += 4, pm += step, ps += step) {
        const int8_t *p0 = w + (size_t)oc * depth;
        int32_t s4[4];
        for (uint32_t i = 0; i < 4; i++) s4[i] = mf_add_wrap(extra, bias ? bias[oc + i] : 0);
        if (whole)
            fc_rows4_asm(x, p0, depth, depth, s4);
        else
            fc_sums4(x, p0, depth, s4);
        mf_st32(out + oc, fc_out4_asm(s4[0], s4[1], s4[2], s4[3], pm, ps, out_off, lo4, hi4));
    }
    return done;
}

/* rows4_body in two functions: depths that are multiples of 8 (the sums in registers, no call in the loop)
 * and the others (fc_sums4). */
static __attribute__((noinline)) uint32_t rows4_whole(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth,
                                                      int32_t extra, const mf_channel_requant *rq, int8_t *out) {
    return rows4_body(x, w, oc_n, depth, extra, rq, out, 1);
}

static __attribute__((noinline)) uint32_t rows4_any(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth,
                                                    int32_t extra, const mf_channel_requant *rq, int8_t *out) {
    return rows4_body(x, w, oc_n, depth, extra, rq, out, 0);
}

static uint32_t rows4(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth, int32_t extra,
                      const mf_channel_requant *rq, int8_t *out) {
    return depth > 0 && (depth & 7u) == 0 ? rows4_whole(x, w, oc_n, depth, extra, rq, out)
                                          : rows4_any(x, w, oc_n, depth, extra, rq, out);
}
#endif

/* S8_PAIRS weights (docs/format.md "Layouts"): blocks of 4 rows, each group of 4 features four words, one per
 * pair of rows (a, b) and input half: [a[k] ^ 0x80, b[k], a[k + 2] ^ 0x80, b[k + 2]], whose halfwords are the
 * int16 256 * b + a + 128. Per pair and half, one SMLAD of the word against the input's SXTB16 half gives
 * 256 * sum(x * b) + sum(x * a) + 128 * sum(x) (acc A), one of its SXTB16 ror 8 sum(x * b) (acc B): one unpack
 * for two rows where the plain layout takes two. a's sum is A - 256 * B - 128 * sum(x), exact in wrapping int32
 * (it fits). Per group 5 loads, 6 SXTB16 and 8 SMLAD for 16 MACs: 20 cycles on the cortex-m4 model, 25 with
 * the plain layout (fc_rows4_asm). acc[]: A of pair 0, B of pair 0, A of pair 1, B of pair 1. */
#if defined(__OPTIMIZE__)
#if defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 8)
/* Cortex-M7 (dual issue): the first half's words loaded first, the second half's beside the SMLADs of the
 * first, each SMLAD beside a load or SXTB16 and no loaded value used by the next issue group: 11 cycles a group
 * on the cortex-m7 model (the cortex-m4 order below: 13). */
#define FC_PAIRS_GROUP                        \
    "   ldr     %[xv], [%[x]], #4\n"          \
    "   ldr     %[w0], [%[p]]\n"              \
    "   ldr     %[w2], [%[p], #8]\n"          \
    "   sxtb16  %[x13], %[xv], ror #8\n"      \
    "   sxtb16  %[xv], %[xv]\n"               \
    "   smlad   %[a0], %[xv], %[w0], %[a0]\n" \
    "   sxtb16  %[w0], %[w0], ror #8\n"       \
    "   smlad   %[a1], %[xv], %[w2], %[a1]\n" \
    "   sxtb16  %[w2], %[w2], ror #8\n"       \
    "   smlad   %[b0], %[xv], %[w0], %[b0]\n" \
    "   ldr     %[w1], [%[p], #4]\n"          \
    "   smlad   %[b1], %[xv], %[w2], %[b1]\n" \
    "   ldr     %[w3], [%[p], #12]\n"         \
    "   add     %[p], %[p], #16\n"            \
    "   smlad   %[a0], %[x13], %[w1], %[a0]\n" \
    "   sxtb16  %[w1], %[w1], ror #8\n"       \
    "   smlad   %[a1], %[x13], %[w3], %[a1]\n" \
    "   sxtb16  %[w3], %[w3], ror #8\n"       \
    "   smlad   %[b0], %[x13], %[w1], %[b0]\n" \
    "   smlad   %[b1], %[x13], %[w3], %[b1]\n"
#else
/* Cortex-M4/M33: the group's 5 loads in one run (pipelined: 6 cycles), the rest 1 cycle each. */
#define FC_PAIRS_GROUP                        \
    "   ldr     %[xv], [%[x]], #4\n"          \
    "   ldr     %[w1], [%[p], #4]\n"          \
    "   ldr     %[w2], [%[p], #8]\n"          \
    "   ldr     %[w3], [%[p], #12]\n"         \
    "   ldr     %[w0], [%[p]], #16\n"         \
    "   sxtb16  %[x13], %[xv], ror #8\n"      \
    "   sxtb16  %[xv], %[xv]\n"               \
    "   smlad   %[a0], %[xv], %[w0], %[a0]\n" \
    "   sxtb16  %[w0], %[w0], ror #8\n"       \
    "   smlad   %[a1], %[xv], %[w2], %[a1]\n" \
    "   sxtb16  %[w2], %[w2], ror #8\n"       \
    "   smlad   %[a0], %[x13], %[w1], %[a0]\n" \
    "   sxtb16  %[w1], %[w1], ror #8\n"       \
    "   smlad   %[a1], %[x13], %[w3], %[a1]\n" \
    "   sxtb16  %[w3], %[w3], ror #8\n"       \
    "   smlad   %[b0], %[xv], %[w0], %[b0]\n" \
    "   smlad   %[b1], %[xv], %[w2], %[b1]\n" \
    "   smlad   %[b0], %[x13], %[w1], %[b0]\n" \
    "   smlad   %[b1], %[x13], %[w3], %[b1]\n"
#endif
/* The groups (> 0) of one block of 4 rows at p against x in one asm statement (GCC kept values on the stack
 * around three): 8 groups a pass while x is short of end8 (13 registers), then one a pass to end (from
 * memory). */
static inline __attribute__((always_inline)) void fc_pairs_sums(const int8_t *x, const int8_t *p, uint32_t groups,
                                                                int32_t acc[4]) {
    int32_t a0 = acc[0], b0 = acc[1], a1 = acc[2], b1 = acc[3], xv, x13, w0, w1, w2, w3;
    const int8_t *const end8 = x + 4u * (groups & ~7u), *const end = x + 4u * groups;
    __asm__ volatile("   cmp     %[x], %[end8]\n"
                     "   beq     2f\n"
                     "1:\n" FC_PAIRS_GROUP FC_PAIRS_GROUP FC_PAIRS_GROUP FC_PAIRS_GROUP FC_PAIRS_GROUP
                         FC_PAIRS_GROUP FC_PAIRS_GROUP FC_PAIRS_GROUP
                     "   cmp     %[x], %[end8]\n"
                     "   bne     1b\n"
                     "2:\n"
                     "   ldr     %[xv], %[end]\n"
                     "   cmp     %[x], %[xv]\n"
                     "   beq     4f\n"
                     "3:\n" FC_PAIRS_GROUP
                     "   ldr     %[xv], %[end]\n"
                     "   cmp     %[x], %[xv]\n"
                     "   bne     3b\n"
                     "4:\n"
                     : [a0] "+r"(a0), [b0] "+r"(b0), [a1] "+r"(a1), [b1] "+r"(b1), [x] "+r"(x), [p] "+r"(p),
                       [xv] "=&r"(xv), [x13] "=&r"(x13), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2),
                       [w3] "=&r"(w3)
                     : [end8] "r"(end8), [end] "m"(end)
                     : "cc", "memory");
    (void)xv, (void)x13, (void)w0, (void)w1, (void)w2, (void)w3;
    acc[0] = a0, acc[1] = b0, acc[2] = a1, acc[3] = b1;
}
#else
static void fc_pairs_sums(const int8_t *x, const int8_t *p, uint32_t groups, int32_t acc[4]) {
    for (; groups > 0; groups--, x += 4, p += 16) {
        const int32_t xv = mf_ld32(x), x02 = mf_sxtb16(xv), x13 = mf_sxtb16_ror8(xv);
        for (uint32_t q = 0; q < 2; q++) {
            const int32_t lo = mf_ld32(p + 8 * q), hi = mf_ld32(p + 8 * q + 4);
            acc[2 * q] = mf_smlad(x13, hi, mf_smlad(x02, lo, acc[2 * q]));
            acc[2 * q + 1] = mf_smlad(x13, mf_sxtb16_ror8(hi), mf_smlad(x02, mf_sxtb16_ror8(lo), acc[2 * q + 1]));
        }
    }
}
#endif

/* sum(x[k]) over depth (a multiple of 4) bytes: per word USADA8 of x ^ 0x80 (x + 128 as unsigned bytes), a
 * cycle a byte where the byte loop took 6 on the cortex-m4 model. */
static int32_t fc_sum_x(const int8_t *x, uint32_t depth) {
    uint32_t sum = 0; /* <= 255 * MF_MAX_DOT_DEPTH */
    for (uint32_t k = 0; k < depth; k += 4) {
        const uint32_t v = (uint32_t)mf_ld32(x + k) ^ 0x80808080u;
        __asm__("usada8 %0, %1, %2, %0" : "+r"(sum) : "r"(v), "r"(0u));
    }
    return mf_wrap32(sum - 128u * depth);
}

/* All outputs of one input row from S8_PAIRS weights (input offset 0): per block of 4 rows the sums by
 * fc_pairs_sums, A started at bias + extra - 128 * sum(x), and the 4 outputs requantized together. sum_x: the
 * row's sum. */
static __attribute__((noinline)) void rows_pairs(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth,
                                                 int32_t extra, int32_t sum_x, const mf_channel_requant *rq,
                                                 int8_t *out) {
    static const int32_t zero4[4] = {0, 0, 0, 0};
    /* no bias, per-tensor: four zeros, the one multiplier and shift 4 times, read in place of 4 channels' (step
     * 0); pointers moved a block at a time, so that few values live across the asm beside them */
#if defined(FC_ROWS4_ASM)
    const int32_t *pb = rq->bias ? rq->bias : zero4;
    const uint32_t bstep = rq->bias ? 4u : 0u, groups = depth >> 2;
#else /* mf_channel_requant_s8_inline adds the bias itself (the board's -O0 build found it added twice) */
    const int32_t *pb = zero4;
    const uint32_t bstep = 0u, groups = depth >> 2;
#endif
    const int32_t start = mf_add_wrap(extra, mf_mul_wrap(-128, sum_x));
    const int8_t *p = w;
#if defined(FC_ROWS4_ASM)
    out4_params q;
    out4_init(&q, rq);
    const int32_t *pm = q.pm, lo4 = q.lo4, hi4 = q.hi4;
    const mf_shift *ps = q.ps;
    const uint32_t step = q.step;
#endif
    for (uint32_t oc = 0; oc < oc_n; oc += 4, pb += bstep) {
        int32_t acc[4] = {mf_add_wrap(start, pb[0]), 0, mf_add_wrap(start, pb[2]), 0};
        fc_pairs_sums(x, p, groups, acc);
        p += 4u * depth;
        const int32_t s0 = mf_wrap32((uint32_t)acc[0] - ((uint32_t)acc[1] << 8));
        const int32_t s2 = mf_wrap32((uint32_t)acc[2] - ((uint32_t)acc[3] << 8));
        const int32_t s1 = mf_add_wrap(acc[1], mf_add_wrap(extra, pb[1]));
        const int32_t s3 = mf_add_wrap(acc[3], mf_add_wrap(extra, pb[3]));
#if defined(FC_ROWS4_ASM)
        mf_st32(out + oc, fc_out4_asm(s0, s1, s2, s3, pm, ps, rq->out_off, lo4, hi4));
        pm += step, ps += step;
#else
        out[oc] = mf_channel_requant_s8_inline(rq, oc, s0);
        out[oc + 1] = mf_channel_requant_s8_inline(rq, oc + 1, s1);
        out[oc + 2] = mf_channel_requant_s8_inline(rq, oc + 2, s2);
        out[oc + 3] = mf_channel_requant_s8_inline(rq, oc + 3, s3);
#endif
    }
}
#define FC_PAIRS_DSP 1

static void run_row(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth, int32_t in_off, int32_t extra,
                    const mf_channel_requant *rq, int vector_rq, int8_t *out) {
    (void)vector_rq;
    uint32_t oc = 0;
#if defined(FC_ROWS4_ASM)
    if (in_off == 0) oc = rows4(x, w, oc_n, depth, extra, rq, out);
#endif
    for (; oc + 3 <= oc_n; oc += 3) {
        const int8_t *p0 = w + (size_t)oc * depth;
        rows3(x, p0, p0 + depth, p0 + 2u * depth, 3, depth, in_off, extra, rq, oc, out + oc);
    }
    const int8_t *p0 = w + (size_t)oc * depth;
    if (oc_n - oc == 2) rows2(x, p0, p0 + depth, depth, in_off, extra, rq, oc, out + oc);
    if (oc_n - oc == 1)
        out[oc] = mf_channel_requant_s8_inline(rq, oc, mf_add_wrap(mf_dot_s8(x, p0, depth, in_off), extra));
}
#define MF_FC_FAST 1

#elif defined(MF_USE_MVE)
/* sums[i] = sum(x[k] * w_i[k]), sums[4 + i] = sum(w_i[k]) for four weight rows: full blocks of 16
 * lanes unpredicated, then one predicated tail. (The path of a nonzero input offset; the lowering
 * folds it into the bias of every fully connected layer, see rows4_asm.) */
static inline void dot4(const int8_t *x, const int8_t *p0, const int8_t *p1, const int8_t *p2, const int8_t *p3,
                        uint32_t depth, int32_t sums[8]) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (uint32_t i = depth >> 4; i > 0; i--) {
        const int8x16_t xv = vldrbq_s8(x);
        const int8x16_t v0 = vldrbq_s8(p0), v1 = vldrbq_s8(p1), v2 = vldrbq_s8(p2), v3 = vldrbq_s8(p3);
        a0 = vmladavaq_s8(a0, xv, v0);
        s0 = vaddvaq_s8(s0, v0);
        a1 = vmladavaq_s8(a1, xv, v1);
        s1 = vaddvaq_s8(s1, v1);
        a2 = vmladavaq_s8(a2, xv, v2);
        s2 = vaddvaq_s8(s2, v2);
        a3 = vmladavaq_s8(a3, xv, v3);
        s3 = vaddvaq_s8(s3, v3);
        x += 16;
        p0 += 16;
        p1 += 16;
        p2 += 16;
        p3 += 16;
    }
    if (depth & 15u) {
        const mve_pred16_t p = vctp8q(depth & 15u);
        const int8x16_t xv = vldrbq_z_s8(x, p);
        const int8x16_t v0 = vldrbq_z_s8(p0, p), v1 = vldrbq_z_s8(p1, p);
        const int8x16_t v2 = vldrbq_z_s8(p2, p), v3 = vldrbq_z_s8(p3, p);
        a0 = vmladavaq_s8(a0, xv, v0);
        s0 = vaddvaq_s8(s0, v0);
        a1 = vmladavaq_s8(a1, xv, v1);
        s1 = vaddvaq_s8(s1, v1);
        a2 = vmladavaq_s8(a2, xv, v2);
        s2 = vaddvaq_s8(s2, v2);
        a3 = vmladavaq_s8(a3, xv, v3);
        s3 = vaddvaq_s8(s3, v3);
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
    sums[4] = s0;
    sums[5] = s1;
    sums[6] = s2;
    sums[7] = s3;
}

/* a_i = sum(x[k] * w_i[k]) (k < depth) for the four rows w_i = w0 + i * depth: one tail-predicated
 * loop of 16 lanes (WLSTP/LETP), one x load per four VMLADAVAs. Always inlined, so that the callers
 * keep the four sums in registers. */
static inline __attribute__((always_inline)) void rows4_dot(const int8_t *x, const int8_t *w0, uint32_t depth,
                                                            int32_t *s0, int32_t *s1, int32_t *s2, int32_t *s3) {
    const int8_t *w1 = w0 + depth, *w2 = w1 + depth, *w3 = w2 + depth;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    __asm__ volatile("   wlstp.8      lr, %[n], 1f\n"
                     "2: vldrb.8      q0, [%[x]], #16\n"
                     "   vldrb.8      q1, [%[w0]], #16\n"
                     "   vmladava.s8  %[a0], q0, q1\n"
                     "   vldrb.8      q2, [%[w1]], #16\n"
                     "   vmladava.s8  %[a1], q0, q2\n"
                     "   vldrb.8      q1, [%[w2]], #16\n"
                     "   vmladava.s8  %[a2], q0, q1\n"
                     "   vldrb.8      q2, [%[w3]], #16\n"
                     "   vmladava.s8  %[a3], q0, q2\n"
                     "   letp         lr, 2b\n"
                     "1:\n"
                     : [a0] "+&Te"(a0), [a1] "+&Te"(a1), [a2] "+&Te"(a2), [a3] "+&Te"(a3), [x] "+&r"(x), [w0] "+&r"(w0),
                       [w1] "+&r"(w1), [w2] "+&r"(w2), [w3] "+&r"(w3)
                     : [n] "r"(depth)
                     : "q0", "q1", "q2", "lr", "memory");
    *s0 = a0, *s1 = a1, *s2 = a2, *s3 = a3;
}

/* rows4_dot as a call (the general row loop's groups of 4). */
static __attribute__((noinline)) void rows4_asm(const int8_t *x, const int8_t *w0, uint32_t depth, int32_t a[4]) {
    rows4_dot(x, w0, depth, &a[0], &a[1], &a[2], &a[3]);
}

/* The common case (no input offset, vector requantization) over whole groups of 4 output channels:
 * the MAC loop inline (rows4_dot, without rows4_asm's call and its stores), the requantization constants
 * read once per row, the four sums into one vector and requantized together. Returns the channels
 * done (a multiple of 4); run_row's general loop takes the rest. */
static __attribute__((noinline)) uint32_t rows4_requant(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth, int32_t extra,
                              const mf_channel_requant *rq, int8_t *out) {
    const uint32_t done = oc_n & ~3u;
    const int32_t *bias = rq->bias, *mult = rq->mult;
    const mf_shift *shift = rq->shift;
    const int per_channel = (int)rq->per_channel;
    const int32x4_t mult_t = vdupq_n_s32(mult[0]), shift_t = vdupq_n_s32(shift[0]);
    const int32_t out_off = rq->out_off, lo = rq->lo, hi = rq->hi;
    const size_t step = (size_t)depth;
    for (uint32_t oc = 0; oc < done; oc += 4, w += 4 * step) {
        int32_t a0, a1, a2, a3;
        rows4_dot(x, w, depth, &a0, &a1, &a2, &a3);
        int32x4_t acc = vsetq_lane_s32(a3, vsetq_lane_s32(a2, vsetq_lane_s32(a1, vdupq_n_s32(a0), 1), 2), 3);
        acc = vaddq_n_s32(acc, extra);
        if (bias) acc = vaddq_s32(acc, vldrwq_s32(bias + oc));
        const int32x4_t m = per_channel ? vldrwq_s32(mult + oc) : mult_t;
        const int32x4_t sh = per_channel ? vldrbq_s32(shift + oc) : shift_t;
        const int32x4_t v = vaddq_n_s32(mf_requantize_x4(acc, m, sh), out_off);
        vstrbq_s32(out + oc, vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(hi)));
    }
    return done;
}

static void run_row(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth, int32_t in_off, int32_t extra,
                    const mf_channel_requant *rq, int vector_rq, int8_t *out) {
    const int32x4_t zero = vdupq_n_s32(0);
    const uint32_t first = in_off == 0 && vector_rq && rq->mult != NULL && rq->bias16 == NULL
                               ? rows4_requant(x, w, oc_n, depth, extra, rq, out)
                               : 0u;
    for (uint32_t oc = first; oc < oc_n; oc += 4) {
        const uint32_t n = oc_n - oc < 4u ? oc_n - oc : 4u;
        int32_t sums[8];
        if (in_off == 0 && n == 4) {
            rows4_asm(x, w + (size_t)oc * depth, depth, sums);
            vstrwq_s32(sums + 4, zero);
        } else {
            const int8_t *rows[4]; /* rows past n repeat row oc; their outputs are not written */
            for (uint32_t i = 0; i < 4; i++) rows[i] = w + (size_t)(oc + (i < n ? i : 0)) * depth;
            dot4(x, rows[0], rows[1], rows[2], rows[3], depth, sums);
        }
        if (vector_rq) {
            const mve_pred16_t p = vctp32q(n);
            /* sum((x + off) * w) = sum(x * w) + off * sum(w): |sum(w)| <= 2^23, |off| <= 128 */
            int32x4_t acc = vaddq_n_s32(vmlaq_n_s32(vldrwq_s32(sums), vldrwq_s32(sums + 4), in_off), extra);
            if (rq->bias) acc = vaddq_s32(acc, vldrwq_z_s32(rq->bias + oc, p));
            const int32x4_t mult = rq->per_channel ? vldrwq_z_s32(rq->mult + oc, p) : vdupq_n_s32(rq->mult[0]);
            const int32x4_t shift = rq->per_channel ? mf_shifts_x4(rq->shift + oc, p) : vdupq_n_s32(rq->shift[0]);
            int32x4_t v = vaddq_s32(mf_requantize_x4(acc, mult, shift), vdupq_n_s32(rq->out_off));
            v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(rq->lo)), vdupq_n_s32(rq->hi));
            vstrbq_p_s32(out + oc, v, p);
        } else {
            for (uint32_t i = 0; i < n; i++) {
                const int32_t acc = mf_add_wrap(mf_add_wrap(sums[i], sums[4 + i] * in_off), extra);
                out[oc + i] = mf_channel_requant_s8_inline(rq, oc + i, acc);
            }
        }
    }
}
#define MF_FC_FAST 1

#elif defined(MF_USE_SCALAR_FAST)
/* Scalar cores (cortex-m3): four output channels per loop, one input load and its offset shared by four
 * LDRSB + MLA (mf_sc_dot4), then the four outputs through mf_sc_store_channels. */
static void add_extra(int32_t sums[4], int32_t extra) {
    for (int i = 0; i < 4; i++) sums[i] = mf_add_wrap(sums[i], extra);
}

static void run_row(const int8_t *x, const int8_t *w, uint32_t oc_n, uint32_t depth, int32_t in_off, int32_t extra,
                    const mf_channel_requant *rq, int variant, int8_t *out) {
    int32_t sums[4];
    uint32_t oc = 0;
    for (const int8_t *p = w; oc + 4 <= oc_n; oc += 4, p += 4 * depth) {
        mf_sc_dot4(x, p, p + depth, p + 2 * depth, p + 3 * depth, depth, in_off, sums);
        add_extra(sums, extra);
        mf_sc_store_channels(rq, variant, sums, 4, oc, out + oc);
    }
    if (oc < oc_n) { /* rows past the last repeat it; their outputs are not written */
        const uint32_t n = oc_n - oc;
        const int8_t *p = w + (size_t)oc * depth, *last = p + (size_t)(n - 1) * depth;
        mf_sc_dot4(x, p, n > 1 ? p + depth : last, n > 2 ? p + 2 * depth : last, last, depth, in_off, sums);
        add_extra(sums, extra);
        mf_sc_store_channels(rq, variant, sums, n, oc, out + oc);
    }
}
#define MF_FC_FAST 1
#endif

/* Weight (oc, k) of S8_PAIRS weights (O, I) (docs/format.md "Layouts"): block oc / 4, group k / 4, word (pair, k's
 * parity), byte (k's half of the group, row of the pair); the pair's first row stored ^ 0x80. */
static int32_t pairs_weight(const int8_t *w, uint32_t depth, uint32_t oc, uint32_t k) {
    const uint32_t i = oc & 3u, j = k & 3u;
    const size_t at = (size_t)(oc - i) * depth + (size_t)(k - j) * 4u + ((i >> 1) * 2u + (j & 1u)) * 4u +
                      (j >> 1) * 2u + (i & 1u);
    const uint32_t b = (uint32_t)(uint8_t)w[at] ^ ((i & 1u) ? 0u : 0x80u);
    return (int32_t)b - (int32_t)((b & 0x80u) << 1);
}

/* fully connected from S8_PAIRS weights: the DSP cores' pairs loop (input offset 0, as the lowering gives), else
 * the portable arithmetic reading each weight through pairs_weight (a program for a DSP core on another one:
 * correct, slow). */
static void run_pairs(const int8_t *xd, const int8_t *wd, uint32_t rows, uint32_t oc_n, uint32_t depth,
                      int32_t in_off, int32_t f_off, const mf_channel_requant *rq, int8_t *out) {
    for (uint32_t r = 0; r < rows; r++, out += oc_n) {
        const int8_t *row = xd + (size_t)r * depth;
        const int32_t extra = filter_offset_term(row, depth, in_off, f_off);
#if defined(FC_PAIRS_DSP)
        if (in_off == 0) {
            rows_pairs(row, wd, oc_n, depth, extra, fc_sum_x(row, depth), rq, out);
            continue;
        }
#endif
        for (uint32_t oc = 0; oc < oc_n; oc++) {
            int32_t acc = 0; /* as mf_dot_s8: |acc| <= 255 * 128 * MF_MAX_DOT_DEPTH < 2^31 */
            for (uint32_t k = 0; k < depth; k++) acc += (row[k] + in_off) * pairs_weight(wd, depth, oc, k);
            out[oc] = mf_channel_requant_s8(rq, oc, mf_add_wrap(acc, extra));
        }
    }
}

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF), f_off = mf_attr_int_or(c, A_FILTER_OFF, 0);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const uint32_t depth = w.shape[1], oc_n = w.shape[0], rows = x.numel / depth;
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    int8_t *out = (int8_t *)o.data;
    if (w.layout == MF_LAYOUT_S8_PAIRS) {
        run_pairs(xd, wd, rows, oc_n, depth, in_off, f_off, &rq, out);
        return MF_OK;
    }
#if defined(MF_FC_FAST)
#if defined(MF_USE_MVE)
    const int vector_rq = mf_requant_vector_ok(&rq, oc_n);
#elif defined(MF_USE_SCALAR_FAST)
    const int vector_rq = mf_sc_variant(&rq, oc_n); /* the scalar output stage's variant */
#else
    const int vector_rq = 0;
#endif
    for (uint32_t r = 0; r < rows; r++) {
        const int8_t *row = xd + (size_t)r * depth;
        run_row(row, wd, oc_n, depth, in_off, filter_offset_term(row, depth, in_off, f_off), &rq, vector_rq,
                out + (size_t)r * oc_n);
    }
#else
    for (uint32_t r = 0; r < rows; r++) {
        const int8_t *row = xd + (size_t)r * depth;
        const int32_t extra = filter_offset_term(row, depth, in_off, f_off);
        for (uint32_t oc = 0; oc < oc_n; oc++) {
            const int32_t acc = mf_add_wrap(mf_dot_s8(row, wd + (size_t)oc * depth, depth, in_off), extra);
            *out++ = mf_channel_requant_s8(&rq, oc, acc);
        }
    }
#endif
    return MF_OK;
}

const mf_kernel mf_kernel_fully_connected_s8 = {MF_KIND_HEAD_fully_connected_s8, check, run};

/* arm_fully_connected_per_channel_s8: fully_connected_s8 with multipliers and shifts of length O. */
static mf_status check_per_channel(const mf_call *c) {
    const mf_status s = check(c);
    if (s != MF_OK) return s;
    mf_tensor w, m;
    mf_call_input(c, 1, &w);
    mf_call_input(c, 3, &m);
    return m.shape[0] == w.shape[0] ? MF_OK : MF_ERR_SHAPE;
}

const mf_kernel mf_kernel_fully_connected_per_channel_s8 = {MF_KIND_HEAD_fully_connected_per_channel_s8, check_per_channel, run};
