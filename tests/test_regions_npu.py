"""NPU delegates across a board's memory regions: the planner puts every buffer the NPU reads or writes itself
(each delegate op's scratch: Vela's scratch region, with the subgraph's inputs, outputs and intermediates) in a
region the board's NPU reaches, even where a TCM is faster; refuses at compile, naming the delegate op, the
buffer and the bytes missing, when none has room, and a board whose constants (the command streams and Vela's
weights) sit where the NPU cannot read them; a program split across regions with delegates gives the same bytes
(Python, and the host C runtime with one buffer per region and a delegate running each subgraph's TOSA graph);
the C runtime refuses, before writing any byte, a buffer the board's ``mf_board_npu_reaches`` says the NPU does
not reach; ``mcuforge info`` says where each delegate's scratch sits."""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import functools
import re
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge import cruntime
from mcuforge.cli import main as cli_main
from mcuforge.compiled import Program
from mcuforge.ethosu import delegate
from mcuforge.ir import Graph
from mcuforge.program import deserialize
from mcuforge.regions import BOARDS, BoardSpec, Region, RegionError, get_board_spec, place, region_of
from mcuforge.runtime import execute
from mcuforge.targets import KB, MB
from mcuforge.tosa import run_reference

from conftest import compiled, invoke_host_context, program_inputs

pytest.importorskip("ethosu.regor")

NPU = "ethos-u55-128"
AN547 = BOARDS["mps3-an547"]
REACHABLE = {r.name for r in AN547.regions if r.npu}


@functools.cache
def _delegated() -> tuple[Program, Program]:
    """custom_fallback (NPU - CPU fp32 layer_norm - NPU) all on the CPU, and delegated to the U55."""
    _, _, cpu = compiled("custom_fallback")
    return cpu, delegate(cpu, NPU)


def _placed(board: BoardSpec) -> Program:
    _, prog = _delegated()
    graph = copy.deepcopy(prog.graph)
    place(graph, board)
    return Program(graph, meta=dict(prog.meta))


def _delegate_ops(graph: Graph) -> list[int]:
    return [i for i, op in enumerate(graph.ops) if op.kind == "delegate"]


def _board(dtcm: int, sram: int, *, sram_npu: bool = True, flash_npu: bool = True) -> BoardSpec:
    return BoardSpec(
        "npu-test",
        "a test board",
        "cortex-m55",
        (
            Region("DTCM", 0x2000_0000, dtcm, 0),
            Region("SRAM", 0x0100_0000, sram, 1, npu=sram_npu),
            Region("flash", 0x2800_0000, 8 * MB, 9, "flash", npu=flash_npu),
        ),
    )


def test_the_an547_preset_says_what_its_npu_reaches():
    """Corstone-300: the Ethos-U55 reaches SRAM, ISRAM, DDR and the QSPI flash, not the M55's TCMs."""
    assert REACHABLE == {"SRAM", "ISRAM", "DDR", "flash"}
    assert not AN547.region("DTCM").npu and not AN547.region("ITCM").npu
    assert [r.name for r in AN547.npu_regions] == ["SRAM", "ISRAM", "DDR"]
    assert BOARDS["corstone-300"] is AN547
    for key in ("stm32h743", "stm32l4r5", "nrf5340", "mps2-an386"):  # no Ethos-U on these
        assert not any(r.npu for r in BOARDS[key].regions)


def test_npu_scratch_goes_where_the_npu_reaches_though_the_dtcm_is_faster():
    """The whole delegated arena fits the DTCM (the fastest region), which the NPU does not reach: the CPU's
    buffers stay in the DTCM and each delegate's scratch goes to the SRAM. On a board whose DTCM the NPU did
    reach, the same program stays whole in the DTCM: the NPU's reach alone moved the scratch."""
    _, prog = _delegated()
    assert prog.graph.arena_bytes <= AN547.region("DTCM").size
    placed = _placed(AN547)
    graph = placed.graph
    assert [name for name, _s, _b in graph.regions] == ["DTCM", "SRAM"]
    for i in _delegate_ops(graph):
        assert region_of(graph, graph.ops[i].scratch_offset) in REACHABLE
        op = graph.ops[i]
        assert region_of(graph, op.scratch_offset + op.scratch_bytes - 1) == region_of(graph, op.scratch_offset)
    plan = {r.name: r for r in placed.memory_plan}
    assert plan["DTCM"].buffers and all(not b[0].endswith("scratch") for b in plan["DTCM"].buffers)
    reach_all = dataclasses.replace(AN547, regions=tuple(dataclasses.replace(r, npu=True) for r in AN547.regions))
    assert _placed(reach_all).graph.regions == ()  # whole, in the DTCM: the plan as it was
    # The CPU-only program is not moved: it stays whole in the DTCM.
    cpu, _ = _delegated()
    cpu_graph = copy.deepcopy(cpu.graph)
    assert [u.name for u in place(cpu_graph, AN547)] == ["DTCM"] and cpu_graph.regions == ()


def test_refusal_names_the_delegate_the_buffer_and_the_bytes_missing():
    _, prog = _delegated()
    first = _delegate_ops(prog.graph)[0]
    scratch = prog.graph.ops[first].scratch_bytes
    sram = 4 * KB
    assert scratch > sram
    board = _board(1 * MB, sram)
    with pytest.raises(RegionError) as e:
        place(copy.deepcopy(prog.graph), board)
    text = str(e.value)
    assert f"delegate op {first} ({NPU}" in text
    assert f"its NPU scratch buffer (op {first}'s scratch, {scratch:,} B)" in text
    assert f"short by {scratch - sram:,} B" in text  # nothing else lives in the SRAM: the CPU's buffers take the DTCM
    assert "not DTCM: the NPU does not reach them" in text
    # No region the NPU reaches at all.
    ops = "|".join(map(str, _delegate_ops(prog.graph)))
    with pytest.raises(RegionError, match=rf"delegate op ({ops}) .*has no RAM region of a test board the NPU "):
        place(copy.deepcopy(prog.graph), _board(1 * MB, 1 * MB, sram_npu=False))


def test_constants_where_the_npu_cannot_read_them_are_refused():
    """The NPU reads each delegate's command stream and weights where the constants are: copied to the DTCM
    (or kept in a flash the NPU does not reach) they are out of its reach; a board without an NPU neither."""
    _, prog = _delegated()
    first = _delegate_ops(prog.graph)[0]
    t = prog.graph.tensors
    cmd, weights = f"npu{0}.command_stream", f"npu{0}.weights"
    with pytest.raises(RegionError) as e:
        place(copy.deepcopy(prog.graph), get_board_spec("mps3-an547@DTCM"))
    text = str(e.value)
    assert f"delegate op {first} ({NPU}" in text
    assert f"{cmd} ({t[cmd].nbytes:,} B) and {weights} ({t[weights].nbytes:,} B)" in text
    assert "Corstone-300 (MPS3 AN547)'s DTCM, which the NPU does not reach" in text and "SRAM, ISRAM, DDR" in text
    placed = copy.deepcopy(prog.graph)
    place(placed, get_board_spec("mps3-an547@SRAM"))  # a RAM copy the NPU reaches: fine
    assert placed.constants_at >= 0 and region_of(placed, placed.constants_at) == "SRAM"
    with pytest.raises(RegionError, match="the NPU does not reach"):
        place(copy.deepcopy(prog.graph), _board(1 * MB, 1 * MB, flash_npu=False))
    with pytest.raises(RegionError, match="lists no memory an NPU reaches"):
        place(copy.deepcopy(prog.graph), BOARDS["nrf5340"])


def test_split_program_with_delegates_gives_the_same_bytes():
    """Split over DTCM + SRAM, the delegated program gives the unsplit one's bytes on Python, and on the host
    C runtime with one buffer per region (mf_init_regions_delegate) and a delegate that runs each subgraph's
    TOSA graph on the reference model, reading and writing the scratch region as the NPU would."""
    cpu, prog = _delegated()
    split = _placed(AN547)
    assert split.graph.regions
    data = split.to_bytes()
    graph = deserialize(data)
    assert graph.regions == split.graph.regions
    for seed in range(3):
        xs = program_inputs(graph, np.random.default_rng(seed))
        want = execute(prog.graph, xs)
        got = execute(split.graph, xs)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
        status, outs, _ = _run_c(data, graph, xs)
        assert status == "MF_OK"
        for a, b in zip(outs, want, strict=True):
            np.testing.assert_array_equal(a, b)
        if seed == 0:  # the delegated program's bytes are the all-CPU program's here
            for a, b in zip(want, execute(cpu.graph, xs), strict=True):
                np.testing.assert_array_equal(a, b)


# -- C runtime ---------------------------------------------------------------------------------------------
class DelegateCall(ctypes.Structure):
    _fields_ = [
        ("op_index", ctypes.c_uint32),
        ("npu", ctypes.c_char_p),
        ("command_stream", ctypes.c_void_p),
        ("command_stream_size", ctypes.c_size_t),
        ("weights", ctypes.c_void_p),
        ("weights_size", ctypes.c_size_t),
        ("scratch", ctypes.c_void_p),
        ("scratch_size", ctypes.c_size_t),
        ("base_addr", ctypes.c_uint64 * 3),
        ("base_addr_size", ctypes.c_size_t * 3),
        ("num_base_addr", ctypes.c_int),
    ]


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(DelegateCall))


class Delegate(ctypes.Structure):
    _fields_ = [("npu", ctypes.c_char_p), ("user", ctypes.c_void_p), ("init", CALLBACK), ("execute", CALLBACK)]


def _lib():
    lib = cruntime.load_library()
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.mf_init_regions_delegate.restype = ctypes.c_int
    lib.mf_init_regions_delegate.argtypes = [vp, vp, ctypes.POINTER(vp), ctypes.POINTER(sz), ctypes.c_uint32, vp]
    lib.mf_init_delegate.restype = ctypes.c_int
    lib.mf_init_delegate.argtypes = [vp, vp, vp, sz, vp]
    lib.mf_host_npu_unreachable.restype = None
    lib.mf_host_npu_unreachable.argtypes = [vp, sz]
    return lib


def _aligned(nbytes: int, fill: int) -> tuple[np.ndarray, np.ndarray]:
    raw = np.full(nbytes + 16, fill, np.uint8)
    return raw, raw[(-raw.ctypes.data) % 16 :][:nbytes]


def _run_c(
    data: bytes, graph: Graph, xs: list[np.ndarray], *, unreachable: str | None = None, single: bool = False
) -> tuple[str, list[np.ndarray] | None, dict]:
    """The host C runtime with one buffer per region (or one arena, ``single``) and a TOSA-running delegate;
    ``unreachable``: "region <k>", "arena" or "program": that buffer marked as out of the NPU's reach
    (mf_board_npu_reaches). Returns the status, the outputs and the buffers (to check they were not written)."""
    lib = _lib()
    file = np.frombuffer(data, np.uint8).copy()
    program = ctypes.create_string_buffer(lib.mf_host_sizeof_program())
    assert lib.mf_program_load(program, file.ctypes.data, len(data)) == 0
    keep: dict = {"file": file}
    if single:
        sizes = [lib.mf_program_arena_bytes(program)]
    else:
        sizes = [lib.mf_program_region_bytes(program, k) for k in range(lib.mf_program_region_count(program))]
    buffers = [_aligned(n, 0xA5) for n in sizes]
    keep["buffers"] = [b for _raw, b in buffers]
    marked = {"program": (file.ctypes.data, len(data)), "arena": (buffers[0][1].ctypes.data, sizes[0])}
    marked.update(
        {f"region {k}": (b.ctypes.data, n) for k, ((_r, b), n) in enumerate(zip(buffers, sizes, strict=True))}
    )
    lib.mf_host_npu_unreachable(*(marked[unreachable] if unreachable else (None, 0)))

    def execute_(_user, call_p):
        call = call_p.contents
        op = graph.ops[call.op_index]
        n_act = op.attrs["input_count"]
        assert call.scratch_size == op.scratch_bytes
        ins = [
            np.frombuffer(
                ctypes.string_at(call.scratch + off, graph.tensors[n].nbytes), graph.tensors[n].dtype
            ).reshape(graph.tensors[n].shape)
            for n, off in zip(op.inputs[:n_act], op.attrs["input_offsets"], strict=True)
        ]
        outs = run_reference(graph.tensors[op.inputs[n_act + 2]].data.tobytes(), ins)
        for value, off in zip(outs, op.attrs["output_offsets"], strict=True):
            value = np.ascontiguousarray(value)
            ctypes.memmove(call.scratch + off, value.ctypes.data, value.nbytes)
        return 0

    callback = CALLBACK(execute_)
    d = Delegate(NPU.encode(), None, CALLBACK(), callback)
    ctx = ctypes.create_string_buffer(lib.mf_host_sizeof_context())
    try:
        if single:
            status = lib.mf_init_delegate(ctx, program, buffers[0][1].ctypes.data, sizes[0], ctypes.byref(d))
        else:
            ptrs = (ctypes.c_void_p * len(sizes))(*[b.ctypes.data for _r, b in buffers])
            lens = (ctypes.c_size_t * len(sizes))(*sizes)
            status = lib.mf_init_regions_delegate(ctx, program, ptrs, lens, len(sizes), ctypes.byref(d))
        keep["error_op"] = lib.mf_host_context_error_op(ctx)
        if status != 0:
            return lib.mf_status_name(status).decode(), None, keep
        return "MF_OK", invoke_host_context(lib, ctx, graph, xs), keep
    finally:
        lib.mf_host_npu_unreachable(None, 0)


def test_c_runtime_refuses_npu_buffers_out_of_reach_before_writing():
    """mf_board_npu_reaches (the host's: one marked range out of reach) says no to the region holding the
    delegates' scratch, to the one arena, or to the program file (the command streams and weights): the init
    returns MF_ERR_NPU_UNREACHABLE naming the first delegate op and has written no byte of any buffer. The
    region of the CPU's buffers alone out of reach: the program runs."""
    _, prog = _delegated()
    split = _placed(AN547)
    data = split.to_bytes()
    graph = deserialize(data)
    xs = program_inputs(graph, np.random.default_rng(5))
    first = _delegate_ops(graph)[0]
    names = [name for name, _s, _b in graph.regions]
    npu_region = names.index(region_of(graph, graph.ops[first].scratch_offset))
    cpu_region = names.index("DTCM")
    for unreachable, single in (
        (f"region {npu_region}", False),
        ("program", False),
        ("arena", True),
        ("program", True),
    ):
        status, outs, keep = _run_c(data, graph, xs, unreachable=unreachable, single=single)
        assert status == "MF_ERR_NPU_UNREACHABLE", unreachable
        assert keep["error_op"] == first
        assert all(np.all(b == 0xA5) for b in keep["buffers"]), f"{unreachable}: a buffer was written"
    status, outs, _ = _run_c(data, graph, xs, unreachable=f"region {cpu_region}")
    assert status == "MF_OK"
    for a, b in zip(outs, execute(graph, xs), strict=True):
        np.testing.assert_array_equal(a, b)
    status, _, _ = _run_c(data, graph, xs, single=True)
    assert status == "MF_OK"


def test_without_a_delegate_nothing_is_handed_to_an_npu():
    """No delegate registered: the reach is not asked (MF_ERR_NO_DELEGATE as before, the NPU sees nothing)."""
    _, prog = _delegated()
    data = _placed(AN547).to_bytes()
    lib = _lib()
    lib.mf_host_npu_unreachable(ctypes.c_void_p(16), 1 << 62)  # nothing reachable
    try:
        with pytest.raises(cruntime.CRuntimeError, match="MF_ERR_NO_DELEGATE"):
            cruntime.run_program(data, program_inputs(prog.graph, np.random.default_rng(0)))
    finally:
        lib.mf_host_npu_unreachable(None, 0)


# -- compile and info ----------------------------------------------------------------------------------------
def _model() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 8 * 8, 10),
    ).eval()
    return model, torch.randn(1, 3, 8, 8)


def _compile(board, **kwargs) -> mcuforge.Program:
    model, x = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random calibration
        return mcuforge.compile(model, x, progress=False, target=f"cortex-m55+{NPU}", board=board, **kwargs)


def test_compile_for_an547_and_info_say_where_the_scratch_sits(tmp_path, capsys):
    prog = _compile("mps3-an547")
    graph = prog.graph
    (op,) = [graph.ops[i] for i in _delegate_ops(graph)]
    region = region_of(graph, op.scratch_offset)
    assert region in REACHABLE
    path = tmp_path / "m.mfp"
    prog.save(path)
    capsys.readouterr()
    assert cli_main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    start = next(s for n, s, _b in graph.regions if n == region)
    assert f"NPU scratch   {op.scratch_bytes:,} B in region {region} at offset {op.scratch_offset - start:,}" in text
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    whole = _compile(None)
    for a, b in zip(prog.run_raw(x), whole.run_raw(x), strict=True):
        np.testing.assert_array_equal(a, b)


def test_compile_refuses_when_no_reachable_region_has_room():
    board = _board(1 * MB, 256)
    with pytest.raises(
        RegionError,
        match=r"delegate op 0 \(ethos-u55-128.*its NPU scratch buffer \(op 0's scratch, "
        r"([\d,]+) B\).*short by ([\d,]+) B",
    ) as e:
        _compile(board)
    size, short = (
        int(v.replace(",", "")) for v in re.search(r"scratch, ([\d,]+) B\).*short by ([\d,]+) B", str(e.value)).groups()
    )
    assert short == size - 256
