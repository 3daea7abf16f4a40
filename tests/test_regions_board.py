"""A program split across RAM regions runs on the emulated boards with the same bytes out as the Python
backend and the host C runtime (three-way), each region's arena at its own address: the mps3-an547 board
(cortex-m55: DTCM at 0x20000000 and SRAM at 0x01000000, or the real preset's DTCM + ISRAM) and mps2-an386
(cortex-m4: SSRAM2/3 at 0x20000000 and the PSRAM heap)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge.firmware.boards import BOARDS as QEMU_BOARDS
from mcuforge.firmware.qemu import region_addresses
from mcuforge.regions import BOARDS, BoardSpec, Region
from mcuforge.targets import KB, MB


def _model(channels: int, size: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(channels, channels, 3, padding=1, groups=channels), nn.ReLU(),
                          nn.Conv2d(channels, 8, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)).eval()
    return model, torch.randn(1, 3, size, size)


def _compile(model: nn.Module, x: torch.Tensor, **kwargs: object) -> mcuforge.Program:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random calibration
        return mcuforge.compile(model, x, progress=False, **kwargs)


def _small(target: str, fast: str, slow: str, arena: int) -> BoardSpec:
    """The QEMU board's two regions by its names, each smaller than ``arena``: the split is forced."""
    return BoardSpec("small", "a small board", target, (Region(fast, 0x2000_0000, arena // 2, 0),
                                                        Region(slow, 0x6000_0000, arena - 16, 1),
                                                        Region("flash", 0, 1 * MB, 9, "flash")))


def _three_way(prog: mcuforge.Program, whole: mcuforge.Program, target: str) -> dict:
    x = np.random.default_rng(3).standard_normal(prog.input_shapes[0]).astype(np.float32)
    expected = whole.run_raw(x)
    measured: dict = {}
    for backend in ("python", "c"):
        got = prog.run_raw(x, backend=backend)
        assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True)), backend
    board = prog.run(x, backend="qemu", target=target, measured=measured)
    ref = whole.run(x)
    assert all(np.array_equal(a, b) for a, b in zip(ref, board, strict=True)), "qemu"
    return measured


def test_the_presets_name_the_qemu_boards_regions():
    for target, preset in (("cortex-m55", "mps3-an547"), ("cortex-m4", "mps2-an386")):
        spec = BOARDS[preset]
        assert spec.target == target
        for name, address, size in QEMU_BOARDS[target].regions:
            region = spec.region(name)
            assert region.size <= size or address == 0, name
            assert address in (0, region.base), name  # 0: the firmware's heap


@pytest.mark.parametrize(("target", "fast", "slow"), [("cortex-m55", "DTCM", "SRAM"),
                                                      ("cortex-m4", "SSRAM23", "PSRAM")])
def test_a_split_program_runs_on_the_board(target: str, fast: str, slow: str):
    model, x = _model(16, 16)
    whole = _compile(model, x, target=target)
    prog = _compile(model, x, board=_small(target, fast, slow, whole.arena_bytes))
    assert [name for name, _s, _n in prog.graph.regions] == [fast, slow]
    assert region_addresses(target, prog.to_bytes())[0] == 0x2000_0000
    measured = _three_way(prog, whole, target)
    assert measured["arena_bytes"] == prog.arena_bytes


def test_an_arena_over_the_dtcm_is_split_on_mps3_an547():
    """The real Corstone-300 preset: an arena over its 512 KB DTCM goes to DTCM + the next regions."""
    model, x = _model(20, 128)  # 20 x 128 x 128 int8 maps: 320 KB each, two live around the depthwise
    whole = _compile(model, x, target="cortex-m55")
    assert whole.arena_bytes > 512 * KB
    prog = _compile(model, x, board="mps3-an547")
    names = [name for name, _s, _n in prog.graph.regions]
    assert names[0] == "DTCM" and len(names) >= 2
    assert prog.graph.regions[0][2] <= 512 * KB
    _three_way(prog, whole, "cortex-m55")


def test_export_c_places_each_region_in_its_memory(tmp_path):
    import re
    import subprocess

    from test_export_c import make, printed_outputs

    from mcuforge.export import export_c
    from mcuforge.runtime import execute

    model, x = _model(16, 16)
    whole = _compile(model, x, target="cortex-m55")
    prog = _compile(model, x, board=_small("cortex-m55", "DTCM", "SRAM", whole.arena_bytes))
    inputs = [np.random.default_rng(4).integers(-128, 128, prog.graph.tensors[n].shape, dtype=np.int8)
              for n in prog.graph.inputs]
    out = export_c(prog.to_bytes(), tmp_path / "export", inputs=inputs)
    header = (out / "model.h").read_text()
    assert "#define MF_MODEL_REGION_COUNT 2u" in header
    script = (out / "board" / "link.ld").read_text()
    assert "R_DTCM (rw) : ORIGIN = 0x20000000" in script and "R_SRAM (rw) : ORIGIN = 0x1000000" in script
    got = printed_outputs(make(out, "run"))
    symbols = subprocess.run(["arm-none-eabi-nm", "-S", str(out / "build" / "example.elf")], capture_output=True,
                             text=True, check=True).stdout
    for name, base, (_n, _s, nbytes) in zip(("DTCM", "SRAM"), (0x2000_0000, 0x0100_0000), prog.graph.regions,
                                            strict=True):
        addr, size = re.search(rf"^([0-9a-f]+) ([0-9a-f]+) b region_{name}$", symbols, re.M).groups()
        assert int(addr, 16) == base and int(size, 16) == nbytes
    expected = execute(whole.graph, inputs)
    assert sorted(got) == list(range(len(expected)))
    for i, want in enumerate(expected):
        assert got[i] == np.ascontiguousarray(want).tobytes()


def test_a_named_board_too_small_is_refused():
    from mcuforge.regions import RegionError

    model, x = _model(20, 128)  # a 688 KB arena against the nRF5340's one 512 KB SRAM
    with pytest.raises(RegionError, match=r"does not fit the RAM regions of nRF5340 \(application core\): "
                                          r"tensor \S+ \([\d,]+ B, live over ops \d+\.\.\d+\) fits no RAM region "
                                          r"\(SRAM 524,288 B with [\d,]+ B live\); the arena planned as one needs "
                                          r"[\d,]+ B, the regions hold 524,288 B: short by [\d,]+ B"):
        _compile(model, x, board="nrf5340")


def test_export_link_script_of_a_program_split_for_another_board():
    """A program split for a board QEMU does not emulate (an H743's DTCM / AXI SRAM) still links for the QEMU
    example: its regions go to the example's EXTRA memory (the user's own linker script places them)."""
    from mcuforge.export import _region_link

    model, x = _model(16, 16)
    whole = _compile(model, x, target="cortex-m7")
    spec = BoardSpec("h", "an H743-like board", "cortex-m7", (
        Region("DTCM", 0x2000_0000, whole.arena_bytes // 2, 0),
        Region("AXI_SRAM", 0x2400_0000, whole.arena_bytes - 16, 1),
        Region("flash", 0x0800_0000, 2 * MB, 9, "flash")))
    prog = _compile(model, x, board=spec)
    lines = _region_link(prog.graph, "cortex-m7")
    assert lines["REGION_MEMORY"] == ""
    assert lines["REGION_SECTIONS"].count("> EXTRA") == 2 and ".mcuforge_region.AXI_SRAM" in lines["REGION_SECTIONS"]
