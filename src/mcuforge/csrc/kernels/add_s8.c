/*
 * add_s8: int8 elementwise add, bit-exact with CMSIS-NN arm_elementwise_add_s8 (TFLite int8 ADD
 * parameters), with numpy broadcasting of the two inputs (CMSIS itself takes equal shapes).
 *
 * run_portable is the statement of the math (any broadcast, every core). Two inputs of the output's
 * element count (ResNet's residual adds) take a fast path with the same bytes: on MVE cores four
 * lanes at a time (CMSIS-NN's arm_elementwise_add_s8 MVE arithmetic: VQRDMULH + rounding shift) --
 * TFLite's parameters (input shifts <= 0, output shift < 0) as one tail-predicated asm loop, other
 * parameters in C with the tail predicated; on DSP cores TFLite's parameters by SMMULR (add_dsp).
 * TFLite's usual residual add (one input of multiplier 2^30, shift 0; see add_fold_k) takes a shorter
 * loop on both: add_mve4 (Helium) and, on the DSP cores (activation range [-128, 127]), add_tab from
 * 512 elements: the general input's 256 scaled values in a table on the stack, then per element three
 * loads (its byte, its table value, the exact input's byte), ADD, SMMLAR, SSAT (the output shift as
 * SSAT's immediate for resnet8's 18 and 19; the loads chained on cortex-m4/m33, interleaved with the
 * arithmetic on cortex-m7) and STRB; shorter adds add_dsp4 (4 elements a pass, 12 instructions an
 * element: no table to build). On the scalar cores (cortex-m3, mf_scalar.h) tables of each
 * input's 256 scaled values in the op's scratch; on the other Cortex-M cores one scalar loop with the
 * requantization inlined and the broadcast walker gone. A multiplier of INT32_MIN takes the portable path on MVE.
 */
#include "broadcast.h"
#include "mf_scalar.h"

enum {
    A_A_OFF, A_A_MULT, A_A_SHIFT, A_B_OFF, A_B_MULT, A_B_SHIFT, A_LEFT_SHIFT, A_OUT_OFF, A_OUT_MULT,
    A_OUT_SHIFT, A_ACT_MIN, A_ACT_MAX
};

static mf_status check(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    if (!mf_call_binary_s8(c, &a, &b, &o)) return MF_ERR_SHAPE;
    if (!mf_bcast_init(&it, &a, &b) || it.numel != o.numel) return MF_ERR_SHAPE;
    int32_t lo, hi;
    if (!mf_attr_act(c, A_ACT_MIN, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_LEFT_SHIFT), 0, 30)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_A_OFF), -127, 128) || !mf_in_range(mf_attr_int(c, A_B_OFF), -127, 128)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_OUT_OFF), -128, 127)) return MF_ERR_SHAPE;
    if (!mf_in_range(mf_attr_int(c, A_A_SHIFT), -31, 30) || !mf_in_range(mf_attr_int(c, A_B_SHIFT), -31, 30) ||
        !mf_in_range(mf_attr_int(c, A_OUT_SHIFT), -31, 30)) {
        return MF_ERR_SHAPE;
    }
    return MF_OK;
}

/* (x + offset) << left_shift as a wrapping int32, then requantized */
static int32_t scale_input(int32_t x, int32_t offset, int32_t left_shift, int32_t mult, int32_t shift) {
    int32_t shifted;
    uint32_t u = (uint32_t)(x + offset) << left_shift;
    memcpy(&shifted, &u, 4);
    return mf_requantize(shifted, mult, shift);
}

static mf_status run_portable(const mf_call *c) {
    mf_tensor a, b, o;
    mf_bcast it;
    mf_call_binary_s8(c, &a, &b, &o);
    mf_bcast_init(&it, &a, &b);
    const int32_t a_off = mf_attr_int(c, A_A_OFF), a_mult = mf_attr_int(c, A_A_MULT), a_shift = mf_attr_int(c, A_A_SHIFT);
    const int32_t b_off = mf_attr_int(c, A_B_OFF), b_mult = mf_attr_int(c, A_B_MULT), b_shift = mf_attr_int(c, A_B_SHIFT);
    const int32_t ls = mf_attr_int(c, A_LEFT_SHIFT), out_off = mf_attr_int(c, A_OUT_OFF);
    const int32_t out_mult = mf_attr_int(c, A_OUT_MULT), out_shift = mf_attr_int(c, A_OUT_SHIFT);
    const int32_t lo = mf_attr_int(c, A_ACT_MIN), hi = mf_attr_int(c, A_ACT_MAX);
    const int8_t *ad = (const int8_t *)a.data, *bd = (const int8_t *)b.data;
    int8_t *out = (int8_t *)o.data;
    for (uint32_t i = 0; i < it.numel; i++, mf_bcast_step(&it)) {
        const int32_t sa = scale_input(ad[it.ia], a_off, ls, a_mult, a_shift);
        const int32_t sb = scale_input(bd[it.ib], b_off, ls, b_mult, b_shift);
        out[i] = mf_requant_s8(mf_add_wrap(sa, sb), out_mult, out_shift, out_off, lo, hi);
    }
    return MF_OK;
}

#if defined(MF_USE_MVE) || defined(MF_ARM_LOOPS) || defined(MF_USE_SCALAR_FAST)
typedef struct {
    int32_t a_off, a_mult, a_shift, b_off, b_mult, b_shift, ls, out_off, out_mult, out_shift, lo, hi;
} add_params;

static void add_params_read(const mf_call *c, add_params *p) {
    p->a_off = mf_attr_int(c, A_A_OFF), p->a_mult = mf_attr_int(c, A_A_MULT), p->a_shift = mf_attr_int(c, A_A_SHIFT);
    p->b_off = mf_attr_int(c, A_B_OFF), p->b_mult = mf_attr_int(c, A_B_MULT), p->b_shift = mf_attr_int(c, A_B_SHIFT);
    p->ls = mf_attr_int(c, A_LEFT_SHIFT), p->out_off = mf_attr_int(c, A_OUT_OFF);
    p->out_mult = mf_attr_int(c, A_OUT_MULT), p->out_shift = mf_attr_int(c, A_OUT_SHIFT);
    p->lo = mf_attr_int(c, A_ACT_MIN), p->hi = mf_attr_int(c, A_ACT_MAX);
}
#endif

#if defined(MF_USE_DSP) || (defined(MF_USE_MVE) && defined(__OPTIMIZE__)) /* add_mve4 is asm only */
/*
 * The residual add of the DSP cores (add_dsp4) and of Helium (add_mve4), TFLite's parameters: left
 * shift 20; one input "exact" (multiplier 2^30, shift 0: its scaled value is (x + off) * 2^19, no
 * multiply), the other "general"
 * (multiplier > 2^10, shift -n, n >= 1); output multiplier > 2^30, shift -no, no >= 1 (on the DSP cores the
 * activation range [-128, 127]: SSAT). With X = x + off of the general input and Y = X * 2^21, add_dsp's
 * v = SMMULR(Y, m) is negative exactly when X is (m > 2^10), so its rounding divide
 * floor((v + 2^(n-1) - [v < 0]) / 2^n) is one SMMLAR with the accumulator k_g - [X < 0]
 * (k_g = 2^(n-1), plus the exact input's offset * 2^(19+n), which the floor passes through whole) and
 * an ASR: the general input's scaled value plus the exact one's offset term. Adding x_e * 2^19 gives
 * the sum S (|S| < 2^28); the output likewise: SMMLAR(2 S, m_o, k_o - [S < 0]) >> no, k_o =
 * 2^(no-1) + out_off * 2^no (m_o > 2^30: the product is negative exactly when S is). When act_min >= out_off
 * the [S < 0] term is dropped: a negative S gives a result <= out_off either way, which the clamp makes
 * act_min. add_fold_setup checks every bound (int64) so no sum wraps: the same bits as add_dsp (and as
 * mf_requantize: add_dsp's equality with it is shown there).
 */
typedef struct {
    int32_t off_g, k_g, m_g, n_g, k_o, m_o, n_o; /* the asm's LDM order (r4-r10) */
    int relu;                                    /* act_min >= out_off: no [S < 0] term */
} add_fold_k;

/* The constants of add_dsp4 / add_mve4 and whether input b is the general one (then the caller swaps a
 * and b: the sum is symmetric); 0 when the parameters are not theirs. `full_range`: the activation range
 * must be [-128, 127] (the DSP loop's SSAT). */
static int add_fold_setup(const add_params *p, add_fold_k *k, int *swap, int full_range) {
    const int a_exact = p->a_mult == (1 << 30) && p->a_shift == 0, b_exact = p->b_mult == (1 << 30) && p->b_shift == 0;
    if (p->ls != 20 || (full_range && (p->lo != -128 || p->hi != 127)) || a_exact == b_exact) return 0;
    *swap = a_exact;
    const int32_t m_g = a_exact ? p->b_mult : p->a_mult, shift_g = a_exact ? p->b_shift : p->a_shift;
    const int32_t off_g = a_exact ? p->b_off : p->a_off, off_e = a_exact ? p->a_off : p->b_off;
    if (m_g <= (1 << 10) || shift_g > -1 || p->out_mult <= (1 << 30) || p->out_shift > -1) return 0;
    const int32_t n = -shift_g, no = -p->out_shift;
    if (n > 24 || no > 24) return 0;
    const int64_t k_g = ((int64_t)1 << (n - 1)) + (int64_t)off_e * ((int64_t)1 << (19 + n));
    const int64_t k_o = ((int64_t)1 << (no - 1)) + (int64_t)p->out_off * ((int64_t)1 << no);
    const int64_t room = ((int64_t)1 << 31) - ((int64_t)1 << 28) - 2; /* |v| <= 2^28, the sign term 1 */
    if (k_g > room || k_g < -room || k_o > room || k_o < -room) return 0;
    k->off_g = off_g, k->k_g = (int32_t)k_g, k->m_g = m_g, k->n_g = n;
    k->k_o = (int32_t)k_o, k->m_o = p->out_mult, k->n_o = no, k->relu = p->lo >= p->out_off;
    return 1;
}

#endif

#if defined(MF_USE_MVE)

/* (x + offset) << left_shift (wrapping), requantized: four lanes */
static inline int32x4_t add_scale_x4(int32x4_t x, int32_t off, int32_t ls, int32_t mult, int32_t shift) {
    return mf_requantize_x4_n(vshlq_r_s32(vaddq_n_s32(x, off), ls), mult, shift);
}

static void add_same_shape(const add_params *p, const int8_t *a, const int8_t *b, int8_t *out, uint32_t n) {
    const int32x4_t lo = vdupq_n_s32(p->lo), hi = vdupq_n_s32(p->hi);
    for (int32_t left = (int32_t)n; left > 0; left -= 4, a += 4, b += 4, out += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)left);
        const int32x4_t sa = add_scale_x4(vldrbq_z_s32(a, pr), p->a_off, p->ls, p->a_mult, p->a_shift);
        const int32x4_t sb = add_scale_x4(vldrbq_z_s32(b, pr), p->b_off, p->ls, p->b_mult, p->b_shift);
        int32x4_t v = vaddq_n_s32(mf_requantize_x4_n(vaddq_s32(sa, sb), p->out_mult, p->out_shift), p->out_off);
        v = vminq_s32(vmaxq_s32(v, lo), hi);
        vstrbq_p_s32(out, v, pr);
    }
}

static int add_fast_ok(const add_params *p) {
    return p->a_mult != INT32_MIN && p->b_mult != INT32_MIN && p->out_mult != INT32_MIN;
}

/* add_same_shape when the input shifts are <= 0 and the output shift < 0 -- the usual TFLite
 * parameters: the input of the larger scale has the multiplier 2^30 and shift 0 -- as one
 * tail-predicated asm loop of four lanes (WLSTP/LETP): (x + off) << ls as x * 2^ls + (off << ls)
 * (VMLAS, wrapping as the C shift does), each requantization VQRDMULH then, for a shift < 0, the
 * rounding fix-up + VRSHL (ADD_RND), the sum's likewise, + output offset, clamp, four bytes stored.
 * The seven scalars come in by one LDM into r4-r6, r8-r11 (more operands than GCC can allocate beside
 * the vectors): r4 a_off << ls, r5 b_off << ls, r6 a_shift, r8 b_shift, r9 out_mult, r10 out_shift,
 * r11 out_off. */
#define ADD_RND(Q, R) "   vshr.s32     q2, " Q ", #31\n   vqadd.s32    " Q ", " Q ", q2\n   vrshl.s32    " Q ", " R "\n"
#define ADD_ASM(A_RND, B_RND)                                                                         \
    __asm__ volatile("   ldm          %[k], {r4, r5, r6, r8, r9, r10, r11}\n"                      \
                     "   wlstp.32     lr, %[n], 1f\n"                                              \
                     "2: vldrb.s32    q0, [%[a]], #4\n"                                            \
                     "   vldrb.s32    q1, [%[b]], #4\n"                                            \
                     "   vmlas.s32    q0, %q[pow], r4\n"                                           \
                     "   vmlas.s32    q1, %q[pow], r5\n"                                           \
                     "   vqrdmulh.s32 q0, q0, %q[ma]\n"                                            \
                     "   vqrdmulh.s32 q1, q1, %q[mb]\n" A_RND B_RND                                \
                     "   vadd.i32     q0, q0, q1\n"                                                \
                     "   vqrdmulh.s32 q0, q0, r9\n" ADD_RND("q0", "r10")                           \
                     "   vadd.i32     q0, q0, r11\n"                                               \
                     "   vmax.s32     q0, q0, %q[lo]\n"                                            \
                     "   vmin.s32     q0, q0, %q[hi]\n"                                            \
                     "   vstrb.32     q0, [%[o]], #4\n"                                            \
                     "   letp         lr, 2b\n"                                                    \
                     "1:\n"                                                                        \
                     : [a] "+&l"(a), [b] "+&l"(b), [o] "+&l"(out)                                      \
                     : [n] "r"(n), [k] "r"(k), [pow] "w"(pow), [lo] "w"(lo), [hi] "w"(hi), [ma] "w"(ma), [mb] "w"(mb) \
                     : "q0", "q1", "q2", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "memory")

static int add_asm_ok(const add_params *p) { return p->a_shift <= 0 && p->b_shift <= 0 && p->out_shift < 0; }

static __attribute__((noinline)) void add_asm(const add_params *p, const int8_t *a, const int8_t *b, int8_t *out,
                                              uint32_t n) {
    const int32x4_t pow = vdupq_n_s32(mf_wrap32(1u << p->ls)), lo = vdupq_n_s32(p->lo), hi = vdupq_n_s32(p->hi);
    const int32x4_t ma = vdupq_n_s32(p->a_mult), mb = vdupq_n_s32(p->b_mult);
    const int32_t k[7] = {mf_wrap32((uint32_t)p->a_off << p->ls), mf_wrap32((uint32_t)p->b_off << p->ls), p->a_shift,
                          p->b_shift, p->out_mult, p->out_shift, p->out_off};
    if (p->a_shift < 0 && p->b_shift < 0) {
        ADD_ASM(ADD_RND("q0", "r6"), ADD_RND("q1", "r8"));
    } else if (p->a_shift < 0) {
        ADD_ASM(ADD_RND("q0", "r6"), "");
    } else if (p->b_shift < 0) {
        ADD_ASM("", ADD_RND("q1", "r8"));
    } else {
        ADD_ASM("", "");
    }
}

#if defined(__OPTIMIZE__)
/* add_fold_k's arithmetic on four lanes, tail-predicated (WLSTP/LETP): VMLAS makes Y = X * 2^20 (VQRDMULH
 * doubles), VQRDMLAH is SMMLAR (the accumulator k_g - [X < 0] from VSHR #31 + VADD), VSHL by -n floors;
 * VMLA adds x_e * 2^19; the output's VQRDMLAH likewise (or, with act_min >= out_off, VQRDMULH, the
 * rounding VRSHL and the offset), the clamp, four bytes stored. No lane saturates (add_fold_setup's
 * bounds). Scalars by one LDM: r4 off_g * 2^20, r5 k_g, r6 m_g, r8 -n, r9 m_o, r10 k_o (or out_off),
 * r11 -no. */
#define ADDM_ASM(OUT, R)                                                                              \
    __asm__ volatile("   ldm          %[k], {r4, r5, r6, r8, r9, r10, r11}\n"                       \
                     "   wlstp.32     lr, %[n], 1f\n"                                              \
                     "2: vldrb.s32    q0, [%[g]], #4\n"                                            \
                     "   vldrb.s32    q1, [%[e]], #4\n"                                            \
                     "   vmlas.s32    q0, %q[pow], r4\n"                                           \
                     "   vshr.s32     q2, q0, #31\n"                                               \
                     "   vadd.i32     q2, q2, r5\n"                                                \
                     "   vqrdmlah.s32 q2, q0, r6\n"                                                \
                     "   vshl.s32     q2, r8\n"                                                    \
                     "   vmla.s32     q2, q1, %[c19]\n" OUT                                        \
                     "   vmax.s32     " R ", " R ", %q[lo]\n"                                      \
                     "   vmin.s32     " R ", " R ", %q[hi]\n"                                      \
                     "   vstrb.32     " R ", [%[o]], #4\n"                                         \
                     "   letp         lr, 2b\n"                                                    \
                     "1:\n"                                                                        \
                     : [g] "+&l"(g), [e] "+&l"(e), [o] "+&l"(out)                                     \
                     : [n] "r"(n), [k] "r"(kv), [c19] "r"(1 << 19), [pow] "w"(pow), [lo] "w"(lo), [hi] "w"(hi) \
                     : "q0", "q1", "q2", "q3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "memory")

static __attribute__((noinline)) void add_mve4(const add_fold_k *k, int32_t lo_, int32_t hi_, const int8_t *g,
                                               const int8_t *e, int8_t *out, uint32_t n, int32_t out_off) {
    const int32x4_t pow = vdupq_n_s32(1 << 20), lo = vdupq_n_s32(lo_), hi = vdupq_n_s32(hi_);
    const int32_t kv[7] = {k->off_g * (1 << 20), k->k_g, k->m_g, -k->n_g, k->m_o, k->relu ? out_off : k->k_o, -k->n_o};
    if (k->relu) {
        ADDM_ASM("   vqrdmulh.s32 q2, q2, r9\n   vrshl.s32    q2, r11\n   vadd.i32     q2, q2, r10\n", "q2");
    } else {
        ADDM_ASM("   vshr.s32     q3, q2, #31\n   vadd.i32     q3, q3, r10\n   vqrdmlah.s32 q3, q2, r9\n"
                 "   vshl.s32     q3, r11\n",
                 "q3");
    }
}
#endif

#elif defined(MF_ARM_LOOPS)

static void add_same_shape(const add_params *p, const int8_t *a, const int8_t *b, int8_t *out, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        const int32_t xa = mf_wrap32((uint32_t)(a[i] + p->a_off) << p->ls);
        const int32_t xb = mf_wrap32((uint32_t)(b[i] + p->b_off) << p->ls);
        const int32_t sum = mf_add_wrap(mf_requantize_inline(xa, p->a_mult, p->a_shift),
                                        mf_requantize_inline(xb, p->b_mult, p->b_shift));
        out[i] = mf_clamp_s8(mf_add_wrap(mf_requantize_inline(sum, p->out_mult, p->out_shift), p->out_off), p->lo,
                             p->hi);
    }
}

static int add_fast_ok(const add_params *p) {
    (void)p;
    return 1;
}

#if defined(MF_USE_DSP)
/* The DSP cores' loop for left_shift <= 20 and every shift <= 0 (TFLite's parameters). Then every
 * requantized value fits comfortably (|(x + off) << ls| < 2^28, each scaled input < 2^28, their sum
 * < 2^29), so the doubling high multiply (v * m + 2^30) >> 31 is SMMULR(2 v, m) = (2 v m + 2^31) >> 32
 * exactly, with the doubling folded into the shift, and the rounding divide by 2^n (n > 0) is
 * (v - (v < 0) + 2^(n - 1)) >> n, which cannot overflow: the same bits as mf_requantize. */
static inline int32_t add_dsp_scaled(int32_t x2, int32_t mult, int32_t n) {
    int32_t v;
    __asm__("smmulr %0, %1, %2" : "=r"(v) : "r"(x2), "r"(mult));
    if (n > 0) v = (v + (v >> 31) + (1 << (n - 1))) >> n;
    return v;
}

static int add_dsp_ok(const add_params *p) {
    return p->ls <= 20 && p->a_shift <= 0 && p->b_shift <= 0 && p->out_shift <= 0;
}

static void add_dsp(const add_params *p, const int8_t *a, const int8_t *b, int8_t *out, uint32_t n) {
    const int32_t ls1 = p->ls + 1, na = -p->a_shift, nb = -p->b_shift, no = -p->out_shift;
    for (uint32_t i = 0; i < n; i++) {
        const int32_t sa = add_dsp_scaled(mf_wrap32((uint32_t)(a[i] + p->a_off) << ls1), p->a_mult, na);
        const int32_t sb = add_dsp_scaled(mf_wrap32((uint32_t)(b[i] + p->b_off) << ls1), p->b_mult, nb);
        const int32_t v = add_dsp_scaled(mf_wrap32((uint32_t)(sa + sb) << 1), p->out_mult, no) + p->out_off;
        out[i] = mf_clamp_s8(v, p->lo, p->hi);
    }
}

static inline int32_t add_smmlar(int32_t x, int32_t m, int32_t acc) {
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(x), "r"(m), "r"(acc));
    return r;
}

/* One element of add_dsp4 in C (the tail, and builds without the asm). */
static inline int8_t add_dsp4_one(const add_fold_k *k, int32_t x_g, int32_t x_e) {
    const int32_t x = x_g + k->off_g;
    const int32_t s = (add_smmlar(x * (1 << 21), k->m_g, k->k_g + (x >> 31)) >> k->n_g) + x_e * (1 << 19);
    return mf_clamp_s8(add_smmlar(s * 2, k->m_o, k->k_o + (s >> 31)) >> k->n_o, -128, 127);
}

#if defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) /* -Os keeps too few registers for the asm's 14 */
/* One element (byte lane ROR of the words in r11, lr) of the asm loop; OUT_ACC the output's SMMLAR
 * accumulator, OUT_SIGN the line that makes it (k_o - [S < 0] into t1) or nothing (out_off = -128). */
#define ADD4_EL(ROR, OUT_SIGN, OUT_ACC, STORE)                                                         \
    "   sxtab  %[t1], r4, r11" ROR "\n"                                                                \
    "   lsl    %[t2], %[t1], #21\n"                                                                    \
    "   add    %[t1], r5, %[t1], asr #31\n"                                                            \
    "   smmlar %[t2], %[t2], r6, %[t1]\n"                                                              \
    "   asr    %[t2], %[t2], r7\n"                                                                     \
    "   sxtb   %[t1], lr" ROR "\n"                                                                     \
    "   add    %[t2], %[t2], %[t1], lsl #19\n" OUT_SIGN                                                \
    "   lsl    %[t2], %[t2], #1\n"                                                                     \
    "   smmlar %[t2], %[t2], r9, " OUT_ACC "\n"                                                        \
    "   asr    %[t2], %[t2], r10\n"                                                                    \
    "   ssat   %[t2], #8, %[t2]\n"                                                                     \
    "   strb   %[t2], " STORE "\n"

/* Four elements a pass: the two inputs' words by LDR, the constants in r4-r10 (one LDM), the end
 * pointer on the stack (every other register is taken), compared right after the loads so that the
 * flags carry to the BNE (nothing in between sets them). */
#define ADD4_LOOP(OUT_SIGN, OUT_ACC)                                                                   \
    __asm__ volatile("   ldm    %[t1], {r4, r5, r6, r7, r8, r9, r10}\n"                                \
                     "   push   {%[t2]}\n"                                                             \
                     "1: ldr    r11, [%[a]], #4\n"                                                     \
                     "   ldr    lr, [%[b]], #4\n"                                                      \
                     "   ldr    %[t2], [sp]\n"                                                         \
                     "   cmp    %[a], %[t2]\n" ADD4_EL("", OUT_SIGN, OUT_ACC, "[%[o]], #4")            \
                         ADD4_EL(", ror #8", OUT_SIGN, OUT_ACC, "[%[o], #-3]")                          \
                             ADD4_EL(", ror #16", OUT_SIGN, OUT_ACC, "[%[o], #-2]")                     \
                                 ADD4_EL(", ror #24", OUT_SIGN, OUT_ACC, "[%[o], #-1]")                 \
                     "   bne    1b\n"                                                                  \
                     "   add    sp, sp, #4\n"                                                          \
                     : [a] "+&r"(a), [b] "+&r"(b), [o] "+&r"(out), [t1] "+&r"(kp), [t2] "+&r"(end)       \
                     :                                                                                 \
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "lr", "cc", "memory")
#endif

#if defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
/* The asm loop alone in a function (noinline): nothing of the caller's is live across it, so GCC
 * finds its five operand registers at every -O level and core (in add_dsp4 beside the tail's values,
 * inlined into run beside add_tab's call, it did not). */
static __attribute__((noinline)) void add_dsp4_loop(const add_fold_k *kp, const int8_t *a, const int8_t *b,
                                                    int8_t *out, const int8_t *end) {
    if (kp->relu) {
        ADD4_LOOP("", "r8");
    } else {
        ADD4_LOOP("   add    %[t1], r8, %[t2], asr #31\n", "%[t1]");
    }
}
#endif

static void add_dsp4(const add_fold_k *k, const int8_t *a, const int8_t *b, int8_t *out, uint32_t n) {
    uint32_t i = 0;
#if defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
    if (n >= 4) {
        i = n & ~3u;
        add_dsp4_loop(k, a, b, out, a + i);
    }
#endif
    for (; i < n; i++) out[i] = add_dsp4_one(k, a[i], b[i]);
}

/* add_dsp4 by a table (add_tab): the general input's part of 2 S depends on its byte alone, so the 256
 * values 2 (SMMLAR(X * 2^21, m_g, k_g - [X < 0]) >> n_g) (add_dsp4_one's arithmetic) are computed once a
 * run into a table on the stack (1 KB, indexed by the byte read as unsigned); per element then a table
 * load, + x_e * 2^20 (2 S, the same integer as add_dsp4's), the output stage and SSAT. */
static inline int32_t add_tab_entry(const add_fold_k *k, int32_t v) {
    const int32_t x = v + k->off_g;
    return (add_smmlar(x * (1 << 21), k->m_g, k->k_g + (x >> 31)) >> k->n_g) * 2;
}

/* Bytes 0..127, then 128..255 (-128..-1), two entries a step: no index arithmetic in the loops (the
 * build is about a tenth of a 4096-element add's cycles on cortex-m4). */
static void add_tab_build(const add_fold_k *k, int32_t *t) {
    for (int32_t v = 0; v < 128; v += 2, t += 2) t[0] = add_tab_entry(k, v), t[1] = add_tab_entry(k, v + 1);
    for (int32_t v = -128; v < 0; v += 2, t += 2) t[0] = add_tab_entry(k, v), t[1] = add_tab_entry(k, v + 1);
}

static inline int8_t add_tab_one(const add_fold_k *k, const int32_t *t, int32_t x_g, int32_t x_e) {
    const int32_t s2 = t[x_g & 0xFF] + x_e * (1 << 20);
    return mf_clamp_s8(add_smmlar(s2, k->m_o, k->k_o + (s2 >> 31)) >> k->n_o, -128, 127);
}

#if defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
/* Four elements a pass. On Cortex-M4 a load right after a load is 1 cycle, after anything else 2: so
 * the pass's loads (four general bytes, their four table values, the exact bytes) run as one chain,
 * as many exact bytes as there are registers left (the rest after the first adds). Temporaries: r4,
 * r5, r6, r8 the four 2 S; r10, r11 (and lr) exact bytes, then the sign accumulator. */
#define ADDT_GEN_LOADS                                                                                 \
    "   ldrb   r4, [%[g]], #4\n"                                                                     \
    "   ldrb   r5, [%[g], #-3]\n"                                                                    \
    "   ldrb   r6, [%[g], #-2]\n"                                                                    \
    "   ldrb   r8, [%[g], #-1]\n"                                                                    \
    "   ldr    r4, [%[t], r4, lsl #2]\n"                                                             \
    "   ldr    r5, [%[t], r5, lsl #2]\n"                                                             \
    "   ldr    r6, [%[t], r6, lsl #2]\n"                                                             \
    "   ldr    r8, [%[t], r8, lsl #2]\n"                                                             \
    "   ldrsb  r10, [%[e]], #4\n"                                                                    \
    "   ldrsb  r11, [%[e], #-3]\n"
/* Output n_o a compile-time shift (SSAT's asr), act_min >= out_off: SMMLAR with k_o, SSAT. */
#define ADDT_OUT_FIX(T, N) "   smmlar " T ", " T ", %[m], %[k]\n   ssat   " T ", #8, " T ", asr #" #N "\n"
#define ADDT_FIX4(N, CMP)                                                                              \
    ADDT_GEN_LOADS "   ldrsb  lr, [%[e], #-2]\n"                                                      \
    "   add    r4, r4, r10, lsl #20\n"                                                                \
    "   add    r5, r5, r11, lsl #20\n"                                                                \
    "   add    r6, r6, lr, lsl #20\n"                                                                 \
    "   ldrsb  r10, [%[e], #-1]\n" CMP                                                                \
    "   add    r8, r8, r10, lsl #20\n" ADDT_OUT_FIX("r4", N) ADDT_OUT_FIX("r5", N) ADDT_OUT_FIX("r6", N)   \
        ADDT_OUT_FIX("r8", N)                                                                          \
    "   strb   r4, [%[o]], #4\n"                                                                      \
    "   strb   r5, [%[o], #-3]\n"                                                                     \
    "   strb   r6, [%[o], #-2]\n"                                                                     \
    "   strb   r8, [%[o], #-1]\n"
#if defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 8) /* Cortex-M7 (double FPU) */
/* Cortex-M7 issues a load or store beside an ALU or multiply instruction (one memory access a cycle),
 * so its loop interleaves the eight elements' 32 loads and stores with their arithmetic instead of
 * chaining the loads (an order found by list scheduling against the m7.py cycle model: 35 cycles a
 * pass, against 47 for the chains; the same instructions). The pointers step once a pass. */
#define ADDT_PASS_FIX(N) \
    "   ldrb   r4, [%[g], #0]\n"            \
    "   ldrsb  r5, [%[e], #0]\n"            \
    "   ldr    r4, [%[t], r4, lsl #2]\n"    \
    "   ldrb   r6, [%[g], #1]\n"            \
    "   ldrsb  r8, [%[e], #1]\n"            \
    "   add    r4, r4, r5, lsl #20\n"       \
    "   smmlar r4, r4, %[m], %[k]\n"        \
    "   ldr    r6, [%[t], r6, lsl #2]\n"    \
    "   ssat   r4, #8, r4, asr #" #N "\n"   \
    "   ldrb   r10, [%[g], #2]\n"           \
    "   ldrsb  r11, [%[e], #2]\n"           \
    "   add    r6, r6, r8, lsl #20\n"       \
    "   ldr    r10, [%[t], r10, lsl #2]\n"  \
    "   smmlar r6, r6, %[m], %[k]\n"        \
    "   ssat   r6, #8, r6, asr #" #N "\n"   \
    "   ldrb   lr, [%[g], #3]\n"            \
    "   ldrsb  r5, [%[e], #3]\n"            \
    "   add    r10, r10, r11, lsl #20\n"    \
    "   ldr    lr, [%[t], lr, lsl #2]\n"    \
    "   smmlar r10, r10, %[m], %[k]\n"      \
    "   ldrb   r8, [%[g], #4]\n"            \
    "   ssat   r10, #8, r10, asr #" #N "\n" \
    "   ldrsb  r11, [%[e], #4]\n"           \
    "   add    lr, lr, r5, lsl #20\n"       \
    "   ldr    r8, [%[t], r8, lsl #2]\n"    \
    "   smmlar lr, lr, %[m], %[k]\n"        \
    "   strb   r4, [%[o], #0]\n"            \
    "   ssat   lr, #8, lr, asr #" #N "\n"   \
    "   ldrb   r5, [%[g], #5]\n"            \
    "   add    r8, r8, r11, lsl #20\n"      \
    "   ldrsb  r4, [%[e], #5]\n"            \
    "   smmlar r8, r8, %[m], %[k]\n"        \
    "   ldr    r5, [%[t], r5, lsl #2]\n"    \
    "   ssat   r8, #8, r8, asr #" #N "\n"   \
    "   strb   r6, [%[o], #1]\n"            \
    "   ldrb   r11, [%[g], #6]\n"           \
    "   add    r5, r5, r4, lsl #20\n"       \
    "   ldrsb  r6, [%[e], #6]\n"            \
    "   smmlar r5, r5, %[m], %[k]\n"        \
    "   ldr    r11, [%[t], r11, lsl #2]\n"  \
    "   ssat   r5, #8, r5, asr #" #N "\n"   \
    "   strb   r10, [%[o], #2]\n"           \
    "   ldrb   r4, [%[g], #7]\n"            \
    "   add    r11, r11, r6, lsl #20\n"     \
    "   add    %[g], %[g], #8\n"            \
    "   ldrsb  r10, [%[e], #7]\n"           \
    "   add    %[e], %[e], #8\n"            \
    "   cmp    %[g], %[end]\n"              \
    "   ldr    r4, [%[t], r4, lsl #2]\n"    \
    "   smmlar r11, r11, %[m], %[k]\n"      \
    "   strb   lr, [%[o], #3]\n"            \
    "   ssat   r11, #8, r11, asr #" #N "\n" \
    "   strb   r8, [%[o], #4]\n"            \
    "   add    r4, r4, r10, lsl #20\n"      \
    "   strb   r5, [%[o], #5]\n"            \
    "   smmlar r4, r4, %[m], %[k]\n"        \
    "   strb   r11, [%[o], #6]\n"           \
    "   ssat   r4, #8, r4, asr #" #N "\n"   \
    "   strb   r4, [%[o], #7]\n"            \
    "   add    %[o], %[o], #8\n"
#else
/* Eight elements a pass (two chains): the compare and branch once (0.5 cycle an element on cortex-m4). */
#define ADDT_PASS_FIX(N) ADDT_FIX4(N, "") ADDT_FIX4(N, "   cmp    %[g], %[end]\n")
#endif
#define ADDT_LOOP_FIX(N)                                                                               \
    __asm__ volatile("1:\n" ADDT_PASS_FIX(N) "   bne    1b\n"                                             \
                     : [g] "+&r"(g), [e] "+&r"(e), [o] "+&r"(out)                                        \
                     : [t] "r"(t), [m] "r"(k->m_o), [k] "r"(k->k_o), [end] "r"(end)                       \
                     : "r4", "r5", "r6", "r8", "r10", "r11", "lr", "cc", "memory")
/* Any n_o (a register) and the sign term: SMMLAR with k_o - [S < 0], ASR, SSAT. */
#define ADDT_OUT_ANY(T)                                                                                \
    "   add    r10, %[k], " T ", asr #31\n"                                                           \
    "   smmlar " T ", " T ", %[m], r10\n"                                                             \
    "   asr    " T ", " T ", %[n]\n"                                                                  \
    "   ssat   " T ", #8, " T "\n"
#endif

/* Elements: below about 400 the table's build (about 2.2 k est. cycles on cortex-m4) costs more than the
 * 5-6 cycles an element add_tab saves against add_dsp4 (14.2 -> 8 on cortex-m4, 9.5 without SSAT's shift) */
#define ADD_TAB_MIN 512

/* add_tab's n_o as SSAT immediates: resnet8's adds (MLPerf Tiny) have 18 and 19. */
static __attribute__((noinline)) void add_tab(const add_fold_k *k, const int8_t *g, const int8_t *e, int8_t *out,
                                              uint32_t n) {
    int32_t t[256];
    add_tab_build(k, t);
    uint32_t i = 0;
#if defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
    const int fix = k->relu && (k->n_o == 18 || k->n_o == 19);
    if (n >= (fix ? 8u : 4u)) {
        i = n & (fix ? ~7u : ~3u);
        const int8_t *end = g + i;
        if (fix && k->n_o == 18) {
            ADDT_LOOP_FIX(18);
        } else if (fix) {
            ADDT_LOOP_FIX(19);
        } else {
            __asm__ volatile("1:\n" ADDT_GEN_LOADS "   add    r4, r4, r10, lsl #20\n"
                             "   add    r5, r5, r11, lsl #20\n"
                             "   ldrsb  r10, [%[e], #-2]\n"
                             "   ldrsb  r11, [%[e], #-1]\n"
                             "   cmp    %[g], %[end]\n"
                             "   add    r6, r6, r10, lsl #20\n"
                             "   add    r8, r8, r11, lsl #20\n" ADDT_OUT_ANY("r4") ADDT_OUT_ANY("r5")
                                 ADDT_OUT_ANY("r6") ADDT_OUT_ANY("r8")
                             "   strb   r4, [%[o]], #4\n"
                             "   strb   r5, [%[o], #-3]\n"
                             "   strb   r6, [%[o], #-2]\n"
                             "   strb   r8, [%[o], #-1]\n"
                             "   bne    1b\n"
                             : [g] "+&r"(g), [e] "+&r"(e), [o] "+&r"(out)
                             : [t] "r"(t), [m] "r"(k->m_o), [k] "r"(k->k_o), [end] "r"(end), [n] "r"(k->n_o)
                             : "r4", "r5", "r6", "r8", "r10", "r11", "cc", "memory");
        }
        g -= i, e -= i, out -= i; /* the asm advanced them past the i elements */
    }
#endif
    for (; i < n; i++) out[i] = add_tab_one(k, t, g[i], e[i]);
}
#endif

#endif

#if defined(MF_USE_SCALAR_FAST)
/* Scalar cores (cortex-m3), equal element counts: each input's scaled value depends on its byte alone, so
 * the op's scratch holds both inputs' 256 values (int32, by the byte read as unsigned), computed once
 * per run as run_portable computes them; per element two table loads, an add and the output stage
 * (mf_sc_requant_fast where it applies). */
#define ADD_SC_SCRATCH mf_scratch_add_s8_tables() /* 2048: mcuforge/kinds/scratch.py */

static void add_scalar(const add_params *p, const int8_t *a, const int8_t *b, int8_t *out, uint32_t n,
                       int32_t *tables) {
    int32_t *ta = tables, *tb = tables + 256;
    for (int32_t v = -128; v < 128; v++) {
        ta[v & 0xFF] = scale_input(v, p->a_off, p->ls, p->a_mult, p->a_shift);
        tb[v & 0xFF] = scale_input(v, p->b_off, p->ls, p->b_mult, p->b_shift);
    }
    const uint8_t *au = (const uint8_t *)a, *bu = (const uint8_t *)b, *end = au + n;
    const int32_t mult = p->out_mult, shift = p->out_shift, lo = p->lo, hi = p->hi;
    if (mult != INT32_MIN && shift <= -2 && shift >= -23) {
        const int32_t k_high = (1 + 2 * p->out_off) * (1 << (-shift - 2)), right_m1 = -shift - 1;
        for (; au != end; out++) {
            const int32_t v = mf_sc_requant_fast(mf_add_wrap(ta[*au++], tb[*bu++]), mult, k_high, right_m1);
            *out = mf_clamp_s8(v, lo, hi);
        }
        return;
    }
    for (; au != end; out++) {
        const int32_t v = mf_requantize_inline(mf_add_wrap(ta[*au++], tb[*bu++]), mult, shift);
        *out = mf_clamp_s8(mf_add_wrap(v, p->out_off), lo, hi);
    }
}
#endif

static mf_status run(const mf_call *c) {
#if defined(MF_USE_SCALAR_FAST)
    mf_tensor sa, sb, so;
    if (c->scratch_bytes >= ADD_SC_SCRATCH && mf_call_binary_s8(c, &sa, &sb, &so) && sa.numel == so.numel &&
        sb.numel == so.numel) {
        add_params p;
        add_params_read(c, &p);
        add_scalar(&p, (const int8_t *)sa.data, (const int8_t *)sb.data, (int8_t *)so.data, so.numel,
                   (int32_t *)(void *)c->scratch);
        return MF_OK;
    }
#endif
#if defined(MF_USE_MVE) || defined(MF_ARM_LOOPS)
    mf_tensor a, b, o;
    if (mf_call_binary_s8(c, &a, &b, &o) && a.numel == o.numel && b.numel == o.numel) {
        add_params p;
        add_params_read(c, &p);
        if (add_fast_ok(&p)) {
#if defined(MF_USE_MVE)
#if defined(__OPTIMIZE__)
            add_fold_k k;
            int swap;
            if (add_fold_setup(&p, &k, &swap, 0)) {
                const int8_t *g = (const int8_t *)(swap ? b.data : a.data), *e = (const int8_t *)(swap ? a.data : b.data);
                add_mve4(&k, p.lo, p.hi, g, e, (int8_t *)o.data, o.numel, p.out_off);
                return MF_OK;
            }
#endif
            if (add_asm_ok(&p)) {
                add_asm(&p, (const int8_t *)a.data, (const int8_t *)b.data, (int8_t *)o.data, o.numel);
                return MF_OK;
            }
#elif defined(MF_USE_DSP)
            add_fold_k k;
            int swap;
            if (add_fold_setup(&p, &k, &swap, 1)) {
                const int8_t *g = (const int8_t *)(swap ? b.data : a.data), *e = (const int8_t *)(swap ? a.data : b.data);
                if (o.numel >= ADD_TAB_MIN) {
                    add_tab(&k, g, e, (int8_t *)o.data, o.numel);
                } else {
                    add_dsp4(&k, g, e, (int8_t *)o.data, o.numel);
                }
                return MF_OK;
            }
            if (add_dsp_ok(&p)) {
                add_dsp(&p, (const int8_t *)a.data, (const int8_t *)b.data, (int8_t *)o.data, o.numel);
                return MF_OK;
            }
#endif
            add_same_shape(&p, (const int8_t *)a.data, (const int8_t *)b.data, (int8_t *)o.data, o.numel);
            return MF_OK;
        }
    }
#endif
    return run_portable(c);
}

const mf_kernel mf_kernel_add_s8 = {MF_KIND_HEAD_add_s8, check, run};
