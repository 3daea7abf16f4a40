"""int8 2-D convolution (CMSIS-NN ``arm_convolve_s8``), plus the window geometry shared by the
depthwise convolution and pooling kernels.

Geometry (CMSIS semantics): output pixel (oy, ox) reads input rows ``oy*stride_h - pad_h + i*dil_h`` and
columns ``ox*stride_w - pad_w + j*dil_w`` for kernel tap (i, j). Taps outside the input are skipped (for
convolutions that is the same as a pad value of ``-input_offset``, i.e. the input zero point). Padding is
therefore only ever given for the top/left; the bottom/right extent follows from the output size.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import ArrayLike

from .quant_utils import OUTPUT_OFFSET_RANGE, S4_OUTPUT_OFFSET_RANGE, Requantizer, check_int8, check_weighted_params

IntPair = int | tuple[int, int]

#: Largest float64 im2col block (bytes) built at once; batches are processed in chunks below this.
IM2COL_BUDGET_BYTES = 16 << 20
#: Working set (bytes) of one conv2d_s8 batch chunk: patches and accumulators stay in L2/L3.
CONV_BUDGET_BYTES = 2 << 20


def pair(value: IntPair, name: str, minimum: int) -> tuple[int, int]:
    """Normalise an int or (h, w) pair and check both entries are integers >= minimum."""
    hw = (value, value) if isinstance(value, int | np.integer) else tuple(value)
    if len(hw) != 2 or not all(isinstance(v, int | np.integer) and v >= minimum for v in hw):
        raise ValueError(f"{name} must be an int or a pair of ints >= {minimum}, got {value!r}")
    return int(hw[0]), int(hw[1])


def conv_output_hw(
    input_hw: tuple[int, int],
    kernel_hw: tuple[int, int],
    stride: IntPair = 1,
    padding: IntPair = 0,
    dilation: IntPair = 1,
) -> tuple[int, int]:
    """Default output size: ``floor((H + 2*pad - dil*(K-1) - 1) / stride) + 1`` per spatial axis."""
    st, pd, dl = pair(stride, "stride", 1), pair(padding, "padding", 0), pair(dilation, "dilation", 1)
    return tuple(  # type: ignore[return-value]
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(input_hw, kernel_hw, st, pd, dl, strict=True)
    )


def check_grouped_filters(w: np.ndarray, c: int) -> tuple[int, int, int, int]:
    """(OC, KH, KW, C / G) of a (grouped) convolution's int8 filters ``w`` (O, KH, KW, C / G) on ``c`` input
    channels: the channels and the filters must divide into equal groups."""
    oc, kh, kw, wc = w.shape
    if wc < 1 or c % wc or oc % (c // wc):
        raise ValueError(f"w_ohwi has {wc} input channels per filter: x_nhwc's {c} channels (groups = {c} / {wc}) "
                         f"and the {oc} filters must divide into equal groups")
    return oc, kh, kw, wc


def check_depthwise_filters(w: np.ndarray, c: int, depth_multiplier: int) -> tuple[int, int, int, int]:
    """(KH, KW, OC, M) of a depthwise convolution's int8 filters ``w`` (1, KH, KW, C * M) on ``c`` input
    channels with depth multiplier M."""
    one, kh, kw, oc = w.shape
    if not isinstance(depth_multiplier, int | np.integer) or depth_multiplier < 1:
        raise ValueError(f"depth_multiplier must be an int >= 1, got {depth_multiplier!r}")
    m = int(depth_multiplier)
    if one != 1 or oc != c * m:
        raise ValueError(f"w_1hwc must have shape (1, KH, KW, {c}*{m}={c * m}), got {w.shape}")
    return kh, kw, oc, m


def resolve_geometry(
    input_hw: tuple[int, int],
    kernel_hw: tuple[int, int],
    stride: IntPair,
    padding: IntPair,
    dilation: IntPair,
    output_hw: tuple[int, int] | None,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Validate the window parameters; return (stride, padding, dilation, output_hw) as pairs."""
    st, pd, dl = pair(stride, "stride", 1), pair(padding, "padding", 0), pair(dilation, "dilation", 1)
    if output_hw is None:
        out = conv_output_hw(input_hw, kernel_hw, st, pd, dl)
    else:
        out = pair(output_hw, "output_hw", 1)
    if min(out) < 1:
        raise ValueError(
            f"empty output {out} for input {input_hw}, kernel {kernel_hw}, "
            f"stride {st}, padding {pd}, dilation {dl}"
        )
    return st, pd, dl, out


def window_taps(
    x: np.ndarray,
    kernel_hw: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    output_hw: tuple[int, int],
    fill: int | float,
) -> Iterator[tuple[int, int, np.ndarray]]:
    """For each kernel tap (i, j) yield ``(i, j, view)`` with view shape (N, OH, OW, C) and

    ``view[n, oy, ox, c] = x[n, oy*sh - ph + i*dh, ox*sw - pw + j*dw, c]``, or ``fill`` where that position is
    outside the input. Views are strided slices of one padded copy of ``x`` (``padded_input``).
    """
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel_hw, stride, dilation, output_hw
    xp = padded_input(x, kernel_hw, stride, padding, dilation, output_hw, fill, x.dtype.type)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            yield i, j, xp[:, rows, cols, :]


def window_view(xp: np.ndarray, kernel_hw: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
                output_hw: tuple[int, int]) -> np.ndarray:
    """Every window of a ``padded_input`` as one read-only view: shape (N, OH, OW, C, KH, KW) with
    ``[n, y, x, c, i, j] = xp[n, y*sh + i*dh, x*sw + j*dw, c]`` (a reduction over the last two axes is one
    pass over the output, where a pass per tap streams the whole output KH*KW times)."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel_hw, stride, dilation, output_hw
    s_n, s_h, s_w, s_c = xp.strides
    return as_strided(xp, (xp.shape[0], oh, ow, xp.shape[3], kh, kw),
                      (s_n, s_h * sh, s_w * sw, s_c, s_h * dh, s_w * dw), writeable=False)


def batch_chunks(n: int, bytes_per_item: int, budget: int | None = None) -> Iterator[slice]:
    """Split range(n) into slices whose working set stays under ``budget`` bytes (default
    ``IM2COL_BUDGET_BYTES``), at least one item each."""
    step = max(1, (IM2COL_BUDGET_BYTES if budget is None else budget) // max(1, bytes_per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def check_float64_exact(terms: int, input_offset: int) -> None:
    """The float64 dot products are exact while terms * max|x + offset| * max|w| < 2^53.

    Every partial sum is then an integer below 2^53, so the result does not depend on the BLAS summation
    order. With int8 data and an offset in [-127, 128] each product is at most 256 * 128 = 2^15 in magnitude:
    it would take 2^38 terms to break.
    """
    if terms * (128 + abs(int(input_offset))) * 128 >= 1 << 53:
        raise ValueError(f"dot product of {terms} terms may not be exact in float64")


def padded_input(
    x: np.ndarray,
    kernel_hw: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    output_hw: tuple[int, int],
    fill: int | float,
    dtype: type,
) -> np.ndarray:
    """``x`` (N, H, W, C) as ``dtype``, padded with ``fill`` so that every window of the geometry lies inside
    (top/left by ``padding``, bottom/right as far as the output size reaches), and cropped of rows/columns
    no window reads. Window (oy, ox) then starts at row ``oy*sh``, column ``ox*sw`` of the result."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = kernel_hw, stride, padding, dilation, output_hw
    n, h, w, c = x.shape
    span_h = (oh - 1) * sh + (kh - 1) * dh + 1  # rows touched, in padded coordinates
    span_w = (ow - 1) * sw + (kw - 1) * dw + 1
    out = np.empty((n, span_h, span_w, c), dtype=dtype)
    rows = slice(max(0, ph), min(span_h, ph + h))  # in padded coordinates
    cols = slice(max(0, pw), min(span_w, pw + w))
    if rows.start > 0 or cols.start > 0 or rows.stop < span_h or cols.stop < span_w:
        out.fill(fill)
    if rows.stop > rows.start and cols.stop > cols.start:
        out[:, rows, cols, :] = x[:, rows.start - ph:rows.stop - ph, cols.start - pw:cols.stop - pw, :]
    return out


def im2col(
    xp: np.ndarray,
    kernel_hw: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    output_hw: tuple[int, int],
) -> np.ndarray:
    """Patches of a ``padded_input``: (N*OH*OW, KH*KW*C), ``[(n, oy, ox), (i, j, c)] = xp[n, oy*sh + i*dh,
    ox*sw + j*dw, c]`` -- the OHWI weight order. One strided copy; for dilation 1 the innermost run of
    ``KW*C`` elements is contiguous in the input, which keeps the copy fast whatever the stride."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel_hw, stride, dilation, output_hw
    n, _, _, c = xp.shape
    s_n, s_h, s_w, s_c = xp.strides
    view = as_strided(xp, (n, oh, ow, kh, kw, c), (s_n, s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c),
                      writeable=False)
    return view.reshape(n * oh * ow, kh * kw * c)


def with_ones_column(rows: np.ndarray) -> np.ndarray:
    """float64 ``[rows | 1]``: the input rows of a matmul with ``Requantizer.scaled_weights``."""
    out = np.empty((rows.shape[0], rows.shape[1] + 1), dtype=np.float64)
    out[:, :-1] = rows
    out[:, -1] = 1.0
    return out


def matmul_dtype(w_rows: np.ndarray) -> type:
    """float32 when every partial sum of ``x . w_row`` (int8 x, any w row of ``w_rows``) is an integer below
    2^24 in magnitude, whatever the order of summation: ``128 * sum|w| < 2^24``. Then each float32 addition
    is exact, so BLAS gives the exact integer. Otherwise float64 (``check_float64_exact``)."""
    l1 = np.abs(w_rows.astype(np.int64)).sum(axis=1).max(initial=0)
    return np.float32 if 128 * int(l1) < 1 << 24 else np.float64


#: Prepared weights and requantizers by parameter bytes (a program calls each layer with the same ones).
_PREPARED: OrderedDict[tuple, tuple[type, np.ndarray, Requantizer]] = OrderedDict()
_PREPARED_MAX = 256


def prepare_weights(
    w_rows: np.ndarray,
    bias: np.ndarray,
    multipliers: np.ndarray,
    shifts: np.ndarray,
    input_offset: int,
    output_offset: int,
    act_min: int,
    act_max: int,
) -> tuple[type, np.ndarray, Requantizer]:
    """For int8 weights ``w_rows`` (O, K): the exact matmul dtype, the weights in it, and the requantizer.

    With the input padded by its zero point (``x + input_offset = 0`` there) every tap can be summed:
    ``acc = (bias + input_offset * sum(w)) + sum x * w``; int8 x keeps the float32 bound of ``matmul_dtype``
    wide (K up to 1023 whatever the weights). ``acc + bias'`` is the exact accumulator, so the requantizer's
    wrap decision (from ``|sum x * w| <= 128 * sum|w|`` and ``|bias'|``) is the C one. Cached by the bytes of
    every parameter: the result is a pure function of them.
    """
    key = (w_rows.shape, w_rows.tobytes(), bias.tobytes(), multipliers.tobytes(), multipliers.shape,
           shifts.tobytes(), shifts.shape, int(input_offset), int(output_offset), int(act_min), int(act_max))
    hit = _PREPARED.get(key)
    if hit is not None:
        _PREPARED.move_to_end(key)
        return hit
    dtype = matmul_dtype(w_rows)
    w64 = w_rows.astype(np.int64)
    requant = Requantizer(multipliers, shifts, output_offset, act_min, act_max,
                          bias=bias + int(input_offset) * w64.sum(axis=1), acc_bound=128 * np.abs(w64).sum(axis=1))
    w_mat = w_rows.astype(dtype)
    w_mat.flags.writeable = False  # shared by every call with these parameters
    hit = (dtype, w_mat, requant)
    _PREPARED[key] = hit
    if len(_PREPARED) > _PREPARED_MAX:
        _PREPARED.popitem(last=False)
    return hit


def conv2d_s8(
    x_nhwc: np.ndarray,
    w_ohwi: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
    output_offset_range: tuple[int, int] = OUTPUT_OFFSET_RANGE,
) -> np.ndarray:
    """int8 convolution, bit-exact with CMSIS-NN ``arm_convolve_s8``.

    ``acc[n,y,x,o] = bias[o] + sum_{i,j,c} (x[n, y*sh-ph+i*dh, x*sw-pw+j*dw, c] + input_offset) * w[o,i,j,c]``
    over in-bounds taps only (int32, wrapping), then per-channel ``requantize`` with (multipliers[o],
    shifts[o]), ``+ output_offset``, clamp to [act_min, act_max]. Shapes: x (N, H, W, C), w (O, KH, KW, C / G),
    where G = C / (w's channels) is the number of groups (filter o reads input channels of group o // (O / G)),
    bias (O,) int32 or None, multipliers/shifts length O (or 1). Returns int8 (N, OH, OW, O).

    The dot products run as a float32 (or float64, see ``matmul_dtype``) BLAS matmul on im2col patches of the
    zero-point padded input, exact; the accumulator is then wrapped to int32 as on the target and requantized
    by ``Requantizer``. ``prepare_conv2d_s8`` does everything but the input-dependent part once.
    """
    x = check_int8("x_nhwc", x_nhwc, 4)
    return prepare_conv2d_s8(x.shape[1:], w_ohwi, bias, input_offset=input_offset, output_offset=output_offset,
                             multipliers=multipliers, shifts=shifts, stride=stride, padding=padding,
                             dilation=dilation, act_min=act_min, act_max=act_max, output_hw=output_hw,
                             output_offset_range=output_offset_range)(x)


def check_input(x: np.ndarray, input_shape: tuple[int, ...], kernel: str) -> None:
    """A prepared kernel's input: int8 with the shape it was prepared for (after the batch axis)."""
    if x.dtype != np.int8 or x.shape[1:] != input_shape:
        raise ValueError(f"{kernel}: prepared for int8 inputs (N, {', '.join(map(str, input_shape))}), "
                         f"got {x.dtype}{list(x.shape)}")


def prepare_conv2d_s8(
    input_hwc: tuple[int, int, int],
    w_ohwi: np.ndarray,
    bias: np.ndarray | None,
    *,
    input_offset: int,
    output_offset: int,
    multipliers: ArrayLike,
    shifts: ArrayLike,
    stride: IntPair = (1, 1),
    padding: IntPair = (0, 0),
    dilation: IntPair = (1, 1),
    act_min: int = -128,
    act_max: int = 127,
    output_hw: tuple[int, int] | None = None,
    output_offset_range: tuple[int, int] = OUTPUT_OFFSET_RANGE,
) -> Callable[[np.ndarray], np.ndarray]:
    """``conv2d_s8`` for inputs of shape (N, *input_hwc), any N: the parameters checked, the geometry
    resolved and the weights and requantizer prepared once; returns ``x -> conv2d_s8(x, ...)``."""
    h, wd, c = (int(v) for v in input_hwc)
    w = check_int8("w_ohwi", w_ohwi, 4)
    oc, kh, kw, wc = check_grouped_filters(w, c)
    st, pd, dl, (oh, ow) = resolve_geometry((h, wd), (kh, kw), stride, padding, dilation, output_hw)
    b, mult, shift = check_weighted_params(bias, oc, multipliers, shifts, act_min, act_max, input_offset, output_offset,
                                          output_offset_range)
    groups = c // wc
    if groups > 1:
        # Grouped convolution (arm_convolve_s8 with input channels = groups x filter channels): group g
        # convolves input channels [g*wc, (g+1)*wc) with filters [g*ocg, (g+1)*ocg).
        ocg = oc // groups
        mult, shift = np.broadcast_to(mult, (oc,)), np.broadcast_to(shift, (oc,))
        parts = []
        for g in range(groups):
            f = slice(g * ocg, (g + 1) * ocg)
            parts.append(prepare_conv2d_s8(
                (h, wd, wc), w[f], b[f].astype(np.int32), input_offset=input_offset, output_offset=output_offset,
                multipliers=mult[f], shifts=shift[f], stride=st, padding=pd, dilation=dl, act_min=act_min,
                act_max=act_max, output_hw=(oh, ow), output_offset_range=output_offset_range))

        def run_groups(x: np.ndarray) -> np.ndarray:
            check_input(x, (h, wd, c), "conv2d_s8")
            return np.concatenate([part(np.ascontiguousarray(x[..., g * wc:(g + 1) * wc]))
                                   for g, part in enumerate(parts)], axis=3)
        return run_groups
    depth = kh * kw * c
    check_float64_exact(depth, input_offset)

    # Padding with the zero point makes skipped taps contribute 0 (see prepare_weights).
    dtype, w_mat, requant = prepare_weights(w.reshape(oc, depth), b, mult, shift, input_offset, output_offset,
                                            act_min, act_max)
    w_t = w_mat.T
    zero_point = -int(input_offset)
    pointwise = (kh, kw) == (1, 1) and st == (1, 1) and pd == (0, 0) and (oh, ow) == (h, wd)
    item_bytes = oh * ow * (depth + oc) * np.dtype(dtype).itemsize

    def run(x: np.ndarray) -> np.ndarray:
        check_input(x, (h, wd, c), "conv2d_s8")
        n = x.shape[0]
        out = np.empty((n, oh, ow, oc), dtype=np.int8)
        for chunk in batch_chunks(n, item_bytes, CONV_BUDGET_BYTES):
            xs = x[chunk]
            if pointwise:  # the input is already the patch matrix
                patches = xs.reshape(-1, c).astype(dtype)
            else:
                xp = padded_input(xs, (kh, kw), st, pd, dl, (oh, ow), zero_point, dtype)
                patches = im2col(xp, (kh, kw), st, dl, (oh, ow))
            acc = patches @ w_t  # (rows, O): exact integers, already in the NHWC output order
            requant(acc, out[chunk].reshape(-1, oc))
        return out
    return run


def unpacked_filter(name: str, packed: np.ndarray, filter_shape: tuple[int, ...], rank: int,
                    layout: str = "plain") -> np.ndarray:
    """The int8 values of packed int4 weights (CMSIS-NN's s4 layout, ``mcuforge.kernels.int4``, or with
    ``layout="s4_halves"`` int4.S4_HALVES) in ``filter_shape`` (the shape CMSIS-NN's filter_dims give), for the
    s8 arithmetic."""
    from .int4 import S4_HALVES, packing_problem, unpack_int4, unpack_int4_halves

    shape = tuple(int(d) for d in filter_shape)
    if len(shape) != rank or min(shape, default=1) < 0:
        raise ValueError(f"{name}: filter_shape must have {rank} dims, got {filter_shape!r}")
    count = int(np.prod(shape, dtype=np.int64))
    problem = packing_problem(packed, count)
    if problem:
        raise ValueError(f"{name}: {problem}")
    if layout == S4_HALVES:
        return unpack_int4_halves(packed, shape)
    if layout != "plain":
        raise ValueError(f"{name}: int4 weight layout {layout!r} is not 'plain' or {S4_HALVES!r}")
    return unpack_int4(packed, count).reshape(shape)


def conv2d_s4(
    x_nhwc: np.ndarray,
    w_packed: np.ndarray,
    filter_shape: tuple[int, int, int, int],
    bias: np.ndarray | None,
    layout: str = "plain",
    **params,
) -> np.ndarray:
    """int8 convolution with int4 weights, bit-exact with CMSIS-NN ``arm_convolve_s4``.

    ``w_packed``: the (O, KH, KW, C / G) weights of ``filter_shape`` packed two per byte (``pack_int4``:
    element 2k in the low nibble of byte k, an odd count padded with a 0 nibble), as ``arm_convolve_s4``'s
    packed_filter_data and filter_dims. The arithmetic is ``conv2d_s8``'s with those weights (the s4 kernels
    widen each nibble to the int16 the s8 kernels widen each byte to); ``params`` are conv2d_s8's keywords (the
    output offset any int32, as arm_convolve_s4 takes it). ``layout="s4_halves"``: the bytes are in
    ``int4.S4_HALVES`` (a Helium program's), the arithmetic the same.
    """
    return conv2d_s8(x_nhwc, unpacked_filter("conv2d_s4", w_packed, filter_shape, 4, layout), bias,
                     output_offset_range=S4_OUTPUT_OFFSET_RANGE, **params)
