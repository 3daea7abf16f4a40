/*
 * Generated from src/mcuforge/kinds/scratch.py by `python -m mcuforge.kinds`: do not edit
 * (tests/test_kinds.py fails while it is stale). Scratch bytes per kernel path: the planner's formulas
 * (mcuforge.ir.kernel_scratch_bytes), which the kernels call for the same size.
 */
#ifndef MF_KIND_SCRATCH_H
#define MF_KIND_SCRATCH_H

#include <stdint.h>

#define MF_ROUND_UP(a, n) (((a) + (n) - 1u) / (n) * (n))

static inline uint32_t mf_scratch_min(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t mf_scratch_max(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* conv2d_s8 on mve: MVE: an int8 patch (depth = kh * kw * filter channels) and 4 interleaved ones in 16-byte
 * chunks; DSP: 2 int16 patches and an int8 one; 5 patches rounded up to 16 serve both (on DSP the smaller plan of
 * conv2d_s8_dsp, mcuforge.kinds.scratch.OPTIONAL_SCRATCH). */
static inline uint32_t mf_scratch_conv2d_s8_im2col(uint32_t depth) { return 5u * MF_ROUND_UP(depth, 16u); }

/* conv2d_s8 on dsp: conv2d_s8_im2col's patches, then, for a patch of at most 64 taps and not a multiple of 8 (the
 * few-input-channel first layers: 3x3x3 = 27), the filters copied with their rows zero-padded to a multiple of 8
 * (28 for 25..28 taps), word-aligned, so that the 2 x 2 tiles' asm runs on them, 2 bytes a tap (the 2 x 3 tiles'
 * filters widened to int16 once), and 2 patches more: a third int16 column (the 2 x 3 tiles at 28 taps); for a 1x1
 * kernel (window = kh * kw = 1), one patch more (the pointwise 2 x 3 tiles' three int16 columns: 6 patches) and
 * every filter widened to int16 once per run (2 bytes a tap: the tiles' groups unpack no weights) with its bias
 * and output constants (16 bytes); for a 3x3 kernel on a multiple of 16 taps (window = 9), the same for its 2 x 3
 * tiles with three int8 patches more (9 patches). */
static inline uint32_t mf_scratch_conv2d_s8_dsp(uint32_t depth, uint32_t filters, uint32_t window) { return 5u * MF_ROUND_UP(depth, 16u) + (2u * filters * MF_ROUND_UP(depth, 8u) + 2u * MF_ROUND_UP(depth, 16u)) * mf_scratch_min(1u, MF_ROUND_UP(depth, 8u) - depth) * mf_scratch_min(1u, 65u / (depth + 1u)) + (MF_ROUND_UP(depth, 16u) + 2u * filters * MF_ROUND_UP(depth, 16u) + 16u * filters) * (1u / mf_scratch_max(window, 1u)) + (4u * MF_ROUND_UP(depth, 16u) + 2u * filters * MF_ROUND_UP(depth, 16u) + 16u * filters) * (window / 9u) * (9u / mf_scratch_max(window, 1u)) * (1u - mf_scratch_min(1u, MF_ROUND_UP(depth, 16u) - depth)); }

/* conv2d_s8 on dsp, the plan between conv2d_s8_dsp's and conv2d_s8_im2col's (OPTIONAL_SCRATCH): for a 1x1 kernel
 * the 2 x 3 tiles' three int16 columns (6 patches), their filters unpacked in the tiles; for a 3x3 kernel on a
 * multiple of 16 taps, the same and three int8 patches (9 patches); any other kernel, conv2d_s8_im2col's. */
static inline uint32_t mf_scratch_conv2d_s8_pw23(uint32_t depth, uint32_t window) { return 5u * MF_ROUND_UP(depth, 16u) + MF_ROUND_UP(depth, 16u) * (1u / mf_scratch_max(window, 1u)) + 4u * MF_ROUND_UP(depth, 16u) * (window / 9u) * (9u / mf_scratch_max(window, 1u)) * (1u - mf_scratch_min(1u, MF_ROUND_UP(depth, 16u) - depth)); }

/* conv2d_s8 on scalar: cortex-m3: 3 columns of int32 pixel pairs. */
static inline uint32_t mf_scratch_conv2d_s8_scalar(uint32_t depth) { return 12u * depth; }

/* conv2d_s4 on dsp: conv2d_s8's 5 patches, the patch rounded up to 8 (a word of 8 packed weights widened at a
 * time). */
static inline uint32_t mf_scratch_conv2d_s4_im2col(uint32_t depth) { return 5u * MF_ROUND_UP(depth, 8u); }

/* conv2d_s4 on mve: conv2d_s8's im2col scratch (its MVE path runs the op), then the filters unpacked to int8 as
 * many at a time as 4 KB holds, at most 64 (its output-stage table) and all of them; none beyond 4096 taps (the
 * packed-weight paths, which conv2d_s4_im2col's smaller plan serves, run then). */
static inline uint32_t mf_scratch_conv2d_s4_mve_unpacked(uint32_t depth, uint32_t filters) { return 5u * MF_ROUND_UP(depth, 16u) + depth * mf_scratch_min(mf_scratch_min(filters, 64u), 4096u / mf_scratch_max(depth, 1u)); }

/* fully_connected_s4 on dsp, mve: one input row widened to int16. */
static inline uint32_t mf_scratch_fully_connected_s4_row(uint32_t depth) { return 2u * MF_ROUND_UP(depth, 8u); }

/* depthwise_conv2d_s4 on dsp, mve: its weights unpacked to int8. */
static inline uint32_t mf_scratch_depthwise_conv2d_s4_weights(uint32_t numel) { return MF_ROUND_UP(numel, 4u); }

/* add_s8 on scalar: its inputs' two tables of 256 int32 (an add of equal shapes uses them). */
static inline uint32_t mf_scratch_add_s8_tables(void) { return 2048u; }

/* conv2d_s16 on dsp: one int16 im2col patch. */
static inline uint32_t mf_scratch_conv2d_s16_im2col(uint32_t depth) { return MF_ROUND_UP(2u * depth, 16u); }

/* conv2d_s16 on mve: 4 int16 im2col patches, each rounded up to 8 values (the 4 output pixels of an MVE pass); the
 * one-patch path's check (conv2d_s16_im2col) is met by it. */
static inline uint32_t mf_scratch_conv2d_s16_mve_patches(uint32_t depth) { return 8u * MF_ROUND_UP(depth, 8u); }

/* depthwise_conv2d_s8 on scalar: the taps, a ring of the span rows the window reaches and a row of zeros, each
 * `row` words of packed pixel pairs, and the sums of `pairs` output pixel pairs (rows along the longer output
 * axis; the pixel-major 3x3 path's 384 bytes of tables are added where it runs). */
static inline uint32_t mf_scratch_depthwise_conv2d_s8_rows(uint32_t taps, uint32_t span, uint32_t row, uint32_t pairs) { return 4u * (taps + (span + 1u) * row + 2u * pairs); }

/* depthwise_conv2d_s8 on dsp: the channel-planar 3x3 path's rings: 3 int16 rows of `cols` (12..56: the view's
 * windows + 3, rounded up to 4) for each of 4 channels, a channel's rows 56 halfwords apart (an immediate in its
 * asm), k channels side by side in them, the next k 168 halfwords on; k = 56 // cols for those cols, written 59 //
 * (cols + 1) + cols // 59 to be at least 1 for any cols. */
static inline uint32_t mf_scratch_depthwise_conv2d_s8_dwp(uint32_t cols) { return 2u * (cols + 112u + (3u - 3u / (59u / (cols + 1u) + cols / 59u) * (59u / (cols + 1u) + cols / 59u)) * cols + 3u / (59u / (cols + 1u) + cols / 59u) * 168u); }

/* lstm_s8 / gru_s8 on portable, scalar, dsp, mve: one batch row's int16 cell (hidden) state and four int16 gate
 * vectors. */
static inline uint32_t mf_scratch_recurrent_state(uint32_t hidden) { return MF_ROUND_UP(10u * hidden, 16u); }

#endif /* MF_KIND_SCRATCH_H */
