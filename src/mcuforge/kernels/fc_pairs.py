"""The S8_PAIRS weight layout (format layout code 3, docs/format.md "Layouts"): int8 fully connected weights
in the order the DSP cores' (Cortex-M4/M7/M33) inner loop reads them, the same count of bytes.

Rows go in blocks of 4 (two pairs: rows 0-1 and 2-3 of the block), features in groups of 4. For each block,
group by group, four words: (pair 0, features 0 and 2), (pair 0, features 1 and 3), (pair 1, 0 and 2), (pair 1,
1 and 3); a word's bytes are [a[k] ^ 0x80, b[k], a[k + 2] ^ 0x80, b[k + 2]] for the pair's rows a, b and its
first feature k. Each halfword is then the int16 256 * b[k] + a[k] + 128: one SMLAD of the word against
the input's SXTB16 halves (x[k + 2], x[k]) sums both rows at once, 256 * sum(x * b) + sum(x * a) + 128 *
sum(x), and one against the word's SXTB16 ror 8 (b alone) gives sum(x * b): the pair takes one unpack where
the plain layout takes two (sum(x * a) is then the first sum - 256 * the second - 128 * sum(x), exact in
wrapping int32). Only weights of O and I multiples of 4 take it.
"""

from __future__ import annotations

import numpy as np

S8_PAIRS = "s8_pairs"
#: The kinds whose weights (input 1) a program may store as S8_PAIRS (their DSP paths read it).
S8_PAIRS_KINDS = ("fully_connected_s8", "fully_connected_per_channel_s8")


def pairs_problem(shape: tuple[int, ...]) -> str | None:
    """Why int8 weights of ``shape`` cannot take the S8_PAIRS layout, or None."""
    if len(shape) != 2:
        return f"{S8_PAIRS} needs (O, I) weights, got shape {tuple(shape)}"
    if shape[0] == 0 or shape[1] == 0 or shape[0] % 4 or shape[1] % 4:
        return f"{S8_PAIRS} needs O and I positive multiples of 4, got shape {tuple(shape)}"
    return None


def _blocks(o: int, i: int) -> tuple[int, ...]:
    # (block, pair, row of the pair, group, feature // 2, feature % 2) of the plain (O, I) order
    return (o // 4, 2, 2, i // 4, 2, 2)


#: from the plain axes above to the stored order: (block, group, pair, feature % 2, feature // 2, row of the pair)
_ORDER = (0, 3, 1, 5, 4, 2)


def pack_pairs(w: np.ndarray) -> np.ndarray:
    """int8 weights (O, I) -> the same bytes in S8_PAIRS order, int8 (O, I)."""
    w = np.asarray(w, np.int8)
    problem = pairs_problem(w.shape)
    if problem:
        raise ValueError(problem)
    u = w.view(np.uint8).reshape(_blocks(*w.shape)).copy()
    u[:, :, 0] ^= 0x80  # the pair's first row offset by 128
    return np.ascontiguousarray(u.transpose(_ORDER)).view(np.int8).reshape(w.shape)


def unpack_pairs(data: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """S8_PAIRS bytes of weights ``shape`` (O, I) -> the plain int8 (O, I) weights."""
    problem = pairs_problem(tuple(shape))
    if problem:
        raise ValueError(problem)
    o, i = shape
    blocks = _blocks(o, i)
    stored = np.asarray(data).reshape(-1).view(np.uint8).reshape(tuple(blocks[a] for a in _ORDER))
    u = np.ascontiguousarray(stored.transpose(np.argsort(_ORDER)))
    u[:, :, 0] ^= 0x80
    return u.view(np.int8).reshape(o, i)


#: Below 16 features the plain layout's rows4 loop is as fast (the autoencoder's 8 -> 128 layer: 9.2 k est.
#: cycles on the cortex-m4 model, 9.4 k with S8_PAIRS, its blocks' fixed costs over 2 groups).
PAIRS_MIN_DEPTH = 16


def weight_layout_s8(kind: str, shape: tuple[int, ...], has_dsp: bool, has_mve: bool) -> str:
    """The layout a program stores a fully connected layer's int8 weights in: S8_PAIRS on a DSP core (not
    Helium, whose loops read rows) when the shape allows it and the rows are long enough to gain, else plain."""
    if has_dsp and not has_mve and kind in S8_PAIRS_KINDS and pairs_problem(tuple(shape)) is None and \
            shape[1] >= PAIRS_MIN_DEPTH:
        return S8_PAIRS
    return "plain"
