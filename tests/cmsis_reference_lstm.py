"""CMSIS-NN's arm_lstm_unidirectional_s8 (and mcuforge's GRU in its style) as plain Python integer loops
with C semantics.

The independent statement tests/test_lstm.py checks mcuforge's lstm_s8 and gru_s8 kernels against; nothing from
mcuforge is used. It follows the structure of the C library: arm_lstm_unidirectional_s8 (zero cell
state, no hidden state at the first step, the output of step t - 1 as the hidden state of step t; here
batch first, one batch row after the other, which is CMSIS-NN's non-time-major order),
arm_nn_lstm_step_s8 (forget gate times the cell state, then input gate times cell gate accumulated and
clipped, then the output gate times tanh of the cell state to int8), arm_nn_lstm_calculate_gate_s8_s16
(the output zeroed, then arm_nn_vec_mat_mul_result_acc_s8_s16 for the input and for the hidden state:
effective bias + dot product, arm_nn_requantize, + the int16 value already there, clamp to int16; then
arm_nn_activation_s16 with left shift 0), arm_elementwise_mul_s16 / arm_elementwise_mul_acc_s16 /
arm_elementwise_mul_s16_s8 (product, arm_nn_requantize, + offset, [+ the output's value], clamp).
"""

from __future__ import annotations

from cmsis_reference_s16 import INT16_MAX, INT16_MIN, ref_activation_s16, sigmoid_table_q16

from cmsis_reference import c_requantize, c_wrap32, clamp

TABLE = sigmoid_table_q16()


def _vec_mat_mul_result_acc(lhs, rhs, bias, dst, mult, shift):
    """arm_nn_vec_mat_mul_result_acc_s8_s16, one batch row: dst[r] = clamp16(requant(bias[r] + lhs.rhs[r]) + dst[r])."""
    for r, row in enumerate(rhs):
        acc = bias[r]
        for a, w in zip(lhs, row, strict=True):
            acc = c_wrap32(acc + a * w)
        dst[r] = clamp(c_wrap32(c_requantize(acc, mult, shift) + dst[r]), INT16_MIN, INT16_MAX)


def _gate(x, hidden, w_ih, w_hh, b_ih, b_hh, k, h, p, sigmoid):
    rows = slice(k * h, (k + 1) * h)
    out = [0] * h  # memset
    _vec_mat_mul_result_acc(x, w_ih[rows], b_ih[rows], out, p["input_multipliers"][k], p["input_shifts"][k])
    if hidden is not None:
        _vec_mat_mul_result_acc(hidden, w_hh[rows], b_hh[rows], out, p["hidden_multipliers"][k],
                                p["hidden_shifts"][k])
    return [ref_activation_s16(v, 0, sigmoid, TABLE) for v in out]


def ref_lstm_s8(x, w_ih, w_hh, b_ih, b_hh, p):
    """x [N][T][I] int8; w_ih [4H][I], w_hh [4H][H] (gates i, f, g, o); effective biases [4H]; ``p`` the
    multipliers/shifts (4 per list), scalars as lstm_s8 names them. Returns [N][T][H] int8."""
    h = len(w_hh[0])
    out = []
    for seq in x:
        cell = [0] * h
        hidden = None
        rows = []
        for xt in seq:
            f = _gate(xt, hidden, w_ih, w_hh, b_ih, b_hh, 1, h, p, True)
            # arm_elementwise_mul_s16(forget, cell): offsets 0, clamp to int16
            cell = [clamp(c_requantize(a * c, p["forget_to_cell_multiplier"], p["forget_to_cell_shift"]),
                          INT16_MIN, INT16_MAX) for a, c in zip(f, cell, strict=True)]
            i = _gate(xt, hidden, w_ih, w_hh, b_ih, b_hh, 0, h, p, True)
            g = _gate(xt, hidden, w_ih, w_hh, b_ih, b_hh, 2, h, p, False)
            # arm_elementwise_mul_acc_s16(input, cell gate): + the cell state, clamp to +-cell_clip
            clip = p["cell_clip"]
            cell = [clamp(c_wrap32(c_requantize(a * b, p["input_to_cell_multiplier"], p["input_to_cell_shift"]) + c),
                          -clip, clip) for a, b, c in zip(i, g, cell, strict=True)]
            o = _gate(xt, hidden, w_ih, w_hh, b_ih, b_hh, 3, h, p, True)
            tanh_c = [ref_activation_s16(c, p["cell_scale_power"] + 12, False, TABLE) for c in cell]
            # arm_elementwise_mul_s16_s8(output gate, tanh(c)): + output offset, clamp to int8
            hidden = [clamp(c_wrap32(c_requantize(a * b, p["output_multiplier"], p["output_shift"])
                                     + p["output_offset"]), -128, 127) for a, b in zip(o, tanh_c, strict=True)]
            rows.append(hidden)
        out.append(rows)
    return out


def ref_gru_s8(x, w_ih, w_hh, b_ih, b_hh, p):
    """gru_s8 (mcuforge's GRU in CMSIS-NN's LSTM style; CMSIS-NN has no GRU) with the same C primitives:
    x [N][T][I] int8; w_ih [3H][I], w_hh [3H][H] (gates r, z, n); biases [3H]; the hidden state int16 Q0.15.
    Per row and gate: input term clamp16(requant(bias + x . w)); hidden term requant(bias + h . w) (int32
    accumulators); r, z = sigmoid(clamp16(x_k + h_k)); n = tanh(clamp16(x_n + clamp16(q15(r * clamp16(h_n)))));
    h = clamp16(n + q15(z * (h - n))); out = clamp8(requant(h) + offset); q15(v) = requant(v, 2^30, -14)."""
    h_size = len(w_hh[0])

    def term(vec, rows, bias, k, mults, shifts):
        out = []
        for r in range(k * h_size, (k + 1) * h_size):
            acc = bias[r]
            for a, w in zip(vec, rows[r], strict=True):
                acc = c_wrap32(acc + a * w)
            out.append(c_requantize(acc, p[mults][k], p[shifts][k]))
        return out

    def q15(v):
        return c_requantize(v, 1 << 30, -14)

    result = []
    for seq in x:
        h = [0] * h_size
        rows = []
        for xt in seq:
            xs = [[clamp(v, INT16_MIN, INT16_MAX) for v in term(xt, w_ih, b_ih, k, "input_multipliers",
                                                                 "input_shifts")] for k in range(3)]
            hs = [term(h, w_hh, b_hh, k, "hidden_multipliers", "hidden_shifts") for k in range(3)]
            r, z = ([ref_activation_s16(clamp(c_wrap32(a + b), INT16_MIN, INT16_MAX), 0, True, TABLE)
                     for a, b in zip(xs[k], hs[k], strict=True)] for k in (0, 1))
            n = [ref_activation_s16(clamp(a + clamp(q15(g * clamp(b, INT16_MIN, INT16_MAX)), INT16_MIN, INT16_MAX),
                                          INT16_MIN, INT16_MAX), 0, False, TABLE)
                 for a, b, g in zip(xs[2], hs[2], r, strict=True)]
            h = [clamp(c + q15(zz * (hh - c)), INT16_MIN, INT16_MAX) for c, zz, hh in zip(n, z, h, strict=True)]
            rows.append([clamp(c_requantize(v, p["output_multiplier"], p["output_shift"]) + p["output_offset"],
                               -128, 127) for v in h])
        result.append(rows)
    return result
