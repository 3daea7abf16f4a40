/*
 * The kernels of this runtime, one line each: MF_KERNEL(name) refers to the
 * `const mf_kernel mf_kernel_<name>` defined in kernels/<file>.c. Adding a kernel = one new file
 * + one line here (see csrc/README.md). Not include-guarded on purpose: runtime/registry.c
 * includes it twice with different MF_KERNEL definitions. In increasing kind id (mcuforge/ir.py
 * OP_KINDS): mf_kernel_find binary-searches this list.
 */
MF_KERNEL(conv2d_s8)
MF_KERNEL(depthwise_conv2d_s8)
MF_KERNEL(fully_connected_s8)
MF_KERNEL(add_s8)
MF_KERNEL(avgpool_s8)
MF_KERNEL(maxpool_s8)
MF_KERNEL(clamp_s8)
MF_KERNEL(mul_s8)
MF_KERNEL(softmax_s8)
MF_KERNEL(pad_s8)
MF_KERNEL(concat_s8)
MF_KERNEL(batch_matmul_s8)
MF_KERNEL(transpose_conv2d_s8)
MF_KERNEL(lut_s8)
MF_KERNEL(conv2d_s4)
MF_KERNEL(depthwise_conv2d_s4)
MF_KERNEL(fully_connected_s4)
MF_KERNEL(fully_connected_per_channel_s8)
MF_KERNEL(reshape)
MF_KERNEL(transpose)
MF_KERNEL(slice)
MF_KERNEL(quantize)
MF_KERNEL(dequantize)
MF_KERNEL(aten_fp32)
