/*
 * Generated from src/mcuforge/kinds/table.py by `python -m mcuforge.kinds`: do not edit
 * (tests/test_kinds.py fails while it is stale). One line per op kind there; see docs/adding-an-op.md.
 */
#ifndef MF_KIND_TABLE_H
#define MF_KIND_TABLE_H

#include <stdint.h>

#include "kind_scratch.h" /* the scratch formulas (mcuforge/kinds/scratch.py) */

/* The program file's kind ids. */
#define MF_KIND_CONV2D_S8 1u
#define MF_KIND_DEPTHWISE_CONV2D_S8 2u
#define MF_KIND_FULLY_CONNECTED_S8 3u
#define MF_KIND_ADD_S8 4u
#define MF_KIND_AVGPOOL_S8 5u
#define MF_KIND_MAXPOOL_S8 6u
#define MF_KIND_CLAMP_S8 7u
#define MF_KIND_MUL_S8 8u
#define MF_KIND_SOFTMAX_S8 9u
#define MF_KIND_PAD_S8 10u
#define MF_KIND_CONCAT_S8 11u
#define MF_KIND_BATCH_MATMUL_S8 12u
#define MF_KIND_TRANSPOSE_CONV2D_S8 13u
#define MF_KIND_LUT_S8 14u
#define MF_KIND_CONV2D_S4 15u
#define MF_KIND_DEPTHWISE_CONV2D_S4 16u
#define MF_KIND_FULLY_CONNECTED_S4 17u
#define MF_KIND_FULLY_CONNECTED_PER_CHANNEL_S8 18u
#define MF_KIND_RESHAPE 20u
#define MF_KIND_TRANSPOSE 21u
#define MF_KIND_SLICE 22u
#define MF_KIND_EMBEDDING_S8 23u
#define MF_KIND_UPSAMPLE_NEAREST2D_S8 24u
#define MF_KIND_FLIP_S8 25u
#define MF_KIND_MAXIMUM_S8 26u
#define MF_KIND_MINIMUM_S8 27u
#define MF_KIND_QUANTIZE 30u
#define MF_KIND_DEQUANTIZE 31u
#define MF_KIND_ATEN_FP32 40u
#define MF_KIND_DELEGATE 50u
#define MF_KIND_CONV2D_S16 60u
#define MF_KIND_DEPTHWISE_CONV2D_S16 61u
#define MF_KIND_FULLY_CONNECTED_S16 62u
#define MF_KIND_ADD_S16 63u
#define MF_KIND_MUL_S16 64u
#define MF_KIND_AVGPOOL_S16 65u
#define MF_KIND_MAXPOOL_S16 66u
#define MF_KIND_SOFTMAX_S16 67u
#define MF_KIND_BATCH_MATMUL_S16 68u
#define MF_KIND_LUT_S16 69u
#define MF_KIND_ACTIVATION_S16 70u
#define MF_KIND_CLAMP_S16 71u
#define MF_KIND_CONVERT_S8_S16 72u
#define MF_KIND_CONVERT_S16_S8 73u
#define MF_KIND_LSTM_S8 80u
#define MF_KIND_GRU_S8 81u
#define MF_KIND_INSERT_TILE 90u

/* A kernel's mf_kernel head: kind, name, fewest and most inputs (255: any number), optional-input
 * mask, attribute types. A kernel is defined as {MF_KIND_HEAD_<name>, check, run}. */
#define MF_KIND_HEAD_conv2d_s8 MF_KIND_CONV2D_S8, "conv2d_s8", 4, 5, 1u << 2, "iiIIIii"
#define MF_KIND_HEAD_depthwise_conv2d_s8 MF_KIND_DEPTHWISE_CONV2D_S8, "depthwise_conv2d_s8", 4, 5, 1u << 2, "iiIIIiii"
#define MF_KIND_HEAD_fully_connected_s8 MF_KIND_FULLY_CONNECTED_S8, "fully_connected_s8", 4, 5, 1u << 2, "iiii?i"
#define MF_KIND_HEAD_add_s8 MF_KIND_ADD_S8, "add_s8", 2, 2, 0, "iiiiiiiiiiii"
#define MF_KIND_HEAD_avgpool_s8 MF_KIND_AVGPOOL_S8, "avgpool_s8", 1, 1, 0, "IIIiiI"
#define MF_KIND_HEAD_maxpool_s8 MF_KIND_MAXPOOL_S8, "maxpool_s8", 1, 1, 0, "IIIiiI"
#define MF_KIND_HEAD_clamp_s8 MF_KIND_CLAMP_S8, "clamp_s8", 1, 1, 0, "ii"
#define MF_KIND_HEAD_mul_s8 MF_KIND_MUL_S8, "mul_s8", 2, 2, 0, "iiiiiii"
#define MF_KIND_HEAD_softmax_s8 MF_KIND_SOFTMAX_S8, "softmax_s8", 1, 1, 0, "iii"
#define MF_KIND_HEAD_pad_s8 MF_KIND_PAD_S8, "pad_s8", 1, 1, 0, "Ii"
#define MF_KIND_HEAD_concat_s8 MF_KIND_CONCAT_S8, "concat_s8", 1, 255, 0, "i"
#define MF_KIND_HEAD_batch_matmul_s8 MF_KIND_BATCH_MATMUL_S8, "batch_matmul_s8", 2, 2, 0, "iiiiiiiii"
#define MF_KIND_HEAD_transpose_conv2d_s8 MF_KIND_TRANSPOSE_CONV2D_S8, "transpose_conv2d_s8", 4, 5, 1u << 2, "iiIIii"
#define MF_KIND_HEAD_lut_s8 MF_KIND_LUT_S8, "lut_s8", 2, 2, 0, ""
#define MF_KIND_HEAD_conv2d_s4 MF_KIND_CONV2D_S4, "conv2d_s4", 4, 5, 1u << 2, "iiIIIii"
#define MF_KIND_HEAD_depthwise_conv2d_s4 MF_KIND_DEPTHWISE_CONV2D_S4, "depthwise_conv2d_s4", 4, 5, 1u << 2, "iiIIIiii"
#define MF_KIND_HEAD_fully_connected_s4 MF_KIND_FULLY_CONNECTED_S4, "fully_connected_s4", 4, 5, 1u << 2, "iiii"
#define MF_KIND_HEAD_fully_connected_per_channel_s8 MF_KIND_FULLY_CONNECTED_PER_CHANNEL_S8, "fully_connected_per_channel_s8", 4, 5, 1u << 2, "iiii?i"
#define MF_KIND_HEAD_reshape MF_KIND_RESHAPE, "reshape", 1, 1, 0, ""
#define MF_KIND_HEAD_transpose MF_KIND_TRANSPOSE, "transpose", 1, 1, 0, "I"
#define MF_KIND_HEAD_slice MF_KIND_SLICE, "slice", 1, 1, 0, "III?i"
#define MF_KIND_HEAD_embedding_s8 MF_KIND_EMBEDDING_S8, "embedding_s8", 2, 2, 0, ""
#define MF_KIND_HEAD_upsample_nearest2d_s8 MF_KIND_UPSAMPLE_NEAREST2D_S8, "upsample_nearest2d_s8", 1, 1, 0, ""
#define MF_KIND_HEAD_flip_s8 MF_KIND_FLIP_S8, "flip_s8", 1, 1, 0, "I"
#define MF_KIND_HEAD_maximum_s8 MF_KIND_MAXIMUM_S8, "maximum_s8", 2, 2, 0, ""
#define MF_KIND_HEAD_minimum_s8 MF_KIND_MINIMUM_S8, "minimum_s8", 2, 2, 0, ""
#define MF_KIND_HEAD_quantize MF_KIND_QUANTIZE, "quantize", 1, 1, 0, "fi"
#define MF_KIND_HEAD_dequantize MF_KIND_DEQUANTIZE, "dequantize", 1, 1, 0, "fi"
#define MF_KIND_HEAD_aten_fp32 MF_KIND_ATEN_FP32, "aten_fp32", 0, 255, 0, "saai"
#define MF_KIND_HEAD_delegate MF_KIND_DELEGATE, "delegate", 2, 255, 0, "siIIiiii"
#define MF_KIND_HEAD_conv2d_s16 MF_KIND_CONV2D_S16, "conv2d_s16", 4, 5, 1u << 2, "IIIii"
#define MF_KIND_HEAD_depthwise_conv2d_s16 MF_KIND_DEPTHWISE_CONV2D_S16, "depthwise_conv2d_s16", 4, 5, 1u << 2, "IIIiii"
#define MF_KIND_HEAD_fully_connected_s16 MF_KIND_FULLY_CONNECTED_S16, "fully_connected_s16", 4, 5, 1u << 2, "ii"
#define MF_KIND_HEAD_add_s16 MF_KIND_ADD_S16, "add_s16", 2, 2, 0, "iiiiiiiii"
#define MF_KIND_HEAD_mul_s16 MF_KIND_MUL_S16, "mul_s16", 2, 2, 0, "iiii"
#define MF_KIND_HEAD_avgpool_s16 MF_KIND_AVGPOOL_S16, "avgpool_s16", 1, 1, 0, "IIIiiI"
#define MF_KIND_HEAD_maxpool_s16 MF_KIND_MAXPOOL_S16, "maxpool_s16", 1, 1, 0, "IIIiiI"
#define MF_KIND_HEAD_softmax_s16 MF_KIND_SOFTMAX_S16, "softmax_s16", 3, 3, 0, "ii"
#define MF_KIND_HEAD_batch_matmul_s16 MF_KIND_BATCH_MATMUL_S16, "batch_matmul_s16", 2, 2, 0, "iiiiii"
#define MF_KIND_HEAD_lut_s16 MF_KIND_LUT_S16, "lut_s16", 2, 2, 0, ""
#define MF_KIND_HEAD_activation_s16 MF_KIND_ACTIVATION_S16, "activation_s16", 1, 1, 0, "ii"
#define MF_KIND_HEAD_clamp_s16 MF_KIND_CLAMP_S16, "clamp_s16", 1, 1, 0, "ii"
#define MF_KIND_HEAD_convert_s8_s16 MF_KIND_CONVERT_S8_S16, "convert_s8_s16", 1, 1, 0, "iii"
#define MF_KIND_HEAD_convert_s16_s8 MF_KIND_CONVERT_S16_S8, "convert_s16_s8", 1, 1, 0, "iii"
#define MF_KIND_HEAD_lstm_s8 MF_KIND_LSTM_S8, "lstm_s8", 5, 5, 0, "IIIIiiiiiiiii"
#define MF_KIND_HEAD_gru_s8 MF_KIND_GRU_S8, "gru_s8", 5, 5, 0, "IIIIiii"
#define MF_KIND_HEAD_insert_tile MF_KIND_INSERT_TILE, "insert_tile", 1, 2, 1u << 1, "I?i"

/* The precisions an op of the kind may record: bit p for MF_PREC_* code p. */
static inline uint32_t mf_kind_precisions(uint16_t kind) {
    switch (kind) {
    case MF_KIND_CONV2D_S8:
    case MF_KIND_DEPTHWISE_CONV2D_S8:
    case MF_KIND_FULLY_CONNECTED_S8:
    case MF_KIND_TRANSPOSE_CONV2D_S8:
    case MF_KIND_FULLY_CONNECTED_PER_CHANNEL_S8:
    case MF_KIND_EMBEDDING_S8:
    case MF_KIND_DELEGATE:
    case MF_KIND_LSTM_S8:
    case MF_KIND_GRU_S8:
        return (1u << MF_PREC_A8W8);
    case MF_KIND_ADD_S8:
    case MF_KIND_AVGPOOL_S8:
    case MF_KIND_MAXPOOL_S8:
    case MF_KIND_CLAMP_S8:
    case MF_KIND_MUL_S8:
    case MF_KIND_SOFTMAX_S8:
    case MF_KIND_PAD_S8:
    case MF_KIND_CONCAT_S8:
    case MF_KIND_BATCH_MATMUL_S8:
    case MF_KIND_LUT_S8:
    case MF_KIND_UPSAMPLE_NEAREST2D_S8:
    case MF_KIND_FLIP_S8:
    case MF_KIND_MAXIMUM_S8:
    case MF_KIND_MINIMUM_S8:
        return (1u << MF_PREC_A8);
    case MF_KIND_CONV2D_S4:
    case MF_KIND_DEPTHWISE_CONV2D_S4:
    case MF_KIND_FULLY_CONNECTED_S4:
        return (1u << MF_PREC_A8W4);
    case MF_KIND_RESHAPE:
    case MF_KIND_TRANSPOSE:
    case MF_KIND_SLICE:
    case MF_KIND_INSERT_TILE:
        return (1u << MF_PREC_A8) | (1u << MF_PREC_A16) | (1u << MF_PREC_FP32);
    case MF_KIND_QUANTIZE:
    case MF_KIND_DEQUANTIZE:
    case MF_KIND_ATEN_FP32:
        return (1u << MF_PREC_FP32);
    case MF_KIND_CONV2D_S16:
    case MF_KIND_DEPTHWISE_CONV2D_S16:
    case MF_KIND_FULLY_CONNECTED_S16:
        return (1u << MF_PREC_A16W8);
    case MF_KIND_ADD_S16:
    case MF_KIND_MUL_S16:
    case MF_KIND_AVGPOOL_S16:
    case MF_KIND_MAXPOOL_S16:
    case MF_KIND_SOFTMAX_S16:
    case MF_KIND_BATCH_MATMUL_S16:
    case MF_KIND_LUT_S16:
    case MF_KIND_ACTIVATION_S16:
    case MF_KIND_CLAMP_S16:
    case MF_KIND_CONVERT_S8_S16:
    case MF_KIND_CONVERT_S16_S8:
        return (1u << MF_PREC_A16);
    default:
        return 0u;
    }
}

/* 1 when the kind may write its output exactly onto its input `pos`. */
static inline uint32_t mf_kind_in_place(uint16_t kind, uint32_t pos) {
    switch (kind) {
    case MF_KIND_DEPTHWISE_CONV2D_S8:
    case MF_KIND_CLAMP_S8:
    case MF_KIND_LUT_S8:
    case MF_KIND_RESHAPE:
    case MF_KIND_LUT_S16:
    case MF_KIND_ACTIVATION_S16:
    case MF_KIND_CLAMP_S16:
        return pos < 32u && ((1u << 0) >> pos & 1u);
    case MF_KIND_ADD_S8:
    case MF_KIND_MUL_S8:
    case MF_KIND_MAXIMUM_S8:
    case MF_KIND_MINIMUM_S8:
    case MF_KIND_ADD_S16:
    case MF_KIND_MUL_S16:
        return pos < 32u && ((1u << 0 | 1u << 1) >> pos & 1u);
    case MF_KIND_INSERT_TILE:
        return pos < 32u && ((1u << 1) >> pos & 1u);
    default:
        return 0u;
    }
}

/* 1 when input `input` of the kind may be a packed int4 tensor. */
static inline uint32_t mf_kind_int4_input(uint16_t kind, uint32_t input) {
    switch (kind) {
    case MF_KIND_CONV2D_S4:
    case MF_KIND_DEPTHWISE_CONV2D_S4:
    case MF_KIND_FULLY_CONNECTED_S4:
        return input == 1u;
    default:
        return 0u;
    }
}

#endif /* MF_KIND_TABLE_H */
