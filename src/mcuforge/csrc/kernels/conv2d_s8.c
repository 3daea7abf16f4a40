/*
 * conv2d_s8: int8 2-D convolution, bit-exact with CMSIS-NN arm_convolve_s8 (and
 * mcuforge.kernels.conv2d_s8). NHWC input, OHWI weights, per-channel requantization.
 * Taps outside the input are skipped (the same as padding with the input zero point).
 * Grouped convolution as arm_convolve_s8 takes it: the input has groups x (weight channels)
 * channels, and filter oc reads the input channels of group oc / (filters per group).
 *
 * run() below is the portable statement of the math. On cores with the DSP extension or MVE,
 * run_fast() computes the same int32 sums as a matrix multiply, CMSIS-NN's way: each output pixel's
 * input patch is copied (im2col) into a column of the op's scratch buffer -- taps outside the input
 * hold the input zero point, whose (x + input offset) is 0, so the sums equal the skipped taps' --
 * and a block of columns is multiplied by every filter of its group:
 *   DSP: columns widened to int16 with the offset added (lanes of each group of 4 in the order
 *        0, 2, 1, 3 to match SXTB16 on the weights), 2 filters x 2 pixels per SMLAD loop; the output
 *        stage is SMMULR-based (mf_dsp_requantize_small) when no accumulator can reach 2^30. With that
 *        stage, per-channel parameters with a bias and a patch of a multiple of 8 taps, the tap loop is
 *        asm (DSP_TILE_ASM: 14 registers, loads in runs, 2 or 4 groups of taps per iteration) and, for
 *        the full int8 range, so is the output stage (dsp_tile_out_asm): shaped by the Cortex-M4 cycle
 *        model (mcuforge.cycles), where the compiler's code reloaded values from the stack;
 *        with the full clamp and every shift in [-22, -1], the 1x1 layers of 32..256 channels and the 3x3
 *        layers of 16, 32, 64 channels take three filters x two pixels (mf_pw3_rows<depth>; a last odd
 *        pixel three filters x one, mf_pw3s_rows); for the
 *        filters left and the other depths the filter pairs' loop, output stage included, is one asm block
 *        (DSP_TILE_ROWS_ASM: 13 registers, its state in a stack frame of its own), at depth 64 and 40 an
 *        asm function (mf_pw_rows64/40: 14 registers, one run of six loads a group; not on cortex-m7,
 *        whose dual issue prefers DSP_TILE_GROUP's interleaving); a patch of at most 64 taps not a
 *        multiple of 8 (few input channels: RGB 3x3 first layers) with that output stage runs
 *        the same tiles on patches and filters reordered into whole groups of 4 and padded with zero weights
 *        (few_run; the filters copied once into a larger scratch, conv2d_s8_dsp, that the planner gives
 *        where the arena allows; at 25..28 taps and an even filter count, mf_few3_rows28's 2 x 3 tiles, or
 *        mf_few3t_rows28's with the output stage from a per-op table and the filters widened to int16 once, up
 *        to 32 filters); a 1x1 without padding
 *        at 8, 16 or 32 channels with an even filter count: the whole op in one asm function (pwimg_run,
 *        mf_pwimg<D>: 2 x 2 tiles, doubled columns, a per-op table of each channel's constants and SMMLAR;
 *        a filter count a multiple of 4: mf_pwq<D>'s 4 x 2 tiles, the filters widened into that table; on
 *        cortex-m4 whole quads of pixels as 2 x 4 tiles on the same table, mf_pwq<D>x4); on cortex-m4/m33 a
 *        1x1 without padding at 64, 128 or 256 channels with an even filter count, that output stage and
 *        a third column's scratch (conv2d_s8_pw23, where the arena allows): two filters x three pixels
 *        (pw23_run, mf_pw23_rows<depth>), on the filters widened to int16 once per run where conv2d_s8_dsp's
 *        plan gives the room (mf_pw23w_rows<depth>); the same tiles on 3x3 layers of 16, 32, 64 channels
 *        (pw23_run3x3, any even filter count, with three int8 patches more in either plan);
 *   MVE: four int8 columns interleaved by 16-byte chunks (one pointer with immediate offsets reads
 *        them), and for every filter one asm block (MVE_ROWS_ASM): a tail-predicated WLSTP/LETP
 *        loop of VMLADAVA over 16 lanes, then the four pixels requantized as one vector (VQRDMULH +
 *        rounding shift, shorter when every shift is negative), clamped and scatter-stored. Each
 *        filter's bias (the input offset's term offset * sum(w) folded in once per op), multiplier
 *        and shift come from a table on the stack (mve_fill_table, 64 filters at a time), so the
 *        loop keeps every operand in a register and sums no weights. The patches: a 1x1 without
 *        stride or padding copies four consecutive pixels in one loop; windows inside the input
 *        with rows of whole chunks copy each row by one loop, shorter rows (few-channel first
 *        layers) are staged by predicated row copies; the other windows go through im2col_s8 (zero
 *        points outside). An -O0 build, which leaves the asm too few registers, and a multiplier of
 *        INT32_MIN take the portable path. conv2d_s4 runs the same path on its weights unpacked a
 *        chunk of filters at a time (mf_conv2d_mve, mf_conv_mve.h).
 * The DSP path reads a 1x1 convolution without padding in place (widening it). A patch row whose
 * taps are adjacent (dilation 1, one group) and inside the input is copied as one run.
 * The scratch buffer is mcuforge.ir.kernel_scratch_bytes (set by the lowering for the program's target:
 * 5 patches rounded up to 16 bytes on DSP/MVE, on DSP plus the few-channel path's filters or a 1x1's sixth
 * patch and widened filters where the arena allows, 12 x the patch on the scalar path); a program without
 * scratch (0) runs the portable path, one with a nonzero scratch below its target's plan is refused at
 * load (MF_ERR_SHAPE, planned_scratch_bytes), and a path runs only with the scratch it needs.
 */
#include "mf_scalar.h"
#include "mf_conv_mve.h"

/* attributes */
enum { A_IN_OFF, A_OUT_OFF, A_STRIDE, A_PAD, A_DIL, A_ACT_MIN, A_ACT_MAX };

/* The least scratch mcuforge.ir.kernel_scratch_bytes plans for the program's target, by the same formulas
 * (mcuforge/kinds/scratch.py, kind_table.h): 5 patches rounded up to 16 bytes (DSP, MVE; on DSP the
 * few-channel path's larger plan is optional: mcuforge.kinds.scratch.OPTIONAL_SCRATCH), 12 bytes a tap (cortex-m3's
 * scalar path), none (cortex-m0plus: portable). */
static uint32_t planned_scratch_bytes(const mf_program *p, uint32_t depth) {
    if (p->isa_id == MF_ISA_DSP || p->isa_id == MF_ISA_MVE) return mf_scratch_conv2d_s8_im2col(depth);
    return p->target_id == MF_TARGET_CORTEX_M3 ? mf_scratch_conv2d_s8_scalar(depth) : 0u;
}

static mf_status check(const mf_call *c) {
    const mf_status s = mf_check_conv2d(c, MF_INT8);
    if (s != MF_OK) return s;
    /* Scratch as planned (mcuforge.ir.kernel_scratch_bytes) or none (the portable path): anything in
     * between is a program whose plan and kernel disagree, refused on every build alike. */
    mf_tensor w;
    mf_call_input(c, 1, &w);
    const uint32_t depth = w.shape[1] * w.shape[2] * w.shape[3];
    return c->scratch_bytes != 0 && c->scratch_bytes < planned_scratch_bytes(c->prog, depth) ? MF_ERR_SHAPE : MF_OK;
}

#if defined(MF_USE_DSP) || defined(MF_USE_MVE) || defined(MF_USE_SCALAR_FAST)
/* Every index of the geometry fits an int32 (limits far beyond any Cortex-M memory: the portable path
 * takes whatever is left); the optimized paths' arithmetic relies on it. */
static int geometry_fits(const mf_call *c, const mf_tensor *x, const mf_tensor *w, const mf_tensor *o) {
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    const uint32_t lim = 1u << 14;
    for (int a = 0; a < 2; a++) {
        if ((uint32_t)st[a] >= lim || (uint32_t)pd[a] >= lim || (uint32_t)dl[a] >= lim) return 0;
        if (x->shape[1 + a] >= lim || o->shape[1 + a] >= lim || w->shape[1 + a] >= lim) return 0;
    }
    return 1;
}

/* The op's scratch holds `bytes` (the path's need for the patch size) and geometry_fits. */
static int path_fits(const mf_call *c, uint32_t (*bytes)(uint32_t depth)) {
    mf_tensor x, w, o;
    mf_call_input(c, 0, &x);
    mf_call_input(c, 1, &w);
    mf_call_output(c, 0, &o);
    return c->scratch_bytes >= bytes(w.shape[1] * w.shape[2] * w.shape[3]) && geometry_fits(c, &x, &w, &o);
}
#endif

#if defined(MF_USE_DSP) || defined(MF_USE_MVE)
#define MF_CONV_FAST 1

/* The fast path's scratch: 4 int8 patches interleaved by 16-byte chunks and a staging patch (MVE); 2
 * int16 patches interleaved and an int8 one (DSP, each patch rounded up to 4 bytes: less than the plan's
 * 16). The size asked is the planner's formula (mcuforge/kinds/scratch.py, kind_scratch.h). */
#if !defined(MF_USE_MVE)
/* Patch size rounded up to a multiple of 4: the DSP columns' stride, which keeps them word-aligned. */
static uint32_t depth4(uint32_t depth) { return (depth + 3u) & ~3u; }
#endif
static uint32_t fast_scratch_bytes(uint32_t depth) { return mf_scratch_conv2d_s8_im2col(depth); }

#if defined(MF_USE_MVE)
/* Patch bytes [k, k + n) (n > 0) of column i of a block of four, the columns interleaved by 16-byte
 * chunks -- chunk j of column i at col + 64 j + 16 i, so that one pointer with immediate offsets reads
 * the four -- from src: a predicated copy up to the next chunk, then one tail-predicated loop
 * (WLSTP/LETP) of a chunk per iteration. */
static inline void patch_copy(int8_t *col, uint32_t i, uint32_t k, const int8_t *src, uint32_t n) {
    int8_t *dst = col + ((k >> 4) << 6) + (i << 4) + (k & 15u);
    if (k & 15u) {
        const uint32_t room = 16u - (k & 15u), m = n < room ? n : room;
        const mve_pred16_t p = vctp8q(m);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
        if (m == n) return;
        n -= m, src += m, dst += m + 48u;
    }
    __asm__ volatile("   wlstp.8  lr, %[n], 1f\n"
                     "2: vldrb.8  q0, [%[s]], #16\n"
                     "   vstrb.8  q0, [%[d]], #64\n"
                     "   letp     lr, 2b\n"
                     "1:\n"
                     : [s] "+&r"(src), [d] "+&r"(dst)
                     : [n] "r"(n)
                     : "q0", "lr", "memory");
}

/* Patch bytes [k, k + n) of column i = v (the same layout). */
static inline void patch_fill(int8_t *col, uint32_t i, uint32_t k, int8_t v, uint32_t n) {
    const int8x16_t vv = vdupq_n_s8(v);
    int8_t *dst = col + ((k >> 4) << 6) + (i << 4) + (k & 15u);
    if (k & 15u) {
        const uint32_t room = 16u - (k & 15u), m = n < room ? n : room;
        vstrbq_p_s8(dst, vv, vctp8q(m));
        if (m == n) return;
        n -= m, dst += m + 48u;
    }
    __asm__ volatile("   wlstp.8  lr, %[n], 1f\n"
                     "2: vstrb.8  %q[v], [%[d]], #64\n"
                     "   letp     lr, 2b\n"
                     "1:\n"
                     : [d] "+&r"(dst)
                     : [n] "r"(n), [v] "w"(vv)
                     : "lr", "memory");
}
#else
/* Patch bytes [k, k + n) of the contiguous patch col (i unused) from src. */
static inline void patch_copy(int8_t *col, uint32_t i, uint32_t k, const int8_t *src, uint32_t n) {
    int8_t *dst = col + k;
    (void)i;
    uint32_t j = 0;
    for (; j + 4 <= n; j += 4) mf_st32(dst + j, mf_ld32(src + j));
    for (; j < n; j++) dst[j] = src[j];
}

/* Patch bytes [k, k + n) = v. */
static inline void patch_fill(int8_t *col, uint32_t i, uint32_t k, int8_t v, uint32_t n) {
    int8_t *dst = col + k;
    (void)i;
    const int32_t word = mf_wrap32((uint32_t)(uint8_t)v * 0x01010101u);
    uint32_t j = 0;
    for (; j + 4 <= n; j += 4) mf_st32(dst + j, word);
    for (; j < n; j++) dst[j] = v;
}
#endif

typedef struct {
    const int8_t *x;           /* input image n, channel of the group's first input */
    int32_t h, w;              /* input height, width */
    uint32_t ch, wc, kh, kw;   /* input channels, filter channels, kernel */
    int32_t st[2], pd[2], dl[2];
    int8_t zero_point;         /* -input offset: the value of a tap outside the input */
    int contiguous_rows;       /* dilation 1 along x and one group: a kernel row is one run of bytes */
    uint32_t ps;               /* output bytes from one pixel to the next: the filters, or a pitched output's pitch */
} conv_geom;

/* The patch of output pixel (oy, ox) as int8, in the weights' (ky, kx, c) order, into column i of
 * col (patch_copy / patch_fill: the DSP path's contiguous patch, the MVE path's interleaved block). */
static void im2col_s8(const conv_geom *g, int32_t oy, int32_t ox, int8_t *col, uint32_t i) {
    const int32_t y0 = oy * g->st[0] - g->pd[0], x0 = ox * g->st[1] - g->pd[1];
    const uint32_t row_bytes = g->kw * g->wc;
    const int32_t x_last = x0 + ((int32_t)g->kw - 1) * g->dl[1];
    uint32_t k = 0;
    for (uint32_t ky = 0; ky < g->kh; ky++, k += row_bytes) {
        const int32_t iy = y0 + (int32_t)ky * g->dl[0];
        if (iy < 0 || iy >= g->h) {
            patch_fill(col, i, k, g->zero_point, row_bytes);
            continue;
        }
        const int8_t *row = g->x + (size_t)iy * (size_t)g->w * g->ch;
        if (g->contiguous_rows && x0 >= 0 && x_last < g->w) {
            patch_copy(col, i, k, row + (size_t)x0 * g->ch, row_bytes);
            continue;
        }
        if (g->contiguous_rows) { /* the taps inside the input are one run; zero points around it */
            const int32_t lo = x0 < 0 ? -x0 : 0, hi = x_last < g->w ? (int32_t)g->kw : g->w - x0;
            if (hi <= lo) {
                patch_fill(col, i, k, g->zero_point, row_bytes);
                continue;
            }
            const uint32_t before = (uint32_t)lo * g->wc, run = (uint32_t)(hi - lo) * g->wc;
            if (before > 0) patch_fill(col, i, k, g->zero_point, before);
            patch_copy(col, i, k + before, row + (size_t)(x0 + lo) * g->ch, run);
            if (before + run < row_bytes) patch_fill(col, i, k + before + run, g->zero_point, row_bytes - before - run);
            continue;
        }
        for (uint32_t kx = 0; kx < g->kw; kx++) {
            const int32_t ix = x0 + (int32_t)kx * g->dl[1];
            if (ix < 0 || ix >= g->w) {
                patch_fill(col, i, k + kx * g->wc, g->zero_point, g->wc);
            } else {
                patch_copy(col, i, k + kx * g->wc, row + (size_t)ix * g->ch, g->wc);
            }
        }
    }
}

#if defined(MF_USE_DSP)
#define NCOLS 2u

/* Column c (0 or 1) of a pair of widened patches: src[i] + offset as int16. The two columns are
 * interleaved by groups of 4 so that one pointer reads both: group g holds column 0's lanes 0, 2, 1, 3
 * (the order of SXTB16 on the weights), then column 1's; the last depth % 4 values of column c sit at
 * group depth / 4, offset 4c. */
static void widen_interleaved(const int8_t *src, int16_t *cols, uint32_t c, uint32_t depth, int32_t off16,
                              int32_t off) {
    const uint32_t d4 = depth & ~3u;
    int16_t *dst = cols + 4u * c;
    uint32_t i = 0;
    /* two groups an iteration, both words loaded first: the loads pipeline and the loop's own
     * instructions are paid once for 8 taps (Cortex-M4 cycle model) */
    for (; i + 8 <= d4; i += 8, dst += 16) {
        const int32_t v = mf_ld32(src + i), u = mf_ld32(src + i + 4);
        mf_st32(dst, mf_sxtab16(off16, v));
        mf_st32(dst + 2, mf_sxtab16_ror8(off16, v));
        mf_st32(dst + 8, mf_sxtab16(off16, u));
        mf_st32(dst + 10, mf_sxtab16_ror8(off16, u));
    }
    for (; i < d4; i += 4, dst += 8) {
        const int32_t v = mf_ld32(src + i);
        mf_st32(dst, mf_sxtab16(off16, v));
        mf_st32(dst + 2, mf_sxtab16_ror8(off16, v));
    }
    for (i = d4; i < depth; i++) dst[i - d4] = (int16_t)(src[i] + off);
}

/* Column c of a pair of widened patches straight from the input rows (no im2col copy) for a window
 * inside the input whose kernel rows are whole groups of 4 (row_bytes % 4 == 0, contiguous rows): each
 * row's groups land where widen_interleaved puts them. The first convolution of a few-channel model
 * (DS-CNN's 10x4 on one channel) spent about as long copying its patches as widening them. (Windows
 * crossing the padding stay with im2col_s8: zero rows or staged rows here cost more than they save on
 * the Cortex-M4 model.) */
static void widen_rows(const conv_geom *g, int32_t y0, int32_t x0, int16_t *cols, uint32_t c, int32_t off16) {
    const uint32_t row_bytes = g->kw * g->wc;
    const size_t step = (size_t)g->dl[0] * (size_t)g->w * g->ch;
    const int8_t *src = g->x + ((size_t)y0 * (size_t)g->w + (size_t)x0) * g->ch;
    int16_t *dst = cols + 4u * c;
    if ((row_bytes & 15u) == 0) { /* 3x3 on 16, 32, 64 channels: 4 groups an iteration (fewer loop steps) */
        for (uint32_t ky = 0; ky < g->kh; ky++, src += step) {
            const int8_t *s = src, *e = src + row_bytes;
            for (; s != e; s += 16, dst += 32) {
                const int32_t v0 = mf_ld32(s), v1 = mf_ld32(s + 4), v2 = mf_ld32(s + 8), v3 = mf_ld32(s + 12);
                mf_st32(dst, mf_sxtab16(off16, v0));
                mf_st32(dst + 2, mf_sxtab16_ror8(off16, v0));
                mf_st32(dst + 8, mf_sxtab16(off16, v1));
                mf_st32(dst + 10, mf_sxtab16_ror8(off16, v1));
                mf_st32(dst + 16, mf_sxtab16(off16, v2));
                mf_st32(dst + 18, mf_sxtab16_ror8(off16, v2));
                mf_st32(dst + 24, mf_sxtab16(off16, v3));
                mf_st32(dst + 26, mf_sxtab16_ror8(off16, v3));
            }
        }
        return;
    }
    for (uint32_t ky = 0; ky < g->kh; ky++, src += step) {
        for (uint32_t j = 0; j < row_bytes; j += 4, dst += 8) {
            const int32_t v = mf_ld32(src + j);
            mf_st32(dst, mf_sxtab16(off16, v));
            mf_st32(dst + 2, mf_sxtab16_ror8(off16, v));
        }
    }
}

/* 1 when every output channel's shift is in [-22, -1] and the output offset within +-255: the tile rows'
 * shorter output stage (DSP_ROWS_OUT). Read once per run. */
static int dsp_shifts_negative(const mf_channel_requant *q, uint32_t channels) {
    const uint32_t n = q->per_channel ? channels : 1u;
    for (uint32_t i = 0; i < n; i++) {
        if (q->shift[i] > -1 || q->shift[i] < -22) return 0;
    }
    return q->out_off >= -255 && q->out_off <= 255;
}

/* One channel's output stage (its parameters read once for the pixels that share them): the short
 * requantization when it serves the op (small: mf_dsp_small_ok), else mf_channel_requant_s8's; the
 * same bits either way. */
static inline int8_t channel_out_s8(const mf_channel_requant *q, const mf_dsp_channel *c, int small, int32_t acc) {
    if (small) return mf_dsp_out_s8(q, c, acc);
    const int32_t v = mf_requantize_inline(mf_add_wrap(acc, c->bias), c->mult, -c->n);
    return mf_clamp_s8(mf_add_wrap(v, q->out_off), q->lo, q->hi);
}

#if defined(__OPTIMIZE__)
/* One group of 4 taps of the 2 filters x 2 columns tile (DSP_TILE_ASM): the filters' words, then
 * column 0's two words, as one run of loads (the Cortex-M4 pipelines a load after a load: 5 cycles
 * for 4), each weight word unpacked once for both columns, column 1's two words as a second run. */
#define DSP_TILE_GROUP                                                                                 \
    "   ldr     %[va], [%[w]], #4\n"                                                                  \
    "   ldr     %[vb], [%[w], %[d]]\n"                                                               \
    "   ldr     %[xa], [%[x]], #4\n"                                                                  \
    "   ldr     %[xb], [%[x]], #4\n"                                                                  \
    "   sxtb16  %[t], %[va]\n"                                                                        \
    "   sxtb16  %[va], %[va], ror #8\n"                                                               \
    "   smlad   %[a00], %[t], %[xa], %[a00]\n"                                                        \
    "   smlad   %[a00], %[va], %[xb], %[a00]\n"                                                       \
    "   sxtb16  %[u], %[vb]\n"                                                                        \
    "   sxtb16  %[vb], %[vb], ror #8\n"                                                               \
    "   smlad   %[a10], %[u], %[xa], %[a10]\n"                                                        \
    "   smlad   %[a10], %[vb], %[xb], %[a10]\n"                                                       \
    "   ldr     %[xa], [%[x]], #4\n"                                                                  \
    "   ldr     %[xb], [%[x]], #4\n"                                                                  \
    "   smlad   %[a01], %[t], %[xa], %[a01]\n"                                                        \
    "   smlad   %[a01], %[va], %[xb], %[a01]\n"                                                       \
    "   smlad   %[a11], %[u], %[xa], %[a11]\n"                                                        \
    "   smlad   %[a11], %[vb], %[xb], %[a11]\n"

/* The 2 x 2 tile's loop over the taps' groups of 4 in asm, `GROUPS` groups per iteration: GCC's own
 * code for it spills the second filter's offset and reloads it before each load through it, and reads
 * the columns by LDRD (3 cycles, never pipelined). Fourteen registers: every core register but sp and
 * pc. x runs to `end`; w is the first filter's row (the second's at w + d + 4). */
#define DSP_TILE_ASM(GROUPS)                                                                           \
    __asm__ volatile("1:\n" GROUPS                                                                     \
                     "   cmp     %[x], %[end]\n"                                                       \
                     "   bne     1b\n"                                                                 \
                     : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [w] "+r"(wp), \
                       [x] "+r"(xp), [va] "=&r"(va), [vb] "=&r"(vb), [t] "=&r"(t), [u] "=&r"(u),           \
                       [xa] "=&r"(xa), [xb] "=&r"(xb)                                                    \
                     : [d] "r"(dstep), [end] "r"(xend)                                                  \
                     : "cc", "memory")

/* The four sums of the 2 x 2 tile over the first d4 taps (d4 a multiple of 8, > 0): filters w and
 * w + depth, the interleaved columns cols. */
static inline __attribute__((always_inline)) void dsp_tile_2x2(const int16_t *cols, const int8_t *w, uint32_t depth,
                                                              uint32_t d4, int32_t acc[4]) {
    int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0, va, vb, t, u, xa, xb;
    const int8_t *wp = w;
    const int16_t *xp = cols, *xend = cols + 2u * d4;
    const int32_t dstep = (int32_t)depth - 4;
    if ((d4 & 15u) == 0) {
        DSP_TILE_ASM(DSP_TILE_GROUP DSP_TILE_GROUP DSP_TILE_GROUP DSP_TILE_GROUP);
    } else {
        DSP_TILE_ASM(DSP_TILE_GROUP DSP_TILE_GROUP);
    }
    (void)va, (void)vb, (void)t, (void)u, (void)xa, (void)xb;
    acc[0] = a00, acc[1] = a01, acc[2] = a10, acc[3] = a11;
}
#define DSP_TILE 1

/* One output of the short requantization (mf_dsp_out_s8's bits), the channel's rounding in two constants:
 * half = 2^(n - 1) (0 when n = 0) and neg = -1 when n > 0, else 0. */
static inline int32_t dsp_tile_out(int32_t acc, int32_t mult, int32_t n, int32_t neg, int32_t half) {
    int32_t v;
    __asm__("smmulr %0, %1, %2" : "=r"(v) : "r"(mf_wrap32((uint32_t)acc << 1)), "r"(mult));
    return (v + ((v >> 31) & neg) + half) >> n;
}

/* The clamp to [lo, hi]; full (lo = -128, hi = 127, the usual int8 range): one SSAT. */
static inline __attribute__((always_inline)) int8_t dsp_tile_clamp(int32_t v, int32_t lo, int32_t hi, int full) {
    if (full) return (int8_t)__ssat(v, 8);
    v = v < lo ? lo : v;
    return (int8_t)(v > hi ? hi : v);
}

/* One filter's two outputs in dsp_tile_out_asm: bias, 2 acc, SMMULR by the multiplier, then the rounding
 * divide by 2^n (n = -shift in [0, 31]): + (v < 0 ? -1 : 0) when n > 0, + 2^(n - 1) (0 when n = 0),
 * arithmetic shift; + output offset, SSAT to int8 (the full range only). */
#define DSP_TILE_OUT_FILTER(A, B)                                                                      \
    "   ldr     %[t], [%[bp]], #4\n"                                                                  \
    "   ldr     %[n], [%[mp]], #4\n"                                                                  \
    "   add     %[" A "], %[" A "], %[t]\n"                                                           \
    "   add     %[" B "], %[" B "], %[t]\n"                                                           \
    "   lsl     %[" A "], %[" A "], #1\n"                                                             \
    "   lsl     %[" B "], %[" B "], #1\n"                                                             \
    "   smmulr  %[" A "], %[" A "], %[n]\n"                                                           \
    "   smmulr  %[" B "], %[" B "], %[n]\n"                                                           \
    "   ldrsb   %[n], [%[sp]], #1\n"                                                                  \
    "   rsb     %[n], %[n], #0\n"                                                                     \
    "   mov     %[h], #1\n"                                                                           \
    "   lsl     %[h], %[h], %[n]\n"                                                                   \
    "   lsr     %[h], %[h], #1\n"                                                                     \
    "   rsb     %[g], %[h], #0\n"                                                                     \
    "   asr     %[g], %[g], #31\n"                                                                    \
    "   and     %[t], %[g], %[" A "], asr #31\n"                                                      \
    "   add     %[" A "], %[" A "], %[t]\n"                                                           \
    "   add     %[" A "], %[" A "], %[h]\n"                                                           \
    "   asr     %[" A "], %[" A "], %[n]\n"                                                           \
    "   add     %[" A "], %[" A "], %[off]\n"                                                         \
    "   ssat    %[" A "], #8, %[" A "]\n"                                                             \
    "   and     %[t], %[g], %[" B "], asr #31\n"                                                      \
    "   add     %[" B "], %[" B "], %[t]\n"                                                           \
    "   add     %[" B "], %[" B "], %[h]\n"                                                           \
    "   asr     %[" B "], %[" B "], %[n]\n"                                                           \
    "   add     %[" B "], %[" B "], %[off]\n"                                                         \
    "   ssat    %[" B "], #8, %[" B "]\n"

/* The 2 x 2 tile's output stage (full clamp) in asm: the compiler's code for it reloads its state from
 * the stack between steps (108 estimated cycles on the Cortex-M4 against about 60 here). a<f><c>: filter
 * f's sum for column c; the parameter and output pointers move on past the tile's two filters. */
static inline __attribute__((always_inline)) void dsp_tile_out_asm(int32_t a00, int32_t a01, int32_t a10, int32_t a11,
                                                                  const int32_t **bias, const int32_t **mult,
                                                                  const mf_shift **shift, int8_t **out0, int8_t **out1,
                                                                  int32_t out_off) {
    const int32_t *bp = *bias, *mp = *mult;
    const mf_shift *sp = *shift;
    int8_t *o0 = *out0, *o1 = *out1;
    int32_t n, h, g, t;
#define DSP_TILE_OUT_STMT(FILTER)                                                                      \
    __asm__ volatile(FILTER("a00", "a01") FILTER("a10", "a11")                                         \
                     "   strb    %[a00], [%[o0]], #1\n"                                                \
                     "   strb    %[a10], [%[o0]], #1\n"                                                \
                     "   strb    %[a01], [%[o1]], #1\n"                                                \
                     "   strb    %[a11], [%[o1]], #1\n"                                                \
                     : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [bp] "+r"(bp), \
                       [mp] "+r"(mp), [sp] "+r"(sp), [o0] "+r"(o0), [o1] "+r"(o1), [n] "=&r"(n), [h] "=&r"(h), \
                       [g] "=&r"(g), [t] "=&r"(t)                                                         \
                     : [off] "r"(out_off)                                                              \
                     : "memory")
    DSP_TILE_OUT_STMT(DSP_TILE_OUT_FILTER);
    (void)n, (void)h, (void)g, (void)t;
    *bias = bp, *mult = mp, *shift = sp, *out0 = o0, *out1 = o1;
}

/* The tile loop of DSP_TILE_ROWS_ASM: the first filter's row w (the second's at w + d + 4), columns from
 * start to end; the accumulators start at the filters' biases (the same wrapped sums as adding
 * the bias after). Its state between tiles sits in a frame the asm copies to the stack: [sp] bias,
 * [sp, #4] mult, [sp, #8] shift, [sp, #12] out0, [sp, #16] out1, [sp, #20] 2 out_off + 1, [sp, #24]
 * pairs left, [sp, #28] end (read from the stack at the loop's end: 13 registers, not 14, so that GCC
 * can allocate them whatever the code around; 14 failed with "impossible constraints" after unrelated
 * changes to run_fast), [sp, #32] start (one load, not two SUBs from the end, before each tile). */
#define DSP_ROWS_TILE(GROUPS, LOOP)                                                                    \
    "2: ldr     %[t], [sp]\n"                                                                          \
    "   ldr     %[x], [sp, #32]\n"                                                                     \
    "   ldr     %[a00], [%[t]], #4\n"                                                                  \
    "   ldr     %[a10], [%[t]], #4\n"                                                                  \
    "   str     %[t], [sp]\n"                                                                          \
    "   mov     %[a01], %[a00]\n"                                                                      \
    "   mov     %[a11], %[a10]\n"                                                                      \
    "1:\n" GROUPS LOOP                                                                                 \
    "   add     %[w], %[w], %[d]\n"                                                                    \
    "   add     %[w], %[w], #4\n"
/* The tile loop's end (its columns' end at [sp, #28]); nothing when GROUPS are the whole depth (64: the
 * usual pointwise layer, 4 cycles a tile on the Cortex-M4 model). */
#define DSP_ROWS_LOOP                                                                                  \
    "   ldr     %[xa], [sp, #28]\n"                                                                    \
    "   cmp     %[x], %[xa]\n"                                                                         \
    "   bne     1b\n"

/* DSP_TILE_OUT_FILTER's output stage when every shift is in [-22, -1] (dsp_shifts_negative), for the two
 * filters at once: the rounding's -1 for a negative v in one instruction (no mask), the output offset folded
 * into the rounding constant 2^(n-1) + out_off 2^n (|v| < 2^30 and n <= 22 keep the sum inside int32) as
 * (2 out_off + 1) << (n - 1), n - 1 = ~shift; then the next tile or the end. */
#define DSP_ROWS_OUT                                                                                   \
    "   ldr     %[t], [sp, #4]\n"                                                                      \
    "   ldr     %[u], [sp, #8]\n"                                                                      \
    "   ldr     %[va], [%[t]], #4\n"                                                                   \
    "   ldr     %[vb], [%[t]], #4\n"                                                                   \
    "   ldrsb   %[xa], [%[u]], #1\n"                                                                   \
    "   ldrsb   %[xb], [%[u]], #1\n"                                                                   \
    "   ldr     %[x], [sp, #20]\n"                                                                     \
    "   str     %[t], [sp, #4]\n"                                                                      \
    "   str     %[u], [sp, #8]\n"                                                                      \
    "   lsl     %[a00], %[a00], #1\n"                                                                  \
    "   lsl     %[a01], %[a01], #1\n"                                                                  \
    "   lsl     %[a10], %[a10], #1\n"                                                                  \
    "   lsl     %[a11], %[a11], #1\n"                                                                  \
    "   smmulr  %[a00], %[a00], %[va]\n"                                                               \
    "   smmulr  %[a01], %[a01], %[va]\n"                                                               \
    "   smmulr  %[a10], %[a10], %[vb]\n"                                                               \
    "   smmulr  %[a11], %[a11], %[vb]\n"                                                               \
    "   mvn     %[t], %[xa]\n"                                                                         \
    "   lsl     %[t], %[x], %[t]\n"                                                                    \
    "   rsb     %[xa], %[xa], #0\n"                                                                    \
    "   mvn     %[u], %[xb]\n"                                                                         \
    "   lsl     %[u], %[x], %[u]\n"                                                                    \
    "   rsb     %[xb], %[xb], #0\n"                                                                    \
    "   add     %[a00], %[a00], %[a00], asr #31\n"                                                     \
    "   add     %[a00], %[a00], %[t]\n"                                                                \
    "   asr     %[a00], %[a00], %[xa]\n"                                                               \
    "   ssat    %[a00], #8, %[a00]\n"                                                                  \
    "   add     %[a01], %[a01], %[a01], asr #31\n"                                                     \
    "   add     %[a01], %[a01], %[t]\n"                                                                \
    "   asr     %[a01], %[a01], %[xa]\n"                                                               \
    "   ssat    %[a01], #8, %[a01]\n"                                                                  \
    "   add     %[a10], %[a10], %[a10], asr #31\n"                                                     \
    "   add     %[a10], %[a10], %[u]\n"                                                                \
    "   asr     %[a10], %[a10], %[xb]\n"                                                               \
    "   ssat    %[a10], #8, %[a10]\n"                                                                  \
    "   add     %[a11], %[a11], %[a11], asr #31\n"                                                     \
    "   add     %[a11], %[a11], %[u]\n"                                                                \
    "   asr     %[a11], %[a11], %[xb]\n"                                                               \
    "   ssat    %[a11], #8, %[a11]\n"                                                                  \
    "   ldr     %[t], [sp, #12]\n"                                                                     \
    "   ldr     %[u], [sp, #16]\n"                                                                     \
    "   ldr     %[x], [sp, #24]\n"                                                                     \
    "   strb    %[a00], [%[t]], #1\n"                                                                  \
    "   strb    %[a10], [%[t]], #1\n"                                                                  \
    "   strb    %[a01], [%[u]], #1\n"                                                                  \
    "   strb    %[a11], [%[u]], #1\n"                                                                  \
    "   str     %[t], [sp, #12]\n"                                                                     \
    "   str     %[u], [sp, #16]\n"                                                                     \
    "   subs    %[x], %[x], #1\n"                                                                      \
    "   str     %[x], [sp, #24]\n"                                                                     \
    "   bne     2b\n"

/* tiled_rows (full clamp, every shift in [-22, -1]) as one asm block: the tile loop, its accumulators
 * initialized with the biases, and the output stage, with no C between tiles (GCC's loop reloaded and
 * stored its state around every tile: about 45 cycles a tile on the Cortex-M4 model). pairs > 0. */
#define DSP_TILE_ROWS_ASM(GROUPS, LOOP)                                                                \
    __asm__ volatile("   sub     sp, sp, #40\n"                                                        \
                     "   ldr     %[a00], [%[t]]\n"                                                     \
                     "   ldr     %[a01], [%[t], #4]\n"                                                 \
                     "   ldr     %[a10], [%[t], #8]\n"                                                 \
                     "   ldr     %[a11], [%[t], #12]\n"                                                \
                     "   ldr     %[va], [%[t], #16]\n"                                                 \
                     "   ldr     %[vb], [%[t], #20]\n"                                                 \
                     "   ldr     %[u], [%[t], #24]\n"                                                  \
                     "   ldr     %[xa], [%[t], #28]\n"                                                 \
                     "   str     %[a00], [sp]\n"                                                       \
                     "   str     %[a01], [sp, #4]\n"                                                   \
                     "   str     %[a10], [sp, #8]\n"                                                   \
                     "   str     %[a11], [sp, #12]\n"                                                  \
                     "   str     %[va], [sp, #16]\n"                                                   \
                     "   str     %[vb], [sp, #20]\n"                                                   \
                     "   str     %[u], [sp, #24]\n"                                                    \
                     "   str     %[xa], [sp, #28]\n"                                                  \
                     "   ldr     %[xa], [%[t], #32]\n"                                                \
                     "   str     %[xa], [sp, #32]\n" DSP_ROWS_TILE(GROUPS, LOOP) DSP_ROWS_OUT          \
                     "   add     sp, sp, #40\n"                                                        \
                     : [a00] "=&r"(a00), [a01] "=&r"(a01), [a10] "=&r"(a10), [a11] "=&r"(a11), [w] "+r"(wp), \
                       [x] "=&r"(xp), [va] "=&r"(va), [vb] "=&r"(vb), [t] "+r"(t), [u] "=&r"(u),          \
                       [xa] "=&r"(xa), [xb] "=&r"(xb)                                                    \
                     : [d] "r"(dstep)                                                                   \
                     : "cc", "memory")

/* A double-precision FPU on an Armv7E-M core: a Cortex-M7 (dual issue), whose timing model pairs a load with
 * the multiplies around it: DSP_TILE_GROUP's interleaved loads suit it better than mf_pw_rows' runs (1.05
 * against 1.12 cycles/MAC for KWS's pointwise layers). A Cortex-M7 built without one takes the Cortex-M4's
 * choice: the same bytes, a few percent slower. */
#if defined(__ARM_ARCH_7EM__) && defined(__ARM_FP) && (__ARM_FP & 8)
#define DSP_PW_RUNS 0
#else
#define DSP_PW_RUNS 1
#endif

#if DSP_PW_RUNS
/* dsp_tile_rows_neg's tile rows at depth 64 (the usual pointwise layer) and 40 (KWS's 10 x 4 first layer) as
 * functions of their own in asm (mf_pw_rows64 / mf_pw_rows40(frame, w), the frame as DSP_TILE_ROWS_ASM's):
 * with every core register theirs, a group of 4 taps loads both filters' words and both columns' four words
 * as one run of six (7 cycles on the Cortex-M4 model, against 5 + 3 for DSP_TILE_GROUP's two runs, whose asm
 * statement has one register fewer), the second filter's word at the immediate offset DEPTH, no loop over
 * the groups; then DSP_ROWS_OUT's output stage.
 * r0 w, r1 x, r2..r5 a00, a01, a10, a11, r6/r7 the filters' words, r8/r9 their even lanes, r10..r12 and lr
 * the columns' words. */
#define DSP_PW_GROUP(DEPTH) \
    "ldr r6, [r0], #4\n\t" \
    "ldr r7, [r0, #" #DEPTH " - 4]\n\t" \
    "ldr r10, [r1], #4\n\t" \
    "ldr r11, [r1], #4\n\t" \
    "ldr r12, [r1], #4\n\t" \
    "ldr lr, [r1], #4\n\t" \
    "sxtb16 r8, r6\n\t" \
    "sxtb16 r6, r6, ror #8\n\t" \
    "sxtb16 r9, r7\n\t" \
    "sxtb16 r7, r7, ror #8\n\t" \
    "smlad r2, r8, r10, r2\n\t" \
    "smlad r2, r6, r11, r2\n\t" \
    "smlad r4, r9, r10, r4\n\t" \
    "smlad r4, r7, r11, r4\n\t" \
    "smlad r3, r8, r12, r3\n\t" \
    "smlad r3, r6, lr, r3\n\t" \
    "smlad r5, r9, r12, r5\n\t" \
    "smlad r5, r7, lr, r5\n\t"
#define DSP_PW_GROUPS4(D) DSP_PW_GROUP(D) DSP_PW_GROUP(D) DSP_PW_GROUP(D) DSP_PW_GROUP(D)
/* The function NAME: GROUPS groups of 4 taps (DEPTH / 4). */
#define DSP_PW_FUNC(NAME, DEPTH, GROUPS) \
__asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t" \
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n" \
        #NAME ":\n\t" \
        "push {r4-r11, lr}\n\t" \
        "sub sp, sp, #36\n\t" \
        "ldm r0, {r2-r10}\n\t" \
        "stm sp, {r2-r10}\n\t" \
        "mov r0, r1\n\t" \
        "2:\n\t" \
        "ldr r8, [sp]\n\t" \
        "ldr r1, [sp, #32]\n\t" \
        "ldr r2, [r8], #4\n\t" \
        "ldr r4, [r8], #4\n\t" \
        "str r8, [sp]\n\t" \
        "mov r3, r2\n\t" \
        "mov r5, r4\n\t" \
        GROUPS \
        "add r0, r0, #" #DEPTH "\n\t" \
        "ldr r8, [sp, #4]\n\t" \
        "ldr r9, [sp, #8]\n\t" \
        "ldr r6, [r8], #4\n\t" \
        "ldr r7, [r8], #4\n\t" \
        "ldrsb r10, [r9], #1\n\t" \
        "ldrsb r11, [r9], #1\n\t" \
        "ldr r1, [sp, #20]\n\t" \
        "str r8, [sp, #4]\n\t" \
        "str r9, [sp, #8]\n\t" \
        "lsl r2, r2, #1\n\t" \
        "lsl r3, r3, #1\n\t" \
        "lsl r4, r4, #1\n\t" \
        "lsl r5, r5, #1\n\t" \
        "smmulr r2, r2, r6\n\t" \
        "smmulr r3, r3, r6\n\t" \
        "smmulr r4, r4, r7\n\t" \
        "smmulr r5, r5, r7\n\t" \
        "mvn r8, r10\n\t" \
        "lsl r8, r1, r8\n\t" \
        "rsb r10, r10, #0\n\t" \
        "mvn r9, r11\n\t" \
        "lsl r9, r1, r9\n\t" \
        "rsb r11, r11, #0\n\t" \
        "add r2, r2, r2, asr #31\n\t" \
        "add r2, r2, r8\n\t" \
        "asr r2, r2, r10\n\t" \
        "ssat r2, #8, r2\n\t" \
        "add r3, r3, r3, asr #31\n\t" \
        "add r3, r3, r8\n\t" \
        "asr r3, r3, r10\n\t" \
        "ssat r3, #8, r3\n\t" \
        "add r4, r4, r4, asr #31\n\t" \
        "add r4, r4, r9\n\t" \
        "asr r4, r4, r11\n\t" \
        "ssat r4, #8, r4\n\t" \
        "add r5, r5, r5, asr #31\n\t" \
        "add r5, r5, r9\n\t" \
        "asr r5, r5, r11\n\t" \
        "ssat r5, #8, r5\n\t" \
        "ldr r8, [sp, #12]\n\t" \
        "ldr r9, [sp, #16]\n\t" \
        "ldr r1, [sp, #24]\n\t" \
        "strb r2, [r8], #1\n\t" \
        "strb r4, [r8], #1\n\t" \
        "strb r3, [r9], #1\n\t" \
        "strb r5, [r9], #1\n\t" \
        "str r8, [sp, #12]\n\t" \
        "str r9, [sp, #16]\n\t" \
        "subs r1, r1, #1\n\t" \
        "str r1, [sp, #24]\n\t" \
        "bne 2b\n\t" \
        "add sp, sp, #36\n\t" \
        "pop {r4-r11, pc}\n\t" \
        ".size " #NAME ", . - " #NAME "\n\t" \
        ".popsection\n")
DSP_PW_FUNC(mf_pw_rows64, 64, DSP_PW_GROUPS4(64) DSP_PW_GROUPS4(64) DSP_PW_GROUPS4(64) DSP_PW_GROUPS4(64));
DSP_PW_FUNC(mf_pw_rows40, 40, DSP_PW_GROUPS4(40) DSP_PW_GROUPS4(40) DSP_PW_GROUP(40) DSP_PW_GROUP(40));
/* the shallow pointwise layers (VWW's 8 -> 16 and 16 -> 32): no loop over the groups, the loads in runs */
DSP_PW_FUNC(mf_pw_rows16, 16, DSP_PW_GROUPS4(16));
DSP_PW_FUNC(mf_pw_rows8, 8, DSP_PW_GROUP(8) DSP_PW_GROUP(8));
/* the few-channel path's RGB 3x3 rows, padded to 28 taps (few_image) */
DSP_PW_FUNC(mf_pw_rows28, 28, DSP_PW_GROUPS4(28) DSP_PW_GROUP(28) DSP_PW_GROUP(28) DSP_PW_GROUP(28));
void mf_pw_rows28(const uint32_t *frame, const int8_t *w);
void mf_pw_rows8(const uint32_t *frame, const int8_t *w);
void mf_pw_rows16(const uint32_t *frame, const int8_t *w);
void mf_pw_rows40(const uint32_t *frame, const int8_t *w);
void mf_pw_rows64(const uint32_t *frame, const int8_t *w);
#endif

/* mf_few3_rows28 on every DSP core: on the Cortex-M7 model too it beats the 2 x 2 tiles (VWW's first layer 1.91
 * -> 1.68 estimated cycles/MAC there, the Cortex-M4's 2.71 -> 2.37) */
#define FEW3_TILES 1
#if FEW3_TILES
/* The few-channel path's 28-tap rows on three output pixels at once (few_image3): mf_few3_rows28(frame, w),
 * a 2 x 3 tile (two filters, three pixels) per filter pair. The 2 x 2 tiles' output stage took about 55 of
 * their 190 estimated cycles (Cortex-M4 model) for 4 outputs; here one pair of channel constants serves 6
 * outputs, and each filter word, once widened, 6 SMLADs, not 4. The three columns interleaved by group of 4
 * taps (24 bytes: column c's lanes 0, 2 at 8 c, lanes 1, 3 at 8 c + 4; few_widen's gs = 12). The frame:
 * mf_pw_rows' (bias, mult, shift, out0, out1, 2 out_off + 1, pairs, -, columns) and out2 at [36].
 * r0 w, r1 the columns, r2..r4 filter A on the pixels 0..2, r5..r7 filter B's, r8/r9 A's even/odd lanes,
 * r10/r11 B's, r12 and lr a column's two words: all 14 registers, no loop over the groups. */
#define FEW3_COLS(G, C, AA, BB) \
    "ldr r12, [r1, #24 * " #G " + 8 * " #C "]\n\t" \
    "ldr lr, [r1, #24 * " #G " + 8 * " #C " + 4]\n\t" \
    "smlad " AA ", r8, r12, " AA "\n\t" \
    "smlad " AA ", r9, lr, " AA "\n\t" \
    "smlad " BB ", r10, r12, " BB "\n\t" \
    "smlad " BB ", r11, lr, " BB "\n\t"
#define FEW3_GROUP(G) \
    "ldr r8, [r0, #4 * " #G "]\n\t" \
    "ldr r10, [r0, #28 + 4 * " #G "]\n\t" \
    "ldr r12, [r1, #24 * " #G "]\n\t" \
    "ldr lr, [r1, #24 * " #G " + 4]\n\t" \
    "sxtb16 r9, r8, ror #8\n\t" \
    "sxtb16 r8, r8\n\t" \
    "sxtb16 r11, r10, ror #8\n\t" \
    "sxtb16 r10, r10\n\t" \
    "smlad r2, r8, r12, r2\n\t" \
    "smlad r2, r9, lr, r2\n\t" \
    "smlad r5, r10, r12, r5\n\t" \
    "smlad r5, r11, lr, r5\n\t" \
    FEW3_COLS(G, 1, "r3", "r6") FEW3_COLS(G, 2, "r4", "r7")
/* DSP_ROWS_OUT's rounding (every shift in [-22, -1], the full clamp) of accumulator X: round constant K,
 * right shift N */
#define FEW3_OUT(X, K, N) \
    "add " X ", " X ", " X ", asr #31\n\t" \
    "add " X ", " X ", " K "\n\t" \
    "asr " X ", " X ", " N "\n\t" \
    "ssat " X ", #8, " X "\n\t"
__asm__(".pushsection .text.mf_few3_rows28,\"ax\",%progbits\n\t"
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type mf_few3_rows28, %function\n\t.thumb_func\n"
        "mf_few3_rows28:\n\t"
        "push {r4-r11, lr}\n\t"
        "sub sp, sp, #40\n\t"
        "ldm r0, {r2-r11}\n\t"
        "stm sp, {r2-r11}\n\t"
        "mov r0, r1\n\t"
        "2:\n\t"
        "ldr r8, [sp]\n\t"
        "ldr r1, [sp, #32]\n\t"
        "ldr r2, [r8], #4\n\t"
        "ldr r5, [r8], #4\n\t"
        "str r8, [sp]\n\t"
        "mov r3, r2\n\t"
        "mov r4, r2\n\t"
        "mov r6, r5\n\t"
        "mov r7, r5\n\t"
        FEW3_GROUP(0) FEW3_GROUP(1) FEW3_GROUP(2) FEW3_GROUP(3) FEW3_GROUP(4) FEW3_GROUP(5) FEW3_GROUP(6)
        "add r0, r0, #56\n\t"
        "ldr r8, [sp, #4]\n\t"
        "ldr r9, [sp, #8]\n\t"
        "ldr r10, [r8], #4\n\t"
        "ldr r11, [r8], #4\n\t"
        "ldrsb r12, [r9], #1\n\t"
        "ldrsb lr, [r9], #1\n\t"
        "ldr r1, [sp, #20]\n\t"
        "str r8, [sp, #4]\n\t"
        "str r9, [sp, #8]\n\t"
        "lsl r2, r2, #1\n\t"
        "lsl r3, r3, #1\n\t"
        "lsl r4, r4, #1\n\t"
        "lsl r5, r5, #1\n\t"
        "lsl r6, r6, #1\n\t"
        "lsl r7, r7, #1\n\t"
        "smmulr r2, r2, r10\n\t"
        "smmulr r3, r3, r10\n\t"
        "smmulr r4, r4, r10\n\t"
        "smmulr r5, r5, r11\n\t"
        "smmulr r6, r6, r11\n\t"
        "smmulr r7, r7, r11\n\t"
        "mvn r8, r12\n\t"
        "lsl r8, r1, r8\n\t"
        "rsb r12, r12, #0\n\t"
        "mvn r9, lr\n\t"
        "lsl r9, r1, r9\n\t"
        "rsb lr, lr, #0\n\t"
        FEW3_OUT("r2", "r8", "r12") FEW3_OUT("r3", "r8", "r12") FEW3_OUT("r4", "r8", "r12")
        FEW3_OUT("r5", "r9", "lr") FEW3_OUT("r6", "r9", "lr") FEW3_OUT("r7", "r9", "lr")
        "ldr r8, [sp, #12]\n\t"
        "ldr r9, [sp, #16]\n\t"
        "ldr r10, [sp, #36]\n\t"
        "ldr r1, [sp, #24]\n\t"
        "strb r2, [r8], #1\n\t"
        "strb r5, [r8], #1\n\t"
        "strb r3, [r9], #1\n\t"
        "strb r6, [r9], #1\n\t"
        "strb r4, [r10], #1\n\t"
        "strb r7, [r10], #1\n\t"
        "str r8, [sp, #12]\n\t"
        "str r9, [sp, #16]\n\t"
        "str r10, [sp, #36]\n\t"
        "subs r1, r1, #1\n\t"
        "str r1, [sp, #24]\n\t"
        "bne 2b\n\t"
        "add sp, sp, #40\n\t"
        "pop {r4-r11, pc}\n\t"
        ".size mf_few3_rows28, . - mf_few3_rows28\n\t"
        ".popsection\n");
void mf_few3_rows28(const uint32_t *frame, const int8_t *w);
/* mf_few3_rows28 with its output stage from a per-op table (mf_few3t_rows28(frame, w), pwimg_run's table: 2 bias,
 * multiplier, rounding constant, n, the last pair's n without bit 8) and SMMLAR (pwimg's 5 instructions an
 * output, 4 here): about 25 estimated cycles a filter pair fewer than mf_few3_rows28's (frame reloads, shift
 * decoding, two constants per filter); and on the filters widened once per op to int16 and doubled (few_widen16:
 * each group of 4 taps as the words of lanes 0, 2 and 1, 3, a filter's 28 taps 56 bytes, the pair's second filter
 * 56 bytes on; the sums 2 acc, as pwimg's doubled columns give), so a group loads 4 filter words and unpacks none:
 * 24 estimated cycles a group on the Cortex-M4 model (two runs of five loads, 6 SMLADs each) against 27 (189 ->
 * 168 a filter pair), and no LSL an output.
 * The Cortex-M4's group 0 starts pixels 1 and 2 from the biases (columns 1 and 2 first), the Cortex-M7's MOVs them
 * beside its first loads. The frame: table, out0, out1, out2, columns, then FEW3X_PIXEL's window (or 0), row
 * and pixel steps and input offset, the count of three-pixel runs and the outputs' step from one to the next. */
/* one filter's three outputs X, Y, Z (its multiplier, rounding constant and n in r8..r10) interleaved through r1,
 * r11 and r12: on the Cortex-M7 model pairs of ALU instructions issue together (6 estimated cycles, not about
 * 10 one output after another); the same 12 on the Cortex-M4 */
#define FEW3T_OUT3(X, Y, Z) \
    "smmlar r1, " X ", r8, r9\n\t" \
    "smmlar r11, " Y ", r8, r9\n\t" \
    "smmlar r12, " Z ", r8, r9\n\t" \
    "add r1, r1, " X ", asr #31\n\t" \
    "add r11, r11, " Y ", asr #31\n\t" \
    "add r12, r12, " Z ", asr #31\n\t" \
    "asr " X ", r1, r10\n\t" \
    "asr " Y ", r11, r10\n\t" \
    "asr " Z ", r12, r10\n\t" \
    "ssat " X ", #8, " X "\n\t" \
    "ssat " Y ", #8, " Y "\n\t" \
    "ssat " Z ", #8, " Z "\n\t"
/* half H (0: lanes 0, 2; 4: lanes 1, 3) of group G: both filters' words and the three columns' as one run
 * (the filters 112 bytes back: the Cortex-M4's first load steps r0 on to the next pair, no ADD) */
#define FEW3W_LOADS(G, H) \
    "ldr r8, [r0, #8 * " #G " + " #H " - 112]\n\t" \
    "ldr r9, [r0, #56 + 8 * " #G " + " #H " - 112]\n\t" \
    "ldr r10, [r1, #24 * " #G " + " #H "]\n\t" \
    "ldr r11, [r1, #24 * " #G " + 8 + " #H "]\n\t" \
    "ldr r12, [r1, #24 * " #G " + 16 + " #H "]\n\t"
#define FEW3W_HALF(G, H) \
    FEW3W_LOADS(G, H) \
    "smlad r2, r8, r10, r2\n\t" \
    "smlad r3, r8, r11, r3\n\t" \
    "smlad r4, r8, r12, r4\n\t" \
    "smlad r5, r9, r10, r5\n\t" \
    "smlad r6, r9, r11, r6\n\t" \
    "smlad r7, r9, r12, r7\n\t"
#define FEW3W_GROUP(G) FEW3W_HALF(G, 0) FEW3W_HALF(G, 4)
#if DSP_PW_RUNS
/* the Cortex-M4's groups leave lr alone: the table's cursor stays in it (no store and reload a pair) */
#define FEW3W_TABLE "ldm lr!, {r8, r9, r10}\n\t"
#define FEW3T_OUT_A FEW3T_OUT3("r2", "r3", "r4") "ldm lr!, {r8, r9, r10}\n\t"
/* the biases as two LDRs, not an LDM: one run of 8 loads with the columns' and filters' (1 estimated cycle a
 * filter pair fewer on the Cortex-M4 model: no LDM before the run) */
#define FEW3W_MACS \
    "ldr r2, [lr], #4\n\t" \
    "ldr r5, [lr], #4\n\t" \
    "ldr r1, [sp, #16]\n\t" \
    "ldr r8, [r0], #112\n\t" \
    "ldr r10, [r1]\n\t" \
    "ldr r11, [r1, #8]\n\t" \
    "ldr r12, [r1, #16]\n\t" \
    "ldr r9, [r0, #56 - 112]\n\t" \
    "smlad r3, r8, r11, r2\n\t" \
    "smlad r4, r8, r12, r2\n\t" \
    "smlad r2, r8, r10, r2\n\t" \
    "smlad r6, r9, r11, r5\n\t" \
    "smlad r7, r9, r12, r5\n\t" \
    "smlad r5, r9, r10, r5\n\t" \
    FEW3W_HALF(0, 4) FEW3W_GROUP(1) FEW3W_GROUP(2) FEW3W_GROUP(3) FEW3W_GROUP(4) FEW3W_GROUP(5) FEW3W_GROUP(6)
#else
/* The Cortex-M7 (dual issue: a load beside each SMLAD, a loaded value not used by the next issue group): the
 * Cortex-M4's runs of loads then 6 SMLADs take about 11 estimated cycles a half group on the Cortex-M7 model;
 * software-pipelined, each half's SMLADs load the next half's five words beside them as their registers free
 * up, 6 cycles a half. The filters' words rotate through r8, r9 and lr (filter A's word in A, B's in B, the next
 * A's loaded into S, the next B's into A once A's last SMLAD has read it); the columns' stay in r10..r12. Half
 * (G1, H1) is the next one's group and lanes (FEW3W_LOADS' G, H). */
#define FEW3M_HALF(A, B, S, G1, H1) \
    "smlad r2, " A ", r10, r2\n\t" \
    "ldr " S ", [r0, #8 * " #G1 " + " #H1 "]\n\t" \
    "smlad r5, " B ", r10, r5\n\t" \
    "ldr r10, [r1, #24 * " #G1 " + " #H1 "]\n\t" \
    "smlad r3, " A ", r11, r3\n\t" \
    "smlad r6, " B ", r11, r6\n\t" \
    "ldr r11, [r1, #24 * " #G1 " + 8 + " #H1 "]\n\t" \
    "smlad r4, " A ", r12, r4\n\t" \
    "ldr " A ", [r0, #56 + 8 * " #G1 " + " #H1 "]\n\t" \
    "smlad r7, " B ", r12, r7\n\t" \
    "ldr r12, [r1, #24 * " #G1 " + 16 + " #H1 "]\n\t"
/* the table's biases into every pixel's sum beside the first half's loads (MOVs pair with them) */
#define FEW3W_MACS \
    "ldm lr!, {r2, r5}\n\t" \
    "str lr, [sp]\n\t" \
    "ldr r1, [sp, #16]\n\t" \
    "ldr r8, [r0]\n\t" \
    "mov r3, r2\n\t" \
    "ldr r9, [r0, #56]\n\t" \
    "mov r4, r2\n\t" \
    "ldr r10, [r1]\n\t" \
    "mov r6, r5\n\t" \
    "ldr r11, [r1, #8]\n\t" \
    "mov r7, r5\n\t" \
    "ldr r12, [r1, #16]\n\t" \
    FEW3M_HALF("r8", "r9", "lr", 0, 4) FEW3M_HALF("lr", "r8", "r9", 1, 0) FEW3M_HALF("r9", "lr", "r8", 1, 4) \
    FEW3M_HALF("r8", "r9", "lr", 2, 0) FEW3M_HALF("lr", "r8", "r9", 2, 4) \
    FEW3M_HALF("r9", "lr", "r8", 3, 0) FEW3M_HALF("r8", "r9", "lr", 3, 4) \
    FEW3M_HALF("lr", "r8", "r9", 4, 0) FEW3M_HALF("r9", "lr", "r8", 4, 4) \
    FEW3M_HALF("r8", "r9", "lr", 5, 0) FEW3M_HALF("lr", "r8", "r9", 5, 4) \
    FEW3M_HALF("r9", "lr", "r8", 6, 0) FEW3M_HALF("r8", "r9", "lr", 6, 4) \
    "smlad r2, lr, r10, r2\n\t" \
    "smlad r5, r8, r10, r5\n\t" \
    "smlad r3, lr, r11, r3\n\t" \
    "smlad r6, r8, r11, r6\n\t" \
    "smlad r4, lr, r12, r4\n\t" \
    "ldr lr, [sp]\n\t" \
    "smlad r7, r8, r12, r7\n\t" \
    "add r0, r0, #112\n\t"
/* The output stage's constants: the table's cursor reloaded and the filters' step beside the last SMLADs
 * (FEW3W_MACS), filter B's multiplier and rounding constant loaded once A's SMMLARs have read A's, its n
 * beside A's SSATs: no load-use stall before an SMMLAR (about 4 estimated cycles a filter pair fewer on the
 * Cortex-M7 model) */
#define FEW3W_TABLE "ldm lr!, {r8, r9, r10}\n\t"
#define FEW3T_OUT_A \
    "smmlar r1, r2, r8, r9\n\t" \
    "smmlar r11, r3, r8, r9\n\t" \
    "smmlar r12, r4, r8, r9\n\t" \
    "ldm lr!, {r8, r9}\n\t" \
    "add r1, r1, r2, asr #31\n\t" \
    "add r11, r11, r3, asr #31\n\t" \
    "add r12, r12, r4, asr #31\n\t" \
    "asr r2, r1, r10\n\t" \
    "asr r3, r11, r10\n\t" \
    "asr r4, r12, r10\n\t" \
    "ldr r10, [lr], #4\n\t" \
    "ssat r2, #8, r2\n\t" \
    "ssat r3, #8, r3\n\t" \
    "ssat r4, #8, r4\n\t"
#endif
/* Column C of three RGB 3x3 windows (few_widen_rgb's layout, gs = 12) widened from the window at r4 (rows r6
 * bytes apart; r4 moves on r7 bytes, a pixel), the input offset in both halves of r3, the columns at r5: the
 * first two rows' words, then the third's and the rows' ninth bytes, each a run of loads (the Cortex-M4 model
 * pipelines them), the SXTAB16s and the stores alternating (the Cortex-M7 model pairs them). The ninth bytes:
 * rows 0 and 2 (zero-extended) as bytes 0 and 2 of one word, so one SXTAB16 gives lanes 0, 2; row 1's lane 1
 * as a halfword (lane 3 keeps few_run's zero). About 43 estimated cycles a window on the Cortex-M4 model, 24 on
 * the Cortex-M7's. */
#define FEW3X_PIXEL(C) \
    "add r8, r4, r6\n\t" \
    "add r9, r8, r6\n\t" \
    "ldr r10, [r4]\n\t" \
    "ldr r11, [r4, #4]\n\t" \
    "ldr r0, [r8]\n\t" \
    "ldr r1, [r8, #4]\n\t" \
    "sxtab16 r2, r3, r10, ror #8\n\t" \
    "sxtab16 r10, r3, r10\n\t" \
    "str r2, [r5, #8 * " #C " + 4]\n\t" \
    "sxtab16 lr, r3, r11, ror #8\n\t" \
    "str r10, [r5, #8 * " #C "]\n\t" \
    "sxtab16 r11, r3, r11\n\t" \
    "str lr, [r5, #24 + 8 * " #C " + 4]\n\t" \
    "sxtab16 r2, r3, r0, ror #8\n\t" \
    "str r11, [r5, #24 + 8 * " #C "]\n\t" \
    "sxtab16 r0, r3, r0\n\t" \
    "str r2, [r5, #48 + 8 * " #C " + 4]\n\t" \
    "sxtab16 lr, r3, r1, ror #8\n\t" \
    "str r0, [r5, #48 + 8 * " #C "]\n\t" \
    "sxtab16 r1, r3, r1\n\t" \
    "str lr, [r5, #72 + 8 * " #C " + 4]\n\t" \
    "str r1, [r5, #72 + 8 * " #C "]\n\t" \
    "ldr r10, [r9]\n\t" \
    "ldr r11, [r9, #4]\n\t" \
    "ldrb r0, [r4, #8]\n\t" \
    "ldrb r2, [r9, #8]\n\t" \
    "ldrb r1, [r8, #8]\n\t" \
    "add r4, r4, r7\n\t" \
    "sxtab16 lr, r3, r10, ror #8\n\t" \
    "sxtab16 r10, r3, r10\n\t" \
    "str lr, [r5, #96 + 8 * " #C " + 4]\n\t" \
    "orr r0, r0, r2, lsl #16\n\t" \
    "str r10, [r5, #96 + 8 * " #C "]\n\t" \
    "sxtab16 r2, r3, r11, ror #8\n\t" \
    "sxtab16 r11, r3, r11\n\t" \
    "str r2, [r5, #120 + 8 * " #C " + 4]\n\t" \
    "sxtab16 r0, r3, r0\n\t" \
    "str r11, [r5, #120 + 8 * " #C "]\n\t" \
    "sxtab16 r1, r3, r1\n\t" \
    "str r0, [r5, #144 + 8 * " #C "]\n\t" \
    "strh r1, [r5, #148 + 8 * " #C "]\n\t"
/* The frame's [5]: 0, or three RGB windows inside the input on one row (few_image_n's straight-line case),
 * widened here first from [5] (rows [6] bytes apart, pixels [7], the input offset [8] in both halves): no
 * call and no C loop around few_widen_rgb's (whose GCC code kept its pointers and offset on the stack: about
 * 80 estimated cycles a window on the Cortex-M4 model, 52 on the Cortex-M7's). */
/* The output pointers, and a pixel's two outputs as one halfword (9 memory accesses, not 12: 3 estimated
 * cycles a pair fewer on the Cortex-M7 model, its BFIs beside the loads; the Cortex-M4's loads as one run,
 * as many cycles as 6 STRBs) */
#if DSP_PW_RUNS
#define FEW3T_OUTS \
    "ldr r8, [sp, #4]\n\t" \
    "ldr r9, [sp, #8]\n\t" \
    "ldr r11, [sp, #12]\n\t" \
    "bfi r2, r5, #8, #8\n\t" \
    "bfi r3, r6, #8, #8\n\t" \
    "bfi r4, r7, #8, #8\n\t"
#else
#define FEW3T_OUTS \
    "ldr r8, [sp, #4]\n\t" \
    "bfi r2, r5, #8, #8\n\t" \
    "ldr r9, [sp, #8]\n\t" \
    "bfi r3, r6, #8, #8\n\t" \
    "ldr r11, [sp, #12]\n\t" \
    "bfi r4, r7, #8, #8\n\t"
#endif
__asm__(".pushsection .text.mf_few3t_rows28,\"ax\",%progbits\n\t"
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type mf_few3t_rows28, %function\n\t.thumb_func\n"
        "mf_few3t_rows28:\n\t"
        "push {r4-r11, lr}\n\t"
        "sub sp, sp, #52\n\t"
        "ldm r0, {r2-r12}\n\t"
        "stm sp, {r2-r12}\n\t"
        "str r2, [sp, #44]\n\t" /* the table */
        "str r1, [sp, #48]\n\t" /* the filters */
        "3:\n\t"
        "ldr r4, [sp, #20]\n\t"
        "cmp r4, #0\n\t"
        "beq.w 1f\n\t"
        "ldr r6, [sp, #24]\n\t"
        "ldr r7, [sp, #28]\n\t"
        "ldr r3, [sp, #32]\n\t"
        "ldr r5, [sp, #16]\n\t"
        FEW3X_PIXEL(0) FEW3X_PIXEL(1) FEW3X_PIXEL(2)
        "str r4, [sp, #20]\n\t"
        "1:\n\t"
        "ldr r0, [sp, #48]\n\t"
        "ldr lr, [sp, #44]\n\t" /* the table (its cursor at [sp]), in lr from pair to pair */
        "2:\n\t"
        FEW3W_MACS
        FEW3W_TABLE
        FEW3T_OUT_A
        FEW3T_OUT3("r5", "r6", "r7")
        FEW3T_OUTS
        "strh r2, [r8], #2\n\t"
        "strh r3, [r9], #2\n\t"
        "strh r4, [r11], #2\n\t"
        "str r8, [sp, #4]\n\t"
        "str r9, [sp, #8]\n\t"
        "str r11, [sp, #12]\n\t"
        "tst r10, #256\n\t"
        "bne 2b\n\t"
        /* the next three pixels (the frame's [9] times), their outputs [10] bytes on */
        "ldr r1, [sp, #36]\n\t"
        "subs r1, r1, #1\n\t"
        "beq 4f\n\t"
        "str r1, [sp, #36]\n\t"
        "ldr r5, [sp, #40]\n\t"
        "ldr r2, [sp, #4]\n\t"
        "ldr r3, [sp, #8]\n\t"
        "ldr r4, [sp, #12]\n\t"
        "add r2, r2, r5\n\t"
        "add r3, r3, r5\n\t"
        "add r4, r4, r5\n\t"
        "str r2, [sp, #4]\n\t"
        "str r3, [sp, #8]\n\t"
        "str r4, [sp, #12]\n\t"
        "b 3b\n\t"
        "4:\n\t"
        "add sp, sp, #52\n\t"
        "pop {r4-r11, pc}\n\t"
        ".size mf_few3t_rows28, . - mf_few3t_rows28\n\t"
        ".popsection\n");
void mf_few3t_rows28(const uint32_t *frame, const int16_t *w);
#endif

/* The deep pointwise layers' 3 x 2 tiles (three filters x two pixels, the two columns as mat_mult_2cols
 * widens them): mf_pw3_rowsD(frame, w) for D = 32, 64, 128, 256 taps (MobileNet's 1x1 layers) and 144, 288,
 * 576 (3x3 layers on 16, 32, 64 channels) on every DSP core. Against the 2 x 2 tiles, on the Cortex-M4 model: a
 * group of 4 taps costs 27 estimated cycles for 24 MACs against 19 for 16 (mf_pw_rows64) or 20
 * (DSP_TILE_GROUP, the loop at 128 and 256 taps): each column word feeds 6 SMLADs, not 4; and the tile's entry
 * and its output stage's pointer traffic are paid once for 6 outputs, not 4 (VWW's 128-tap layers: 1.44 ->
 * 1.34 estimated cycles/MAC). Four filters would leave no register for the columns.
 * The frame: mf_pw_rows' (bias, mult, shift, out0, out1, 2 out_off + 1, filter triples, the columns' end,
 * their start). r0 w (the filters at w, w + D, w + 2 D), r1 the columns, r2/r3 filter 0 on pixels 0/1, r4/r5
 * filter 1's, r6/r7 filter 2's, r8..r12 and lr the words and lanes: all 14 registers. At more than 64 taps, a
 * loop of 12 or 16 groups (its end read from the frame). */
#if DSP_PW_RUNS
/* The Cortex-M4's group (27 estimated cycles): the three filters' words and the columns' even-lane words as one
 * run of five loads, each filter's even lanes through lr, then the odd-lane words as a run of two and each
 * filter's odd lanes from its word, still in its register: no register holds a filter's lanes while another
 * filter's are unpacked. */
#define PW3_GROUP(D) \
    "ldr r8, [r0], #4\n\t" \
    "ldr r9, [r0, #" #D " - 4]\n\t" \
    "ldr r10, [r0, #2 * " #D " - 4]\n\t" \
    "ldr r11, [r1], #16\n\t" \
    "ldr r12, [r1, #-8]\n\t" \
    "sxtb16 lr, r8\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "smlad r3, lr, r12, r3\n\t" \
    "sxtb16 lr, r9\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "smlad r5, lr, r12, r5\n\t" \
    "sxtb16 lr, r10\n\t" \
    "smlad r6, lr, r11, r6\n\t" \
    "smlad r7, lr, r12, r7\n\t" \
    "ldr r11, [r1, #-12]\n\t" \
    "ldr r12, [r1, #-4]\n\t" \
    "sxtb16 lr, r8, ror #8\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "smlad r3, lr, r12, r3\n\t" \
    "sxtb16 lr, r9, ror #8\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "smlad r5, lr, r12, r5\n\t" \
    "sxtb16 lr, r10, ror #8\n\t" \
    "smlad r6, lr, r11, r6\n\t" \
    "smlad r7, lr, r12, r7\n\t"
#define PW3_GROUPS2(D) PW3_GROUP(D) PW3_GROUP(D)
/* nothing loaded ahead of the groups; the group loop's end (the columns' end at [sp, #28]) in r8, free there */
#define PW3_PRE ""
#define PW3_LOOP \
    "ldr r8, [sp, #28]\n\t" \
    "cmp r1, r8\n\t" \
    "bne 1b\n\t"
#define PW3_W_AHEAD 0 /* bytes of w loaded ahead of the groups */
#define PW3_X_AHEAD 0 /* int16 of the columns loaded ahead */
#else
/* The Cortex-M7 (dual issue: a load or an SXTB16 beside each SMLAD, no loaded value used by the next issue
 * group): 13 estimated cycles a group on the Cortex-M7 model (14 for the previous software-pipelined order, 16.25
 * for the Cortex-M4's; 30 on the Cortex-M4 model). Two registers rotate through the filters: while a filter's
 * even lanes feed its first two SMLADs, its raw word is unpacked to its odd lanes in place and the next filter's
 * word loaded into the even lanes' register; the next filter's even lanes go to the odd lanes' register beside
 * its last SMLAD. So each filter takes 4 issue groups with one slot left, and the columns, all four live in
 * r10/r11 (pixel 0's even, odd words) and r12/lr (pixel 1's), are reloaded as two LDRDs (1 cycle each, the 64-bit
 * path) after the last filter's uses of them. A group starts with the first filter's raw word in A (PW3_PRE
 * loads it and the columns for the first group) and ends with the next group's in B: PW3_GROUP_M7(D, "r8", "r9")
 * then (D, "r9", "r8"). The last group reads the 16 bytes past the columns (inside the scratch: 5 patches, the
 * columns 4) and filter 1's first word. */
#define PW3_GROUP_M7(D, A, B) \
    "sxtb16 " B ", " A "\n\t" \
    "smlad r2, " B ", r10, r2\n\t" \
    "sxtb16 " A ", " A ", ror #8\n\t" \
    "smlad r3, " B ", r12, r3\n\t" \
    "ldr " B ", [r0, #" #D "]\n\t" \
    "smlad r2, " A ", r11, r2\n\t" \
    "smlad r3, " A ", lr, r3\n\t" \
    "sxtb16 " A ", " B "\n\t" \
    "smlad r4, " A ", r10, r4\n\t" \
    "sxtb16 " B ", " B ", ror #8\n\t" \
    "smlad r5, " A ", r12, r5\n\t" \
    "ldr " A ", [r0, #2 * " #D "]\n\t" \
    "smlad r4, " B ", r11, r4\n\t" \
    "smlad r5, " B ", lr, r5\n\t" \
    "sxtb16 " B ", " A "\n\t" \
    "smlad r6, " B ", r10, r6\n\t" \
    "sxtb16 " A ", " A ", ror #8\n\t" \
    "smlad r7, " B ", r12, r7\n\t" \
    "ldr " B ", [r0, #4]!\n\t" \
    "smlad r6, " A ", r11, r6\n\t" \
    "ldrd r10, r11, [r1, #16]!\n\t" \
    "smlad r7, " A ", lr, r7\n\t" \
    "ldrd r12, lr, [r1, #8]\n\t"
#define PW3_GROUPS2(D) PW3_GROUP_M7(D, "r8", "r9") PW3_GROUP_M7(D, "r9", "r8")
#define PW3_PRE \
    "ldr r8, [r0]\n\t" \
    "ldrd r10, r11, [r1]\n\t" \
    "ldrd r12, lr, [r1, #8]\n\t"
/* the loop's end: the columns' end, in r9 (free between an even number of groups) */
#define PW3_LOOP \
    "ldr r9, [sp, #28]\n\t" \
    "cmp r1, r9\n\t" \
    "bne 1b\n\t"
#define PW3_W_AHEAD 0
#define PW3_X_AHEAD 0
#endif
#define PW3_GROUPS8(D) PW3_GROUPS2(D) PW3_GROUPS2(D) PW3_GROUPS2(D) PW3_GROUPS2(D)
#define PW3_GROUPS16(D) PW3_GROUPS8(D) PW3_GROUPS8(D)
#define PW3_STR2(X) #X
#define PW3_STR(X) PW3_STR2(X)
/* The output stage's rounding constant: DSP_ROWS_OUT's 2^(n-1) + out_off 2^n = (2 out_off + 1) << (n - 1), here
 * made as K2 = (2 out_off + 1) << n (n = -shift, r1 2 out_off + 1) and added as the ADD's shifted operand
 * "K2, asr #1": one MVN (n - 1 = ~shift) fewer a filter. Exact, the same bits as DSP_ROWS_OUT's: the tiles run
 * only where dsp_shifts_negative holds (n in [1, 22], |out_off| <= 255), so |K2| <= 511 * 2^22 < 2^31 (no
 * overflow) and K2 is even (n >= 1), so K2 asr 1 == (2 out_off + 1) 2^(n-1) exactly; the rest (the -1 for a
 * negative product, the ASR by n, SSAT) is FEW3_OUT's. */
/* the six sums r2..r7 doubled (SMMULR's operand: 2 acc) */
#define PW_SUMS_X2 \
    "lsl r2, r2, #1\n\t" \
    "lsl r3, r3, #1\n\t" \
    "lsl r4, r4, #1\n\t" \
    "lsl r5, r5, #1\n\t" \
    "lsl r6, r6, #1\n\t" \
    "lsl r7, r7, #1\n\t"
/* filter F's two outputs X, Y: its shift S (ldrsb'd; n after the RSB), r8 K2, r1 2 out_off + 1 */
#define PW3_OUT(X, Y, S) \
    "rsb " S ", " S ", #0\n\t" \
    "lsl r8, r1, " S "\n\t" \
    PW3_OUT1(X, "r8", S) PW3_OUT1(Y, "r8", S)
#define PW3_OUT1(X, K2, N) \
    "add " X ", " X ", " X ", asr #31\n\t" \
    "add " X ", " X ", " K2 ", asr #1\n\t" \
    "asr " X ", " X ", " N "\n\t" \
    "ssat " X ", #8, " X "\n\t"
#if DSP_PW_RUNS
/* A tile's output stage and the step to the next triple (r0 to its filters, the parameters' pointers, the
 * outputs', the triples left, flags for the BNE): on the Cortex-M4 model an in-order sequence costs its
 * instructions (a search over orders found none cheaper), so filter by filter. */
/* A tile's start (the label 2: of PW3_FUNC): its biases as each filter's two sums, the columns' start in r1 */
#define PW3_ENTRY ""
#define PW3_HEAD \
    "ldr r8, [sp]\n\t" \
    "ldr r1, [sp, #32]\n\t" \
    "ldr r2, [r8], #4\n\t" \
    "ldr r4, [r8], #4\n\t" \
    "ldr r6, [r8], #4\n\t" \
    "str r8, [sp]\n\t" \
    "mov r3, r2\n\t" \
    "mov r5, r4\n\t" \
    "mov r7, r6\n\t" \
    PW3_PRE
#define PW3_TAIL(D) \
    "add r0, r0, #2 * " #D " - " PW3_STR(PW3_W_AHEAD) "\n\t" \
    "ldr r8, [sp, #4]\n\t" \
    "ldr r9, [sp, #8]\n\t" \
    "ldr r10, [r8], #4\n\t" \
    "ldr r11, [r8], #4\n\t" \
    "ldr r12, [r8], #4\n\t" \
    "str r8, [sp, #4]\n\t" \
    PW_SUMS_X2 \
    "smmulr r2, r2, r10\n\t" \
    "smmulr r3, r3, r10\n\t" \
    "smmulr r4, r4, r11\n\t" \
    "smmulr r5, r5, r11\n\t" \
    "smmulr r6, r6, r12\n\t" \
    "smmulr r7, r7, r12\n\t" \
    "ldrsb r10, [r9], #1\n\t" \
    "ldrsb r11, [r9], #1\n\t" \
    "ldrsb r12, [r9], #1\n\t" \
    "ldr r1, [sp, #20]\n\t" \
    "str r9, [sp, #8]\n\t" \
        PW3_OUT("r2", "r3", "r10") PW3_OUT("r4", "r5", "r11") PW3_OUT("r6", "r7", "r12") \
    "ldr r8, [sp, #12]\n\t" \
    "ldr r9, [sp, #16]\n\t" \
    "ldr r1, [sp, #24]\n\t" \
    "strb r2, [r8], #1\n\t" \
    "strb r4, [r8], #1\n\t" \
    "strb r6, [r8], #1\n\t" \
    "strb r3, [r9], #1\n\t" \
    "strb r5, [r9], #1\n\t" \
    "strb r7, [r9], #1\n\t" \
    "str r8, [sp, #12]\n\t" \
    "str r9, [sp, #16]\n\t" \
    "subs r1, r1, #1\n\t" \
    "str r1, [sp, #24]\n\t"
#else
/* The Cortex-M7's tile start: the bias pointer (r11) and the columns' start (r1) already loaded (PW3_ENTRY for the
 * first tile, PW3_TAIL for the next), so the biases' LDRD issues at once; PW3_PRE's three loads (not PW3_PRE itself) beside the MOVs. */
#define PW3_ENTRY \
    "ldr r11, [sp]\n\t" \
    "ldr r1, [sp, #32]\n\t"
#define PW3_HEAD \
    "ldrd r2, r4, [r11], #8\n\t" \
    "ldr r6, [r11], #4\n\t" \
    "str r11, [sp]\n\t" \
    "mov r5, r4\n\t" \
    "mov r3, r2\n\t" \
    "ldr r8, [r0]\n\t" \
    "ldrd r10, r11, [r1]\n\t" \
    "mov r7, r6\n\t" \
    "ldrd r12, lr, [r1, #8]\n\t"
/* The Cortex-M7's order of the same instructions (a randomized list scheduling over the dependencies, costed on
 * the Cortex-M7 model from the last group on): the loads and stores each beside an ALU instruction, the six SMMULRs
 * beside the loads of the shifts, the filters' chains interleaved so that no ALU result or load is used by the
 * next issue group; the multipliers by one LDRD. 35 estimated cycles against 49 in the Cortex-M4's order (the
 * MVN-less one; 52 before): VWW's 128-tap tiles 475 -> 460. It also loads the next tile's bias pointer (r11) and
 * the columns' start (r1) for PW3_HEAD (the triples left in r10): 37 for the tail, but PW3_HEAD's loads of the
 * biases no longer wait on the pointer's load (16 -> 12 with the first group's start): 460 -> 458. */
#define PW3_TAIL(D) \
    "ldr r8, [sp, #4]\n\t" \
    "lsl r2, r2, #1\n\t" \
    "lsl r3, r3, #1\n\t" \
    "lsl r5, r5, #1\n\t" \
    "ldrd r10, r11, [r8], #8\n\t" \
    "ldr r12, [r8], #4\n\t" \
    "lsl r4, r4, #1\n\t" \
    "ldr r9, [sp, #8]\n\t" \
    "smmulr r2, r2, r10\n\t" \
    "lsl r6, r6, #1\n\t" \
    "smmulr r4, r4, r11\n\t" \
    "smmulr r3, r3, r10\n\t" \
    "ldrsb r10, [r9], #1\n\t" \
    "smmulr r5, r5, r11\n\t" \
    "lsl r7, r7, #1\n\t" \
    "smmulr r7, r7, r12\n\t" \
    "str r8, [sp, #4]\n\t" \
    "smmulr r6, r6, r12\n\t" \
    "ldrsb r11, [r9], #1\n\t" \
    "ldr r1, [sp, #20]\n\t" \
    "rsb r10, r10, #0\n\t" \
    "ldrsb r12, [r9], #1\n\t" \
    "rsb r11, r11, #0\n\t" \
    "add r3, r3, r3, asr #31\n\t" \
    "add r2, r2, r2, asr #31\n\t" \
    "str r9, [sp, #8]\n\t" \
    "lsl r8, r1, r10\n\t" \
    "add r3, r3, r8, asr #1\n\t" \
    "add r5, r5, r5, asr #31\n\t" \
    "rsb r12, r12, #0\n\t" \
    "add r2, r2, r8, asr #1\n\t" \
    "add r4, r4, r4, asr #31\n\t" \
    "lsl r9, r1, r11\n\t" \
    "asr r2, r2, r10\n\t" \
    "add r5, r5, r9, asr #1\n\t" \
    "lsl lr, r1, r12\n\t" \
    "add r4, r4, r9, asr #1\n\t" \
    "add r7, r7, r7, asr #31\n\t" \
    "asr r3, r3, r10\n\t" \
    "add r6, r6, r6, asr #31\n\t" \
    "ldr r9, [sp, #16]\n\t" \
    "asr r4, r4, r11\n\t" \
    "add r7, r7, lr, asr #1\n\t" \
    "ssat r3, #8, r3\n\t" \
    "ldr r8, [sp, #12]\n\t" \
    "ssat r2, #8, r2\n\t" \
    "asr r5, r5, r11\n\t" \
    "add r6, r6, lr, asr #1\n\t" \
    "ssat r4, #8, r4\n\t" \
    "asr r6, r6, r12\n\t" \
    "strb r3, [r9], #1\n\t" \
    "strb r2, [r8], #1\n\t" \
    "asr r7, r7, r12\n\t" \
    "strb r4, [r8], #1\n\t" \
    "ssat r5, #8, r5\n\t" \
    "ssat r7, #8, r7\n\t" \
    "ldr r10, [sp, #24]\n\t" \
    "ssat r6, #8, r6\n\t" \
    "strb r5, [r9], #1\n\t" \
    "strb r7, [r9], #1\n\t" \
    "strb r6, [r8], #1\n\t" \
    "str r8, [sp, #12]\n\t" \
    "subs r10, r10, #1\n\t" \
    "str r9, [sp, #16]\n\t" \
    "ldr r1, [sp, #32]\n\t" \
    "str r10, [sp, #24]\n\t" \
    "add r0, r0, #2 * " #D "\n\t" \
    "ldr r11, [sp]\n\t"
#endif
#define PW3_FUNC(NAME, DEPTH, GROUPS, LOOP) \
__asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t" \
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n" \
        #NAME ":\n\t" \
        "push {r4-r11, lr}\n\t" \
        "sub sp, sp, #36\n\t" \
        "ldm r0, {r2-r10}\n\t" \
        "stm sp, {r2-r10}\n\t" \
        "mov r0, r1\n\t" \
        PW3_ENTRY \
        "2:\n\t" \
        PW3_HEAD \
        "1:\n\t" \
        GROUPS LOOP \
        PW3_TAIL(DEPTH) \
        "bne 2b\n\t" \
        "add sp, sp, #36\n\t" \
        "pop {r4-r11, pc}\n\t" \
        ".size " #NAME ", . - " #NAME "\n\t" \
        ".popsection\n")
PW3_FUNC(mf_pw3_rows8, 8, PW3_GROUPS2(8), "");
PW3_FUNC(mf_pw3_rows16, 16, PW3_GROUPS2(16) PW3_GROUPS2(16), "");
PW3_FUNC(mf_pw3_rows32, 32, PW3_GROUPS8(32), "");
PW3_FUNC(mf_pw3_rows64, 64, PW3_GROUPS16(64), "");
/* 128 taps (VWW's op14..op24, its largest cost): the 32 groups without a loop (1.6 KB more code): the loop's end
 * test and taken branch were 10 estimated cycles a tile of 27 x 32 on the Cortex-M4 model (mobilenet_v1_025
 * 13.237 -> 13.195 M), 5 on the Cortex-M7's (7.564 -> 7.535 M) */
PW3_FUNC(mf_pw3_rows128, 128, PW3_GROUPS16(128) PW3_GROUPS16(128), "");
PW3_FUNC(mf_pw3_rows256, 256, PW3_GROUPS16(256), PW3_LOOP);
/* the 3x3 layers on 16, 32 and 64 channels (ResNet's): 144 and 288 taps by 12 groups a loop step (36 and 72
 * groups), 576 by 16. Against the 2 x 2 tiles (DSP_TILE_ROWS_ASM, 21 estimated cycles a group of 16 MACs, the
 * loop's included) 27.5 for 24 on the Cortex-M4 model: resnet8 20.33 -> 18.80 M; on the Cortex-M7's
 * (PW3_GROUP_M7) 13.24 -> 10.55 M. */
#define PW3_GROUPS12(D) PW3_GROUPS8(D) PW3_GROUPS2(D) PW3_GROUPS2(D)
PW3_FUNC(mf_pw3_rows144, 144, PW3_GROUPS12(144), PW3_LOOP);
PW3_FUNC(mf_pw3_rows288, 288, PW3_GROUPS12(288), PW3_LOOP);
PW3_FUNC(mf_pw3_rows576, 576, PW3_GROUPS16(576), PW3_LOOP);
void mf_pw3_rows144(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows288(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows576(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows8(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows16(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows32(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows64(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows128(const uint32_t *frame, const int8_t *w);
void mf_pw3_rows256(const uint32_t *frame, const int8_t *w);

/* A last odd pixel's triples (run_fast repeats it in column 1 and passes out1 == out0): mf_pw3s_rows(frame, w),
 * three filters x one pixel, column 0's two words a group (the same bytes as the 3 x 2 tile's column 0). Its
 * group costs 18 estimated cycles on the Cortex-M4 model (27 for the 3 x 2 tile, half of it for the copy) and
 * 9.5 on the Cortex-M7's (13; its own order below): five loads, each filter's lanes unpacked into lr and in
 * place. Any depth of pw3_depth (a multiple of 16 taps), 4 groups a loop step, the filters' offsets in r3
 * (D - 4) and r5 (2 D - 4). The frame: pw3_rows' with the depth in place of out1. r0 w, r1 the columns,
 * r2/r4/r6 the sums, r7 the columns' end, r8..r12 and lr the words and lanes. */
#if DSP_PW_RUNS
#define PW3S_GROUP \
    "ldr r8, [r0], #4\n\t" \
    "ldr r9, [r0, r3]\n\t" \
    "ldr r10, [r0, r5]\n\t" \
    "ldr r11, [r1], #16\n\t" \
    "ldr r12, [r1, #-12]\n\t" \
    "sxtb16 lr, r8\n\t" \
    "sxtb16 r8, r8, ror #8\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "smlad r2, r8, r12, r2\n\t" \
    "sxtb16 lr, r9\n\t" \
    "sxtb16 r9, r9, ror #8\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "smlad r4, r9, r12, r4\n\t" \
    "sxtb16 lr, r10\n\t" \
    "sxtb16 r10, r10, ror #8\n\t" \
    "smlad r6, lr, r11, r6\n\t" \
    "smlad r6, r10, r12, r6\n\t"
#else
/* the Cortex-M7's order (a search over the group's orders on the Cortex-M7 model): the first filter's word and
 * the columns first, its lanes unpacked beside the other two filters' loads; 9.25 estimated cycles a group
 * against 10.25 for the Cortex-M4's order (19 against 18 on the Cortex-M4 model) */
#define PW3S_GROUP \
    "ldr r8, [r0], #4\n\t" \
    "ldr r11, [r1], #16\n\t" \
    "ldr r12, [r1, #-12]\n\t" \
    "sxtb16 lr, r8\n\t" \
    "sxtb16 r8, r8, ror #8\n\t" \
    "ldr r9, [r0, r3]\n\t" \
    "ldr r10, [r0, r5]\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "smlad r2, r8, r12, r2\n\t" \
    "sxtb16 lr, r9\n\t" \
    "sxtb16 r9, r9, ror #8\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "smlad r4, r9, r12, r4\n\t" \
    "sxtb16 lr, r10\n\t" \
    "smlad r6, lr, r11, r6\n\t" \
    "sxtb16 r10, r10, ror #8\n\t" \
    "smlad r6, r10, r12, r6\n\t"
#endif
/* filter F's output X: its shift S (ldrsb'd), r1 2 out_off + 1; the rounding constant as PW3_OUT's */
#define PW3S_OUT(X, S) \
    "rsb " S ", " S ", #0\n\t" \
    "lsl r8, r1, " S "\n\t" \
    PW3_OUT1(X, "r8", S)
__asm__(".pushsection .text.mf_pw3s_rows,\"ax\",%progbits\n\t"
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type mf_pw3s_rows, %function\n\t.thumb_func\n"
        "mf_pw3s_rows:\n\t"
        "push {r4-r11, lr}\n\t"
        "sub sp, sp, #36\n\t"
        "ldm r0, {r2-r10}\n\t"
        "stm sp, {r2-r10}\n\t"
        "mov r0, r1\n\t"
        "ldr r3, [sp, #16]\n\t"
        "ldr r7, [sp, #28]\n\t"
        "lsl r5, r3, #1\n\t"
        "sub r5, r5, #4\n\t"
        "sub r3, r3, #4\n\t"
        "2:\n\t"
        "ldr r8, [sp]\n\t"
        "ldr r1, [sp, #32]\n\t"
        "ldr r2, [r8], #4\n\t"
        "ldr r4, [r8], #4\n\t"
        "ldr r6, [r8], #4\n\t"
        "str r8, [sp]\n\t"
        "1:\n\t"
        PW3S_GROUP PW3S_GROUP PW3S_GROUP PW3S_GROUP
        "cmp r1, r7\n\t"
        "bne 1b\n\t"
        "add r0, r0, r5\n\t"
        "add r0, r0, #4\n\t"
        "ldr r8, [sp, #4]\n\t"
        "ldr r9, [sp, #8]\n\t"
        "ldr r10, [r8], #4\n\t"
        "ldr r11, [r8], #4\n\t"
        "ldr r12, [r8], #4\n\t"
        "str r8, [sp, #4]\n\t"
        "lsl r2, r2, #1\n\t"
        "lsl r4, r4, #1\n\t"
        "lsl r6, r6, #1\n\t"
        "smmulr r2, r2, r10\n\t"
        "smmulr r4, r4, r11\n\t"
        "smmulr r6, r6, r12\n\t"
        "ldrsb r10, [r9], #1\n\t"
        "ldrsb r11, [r9], #1\n\t"
        "ldrsb r12, [r9], #1\n\t"
        "ldr r1, [sp, #20]\n\t"
        "str r9, [sp, #8]\n\t"
        PW3S_OUT("r2", "r10") PW3S_OUT("r4", "r11") PW3S_OUT("r6", "r12")
        "ldr r8, [sp, #12]\n\t"
        "ldr r1, [sp, #24]\n\t"
        "strb r2, [r8], #1\n\t"
        "strb r4, [r8], #1\n\t"
        "strb r6, [r8], #1\n\t"
        "str r8, [sp, #12]\n\t"
        "subs r1, r1, #1\n\t"
        "str r1, [sp, #24]\n\t"
        "bne 2b\n\t"
        "add sp, sp, #36\n\t"
        "pop {r4-r11, pc}\n\t"
        ".size mf_pw3s_rows, . - mf_pw3s_rows\n\t"
        ".popsection\n");
void mf_pw3s_rows(const uint32_t *frame, const int8_t *w);

#if !DSP_PW_RUNS
/* The Cortex-M7's last filter of a 3k + 1 (past pw3_rows' triples): mf_pw1_rows(frame, w), one filter x two pixels
 * (the frame as pw3_rows', its pointers at that filter), depth a multiple of 16, 4 groups of 4 taps a loop step.
 * The C loop took 12 estimated cycles a group on the Cortex-M7 model; here each load issues beside an SXTB16 or
 * SMLAD: the columns' words one group ahead (the last group reads 16 bytes past the columns, inside the
 * scratch), the filter's next word after its lanes are unpacked, but not past the row (so not across a loop
 * step: its first group waits for its word). r0 w, r1 the columns, r2/r3 the sums, r4 the filter's word,
 * r5..r8 the columns' words, r9/r10 its lanes, r11 the columns' end (+ 16 bytes), r12 the frame. */
#define PW1_GROUP(NEXT_W) \
    "sxtb16 r9, r4\n\t" \
    "sxtb16 r10, r4, ror #8\n\t" \
    "smlad r2, r9, r5, r2\n\t" \
    NEXT_W \
    "smlad r2, r10, r6, r2\n\t" \
    "ldr r5, [r1], #16\n\t" \
    "smlad r3, r9, r7, r3\n\t" \
    "ldr r6, [r1, #-12]\n\t" \
    "smlad r3, r10, r8, r3\n\t" \
    "ldr r7, [r1, #-8]\n\t" \
    "ldr r8, [r1, #-4]\n\t"
#define PW1_W "ldr r4, [r0], #4\n\t"
__asm__(".pushsection .text.mf_pw1_rows,\"ax\",%progbits\n\t"
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type mf_pw1_rows, %function\n\t.thumb_func\n"
        "mf_pw1_rows:\n\t"
        "push {r4-r11, lr}\n\t"
        "mov r12, r0\n\t"
        "mov r0, r1\n\t"
        "ldr r1, [r12, #32]\n\t"
        "ldr r11, [r12, #28]\n\t"
        "ldr r2, [r12]\n\t"
        "ldr r5, [r1], #16\n\t"
        "ldr r6, [r1, #-12]\n\t"
        "ldr r7, [r1, #-8]\n\t"
        "ldr r8, [r1, #-4]\n\t"
        "ldr r2, [r2]\n\t"
        "mov r3, r2\n\t"
        "1:\n\t"
        PW1_W
        PW1_GROUP(PW1_W) PW1_GROUP(PW1_W) PW1_GROUP(PW1_W) PW1_GROUP("")
        "cmp r1, r11\n\t"
        "bne 1b\n\t"
        "ldr lr, [r12, #4]\n\t"
        "ldr r4, [r12, #8]\n\t"
        "ldr r5, [r12, #20]\n\t"
        "ldr lr, [lr]\n\t"
        "ldrsb r4, [r4]\n\t"
        "lsl r2, r2, #1\n\t"
        "lsl r3, r3, #1\n\t"
        "smmulr r2, r2, lr\n\t"
        "smmulr r3, r3, lr\n\t"
        "mvn r6, r4\n\t"
        "lsl r6, r5, r6\n\t"
        "rsb r4, r4, #0\n\t"
        "add r2, r2, r2, asr #31\n\t"
        "add r2, r2, r6\n\t"
        "asr r2, r2, r4\n\t"
        "ssat r2, #8, r2\n\t"
        "add r3, r3, r3, asr #31\n\t"
        "add r3, r3, r6\n\t"
        "asr r3, r3, r4\n\t"
        "ssat r3, #8, r3\n\t"
        "ldr r7, [r12, #12]\n\t"
        "ldr r8, [r12, #16]\n\t"
        "strb r2, [r7]\n\t"
        "strb r3, [r8]\n\t"
        "pop {r4-r11, pc}\n\t"
        ".size mf_pw1_rows, . - mf_pw1_rows\n\t"
        ".popsection\n");
void mf_pw1_rows(const uint32_t *frame, const int8_t *w);
#endif

/* 1 when no multiplier of the n channels is negative (rq_table's rounding takes the sign of the sum for the
 * product's). */
static int rq_mults_nonneg(const mf_channel_requant *rq, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (rq->mult[i] < 0) return 0;
    }
    return 1;
}

#if DSP_PW_RUNS
/* The pointwise layers' 2 x 3 tiles (two filters x three pixels) on the Cortex-M4 and M33: mf_pw23_rowsD(frame, w) for
 * D = 64, 128, 256 taps (and 144, 288, 576: pw23_run3x3), the three columns in widen_interleaved's layout for three (a
 * group of 4 taps: column 0's lanes 0, 2 then 1, 3, then column 1's, then column 2's: 24 bytes). Against the 3 x 2
 * tiles (mf_pw3_rowsD), on the Cortex-M4 model: a group costs 26 estimated cycles for 24 MACs, not 27 (the two filters'
 * words and the three columns' even-lane words as one run of five loads, each filter's lanes through lr for three
 * SMLADs, then the odd-lane words as a run of three); the output stage reads two filters' parameters for six outputs,
 * not three; and the pixel counts MobileNet's maps have (6 x 6, 12 x 12, 3 x 3) are multiples of 3 where the 3 x 2
 * tiles left the 128 and 256 channels' 3 x 3 maps an odd pixel (mf_pw3s_rows) and the filter counts even numbers where
 * theirs left one or two filters (dsp_tile_rows_neg). A third column needs a larger scratch (6 patches:
 * conv2d_s8_pw23's plan), which the planner gives only where it costs no RAM. The frame (10 words, copied below sp):
 * bias, mult, shift pointers, the outputs of pixels 0, 1, 2, 2 out_off + 1, the filters' end, the columns' end, their
 * start. r0 w (the pair at w, w + D), r1 the columns, r2/r3/r4 filter 0 on pixels 0/1/2, r5/r6/r7 filter 1's, r8..r12
 * and lr the words and lanes: all 14 registers. At 256 taps, a loop of 16 groups (its end read from the frame). */
#define PW23_GROUP(D) \
    "ldr r8, [r0], #4\n\t" \
    "ldr r9, [r0, #" #D " - 4]\n\t" \
    "ldr r10, [r1], #24\n\t" \
    "ldr r11, [r1, #-16]\n\t" \
    "ldr r12, [r1, #-8]\n\t" \
    "sxtb16 lr, r8\n\t" \
    "smlad r2, lr, r10, r2\n\t" \
    "smlad r3, lr, r11, r3\n\t" \
    "smlad r4, lr, r12, r4\n\t" \
    "sxtb16 lr, r9\n\t" \
    "smlad r5, lr, r10, r5\n\t" \
    "smlad r6, lr, r11, r6\n\t" \
    "smlad r7, lr, r12, r7\n\t" \
    "ldr r10, [r1, #-20]\n\t" \
    "ldr r11, [r1, #-12]\n\t" \
    "ldr r12, [r1, #-4]\n\t" \
    "sxtb16 lr, r8, ror #8\n\t" \
    "smlad r2, lr, r10, r2\n\t" \
    "smlad r3, lr, r11, r3\n\t" \
    "smlad r4, lr, r12, r4\n\t" \
    "sxtb16 lr, r9, ror #8\n\t" \
    "smlad r5, lr, r10, r5\n\t" \
    "smlad r6, lr, r11, r6\n\t" \
    "smlad r7, lr, r12, r7\n\t"
#define PW23_GROUPS4(D) PW23_GROUP(D) PW23_GROUP(D) PW23_GROUP(D) PW23_GROUP(D)
#define PW23_GROUPS16(D) PW23_GROUPS4(D) PW23_GROUPS4(D) PW23_GROUPS4(D) PW23_GROUPS4(D)
#define PW23_LOOP \
    "ldr r8, [sp, #32]\n\t" \
    "cmp r1, r8\n\t" \
    "bne 1b\n\t"
/* A tile's start: its biases as each filter's three sums, the columns' start in r1 */
#define PW23_HEAD \
    "ldr r8, [sp]\n\t" \
    "ldr r1, [sp, #36]\n\t" \
    "ldr r2, [r8], #4\n\t" \
    "ldr r5, [r8], #4\n\t" \
    "str r8, [sp]\n\t" \
    "mov r3, r2\n\t" \
    "mov r4, r2\n\t" \
    "mov r6, r5\n\t" \
    "mov r7, r5\n\t"
/* A tile's output stage (PW3_OUT1's, each filter's rounding constant made once for its three outputs) and the
 * step to the next pair: r0 to its filters, the parameters' and outputs' pointers; flags for the BNE. */
#define PW23_TAIL(STEP) \
    "add r0, r0, #" STEP "\n\t" \
    "ldr r8, [sp, #4]\n\t" \
    "ldr r9, [sp, #8]\n\t" \
    "ldr r10, [r8], #4\n\t" \
    "ldr r11, [r8], #4\n\t" \
    "ldrsb r12, [r9], #1\n\t" \
    "ldrsb lr, [r9], #1\n\t" \
    "str r8, [sp, #4]\n\t" \
    "str r9, [sp, #8]\n\t" \
    PW_SUMS_X2 \
    "smmulr r2, r2, r10\n\t" \
    "smmulr r3, r3, r10\n\t" \
    "smmulr r4, r4, r10\n\t" \
    "smmulr r5, r5, r11\n\t" \
    "smmulr r6, r6, r11\n\t" \
    "smmulr r7, r7, r11\n\t" \
    "ldr r1, [sp, #24]\n\t" \
    "rsb r12, r12, #0\n\t" \
    "lsl r8, r1, r12\n\t" \
    PW3_OUT1("r2", "r8", "r12") PW3_OUT1("r3", "r8", "r12") PW3_OUT1("r4", "r8", "r12") \
    "rsb lr, lr, #0\n\t" \
    "lsl r8, r1, lr\n\t" \
    PW3_OUT1("r5", "r8", "lr") PW3_OUT1("r6", "r8", "lr") PW3_OUT1("r7", "r8", "lr") \
    PW23_STORES
/* the six outputs stored, their pointers stepped on; flags for the BNE (r0 at the filters' end or not) */
#define PW23_STORES \
    "ldr r8, [sp, #12]\n\t" \
    "ldr r9, [sp, #16]\n\t" \
    "ldr r10, [sp, #20]\n\t" \
    "ldr r1, [sp, #28]\n\t" \
    "strb r2, [r8], #1\n\t" \
    "strb r5, [r8], #1\n\t" \
    "strb r3, [r9], #1\n\t" \
    "strb r6, [r9], #1\n\t" \
    "strb r4, [r10], #1\n\t" \
    "strb r7, [r10], #1\n\t" \
    "str r8, [sp, #12]\n\t" \
    "str r9, [sp, #16]\n\t" \
    "str r10, [sp, #20]\n\t" \
    "cmp r0, r1\n\t"
#define PW23_FUNC(NAME, HEAD, GROUPS, LOOP, TAIL) \
__asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t" \
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n" \
        #NAME ":\n\t" \
        "push {r4-r11, lr}\n\t" \
        "sub sp, sp, #40\n\t" \
        "ldm r0, {r2-r11}\n\t" \
        "stm sp, {r2-r11}\n\t" \
        "mov r0, r1\n\t" \
        "2:\n\t" \
        HEAD \
        "1:\n\t" \
        GROUPS LOOP \
        TAIL \
        "bne 2b\n\t" \
        "add sp, sp, #40\n\t" \
        "pop {r4-r11, pc}\n\t" \
        ".size " #NAME ", . - " #NAME "\n\t" \
        ".popsection\n")
PW23_FUNC(mf_pw23_rows64, PW23_HEAD, PW23_GROUPS16(64), "", PW23_TAIL("64"));
PW23_FUNC(mf_pw23_rows128, PW23_HEAD, PW23_GROUPS16(128) PW23_GROUPS16(128), "", PW23_TAIL("128"));
PW23_FUNC(mf_pw23_rows256, PW23_HEAD, PW23_GROUPS16(256), PW23_LOOP, PW23_TAIL("256"));
#define PW23_GROUPS12(D) PW23_GROUPS4(D) PW23_GROUPS4(D) PW23_GROUPS4(D)
PW23_FUNC(mf_pw23_rows144, PW23_HEAD, PW23_GROUPS12(144), PW23_LOOP, PW23_TAIL("144"));
PW23_FUNC(mf_pw23_rows288, PW23_HEAD, PW23_GROUPS12(288), PW23_LOOP, PW23_TAIL("288"));
PW23_FUNC(mf_pw23_rows576, PW23_HEAD, PW23_GROUPS16(576), PW23_LOOP, PW23_TAIL("576"));
void mf_pw23_rows64(const uint32_t *frame, const void *w);
void mf_pw23_rows128(const uint32_t *frame, const void *w);
void mf_pw23_rows256(const uint32_t *frame, const void *w);
void mf_pw23_rows144(const uint32_t *frame, const void *w);
void mf_pw23_rows288(const uint32_t *frame, const void *w);
void mf_pw23_rows576(const uint32_t *frame, const void *w);
/* The same tiles on filters widened to int16 once per run (mf_pw23_widen: each group of 4 taps as SXTB16's two words,
 * lanes 0, 2 then 1, 3; a filter 2 D bytes, the pair's second 2 D bytes on), where conv2d_s8_dsp's plan gives the
 * room: mf_pw23w_rowsD(frame, w16). A group is two runs of five loads (both filters' words of one lane pair, the
 * three columns' of the same lanes) and six SMLADs after each: 24 estimated cycles for 24 MACs on the Cortex-M4
 * model, not 26 (no SXTB16); the widening costs about 5 cycles a word of 4 taps, once for all the pixels. */
/* both filters' lanes (r8, r9) on the three columns' (r10..r12) */
#define PW23W_MACS \
    "smlad r2, r8, r10, r2\n\t" \
    "smlad r3, r8, r11, r3\n\t" \
    "smlad r4, r8, r12, r4\n\t" \
    "smlad r5, r9, r10, r5\n\t" \
    "smlad r6, r9, r11, r6\n\t" \
    "smlad r7, r9, r12, r7\n\t"
/* the first half's loads step r0 and r1 on (post-indexed); the odd lanes' read back from them */
#define PW23W_GROUP(D) \
    "ldr r8, [r0], #8\n\t" \
    "ldr r9, [r0, #2 * " #D " - 8]\n\t" \
    "ldr r10, [r1], #24\n\t" \
    "ldr r11, [r1, #-16]\n\t" \
    "ldr r12, [r1, #-8]\n\t" \
    PW23W_MACS \
    "ldr r8, [r0, #-4]\n\t" \
    "ldr r9, [r0, #2 * " #D " - 4]\n\t" \
    "ldr r10, [r1, #-20]\n\t" \
    "ldr r11, [r1, #-12]\n\t" \
    "ldr r12, [r1, #-4]\n\t" \
    PW23W_MACS
#define PW23W_GROUPS4(D) PW23W_GROUP(D) PW23W_GROUP(D) PW23W_GROUP(D) PW23W_GROUP(D)
#define PW23W_GROUPS16(D) PW23W_GROUPS4(D) PW23W_GROUPS4(D) PW23W_GROUPS4(D) PW23W_GROUPS4(D)
/* A pair's block (pw23_wide): its biases doubled, its two filters widened (the columns doubled: the sums are 2 acc),
 * then its output constants as one LDM of six: each filter's rounding constant C, multiplier and n. The tile's start
 * and output stage read no parameter pointers from the frame, and an output is mf_few3t_rows28's 4 instructions, not
 * PW3_OUT's 6: SMMLAR adds C to SMMULR(2 acc, mult) (v), the sign term is the sum's (with no negative multiplier, v < 0
 * only where 2 acc < 0, and where v = 0 with 2 acc < 0 the -1 changes nothing: (C - 1) >> n and C >> n agree,
 * C = (2 out_off + 1) 2^(n-1)), ASR n, SSAT. About 22 estimated cycles a tile fewer on the Cortex-M4 model than
 * PW23_HEAD and PW23_TAIL. */
#define PW23W_HEAD \
    "ldr r1, [sp, #36]\n\t" \
    "ldm r0!, {r2, r5}\n\t" \
    "mov r3, r2\n\t" \
    "mov r4, r2\n\t" \
    "mov r6, r5\n\t" \
    "mov r7, r5\n\t"
/* output X of the filter whose multiplier, constant and n are M, C, N (lr a temporary) */
#define PW23W_OUT1(X, M, C, N) \
    "smmlar lr, " X ", " M ", " C "\n\t" \
    "add lr, lr, " X ", asr #31\n\t" \
    "asr " X ", lr, " N "\n\t" \
    "ssat " X ", #8, " X "\n\t"
#define PW23W_TAIL(D) \
    "add r0, r0, #2 * " #D "\n\t" \
    "ldm r0!, {r1, r8, r9, r10, r11, r12}\n\t" \
    PW23W_OUT1("r2", "r9", "r1", "r11") PW23W_OUT1("r3", "r9", "r1", "r11") PW23W_OUT1("r4", "r9", "r1", "r11") \
    PW23W_OUT1("r5", "r10", "r8", "r12") PW23W_OUT1("r6", "r10", "r8", "r12") PW23W_OUT1("r7", "r10", "r8", "r12") \
    PW23_STORES
PW23_FUNC(mf_pw23w_rows64, PW23W_HEAD, PW23W_GROUPS16(64), "", PW23W_TAIL(64));
PW23_FUNC(mf_pw23w_rows128, PW23W_HEAD, PW23W_GROUPS16(128) PW23W_GROUPS16(128), "", PW23W_TAIL(128));
PW23_FUNC(mf_pw23w_rows256, PW23W_HEAD, PW23W_GROUPS16(256), PW23_LOOP, PW23W_TAIL(256));
/* 3x3 layers on 16, 32, 64 channels (resnet8's: pw23_run3x3), a loop of 12 or 16 groups */
#define PW23W_GROUPS12(D) PW23W_GROUPS4(D) PW23W_GROUPS4(D) PW23W_GROUPS4(D)
PW23_FUNC(mf_pw23w_rows144, PW23W_HEAD, PW23W_GROUPS12(144), PW23_LOOP, PW23W_TAIL(144));
PW23_FUNC(mf_pw23w_rows288, PW23W_HEAD, PW23W_GROUPS12(288), PW23_LOOP, PW23W_TAIL(288));
PW23_FUNC(mf_pw23w_rows576, PW23W_HEAD, PW23W_GROUPS16(576), PW23_LOOP, PW23W_TAIL(576));
void mf_pw23w_rows64(const uint32_t *frame, const void *w16);
void mf_pw23w_rows128(const uint32_t *frame, const void *w16);
void mf_pw23w_rows256(const uint32_t *frame, const void *w16);
void mf_pw23w_rows144(const uint32_t *frame, const void *w16);
void mf_pw23w_rows288(const uint32_t *frame, const void *w16);
void mf_pw23w_rows576(const uint32_t *frame, const void *w16);

/* 1 when the 2 x 3 tiles' output stage serves the op: mat_mult_2cols_tiled's conditions for tile_rows_neg
 * (small == 2: the short output stage, every shift negative; a per-channel requantization with a bias, the full
 * clamp) and an even number of filters a group (opg). */
static int pw23_requant_ok(const mf_channel_requant *rq, int small, uint32_t opg) {
    return small == 2 && rq->per_channel && rq->bias != NULL && rq->lo == -128 && rq->hi == 127 && opg >= 2u &&
           (opg & 1u) == 0;
}

/* The n words of 4 int8 taps at w (n a multiple of 8) widened to int16 at w16 as mf_pw23w_rowsD reads them: each
 * word's lanes 0, 2 then 1, 3 (SXTB16's two words): mf_pw23_widen(w, w16, n / 8), 8 words a step as LDMs of 4 and
 * STMs of 8 (about 6 estimated cycles a word on the Cortex-M4 model; GCC's loop of LDRs and STRs took about 9). */
#define PW23_WIDEN4 \
    "ldm r0!, {r4, r6, r8, r10}\n\t" \
    "sxtb16 r3, r4\n\t" \
    "sxtb16 r4, r4, ror #8\n\t" \
    "sxtb16 r5, r6\n\t" \
    "sxtb16 r6, r6, ror #8\n\t" \
    "sxtb16 r7, r8\n\t" \
    "sxtb16 r8, r8, ror #8\n\t" \
    "sxtb16 r9, r10\n\t" \
    "sxtb16 r10, r10, ror #8\n\t" \
    "stm r1!, {r3-r10}\n\t"
__asm__(".pushsection .text.mf_pw23_widen,\"ax\",%progbits\n\t"
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type mf_pw23_widen, %function\n\t.thumb_func\n"
        "mf_pw23_widen:\n\t"
        "push {r4-r10}\n\t"
        "1:\n\t"
        PW23_WIDEN4 PW23_WIDEN4
        "subs r2, r2, #1\n\t"
        "bne 1b\n\t"
        "pop {r4-r10}\n\t"
        "bx lr\n\t"
        ".size mf_pw23_widen, . - mf_pw23_widen\n\t"
        ".popsection\n");
void mf_pw23_widen(const int8_t *w, int16_t *w16, uint32_t steps);

/* The three columns of pw23_rows from three patches (frame {p0, p1, p2, the input offset in both halves, groups / 2 a
 * row, rows, the bytes from a row's end to the next row's start}, the columns at cols; a row a multiple of 8 taps):
 * widen_interleaved's layout for three columns, two groups of 4 taps a step (a run of six loads, then each word's two
 * SXTAB16s, each result stored at once), the values doubled (SADD16) in mf_pw23_cols2 for mf_pw23w_rowsD. A 1x1 patch
 * (the input pixel) or an im2col one is one row; a 3x3 window inside the input three, read from the image's rows (no
 * copy). About 17.5 (29.5 doubled) estimated cycles a group of 12 values on the Cortex-M4 model against about 55 for
 * GCC's three calls' loops. */
#define PW23C_LANE(R, DBL, O) \
    "sxtab16 r0, r5, " R "\n\t" DBL("r0") "str r0, [lr, #" #O "]\n\t" \
    "sxtab16 " R ", r5, " R ", ror #8\n\t" DBL(R) "str " R ", [lr, #" #O " + 4]\n\t"
#define PW23C_SAME(R) ""
#define PW23C_DOUBLE(R) "sadd16 " R ", " R ", " R "\n\t"
#define PW23C_FUNC(NAME, DBL) \
__asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t" \
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n" \
        #NAME ":\n\t" \
        "push {r4-r11, lr}\n\t" \
        "mov lr, r1\n\t" \
        "ldr r5, [r0, #12]\n\t" \
        "ldr r6, [r0, #16]\n\t" \
        "ldr r1, [r0, #20]\n\t" \
        "ldr r7, [r0, #24]\n\t" \
        "ldm r0, {r2-r4}\n\t" \
        "push {r1, r6, r7}\n\t" \
        "2:\n\t" \
        "1:\n\t" \
        "ldr r7, [r2], #4\n\t" \
        "ldr r8, [r3], #4\n\t" \
        "ldr r9, [r4], #4\n\t" \
        "ldr r10, [r2], #4\n\t" \
        "ldr r11, [r3], #4\n\t" \
        "ldr r12, [r4], #4\n\t" \
        PW23C_LANE("r7", DBL, 0) PW23C_LANE("r8", DBL, 8) PW23C_LANE("r9", DBL, 16) \
        PW23C_LANE("r10", DBL, 24) PW23C_LANE("r11", DBL, 32) PW23C_LANE("r12", DBL, 40) \
        "add lr, lr, #48\n\t" \
        "subs r6, r6, #1\n\t" \
        "bne 1b\n\t" \
        "ldr r0, [sp, #8]\n\t" \
        "ldr r6, [sp, #4]\n\t" \
        "add r2, r2, r0\n\t" \
        "add r3, r3, r0\n\t" \
        "add r4, r4, r0\n\t" \
        "ldr r0, [sp]\n\t" \
        "subs r0, r0, #1\n\t" \
        "str r0, [sp]\n\t" \
        "bne 2b\n\t" \
        "add sp, sp, #12\n\t" \
        "pop {r4-r11, pc}\n\t" \
        ".size " #NAME ", . - " #NAME "\n\t" \
        ".popsection\n")
PW23C_FUNC(mf_pw23_cols, PW23C_SAME);
PW23C_FUNC(mf_pw23_cols2, PW23C_DOUBLE);
void mf_pw23_cols(const uint32_t *frame, int16_t *cols);
void mf_pw23_cols2(const uint32_t *frame, int16_t *cols);

/* Three pixels' columns widened from their patches (mf_pw23_cols' frame) into cols, doubled for the widened
 * filters, then the filter pairs of `rows` (even) by mf_pw23_rowsD on the int8 filters w, or where w16 (not
 * NULL) by mf_pw23w_rowsD on their blocks (pw23_wide); outputs of column i from out[i]. The caller checked
 * pw23_requant_ok. Inlined in both callers (as a call of its own: resnet8 +30 k estimated cycles). */
static inline __attribute__((always_inline)) void pw23_rows(const uint32_t *patches, int16_t *cols, const int8_t *w,
                                                           const int16_t *w16, uint32_t rows, uint32_t depth,
                                                           const mf_channel_requant *rq, uint32_t oc0,
                                                           int8_t *const out[3]) {
    if (w16 != NULL) {
        mf_pw23_cols2(patches, cols);
    } else {
        mf_pw23_cols(patches, cols);
    }
    const uint32_t end = w16 != NULL ? (uint32_t)(uintptr_t)(w16 + (size_t)rows / 2u * (2u * depth + 16u))
                                     : (uint32_t)(uintptr_t)(w + (size_t)rows * depth);
    const uint32_t frame[10] = {(uint32_t)(uintptr_t)(rq->bias + oc0), (uint32_t)(uintptr_t)(rq->mult + oc0),
                                (uint32_t)(uintptr_t)(rq->shift + oc0), (uint32_t)(uintptr_t)out[0],
                                (uint32_t)(uintptr_t)out[1], (uint32_t)(uintptr_t)out[2],
                                (uint32_t)(2 * rq->out_off + 1), end,
                                (uint32_t)(uintptr_t)(cols + 3u * depth), (uint32_t)(uintptr_t)cols};
    /* [widened][depth 64, 128, 256, 144, 288, 576] */
    static void (*const rows_of[2][6])(const uint32_t *, const void *) = {
        {mf_pw23_rows64, mf_pw23_rows128, mf_pw23_rows256, mf_pw23_rows144, mf_pw23_rows288, mf_pw23_rows576},
        {mf_pw23w_rows64, mf_pw23w_rows128, mf_pw23w_rows256, mf_pw23w_rows144, mf_pw23w_rows288, mf_pw23w_rows576}};
    const int d = depth == 64u ? 0 : depth == 128u ? 1 : depth == 256u ? 2 : depth == 144u ? 3 : depth == 288u ? 4 : 5;
    rows_of[w16 != NULL][d](frame, w16 != NULL ? (const void *)w16 : w);
}

/* mf_pw23w_rowsD's blocks for the oc_n filters w (depth a multiple of 16), a filter pair's 2 depth + 16 halfwords
 * at dst: its biases doubled and its filters widened (mf_pw23_widen): with the columns doubled (mf_pw23_cols2)
 * the sums are 2 acc (|acc| < 2^30: the short output stage); then each filter's rounding constant
 * (2 out_off + 1) << (n - 1) (PW3_OUT's K2 asr 1), multiplier and n = -shift (pw23_requant_ok: n in [1, 22]).
 * Once per run, for every pixel triple. */
static void pw23_wide(const int8_t *w, const mf_channel_requant *rq, uint32_t oc_n, uint32_t depth, int16_t *dst) {
    const uint32_t k = (uint32_t)(2 * rq->out_off + 1);
    for (uint32_t f = 0; f + 2u <= oc_n; f += 2u, w += 2u * depth) {
        int32_t *block = (int32_t *)(void *)dst;
        block[0] = mf_wrap32(2u * (uint32_t)rq->bias[f]), block[1] = mf_wrap32(2u * (uint32_t)rq->bias[f + 1]);
        mf_pw23_widen(w, dst + 4, depth / 16u);
        int32_t *h = block + 2 + depth;
        const int32_t n0 = -rq->shift[f], n1 = -rq->shift[f + 1];
        h[0] = mf_wrap32(k << (n0 - 1)), h[1] = mf_wrap32(k << (n1 - 1)), h[2] = rq->mult[f], h[3] = rq->mult[f + 1];
        h[4] = n0, h[5] = n1;
        dst += 2u * depth + 16u;
    }
}

/* A pointwise layer (1x1, no padding: the patch is the input pixel) at 64, 128 or 256 channels, with
 * conv2d_s8_pw23's plan or more, by pw23_rows where pw23_requant_ok: each image's (and
 * group's) pixels three at a time, their columns widened from the input pixels into the scratch; the last one or
 * two pixels in a triple of their own with the last pixel repeated (its outputs written again, the same bytes).
 * Returns 1 when it ran the op, else 0 (run_fast's paths). Apart from run_fast, whose code GCC compiled with more
 * estimated cycles on the other layers with this path inside (resnet8's 3x3 layers, +20 k). */
static __attribute__((noinline)) int pw23_run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    mf_call_input(c, 1, &w);
    const uint32_t depth = w.shape[3];
    /* the shape, depth and scratch first: a layer without the plan (DS-CNN's, at the arena's peak) pays one call */
    if (w.shape[1] != 1u || w.shape[2] != 1u || (depth != 64u && depth != 128u && depth != 256u) ||
        c->scratch_bytes < mf_scratch_conv2d_s8_pw23(depth, 1u)) {
        return 0;
    }
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    const uint32_t oh = o.shape[1], ow = o.shape[2], pixels = oh * ow, groups = x.shape[3] / depth;
    const uint32_t oc_n = w.shape[0], opg = oc_n / groups;
    if (pd[0] != 0 || pd[1] != 0 || ((int32_t)oh - 1) * st[0] >= (int32_t)x.shape[1] ||
        ((int32_t)ow - 1) * st[1] >= (int32_t)x.shape[2]) {
        return 0;
    }
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int small = mf_dsp_small_ok(&rq, oc_n, depth) ? 1 + dsp_shifts_negative(&rq, oc_n) : 0;
    if (!pw23_requant_ok(&rq, small, opg)) return 0;
    const int32_t in_off = mf_attr_int(c, A_IN_OFF), off16 = mf_pack_off16(in_off);
    const size_t ps = o.pitch ? o.pitch : oc_n, xs = x.shape[3];
    int16_t *cols = (int16_t *)c->scratch;
    /* with conv2d_s8_dsp's plan, every filter widened once (the scratch after the columns' 6 depth bytes); its
     * output stage takes the sum's sign for the product's, so no multiplier may be negative */
    int16_t *w16 = NULL;
    if (c->scratch_bytes >= mf_scratch_conv2d_s8_dsp(depth, oc_n, 1u) && rq_mults_nonneg(&rq, oc_n)) {
        w16 = cols + 3u * depth;
        pw23_wide((const int8_t *)w.data, &rq, oc_n, depth, w16);
    }
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * xs;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * ps;
        for (uint32_t grp = 0; grp < groups; grp++) {
            const uint32_t oc0 = grp * opg;
            for (uint32_t p0 = 0; p0 < pixels; p0 += 3u) {
                int8_t *out[3];
                uint32_t frame[7] = {0, 0, 0, (uint32_t)off16, depth / 8u, 1u, 0u};
                for (uint32_t i = 0; i < 3; i++) {
                    const uint32_t p = p0 + i < pixels ? p0 + i : pixels - 1u;
                    const uint32_t iy = p / ow * (uint32_t)st[0], ix = p % ow * (uint32_t)st[1];
                    frame[i] = (uint32_t)(uintptr_t)(image + ((size_t)iy * x.shape[2] + ix) * xs + grp * depth);
                    out[i] = out_image + (size_t)p * ps + oc0;
                }
                pw23_rows(frame, cols, (const int8_t *)w.data + (size_t)oc0 * depth,
                          w16 != NULL ? w16 + (size_t)oc0 / 2u * (2u * depth + 16u) : NULL, opg, depth, &rq, oc0,
                          out);
            }
        }
    }
    return 1;
}

/* A 3x3 layer on 16, 32 or 64 channels (144, 288, 576 taps; one group, an even filter count, pw23_run's
 * requantization) by the 2 x 3 tiles: on its filters widened (mf_pw23w_rowsD) where conv2d_s8_dsp's plan gives the
 * room (the six patches' columns, three int8 patches, the filter pairs' blocks) and no multiplier is negative,
 * else on the int8 filters (mf_pw23_rowsD) with conv2d_s8_pw23's (the columns and the patches): windows inside
 * the input read from its rows, the others by im2col_s8 (padding, strides, dilation), three at a time widened by
 * mf_pw23_cols2 / mf_pw23_cols. Against the 3 x 2 tiles with the pairs of the filters left (resnet8's 16, 32
 * filters: 5 triples and a filter, 10 and two), no filter left over and 24 estimated cycles a group of 24 MACs,
 * not 27. Returns 1 when it ran the op, else 0. */
static __attribute__((noinline)) int pw23_run3x3(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    mf_call_input(c, 1, &w);
    const uint32_t depth = w.shape[1] * w.shape[2] * w.shape[3], oc_n = w.shape[0];
    if (w.shape[1] != 3u || w.shape[2] != 3u || (depth != 144u && depth != 288u && depth != 576u) ||
        c->scratch_bytes < mf_scratch_conv2d_s8_pw23(depth, 9u)) {
        return 0;
    }
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (x.shape[3] != w.shape[3]) return 0; /* one group */
    conv_geom g;
    mf_attr_conv_window(c, A_STRIDE, g.st, g.pd, g.dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int small = mf_dsp_small_ok(&rq, oc_n, depth) ? 1 + dsp_shifts_negative(&rq, oc_n) : 0;
    if (!pw23_requant_ok(&rq, small, oc_n)) return 0;
    const int32_t in_off = mf_attr_int(c, A_IN_OFF), off16 = mf_pack_off16(in_off);
    g.h = (int32_t)x.shape[1], g.w = (int32_t)x.shape[2], g.ch = x.shape[3], g.wc = w.shape[3], g.kh = 3u, g.kw = 3u;
    g.zero_point = (int8_t)(-in_off);
    g.contiguous_rows = g.dl[1] == 1;
    g.ps = o.pitch ? o.pitch : oc_n;
    const uint32_t ow = o.shape[2], pixels = o.shape[1] * ow, row_bytes = 3u * g.wc;
    /* from a window row's end to the next row's start in the image */
    const uint32_t row_skip = (uint32_t)g.dl[0] * (uint32_t)g.w * g.ch - row_bytes;
    int16_t *cols = (int16_t *)c->scratch;
    int8_t *patches = (int8_t *)c->scratch + 6u * depth; /* three int8 patches, then the blocks */
    /* the filters widened where conv2d_s8_dsp's plan gives the room and no multiplier is negative (pw23_run's) */
    int16_t *w16 = NULL;
    if (c->scratch_bytes >= mf_scratch_conv2d_s8_dsp(depth, oc_n, 9u) && rq_mults_nonneg(&rq, oc_n)) {
        w16 = (int16_t *)(void *)(patches + 3u * depth);
        pw23_wide((const int8_t *)w.data, &rq, oc_n, depth, w16);
    }
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        g.x = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g.ch;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * g.ps;
        for (uint32_t p0 = 0; p0 < pixels; p0 += 3u) {
            int8_t *out[3];
            const int8_t *at[3];
            int inside = g.contiguous_rows && (row_bytes & 7u) == 0;
            for (uint32_t i = 0; i < 3; i++) {
                const uint32_t p = p0 + i < pixels ? p0 + i : pixels - 1u;
                const int32_t oy = (int32_t)(p / ow), ox = (int32_t)(p % ow);
                const int32_t y0 = oy * g.st[0] - g.pd[0], x0 = ox * g.st[1] - g.pd[1];
                inside = inside && y0 >= 0 && x0 >= 0 && y0 + 2 * g.dl[0] < g.h && x0 + 2 < g.w;
                at[i] = g.x + ((size_t)(y0 < 0 ? 0 : y0) * (size_t)g.w + (size_t)(x0 < 0 ? 0 : x0)) * g.ch;
                out[i] = out_image + (size_t)p * g.ps;
            }
            /* the three windows inside the input: read from its rows; else each patch by im2col_s8 */
            uint32_t frame[7] = {(uint32_t)(uintptr_t)at[0], (uint32_t)(uintptr_t)at[1], (uint32_t)(uintptr_t)at[2],
                                 (uint32_t)off16, row_bytes / 8u, 3u, row_skip};
            if (!inside) {
                for (uint32_t i = 0; i < 3; i++) {
                    const uint32_t p = p0 + i < pixels ? p0 + i : pixels - 1u;
                    im2col_s8(&g, (int32_t)(p / ow), (int32_t)(p % ow), patches + i * depth, 0);
                    frame[i] = (uint32_t)(uintptr_t)(patches + i * depth);
                }
                frame[4] = depth / 8u, frame[5] = 1u, frame[6] = 0u;
            }
            pw23_rows(frame, cols, (const int8_t *)w.data, w16, oc_n, depth, &rq, 0, out);
        }
    }
    return 1;
}
#endif

/* The depths of an mf_pw3_rows<depth>. */
static inline int pw3_depth(uint32_t depth) {
    return depth == 32u || depth == 64u || depth == 128u || depth == 256u || depth == 144u || depth == 288u ||
           depth == 576u;
}

/* The filter triples of `rows` (rows / 3 of them) by mf_pw3_rows<depth> where there is one (the frame as
 * dsp_tile_rows_neg's); returns the rows done (0: none at this depth). */
static uint32_t pw3_rows(const int16_t *cols, const int8_t *w, uint32_t rows, uint32_t depth,
                         const mf_channel_requant *rq, uint32_t oc0, int8_t *out0, int8_t *out1) {
    const uint32_t triples = rows / 3u;
    if (triples == 0 || !pw3_depth(depth)) return 0;
    /* out1 == out0: a last odd pixel (mf_pw3s_rows, the depth in out1's place) */
    const uint32_t frame[9] = {(uint32_t)(uintptr_t)(rq->bias + oc0), (uint32_t)(uintptr_t)(rq->mult + oc0),
                               (uint32_t)(uintptr_t)(rq->shift + oc0), (uint32_t)(uintptr_t)out0,
                               out1 == out0 ? depth : (uint32_t)(uintptr_t)out1, (uint32_t)(2 * rq->out_off + 1),
                               triples, (uint32_t)(uintptr_t)(cols + 2u * depth + PW3_X_AHEAD),
                               (uint32_t)(uintptr_t)cols};
    if (out1 == out0) {
        mf_pw3s_rows(frame, w);
    } else if (depth == 64u) {
        mf_pw3_rows64(frame, w);
    } else if (depth == 128u) {
        mf_pw3_rows128(frame, w);
    } else if (depth == 256u) {
        mf_pw3_rows256(frame, w);
    } else if (depth == 144u) {
        mf_pw3_rows144(frame, w);
    } else if (depth == 288u) {
        mf_pw3_rows288(frame, w);
    } else if (depth == 576u) {
        mf_pw3_rows576(frame, w);
    } else {
        mf_pw3_rows32(frame, w);
    }
    return 3u * triples;
}

static inline __attribute__((always_inline)) void dsp_tile_rows_neg(const int16_t *cols, const int8_t *w,
                                                                   uint32_t pairs, uint32_t depth,
                                                                   const mf_channel_requant *rq, uint32_t oc0,
                                                                   int8_t *out0, int8_t *out1) {
    /* the asm's frame: bias, mult, shift pointers, outputs, 2 out_off + 1, pairs, the columns' end, start */
    const uint32_t frame[9] = {(uint32_t)(uintptr_t)(rq->bias + oc0), (uint32_t)(uintptr_t)(rq->mult + oc0),
                               (uint32_t)(uintptr_t)(rq->shift + oc0), (uint32_t)(uintptr_t)out0,
                               (uint32_t)(uintptr_t)out1, (uint32_t)(2 * rq->out_off + 1), pairs,
                               (uint32_t)(uintptr_t)(cols + 2u * depth), (uint32_t)(uintptr_t)cols};
    const uint32_t *t = frame;
    int32_t a00, a01, a10, a11, va, vb, u, xa, xb;
    const int8_t *wp = w;
    const int16_t *xp;
    const int32_t dstep = (int32_t)depth - 4;
#define DSP_TILE_GROUPS4 DSP_TILE_GROUP DSP_TILE_GROUP DSP_TILE_GROUP DSP_TILE_GROUP
    if (DSP_PW_RUNS && depth == 64u) { /* the usual 64 channels */
#if DSP_PW_RUNS
        mf_pw_rows64(frame, w);
#endif
    } else if (!DSP_PW_RUNS && depth == 64u) { /* the same with DSP_TILE_GROUP: 16 groups, no loop */
#if !DSP_PW_RUNS
        DSP_TILE_ROWS_ASM(DSP_TILE_GROUPS4 DSP_TILE_GROUPS4 DSP_TILE_GROUPS4 DSP_TILE_GROUPS4, "");
#endif
    } else if (depth == 16u || depth == 8u) { /* shallow pointwise layers: no loop */
#if DSP_PW_RUNS
        if (depth == 16u) {
            mf_pw_rows16(frame, w);
        } else {
            mf_pw_rows8(frame, w);
        }
#else
        if (depth == 16u) {
            DSP_TILE_ROWS_ASM(DSP_TILE_GROUPS4, "");
        } else {
            DSP_TILE_ROWS_ASM(DSP_TILE_GROUP DSP_TILE_GROUP, "");
        }
#endif
    } else if ((depth & 63u) == 0) { /* 16 groups an iteration */
        DSP_TILE_ROWS_ASM(DSP_TILE_GROUPS4 DSP_TILE_GROUPS4 DSP_TILE_GROUPS4 DSP_TILE_GROUPS4, DSP_ROWS_LOOP);
    } else if ((depth & 15u) == 0) {
        DSP_TILE_ROWS_ASM(DSP_TILE_GROUP DSP_TILE_GROUP DSP_TILE_GROUP DSP_TILE_GROUP, DSP_ROWS_LOOP);
    } else if (DSP_PW_RUNS && depth == 40u) { /* a 10 x 4 first layer (KWS) */
#if DSP_PW_RUNS
        mf_pw_rows40(frame, w);
#endif
    } else if (depth % 40u == 0) { /* 10 groups an iteration */
        DSP_TILE_ROWS_ASM(DSP_TILE_GROUPS4 DSP_TILE_GROUPS4 DSP_TILE_GROUP DSP_TILE_GROUP, DSP_ROWS_LOOP);
    } else {
        DSP_TILE_ROWS_ASM(DSP_TILE_GROUP DSP_TILE_GROUP, DSP_ROWS_LOOP);
    }
    (void)a00, (void)a01, (void)a10, (void)a11, (void)wp, (void)xp, (void)va, (void)vb, (void)t, (void)u;
    (void)xa, (void)xb;
}

/* The filters of mat_mult_2cols_tiled's shorter output stage: their triples by pw3_rows where it serves the
 * depth, then the pairs left by dsp_tile_rows_neg; returns the rows done. A function of its own: inlined, its
 * calls left GCC too few registers for dsp_tile_out_asm in the same function at -O1. */
static __attribute__((noinline)) uint32_t tile_rows_neg(const int16_t *cols, const int8_t *w, uint32_t rows,
                                                        uint32_t depth, const mf_channel_requant *rq, uint32_t oc0,
                                                        int8_t *out0, int8_t *out1) {
    /* one filter past the triples: two pairs instead where DSP_PW_RUNS (the C loop's single filter takes 17
     * estimated cycles a group of 8 MACs on the Cortex-M4 model: resnet8 18.80 -> 18.61 M; on the Cortex-M7's the
     * pairs would cost more than it) */
    const uint32_t pw3 = DSP_PW_RUNS && rows % 3u == 1u && rows >= 4u ? rows - 4u : rows;
    const uint32_t done = pw3_rows(cols, w, pw3, depth, rq, oc0, out0, out1);
    if (rows - done >= 2) {
        dsp_tile_rows_neg(cols, w + (size_t)done * depth, (rows - done) / 2u, depth, rq, oc0 + done, out0 + done,
                          out1 + done);
    }
#if !DSP_PW_RUNS
    if ((rows - done) & 1u) { /* the last filter (pw3_depth: a multiple of 16 taps) */
        const uint32_t f = rows - 1u;
        const uint32_t frame[9] = {(uint32_t)(uintptr_t)(rq->bias + oc0 + f), (uint32_t)(uintptr_t)(rq->mult + oc0 + f),
                                   (uint32_t)(uintptr_t)(rq->shift + oc0 + f), (uint32_t)(uintptr_t)(out0 + f),
                                   (uint32_t)(uintptr_t)(out1 + f), (uint32_t)(2 * rq->out_off + 1), 1u,
                                   (uint32_t)(uintptr_t)(cols + 2u * depth + 8u), (uint32_t)(uintptr_t)cols};
        mf_pw1_rows(frame, w + (size_t)f * depth);
        return rows;
    }
#endif
    return done + ((rows - done) & ~1u);
}

/* mat_mult_2cols_tiled's loop; `full`: a constant, dsp_tile_clamp's (full: the asm output stage). */
static inline __attribute__((always_inline)) void tiled_rows(const int16_t *cols, const int8_t *w, uint32_t pairs,
                                                            uint32_t depth, const mf_channel_requant *rq, uint32_t oc0,
                                                            int8_t *out0, int8_t *out1, int full) {
    const int32_t out_off = rq->out_off, lo = rq->lo, hi = rq->hi;
    const int32_t *bias = rq->bias + oc0, *mult = rq->mult + oc0;
    const mf_shift *shift = rq->shift + oc0;
    if (full) {
        for (uint32_t r = 0; r < pairs; r++, w += 2u * depth) {
            int32_t acc[4];
            dsp_tile_2x2(cols, w, depth, depth, acc);
            dsp_tile_out_asm(acc[0], acc[1], acc[2], acc[3], &bias, &mult, &shift, &out0, &out1, out_off);
        }
        return;
    }
    for (uint32_t r = 0; r < pairs; r++, w += 2u * depth, out0 += 2, out1 += 2) {
        int32_t acc[4];
        dsp_tile_2x2(cols, w, depth, depth, acc);
        for (uint32_t f = 0; f < 2; f++) {
            const int32_t b = *bias++, m = *mult++, n = -*shift++;
            const int32_t half = (int32_t)((1u << n) >> 1), sign = (-half) >> 31;
            const int32_t v0 = dsp_tile_out(acc[2 * f] + b, m, n, sign, half) + out_off;
            const int32_t v1 = dsp_tile_out(acc[2 * f + 1] + b, m, n, sign, half) + out_off;
            out0[f] = dsp_tile_clamp(v0, lo, hi, full);
            out1[f] = dsp_tile_clamp(v1, lo, hi, full);
        }
    }
}

/* mat_mult_2cols for two columns when every output takes the short requantization (small), the
 * requantization is per channel with a bias and depth is a multiple of 8: the 2 x 2 tiles' sums by
 * DSP_TILE_ASM, each filter's parameters read once for its two outputs. Returns the rows done (the
 * even ones; 0 when it does not apply). */
static uint32_t mat_mult_2cols_tiled(const int16_t *cols, const int8_t *w, uint32_t rows, uint32_t depth,
                                     const mf_channel_requant *rq, uint32_t oc0, int8_t *out0, int8_t *out1,
                                     int neg) {
    if (!rq->per_channel || rq->bias == NULL) return 0;
    if (rq->lo == -128 && rq->hi == 127) {
        if (neg && pw3_depth(depth)) {
            return tile_rows_neg(cols, w, rows, depth, rq, oc0, out0, out1);
        } else if (neg) { /* no call at the other depths */
            if (rows >= 2) dsp_tile_rows_neg(cols, w, rows / 2u, depth, rq, oc0, out0, out1);
        } else {
            tiled_rows(cols, w, rows / 2u, depth, rq, oc0, out0, out1, 1);
        }
    } else {
        tiled_rows(cols, w, rows / 2u, depth, rq, oc0, out0, out1, 0);
    }
    return rows & ~1u;
}
#endif

/* Outputs of `rows` filters (weights w, row after row of `depth`) for a pair of interleaved widened
 * patches (word-aligned); out1 NULL: the second column repeats the first, its outputs unwritten. */
static void mat_mult_2cols(const int16_t *cols, const int8_t *w, uint32_t rows, uint32_t depth,
                           const mf_channel_requant *rq, int small, uint32_t oc0, int8_t *out0, int8_t *out1) {
    const uint32_t d4 = depth & ~3u;
    const int16_t *tail = cols + 2u * d4; /* column 0's last values; column 1's at tail + 4 */
    uint32_t r = 0;
#if defined(DSP_TILE)
    if (small && out1 != NULL && d4 == depth && depth != 0 && (depth & 7u) == 0) {
        r = mat_mult_2cols_tiled(cols, w, rows, depth, rq, oc0, out0, out1, small == 2);
    }
#endif
    for (; r + 2 <= rows; r += 2) {
        const int8_t *wa = w + (size_t)r * depth + d4, *wb = wa + depth; /* ends of the rows' groups */
        const int32_t *x = (const int32_t *)(const void *)cols;
        int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0; /* a<filter><column> */
        int32_t i = -(int32_t)d4;
#if defined(DSP_TILE)
        if (d4 != 0 && (d4 & 7u) == 0) {
            int32_t acc[4];
            dsp_tile_2x2(cols, w + (size_t)r * depth, depth, d4, acc);
            a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
            i = 0;
        }
#endif
        /* a negative index running up to 0: the loop's add sets the flags, no end pointer to hold */
        for (; i != 0; i += 4) {
            const int32_t va = mf_ld32(wa + i), vb = mf_ld32(wb + i);
            const int32_t wa02 = mf_sxtb16(va), wa13 = mf_sxtb16_ror8(va);
            const int32_t wb02 = mf_sxtb16(vb), wb13 = mf_sxtb16_ror8(vb);
            const int32_t x0a = x[0], x0b = x[1], x1a = x[2], x1b = x[3];
            x += 4;
            a00 = mf_smlad(wa02, x0a, a00);
            a10 = mf_smlad(wb02, x0a, a10);
            a00 = mf_smlad(wa13, x0b, a00);
            a10 = mf_smlad(wb13, x0b, a10);
            a01 = mf_smlad(wa02, x1a, a01);
            a11 = mf_smlad(wb02, x1a, a11);
            a01 = mf_smlad(wa13, x1b, a01);
            a11 = mf_smlad(wb13, x1b, a11);
        }
        for (uint32_t t = 0; t < depth - d4; t++) {
            const int32_t pa = wa[t], pb = wb[t];
            a00 += tail[t] * pa;
            a10 += tail[t] * pb;
            a01 += tail[4 + t] * pa;
            a11 += tail[4 + t] * pb;
        }
        const mf_dsp_channel ca = mf_dsp_channel_of(rq, oc0 + r), cb = mf_dsp_channel_of(rq, oc0 + r + 1);
        out0[r] = channel_out_s8(rq, &ca, small, a00);
        out0[r + 1] = channel_out_s8(rq, &cb, small, a10);
        if (out1 != NULL) {
            out1[r] = channel_out_s8(rq, &ca, small, a01);
            out1[r + 1] = channel_out_s8(rq, &cb, small, a11);
        }
    }
    if (r < rows) {
        const int8_t *wa = w + (size_t)r * depth;
        const int32_t *x = (const int32_t *)(const void *)cols;
        int32_t a0 = 0, a1 = 0;
        for (uint32_t i = d4 >> 2; i > 0; i--) {
            const int32_t va = mf_ld32(wa);
            wa += 4;
            const int32_t wa02 = mf_sxtb16(va), wa13 = mf_sxtb16_ror8(va);
            a0 = mf_smlad(wa02, x[0], a0);
            a0 = mf_smlad(wa13, x[1], a0);
            a1 = mf_smlad(wa02, x[2], a1);
            a1 = mf_smlad(wa13, x[3], a1);
            x += 4;
        }
        for (uint32_t t = 0; t < depth - d4; t++) {
            a0 += tail[t] * wa[t];
            a1 += tail[4 + t] * wa[t];
        }
        out0[r] = mf_channel_requant_s8_inline(rq, oc0 + r, a0);
        if (out1 != NULL) out1[r] = mf_channel_requant_s8_inline(rq, oc0 + r, a1);
    }
}

#else /* MVE */
#define NCOLS 4u
#define MVE_TABLE 64u /* filters per output-stage table (768 bytes of run_fast's stack) */

/* A filter's output-stage constants, as the rows loop reads them: its bias with the input offset's
 * term folded in (bias + in_off * sum(w), wrapping as the accumulation does), multiplier and shift
 * (the tensor's for every filter when per tensor). */
typedef struct {
    int32_t bias, mult, shift;
} mve_filter;

/* The requantization when every shift of the op is negative: MVE_REQ_GENERAL's (mf_conv_mve.h) without the left
 * shift and the tests. */
#define MVE_REQ_NEGATIVE                                                                              \
    "   vqrdmulh.s32 q3, q3, %[a2]\n"                                                              \
    "   vshr.s32     q0, q3, #31\n"                                                                \
    "   vqadd.s32    q3, q3, q0\n"                                                                 \
    "   vrshl.s32    q3, %[a3]\n"

/* For each of `rows` filters (weights from w, row after row of depth bytes, the pointer moved on by
 * skip after each row's loop; their constants from tbl): the four pixels' accumulators start at the
 * filter's bias, then the four interleaved columns' dot products (one tail-predicated loop of 16
 * lanes, WLSTP/LETP), then the output stage on the four pixels as one vector (REQ), + output offset,
 * clamp, a byte scatter store of the lanes in P0 to out + offsets, out + 1 for the next filter. No
 * state in memory but the table: every operand stays in a register. */
#define MVE_ROWS_ASM(REQ)                                                                             \
    __asm__ volatile("   vmsr         p0, %[cp]\n"                                                     \
                     "3: ldr          %[a0], [%[tbl]], #12\n"                                          \
                     "   mov          %[a1], %[a0]\n"                                                  \
                     "   mov          %[a2], %[a0]\n"                                                  \
                     "   mov          %[a3], %[a0]\n"                                                  \
                     "   mov          %[cp], %[cols]\n"                                                \
                     "   wlstp.8      lr, %[n], 1f\n"                                                  \
                     "2: vldrb.8      q0, [%[w]], #16\n"                                               \
                     "   vldrb.8      q1, [%[cp]], #64\n"                                              \
                     "   vmladava.s8  %[a0], q0, q1\n"                                                 \
                     "   vldrb.8      q2, [%[cp], #-48]\n"                                             \
                     "   vmladava.s8  %[a1], q0, q2\n"                                                 \
                     "   vldrb.8      q1, [%[cp], #-32]\n"                                             \
                     "   vmladava.s8  %[a2], q0, q1\n"                                                 \
                     "   vldrb.8      q2, [%[cp], #-16]\n"                                             \
                     "   vmladava.s8  %[a3], q0, q2\n"                                                 \
                     "   letp         lr, 2b\n"                                                        \
                     "1: add          %[w], %[w], %[skip]\n"                                           \
                     "   vmov         q3[2], q3[0], %[a0], %[a2]\n"                                    \
                     "   vmov         q3[3], q3[1], %[a1], %[a3]\n"                                    \
                     "   ldrd         %[a2], %[a3], [%[tbl], #-8]\n" REQ                               \
                     "   vadd.i32     q3, q3, %q[ooff]\n"                                              \
                     "   vmax.s32     q3, q3, %q[lo]\n"                                                \
                     "   vmin.s32     q3, q3, %q[hi]\n"                                                \
                     "   vpst\n"                                                                       \
                     "   vstrbt.32    q3, [%[out], %q[offs]]\n"                                        \
                     "   adds         %[out], %[out], #1\n"                                            \
                     "   subs         %[rows], %[rows], #1\n"                                          \
                     "   bne          3b\n"                                                            \
                     : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3),                \
                       [cp] "+&r"(cp), [tbl] "+&r"(tbl), [w] "+&r"(w), [out] "+&r"(out), [rows] "+&r"(rows) \
                     : [n] "r"(depth), [cols] "r"(cols), [skip] "r"(skip),                              \
                       [lo] "w"(lo), [hi] "w"(hi), [offs] "w"(pixel_offsets), [ooff] "w"(ooff)         \
                     : "q0", "q1", "q2", "q3", "lr", "memory", "cc")

/* The rows loop's per-run constants (mat_mult_4cols). */
typedef struct {
    int32x4_t lo, hi, ooff; /* activation range, output offset */
    uint32x4_t offs;        /* lane i's byte offset among the four pixels' outputs, in the VMOVs' lane order */
    const mve_filter *tbl;  /* the filters' constants (mve_fill_table), one entry per row */
    int32_t skip;           /* depth - 16 * ceil(depth / 16): w's step after a row's loop */
    uint32_t depth, rows, ps; /* ps: output bytes from one pixel to the next (conv_geom's) */
    int negative;           /* per channel and every shift negative: the shorter requantization */
} mve_mm;

static void mve_mm_init(mve_mm *m, const mf_channel_requant *rq, uint32_t depth, uint32_t oc_n, uint32_t ps,
                        mve_filter *tbl) {
    m->lo = vdupq_n_s32(rq->lo), m->hi = vdupq_n_s32(rq->hi), m->ooff = vdupq_n_s32(rq->out_off);
    m->offs = vreinterpretq_u32_s32(mf_mve_lanes4(0, (int32_t)ps, (int32_t)(2u * ps), (int32_t)(3u * ps)));
    m->skip = (int32_t)depth - (int32_t)((depth + 15u) & ~15u); /* the loop moves w on 16 * ceil(depth / 16) */
    m->depth = depth, m->rows = 0, m->ps = ps, m->tbl = tbl;
    int negative = rq->per_channel != 0;
    for (uint32_t i = 0; negative && i < oc_n; i++) negative = rq->shift[i] < 0;
    m->negative = negative;
}

/* The table of filters oc0 .. oc0 + n - 1 (weights w, row after row). With an input offset,
 * sum((x + off) * w) = sum(x * w) + off * sum(w): the second term is the filter's own, added to its
 * bias here once per op instead of summing the weights in every block's loop; padding taps hold the
 * input zero point (x + off = 0), so the sum over every tap stays right. All in int32 arithmetic that
 * wraps as the loop's accumulation (|sum(w)| <= 2^23, |off| <= 128). */
static void mve_fill_table(mve_filter *t, const mf_channel_requant *rq, int32_t in_off, const int8_t *w,
                           uint32_t oc0, uint32_t n, uint32_t depth) {
    for (uint32_t f = 0; f < n; f++, w += depth) {
        uint32_t b = (uint32_t)mf_rq_bias(rq, oc0 + f);
        if (in_off != 0) {
            int32_t s = 0;
            for (uint32_t k = 0; k < depth; k += 16u) {
                const mve_pred16_t p = vctp8q(depth - k);
                s = vaddvaq_p_s8(s, vldrbq_z_s8(w + k, p), p);
            }
            b += (uint32_t)in_off * (uint32_t)s;
        }
        t[f].bias = (int32_t)b, t[f].mult = mf_rq_mult(rq, oc0 + f); /* mf_rq_*: conv2d_s4's compact ones too */
        t[f].shift = rq->shift[rq->per_channel ? oc0 + f : 0u];
    }
}

/* Outputs of m->rows filters (weights w, row after row; their constants m->tbl) for a block of four
 * interleaved columns (the patches of four pixels; columns past n_cols hold stale bytes and are not
 * stored). The four outputs of a filter share its requantization: one vector requantize, one scatter
 * store (the outputs of consecutive pixels lie m->ps bytes apart). */
static __attribute__((noinline)) void mat_mult_4cols(const mve_mm *m, const int8_t *cols, uint32_t n_cols,
                                                     const int8_t *w, int8_t *out) {
    if (m->rows == 0) return;
    const int32x4_t lo = m->lo, hi = m->hi, ooff = m->ooff;
    const uint32x4_t pixel_offsets = m->offs;
    const uint32_t depth = m->depth;
    const int32_t skip = m->skip;
    const mve_filter *tbl = m->tbl;
    /* the store predicate (the lanes whose offsets belong to the n_cols pixels), then the column pointer */
    uint32_t cp = vcmphiq_u32(vdupq_n_u32(n_cols * m->ps), pixel_offsets);
    uint32_t rows = m->rows;
    int32_t a0, a1, a2, a3;
#if defined(__OPTIMIZE__) /* an unoptimized build has too few registers for the asm: fast_path_fits says no */
    if (m->negative) {
        MVE_ROWS_ASM(MVE_REQ_NEGATIVE);
    } else {
        MVE_ROWS_ASM(MVE_REQ_GENERAL);
    }
#else
    (void)cp, (void)rows, (void)w, (void)out, (void)lo, (void)hi, (void)ooff, (void)depth, (void)skip, (void)tbl,
        (void)cols;
#endif
    (void)a0, (void)a1, (void)a2, (void)a3;
}
#endif

/* The op declares the fast path's scratch, and every index of its geometry fits an int32; on MVE also
 * an optimized build and requantization parameters the vector output stage takes. */
#if defined(MF_USE_MVE)
static int mve_fits(const mf_call *c);
#endif
static int fast_path_fits(const mf_call *c) {
    if (!path_fits(c, fast_scratch_bytes)) return 0;
#if defined(MF_USE_MVE)
    return mve_fits(c);
#else
    return 1;
#endif
}

#if defined(MF_USE_MVE)
/* The MVE path's needs beside the scratch: an optimized build, int32 geometry, no INT32_MIN multiplier. */
static int mve_fits(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    if (!geometry_fits(c, &x, &w, &o)) return 0;
#if !defined(__OPTIMIZE__)
    return 0; /* the MVE rows loop is asm that needs an optimized build's registers */
#endif
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    return mf_requant_vector_ok(&rq, w.shape[0]); /* a multiplier of INT32_MIN: the portable path */
}
#endif

#if defined(MF_USE_MVE)
/* rows x row_bytes (a multiple of 16) from src (rows `stride` bytes apart) into column i of the
 * interleaved block from patch byte 0: each row one tail-predicated loop of a chunk per iteration. */
static inline void patch_rows16(int8_t *col, uint32_t i, const int8_t *src, uint32_t rows, uint32_t row_bytes,
                                uint32_t stride) {
    int8_t *dst = col + (i << 4);
    const int8_t *s;
    __asm__ volatile("3: mov      %[s], %[src]\n"
                     "   wlstp.8  lr, %[n], 1f\n"
                     "2: vldrb.8  q0, [%[s]], #16\n"
                     "   vstrb.8  q0, [%[d]], #64\n"
                     "   letp     lr, 2b\n"
                     "1: add      %[src], %[src], %[stride]\n"
                     "   subs     %[rows], %[rows], #1\n"
                     "   bne      3b\n"
                     : [s] "=&r"(s), [src] "+&r"(src), [d] "+&r"(dst), [rows] "+&r"(rows)
                     : [n] "r"(row_bytes), [stride] "r"(stride)
                     : "q0", "lr", "memory", "cc");
}

/* rows x row_bytes (< 16) from src (rows `stride` bytes apart) into column i of the interleaved block
 * (depth = rows * row_bytes bytes, so the staging pointer ends depth bytes on): each row one
 * predicated 16-byte copy into the contiguous staging
 * patch (a row's bytes past row_bytes are left alone), then the patch one chunk at a time into the
 * column. The few-channel first layers. */
static inline void patch_rows_staged(int8_t *col, uint32_t i, int8_t *staging, const int8_t *src, uint32_t rows,
                                     uint32_t row_bytes, uint32_t stride, uint32_t depth) {
    int8_t *dst = col + (i << 4), *stg = staging;
    const int8_t *s;
    __asm__ volatile("   vctp.8       %[rb]\n"
                     "3: vpstt\n"
                     "   vldrbt.8     q0, [%[src]]\n"
                     "   vstrbt.8     q0, [%[stg]]\n"
                     "   add          %[src], %[src], %[stride]\n"
                     "   add          %[stg], %[stg], %[rb]\n"
                     "   subs         %[rows], %[rows], #1\n"
                     "   bne          3b\n"
                     "   sub          %[s], %[stg], %[n]\n" /* the staging patch: depth bytes back */
                     "   wlstp.8      lr, %[n], 1f\n"
                     "2: vldrb.8      q0, [%[s]], #16\n"
                     "   vstrb.8      q0, [%[d]], #64\n"
                     "   letp         lr, 2b\n"
                     "1:\n"
                     : [s] "=&r"(s), [src] "+&r"(src), [stg] "+&r"(stg), [d] "+&r"(dst), [rows] "+&r"(rows)
                     : [rb] "r"(row_bytes), [stride] "r"(stride), [n] "r"(depth)
                     : "q0", "lr", "memory", "cc");
}

/* The patches of n (1..4) consecutive pixels of a 1x1 convolution without stride or padding whose
 * output rows are as wide as the input's: pixel i's patch is the depth bytes at src + i * step. */
static inline void patch_pixels(int8_t *col, const int8_t *src, uint32_t n, uint32_t depth, uint32_t step) {
    const int8_t *s;
    int8_t *d;
    __asm__ volatile("3: mov          %[s], %[src]\n"
                     "   mov          %[d], %[col]\n"
                     "   wlstp.8      lr, %[depth], 1f\n"
                     "2: vldrb.8      q0, [%[s]], #16\n"
                     "   vstrb.8      q0, [%[d]], #64\n"
                     "   letp         lr, 2b\n"
                     "1: add          %[src], %[src], %[step]\n"
                     "   add          %[col], %[col], #16\n"
                     "   subs         %[n], %[n], #1\n"
                     "   bne          3b\n"
                     : [s] "=&r"(s), [d] "=&r"(d), [src] "+&r"(src), [col] "+&r"(col), [n] "+&r"(n)
                     : [depth] "r"(depth), [step] "r"(step)
                     : "q0", "lr", "memory", "cc");
}

/* The MVE blocks: four pixels' patches into the interleaved columns (a window inside the input with
 * rows of whole chunks: patch_rows16; a 1x1 inside the input: the pixel itself; else im2col_s8), then
 * every filter of the group by mat_mult_4cols. The geometry is copied into locals: the copy loops'
 * asm clobbers memory, which would reload every field of g after each. */
static void run_blocks(const conv_geom *g, const mve_mm *m, const int8_t *wg, uint32_t oh, uint32_t ow, int8_t *out,
                       int8_t *cols) {
    const uint32_t ch = g->ch, row_bytes = g->kw * g->wc, in_row = (uint32_t)g->w * ch, pixels = oh * ow;
    const uint32_t kh = g->kh, depth = m->depth, ps = m->ps;
    const int32_t st0 = g->st[0], st1 = g->st[1], pd0 = g->pd[0], pd1 = g->pd[1];
    const uint32_t row_step = in_row * (uint32_t)g->dl[0], px_step = (uint32_t)st1 * ch;
    const int8_t *x = g->x;
    /* windows inside the input -- 1: whole-chunk rows; 2: one pixel (1x1); 3: short rows, staged;
     * 0: im2col_s8 everywhere */
    int fast = 0;
    if (g->kh == 1 && g->kw == 1) fast = 2;
    else if (g->contiguous_rows && (row_bytes & 15u) == 0) fast = 1;
    else if (g->contiguous_rows && row_bytes < 16) fast = 3;
    int8_t *staging = cols + 4u * ((depth + 15u) & ~15u);
    /* output columns whose windows lie inside the input's width; rows likewise */
    const int32_t ox_lo = (pd1 + st1 - 1) / st1, oy_lo = (pd0 + st0 - 1) / st0;
    const int32_t span_x = g->w - 1 - ((int32_t)g->kw - 1) * g->dl[1] + pd1;
    const int32_t span_y = g->h - 1 - ((int32_t)g->kh - 1) * g->dl[0] + pd0;
    const int32_t ox_hi = span_x < 0 ? 0 : span_x / st1 + 1, oy_hi = span_y < 0 ? 0 : span_y / st0 + 1;
    if (g->kh == 1 && g->kw == 1 && pd0 == 0 && pd1 == 0 && st0 == 1 && st1 == 1 && ow == (uint32_t)g->w &&
        oh <= (uint32_t)g->h) {
        /* every pixel's patch is the input pixel of the same index: one copy loop per block */
        for (uint32_t p0 = 0; p0 < pixels; p0 += NCOLS) {
            const uint32_t n_cols = pixels - p0 < NCOLS ? pixels - p0 : NCOLS;
            patch_pixels(cols, x + (size_t)p0 * ch, n_cols, depth, ch);
            mat_mult_4cols(m, cols, n_cols, wg, out + (size_t)p0 * ps);
        }
        return;
    }
    int32_t oy = 0, ox = 0;
    int row_inside = fast && oy_lo <= 0 && 0 < oy_hi;
    const int8_t *at = x + (ptrdiff_t)(-pd0) * (ptrdiff_t)in_row + (ptrdiff_t)(-pd1) * (ptrdiff_t)ch; /* window (0, 0) */
    for (uint32_t p0 = 0; p0 < pixels; p0 += NCOLS) {
        const uint32_t n_cols = pixels - p0 < NCOLS ? pixels - p0 : NCOLS;
        for (uint32_t i = 0; i < n_cols; i++) {
            if (row_inside && ox >= ox_lo && ox < ox_hi) {
                if (fast == 1) {
                    patch_rows16(cols, i, at, kh, row_bytes, row_step);
                } else if (fast == 3) {
                    patch_rows_staged(cols, i, staging, at, kh, row_bytes, row_step, depth);
                } else {
                    patch_copy(cols, i, 0, at, depth);
                }
            } else {
                im2col_s8(g, oy, ox, cols, i);
            }
            at += px_step;
            if (++ox == (int32_t)ow) {
                ox = 0, oy++;
                row_inside = fast && oy_lo <= oy && oy < oy_hi;
                at = x + (ptrdiff_t)(oy * st0 - pd0) * (ptrdiff_t)in_row + (ptrdiff_t)(-pd1) * (ptrdiff_t)ch;
            }
        }
        mat_mult_4cols(m, cols, n_cols, wg, out + (size_t)p0 * ps);
    }
}
#endif

#if defined(DSP_TILE)
/* The few-input-channel path (RGB 3x3 first layers: 27 taps, 6.2 estimated cycles a MAC on the Cortex-M4
 * model through the C loops and their scalar tail): the patches in an order whose every group of 4 taps is
 * whole -- each kernel row's whole words, then the rows' last (kw * channels) % 4 taps gathered -- padded with
 * zero-weight taps to 28 (25..28 taps: dsp_tile_rows_neg's 7 groups) or to a multiple of 8, the filters
 * copied once in the same order into the scratch, so that the 2 x 2 tiles' asm and its output stage run on
 * them; a window inside the input is widened straight from its rows (no im2col copy), the others through
 * im2col_s8's patch. few_depth gives that padded size for a layer that takes the path, else depth: at most 64
 * taps and not a multiple of 8, one group, not the in-place 1x1, per-channel requantization with a bias,
 * every shift in [-22, -1] and the full clamp (dsp_tile_rows_neg), two filters or more, an optimized build
 * (the asm) and conv2d_s8_dsp's scratch (the planner gives it where the arena allows:
 * mcuforge.kinds.scratch.OPTIONAL_SCRATCH; with less, the im2col path runs). */
static uint32_t few_depth(const mf_call *c, const mf_channel_requant *rq, uint32_t depth, uint32_t groups,
                          int pointwise, int small) {
    const uint32_t dp = (depth + 3u) / 4u == 7u ? 28u : (depth + 7u) & ~7u;
    mf_tensor w;
    mf_call_input(c, 1, &w);
    if (dp == depth || depth > 64u || groups != 1 || pointwise || small != 2 || w.shape[0] < 2) return depth;
    if (!rq->per_channel || rq->bias == NULL || rq->lo != -128 || rq->hi != 127) return depth;
    return c->scratch_bytes >= mf_scratch_conv2d_s8_dsp(depth, w.shape[0], w.shape[1] * w.shape[2]) ? dp : depth;
}

/* The filters (rows of kh kernel rows of rb bytes) into dst in few_widen's order, rows of dp, padding 0. */
static const int8_t *few_weights(const int8_t *w, uint32_t filters, uint32_t kh, uint32_t rb, uint32_t dp,
                                 int8_t *dst) {
    const uint32_t q = rb & ~3u;
    for (uint32_t f = 0; f < filters; f++, w += kh * rb) {
        int8_t *row = dst + (size_t)f * dp;
        uint32_t k = 0;
        for (uint32_t ky = 0; ky < kh; ky++) {
            for (uint32_t j = 0; j < q; j++) row[k++] = w[ky * rb + j];
        }
        for (uint32_t ky = 0; ky < kh; ky++) {
            for (uint32_t j = q; j < rb; j++) row[k++] = w[ky * rb + j];
        }
        while (k < dp) row[k++] = 0;
    }
    return dst;
}

/* The n groups of 4 taps at w (few_weights' rows) widened in place to int16 for mf_few3t_rows28: each group as
 * its lanes 0, 2, 1, 3 (SXTB16's order, the columns'), the last group first (group g's 8 bytes at 8 g only
 * overwrite groups from g on, already read). Once per op: the tiles then load the filters' words, no SXTB16.
 * Doubled (|2 w| <= 256), as pwimg's columns: the sums come out as the output stage's 2 acc (below 2^31: the
 * small output stage's |acc| < 2^30), no LSL an output. */
#if FEW3_TILES
static void few_widen16(int8_t *w, uint32_t n) {
    int16_t *d = (int16_t *)(void *)w;
    for (uint32_t g = n; g-- > 0;) {
        const int16_t w0 = (int16_t)(2 * w[4u * g]), w1 = (int16_t)(2 * w[4u * g + 1u]);
        const int16_t w2 = (int16_t)(2 * w[4u * g + 2u]), w3 = (int16_t)(2 * w[4u * g + 3u]);
        d[4u * g] = w0, d[4u * g + 1u] = w2, d[4u * g + 2u] = w1, d[4u * g + 3u] = w3;
    }
}
#endif

/* few_widen for the RGB 3x3 layer (the rows src, r1, r2 of 9 bytes) in straight-line code, inlined in few_image's loop:
 * six words, then the rows' ninth bytes as group 6's lanes 0, 1, 2 (about 40 estimated cycles a patch on the Cortex-M4
 * model against 250 through the loops). Groups of 4 taps gs int16 apart (few_widen's gs). */
static inline __attribute__((always_inline)) void few_widen_rgb3(const int8_t *src, const int8_t *r1,
                                                                const int8_t *r2, int16_t *cols, uint32_t c,
                                                                uint32_t gs, int32_t off16, int32_t off) {
    int16_t *dst = cols + 4u * c;
    {
        const int32_t a0 = mf_ld32(src), a1 = mf_ld32(src + 4), b0 = mf_ld32(r1), b1 = mf_ld32(r1 + 4);
        const int32_t c0 = mf_ld32(r2), c1 = mf_ld32(r2 + 4), t0 = src[8] + off, t1 = r1[8] + off, t2 = r2[8] + off;
        mf_st32(dst, mf_sxtab16(off16, a0));
        mf_st32(dst + 2, mf_sxtab16_ror8(off16, a0));
        mf_st32(dst + 1u * gs, mf_sxtab16(off16, a1));
        mf_st32(dst + 1u * gs + 2u, mf_sxtab16_ror8(off16, a1));
        mf_st32(dst + 2u * gs, mf_sxtab16(off16, b0));
        mf_st32(dst + 2u * gs + 2u, mf_sxtab16_ror8(off16, b0));
        mf_st32(dst + 3u * gs, mf_sxtab16(off16, b1));
        mf_st32(dst + 3u * gs + 2u, mf_sxtab16_ror8(off16, b1));
        mf_st32(dst + 4u * gs, mf_sxtab16(off16, c0));
        mf_st32(dst + 4u * gs + 2u, mf_sxtab16_ror8(off16, c0));
        mf_st32(dst + 5u * gs, mf_sxtab16(off16, c1));
        mf_st32(dst + 5u * gs + 2u, mf_sxtab16_ror8(off16, c1));
        mf_st32(dst + 6u * gs, mf_wrap32(((uint32_t)t0 & 0xFFFFu) | ((uint32_t)t2 << 16))); /* lanes 0, 2 */
        dst[6u * gs + 2u] = (int16_t)t1;                                                      /* lane 1 */
    }
}
/* few_widen_rgb3 on the rows `step` bytes apart from src */
static inline __attribute__((always_inline)) void few_widen_rgb(const int8_t *src, size_t step, int16_t *cols,
                                                               uint32_t c, uint32_t gs, int32_t off16, int32_t off) {
    few_widen_rgb3(src, src + step, src + 2u * step, cols, c, gs, off16, off);
}

/* Column c of the interleaved columns (widen_interleaved's layout when gs = 8: the groups of 4 taps 8 int16
 * apart; 12 for the 2 x 3 tiles' three columns) from a patch of kh rows of rb bytes, `step` bytes apart at
 * src, in few_weights' order: each row's whole words, then the rows' last rb % 4 bytes, each x + offset. The
 * lanes past them keep the zeros few_run wrote (their weights are 0 anyway). */
static void few_widen(const int8_t *src, size_t step, uint32_t kh, uint32_t rb, int16_t *cols, uint32_t c,
                      uint32_t gs, int32_t off16, int32_t off) {
    int16_t *dst = cols + 4u * c;
    const uint32_t q = rb & ~3u;
    const int8_t *row = src;
    for (uint32_t ky = 0; ky < kh; ky++, row += step) {
        for (uint32_t j = 0; j < q; j += 4, dst += gs) {
            const int32_t v = mf_ld32(row + j);
            mf_st32(dst, mf_sxtab16(off16, v));
            mf_st32(dst + 2, mf_sxtab16_ror8(off16, v));
        }
    }
    if (q == rb) return;
    /* the rows' last bytes gathered (fewer than the patch's 64 taps), then widened a word at a time */
    int8_t tail[68];
    uint32_t n = 0;
    row = src + q;
    for (uint32_t ky = 0; ky < kh; ky++, row += step) {
        for (uint32_t j = 0; j < rb - q; j++) tail[n++] = row[j];
    }
    for (; n & 3u; n++) tail[n] = (int8_t)(-off); /* x + offset = 0 */
    for (uint32_t j = 0; j < n; j += 4, dst += gs) {
        const int32_t v = mf_ld32(tail + j);
        mf_st32(dst, mf_sxtab16(off16, v));
        mf_st32(dst + 2, mf_sxtab16_ror8(off16, v));
    }
}

/* The 2 x 2 tiles of `pairs` filter pairs (rows of dp taps at w) on the interleaved columns: DSP_TILE_ROWS_ASM
 * (its full-clamp output stage with every shift in [-22, -1]) at 28 taps without a loop, else 2 groups an
 * iteration. A function of its own, not mat_mult_2cols: a second call site would stop GCC inlining that one
 * into run_fast's loop (measured: 3 % more cycles on the other layers). */
static __attribute__((noinline)) void few_tiles(const int16_t *cols, const int8_t *w, uint32_t pairs, uint32_t dp,
                                                const mf_channel_requant *rq, int8_t *out0, int8_t *out1) {
    const uint32_t frame[9] = {(uint32_t)(uintptr_t)rq->bias, (uint32_t)(uintptr_t)rq->mult,
                               (uint32_t)(uintptr_t)rq->shift, (uint32_t)(uintptr_t)out0, (uint32_t)(uintptr_t)out1,
                               (uint32_t)(2 * rq->out_off + 1), pairs, (uint32_t)(uintptr_t)(cols + 2u * dp),
                               (uint32_t)(uintptr_t)cols};
    const uint32_t *t = frame;
    int32_t a00, a01, a10, a11, va, vb, u, xa, xb;
    const int8_t *wp = w;
    const int16_t *xp;
    const int32_t dstep = (int32_t)dp - 4;
    if (!DSP_PW_RUNS && dp == 28u) { /* (mf_pw_rows28 where DSP_PW_RUNS) */
        DSP_TILE_ROWS_ASM(DSP_TILE_GROUPS4 DSP_TILE_GROUP DSP_TILE_GROUP DSP_TILE_GROUP, "");
    } else {
        DSP_TILE_ROWS_ASM(DSP_TILE_GROUP DSP_TILE_GROUP, DSP_ROWS_LOOP);
    }
    (void)a00, (void)a01, (void)a10, (void)a11, (void)wp, (void)xp, (void)va, (void)vb, (void)t, (void)u;
    (void)xa, (void)xb;
}

/* The last filter oc of an odd count (row w of dp taps) on both columns, in C. */
static void few_last(const int16_t *cols, const int8_t *w, uint32_t dp, const mf_channel_requant *rq, uint32_t oc,
                     int8_t *out0, int8_t *out1) {
    const int32_t *x = (const int32_t *)(const void *)cols;
    int32_t a0 = 0, a1 = 0;
    for (uint32_t i = 0; i < dp; i += 4, x += 4) {
        const int32_t v = mf_ld32(w + i), w02 = mf_sxtb16(v), w13 = mf_sxtb16_ror8(v);
        a0 = mf_smlad(w13, x[1], mf_smlad(w02, x[0], a0));
        a1 = mf_smlad(w13, x[3], mf_smlad(w02, x[2], a1));
    }
    out0[oc] = mf_channel_requant_s8_inline(rq, oc, a0);
    out1[oc] = mf_channel_requant_s8_inline(rq, oc, a1);
}

/* The natural-order patch (ky, kx, c) of a window crossing the input's border into dst: taps outside hold the
 * zero point (x + offset = 0). */
static void few_border(const conv_geom *g, int32_t y0, int32_t x0, int8_t *dst) {
    /* g's fields in locals (the int8 stores below may alias them) */
    const int8_t *x = g->x, zp = g->zero_point;
    const int32_t h = g->h, w = g->w, dy = g->dl[0], dx = g->dl[1];
    const uint32_t kh = g->kh, kw = g->kw, wc = g->wc, ch = g->ch;
    if (g->contiguous_rows && kh == 3u && kw == 3u && wc == 3u) {
        /* the RGB 3x3 window in straight-line code: the zero point's 7 words, then each row inside the input
         * copied as its run of 9, 6 or 3 bytes, no loop (resnet8's first layer: few_border 44 k -> 20 k estimated
         * cycles on the Cortex-M4 model, VWW's 30 k -> 15 k) */
        const int32_t lo = x0 < 0 ? -x0 : 0, hi = x0 + 3 > w ? w - x0 : 3;
        const int32_t zw = mf_wrap32((uint32_t)(uint8_t)zp * 0x01010101u);
        mf_st32(dst, zw), mf_st32(dst + 4, zw), mf_st32(dst + 8, zw), mf_st32(dst + 12, zw);
        mf_st32(dst + 16, zw), mf_st32(dst + 20, zw), mf_st32(dst + 24, zw);
        if (hi <= lo) return;
        const int32_t run = hi - lo; /* pixels */
        const int8_t *src = x + (ptrdiff_t)(x0 + lo) * 3;
        int8_t *d = dst + 3 * lo;
        for (int32_t ky = 0; ky < 3; ky++, d += 9) {
            const int32_t iy = y0 + ky * dy;
            if (iy < 0 || iy >= h) continue;
            const int8_t *row = src + (ptrdiff_t)iy * (ptrdiff_t)w * 3;
            if (run == 3) {
                mf_st32(d, mf_ld32(row)), mf_st32(d + 4, mf_ld32(row + 4)), d[8] = row[8];
            } else if (run == 2) {
                mf_st32(d, mf_ld32(row)), d[4] = row[4], d[5] = row[5];
            } else {
                d[0] = row[0], d[1] = row[1], d[2] = row[2];
            }
        }
        return;
    }
    if (g->contiguous_rows) {
        /* a kernel row's taps inside the input are one run, found once a window: each row the zero point, then
         * that run copied (resnet8's first layer: about 440 -> 150 estimated cycles a border patch, Cortex-M4) */
        const int32_t lo = x0 < 0 ? -x0 : 0, hi = x0 + (int32_t)kw > w ? w - x0 : (int32_t)kw;
        const uint32_t rb = kw * wc, skip = (uint32_t)lo * wc, run = hi > lo ? (uint32_t)(hi - lo) * wc : 0u;
        const int8_t *src = x + (ptrdiff_t)x0 * (ptrdiff_t)ch + (ptrdiff_t)skip;
        const int32_t zw = mf_wrap32((uint32_t)(uint8_t)zp * 0x01010101u);
        for (uint32_t k = 0; k < kh * rb; k += 4) mf_st32(dst + k, zw); /* (the staging patch: dp bytes) */
        for (uint32_t ky = 0; run > 0 && ky < kh; ky++, dst += rb) {
            const int32_t iy = y0 + (int32_t)ky * dy;
            if (iy < 0 || iy >= h) continue;
            const int8_t *row = src + (ptrdiff_t)iy * (ptrdiff_t)w * (ptrdiff_t)ch;
            uint32_t k = 0;
            /* whole words first */
            for (; k + 4u <= run; k += 4u) mf_st32(dst + skip + k, mf_ld32(row + k));
            for (; k < run; k++) dst[skip + k] = row[k];
        }
        return;
    }
    for (uint32_t ky = 0; ky < kh; ky++) {
        const int32_t iy = y0 + (int32_t)ky * dy;
        for (uint32_t kx = 0; kx < kw; kx++, dst += wc) {
            const int32_t ix = x0 + (int32_t)kx * dx;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
                /* RGB: no loop (resnet8's first layer: 81 k -> 55 k estimated cycles here, Cortex-M4) */
                if (wc == 3u) {
                    dst[0] = dst[1] = dst[2] = zp;
                    continue;
                }
                for (uint32_t k = 0; k < wc; k++) dst[k] = zp;
                continue;
            }
            const int8_t *src = x + ((size_t)iy * (size_t)w + (size_t)ix) * ch;
            if (wc == 3u) {
                dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
                continue;
            }
            for (uint32_t k = 0; k < wc; k++) dst[k] = src[k];
        }
    }
}

/* Column c of a window crossing the input's border (at y0, x0): few_border's patch in staging, widened (one call
 * in few_image's loop: with two there GCC stopped unrolling its three lanes, 20 estimated cycles a pixel more) */
static __attribute__((noinline)) void few_border_widen(const conv_geom *g, int32_t y0, int32_t x0, int8_t *staging,
                                                       int16_t *cols, uint32_t c, uint32_t gs, int32_t off16,
                                                       int32_t off) {
    const uint32_t rb = g->kw * g->wc;
    if (g->contiguous_rows && g->kh == 3u && g->kw == 3u && g->wc == 3u) {
        /* A window one pixel across the left edge or one row across the top (padding 1: every window of a row's
         * or column's border but the corner) widened straight from the input's rows, then the taps outside set
         * to 0 (x + offset for the zero point): no patch copy (VWW's first layer: about 245 -> 70 estimated
         * cycles such a window on the Cortex-M4 model). The left edge's pixel -1 is read from the row above's
         * last pixel (so from row 1 on), the top's missing row from the first one, both then overwritten. */
        const int32_t dy = g->dl[0], h = g->h, w = g->w;
        const ptrdiff_t in_row = (ptrdiff_t)w * 3;
        int16_t *dst = cols + 4u * c;
        if (x0 == -1 && w >= 2 && y0 >= 1 && y0 + 2 * dy < h) {
            const int8_t *src = g->x + (ptrdiff_t)y0 * in_row - 3;
            few_widen_rgb3(src, src + dy * in_row, src + 2 * dy * in_row, cols, c, gs, off16, off);
            /* each row's first 3 taps: group 2 r's lanes 0, 2 (a word) and 1 */
            for (uint32_t r = 0; r < 3u; r++) mf_st32(dst + 2u * r * gs, 0), dst[2u * r * gs + 2u] = 0;
            return;
        }
        if (y0 < 0 && y0 + dy >= 0 && y0 + 2 * dy < h && x0 >= 0 && x0 + 2 < w) {
            const int8_t *r1 = g->x + (ptrdiff_t)(y0 + dy) * in_row + (ptrdiff_t)x0 * 3;
            few_widen_rgb3(r1, r1, r1 + dy * in_row, cols, c, gs, off16, off);
            /* row 0's taps: groups 0 and 1, and lane 0 of group 6 (its ninth) */
            mf_st32(dst, 0), mf_st32(dst + 2, 0), mf_st32(dst + gs, 0), mf_st32(dst + gs + 2u, 0);
            dst[6u * gs] = 0;
            return;
        }
    }
    few_border(g, y0, x0, staging);
    if (g->kh == 3u && rb == 9u) {
        few_widen_rgb(staging, rb, cols, c, gs, off16, off);
    } else {
        few_widen(staging, rb, g->kh, rb, cols, c, gs, off16, off);
    }
}

/* The output-stage table of mf_pwimg<D> and mf_few3t_rows28 for the n_pairs filter pairs from filter f0 (a
 * requantization that dsp_shifts_negative and rq_mults_nonneg accept, the full clamp): per pair the biases
 * (shifted left by bias_shl: 1 for pwimg's doubled columns), then each filter's multiplier, rounding constant
 * 2^(n-1) + out_off 2^n = (2 out_off + 1) << (n - 1) and n = -shift; every pair's second n but the last's with
 * bit 8 set (the asm's loop end; ASR reads the low byte). */
static void rq_table(uint32_t *tbl, const mf_channel_requant *rq, uint32_t f0, uint32_t n_pairs, uint32_t bias_shl) {
    for (uint32_t p = 0; p < n_pairs; p++) {
        uint32_t *e = tbl + 8u * p;
        for (uint32_t k = 0; k < 2; k++) {
            const uint32_t f = f0 + 2u * p + k, n = (uint32_t)-rq->shift[f];
            e[k] = (uint32_t)rq->bias[f] << bias_shl;
            e[2u + 3u * k] = (uint32_t)rq->mult[f];
            e[3u + 3u * k] = (uint32_t)(2 * rq->out_off + 1) << (n - 1u);
            e[4u + 3u * k] = n | (k == 1u && p + 1u < n_pairs ? 256u : 0u);
        }
    }
}

/* One image of the few-channel path: output pixels `lanes` at a time (the last ones repeated into the columns
 * left, their outputs written again), every filter pair by few_tiles on the dp-tap rows wp; lanes = 3 (28
 * taps, an even filter count): mf_few3_rows28's 2 x 3 tiles. */
static inline __attribute__((always_inline)) void few_image_n(const conv_geom *g, const int8_t *wp,
                                                             const mf_channel_requant *rq, uint32_t oc_n, uint32_t dp,
                                                             uint32_t oh, uint32_t ow, int8_t *out, int8_t *scratch,
                                                             int32_t off16, int32_t in_off, const uint32_t lanes,
                                                             const uint32_t *tbl) {
    int16_t *cols = (int16_t *)(void *)scratch;
    int8_t *staging = scratch + 6u * dp;
    const uint32_t gs = lanes == 3u ? 12u : 8u; /* int16 from a group of 4 taps to the next */
    const uint32_t rb = g->kw * g->wc, kh = g->kh, pixels = oh * ow;
    const size_t row_step = (size_t)g->dl[0] * (size_t)g->w * g->ch, ch = g->ch;
    const int32_t st0 = g->st[0], st1 = g->st[1], pd0 = g->pd[0], pd1 = g->pd[1];
    const int contiguous = g->contiguous_rows, rgb = kh == 3u && rb == 9u;
    const int8_t *x = g->x;
    /* output columns whose windows lie inside the input's width, rows likewise (run_blocks' bounds); a window
     * inside the input at `at`, moved on a pixel's stride at a time */
    const int32_t span_x = g->w - 1 - ((int32_t)g->kw - 1) * g->dl[1] + pd1;
    const int32_t span_y = g->h - 1 - ((int32_t)kh - 1) * g->dl[0] + pd0;
    const int32_t ox_lo = (pd1 + st1 - 1) / st1, ox_hi = span_x < 0 ? 0 : span_x / st1 + 1;
    const int32_t oy_lo = (pd0 + st0 - 1) / st0, oy_hi = span_y < 0 ? 0 : span_y / st0 + 1;
    const ptrdiff_t in_row = (ptrdiff_t)g->w * (ptrdiff_t)ch, px_step = (ptrdiff_t)st1 * (ptrdiff_t)ch;
#if DSP_PW_RUNS || FEW3_TILES
    /* at 28 taps mf_pw_rows28 / mf_few3_rows28 from one frame whose outputs alone change (as pw_run) */
    uint32_t frame[10] = {(uint32_t)(uintptr_t)rq->bias, (uint32_t)(uintptr_t)rq->mult, (uint32_t)(uintptr_t)rq->shift,
                          0u, 0u, (uint32_t)(2 * rq->out_off + 1), oc_n / 2u, (uint32_t)(uintptr_t)(cols + 2u * dp),
                          (uint32_t)(uintptr_t)cols, 0u};
#endif
    int32_t oy = 0, ox = 0;
    int row_inside = contiguous && oy_lo <= 0 && 0 < oy_hi;
    const int8_t *at = x - (ptrdiff_t)pd0 * in_row - (ptrdiff_t)pd1 * (ptrdiff_t)ch; /* window (0, 0) */
    uint32_t reps = 1; /* lanes' pixels `reps` times at p0 */
    for (uint32_t p0 = 0; p0 < pixels; p0 += lanes * reps) {
        const uint32_t n_cols = pixels - p0 < lanes ? pixels - p0 : lanes;
        const int8_t *src3 = NULL; /* reps times three RGB windows that mf_few3t_rows28 widens */
        reps = 1;
        if (lanes == 3u && rgb && row_inside && ox >= ox_lo && ox + 3 <= ox_hi && ox + 3 <= (int32_t)ow) {
            /* three RGB windows inside the input on one row: straight-line, without the lanes' checks and steps
             * (about 20 estimated cycles a pixel on the Cortex-M4 model) */
            if (tbl != NULL) {
                /* every such three on the row: mf_few3t_rows28 widens them and runs them in one call */
                const int32_t end = ox_hi < (int32_t)ow ? ox_hi : (int32_t)ow;
                reps = (uint32_t)(end - ox) / 3u;
                src3 = at;
            } else {
                few_widen_rgb(at, row_step, cols, 0, gs, off16, in_off);
                few_widen_rgb(at + px_step, row_step, cols, 1, gs, off16, in_off);
                few_widen_rgb(at + 2 * px_step, row_step, cols, 2, gs, off16, in_off);
            }
            /* at the last pixel, as the lanes' loop leaves them */
            at += (ptrdiff_t)(3u * reps - 1u) * px_step, ox += (int32_t)(3u * reps - 1u);
        } else {
            for (uint32_t i = 0; i < lanes; i++) {
                if (row_inside && ox >= ox_lo && ox < ox_hi) {
                    if (rgb) {
                        few_widen_rgb(at, row_step, cols, i, gs, off16, in_off);
                    } else {
                        few_widen(at, row_step, kh, rb, cols, i, gs, off16, in_off);
                    }
                } else {
                    few_border_widen(g, oy * st0 - pd0, ox * st1 - pd1, staging, cols, i, gs, off16, in_off);
                }
                if (i + 1 < n_cols) { /* the next pixel (the last one goes into the columns left) */
                    at += px_step;
                    if (++ox == (int32_t)ow) {
                        ox = 0, oy++;
                        row_inside = contiguous && oy_lo <= oy && oy < oy_hi;
                        at = x + (ptrdiff_t)(oy * st0 - pd0) * in_row - (ptrdiff_t)pd1 * (ptrdiff_t)ch;
                    }
                }
            }
        }
        if (n_cols == lanes) {
            at += px_step;
            if (++ox == (int32_t)ow) {
                ox = 0, oy++;
                row_inside = contiguous && oy_lo <= oy && oy < oy_hi;
                at = x + (ptrdiff_t)(oy * st0 - pd0) * in_row - (ptrdiff_t)pd1 * (ptrdiff_t)ch;
            }
        }
        int8_t *out0 = out + (size_t)p0 * g->ps, *out1 = n_cols > 1 ? out0 + g->ps : out0;
#if FEW3_TILES
        if (lanes == 3u && tbl != NULL) {
            const uint32_t f3[11] = {(uint32_t)(uintptr_t)tbl, (uint32_t)(uintptr_t)out0, (uint32_t)(uintptr_t)out1,
                                    (uint32_t)(uintptr_t)(n_cols > 2 ? out1 + g->ps : out1),
                                    (uint32_t)(uintptr_t)cols, (uint32_t)(uintptr_t)src3, (uint32_t)row_step,
                                    (uint32_t)px_step, (uint32_t)off16, reps, 3u * g->ps - oc_n};
            mf_few3t_rows28(f3, (const int16_t *)(const void *)wp); /* few_widen16's */
        } else if (lanes == 3u) {
            frame[3] = (uint32_t)(uintptr_t)out0, frame[4] = (uint32_t)(uintptr_t)out1;
            frame[9] = (uint32_t)(uintptr_t)(n_cols > 2 ? out1 + g->ps : out1);
            mf_few3_rows28(frame, wp);
        } else
#endif
#if DSP_PW_RUNS
        if (dp == 28u) {
            frame[3] = (uint32_t)(uintptr_t)out0, frame[4] = (uint32_t)(uintptr_t)out1;
            mf_pw_rows28(frame, wp);
        } else
#endif
        {
            few_tiles(cols, wp, oc_n / 2u, dp, rq, out0, out1);
        }
        if (oc_n & 1u) few_last(cols, wp + (size_t)(oc_n - 1u) * dp, dp, rq, oc_n - 1u, out0, out1);
    }
}

/* few_image_n two pixels at a time (the 2 x 2 tiles) */
static __attribute__((noinline)) void few_image(const conv_geom *g, const int8_t *wp, const mf_channel_requant *rq,
                                                uint32_t oc_n, uint32_t dp, uint32_t oh, uint32_t ow, int8_t *out,
                                                int8_t *scratch, int32_t off16, int32_t in_off) {
    few_image_n(g, wp, rq, oc_n, dp, oh, ow, out, scratch, off16, in_off, 2u, NULL);
}

#if FEW3_TILES
/* mf_few3t_rows28 runs the op (few_image3's table, few_widen16's filters): up to 32 filters, no negative
 * multiplier */
static int few3t_ok(const mf_channel_requant *rq, uint32_t oc_n) { return oc_n <= 32u && rq_mults_nonneg(rq, oc_n); }

/* few_image_n three pixels at a time (mf_few3_rows28; 28 taps, an even filter count; where few3t_ok,
 * mf_few3t_rows28 on the filters wp as few_widen16 left them) */
static __attribute__((noinline)) void few_image3(const conv_geom *g, const int8_t *wp, const mf_channel_requant *rq,
                                                 uint32_t oc_n, uint32_t oh, uint32_t ow, int8_t *out, int8_t *scratch,
                                                 int32_t off16, int32_t in_off) {
    uint32_t tbl[8u * 16u]; /* up to 32 filters: mf_few3t_rows28 */
    const int t = few3t_ok(rq, oc_n);
    if (t) rq_table(tbl, rq, 0, oc_n / 2u, 1);
    few_image_n(g, wp, rq, oc_n, 28u, oh, ow, out, scratch, off16, in_off, 3u, t ? tbl : NULL);
}
#endif

/* Pixels a and b (depth 8 or 16 bytes each) as the interleaved pair of widened columns. */
static inline void pw_widen(const int8_t *a, const int8_t *b, int16_t *cols, uint32_t depth, int32_t off16) {
    for (uint32_t j = 0; j < depth; j += 4, cols += 8) {
        const int32_t va = mf_ld32(a + j), vb = mf_ld32(b + j);
        mf_st32(cols, mf_sxtab16(off16, va));
        mf_st32(cols + 2, mf_sxtab16_ror8(off16, va));
        mf_st32(cols + 4, mf_sxtab16(off16, vb));
        mf_st32(cols + 6, mf_sxtab16_ror8(off16, vb));
    }
}

/* The shallow pointwise layers on the Cortex-M4 (DSP_PW_RUNS: VWW's 8 -> 16 and 16 -> 32): a 1x1 without
 * stride or padding over rows as wide as the input's, 8 or 16 channels, one group, with dsp_tile_rows_neg's
 * output stage (per-channel requantization with a bias, shifts in [-22, -1], the full clamp). Each pixel
 * pair widened in place and the filters by mf_pw3_rows8/16's triples, then the pairs left by mf_pw_rows8 /
 * mf_pw_rows16 (few_tiles on the Cortex-M7), from frames whose outputs alone change (a last odd pixel in both
 * columns, its outputs written twice): run_fast's loop spent about 300 estimated cycles a pixel pair around the tiles (its pixel
 * coordinates, patch choice, checks and frame), as long as three of them at depth 8. 1 when it ran the op. */
static __attribute__((noinline)) int pw_run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    const uint32_t depth = w.shape[3], oc_n = w.shape[0], pixels = o.shape[1] * o.shape[2];
    const size_t ps = o.pitch ? o.pitch : oc_n; /* a pitched output (format 3.4): pixels pitch apart */
    if (x.shape[3] != depth || st[0] != 1 || st[1] != 1 || pd[0] != 0 || pd[1] != 0 || o.shape[2] != x.shape[2] ||
        o.shape[1] > x.shape[1] || oc_n < 2) {
        return 0;
    }
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    if (!rq.per_channel || rq.bias == NULL || rq.lo != -128 || rq.hi != 127) return 0;
    if (!mf_dsp_small_ok(&rq, oc_n, depth) || !dsp_shifts_negative(&rq, oc_n)) return 0;
    const int32_t off16 = mf_pack_off16(mf_attr_int(c, A_IN_OFF));
    int16_t *cols = (int16_t *)c->scratch;
    const int8_t *wd = (const int8_t *)w.data;
    /* The filters' triples by mf_pw3_rows8/16 (3 x 2 tiles), the rest in pairs; no triple that would leave one
     * filter alone (its C loop costs more than a pair's tile: 16 filters are 4 triples and 2 pairs). VWW's 16 -> 32
     * layer: 2.37 -> 2.28 estimated cycles/MAC on the Cortex-M4 model, 1.75 -> 1.42 on the Cortex-M7; its 8 -> 16
     * layer 2.71 -> 2.56 on the Cortex-M7, 3.69 -> 3.75 on the Cortex-M4 (the same 3.75 without triples: the two
     * frames' loop costs what two groups' triples save there). */
    const uint32_t triples = oc_n % 3u == 1u ? oc_n / 3u - 1u : oc_n / 3u;
    const uint32_t done = 3u * triples;
    mf_channel_requant rest = rq; /* the pairs' parameters */
    rest.bias += done, rest.mult += done, rest.shift += done;
    /* the asm's frames (DSP_TILE_ROWS_ASM's): bias, mult, shift, out0, out1, 2 out_off + 1, pairs (triples), end,
     * start */
    uint32_t frame[9] = {(uint32_t)(uintptr_t)rest.bias, (uint32_t)(uintptr_t)rest.mult,
                         (uint32_t)(uintptr_t)rest.shift, 0u, 0u, (uint32_t)(2 * rq.out_off + 1), (oc_n - done) / 2u,
                         (uint32_t)(uintptr_t)(cols + 2u * depth), (uint32_t)(uintptr_t)cols};
    uint32_t frame3[9] = {(uint32_t)(uintptr_t)rq.bias, (uint32_t)(uintptr_t)rq.mult, (uint32_t)(uintptr_t)rq.shift,
                          0u, 0u, (uint32_t)(2 * rq.out_off + 1), triples,
                          (uint32_t)(uintptr_t)(cols + 2u * depth + PW3_X_AHEAD), (uint32_t)(uintptr_t)cols};
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * depth;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * ps;
        for (uint32_t p0 = 0; p0 < pixels; p0 += 2) {
            const int two = pixels - p0 > 1u;
            const int8_t *px = image + (size_t)p0 * depth;
            int8_t *out0 = out_image + (size_t)p0 * ps, *out1 = two ? out0 + ps : out0;
            pw_widen(px, two ? px + depth : px, cols, depth, off16);
            if (triples > 0) {
                frame3[3] = (uint32_t)(uintptr_t)out0, frame3[4] = (uint32_t)(uintptr_t)out1;
                if (depth == 16u) {
                    mf_pw3_rows16(frame3, wd);
                } else {
                    mf_pw3_rows8(frame3, wd);
                }
            }
            if (oc_n - done >= 2u) {
                frame[3] = (uint32_t)(uintptr_t)(out0 + done), frame[4] = (uint32_t)(uintptr_t)(out1 + done);
#if DSP_PW_RUNS
                if (depth == 16u) {
                    mf_pw_rows16(frame, wd + (size_t)done * depth);
                } else {
                    mf_pw_rows8(frame, wd + (size_t)done * depth);
                }
#else
                (void)frame;
                few_tiles(cols, wd + (size_t)done * depth, (oc_n - done) / 2u, depth, &rest, out0 + done,
                          out1 + done);
#endif
            }
            if ((oc_n - done) & 1u) few_last(cols, wd + (size_t)(oc_n - 1u) * depth, depth, &rq, oc_n - 1u, out0, out1);
        }
    }
    return 1;
}

/* The shallow pointwise layers (1x1, stride 1, no padding, depth 8, 16, 32 or 64, an even filter count: VWW's
 * 8 -> 16 .. 32 -> 64) as one asm function per depth over all the op's pixel pairs: mf_pwimg<D>(frame). The
 * reduction is short, so per output the requantization and the bookkeeping cost as much as the sums; here each
 * pixel pair is widened once (doubled: SADD16, so that the sums are 2 acc and no LSL precedes the multiply),
 * then every filter pair's 2 x 2 tile runs with all its state in registers -- the weights through one pointer,
 * the columns at immediate offsets from a fixed base, both outputs' pointers -- and its requantization reads
 * the channel's constants from a table built once per op (pwimg_table: 2 bias, multiplier, rounding constant
 * (2 out_off + 1) << (n - 1), n): SMMLAR adds the rounding constant in the multiply, and the -1 of a negative
 * product's rounding is taken from the sign of the accumulator (the same bits when the multiplier is >= 0 and
 * n >= 1: a zero product rounds to out_off either way), so an output is 5 instructions (SMMLAR, ADD, ASR, SSAT,
 * STRB). The last pair's n carries no bit 8 (ASR reads the low byte): the loop's end without a counter.
 * Frame: table, weights, columns, input, output, pitch, pixel pairs, offset (both halfwords). */
#define PWI_WIDEN(G, D) \
    "ldr r10, [r9, #4 * " #G "]\n\t" \
    "ldr r11, [r8, #4 * " #G "]\n\t" \
    "sxtab16 r12, lr, r10\n\t" \
    "sadd16 r12, r12, r12\n\t" \
    "str r12, [r6, #16 * " #G "]\n\t" \
    "sxtab16 r12, lr, r10, ror #8\n\t" \
    "sadd16 r12, r12, r12\n\t" \
    "str r12, [r6, #16 * " #G " + 4]\n\t" \
    "sxtab16 r12, lr, r11\n\t" \
    "sadd16 r12, r12, r12\n\t" \
    "str r12, [r6, #16 * " #G " + 8]\n\t" \
    "sxtab16 r12, lr, r11, ror #8\n\t" \
    "sadd16 r12, r12, r12\n\t" \
    "str r12, [r6, #16 * " #G " + 12]\n\t"
/* group G of 4 taps of the filter pair (r0 already moved on by 2 D): the even lanes, then the odd ones */
#define PWI_MACS(G) \
    "ldr r11, [r6, #16 * " #G "]\n\t" \
    "ldr r12, [r6, #16 * " #G " + 8]\n\t" \
    "sxtb16 lr, r9\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "smlad r3, lr, r12, r3\n\t" \
    "sxtb16 lr, r10\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "smlad r5, lr, r12, r5\n\t" \
    "ldr r11, [r6, #16 * " #G " + 4]\n\t" \
    "ldr r12, [r6, #16 * " #G " + 12]\n\t" \
    "sxtb16 lr, r9, ror #8\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "smlad r3, lr, r12, r3\n\t" \
    "sxtb16 lr, r10, ror #8\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "smlad r5, lr, r12, r5\n\t"
#define PWI_GROUP0(D) \
    "ldr r10, [r0, #" #D "]\n\t" \
    "ldr r9, [r0], #2 * " #D "\n\t" \
    "ldr r11, [r6]\n\t" \
    "ldr r12, [r6, #8]\n\t" \
    "sxtb16 lr, r9\n\t" \
    "smlad r3, lr, r12, r2\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "sxtb16 lr, r10\n\t" \
    "smlad r5, lr, r12, r4\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "ldr r11, [r6, #4]\n\t" \
    "ldr r12, [r6, #12]\n\t" \
    "sxtb16 lr, r9, ror #8\n\t" \
    "smlad r2, lr, r11, r2\n\t" \
    "smlad r3, lr, r12, r3\n\t" \
    "sxtb16 lr, r10, ror #8\n\t" \
    "smlad r4, lr, r11, r4\n\t" \
    "smlad r5, lr, r12, r5\n\t"
#define PWI_GROUP(G, D) \
    "ldr r9, [r0, #4 * " #G " - 2 * " #D "]\n\t" \
    "ldr r10, [r0, #4 * " #G " - " #D "]\n\t" PWI_MACS(G)
/* filter F's outputs from accumulators A (pixel 0) and B (pixel 1) */
#define PWI_OUT(A, B) \
    "ldm r1!, {r9, r10, r11}\n\t" \
    "smmlar r12, " A ", r9, r10\n\t" \
    "smmlar lr, " B ", r9, r10\n\t" \
    "add r12, r12, " A ", asr #31\n\t" \
    "add lr, lr, " B ", asr #31\n\t" \
    "asr r12, r12, r11\n\t" \
    "asr lr, lr, r11\n\t" \
    "ssat r12, #8, r12\n\t" \
    "ssat lr, #8, lr\n\t" \
    "strb r12, [r7], #1\n\t" \
    "strb lr, [r8], #1\n\t"
#define PWI_FUNC(NAME, D, WIDEN, GROUPS) \
__asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t" \
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n" \
        #NAME ":\n\t" \
        "push {r4-r11, lr}\n\t" \
        "sub sp, sp, #36\n\t" \
        "ldm r0, {r1-r9}\n\t" \
        "stm sp, {r1-r9}\n\t" \
        "mov r6, r3\n\t" \
        "3:\n\t" \
        "ldr r9, [sp, #12]\n\t" \
        "ldr r8, [sp, #32]\n\t" \
        "ldr lr, [sp, #28]\n\t" \
        "add r8, r9, r8\n\t" \
        WIDEN \
        "rsb r9, r9, r8, lsl #1\n\t" \
        "str r9, [sp, #12]\n\t" \
        "ldr r0, [sp, #4]\n\t" \
        "ldr r1, [sp]\n\t" \
        "ldr r7, [sp, #16]\n\t" \
        "ldr r12, [sp, #20]\n\t" \
        "add r8, r7, r12\n\t" \
        "add r12, r8, r12\n\t" \
        "str r12, [sp, #16]\n\t" \
        "1:\n\t" \
        "ldm r1!, {r2, r4}\n\t" \
        GROUPS \
        PWI_OUT("r2", "r3") PWI_OUT("r4", "r5") \
        "tst r11, #256\n\t" \
        "bne 1b\n\t" \
        "ldr r12, [sp, #24]\n\t" \
        "subs r12, r12, #1\n\t" \
        "str r12, [sp, #24]\n\t" \
        "bne 3b\n\t" \
        "add sp, sp, #36\n\t" \
        "pop {r4-r11, pc}\n\t" \
        ".size " #NAME ", . - " #NAME "\n\t" \
        ".popsection\n")
#define PWI_W2(D) PWI_WIDEN(0, D) PWI_WIDEN(1, D)
#define PWI_W4(D) PWI_W2(D) PWI_WIDEN(2, D) PWI_WIDEN(3, D)
#define PWI_W8(D) PWI_W4(D) PWI_WIDEN(4, D) PWI_WIDEN(5, D) PWI_WIDEN(6, D) PWI_WIDEN(7, D)
#define PWI_G2(D) PWI_GROUP0(D) PWI_GROUP(1, D)
#define PWI_G4(D) PWI_G2(D) PWI_GROUP(2, D) PWI_GROUP(3, D)
#define PWI_G8(D) PWI_G4(D) PWI_GROUP(4, D) PWI_GROUP(5, D) PWI_GROUP(6, D) PWI_GROUP(7, D)
PWI_FUNC(mf_pwimg8, 8, PWI_W2(8), PWI_G2(8));
PWI_FUNC(mf_pwimg16, 16, PWI_W4(16), PWI_G4(16));
PWI_FUNC(mf_pwimg32, 32, PWI_W8(32), PWI_G8(32));
void mf_pwimg8(const uint32_t *frame);
void mf_pwimg16(const uint32_t *frame);
void mf_pwimg32(const uint32_t *frame);

/* 4 x 2 tiles for the same layers when the filter count is a multiple of 4 (mf_pwq<D>(frame), pwq_run): the
 * 2 x 2 tiles' group of 4 taps costs 20 cycles for 16 MACs on the Cortex-M4 model (6 loads in two runs and the
 * filters' 4 SXTB16), their output stage's table loads 2 per output. Here the filters of a chunk are widened
 * once per op (doubled, in sxtab16's lane order) into a stack table beside their biases and constants, so that
 * a word of 2 taps is one run of 4 loads (2 columns, 2 filters: 5 cycles), 4 SMLAD, 2 loads more and 4 SMLAD:
 * 16 cycles for 16 MACs, all 14 registers busy: r0..r3 filter 0..3's sums of pixel 0, r4..r7 of pixel 1, r8/r9
 * the columns, r10/r11 the filters' words, r12 the table, lr the output. The pixel pair's columns (widened
 * once, not doubled: the filters are) sit on the stack at immediate offsets. Per quad the table holds the 4
 * biases (doubled), D / 2 words of 4 filters, then each filter's multiplier, rounding constant and n (as
 * rq_table; the last quad's last n without bit 8), all read at immediate offsets from r12, which moves on a
 * quad at its end. VWW's layers 2/4/6/8 (8 -> 16 .. 32 -> 64): 755/561/946/480 k estimated cycles with
 * mf_pwimg<D> on the Cortex-M4, 667/482/791/408 k here; Cortex-M7 (its own order below) 509/363/597/302 k ->
 * 354/250/408/212 k. Frame: table, input, output, pitch, pixel pairs, offset (both halfwords), step. */
#define PWQ_WIDEN(G) \
    "ldr r3, [r0, #4 * " #G "]\n\t" \
    "ldr r4, [r1, #4 * " #G "]\n\t" \
    "sxtab16 r5, r2, r3\n\t" \
    "sxtab16 r6, r2, r4\n\t" \
    "str r5, [sp, #32 + 16 * " #G "]\n\t" \
    "str r6, [sp, #36 + 16 * " #G "]\n\t" \
    "sxtab16 r5, r2, r3, ror #8\n\t" \
    "sxtab16 r6, r2, r4, ror #8\n\t" \
    "str r5, [sp, #40 + 16 * " #G "]\n\t" \
    "str r6, [sp, #44 + 16 * " #G "]\n\t"
/* word K (2 taps) of the 4 filters on both pixels; word 0 starts pixel 1's sums from the biases */
/* word 0 with the biases in the same run of loads (9 cycles, against LDM's 5 and a run of 4) */
#define PWQ_MACS0 \
    "ldr r0, [r12]\n\t" \
    "ldr r1, [r12, #4]\n\t" \
    "ldr r2, [r12, #8]\n\t" \
    "ldr r3, [r12, #12]\n\t" \
    "ldr r8, [sp, #32]\n\t" \
    "ldr r9, [sp, #36]\n\t" \
    "ldr r10, [r12, #16]\n\t" \
    "ldr r11, [r12, #20]\n\t" \
    "smlad r4, r10, r9, r0\n\t" \
    "smlad r0, r10, r8, r0\n\t" \
    "smlad r5, r11, r9, r1\n\t" \
    "smlad r1, r11, r8, r1\n\t" \
    "ldr r10, [r12, #24]\n\t" \
    "ldr r11, [r12, #28]\n\t" \
    "smlad r6, r10, r9, r2\n\t" \
    "smlad r2, r10, r8, r2\n\t" \
    "smlad r7, r11, r9, r3\n\t" \
    "smlad r3, r11, r8, r3\n\t"
#define PWQ_MACS(K) \
    "ldr r8, [sp, #32 + 8 * " #K "]\n\t" \
    "ldr r9, [sp, #36 + 8 * " #K "]\n\t" \
    "ldr r10, [r12, #16 + 16 * " #K "]\n\t" \
    "ldr r11, [r12, #20 + 16 * " #K "]\n\t" \
    "smlad r0, r10, r8, r0\n\t" \
    "smlad r4, r10, r9, r4\n\t" \
    "smlad r1, r11, r8, r1\n\t" \
    "smlad r5, r11, r9, r5\n\t" \
    "ldr r10, [r12, #24 + 16 * " #K "]\n\t" \
    "ldr r11, [r12, #28 + 16 * " #K "]\n\t" \
    "smlad r2, r10, r8, r2\n\t" \
    "smlad r6, r10, r9, r6\n\t" \
    "smlad r3, r11, r8, r3\n\t" \
    "smlad r7, r11, r9, r7\n\t"
/* a filter's two outputs from A (pixel 0) and B (pixel 1), in place (PWI_OUT's 5 instructions an output) */
#define PWQ_OUT(A, B) \
    "ldm r12!, {r8, r9, r10}\n\t" \
    "smmlar r11, " A ", r8, r9\n\t" \
    "add " A ", r11, " A ", asr #31\n\t" \
    "smmlar r11, " B ", r8, r9\n\t" \
    "add " B ", r11, " B ", asr #31\n\t" \
    "asr " A ", " A ", r10\n\t" \
    "asr " B ", " B ", r10\n\t" \
    "ssat " A ", #8, " A "\n\t" \
    "ssat " B ", #8, " B "\n\t"
/* pixel 1's output pointer: r0 once filter 0's pixel-0 output is stored (pitch at sp + 12) */
#define PWQ_FUNC(NAME, D, WIDEN, MACS, OUTS) \
__asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t" \
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n" \
        #NAME ":\n\t" \
        "push {r4-r11, lr}\n\t" \
        "sub sp, sp, #32 + 4 * " #D "\n\t" \
        "ldm r0, {r1-r7}\n\t" \
        "stm sp, {r1-r7}\n\t" \
        "3:\n\t" \
        "ldr r0, [sp, #4]\n\t" \
        "ldr r1, [sp, #24]\n\t" \
        "add r1, r0, r1\n\t" \
        "ldr r2, [sp, #20]\n\t" \
        WIDEN \
        "rsb r0, r0, r1, lsl #1\n\t" \
        "str r0, [sp, #4]\n\t" \
        "ldr lr, [sp, #8]\n\t" \
        "ldr r12, [sp, #12]\n\t" \
        "add r12, lr, r12, lsl #1\n\t" \
        "str r12, [sp, #8]\n\t" \
        "ldr r12, [sp]\n\t" \
        "1:\n\t" \
        MACS \
        OUTS \
        "ldr r0, [sp, #16]\n\t" \
        "subs r0, r0, #1\n\t" \
        "str r0, [sp, #16]\n\t" \
        "bne 3b\n\t" \
        "add sp, sp, #32 + 4 * " #D "\n\t" \
        "pop {r4-r11, pc}\n\t" \
        ".size " #NAME ", . - " #NAME "\n\t" \
        ".popsection\n")
#define PWQ_W2 PWQ_WIDEN(0) PWQ_WIDEN(1)
#define PWQ_W4 PWQ_W2 PWQ_WIDEN(2) PWQ_WIDEN(3)
#define PWQ_W8 PWQ_W4 PWQ_WIDEN(4) PWQ_WIDEN(5) PWQ_WIDEN(6) PWQ_WIDEN(7)
#if DSP_PW_RUNS
#define PWQ_M4 PWQ_MACS0 PWQ_MACS(1) PWQ_MACS(2) PWQ_MACS(3)
#define PWQ_M8 PWQ_M4 PWQ_MACS(4) PWQ_MACS(5) PWQ_MACS(6) PWQ_MACS(7)
#define PWQ_M16 PWQ_M8 PWQ_MACS(8) PWQ_MACS(9) PWQ_MACS(10) PWQ_MACS(11) PWQ_MACS(12) PWQ_MACS(13) PWQ_MACS(14) \
    PWQ_MACS(15)
/* the Cortex-M4's output stage: PWQ_OUT a filter, pixel 1's pointer in r0 once filter 0's first output is out */
#define PWQ_OUTS(D) \
    "add r12, r12, #8 * " #D " + 16\n\t" \
    PWQ_OUT("r0", "r4") \
    "strb r0, [lr]\n\t" \
    "ldr r0, [sp, #12]\n\t" \
    "add r0, lr, r0\n\t" \
    PWQ_OUT("r1", "r5") \
    "strb r4, [r0]\n\t" \
    "strb r1, [lr, #1]\n\t" \
    "strb r5, [r0, #1]\n\t" \
    PWQ_OUT("r2", "r6") \
    "strb r2, [lr, #2]\n\t" \
    "strb r6, [r0, #2]\n\t" \
    PWQ_OUT("r3", "r7") \
    "strb r3, [lr, #3]\n\t" \
    "strb r7, [r0, #3]\n\t" \
    "add lr, lr, #4\n\t" \
    "tst r10, #256\n\t" \
    "bne 1b\n\t"
#else
/* The Cortex-M7 (dual issue: a load with a multiply, a loaded register not read by the next issue group): the
 * same sums with each load beside an SMLAD, a word's 6 loads software-pipelined (the next word's first filter
 * and columns loaded during this one's last filters), 8 issue groups for 16 MACs against 13 for PWQ_MACS's
 * runs of loads. Pixel 1's sum first (word 0: from the bias, pixel 0's register). S4..S7: pixel 1's sums. */
#define PWQ7_A(K, S4, S5, S6) \
    "smlad r4, r10, r9, " S4 "\n\t" \
    "ldr r11, [r12, #16 + 16 * " #K " + 4]\n\t" \
    "smlad r0, r10, r8, r0\n\t" \
    "ldr r10, [r12, #16 + 16 * " #K " + 8]\n\t" \
    "smlad r5, r11, r9, " S5 "\n\t" \
    "smlad r1, r11, r8, r1\n\t" \
    "ldr r11, [r12, #16 + 16 * " #K " + 12]\n\t" \
    "smlad r6, r10, r9, " S6 "\n\t"
#define PWQ7_B(K, S7) \
    "smlad r2, r10, r8, r2\n\t" \
    "ldr r10, [r12, #16 + 16 * " #K " + 16]\n\t" \
    "smlad r7, r11, r9, " S7 "\n\t" \
    "ldr r9, [sp, #44 + 8 * " #K "]\n\t" \
    "smlad r3, r11, r8, r3\n\t" \
    "ldr r8, [sp, #40 + 8 * " #K "]\n\t"
#define PWQ7_W(K) PWQ7_A(K, "r4", "r5", "r6") PWQ7_B(K, "r7")
/* the last word, then filter 0's n and multiplier / rounding constant (the output stage's table, 8 D on) */
#define PWQ7_LAST(K, D) \
    PWQ7_A(K, "r4", "r5", "r6") \
    "smlad r2, r10, r8, r2\n\t" \
    "smlad r7, r11, r9, r7\n\t" \
    "ldr r10, [r12, #16 + 8 * " #D " + 8]\n\t" \
    "smlad r3, r11, r8, r3\n\t" \
    "ldrd r8, r9, [r12, #16 + 8 * " #D "]\n\t"
/* word 0: filter 1's word loaded with the others and the last load issued beside the first SMLAD, so that no
 * SMLAD reads a register loaded by the issue group before it (PWQ7_A's order from its third SMLAD on; 3 stalls
 * a quad before) */
#define PWQ7_FIRST \
    "ldr r10, [r12, #16]\n\t" \
    "ldrd r0, r1, [r12]\n\t" \
    "ldr r9, [sp, #36]\n\t" \
    "ldr r8, [sp, #32]\n\t" \
    "ldr r11, [r12, #20]\n\t" \
    "ldrd r2, r3, [r12, #8]\n\t" \
    "smlad r4, r10, r9, r0\n\t" \
    "smlad r0, r10, r8, r0\n\t" \
    "ldr r10, [r12, #24]\n\t" \
    "smlad r5, r11, r9, r1\n\t" \
    "smlad r1, r11, r8, r1\n\t" \
    "ldr r11, [r12, #28]\n\t" \
    "smlad r6, r10, r9, r2\n\t" \
    PWQ7_B(0, "r3")
/* The Cortex-M7's output stage: each filter's constants loaded (LDRD, LDR) an issue group or more before their
 * use and beside an ALU instruction, the two pixels' instructions paired: 6 issue groups a filter against 10
 * for PWQ_OUTS's LDM and chains; the table at immediate offsets, passed at the end. Filter F (A, B) after
 * filter F - 1, whose pixel-1 output P is stored here. */
#define PWQ7_OUT(F, A, B, P, NEXT, D) \
    "smmlar r11, " A ", r8, r9\n\t" \
    "strb " P ", [r0, #" #F " - 1]\n\t" \
    "ldr r10, [r12, #16 + 8 * " #D " + 12 * " #F " + 8]\n\t" \
    "add " A ", r11, " A ", asr #31\n\t" \
    "smmlar r11, " B ", r8, r9\n\t" \
    NEXT \
    "add " B ", r11, " B ", asr #31\n\t" \
    "asr " A ", " A ", r10\n\t" \
    "asr " B ", " B ", r10\n\t" \
    "ssat " A ", #8, " A "\n\t" \
    "ssat " B ", #8, " B "\n\t" \
    "strb " A ", [lr, #" #F "]\n\t"
#define PWQ_OUTS(D) \
    "smmlar r11, r0, r8, r9\n\t" \
    "add r0, r11, r0, asr #31\n\t" \
    "smmlar r11, r4, r8, r9\n\t" \
    "ldrd r8, r9, [r12, #16 + 8 * " #D " + 12]\n\t" \
    "add r4, r11, r4, asr #31\n\t" \
    "asr r0, r0, r10\n\t" \
    "asr r4, r4, r10\n\t" \
    "ldr r11, [sp, #12]\n\t" \
    "ssat r0, #8, r0\n\t" \
    "ssat r4, #8, r4\n\t" \
    "strb r0, [lr]\n\t" \
    "add r0, lr, r11\n\t" \
    PWQ7_OUT(1, "r1", "r5", "r4", "ldrd r8, r9, [r12, #16 + 8 * " #D " + 24]\n\t", D) \
    PWQ7_OUT(2, "r2", "r6", "r5", "ldrd r8, r9, [r12, #16 + 8 * " #D " + 36]\n\t", D) \
    PWQ7_OUT(3, "r3", "r7", "r6", "add r12, r12, #8 * " #D " + 64\n\t", D) \
    "tst r10, #256\n\t" \
    "strb r7, [r0, #3]\n\t" \
    "add lr, lr, #4\n\t" \
    "bne 1b\n\t"
/* The Cortex-M7's widening: two words of each pixel a step, each pair of results to the stack by one STRD (4 of
 * the 8 memory accesses of PWQ_WIDEN's 12 a step: one a issue group), each load two issue groups before its
 * first use: 10 issue groups against 16. The input by LDR (STRD's address is sp's, aligned; LDRD's would be the
 * input's, not always aligned: the odd pixel's staging copy). */
#define PWQ7_WIDEN2(H) \
    "ldr r3, [r0, #8 * " #H "]\n\t" \
    "ldr r5, [r1, #8 * " #H "]\n\t" \
    "ldr r4, [r0, #8 * " #H " + 4]\n\t" \
    "sxtab16 r7, r2, r3\n\t" \
    "ldr r6, [r1, #8 * " #H " + 4]\n\t" \
    "sxtab16 r8, r2, r3, ror #8\n\t" \
    "sxtab16 r9, r2, r5\n\t" \
    "sxtab16 r10, r2, r5, ror #8\n\t" \
    "strd r7, r9, [sp, #32 + 32 * " #H "]\n\t" \
    "sxtab16 r11, r2, r4\n\t" \
    "strd r8, r10, [sp, #40 + 32 * " #H "]\n\t" \
    "sxtab16 lr, r2, r6\n\t" \
    "sxtab16 r12, r2, r4, ror #8\n\t" \
    "strd r11, lr, [sp, #48 + 32 * " #H "]\n\t" \
    "sxtab16 r7, r2, r6, ror #8\n\t" \
    "strd r12, r7, [sp, #56 + 32 * " #H "]\n\t"
#undef PWQ_W2
#undef PWQ_W4
#undef PWQ_W8
#define PWQ_W2 PWQ7_WIDEN2(0)
#define PWQ_W4 PWQ_W2 PWQ7_WIDEN2(1)
#define PWQ_W8 PWQ_W4 PWQ7_WIDEN2(2) PWQ7_WIDEN2(3)
#define PWQ_M4 PWQ7_FIRST PWQ7_W(1) PWQ7_W(2) PWQ7_LAST(3, 8)
#define PWQ_M8 PWQ7_FIRST PWQ7_W(1) PWQ7_W(2) PWQ7_W(3) PWQ7_W(4) PWQ7_W(5) PWQ7_W(6) PWQ7_LAST(7, 16)
#define PWQ_M16 PWQ7_FIRST PWQ7_W(1) PWQ7_W(2) PWQ7_W(3) PWQ7_W(4) PWQ7_W(5) PWQ7_W(6) PWQ7_W(7) PWQ7_W(8) \
    PWQ7_W(9) PWQ7_W(10) PWQ7_W(11) PWQ7_W(12) PWQ7_W(13) PWQ7_W(14) PWQ7_LAST(15, 32)
#endif
PWQ_FUNC(mf_pwq8, 8, PWQ_W2, PWQ_M4, PWQ_OUTS(8));
PWQ_FUNC(mf_pwq16, 16, PWQ_W4, PWQ_M8, PWQ_OUTS(16));
PWQ_FUNC(mf_pwq32, 32, PWQ_W8, PWQ_M16, PWQ_OUTS(32));
void mf_pwq8(const uint32_t *frame);
void mf_pwq16(const uint32_t *frame);
void mf_pwq32(const uint32_t *frame);

#if DSP_PW_RUNS
/* The Cortex-M4's 2 x 4 tiles on mf_pwq<D>'s table (mf_pwq<D>x4(frame), frame[4] the pixel quads; pwq_call runs
 * the 1..3 pixels left on mf_pwq<D>): at 8 channels the 4 x 2 tiles' output stage (a filter's 3 constants for 2
 * outputs, the pair's pointer work) and the pixel pair's loop cost as much as their MACs. Here a quad's filters
 * run as two pairs over 4 pixels: a word of 2 taps is one run of 5 loads (a filter, 4 columns: 6 cycles), 4
 * SMLAD, a load and 4 SMLAD (16 cycles for 16 MACs, as PWQ_MACS), but a filter's constants serve 4 outputs and
 * the loop over the pixels (widening included) runs half as often. r0..r3 filter a's sums of pixels 0..3, r4..r7
 * filter b's, r8 the filter word, r9..r11/lr the columns; the output pointers from the stack (sp + 28 the
 * quad's pixel 0, sp + 12 the pitch). Columns: word k of pixel p at sp + 32 + 16 k + 4 p (128 bytes more stack
 * than mf_pwq32's at 32 channels). VWW's layers 2/4/6/8 on the Cortex-M4 model: 667/482/791/408 k estimated
 * cycles on mf_pwq<D>, 613/457/766/395 k here; within 3 % of each layer's instruction count plus a cycle per run
 * of loads (the MACs' 1 cycle a MAC is this core's floor with 14 registers: 8 sums leave 5 for a word's 6 loads,
 * two runs). Not on the Cortex-M7: a filter word feeding 4 SMLAD cannot be loaded an issue group ahead with 5
 * registers, where PWQ7's 4 x 2 order pairs every load with an SMLAD. */
#define PWQX_WIDEN(G) \
    "ldr r6, [r0, #4 * " #G "]\n\t" \
    "ldr r7, [r3, #4 * " #G "]\n\t" \
    "ldr r8, [r4, #4 * " #G "]\n\t" \
    "ldr r9, [r5, #4 * " #G "]\n\t" \
    "sxtab16 r10, r2, r6\n\t" \
    "sxtab16 r11, r2, r7\n\t" \
    "sxtab16 r12, r2, r8\n\t" \
    "sxtab16 lr, r2, r9\n\t" \
    "str r10, [sp, #32 + 32 * " #G "]\n\t" \
    "str r11, [sp, #36 + 32 * " #G "]\n\t" \
    "str r12, [sp, #40 + 32 * " #G "]\n\t" \
    "str lr, [sp, #44 + 32 * " #G "]\n\t" \
    "sxtab16 r10, r2, r6, ror #8\n\t" \
    "sxtab16 r11, r2, r7, ror #8\n\t" \
    "sxtab16 r12, r2, r8, ror #8\n\t" \
    "sxtab16 lr, r2, r9, ror #8\n\t" \
    "str r10, [sp, #48 + 32 * " #G "]\n\t" \
    "str r11, [sp, #52 + 32 * " #G "]\n\t" \
    "str r12, [sp, #56 + 32 * " #G "]\n\t" \
    "str lr, [sp, #60 + 32 * " #G "]\n\t"
/* word 0 of filters J, J + 1: their biases in the run of loads, the sums started from them */
#define PWQX_MACS0(J) \
    "ldr r0, [r12, #4 * " #J "]\n\t" \
    "ldr r4, [r12, #4 * " #J " + 4]\n\t" \
    "ldr r8, [r12, #16 + 4 * " #J "]\n\t" \
    "ldr r9, [sp, #32]\n\t" \
    "ldr r10, [sp, #36]\n\t" \
    "ldr r11, [sp, #40]\n\t" \
    "ldr lr, [sp, #44]\n\t" \
    "smlad r1, r8, r10, r0\n\t" \
    "smlad r2, r8, r11, r0\n\t" \
    "smlad r3, r8, lr, r0\n\t" \
    "smlad r0, r8, r9, r0\n\t" \
    "ldr r8, [r12, #16 + 4 * " #J " + 4]\n\t" \
    "smlad r5, r8, r10, r4\n\t" \
    "smlad r6, r8, r11, r4\n\t" \
    "smlad r7, r8, lr, r4\n\t" \
    "smlad r4, r8, r9, r4\n\t"
#define PWQX_MACS(J, K) \
    "ldr r8, [r12, #16 + 16 * " #K " + 4 * " #J "]\n\t" \
    "ldr r9, [sp, #32 + 16 * " #K "]\n\t" \
    "ldr r10, [sp, #36 + 16 * " #K "]\n\t" \
    "ldr r11, [sp, #40 + 16 * " #K "]\n\t" \
    "ldr lr, [sp, #44 + 16 * " #K "]\n\t" \
    "smlad r0, r8, r9, r0\n\t" \
    "smlad r1, r8, r10, r1\n\t" \
    "smlad r2, r8, r11, r2\n\t" \
    "smlad r3, r8, lr, r3\n\t" \
    "ldr r8, [r12, #16 + 16 * " #K " + 4 * " #J " + 4]\n\t" \
    "smlad r4, r8, r9, r4\n\t" \
    "smlad r5, r8, r10, r5\n\t" \
    "smlad r6, r8, r11, r6\n\t" \
    "smlad r7, r8, lr, r7\n\t"
/* one output of the filter whose multiplier and constant are in r8, r9 (PWQ_OUT's sequence), in place */
#define PWQX_OUT1(A) \
    "smmlar r11, " A ", r8, r9\n\t" \
    "add " A ", r11, " A ", asr #31\n\t"
/* filter F's 4 outputs (S0..S3) from its constants at table offset O: one run of 3 loads; n stays in r10 */
#define PWQX_OUT4(O, S0, S1, S2, S3) \
    "ldr r8, [r12, #" O "]\n\t" \
    "ldr r9, [r12, #" O " + 4]\n\t" \
    "ldr r10, [r12, #" O " + 8]\n\t" \
    PWQX_OUT1(S0) PWQX_OUT1(S1) PWQX_OUT1(S2) PWQX_OUT1(S3) \
    "asr " S0 ", " S0 ", r10\n\t" \
    "asr " S1 ", " S1 ", r10\n\t" \
    "asr " S2 ", " S2 ", r10\n\t" \
    "asr " S3 ", " S3 ", r10\n\t" \
    "ssat " S0 ", #8, " S0 "\n\t" \
    "ssat " S1 ", #8, " S1 "\n\t" \
    "ssat " S2 ", #8, " S2 "\n\t" \
    "ssat " S3 ", #8, " S3 "\n\t"
/* filters J, J + 1 of the quad on the 4 pixels: sums, outputs, the 8 bytes stored (the pixels' pointers made
 * before the stores: a store's address written by the instruction before it costs a cycle) */
#define PWQX_PAIR(J, D, MACS) \
    MACS \
    PWQX_OUT4("16 + 8 * " #D " + 12 * " #J, "r0", "r1", "r2", "r3") \
    PWQX_OUT4("16 + 8 * " #D " + 12 * " #J " + 12", "r4", "r5", "r6", "r7") \
    "ldr lr, [sp, #28]\n\t" \
    "ldr r8, [sp, #12]\n\t" \
    "add r9, lr, r8\n\t" \
    "add r11, r9, r8\n\t" \
    "add r8, r11, r8\n\t" \
    "strb r0, [lr, #" #J "]\n\t" \
    "strb r4, [lr, #" #J " + 1]\n\t" \
    "strb r1, [r9, #" #J "]\n\t" \
    "strb r5, [r9, #" #J " + 1]\n\t" \
    "strb r2, [r11, #" #J "]\n\t" \
    "strb r6, [r11, #" #J " + 1]\n\t" \
    "strb r3, [r8, #" #J "]\n\t" \
    "strb r7, [r8, #" #J " + 1]\n\t"
#define PWQX_FUNC(NAME, D, WIDEN, MACS_A, MACS_B) \
__asm__(".pushsection .text." #NAME ",\"ax\",%progbits\n\t" \
        ".syntax unified\n\t.thumb\n\t.align 2\n\t.type " #NAME ", %function\n\t.thumb_func\n" \
        #NAME ":\n\t" \
        "push {r4-r11, lr}\n\t" \
        "sub sp, sp, #32 + 8 * " #D "\n\t" \
        "ldm r0, {r1-r7}\n\t" \
        "stm sp, {r1-r7}\n\t" \
        "3:\n\t" \
        "ldr r0, [sp, #4]\n\t" \
        "ldr r1, [sp, #24]\n\t" \
        "ldr r2, [sp, #20]\n\t" \
        "add r3, r0, r1\n\t" \
        "add r4, r3, r1\n\t" \
        "add r5, r4, r1\n\t" \
        "add r1, r5, r1\n\t" \
        "str r1, [sp, #4]\n\t" \
        WIDEN \
        "ldr lr, [sp, #8]\n\t" \
        "ldr r12, [sp, #12]\n\t" \
        "str lr, [sp, #28]\n\t" \
        "add r12, lr, r12, lsl #2\n\t" \
        "str r12, [sp, #8]\n\t" \
        "ldr r12, [sp]\n\t" \
        "1:\n\t" \
        PWQX_PAIR(0, D, MACS_A) \
        PWQX_PAIR(2, D, MACS_B) \
        "add lr, lr, #4\n\t" \
        "str lr, [sp, #28]\n\t" \
        "add r12, r12, #8 * " #D " + 64\n\t" \
        "tst r10, #256\n\t" \
        "bne 1b\n\t" \
        "ldr r0, [sp, #16]\n\t" \
        "subs r0, r0, #1\n\t" \
        "str r0, [sp, #16]\n\t" \
        "bne 3b\n\t" \
        "add sp, sp, #32 + 8 * " #D "\n\t" \
        "pop {r4-r11, pc}\n\t" \
        ".size " #NAME ", . - " #NAME "\n\t" \
        ".popsection\n")
#define PWQX_W2 PWQX_WIDEN(0) PWQX_WIDEN(1)
#define PWQX_W4 PWQX_W2 PWQX_WIDEN(2) PWQX_WIDEN(3)
#define PWQX_W8 PWQX_W4 PWQX_WIDEN(4) PWQX_WIDEN(5) PWQX_WIDEN(6) PWQX_WIDEN(7)
#define PWQX_M4(J) PWQX_MACS0(J) PWQX_MACS(J, 1) PWQX_MACS(J, 2) PWQX_MACS(J, 3)
#define PWQX_M8(J) PWQX_M4(J) PWQX_MACS(J, 4) PWQX_MACS(J, 5) PWQX_MACS(J, 6) PWQX_MACS(J, 7)
#define PWQX_M16(J) PWQX_M8(J) PWQX_MACS(J, 8) PWQX_MACS(J, 9) PWQX_MACS(J, 10) PWQX_MACS(J, 11) \
    PWQX_MACS(J, 12) PWQX_MACS(J, 13) PWQX_MACS(J, 14) PWQX_MACS(J, 15)
PWQX_FUNC(mf_pwq8x4, 8, PWQX_W2, PWQX_M4(0), PWQX_M4(2));
PWQX_FUNC(mf_pwq16x4, 16, PWQX_W4, PWQX_M8(0), PWQX_M8(2));
PWQX_FUNC(mf_pwq32x4, 32, PWQX_W8, PWQX_M16(0), PWQX_M16(2));
void mf_pwq8x4(const uint32_t *frame);
void mf_pwq16x4(const uint32_t *frame);
void mf_pwq32x4(const uint32_t *frame);
#endif

#define PWI_PAIRS 16u /* filter pairs per table (512 bytes of stack) */

/* mf_pwimg<depth>(frame): frame[3] the first pixel pair's input, [4] its outputs, [6] the pairs; a last odd
 * pixel (of the op, or of each output row when strided) twice from a staging copy, its outputs written once
 * (pitch 0). */
static void pwimg_call(uint32_t *frame, uint32_t depth, const int8_t *in, int8_t *out, uint32_t n, uint32_t step,
                       size_t ps) {
    int8_t pair[64]; /* an odd last pixel, twice */
    if (n >= 2u) {
        frame[3] = (uint32_t)(uintptr_t)in, frame[4] = (uint32_t)(uintptr_t)out, frame[5] = (uint32_t)ps;
        frame[6] = n / 2u, frame[8] = step;
        if (depth == 8u) {
            mf_pwimg8(frame);
        } else if (depth == 16u) {
            mf_pwimg16(frame);
        } else {
            mf_pwimg32(frame);
        }
    }
    if ((n & 1u) == 0) return;
    const int8_t *px = in + (size_t)(n - 1u) * step;
    for (uint32_t k = 0; k < depth && k < 32u; k++) pair[k] = pair[depth + k] = px[k];
    frame[3] = (uint32_t)(uintptr_t)pair, frame[4] = (uint32_t)(uintptr_t)(out + (size_t)(n - 1u) * ps);
    frame[5] = 0u, frame[6] = 1u, frame[8] = depth;
    if (depth == 8u) {
        mf_pwimg8(frame);
    } else if (depth == 16u) {
        mf_pwimg16(frame);
    } else {
        mf_pwimg32(frame);
    }
}

#define PWQ_FILTERS 32u /* filters per mf_pwq<D> table: 8 quads of 16 + 2 D words (2.5 KB of stack at D = 32) */

/* mf_pwq<D>'s table for the n_quads filter quads from filter f0 (see mf_pwq<D>): per quad the 4 biases doubled,
 * then word k of the 4 filters (taps t, t + 2 with t = 4 (k / 2) + k % 2: sxtab16's lanes, doubled), then each
 * filter's multiplier, rounding constant and n as rq_table's. */
static void pwq_table(uint32_t *tbl, const int8_t *wd, const mf_channel_requant *rq, uint32_t f0, uint32_t n_quads,
                      uint32_t depth) {
    for (uint32_t q = 0; q < n_quads; q++) {
        uint32_t *e = tbl + q * (16u + 2u * depth), *r = e + 4u + 2u * depth;
        for (uint32_t j = 0; j < 4u; j++) {
            const uint32_t f = f0 + 4u * q + j, n = (uint32_t)-rq->shift[f];
            const int8_t *wf = wd + (size_t)f * depth;
            e[j] = (uint32_t)rq->bias[f] << 1;
            for (uint32_t g = 0; g < depth / 4u; g++) { /* doubled: bit 16 is the low lane's sign shifted in */
                const int32_t v = mf_ld32(wf + 4u * g);
                e[4u + 8u * g + j] = (uint32_t)mf_sxtb16(v) << 1 & 0xfffeffffu;
                e[8u + 8u * g + j] = (uint32_t)mf_sxtb16_ror8(v) << 1 & 0xfffeffffu;
            }
            r[3u * j] = (uint32_t)rq->mult[f];
            r[3u * j + 1u] = (uint32_t)(2 * rq->out_off + 1) << (n - 1u);
            r[3u * j + 2u] = n | (j == 3u && q + 1u < n_quads ? 256u : 0u);
        }
    }
}

static void pwq_asm(const uint32_t *frame, uint32_t depth) {
    if (depth == 8u) {
        mf_pwq8(frame);
    } else if (depth == 16u) {
        mf_pwq16(frame);
    } else {
        mf_pwq32(frame);
    }
}

/* mf_pwq<depth>(frame) over n pixels `step` bytes apart, as pwimg_call: frame[1] the input, [2] the outputs,
 * [3] the pitch, [4] the pairs, [6] the step; an odd last pixel twice from a staging copy, pitch 0. */
/* An op's pixels through call (pwimg_call, pwq_call) with frame: the whole image in one call when its pixels are
 * consecutive (whole), else one call an output row (stride: step bytes a pixel). out: the op's output at the
 * chunk's first filter. */
typedef void (*pw_call_fn)(uint32_t *frame, uint32_t depth, const int8_t *in, int8_t *out, uint32_t n, uint32_t step,
                           size_t ps);
static void pw_image(pw_call_fn call, uint32_t *frame, uint32_t depth, const int8_t *in, int8_t *out, uint32_t batch,
                     uint32_t ih, uint32_t iw, uint32_t oh, uint32_t ow, const int32_t *st, int whole, size_t ps) {
    if (whole) {
        call(frame, depth, in, out, batch * oh * ow, depth, ps);
        return;
    }
    for (uint32_t n = 0; n < batch; n++) {
        for (uint32_t oy = 0; oy < oh; oy++) {
            const int8_t *row = in + ((size_t)n * ih + (size_t)oy * (uint32_t)st[0]) * iw * depth;
            call(frame, depth, row, out + ((size_t)n * oh + oy) * ow * ps, ow, (uint32_t)st[1] * depth, ps);
        }
    }
}

static void pwq_call(uint32_t *frame, uint32_t depth, const int8_t *in, int8_t *out, uint32_t n, uint32_t step,
                     size_t ps) {
    int8_t pair[64];
#if DSP_PW_RUNS
    if (n >= 4u) { /* the pixel quads on mf_pwq<depth>x4, then the 1..3 pixels left as below */
        frame[1] = (uint32_t)(uintptr_t)in, frame[2] = (uint32_t)(uintptr_t)out, frame[3] = (uint32_t)ps;
        frame[4] = n / 4u, frame[6] = step;
        if (depth == 8u) {
            mf_pwq8x4(frame);
        } else if (depth == 16u) {
            mf_pwq16x4(frame);
        } else {
            mf_pwq32x4(frame);
        }
        in += (size_t)(n & ~3u) * step, out += (size_t)(n & ~3u) * ps, n &= 3u;
    }
#endif
    if (n >= 2u) {
        frame[1] = (uint32_t)(uintptr_t)in, frame[2] = (uint32_t)(uintptr_t)out, frame[3] = (uint32_t)ps;
        frame[4] = n / 2u, frame[6] = step;
        pwq_asm(frame, depth);
    }
    if ((n & 1u) == 0) return;
    const int8_t *px = in + (size_t)(n - 1u) * step;
    for (uint32_t k = 0; k < depth && k < 32u; k++) pair[k] = pair[depth + k] = px[k];
    frame[1] = (uint32_t)(uintptr_t)pair, frame[2] = (uint32_t)(uintptr_t)(out + (size_t)(n - 1u) * ps);
    frame[3] = 0u, frame[4] = 1u, frame[6] = depth;
    pwq_asm(frame, depth);
}

/* pwimg_run's op on mf_pwq<depth> (a filter count a multiple of 4, the checks made), chunk of PWQ_FILTERS at a
 * time. */
static __attribute__((noinline)) void pwq_run(const int8_t *in, const int8_t *wd, int8_t *out,
                                              const mf_channel_requant *rq, uint32_t depth, uint32_t oc_n,
                                              uint32_t batch, uint32_t ih, uint32_t iw, uint32_t oh, uint32_t ow,
                                              const int32_t *st, int whole, size_t ps, uint32_t off16) {
    uint32_t tbl[(PWQ_FILTERS / 4u) * (16u + 2u * 32u)];
    for (uint32_t f0 = 0; f0 < oc_n; f0 += PWQ_FILTERS) {
        const uint32_t n_quads = (oc_n - f0 < PWQ_FILTERS ? oc_n - f0 : PWQ_FILTERS) / 4u;
        pwq_table(tbl, wd, rq, f0, n_quads, depth);
        uint32_t frame[7] = {(uint32_t)(uintptr_t)tbl, 0u, 0u, 0u, 0u, off16, 0u};
        pw_image(pwq_call, frame, depth, in, out + f0, batch, ih, iw, oh, ow, st, whole, ps);
    }
}

/* pwimg_run's op on mf_pwimg<depth> (the checks made), PWI_PAIRS filter pairs at a time: a function of its own
 * so that its table and pwq_run's are not on the stack together. */
static __attribute__((noinline)) void pwimg_tiles(const mf_call *c, const int8_t *in, const int8_t *wd, int8_t *out,
                                                  const mf_channel_requant *rq, uint32_t depth, uint32_t oc_n,
                                                  uint32_t batch, uint32_t ih, uint32_t iw, uint32_t oh, uint32_t ow,
                                                  const int32_t *st, int whole, size_t ps) {
    uint32_t tbl[8u * PWI_PAIRS];
    for (uint32_t f0 = 0; f0 < oc_n; f0 += 2u * PWI_PAIRS) {
        const uint32_t n_pairs = (oc_n - f0) / 2u < PWI_PAIRS ? (oc_n - f0) / 2u : PWI_PAIRS;
        rq_table(tbl, rq, f0, n_pairs, 1);
        /* the asm's frame: table, weights, columns, input, output, pitch, pairs, offset, step */
        uint32_t frame[9] = {(uint32_t)(uintptr_t)tbl, (uint32_t)(uintptr_t)(wd + (size_t)f0 * depth),
                             (uint32_t)(uintptr_t)c->scratch, 0u, 0u, 0u, 0u,
                             (uint32_t)mf_pack_off16(mf_attr_int(c, A_IN_OFF)), 0u};
        pw_image(pwimg_call, frame, depth, in, out + f0, batch, ih, iw, oh, ow, st, whole, ps);
    }
}

/* The op on mf_pwimg<depth> when it applies (1), else 0: a 1x1 without padding, one group, 8, 16 or 32
 * channels, an even filter count, per-channel requantization with a bias, every multiplier >= 0, every shift
 * in [-22, -1], the full clamp. Stride 1 (the output as large as the input): one call for the op's pixels;
 * else one a row of output pixels, the stride's step between them. */
static __attribute__((noinline)) int pwimg_run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    mf_call_input(c, 1, &w);
    const uint32_t depth = w.shape[3], oc_n = w.shape[0];
    if (oc_n < 2 || (oc_n & 1u) || (depth != 8u && depth != 16u && depth != 32u)) return 0;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    if (x.shape[3] != depth || pd[0] != 0 || pd[1] != 0) return 0;
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    if (!rq.per_channel || rq.bias == NULL || rq.lo != -128 || rq.hi != 127) return 0;
    if (!mf_dsp_small_ok(&rq, oc_n, depth) || !dsp_shifts_negative(&rq, oc_n)) return 0;
    if (!rq_mults_nonneg(&rq, oc_n)) return 0;
    const size_t ps = o.pitch ? o.pitch : oc_n;
    const uint32_t oh = o.shape[1], ow = o.shape[2];
    const int whole = st[0] == 1 && st[1] == 1 && oh == x.shape[1] && ow == x.shape[2];
    const int8_t *in = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    int8_t *out = (int8_t *)o.data;
    if ((oc_n & 3u) == 0) {
        pwq_run(in, wd, out, &rq, depth, oc_n, x.shape[0], x.shape[1], x.shape[2], oh, ow, st, whole, ps,
                (uint32_t)mf_pack_off16(mf_attr_int(c, A_IN_OFF)));
    } else {
        pwimg_tiles(c, in, wd, out, &rq, depth, oc_n, x.shape[0], x.shape[1], x.shape[2], oh, ow, st, whole, ps);
    }
    return 1;
}

/* The op on the few-channel path when it takes it (few_depth; 1), or on pw_run's, else 0. Apart from
 * run_fast, whose loop GCC compiled with 3 % more cycles on the other layers with this code inside. */
static __attribute__((noinline)) int few_run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    mf_call_input(c, 1, &w);
    const uint32_t depth = w.shape[1] * w.shape[2] * w.shape[3];
    const int pw = w.shape[1] == 1u && w.shape[2] == 1u;
    if (pw && (depth == 8u || depth == 16u || depth == 32u) && pwimg_run(c)) return 1;
    if ((depth == 8u || depth == 16u) && pw) return pw_run(c);
    if ((depth & 7u) == 0 || depth > 64u) return 0;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    conv_geom g;
    mf_attr_conv_window(c, A_STRIDE, g.st, g.pd, g.dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    g.h = (int32_t)x.shape[1];
    g.w = (int32_t)x.shape[2];
    g.ch = x.shape[3];
    g.wc = w.shape[3];
    g.kh = w.shape[1];
    g.kw = w.shape[2];
    g.zero_point = (int8_t)(-in_off);
    g.contiguous_rows = g.dl[1] == 1 && g.wc == g.ch;
    const uint32_t oc_n = w.shape[0], ow = o.shape[2], pixels = o.shape[1] * ow;
    g.ps = o.pitch ? o.pitch : oc_n;
    const int pointwise = g.kh == 1 && g.kw == 1 && g.pd[0] == 0 && g.pd[1] == 0 &&
                          ((int32_t)o.shape[1] - 1) * g.st[0] < g.h && ((int32_t)ow - 1) * g.st[1] < g.w;
    const int small = mf_dsp_small_ok(&rq, oc_n, depth) ? 1 + dsp_shifts_negative(&rq, oc_n) : 0;
    const uint32_t dp = few_depth(c, &rq, depth, g.ch / g.wc, pointwise, small);
    if (dp == depth) return 0;
    int8_t *scratch = (int8_t *)c->scratch;
    /* the scratch: 3 int16 columns (6 dp bytes), the staging patch (dp), the filters (int16 for mf_few3t_rows28:
     * conv2d_s8_dsp plans 2 bytes a tap) */
    const int8_t *wp = few_weights((const int8_t *)w.data, oc_n, g.kh, g.kw * g.wc, dp, scratch + 7u * dp);
#if FEW3_TILES
    if (dp == 28u && (oc_n & 1u) == 0 && few3t_ok(&rq, oc_n)) few_widen16(scratch + 7u * dp, oc_n * 7u);
#endif
    for (uint32_t k = 0; k < 6u * dp; k++) scratch[k] = 0; /* the columns' padding lanes stay 0 */
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        g.x = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g.ch;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * g.ps;
#if FEW3_TILES
        if (dp == 28u && (oc_n & 1u) == 0) {
            few_image3(&g, wp, &rq, oc_n, o.shape[1], ow, out_image, scratch, mf_pack_off16(in_off), in_off);
            continue;
        }
#endif
        few_image(&g, wp, &rq, oc_n, dp, o.shape[1], ow, out_image, scratch, mf_pack_off16(in_off), in_off);
    }
    return 1;
}
#endif

#if defined(MF_USE_MVE)
/* The MVE path with the weights of filters oc0 .. through weights(ctx, oc0, n, buf), chunk at a time. */
static mf_status run_fast_mve(const mf_call *c, mf_conv_mve_weights weights, const void *ctx, int8_t *buf,
                              uint32_t chunk, int8_t *scratch) {
#else
static __attribute__((noinline)) mf_status run_fast(const mf_call *c) {
#if defined(DSP_TILE)
    if (few_run(c)) return MF_OK;
#endif
#if DSP_PW_RUNS
    if (pw23_run(c) || pw23_run3x3(c)) return MF_OK;
#endif
#endif
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    conv_geom g;
    mf_attr_conv_window(c, A_STRIDE, g.st, g.pd, g.dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    g.h = (int32_t)x.shape[1];
    g.w = (int32_t)x.shape[2];
    g.ch = x.shape[3];
    g.wc = w.shape[3];
    g.kh = w.shape[1];
    g.kw = w.shape[2];
    g.zero_point = (int8_t)(-in_off);
    g.contiguous_rows = g.dl[1] == 1 && g.wc == g.ch;
    const uint32_t oc_n = w.shape[0], groups = g.ch / g.wc, opg = oc_n / groups;
    const uint32_t depth = g.kh * g.kw * g.wc, ow = o.shape[2], pixels = o.shape[1] * ow;
    g.ps = o.pitch ? o.pitch : oc_n; /* a pitched output (format 3.4): pixels pitch apart */
#if defined(MF_USE_MVE)
    mve_filter table[MVE_TABLE];
    mve_mm mm;
    mve_mm_init(&mm, &rq, depth, oc_n, g.ps, table);
#else
    /* 1x1, no padding: the patch is the input pixel */
    const int pointwise = g.kh == 1 && g.kw == 1 && g.pd[0] == 0 && g.pd[1] == 0 &&
                          ((int32_t)o.shape[1] - 1) * g.st[0] < g.h && ((int32_t)ow - 1) * g.st[1] < g.w;
    const int32_t off16 = mf_pack_off16(in_off);
    /* windows inside the input widen straight from its rows (widen_rows) */
    const int rows4 = !pointwise && g.contiguous_rows && (g.kw * g.wc) % 4u == 0;
    const int8_t *wd = (const int8_t *)w.data;
    int8_t *scratch = (int8_t *)c->scratch;
    const int small = mf_dsp_small_ok(&rq, oc_n, depth) ? 1 + dsp_shifts_negative(&rq, oc_n) : 0;
#endif
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        const int8_t *image = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g.ch;
        int8_t *out_image = (int8_t *)o.data + (size_t)n * pixels * g.ps;
        for (uint32_t grp = 0; grp < groups; grp++) {
            g.x = image + (size_t)grp * g.wc;
#if defined(MF_USE_MVE)
            /* the group's filters `chunk` at a time (more repeat the patches' copies) */
            for (uint32_t f0 = 0; f0 < opg; f0 += chunk) {
                mm.rows = opg - f0 < chunk ? opg - f0 : chunk;
                const uint32_t oc0 = grp * opg + f0;
                const int8_t *wr = weights(ctx, oc0, mm.rows, buf);
                mve_fill_table(table, &rq, in_off, wr, oc0, mm.rows, depth);
                run_blocks(&g, &mm, wr, o.shape[1], ow, out_image + oc0, scratch);
            }
#else
            const int8_t *wg = wd + (size_t)grp * opg * depth;
            for (uint32_t p0 = 0; p0 < pixels; p0 += NCOLS) {
                const uint32_t n_cols = pixels - p0 < NCOLS ? pixels - p0 : NCOLS;
                int16_t *cols = (int16_t *)(void *)scratch;
                int8_t *staging = scratch + 4u * depth4(depth);
                for (uint32_t i = 0; i < 2; i++) {
                    const uint32_t p = p0 + (i < n_cols ? i : 0);
                    const int32_t oy = (int32_t)(p / ow), ox = (int32_t)(p % ow);
                    const int8_t *patch = staging;
                    const int32_t y0 = oy * g.st[0] - g.pd[0], x0 = ox * g.st[1] - g.pd[1];
                    if (pointwise) {
                        patch = g.x + ((size_t)(oy * g.st[0]) * (size_t)g.w + (size_t)(ox * g.st[1])) * g.ch;
                    } else if (rows4 && y0 >= 0 && x0 >= 0 && y0 + ((int32_t)g.kh - 1) * g.dl[0] < g.h &&
                               x0 + (int32_t)g.kw - 1 < g.w) {
                        widen_rows(&g, y0, x0, cols, i, off16);
                        continue;
                    } else {
                        im2col_s8(&g, oy, ox, staging, 0);
                    }
                    widen_interleaved(patch, cols, i, depth, off16, in_off);
                }
                int8_t *out0 = out_image + (size_t)p0 * g.ps + grp * opg;
                /* a last odd pixel: its copy in column 1 takes the tiles too, its outputs (the same bytes)
                 * written twice to out0. (To the staging patch, as before, they fit only for at most depth4
                 * filters, and the others took mat_mult_2cols' C loop: VWW's op24, 128 -> 256 channels on 9
                 * pixels, 454.2 -> 429.5 k estimated cycles on the Cortex-M4 model, 247.9 -> 219.0 k on the
                 * Cortex-M7's.) */
                int8_t *out1 = n_cols > 1 ? out0 + g.ps : out0;
                mat_mult_2cols(cols, wg, opg, depth, &rq, small, grp * opg, out0, out1);
            }
#endif
        }
    }
    return MF_OK;
}

#if defined(MF_USE_MVE)
/* conv2d_s8's own weights: in place (ctx: the weight tensor). */
static const int8_t *weights_in_place(const void *ctx, uint32_t oc0, uint32_t n, int8_t *buf) {
    const mf_tensor *w = (const mf_tensor *)ctx;
    (void)n, (void)buf;
    return (const int8_t *)w->data + (size_t)oc0 * w->shape[1] * w->shape[2] * w->shape[3];
}

static mf_status run_fast(const mf_call *c) {
    mf_tensor w;
    mf_call_input(c, 1, &w);
    return run_fast_mve(c, weights_in_place, &w, NULL, MVE_TABLE, (int8_t *)c->scratch);
}

void mf_conv2d_mve(const mf_call *c, mf_conv_mve_weights weights, const void *ctx, int8_t *buf, uint32_t chunk,
                   int8_t *scratch) {
    (void)run_fast_mve(c, weights, ctx, buf, chunk < MVE_TABLE ? chunk : MVE_TABLE, scratch);
}

int mf_conv2d_mve_fits(const mf_call *c) { return mve_fits(c); }
#endif
#endif /* MF_USE_DSP || MF_USE_MVE */

#if defined(MF_USE_SCALAR_FAST)
/* Scalar cores (cortex-m3): output pixels in blocks of 2 x SC_PAIRS. Each pair's patches are packed
 * into one int32 column of the scratch (mf_scalar.h: (a + off) + (b + off) * 2^23, taps outside the
 * input 0, the zero point's value plus the offset), the SC_PAIRS columns interleaved, so that one
 * weight load (LDRSB) and one load of SC_PAIRS words (LDM) feed SC_PAIRS SMLALs: 6 MACs. The sums
 * leave the 64-bit accumulators every MF_SC_CHUNK taps. */
#define SC_PAIRS 3u

/* SC_PAIRS columns of int32 pixel pairs: the planner's formula (kinds/scratch.py) */
static uint32_t scalar_scratch_bytes(uint32_t depth) { return mf_scratch_conv2d_s8_scalar(depth); }

typedef struct {
    const int8_t *x;         /* input image n, channel of the group's first input */
    int32_t h, w, off;       /* input height, width; input offset */
    uint32_t ch, wc, kh, kw; /* input channels, filter channels, kernel */
    int32_t st[2], pd[2], dl[2];
} sc_geom;

/* Writes (high 0) or adds (high 1, times 2^23) one kernel row of one pixel's patch, x + offset, into
 * every SC_PAIRS-th word of dst: input row iy (any), window start x0; taps outside the input are 0
 * (written, or not added). The taps inside [kx0, kx1); adjacent ones (dilation 1, one group) one run. */
static inline __attribute__((always_inline)) void sc_patch_row(const sc_geom *g, int32_t iy, int32_t x0,
                                                              int32_t *dst, int high) {
    const uint32_t kw = g->kw, wc = g->wc, ch = g->ch, row_words = kw * wc;
    const int32_t dl = g->dl[1], w = g->w, scale = high ? 1 << 23 : 1, off = g->off * scale;
    uint32_t kx0 = 0, kx1 = kw;
    if (iy < 0 || iy >= g->h) {
        kx1 = 0;
    } else {
        while (kx0 < kw && x0 + (int32_t)kx0 * dl < 0) kx0++;
        while (kx1 > kx0 && x0 + ((int32_t)kx1 - 1) * dl >= w) kx1--;
    }
    if (!high) {
        for (uint32_t i = 0; i < kx0 * wc; i++) dst[i * SC_PAIRS] = 0;
        for (uint32_t i = kx1 * wc; i < row_words; i++) dst[i * SC_PAIRS] = 0;
    }
    if (kx1 == kx0) return;
    const int8_t *src = g->x + ((size_t)iy * (size_t)w + (size_t)(x0 + (int32_t)kx0 * dl)) * ch;
    const int run = dl == 1 && wc == ch;
    const uint32_t n = run ? (kx1 - kx0) * wc : wc;
    dst += SC_PAIRS * kx0 * wc;
    for (uint32_t kx = kx0; kx < kx1; kx += run ? kw : 1u, src += (size_t)dl * ch) {
        for (uint32_t i = 0; i < n; i++, dst += SC_PAIRS) {
            const int32_t v = src[i] * scale + off;
            *dst = high ? *dst + v : v;
        }
    }
}

/* dst[SC_PAIRS * i] = (a[i] + offset) + (b[i] + offset) * 2^23, i < n: two adjacent runs of input. */
static inline void sc_pack_run(const int8_t *a, const int8_t *b, uint32_t n, int32_t pair_off, int32_t *dst) {
    for (; n > 0; n--, dst += SC_PAIRS) *dst = mf_sc_pair(*a++, *b++) + pair_off;
}

/* The packed patches of output pixels (ya, xa) and (yb, xb) into every SC_PAIRS-th word of col. A kernel
 * row inside the input for both, taps adjacent (dilation 1, one group), is two runs of bytes. */
static void sc_pack_pair(const sc_geom *g, int32_t ya, int32_t xa, int32_t yb, int32_t xb, int32_t *col) {
    const int32_t ay = ya * g->st[0] - g->pd[0], ax = xa * g->st[1] - g->pd[1];
    const int32_t by = yb * g->st[0] - g->pd[0], bx = xb * g->st[1] - g->pd[1];
    const uint32_t kh = g->kh, row_words = g->kw * g->wc;
    const int32_t h = g->h, w = g->w, dy = g->dl[0], span = (int32_t)g->kw - 1, pair_off = mf_sc_pair(g->off, g->off);
    const size_t row_bytes = (size_t)w * g->ch;
    const int runs = g->dl[1] == 1 && g->wc == g->ch && ax >= 0 && ax + span < w && bx >= 0 && bx + span < w;
    for (uint32_t ky = 0; ky < kh; ky++, col += SC_PAIRS * row_words) {
        const int32_t iya = ay + (int32_t)ky * dy, iyb = by + (int32_t)ky * dy;
        if (runs && iya >= 0 && iya < h && iyb >= 0 && iyb < h) {
            sc_pack_run(g->x + (size_t)iya * row_bytes + (size_t)ax * g->ch,
                        g->x + (size_t)iyb * row_bytes + (size_t)bx * g->ch, row_words, pair_off, col);
        } else {
            sc_patch_row(g, iya, ax, col, 0);
            sc_patch_row(g, iyb, bx, col, 1);
        }
    }
}

/* The SC_PAIRS x 2 sums of one filter (w: depth int8) over the packed columns, MF_SC_CHUNK taps at a time. */
static inline __attribute__((always_inline)) void sc_filter(const int32_t *cols, const int8_t *w, uint32_t depth,
                                                           int32_t sums[2 * SC_PAIRS]) {
    mf_sc_dot3(cols, w, depth < MF_SC_CHUNK ? depth : MF_SC_CHUNK, sums);
    for (uint32_t k0 = MF_SC_CHUNK; k0 < depth; k0 += MF_SC_CHUNK) {
        int32_t part[2 * SC_PAIRS];
        mf_sc_dot3(cols + SC_PAIRS * k0, w + k0, depth - k0 < MF_SC_CHUNK ? depth - k0 : MF_SC_CHUNK, part);
        for (uint32_t i = 0; i < 2 * SC_PAIRS; i++) sums[i] += part[i];
    }
}

static int scalar_fits(const mf_call *c) { return path_fits(c, scalar_scratch_bytes); }

typedef struct {
    sc_geom g;
    const int8_t *w;
    int8_t *out;
    mf_channel_requant rq;
    uint32_t oc_n, groups, opg, depth, ow, pixels, batch;
    uint32_t ps; /* output bytes from one pixel to the next: oc_n, or a pitched output's pitch (format 3.4) */
    int pointwise;
} sc_conv;

/* Packs the pairs of output pixels p0 .. p0 + n_pix - 1 (pixels past the last repeat it, unwritten). */
static void sc_pack_block(const sc_conv *v, uint32_t p0, uint32_t n_pix, int32_t *cols) {
    const sc_geom *g = &v->g;
    const int32_t pair_off = mf_sc_pair(g->off, g->off);
    for (uint32_t q = 0; q < SC_PAIRS; q++) {
        const uint32_t pa = p0 + (2 * q < n_pix ? 2 * q : n_pix - 1);
        const uint32_t pb = p0 + (2 * q + 1 < n_pix ? 2 * q + 1 : n_pix - 1);
        const int32_t ya = (int32_t)(pa / v->ow), xa = (int32_t)(pa % v->ow);
        const int32_t yb = (int32_t)(pb / v->ow), xb = (int32_t)(pb % v->ow);
        if (v->pointwise) {
            sc_pack_run(g->x + ((size_t)(ya * g->st[0]) * (size_t)g->w + (size_t)(xa * g->st[1])) * g->ch,
                        g->x + ((size_t)(yb * g->st[0]) * (size_t)g->w + (size_t)(xb * g->st[1])) * g->ch, v->depth,
                        pair_off, cols + q);
        } else {
            sc_pack_pair(g, ya, xa, yb, xb, cols + q);
        }
    }
}

/* Every block of output pixels of image n, group grp, with the output stage `variant`. */
static inline __attribute__((always_inline)) void sc_conv_group(sc_conv *v, uint32_t n, uint32_t grp,
                                                               int32_t *cols, int variant) {
    const int8_t *wg = v->w + (size_t)grp * v->opg * v->depth;
    int8_t *out_image = v->out + (size_t)n * v->pixels * v->ps + grp * v->opg;
    for (uint32_t p0 = 0; p0 < v->pixels; p0 += 2u * SC_PAIRS) {
        const uint32_t n_pix = v->pixels - p0 < 2u * SC_PAIRS ? v->pixels - p0 : 2u * SC_PAIRS;
        sc_pack_block(v, p0, n_pix, cols);
        int8_t *out0 = out_image + (size_t)p0 * v->ps;
        if (variant == MF_SC_FAST_SAT && n_pix == 2u * SC_PAIRS) { /* the common case: outputs from assembly */
            mf_sc_out6 prm;
            for (uint32_t i = 0; i < 6; i++) prm.out[i] = out0 + (size_t)i * v->ps;
            for (uint32_t f = 0; f < v->opg; f++) {
                const mf_sc_channel ch = mf_sc_channel_of(&v->rq, grp * v->opg + f, variant);
                prm.mult = ch.mult, prm.k_high = ch.k_high, prm.right_m1 = ch.right_m1, prm.bias = ch.bias;
                if (v->depth <= MF_SC_CHUNK) {
                    mf_sc_dot3_store6(cols, wg + (size_t)f * v->depth, v->depth, &prm, f);
                } else {
                    int32_t sums[2 * SC_PAIRS];
                    sc_filter(cols, wg + (size_t)f * v->depth, v->depth, sums);
                    mf_sc_store6(sums, &prm, f);
                }
            }
            continue;
        }
        for (uint32_t f = 0; f < v->opg; f++) {
            int32_t sums[2 * SC_PAIRS];
            sc_filter(cols, wg + (size_t)f * v->depth, v->depth, sums);
            const mf_sc_channel ch = mf_sc_channel_of(&v->rq, grp * v->opg + f, variant);
            mf_sc_store(&v->rq, &ch, variant, sums, n_pix, out0 + f, v->ps);
        }
    }
}

static mf_status run_scalar(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    sc_conv v;
    sc_geom *g = &v.g;
    mf_attr_conv_window(c, A_STRIDE, g->st, g->pd, g->dl);
    mf_channel_requant_init(&v.rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    g->off = mf_attr_int(c, A_IN_OFF);
    g->h = (int32_t)x.shape[1];
    g->w = (int32_t)x.shape[2];
    g->ch = x.shape[3];
    g->wc = w.shape[3];
    g->kh = w.shape[1];
    g->kw = w.shape[2];
    v.w = (const int8_t *)w.data;
    v.out = (int8_t *)o.data;
    v.oc_n = w.shape[0];
    v.ps = o.pitch ? o.pitch : v.oc_n;
    v.groups = g->ch / g->wc;
    v.opg = v.oc_n / v.groups;
    v.depth = g->kh * g->kw * g->wc;
    v.ow = o.shape[2];
    v.pixels = o.shape[1] * v.ow;
    v.pointwise = g->kh == 1 && g->kw == 1 && g->pd[0] == 0 && g->pd[1] == 0;
    const int variant = mf_sc_variant(&v.rq, v.oc_n);
    int32_t *cols = (int32_t *)(void *)c->scratch;
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t grp = 0; grp < v.groups; grp++) {
            g->x = (const int8_t *)x.data + (size_t)n * x.shape[1] * x.shape[2] * g->ch + (size_t)grp * g->wc;
            if (variant == MF_SC_FAST_SAT) {
                sc_conv_group(&v, n, grp, cols, MF_SC_FAST_SAT);
            } else if (variant == MF_SC_FAST) {
                sc_conv_group(&v, n, grp, cols, MF_SC_FAST);
            } else {
                sc_conv_group(&v, n, grp, cols, MF_SC_GENERIC);
            }
        }
    }
    return MF_OK;
}
#endif /* MF_USE_SCALAR_FAST */

static mf_status run(const mf_call *c) {
    mf_tensor x, w, b, m, s, o;
#if defined(MF_CONV_FAST)
    if (fast_path_fits(c)) return run_fast(c);
#endif
#if defined(MF_USE_SCALAR_FAST)
    if (scalar_fits(c)) return run_scalar(c);
#endif
    const int has_bias = mf_call_weighted(c, &x, &w, &b, &m, &s, &o);
    const int32_t in_off = mf_attr_int(c, A_IN_OFF);
    int32_t st[2], pd[2], dl[2];
    mf_attr_conv_window(c, A_STRIDE, st, pd, dl);
    mf_channel_requant rq;
    mf_channel_requant_init(&rq, c, has_bias ? &b : NULL, &m, &s, A_ACT_MIN);
    const int8_t *xd = (const int8_t *)x.data, *wd = (const int8_t *)w.data;
    const int32_t h = (int32_t)x.shape[1], wi = (int32_t)x.shape[2];
    const uint32_t ch = x.shape[3], wc = w.shape[3], oc_n = w.shape[0], kh = w.shape[1], kw = w.shape[2];
    const uint32_t oc_per_group = oc_n / (ch / wc);
    const size_t ps = o.pitch ? o.pitch : oc_n; /* a pitched output (format 3.4): pixels pitch apart */
    for (uint32_t n = 0; n < x.shape[0]; n++) {
        for (uint32_t oy = 0; oy < o.shape[1]; oy++) {
            for (uint32_t ox = 0; ox < o.shape[2]; ox++) {
                const int64_t y0 = (int64_t)oy * st[0] - pd[0], x0 = (int64_t)ox * st[1] - pd[1];
                int8_t *out = (int8_t *)o.data + (((size_t)n * o.shape[1] + oy) * o.shape[2] + ox) * ps;
                for (uint32_t oc = 0; oc < oc_n; oc++) {
                    int32_t acc = 0;
                    for (uint32_t ky = 0; ky < kh; ky++) {
                        const int64_t iy = y0 + (int64_t)ky * dl[0];
                        if (iy < 0 || iy >= h) continue;
                        for (uint32_t kx = 0; kx < kw; kx++) {
                            const int64_t ix = x0 + (int64_t)kx * dl[1];
                            if (ix < 0 || ix >= wi) continue;
                            const int8_t *xp = xd + (((size_t)n * (size_t)h + (size_t)iy) * (size_t)wi + (size_t)ix) * ch +
                                               (size_t)(oc / oc_per_group) * wc;
                            const int8_t *wp = wd + (((size_t)oc * kh + ky) * kw + kx) * wc;
                            acc += mf_dot_s8(xp, wp, wc, in_off);
                        }
                    }
                    *out++ = mf_channel_requant_s8(&rq, oc, acc);
                }
            }
        }
    }
    return MF_OK;
}

const mf_kernel mf_kernel_conv2d_s8 = {MF_KIND_HEAD_conv2d_s8, check, run};
