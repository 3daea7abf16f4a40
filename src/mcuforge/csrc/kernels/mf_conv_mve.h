/*
 * conv2d_s8's MVE path (conv2d_s8.c) on int8 weights another kernel supplies: conv2d_s4 unpacks its
 * int4 weights a few filters at a time into a buffer and runs the same im2col blocks and rows loop.
 */
#ifndef MF_CONV_MVE_H
#define MF_CONV_MVE_H

#include "mf_simd.h"

#if defined(MF_USE_MVE)
/* The int8 weights of filters oc0 .. oc0 + n - 1 (row after row of depth bytes): in place, or written to
 * buf (room for n rows) and returned. */
typedef const int8_t *(*mf_conv_mve_weights)(const void *ctx, uint32_t oc0, uint32_t n, int8_t *buf);

/* The convolution c (conv2d_s8's attributes and shapes; its weights through `weights`) by conv2d_s8's
 * MVE path, the filters of a group `chunk` (1..64) at a time: the caller has checked that it fits
 * (mf_conv2d_mve_fits), that buf holds chunk rows and scratch conv2d_s8's plan
 * (mf_scratch_conv2d_s8_im2col of the patch). */
void mf_conv2d_mve(const mf_call *c, mf_conv_mve_weights weights, const void *ctx, int8_t *buf, uint32_t chunk,
                   int8_t *scratch);

/* Whether conv2d_s8's MVE path takes c given the scratch: an optimized build, index arithmetic in int32,
 * and no multiplier of INT32_MIN. */
int mf_conv2d_mve_fits(const mf_call *c);

/* Inline-asm text: the requantization of the four int32 sums in q3 by multiplier operand a2 and shift operand a3
 * (mf_requantize_x4_n: left shift when a3 > 0, VQRDMULH, then the rounding right shift), q0 clobbered; used by
 * conv2d_s8's and conv2d_s4's MVE rows. */
#define MVE_REQ_GENERAL                                                                               \
    "   cmp          %[a3], #0\n"                                                                  \
    "   ble          4f\n"                                                                         \
    "   vshl.s32     q3, %[a3]\n"                                                                  \
    "4: vqrdmulh.s32 q3, q3, %[a2]\n"                                                              \
    "   bge          5f\n"                                                                         \
    "   vshr.s32     q0, q3, #31\n"                                                                \
    "   vqadd.s32    q3, q3, q0\n"                                                                 \
    "   vrshl.s32    q3, %[a3]\n"                                                                  \
    "5:\n"
#endif

#endif /* MF_CONV_MVE_H */
