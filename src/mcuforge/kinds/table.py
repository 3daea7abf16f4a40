"""Every op kind, one entry each: the place to read first (and to write, when adding a kind).

The program file's kind ids, the IR tables (mcuforge.ir: OP_KINDS, KIND_PRECISIONS, IN_PLACE_INPUTS, ...), the
C runtime's csrc/runtime/kind_table.h (``python -m mcuforge.kinds``), the MAC counts, the sensitivity and NPU
partition sets and the TOSA set are derived from this table. Ids are stable: never renumber or reuse one.
"""

from __future__ import annotations

from .spec import KindSpec

_W = ("x", "weight", "bias?", "multipliers", "shifts")  # the weighted kernels' inputs
_ACT = (("act_min", "int"), ("act_max", "int"))
_WINDOW = (("stride", "ints"), ("padding", "ints"), ("dilation", "ints"))
_OFFSETS = (("input_offset", "int"), ("output_offset", "int"))
_CONV = (*_OFFSETS, *_WINDOW, *_ACT)
_DEPTHWISE = (*_OFFSETS, *_WINDOW, ("depth_multiplier", "int"), *_ACT)
_FC = (*_OFFSETS, *_ACT, ("filter_offset", "int"))
# arm_avgpool_s8 / arm_max_pool_s8: windows over in-bounds elements only; the output size is explicit
# (output_hw, as CMSIS-NN takes it: torch's ceil_mode is one choice of it), every window must hit the input.
_POOL = (("kernel", "ints"), ("stride", "ints"), ("padding", "ints"), *_ACT, ("output_hw", "ints"))
_MOVES = ("a8", "a16", "fp32")  # data movement: the precision of the values it moves
# fully_connected_s8 and its per-channel form take CMSIS-NN's fc_params->filter_offset, the negated weight zero
# point in [-127, 128] (the compiler's weights are symmetric: 0, left out of the file).
_FILTER_OFFSET = {"filter_offset": 0}
_NO_NPU = dict(tosa=False, npu_compute=False)
_INT8_NPU = dict(tosa=True, npu_compute=True)
_RECURRENT_IN = ("x", "w_ih", "w_hh", "input_bias", "hidden_bias")
_RECURRENT_REQUANT = (("input_multipliers", "ints"), ("input_shifts", "ints"), ("hidden_multipliers", "ints"),
                      ("hidden_shifts", "ints"))

KINDS: tuple[KindSpec, ...] = (
    # ---- int8 (CMSIS-NN's s8 kernels, the TFLite int8 spec) ----
    KindSpec("conv2d_s8", 1, _W, _CONV, ("a8w8",), searchable_weights=True, macs="conv", **_INT8_NPU,
             cmsis_nn="arm_convolve_s8"),
    # in_place: TinyEngine's in-place depthwise (depth multiplier 1, batch 1), only where the planner chooses it
    # (mcuforge.plan.IN_PLACE_IF_CHOSEN); the output may be smaller than x (strided) and lies at x's first byte.
    KindSpec("depthwise_conv2d_s8", 2, _W, _DEPTHWISE, ("a8w8",), searchable_weights=True, macs="depthwise",
             in_place=(0,), **_INT8_NPU, cmsis_nn="arm_depthwise_conv_s8"),
    # Per tensor (arm_fully_connected_s8); it still reads length-O multipliers and shifts, as format 1.0 files hold.
    KindSpec("fully_connected_s8", 3, _W, _FC, ("a8w8",), optional_attrs=_FILTER_OFFSET, searchable_weights=True,
             macs="fully_connected", **_INT8_NPU, cmsis_nn="arm_fully_connected_s8"),
    KindSpec("add_s8", 4, ("a", "b"), (
        ("a_offset", "int"), ("a_multiplier", "int"), ("a_shift", "int"), ("b_offset", "int"),
        ("b_multiplier", "int"), ("b_shift", "int"), ("left_shift", "int"), ("output_offset", "int"),
        ("output_multiplier", "int"), ("output_shift", "int"), *_ACT), in_place=(0, 1), **_INT8_NPU,
        cmsis_nn="arm_elementwise_add_s8"),
    KindSpec("avgpool_s8", 5, ("x",), _POOL, **_INT8_NPU, cmsis_nn="arm_avgpool_s8"),
    KindSpec("maxpool_s8", 6, ("x",), _POOL, **_INT8_NPU, cmsis_nn="arm_max_pool_s8"),
    KindSpec("clamp_s8", 7, ("x",), _ACT, in_place=(0,), **_INT8_NPU,
             cmsis_nn="none (CMSIS-NN fuses the clamp into its kernels' activation range)"),
    # Elementwise multiply (arm_elementwise_mul_s8); a and b broadcast like numpy over equal ranks.
    KindSpec("mul_s8", 8, ("a", "b"), (
        ("a_offset", "int"), ("b_offset", "int"), ("output_offset", "int"), ("output_multiplier", "int"),
        ("output_shift", "int"), *_ACT), in_place=(0, 1), **_INT8_NPU, cmsis_nn="arm_elementwise_mul_s8"),
    # Softmax over the last stored axis (arm_softmax_s8); output scale 1/256, zero point -128.
    KindSpec("softmax_s8", 9, ("x",), (("multiplier", "int"), ("shift", "int"), ("diff_min", "int")),
             cmsis_nn="arm_softmax_s8"),
    # Constant pad: pads = (before, after) per stored dim, flattened; pad_value is int8.
    KindSpec("pad_s8", 10, ("x",), (("pads", "ints"), ("pad_value", "int")), tosa=True, cmsis_nn="arm_pad_s8"),
    # Concatenation along a stored axis; all inputs share the output's quantization (byte copy).
    KindSpec("concat_s8", 11, ("*",), (("axis", "int"),), min_inputs=1, tosa=True,
             cmsis_nn="arm_concatenation_s8_{x,y,z,w}"),
    # arm_batch_matmul_s8: lhs (..., M, K) [adj_x: (..., K, M)], rhs (..., K, N) [adj_y: (..., N, K)].
    KindSpec("batch_matmul_s8", 12, ("lhs", "rhs"), (
        ("lhs_offset", "int"), ("rhs_offset", "int"), ("output_offset", "int"), ("output_multiplier", "int"),
        ("output_shift", "int"), *_ACT, ("adj_x", "int"), ("adj_y", "int")), macs="batch_matmul", **_INT8_NPU,
        cmsis_nn="arm_batch_matmul_s8"),
    # arm_transpose_conv_s8: NHWC, OHWI weights, per-channel requantization; output size = output shape.
    KindSpec("transpose_conv2d_s8", 13, _W, (*_OFFSETS, ("stride", "ints"), ("padding", "ints"), *_ACT),
             ("a8w8",), macs="transpose_conv", cmsis_nn="arm_transpose_conv_s8"),
    # Table activation: out = table[x + 128], table int8[256].
    KindSpec("lut_s8", 14, ("x", "table"), in_place=(0,), **_INT8_NPU,
             cmsis_nn="none (TFLite's int8 LUT; CMSIS-NN has no table kernel)"),
    # int4 weights (CMSIS-NN's s4 packing) with int8 activations: the inputs, attributes and arithmetic of the s8
    # kinds; fully_connected_s4 is per tensor (length-O multipliers requantize per channel as the s8 kernel does).
    KindSpec("conv2d_s4", 15, _W, _CONV, ("a8w4",), int4_weights=True, macs="conv", cmsis_nn="arm_convolve_s4"),
    KindSpec("depthwise_conv2d_s4", 16, _W, _DEPTHWISE, ("a8w4",), int4_weights=True, macs="depthwise",
             cmsis_nn="arm_depthwise_conv_s4"),
    KindSpec("fully_connected_s4", 17, _W, _FC[:-1], ("a8w4",), int4_weights=True, macs="fully_connected",
             cmsis_nn="arm_fully_connected_s4"),
    # arm_fully_connected_per_channel_s8: multipliers and shifts of length O.
    KindSpec("fully_connected_per_channel_s8", 18, _W, _FC, ("a8w8",), optional_attrs=_FILTER_OFFSET,
             searchable_weights=True, macs="fully_connected", **_INT8_NPU,
             cmsis_nn="arm_fully_connected_per_channel_s8"),
    # ---- data movement, any element type ----
    KindSpec("reshape", 20, ("x",), precisions=_MOVES, in_place=(0,), tosa=True, cmsis_nn="none (no data moves)"),
    KindSpec("transpose", 21, ("x",), (("perm", "ints"),), precisions=_MOVES, tosa=True,
             cmsis_nn="arm_transpose_s8 (int8 only)"),
    # x[begin:end:step] per stored dim of x; the output may drop size-1 dims (same elements, same order).
    # outside 1: the output lies over bytes of x outside the box it reads (the planner reused an overlapped input's
    # dead rows for a patch's buffers: mcuforge.plan.input_bands); the readers accept exactly that overlap.
    KindSpec("slice", 22, ("x",), (("begin", "ints"), ("end", "ints"), ("step", "ints"), ("outside", "int")),
             precisions=_MOVES, tosa=True, optional_attrs={"outside": 0}, cmsis_nn="none"),
    # A constant int8 table (rows, D) indexed by int64 / int32 indices: out[..., :] = table[indices[...], :], in the
    # output's quantization (the table is quantized to it at compile time; an index outside [0, rows) is an error).
    KindSpec("embedding_s8", 23, ("indices", "table"), precisions=("a8w8",), aten=("embedding.default",),
             cmsis_nn="none (CMSIS-NN has no embedding / gather kernel; TFLite's GATHER)"),
    # Nearest-neighbour upsampling of an NHWC int8 tensor by whole factors (output H, W = k * input H, W, read
    # from the shapes); the output shares the input's quantization (a byte copy).
    KindSpec("upsample_nearest2d_s8", 24, ("x",), aten=("upsample_nearest2d.vec", "upsample_nearest2d.default"),
             shares_input_qparams=True, cmsis_nn="none (CMSIS-NN has no resize kernel; TFLite's "
             "RESIZE_NEAREST_NEIGHBOR)"),
    # Reversal of an int8 tensor along the stored dims `dims` (torch.flip): out[..., i, ...] = x[..., n - 1 - i, ...];
    # the output shares the input's quantization (a byte copy).
    KindSpec("flip_s8", 25, ("x",), (("dims", "ints"),), aten=("flip.default",), shares_input_qparams=True,
             cmsis_nn="none (CMSIS-NN has no reverse kernel; TFLite's REVERSE_V2)"),
    # arm_maximum_s8 / arm_minimum_s8: elementwise max / min, no requantization (a, b and the output share one
    # quantization); a and b broadcast like numpy over ranks <= 4 (CMSIS-NN's N, H, W, C dims).
    KindSpec("maximum_s8", 26, ("a", "b"), in_place=(0, 1), **_INT8_NPU, cmsis_nn="arm_maximum_s8"),
    KindSpec("minimum_s8", 27, ("a", "b"), in_place=(0, 1), **_INT8_NPU, cmsis_nn="arm_minimum_s8"),
    # ---- the fp32 fallback and its precision boundaries ----
    KindSpec("quantize", 30, ("x",), (("scale", "float"), ("zero_point", "int")), ("fp32",), cmsis_nn="none"),
    KindSpec("dequantize", 31, ("x",), (("scale", "float"), ("zero_point", "int")), ("fp32",), cmsis_nn="none"),
    # An aten op with its arguments (TensorRef for tensor arguments) and its position in the C runtime's fp32
    # table (mcuforge.aten_table.aten_table_index; -1 for an op the table does not have).
    KindSpec("aten_fp32", 40, ("*",), (("target", "str"), ("args", "any"), ("kwargs", "any"), ("table_index", "int")),
             ("fp32",), min_inputs=0, macs="aten", cmsis_nn="none (fp32)"),
    # A subgraph compiled for an NPU (Ethos-U, by Vela): input_count activations, then the constant blobs command
    # stream, weights and (optional) TOSA flatbuffer; see mcuforge.program.delegate and docs/format.md. Run by
    # csrc/runtime/delegate.c, not a kernel.
    KindSpec("delegate", 50, ("*",), (
        ("npu", "str"), ("input_count", "int"), ("input_offsets", "ints"), ("output_offsets", "ints"),
        ("npu_cycles", "int"), ("sram_bytes", "int"), ("flash_bytes", "int"), ("macs", "int")), ("a8w8",),
        min_inputs=2, c=False, cmsis_nn="none (the NPU's)"),
    # ---- int16 activations (A16W8: symmetric int16, zero point 0, so no offsets), CMSIS-NN's s16 kernels ----
    # The weighted kinds take int8 weights, an optional int64 bias, int32 multipliers and int8 shifts (in [-31, 14],
    # the range of arm_nn_requantize_s64); fully_connected_s16 reads length-1 (arm_fully_connected_s16) or length-O
    # ones. conv2d_s16 also takes an int32 bias: arm_convolve_s16's int32-bias form (arm_nn_requantize, [-31, 30]).
    KindSpec("conv2d_s16", 60, _W, (*_WINDOW, *_ACT), ("a16w8",), macs="conv", cmsis_nn="arm_convolve_s16"),
    KindSpec("depthwise_conv2d_s16", 61, _W, (*_WINDOW, ("depth_multiplier", "int"), *_ACT), ("a16w8",),
             macs="depthwise", cmsis_nn="arm_depthwise_conv_s16"),
    KindSpec("fully_connected_s16", 62, _W, _ACT, ("a16w8",), macs="fully_connected",
             cmsis_nn="arm_fully_connected_s16"),
    # arm_elementwise_add_s16 (TFLite int16 ADD parameters, left_shift 15); a and b broadcast like numpy.
    KindSpec("add_s16", 63, ("a", "b"), (
        ("a_multiplier", "int"), ("a_shift", "int"), ("b_multiplier", "int"), ("b_shift", "int"),
        ("left_shift", "int"), ("output_multiplier", "int"), ("output_shift", "int"), *_ACT), ("a16",),
        in_place=(0, 1), cmsis_nn="arm_elementwise_add_s16"),
    KindSpec("mul_s16", 64, ("a", "b"), (("output_multiplier", "int"), ("output_shift", "int"), *_ACT), ("a16",),
             in_place=(0, 1), cmsis_nn="arm_elementwise_mul_s16"),
    KindSpec("avgpool_s16", 65, ("x",), _POOL, ("a16",), cmsis_nn="arm_avgpool_s16"),
    KindSpec("maxpool_s16", 66, ("x",), _POOL, ("a16",), cmsis_nn="arm_max_pool_s16"),
    # arm_softmax_s16 over the last stored axis with its two int16[513] tables; output scale 1/32768.
    KindSpec("softmax_s16", 67, ("x", "exp_lut", "one_by_one_lut"), (("multiplier", "int"), ("shift", "int")),
             ("a16",), cmsis_nn="arm_softmax_s16"),
    KindSpec("batch_matmul_s16", 68, ("lhs", "rhs"), (
        ("output_multiplier", "int"), ("output_shift", "int"), *_ACT, ("adj_x", "int"), ("adj_y", "int")),
        ("a16",), macs="batch_matmul", cmsis_nn="arm_batch_matmul_s16"),
    # Interpolated int16[513] table (mcuforge.kernels.lut_s16).
    KindSpec("lut_s16", 69, ("x", "table"), precisions=("a16",), in_place=(0,),
             cmsis_nn="none (TFLite's int16 LUT)"),
    # arm_nn_activation_s16: function 0 sigmoid, 1 tanh; Q3.12 input shifted left by left_shift, Q0.15 output.
    KindSpec("activation_s16", 70, ("x",), (("function", "int"), ("left_shift", "int")), ("a16",), in_place=(0,),
             cmsis_nn="arm_nn_activation_s16"),
    KindSpec("clamp_s16", 71, ("x",), _ACT, ("a16",), in_place=(0,), cmsis_nn="none (fused in CMSIS-NN kernels)"),
    # Where int8 and int16 values meet: requantizing casts (arm_nn_requantize arithmetic).
    KindSpec("convert_s8_s16", 72, ("x",), (("input_offset", "int"), ("multiplier", "int"), ("shift", "int")),
             ("a16",), cmsis_nn="none"),
    KindSpec("convert_s16_s8", 73, ("x",), (("output_offset", "int"), ("multiplier", "int"), ("shift", "int")),
             ("a16",), cmsis_nn="none"),
    # ---- recurrent layers as one op ----
    # lstm_s8: arm_lstm_unidirectional_s8, batch first (N, T, I) -> (N, T, H) from the zero state; int8 weights
    # (4H, I) and (4H, H) in torch's gate order (i, f, g, o), int32 effective biases (zero points folded in), one
    # multiplier/shift per gate and matrix, int16 gates and cell state (scale 2^cell_scale_power); scratch of int16
    # cell state and gates. int8 in, out and weights: the int16 state stays inside.
    KindSpec("lstm_s8", 80, _RECURRENT_IN, (
        *_RECURRENT_REQUANT, ("forget_to_cell_multiplier", "int"), ("forget_to_cell_shift", "int"),
        ("input_to_cell_multiplier", "int"), ("input_to_cell_shift", "int"), ("output_multiplier", "int"),
        ("output_shift", "int"), ("output_offset", "int"), ("cell_scale_power", "int"), ("cell_clip", "int")),
        ("a8w8",), recurrent_gates=4, macs="recurrent", cmsis_nn="arm_lstm_unidirectional_s8"),
    # gru_s8: a GRU layer in the same style (mcuforge.kernels.gru), gates (r, z, n), int16 Q0.15 hidden state.
    KindSpec("gru_s8", 81, _RECURRENT_IN, (
        *_RECURRENT_REQUANT, ("output_multiplier", "int"), ("output_shift", "int"), ("output_offset", "int")),
        ("a8w8",), recurrent_gates=3, macs="recurrent", cmsis_nn="none (CMSIS-NN has no GRU)"),
    # ---- memory: patch-based execution (mcuforge.patches) ----
    # out = dst (zeros without one) with tile written at begin (per stored dim of dst): where each spatial patch's
    # result lands in the patched chain's output; written onto dst in place. Data movement: bytes are copied.
    # fill 0 (without dst): only the tile's bytes are written, the rest of out is left as it is (the planner put
    # out over the dead bytes of the graph input, which later tiles cover: mcuforge.plan.input_overlap).
    KindSpec("insert_tile", 90, ("tile", "dst?"), (("begin", "ints"), ("fill", "int")), precisions=_MOVES,
             in_place=(1,), optional_attrs={"fill": 1}, cmsis_nn="none (no CMSIS-NN counterpart: a strided copy)"),
)

KIND: dict[str, KindSpec] = {spec.name: spec for spec in KINDS}
KIND_BY_ID: dict[int, KindSpec] = {spec.id: spec for spec in KINDS}
