"""A board whose constants are copied to a RAM region (``BoardSpec.constants`` naming a RAM region): the planner
reserves the constants' bytes at the start of that region's arena (fit check and region use include them), the
program file says where (format 3.3, header bytes 116..123), the C runtime copies them there at mf_init and the
kernels read them from RAM; Python == host C == QEMU mps3-an547 (cortex-m55); a region too small is refused."""

from __future__ import annotations

import ctypes
import dataclasses
import re
import struct
import warnings

import numpy as np
import pytest
import torch
from test_c_validation import patch
from torch import nn

import mcuforge
from mcuforge.cruntime import CRuntimeError, LoadedProgram
from mcuforge.program import layout as L
from mcuforge.program.reader import deserialize
from mcuforge.program.writer import serialize
from mcuforge.regions import BOARDS, BoardSpec, Region, RegionError, constants_section_bytes
from mcuforge.targets import MB


def _model() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU(),
                          nn.Conv2d(16, 8, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)).eval()
    return model, torch.randn(1, 3, 16, 16)


def _compile(board: object = None, **kwargs: object) -> mcuforge.Program:
    model, x = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random calibration
        return mcuforge.compile(model, x, progress=False, board=board, **kwargs)


def _an547(constants: str) -> BoardSpec:
    return dataclasses.replace(BOARDS["mps3-an547"], constants=constants)


@pytest.fixture(scope="module")
def whole() -> mcuforge.Program:
    return _compile(target="cortex-m55")


def _reserve(prog: mcuforge.Program) -> int:
    return -(-constants_section_bytes(prog.graph) // 16) * 16


def _input(prog: mcuforge.Program) -> np.ndarray:
    return np.random.default_rng(3).standard_normal(prog.input_shapes[0]).astype(np.float32)


def test_constants_in_the_arenas_region_reserve_its_first_bytes(whole: mcuforge.Program):
    prog = _compile(_an547("DTCM"))
    reserve = _reserve(prog)
    assert reserve > 0 and prog.graph.constants_at == 0 and prog.graph.regions == ()
    assert prog.arena_bytes == whole.arena_bytes + reserve
    data = prog.to_bytes()
    assert struct.unpack_from("<HH", data, 4) == (3, 3)
    assert L.CONSTANTS_FIELDS.unpack_from(data, L.CONSTANTS_FIELDS_OFFSET) == (1, 0)
    assert deserialize(data).constants_at == 0
    (arena,) = prog.memory_plan
    assert arena.buffers[0] == ("constants", 0, reserve, -1, len(prog.graph.ops))
    assert all(o >= reserve for b, o, *_ in arena.buffers[1:]), "a buffer over the constants"
    # a board without the copy is the program as before, byte for byte
    assert _compile(_an547("flash")).to_bytes() == whole.to_bytes()


def test_constants_in_another_region_make_a_region_of_their_own(whole: mcuforge.Program):
    prog = _compile(_an547("SRAM"))
    reserve = _reserve(prog)
    assert prog.graph.regions == (("DTCM", 0, whole.arena_bytes), ("SRAM", whole.arena_bytes, reserve))
    assert prog.graph.constants_at == whole.arena_bytes
    assert [(r.name, r.bytes) for r in prog.memory_plan] == [("DTCM", whole.arena_bytes), ("SRAM", reserve)]
    assert prog.memory_plan[1].buffers == (("constants", 0, reserve, -1, len(prog.graph.ops)),)


def test_the_fit_check_counts_the_constants(whole: mcuforge.Program):
    """A DTCM that holds the arena but not the arena and the constants: the arena spills out of it."""
    reserve = _reserve(whole)
    spec = BoardSpec("t", "a tight board", "cortex-m55", (
        Region("DTCM", 0x2000_0000, whole.arena_bytes + reserve - 16, 0),
        Region("SRAM", 0x0100_0000, 1 * MB, 1),
        Region("flash", 0x2800_0000, 1 * MB, 9, "flash")), constants="DTCM")
    prog = _compile(spec)
    sizes = {r.name: r.size for r in spec.regions}
    assert prog.graph.regions, "the constants and the whole arena do not fit the DTCM together"
    for name, _start, nbytes in prog.graph.regions:
        assert nbytes <= sizes[name], name
    assert prog.graph.regions[0][0] == "DTCM" and prog.graph.constants_at == 0
    x = _input(prog)
    expected = whole.run_raw(x)
    for backend in ("python", "c"):
        assert all(np.array_equal(a, b) for a, b in zip(expected, prog.run_raw(x, backend=backend), strict=True))


def test_a_region_too_small_for_the_constants_is_refused(whole: mcuforge.Program):
    reserve = _reserve(whole)
    spec = BoardSpec("t", "a tiny board", "cortex-m55", (
        Region("DTCM", 0x2000_0000, 512, 0),
        Region("SRAM", 0x0100_0000, 1 * MB, 1),
        Region("flash", 0x2800_0000, 1 * MB, 9, "flash")), constants="DTCM")
    with pytest.raises(RegionError, match=(
            rf"the constants \({reserve:,} B in \d+ tensors; largest \S+ \([\d,]+ B\).*\) do not fit a tiny board's "
            rf"DTCM \(512 B\) they are copied to: short by {reserve - 512:,} B")):
        _compile(spec)


def test_the_c_runtime_reads_the_constants_from_ram(whole: mcuforge.Program):
    """After mf_init the program file's constants are zeroed: a runtime that reads them from the RAM copy gives
    the same bytes out; one reading the file would not (checked: the same damage to the file-read program)."""
    def run(prog: mcuforge.Program, x: np.ndarray) -> bytes:
        lp = LoadedProgram(prog.to_bytes())
        lib = lp.lib
        ctx = ctypes.create_string_buffer(lib.mf_host_sizeof_context())
        arena = np.zeros(lp.arena_bytes + 16, np.uint8)
        base = arena.ctypes.data + (-arena.ctypes.data) % 16
        assert lib.mf_init(ctx, lp._program, base, lp.arena_bytes) == 0
        offset, size = struct.unpack_from("<II", prog.to_bytes(), 80)
        lp._data[offset:offset + size] = 0  # the program file's constants ("flash"), after mf_init
        assert lib.mf_set_input(ctx, 0, x.ctypes.data, x.nbytes) == 0
        assert lib.mf_invoke(ctx, None) == 0
        n = ctypes.c_size_t()
        ptr = lib.mf_output(ctx, 0, ctypes.byref(n))
        return ctypes.string_at(ptr, n.value)

    from mcuforge.runtime import execute

    prog = _compile(_an547("DTCM"))
    name = prog.graph.inputs[0]
    x = np.random.default_rng(4).integers(-128, 128, prog.graph.tensors[name].shape, dtype=np.int8)
    expected = np.ascontiguousarray(execute(whole.graph, [x])[0]).tobytes()
    assert run(prog, x) == expected
    assert run(whole, x) != expected


def test_the_readers_refuse_a_bad_constants_copy(whole: mcuforge.Program):
    good = _compile(_an547("DTCM")).to_bytes()
    graph = deserialize(good)
    graph.constants_at = graph.arena_bytes - 16 * (graph.arena_bytes // 32)  # over the activations
    graph.constants_at -= graph.constants_at % 16
    over = serialize(graph)
    cases = [
        (patch(good, L.CONSTANTS_FIELDS_OFFSET, "<I", 3), "constants flags 0x3"),
        (patch(good, L.CONSTANTS_FIELDS_OFFSET + 4, "<I", 8), "not a 16-aligned range"),
        (patch(good, L.CONSTANTS_FIELDS_OFFSET + 4, "<I", graph.arena_bytes), "not a 16-aligned range"),
        (patch(good, 6, "<H", 2), "reserved before 3.3"),
        (patch(whole.to_bytes(), L.CONSTANTS_FIELDS_OFFSET, "<I", 1), "reserved before 3.3"),
        (over, "overlaps the constants' copy"),
    ]
    for data, message in cases:
        with pytest.raises(L.ProgramFormatError, match=message):
            deserialize(data)
        with pytest.raises(CRuntimeError, match="C runtime rejected the program: MF_ERR_(FORMAT|BOUNDS)"):
            LoadedProgram(data)


def test_constants_in_ram_run_on_mps3_an547(whole: mcuforge.Program):
    """Python == host C == QEMU (cortex-m55), constants copied to the DTCM with the arena and to the SRAM alone."""
    x = _input(whole)
    expected = whole.run_raw(x)
    ref = whole.run(x)
    for region in ("DTCM", "SRAM"):
        prog = _compile(_an547(region))
        for backend in ("python", "c"):
            got = prog.run_raw(x, backend=backend)
            assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True)), (region, backend)
        measured: dict = {}
        board = prog.run(x, backend="qemu", target="cortex-m55", measured=measured)
        assert all(np.array_equal(a, b) for a, b in zip(ref, board, strict=True)), (region, "qemu")
        assert measured["arena_bytes"] == prog.arena_bytes


def test_cli_board_at_region_and_info(tmp_path, capsys):
    """--board mps3-an547@SRAM compiles with the constants copied to the SRAM; info prints them in it."""
    from mcuforge.cli import main

    factory = tmp_path / "models.py"
    factory.write_text("import torch\nfrom torch import nn\n\n"
                       "def make():\n    torch.manual_seed(0)\n"
                       "    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()).eval(), "
                       "(torch.randn(1, 3, 8, 8),)\n")
    path = tmp_path / "m.mfp"
    assert main(["compile", f"{factory}:make", "--board", "mps3-an547@SRAM", "-o", str(path)]) == 0
    prog = mcuforge.load(path)
    assert [name for name, _s, _n in prog.graph.regions] == ["DTCM", "SRAM"]
    assert main(["compile", f"{factory}:make", "--board", "mps3-an547@ITCM"]) == 2
    assert "kept for the firmware's code" in capsys.readouterr().err
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    reserve = _reserve(prog)
    assert re.search(rf"region SRAM +{reserve:,} bytes at arena offset [\d,]+ \(1 buffers; {reserve:,} of them the "
                     r"constants copied from flash at mf_init\)", out), out


def test_export_c_gives_the_constants_region_its_bytes(tmp_path, whole: mcuforge.Program):
    """export-c: the SRAM region's buffer (the constants' copy alone) is linked at the SRAM's address with the
    constants' bytes, and the exported project run on QEMU prints the same bytes."""
    import subprocess

    from test_export_c import make, printed_outputs

    from mcuforge.export import export_c
    from mcuforge.runtime import execute

    prog = _compile(_an547("SRAM"))
    inputs = [np.random.default_rng(4).integers(-128, 128, prog.graph.tensors[n].shape, dtype=np.int8)
              for n in prog.graph.inputs]
    out = export_c(prog.to_bytes(), tmp_path / "export", inputs=inputs)
    assert "#define MF_MODEL_REGION_COUNT 2u" in (out / "model.h").read_text()
    got = printed_outputs(make(out, "run"))
    symbols = subprocess.run(["arm-none-eabi-nm", "-S", str(out / "build" / "example.elf")], capture_output=True,
                             text=True, check=True).stdout
    for name, base, (_n, _s, nbytes) in zip(("DTCM", "SRAM"), (0x2000_0000, 0x0100_0000), prog.graph.regions,
                                            strict=True):
        addr, size = re.search(rf"^([0-9a-f]+) ([0-9a-f]+) b region_{name}$", symbols, re.M).groups()
        assert int(addr, 16) == base and int(size, 16) == nbytes
    assert prog.graph.regions[1][2] == _reserve(prog)
    expected = execute(whole.graph, inputs)
    assert sorted(got) == list(range(len(expected)))
    for i, want in enumerate(expected):
        assert got[i] == np.ascontiguousarray(want).tobytes()
