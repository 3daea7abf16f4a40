/*
 * Shared parts of the int16-activation (A16W8) kernels (declared in mf_s16.h): the load-time checks
 * and output stage of the weighted s16 ops, and arm_nn_activation_s16 (sigmoid / tanh from a Q0.16
 * sigmoid table), bit-exact with mcuforge.kernels.lut_s16.activation_s16.
 */
#include "mf_s16.h"

mf_status mf_check_weighted_s16_any_bias(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                         const mf_tensor *shift, uint32_t channels, uint64_t depth,
                                         uint32_t a_act_min) {
    int32_t lo, hi;
    if (!bias || bias->dtype != MF_INT32) {
        return mf_check_weighted_s16(c, bias, mult, shift, channels, depth, a_act_min);
    }
    if (depth == 0 || depth > MF_S16_MAX_DEPTH) return MF_ERR_SHAPE;
    if (!mf_attr_act_s16(c, a_act_min, &lo, &hi)) return MF_ERR_SHAPE;
    if (!mf_is(bias, MF_INT32, 1) || bias->shape[0] != channels) return MF_ERR_SHAPE;
    if (!(mult->flags & MF_TENSOR_FLAG_CONSTANT)) return MF_ERR_SHAPE; /* mf_check_requant checks the shifts' */
    return mf_check_requant(mult, shift, channels);
}

mf_status mf_check_weighted_s16(const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                                const mf_tensor *shift, uint32_t channels, uint64_t depth, uint32_t a_act_min) {
    int32_t lo, hi;
    if (depth == 0 || depth > MF_S16_MAX_DEPTH) return MF_ERR_SHAPE;
    if (!mf_attr_act_s16(c, a_act_min, &lo, &hi)) return MF_ERR_SHAPE;
    if (bias) {
        if (!mf_is(bias, MF_INT64, 1) || bias->shape[0] != channels) return MF_ERR_SHAPE;
        if (!(bias->flags & MF_TENSOR_FLAG_CONSTANT)) return MF_ERR_SHAPE; /* checked here, not per run */
        for (uint32_t i = 0; i < channels; i++) {
            int64_t b;
            memcpy(&b, (const uint8_t *)bias->data + 8u * i, 8);
            if (b <= -MF_S16_BIAS_LIMIT || b >= MF_S16_BIAS_LIMIT) return MF_ERR_SHAPE;
        }
    }
    if (!mf_is(mult, MF_INT32, 1) || !mf_is(shift, MF_INT8, 1)) return MF_ERR_SHAPE; /* int8 shifts: format 2.0 */
    if (mult->shape[0] != shift->shape[0]) return MF_ERR_SHAPE;
    if (mult->shape[0] != 1 && mult->shape[0] != channels) return MF_ERR_SHAPE;
    if (!(mult->flags & MF_TENSOR_FLAG_CONSTANT) || !(shift->flags & MF_TENSOR_FLAG_CONSTANT)) return MF_ERR_SHAPE;
    const int32_t *m = (const int32_t *)mult->data;
    const mf_shift *s = (const mf_shift *)shift->data;
    for (uint32_t i = 0; i < shift->shape[0]; i++) {
        if (m[i] == INT32_MIN || s[i] < MF_S64_SHIFT_MIN || s[i] > MF_S64_SHIFT_MAX) return MF_ERR_SHAPE;
    }
    return MF_OK;
}

void mf_requant_s16_init(mf_requant_s16 *q, const mf_call *c, const mf_tensor *bias, const mf_tensor *mult,
                         const mf_tensor *shift, uint32_t a_act_min) {
    q->bias = bias ? (const uint8_t *)bias->data : NULL;
    q->int32_bias = bias && bias->dtype == MF_INT32;
    q->mult = (const int32_t *)mult->data;
    q->shift = (const mf_shift *)shift->data;
    q->per_channel = mult->shape[0] != 1;
    mf_attr_act_s16(c, a_act_min, &q->lo, &q->hi);
}

/* CMSIS-NN's Q0.16 sigmoid table: sigmoid(i / 24) rounded to nearest, 44 entries one above (Arm's tuning),
 * generated from mcuforge.kernels.lut_s16.SIGMOID_TABLE_U16 (which documents the corrections). */
static const uint16_t sigmoid_table_u16[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535};

void mf_activation_s16(const int16_t *x, int16_t *out, uint32_t n, int32_t left_shift, int is_tanh) {
    /* tanh(x) = 2 sigmoid(2x) - 1: the same table read at twice the resolution */
    const uint32_t abs_shift = is_tanh ? 8u : 9u, frac_mask = (1u << abs_shift) - 1u;
    const uint32_t saturation = is_tanh ? 0xFFFFu << 8 : 0x7FFFu << 10;
    /* Q3.12 x 3 reads the table at 24 * x; a negative left_shift is a right shift rounding half up */
    const int32_t input_multiplier = left_shift < 0 ? 3 : 3 << left_shift;
    const int32_t right = left_shift < 0 ? -left_shift : 0;
    const int32_t rounding = right > 0 ? 1 << (right - 1) : 0;
    for (uint32_t i = 0; i < n; i++) {
        /* |x * m| <= 2^15 * 3 * 2^14 < 2^31; with right > 0, |3 x| + 2^30 < 2^31 */
        const int32_t v = (x[i] * input_multiplier + rounding) >> right;
        const uint32_t u = v > 0 ? (uint32_t)v : 0u - (uint32_t)v;
        const uint32_t h = u >> abs_shift;
        uint32_t r = saturation;
        if (h < 255u) {
            const uint32_t ua = sigmoid_table_u16[h], ub = sigmoid_table_u16[h + 1];
            r = (ua << abs_shift) + (u & frac_mask) * (ub - ua);
        }
        if (is_tanh) {
            r = v >= 0 ? (r - (1u << 23)) + (1u << 7) : ((1u << 23) - r) + (1u << 7) - 1u;
            r >>= 8;
        } else {
            r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
            r >>= 10;
        }
        out[i] = mf_wrap16((int32_t)(r & 0xFFFFu)); /* the int16 cast of the C kernel's uint32 result */
    }
}
