"""Board limits: every target names its boards' flash and RAM; compile refuses a program that does not
fit the reference board or the user's part, saying by how much and what is largest."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mcuforge
from mcuforge.firmware.boards import BOARDS
from mcuforge.fit import FitError, board_for, check_fit
from mcuforge.ir import Graph, Op, Tensor
from mcuforge.lower.fallback import aten_fp32_attrs
from mcuforge.plan import plan_arena
from mcuforge.program import serialize
from mcuforge.targets import TARGETS

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_target_names_its_boards():
    for name, target in TARGETS.items():
        assert target.boards, name
        ref = target.reference_board
        if target.qemu_machine:
            # the QEMU board first: what passes the check runs on the emulated board
            assert ref.name == f"QEMU {target.qemu_machine}" and ref.flash_bytes is None
            assert ref.ram_bytes == BOARDS[name].heap_bytes, name
        for board in target.boards:
            assert board.ram_bytes > 0 and (board.flash_bytes is None or board.flash_bytes > 0), board


def test_readme_table_matches_the_targets():
    rows = re.findall(r"^\| (cortex-m\w+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|", README.read_text(), re.M)
    table = {r[0]: r[1:] for r in rows if "(program in RAM)" in r[2] or "MB" in r[2] or "KB" in r[2]}
    assert set(table) == set(TARGETS)
    for name, (board, flash, ram) in table.items():
        ref = TARGETS[name].reference_board
        assert board.strip() == ref.name, name
        size = lambda n: f"{n // (1 << 20)} MB" if n % (1 << 20) == 0 else f"{n // 1024} KB"  # noqa: E731
        assert flash.strip() == ("(program in RAM)" if ref.flash_bytes is None else size(ref.flash_bytes)), name
        assert ram.strip() == size(ref.ram_bytes), name


def graph_of(weight_bytes: int, activation_bytes: int, target: str = "cortex-m4") -> Graph:
    n = activation_bytes
    tensors = {
        "x": Tensor("x", (1, n), "int8"),
        "w": Tensor("w", (weight_bytes,), "int8", data=np.zeros(weight_bytes, np.int8)),
        "y": Tensor("y", (1, n), "int8"),
    }
    ops = [Op("aten_fp32", ["x", "w"], ["y"], aten_fp32_attrs("aten.clone.default", [], {}),
              backend="fp32", debug={"module": "body.fc"})]
    graph = Graph(tensors, ops, ["x"], ["y"], target=target)
    plan_arena(graph)
    return graph


def test_shared_ram_board_counts_program_and_arena_together():
    graph = graph_of(1 << 20, 1024, "cortex-m7")  # QEMU mps2-an500: 3 MB for both
    size = len(serialize(graph))
    check_fit(graph, size, "cortex-m7")
    big = graph_of(3 << 20, 1024, "cortex-m7")
    with pytest.raises(FitError, match=r"does not fit QEMU mps2-an500, the cortex-m7 reference board: RAM \(program "
                                       r"\+ arena\) needs [\d,]+ bytes, it has 3,145,728 \([\d,]+ bytes too many\); "
                                       r"largest constants: 3,145,728 B w \(module 'body\.fc', aten_fp32\)"):
        check_fit(big, len(serialize(big)), "cortex-m7")


def test_a_named_part_checks_flash_and_ram_apart():
    graph = graph_of(4096, 2048)
    size = len(serialize(graph))
    check_fit(graph, size, "cortex-m4", flash_bytes=size, ram_bytes=graph.ram_bytes)  # exactly enough
    with pytest.raises(FitError, match=rf"flash needs {size:,} bytes, it has {size - 1:,} \(1 bytes too many\); "
                                       r"largest constants: 4,096 B w"):
        check_fit(graph, size, "cortex-m4", flash_bytes=size - 1)
    with pytest.raises(FitError, match=rf"RAM needs {graph.ram_bytes:,} bytes, it has 1,000 .*largest activations: "
                                       r"2,048 B x \(module 'body\.fc', aten_fp32\), 2,048 B y"):
        check_fit(graph, size, "cortex-m4", ram_bytes=1000)
    assert board_for("cortex-m55+ethos-u55-128").name == "QEMU mps3-an547"  # the CPU's board
    with pytest.raises(ValueError, match="flash_bytes must be a positive number of bytes"):
        board_for("cortex-m4", flash_bytes=0)


def test_compile_checks_the_fit_and_can_skip_it():
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(64, 64)), (torch.randn(1, 64),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FitError, match=r"the program does not fit the given part: flash needs"):
            mcuforge.compile(model, x, target="cortex-m4", progress=False, flash_bytes=1024)
        prog = mcuforge.compile(model, x, target="cortex-m4", progress=False, flash_bytes=1024, fit_check=False)
        assert prog.program_bytes > 1024
        prog = mcuforge.compile(model, x, target="cortex-m0plus", progress=False)  # 4 KB of weights fit a Pico
        assert prog.program_bytes < TARGETS["cortex-m0plus"].reference_board.flash_bytes
