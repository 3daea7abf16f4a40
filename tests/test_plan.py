"""Arena planning, checked against an independent statement of the plan's rules.

Lifetimes are recomputed here from the ops (not with ``mcuforge.plan.lifetimes``): a tensor lives from
the op that writes it (-1 for graph inputs) to the last op that reads it (past the last op for graph
outputs); an op's scratch buffer lives during its op. The sharing the design allows: an op writing in
place -- a reshape, or an int8 clamp / LUT / add / mul -- may write its output onto an input of the same
size that no later op reads and that is not a graph output (for add and mul either input).

- No two tensors live at the same op share a byte, except such an in-place pair at its op; an op's
  scratch buffer shares no byte with any tensor live at the op.
- The exact lower bound of any such plan is the largest, over the ops, of the sum of the 16-byte-aligned
  sizes of the tensors live at that op (an in-place pair counted once at its op) and of the op's scratch.
  No valid plan is smaller, and on every model here the planner's arena is exactly that bound (computed
  here, not with ``mcuforge.plan.arena_lower_bound``).
"""

import numpy as np
import pytest

from mcuforge import cruntime, firmware
from mcuforge.ir import Graph, Op, Tensor
from mcuforge.plan import plan_arena
from mcuforge.program import serialize
from mcuforge.runtime import execute

from conftest import compiled

ALIGN = 16
IN_PLACE = {"reshape": (0,), "clamp_s8": (0,), "lut_s8": (0,), "add_s8": (0, 1), "mul_s8": (0, 1)}


def aligned(n: int) -> int:
    return (max(n, 1) + ALIGN - 1) // ALIGN * ALIGN


def spans(g) -> dict[str, tuple[int, int]]:
    """(first, last) op index of every activation, from the ops alone."""
    first, last = {name: -1 for name in g.inputs}, {name: -1 for name in g.inputs}
    for i, op in enumerate(g.ops):
        for name in op.inputs:
            if name and not g.tensors[name].is_constant:
                assert name in first, f"op {i} reads {name!r} before it is written"
                last[name] = i
        for name in op.outputs:
            assert name not in first, f"{name!r} written twice"
            first[name], last[name] = i, i
    for name in g.outputs:
        last[name] = len(g.ops)
    return {name: (first[name], last[name]) for name in first}


def in_place_pairs(g, life) -> dict[int, tuple[str, str]]:
    """op index -> (input, output) of each op allowed to write its output onto that input."""
    pairs = {}
    for i, op in enumerate(g.ops):
        for pos in IN_PLACE.get(op.kind, ()):
            src, dst = op.inputs[pos], op.outputs[0]
            s = g.tensors[src]
            if not s.is_constant and life[src][1] == i and src not in g.outputs and s.nbytes == g.tensors[dst].nbytes:
                pairs[i] = (src, dst)
                break
    return pairs


def live_at(life, step: int) -> list[str]:
    return [name for name, (f, last) in life.items() if f <= step <= last]


def lower_bound(g, scratch: bool = True) -> int:
    life = spans(g)
    pairs = in_place_pairs(g, life)
    bound = 0
    for step in range(-1, len(g.ops) + 1):
        live = set(live_at(life, step))
        if step in pairs:
            live.discard(pairs[step][1])  # the op's output is its input's bytes
        op = g.ops[step] if 0 <= step < len(g.ops) else None
        extra = aligned(op.scratch_bytes) if scratch and op is not None and op.scratch_bytes else 0
        bound = max(bound, extra + sum(aligned(g.tensors[n].nbytes) for n in live))
    return bound


def overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def check_plan(g) -> None:
    life = spans(g)
    shared = {frozenset(pair) for pair in in_place_pairs(g, life).values()}
    for name in life:
        t = g.tensors[name]
        assert t.offset >= 0 and t.offset % ALIGN == 0 and t.offset + t.nbytes <= g.arena_bytes, name
    for step in range(-1, len(g.ops) + 1):
        live = live_at(life, step)
        for i, a in enumerate(live):
            ta = g.tensors[a]
            for b in live[i + 1:]:
                tb = g.tensors[b]
                if overlap((ta.offset, ta.offset + ta.nbytes), (tb.offset, tb.offset + tb.nbytes)):
                    assert frozenset((a, b)) in shared, f"{a} and {b} share bytes while both live at op {step}"
        op = g.ops[step] if 0 <= step < len(g.ops) else None
        if op is not None and op.scratch_bytes:
            s = (op.scratch_offset, op.scratch_offset + op.scratch_bytes)
            assert op.scratch_offset % ALIGN == 0 and 0 <= s[0] and s[1] <= g.arena_bytes, step
            for name in live:
                t = g.tensors[name]
                assert not overlap(s, (t.offset, t.offset + t.nbytes)), f"op {step}'s scratch overlaps {name}"


MODELS = ["ds_cnn", "mobilenet_v1_025", "resnet8", "custom_fallback", "fc_autoencoder", "transformer_block"]


@pytest.mark.parametrize("name", MODELS)
def test_live_tensors_never_overlap(name):
    check_plan(compiled(name)[2].graph)


@pytest.mark.parametrize("name", MODELS)
def test_arena_is_the_exact_lower_bound(name):
    g = compiled(name)[2].graph
    bound = lower_bound(g)
    assert g.arena_bytes == bound, f"arena {g.arena_bytes} B, lower bound {bound} B"


def test_scratch_buffers_are_planned_inside_the_arena_and_shared():
    g = compiled("resnet8")[2].graph
    with_scratch = [op for op in g.ops if op.scratch_bytes]
    assert len(with_scratch) >= 8
    assert len({op.scratch_offset for op in with_scratch}) < len(with_scratch)  # ops reuse the same bytes
    # Below the activations' bound plus the largest scratch buffer (the layout with scratch after the arena).
    assert g.arena_bytes < lower_bound(g, scratch=False) + max(op.scratch_bytes for op in with_scratch)


def in_place_chain() -> Graph:
    """clamp(x) -> a, add(a, b) -> c, mul(c, c) -> d (a graph output), lut(d) -> e: the clamp, add and
    mul write in place (onto x, a and c); the lut may not (d is an output), but e reuses b's bytes."""
    shape = (1, 3, 5, 7)  # 105 elements: the MVE paths' 4-lane tail and the DSP loops' remainders
    add = dict(a_offset=3, a_multiplier=1518500250, a_shift=-1, b_offset=-2, b_multiplier=1 << 30, b_shift=0,
               left_shift=20, output_offset=-5, output_multiplier=1 << 30, output_shift=-19, act_min=-128,
               act_max=127)
    mul = dict(a_offset=5, b_offset=5, output_offset=1, output_multiplier=1 << 30, output_shift=-6,
               act_min=-120, act_max=110)
    tensors = {n: Tensor(n, shape, "int8") for n in ("x", "b", "a", "c", "d", "e")}
    tensors["t"] = Tensor("t", (256,), "int8", data=(np.arange(256) * 7 % 256 - 128).astype(np.int8))
    ops = [Op("clamp_s8", ["x"], ["a"], {"act_min": -100, "act_max": 90}), Op("add_s8", ["a", "b"], ["c"], add),
           Op("mul_s8", ["c", "c"], ["d"], mul), Op("lut_s8", ["d", "t"], ["e"], {})]
    g = Graph(tensors, ops, ["x", "b"], ["d", "e"], target="cortex-m55")
    plan_arena(g)
    return g


def test_in_place_ops_share_bytes_exactly_where_legal():
    g = in_place_chain()
    off = {n: g.tensors[n].offset for n in "xbacde"}
    assert off["x"] == off["a"] == off["c"] == off["d"]
    assert off["e"] == off["b"] != off["d"]
    assert g.arena_bytes == lower_bound(g) == 2 * 112
    check_plan(g)


@pytest.mark.parametrize("backend", ["c", "cortex-m4", "cortex-m55"])
def test_in_place_ops_give_the_same_bytes_everywhere(backend):
    """The in-place chain on the host C runtime and on the boards (the DSP and MVE add/mul paths) equals
    the host Python runtime, which computes every output into a fresh array."""
    g = in_place_chain()
    rng = np.random.default_rng(7)
    inputs = [rng.integers(-128, 128, (1, 3, 5, 7)).astype(np.int8) for _ in range(2)]
    expected = execute(g, inputs)
    if backend == "c":
        got, _ = cruntime.run_program(serialize(g), inputs)
    else:
        g.target = backend
        got, _, _ = firmware.run_on_qemu(serialize(g), inputs, backend)
    for e, o in zip(expected, got, strict=True):
        np.testing.assert_array_equal(o, e)


def test_faster_paths_take_more_scratch_only_within_the_ram_asked_for():
    """conv2d_s4 on cortex-m55 runs its unpacked-filter path with more scratch, its packed paths with less
    (the same bytes out): by default the arena is what the packed paths need; with a RAM budget the ops get
    the larger scratch while the arena stays within it (mcuforge.plan.trim_optional_scratch)."""
    import copy
    import warnings

    import torch

    import mcuforge
    from mcuforge.kinds.scratch import FORMULAS

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU()).eval()
    example = (torch.randn(1, 8, 16, 16),)
    calibration = [(torch.randn(1, 8, 16, 16),) for _ in range(4)]

    def build(ram_budget=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return mcuforge.compile(model, example, calibration=calibration, target="cortex-m55", progress=False,
                                    quantization="w4a8", ram_budget=ram_budget)

    (small_plan,) = [f for f in FORMULAS if f.name == "conv2d_s4_im2col"]
    (fast_plan,) = [f for f in FORMULAS if f.name == "conv2d_s4_mve_unpacked"]

    def plans(prog):
        convs = [op for op in prog.graph.ops if op.kind == "conv2d_s4"]
        shapes = [prog.graph.tensors[op.inputs[1]].shape for op in convs]
        small = [small_plan(depth=kh * kw * ic) for _, kh, kw, ic in shapes]
        fast = [fast_plan(depth=kh * kw * ic, filters=oc) for oc, kh, kw, ic in shapes]
        return [op.scratch_bytes for op in convs], small, fast

    default = build()
    got, small, fast = plans(default)
    assert all(s < f for s, f in zip(small, fast, strict=True)) and set(got) <= set(small) | set(fast)
    all_small = copy.deepcopy(default.graph)
    for op, s in zip([op for op in all_small.ops if op.kind == "conv2d_s4"], small, strict=True):
        op.scratch_bytes = s
    assert default.arena_bytes == plan_arena(all_small)  # no RAM spent on speed by default
    assert got != fast  # here the faster path would cost RAM somewhere

    roomy = build(ram_budget=1 << 20)
    assert plans(roomy)[0] == fast and default.arena_bytes < roomy.arena_bytes <= 1 << 20
    x = torch.randn(1, 8, 16, 16)
    for prog in (default, roomy):  # either plan, the same bytes as the Python kernels
        np.testing.assert_array_equal(prog.run_raw(x), prog.run_raw(x, backend="c"))
    np.testing.assert_array_equal(default.run_raw(x), roomy.run_raw(x))


def test_few_channel_conv_takes_its_larger_scratch_only_within_the_ram_asked_for():
    """conv2d_s8 on cortex-m4: a 3-channel 3x3 layer runs the few-channel path with conv2d_s8_dsp's scratch
    (its filters copied, rows padded) and the im2col path with conv2d_s8_im2col's (the same bytes out). Where
    the layer is the arena's peak, by default it gets the smaller plan, which the writer accepts; with a RAM
    budget the larger; on the board both give the Python kernels' bytes."""
    import warnings

    import torch

    import mcuforge
    from mcuforge.kinds.scratch import SCRATCH

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU()).eval()
    example = (torch.randn(1, 3, 12, 10),)
    calibration = [(torch.randn(1, 3, 12, 10),) for _ in range(4)]

    def build(ram_budget=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return mcuforge.compile(model, example, calibration=calibration, target="cortex-m4", progress=False,
                                    ram_budget=ram_budget)

    small, fast = SCRATCH["conv2d_s8_im2col"](depth=27), SCRATCH["conv2d_s8_dsp"](depth=27, filters=16, window=9)
    assert small < fast
    default, roomy = build(), build(ram_budget=1 << 20)
    (conv,) = [op for op in default.graph.ops if op.kind == "conv2d_s8"]
    (roomy_conv,) = [op for op in roomy.graph.ops if op.kind == "conv2d_s8"]
    assert (conv.scratch_bytes, roomy_conv.scratch_bytes) == (small, fast)
    assert default.arena_bytes + fast - small == roomy.arena_bytes
    x = torch.randn(1, 3, 12, 10)
    expected = default.run_raw(x)
    for prog in (default, roomy):
        for got, want in zip(prog.run_raw(x, backend="qemu"), expected, strict=True):
            np.testing.assert_array_equal(got, want)


def test_pointwise_third_column_only_where_the_arena_has_room():
    """conv2d_s8 on cortex-m4: a 1x1 layer's larger plans (conv2d_s8_pw23: a sixth patch, the 2 x 3 tiles' third
    column; conv2d_s8_dsp: and its filters widened to int16) are kept where they cost no RAM, after the in-place
    depthwise choices lowered the arena: DS-CNN, whose pointwise layers all sit at the peak beside in-place
    depthwise layers, keeps its arena and the im2col plan on every 1x1; MobileNet's late 1x1 layers, far below its
    peak, take a larger one: the largest where the widened filters fit (op 10's 64 x 64), the middle one where
    they would not (op 26's 256 x 256: 128 KB); with a RAM budget, DS-CNN's take the largest. Either way the
    arena is what the smallest plans give."""
    import copy
    import warnings

    import torch

    import mcuforge
    from mcuforge.ir import least_scratch_bytes, scratch_plans
    from mcuforge.zoo import MODELS

    def build(name, ram_budget=None):
        model, example = MODELS[name]()
        gen = torch.Generator().manual_seed(1)
        calibration = [tuple(torch.randn(x.shape, generator=gen) for x in example) for _ in range(2)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return mcuforge.compile(model, example, calibration=calibration, target="cortex-m4", progress=False,
                                    ram_budget=ram_budget)

    def pointwise(prog):
        return [op for op in prog.graph.ops if op.kind == "conv2d_s8"
                and prog.graph.tensors[op.inputs[1]].shape[1:3] == (1, 1)]

    def larger(prog, op):
        return op.scratch_bytes > least_scratch_bytes(op.kind, prog.graph.tensors[op.inputs[1]].shape, "cortex-m4")

    def plans(prog, op):
        return scratch_plans(op.kind, prog.graph.tensors[op.inputs[1]].shape, "cortex-m4")

    for name, taken in (("ds_cnn", False), ("mobilenet_v1_025", True)):
        prog = build(name)
        smaller = copy.deepcopy(prog.graph)
        for op in smaller.ops:
            if op.kind == "conv2d_s8":
                op.scratch_bytes = least_scratch_bytes(op.kind, smaller.tensors[op.inputs[1]].shape, "cortex-m4")
        assert prog.arena_bytes == plan_arena(smaller)  # no RAM spent on speed by default
        assert any(larger(prog, op) for op in pointwise(prog)) == taken
    ops = pointwise(prog)  # MobileNet's: 64 x 64 (op 10) and the last, 256 x 256
    first_64 = next(op for op in ops if prog.graph.tensors[op.inputs[1]].shape == (64, 1, 1, 64))
    assert len(plans(prog, ops[-1])) == 3 and first_64.scratch_bytes == plans(prog, first_64)[0]
    assert ops[-1].scratch_bytes == plans(prog, ops[-1])[1]
    roomy = build("ds_cnn", ram_budget=1 << 20)
    assert all(op.scratch_bytes == plans(roomy, op)[0] for op in pointwise(roomy)) and pointwise(roomy)
