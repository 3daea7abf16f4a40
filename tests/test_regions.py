"""Memory regions: board presets with their memory maps, a program placed into a board's RAM regions (whole
in the fastest that holds it, else split with the shortest-lived buffers in the fastest), the region table in
the program file (3.2, only for a split program), and a split program giving the same bytes as one arena."""

from __future__ import annotations

import ctypes
import struct
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge.cruntime import CRuntimeError, LoadedProgram, _aligned, status_name
from mcuforge.program import ProgramFormatError, deserialize, serialize
from mcuforge.program import layout as L
from mcuforge.regions import BOARDS, BoardSpec, Region, RegionError, get_board_spec, place, resolve_target
from mcuforge.targets import KB, MB, TARGETS

FLASH = Region("flash", 0x2800_0000, 1 * MB, 9, "flash")


def _model() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1, groups=16),
                          nn.ReLU(), nn.Conv2d(16, 8, 1), nn.Flatten(), nn.Linear(8 * 16 * 16, 10)).eval()
    return model, torch.randn(1, 3, 16, 16)


def _compile(**kwargs: object) -> mcuforge.Program:
    model, x = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random calibration
        return mcuforge.compile(model, x, progress=False, **kwargs)


def _board(*sizes: int, speeds: tuple[int, ...] = ()) -> BoardSpec:
    regions = tuple(Region(f"R{i}", 0x2000_0000 + (i << 24), n, speeds[i] if speeds else i)
                    for i, n in enumerate(sizes))
    return BoardSpec("test", "a test board", "cortex-m55", (*regions, FLASH))


@pytest.fixture(scope="module")
def whole() -> mcuforge.Program:
    return _compile(target="cortex-m55")


def test_presets_list_real_memory_maps():
    for key in ("stm32h743", "stm32l4r5", "nrf5340", "mps3-an547"):
        spec = get_board_spec(key)
        assert spec.target in TARGETS and spec.source and spec.ram_regions
        assert spec.region(spec.constants).kind == "flash"
        spans = sorted((r.base, r.base + r.size, r.name) for r in spec.regions)
        for (_b0, end, name), (base, _e, nxt) in zip(spans, spans[1:], strict=False):
            assert end <= base, (key, name, nxt)  # no two regions overlap
    h7 = BOARDS["stm32h743"]
    assert [(r.name, r.size // KB) for r in h7.ram_regions] == [("DTCM", 128), ("AXI_SRAM", 512), ("SRAM1_3", 288),
                                                               ("SRAM4", 64)]
    assert h7.region("flash").size == 2 * MB and h7.region("ITCM").kind == "code"
    assert sum(r.size for r in BOARDS["stm32l4r5"].ram_regions) == 640 * KB
    assert BOARDS["nrf5340"].memory.ram_bytes == 512 * KB and BOARDS["nrf5340"].memory.flash_bytes == 1 * MB
    an547 = BOARDS["corstone-300"]
    assert an547.region("DTCM").base == 0x2000_0000 and an547.region("DTCM").size == 512 * KB
    assert an547.ram_regions[0].name == "DTCM"


def test_a_board_picks_its_core():
    assert resolve_target(None, "STM32H743")[0] == "cortex-m7"
    assert resolve_target(None, None) == ("cortex-m55", None)
    assert resolve_target("cortex-m55+ethos-u55-128", "mps3-an547")[0] == "cortex-m55+ethos-u55-128"
    with pytest.raises(ValueError, match="board 'stm32l4r5' has a cortex-m4, not a cortex-m7"):
        resolve_target("cortex-m7", "stm32l4r5")
    with pytest.raises(ValueError, match="unknown board 'stm32f0'; known boards: stm32h743"):
        get_board_spec("stm32f0")


def test_a_program_that_fits_one_region_is_unchanged(whole: mcuforge.Program):
    prog = _compile(board=_board(whole.arena_bytes // 2, whole.arena_bytes, 1 * MB, speeds=(0, 0, 1)))
    assert prog.to_bytes() == whole.to_bytes()  # in R1, as fast as R0: one arena, format 3.1
    split = _compile(board=_board(whole.arena_bytes // 2, whole.arena_bytes, 1 * MB))
    assert [name for name, _s, _n in split.graph.regions][0] == "R0"  # R1 is slower: R0 takes what it can
    assert struct.unpack_from("<HH", prog.to_bytes(), 4) == L.FORMAT_VERSION
    assert [(r.name, r.bytes) for r in prog.memory_plan] == [("arena", whole.arena_bytes)]
    h7 = _compile(board="stm32h743")
    assert h7.target == "cortex-m7" and h7.graph.regions == ()
    assert h7.to_bytes() == _compile(target="cortex-m7").to_bytes()


def test_a_program_split_across_regions_runs_the_same(whole: mcuforge.Program):
    half = whole.arena_bytes // 2
    prog = _compile(board=_board(half, half + 2048))
    names = [name for name, _s, _n in prog.graph.regions]
    assert names == ["R0", "R1"] and prog.arena_bytes == sum(n for _n, _s, n in prog.graph.regions)
    plan = prog.memory_plan
    assert [p.name for p in plan] == names
    for region, size in zip(plan, (half, half + 2048), strict=True):
        assert region.bytes <= size
        assert all(0 <= off and off + n <= region.bytes for _b, off, n, _f, _l in region.buffers)
    placed = {b for p in plan for b, *_ in p.buffers}
    assert len(placed) == sum(len(p.buffers) for p in plan)  # each buffer in one region
    data = prog.to_bytes()
    assert struct.unpack_from("<HH", data, 4) == L.REGIONS_VERSION
    back = deserialize(data)
    assert back.regions == prog.graph.regions and serialize(back) == data
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    for backend in ("python", "c"):
        for a, b in zip(whole.run_raw(x, backend=backend), prog.run_raw(x, backend=backend), strict=True):
            assert np.array_equal(a, b), backend


def test_a_board_too_small_is_refused(whole: mcuforge.Program):
    with pytest.raises(RegionError, match=r"does not fit the RAM regions of a test board: .* fits no RAM region "
                                          r"\(R0 1,024 B with [\d,]+ B live, R1 1,024 B .*short by"):
        _compile(board=_board(1024, 1024))
    prog = _compile(board=_board(1024, 1024), fit_check=False)  # written anyway, in one arena
    assert prog.to_bytes() == whole.to_bytes()
    flash_small = BoardSpec("f", "a small-flash board", "cortex-m55",
                            (Region("R", 0x2000_0000, 1 * MB), Region("flash", 0, 4 * KB, 9, "flash")))
    with pytest.raises(mcuforge.fit.FitError, match=r"does not fit a small-flash board: a small-flash board's flash "
                                                    r"4,096 B: the program needs"):
        _compile(board=flash_small)


def test_the_reader_refuses_a_bad_region_table(whole: mcuforge.Program):
    half = whole.arena_bytes // 2
    graph = deserialize(_compile(board=_board(half, half + 2048)).to_bytes())
    good = serialize(graph)

    def patched(fields: tuple[int, int] | None = None, record: tuple[int, int, int, int] | None = None,
                minor: int | None = None) -> bytes:
        buf = bytearray(good)
        offset, _count = L.REGION_FIELDS.unpack_from(buf, L.REGION_FIELDS_OFFSET)
        if fields is not None:
            L.REGION_FIELDS.pack_into(buf, L.REGION_FIELDS_OFFSET, *fields)
        if record is not None:
            L.REGION.pack_into(buf, offset + L.REGION.size, *record)
            struct.pack_into("<I", buf, 16, __import__("zlib").crc32(bytes(buf[L.HEADER.size:])))
        if minor is not None:
            struct.pack_into("<H", buf, 6, minor)
        struct.pack_into("<I", buf, L.HEADER_CRC_OFFSET, L.header_crc(bytes(buf[:L.HEADER.size])))
        return bytes(buf)

    offset, count = L.REGION_FIELDS.unpack_from(good, L.REGION_FIELDS_OFFSET)
    name_off, name_len, start, nbytes = L.REGION.unpack_from(good, offset + L.REGION.size)
    first = graph.regions[0]
    graph.regions = (("R0", 0, first[2] - 16), ("R1", first[2] - 16, graph.arena_bytes - first[2] + 16))
    crossing = serialize(graph)  # a buffer straddles the moved boundary
    cases = [
        (patched(fields=(offset, 1)), "region count 1"),
        (patched(fields=(L.HEADER.size, count)), "region table .* overlaps another section|not a 4-aligned"),
        (patched(record=(name_off, name_len, start + 16, nbytes - 16)), "regions lie end to end"),
        (patched(minor=1), "reserved before 3.2"),
        (crossing, "crosses a region boundary"),
    ]
    for data, message in cases:
        with pytest.raises(ProgramFormatError, match=message):
            deserialize(data)
        with pytest.raises(CRuntimeError, match="C runtime rejected the program: MF_ERR_(FORMAT|BOUNDS)"):
            LoadedProgram(data)


def test_mf_init_regions_checks_every_buffer(whole: mcuforge.Program):
    half = whole.arena_bytes // 2
    loaded = LoadedProgram(_compile(board=_board(half, half + 2048)).to_bytes())
    lib, sizes = loaded.lib, loaded.region_bytes
    assert len(sizes) == 2 and sum(sizes) == loaded.arena_bytes
    bufs = [_aligned(n + 16) for n in sizes]
    ctx = ctypes.create_string_buffer(lib.mf_host_sizeof_context())

    def init(bases: list[int], lengths: list[int]) -> str:
        status = lib.mf_init_regions(ctx, loaded._program, (ctypes.c_void_p * len(bases))(*bases),
                                     (ctypes.c_size_t * len(lengths))(*lengths), len(bases))
        return status_name(status)

    addr = [b.ctypes.data for b in bufs]
    assert init(addr, sizes) == "MF_OK"
    assert init(addr[:1], sizes[:1]) == "MF_ERR_ARG"  # one buffer per region
    assert init([addr[0], addr[1] + 8], sizes) == "MF_ERR_ARG"  # 16-byte aligned
    bufs[0][:] = 0xA5
    assert init(addr, [sizes[0], sizes[1] - 16]) == "MF_ERR_ARENA_TOO_SMALL"
    assert (bufs[0] == 0xA5).all()  # a refused call writes no buffer
    single = LoadedProgram(whole.to_bytes())
    arena = _aligned(whole.arena_bytes)
    assert single.region_bytes == [] and lib.mf_init_regions(  # one arena: one buffer, as mf_init
        ctx, single._program, (ctypes.c_void_p * 1)(arena.ctypes.data), (ctypes.c_size_t * 1)(arena.size), 1) == 0


def test_place_is_a_no_op_when_the_fastest_region_holds_everything(whole: mcuforge.Program):
    graph = deserialize(whole.to_bytes())
    uses = place(graph, _board(whole.arena_bytes))
    assert [(u.name, u.bytes) for u in uses] == [("R0", whole.arena_bytes)] and graph.regions == ()


def test_cli_board_and_info_per_region(tmp_path, capsys, whole: mcuforge.Program):
    from mcuforge.cli import main

    factory = tmp_path / "models.py"
    factory.write_text("import torch\nfrom torch import nn\n\n"
                       "def make():\n    torch.manual_seed(0)\n"
                       "    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()).eval(), "
                       "(torch.randn(1, 3, 8, 8),)\n")
    out = tmp_path / "m.mfp"
    assert main(["compile", f"{factory}:make", "--board", "stm32l4r5", "-o", str(out)]) == 0
    assert mcuforge.load(out).target == "cortex-m4"
    assert main(["compile", f"{factory}:make", "--board", "stm32l4r5", "--ram-budget", "64", "-o", str(out)]) == 2
    assert "error: the program does not meet its budget: ram_budget 64 B: the arena needs" in capsys.readouterr().err
    assert main(["compile", f"{factory}:make", "--board", "stm32f0"]) == 2
    half = whole.arena_bytes // 2
    split = _compile(board=_board(half, half + 2048))
    split.save(tmp_path / "split.mfp")
    capsys.readouterr()
    assert main(["info", str(tmp_path / "split.mfp")]) == 0
    text = capsys.readouterr().out
    for r in split.memory_plan:
        assert f"region {r.name:<8} {r.bytes:,} bytes at arena offset {r.start:,} ({len(r.buffers)} buffers)" in text


def test_html_report_has_a_timeline_per_region(tmp_path, whole: mcuforge.Program):
    """The Inspector's HTML report of a split program draws one arena timeline per RAM region (each region's
    buffers at their offsets in it); a one-arena program keeps its one timeline."""
    half = whole.arena_bytes // 2
    prog = _compile(board=_board(half, half + 2048))
    x = torch.randn(1, 3, 16, 16)
    for p, alts in ((prog, ["arena timeline R0", "arena timeline R1"]), (whole, ["arena timeline"])):
        _out, trace = p.run(x, trace=True)
        html = mcuforge.Inspector(p, trace).to_html(tmp_path / "r.html").read_text()
        section = html[html.index('<section id="arena-timeline">'):]
        section = section[:section.index("</section>")]
        assert [a.split('"')[0] for a in section.split('alt="')[1:]] == alts
    from mcuforge.inspect.report import arena_figure

    _out, trace = prog.run(x, trace=True)
    buffers = [a for a in trace.allocs if a.kind != "arena"]
    drawn = [len(arena_figure(trace, trace.op_count, r).axes[0].patches) for r in prog.graph.regions]
    assert all(drawn) and sum(drawn) == len(buffers)  # every buffer in exactly one region's timeline
