"""An independent statement of arm_maximum_s8 / arm_minimum_s8: their pointer walk over two flat int8 arrays
with cmsis_nn_dims (N, H, W, C), re-expressed as plain Python loops (nothing from mcuforge).

CMSIS-NN does not broadcast by index arithmetic: it walks batches, rows and pixels with pointers that advance
by a row or a pixel and step back by per-dim "diff" amounts. Ported as read, the walk gives numpy's
broadcast for every pattern but one family (``cmsis_row_walk_overruns``): an input with one value per row
(H > 1, W = C = 1) beside an input with W > 1. There the row shortcut advances that input's pointer once for
its value and again by the height diff, so the walk reads past the input (the port raises IndexError; the C
reads out of bounds). mcuforge's kernels compute numpy's broadcast there too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Dims = tuple[int, int, int, int]


def cmsis_minmax(pick: Callable[[int, int], int], in1: Sequence[int], d1: Dims, in2: Sequence[int], d2: Dims,
                 dout: Dims) -> list[int]:
    """The output values of arm_maximum_s8 (``pick`` = max) or arm_minimum_s8 (min), in NHWC order."""
    n1, h1, w1, c1 = d1
    n2, h2, w2, c2 = d2
    on, oh, ow, _oc = dout
    if d1 == d2:  # no broadcast: one flat loop
        return [pick(x, y) for x, y in zip(in1, in2, strict=True)]
    if n1 * h1 * w1 * c1 == 1:  # a scalar input
        return [pick(in1[0], y) for y in in2[:n2 * h2 * w2 * c2]]
    if n2 * h2 * w2 * c2 == 1:
        return [pick(in2[0], x) for x in in1[:n1 * h1 * w1 * c1]]
    w1d, w2d = (0 if w1 >= w2 else c1), (0 if w2 >= w1 else c2)
    h1d = w1d if h1 >= h2 else -w1 * (c1 - w1d)
    h2d = w2d if h2 >= h1 else -w2 * (c2 - w2d)
    b1d, b2d = (c1 * w1 * h1 if n1 >= n2 else 0), (c2 * w2 * h2 if n2 >= n1 else 0)
    out: list[int] = []

    def run(p1: int, s1: int, p2: int, s2: int, n: int) -> None:  # n values, stride 0 repeats one value
        out.extend(pick(in1[p1 + i * s1], in2[p2 + i * s2]) for i in range(n))

    base1 = base2 = 0
    for _ in range(on):
        q1, q2 = base1, base2
        if (h1, w1, c1) == (h2, w2, c2):
            run(q1, 1, q2, 1, h1 * w1 * c1)
        elif h1 * w1 * c1 == 1:
            run(q1, 0, q2, 1, h2 * w2 * c2)
        elif h2 * w2 * c2 == 1:
            run(q1, 1, q2, 0, h1 * w1 * c1)
        else:
            for _y in range(oh):
                if (w1, c1) == (w2, c2):
                    run(q1, 1, q2, 1, w1 * c1)
                    q1, q2 = q1 + w1 * c1, q2 + w1 * c1
                elif w1 * c1 == 1:
                    run(q1, 0, q2, 1, w2 * c2)
                    q1, q2 = q1 + 1, q2 + w2 * c2
                elif w2 * c2 == 1:
                    run(q1, 1, q2, 0, w1 * c1)
                    q1, q2 = q1 + w1 * c1, q2 + 1
                else:
                    for _x in range(ow):
                        if c1 == c2:
                            run(q1, 1, q2, 1, c1)
                            q1, q2 = q1 + c1, q2 + c1
                        elif c1 == 1:
                            run(q1, 0, q2, 1, c2)
                            q1, q2 = q1 + 1, q2 + c2
                        elif c2 == 1:
                            run(q1, 1, q2, 0, c1)
                            q1, q2 = q1 + c1, q2 + 1
                        q1, q2 = q1 - w1d, q2 - w2d
                q1, q2 = q1 + h1d, q2 + h2d
        base1, base2 = base1 + b1d, base2 + b2d
    return out


def cmsis_row_walk_overruns(d1: Dims, d2: Dims) -> bool:
    """Whether CMSIS-NN's walk reads past an input for these dims (see the module docstring)."""
    return any(x[1] > 1 and x[2] == 1 and x[3] == 1 and y[2] > 1 for x, y in ((d1, d2), (d2, d1)))
