/*
 * In-place kernel paths the planner may choose (mcuforge.plan.IN_PLACE_IF_CHOSEN): an op whose output starts at
 * its input's first byte. The kernel files call these when the offsets coincide.
 */
#ifndef MF_IN_PLACE_H
#define MF_IN_PLACE_H

#include "mf_kernel_util.h"

/* depthwise_conv2d_s8 over its own input (depthwise_in_place.c). mf_depthwise_s8_in_place_check at load time
 * (depth multiplier 1, batch 1, output no larger than the input, Ho x Wo bytes of scratch);
 * mf_depthwise_s8_in_place runs it. */
mf_status mf_depthwise_s8_in_place_check(const mf_call *c);
mf_status mf_depthwise_s8_in_place(const mf_call *c);
/* Channels [c0, c1) of it (each channel reads and writes only its own slots: any channels, in any order). */
void mf_depthwise_s8_in_place_channels(const mf_call *c, uint32_t c0, uint32_t c1);
/* Whether op c writes its output 0 from the first byte of its input 0 (both activations). */
int mf_output_on_input(const mf_call *c);

#endif /* MF_IN_PLACE_H */
