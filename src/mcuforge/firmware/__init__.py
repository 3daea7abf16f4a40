"""Firmware for emulated Cortex-M boards: build it, run programs on QEMU, report sizes.

- ``build(target, trace)``: the cached test firmware ELF of a board (one per board runs any model).
- ``run_on_qemu(program_bytes, inputs, target, trace)``: outputs, trace stream, facts
  (instructions per inference, stack high-water mark, ...).
- ``size_report(target, program)``: runtime code bytes, and with a program its constant and
  arena bytes and the stack high-water mark measured on the board.
- ``describe_run(facts)``: one line of those facts for the CLI.
- ``BOARDS``: the QEMU machine, memory map and clock of each target.
"""

from .boards import BOARDS, Board, get_board
from .builder import FirmwareBuildError, build, cache_root
from .qemu import FirmwareRunError, check_board_target, describe_run, run_on_qemu
from .size import SizeReport, format_size_report, size_report
from .toolchain import INSTALL_HINT, ToolchainMissing

__all__ = [
    "BOARDS", "INSTALL_HINT", "Board", "FirmwareBuildError", "FirmwareRunError", "SizeReport", "ToolchainMissing",
    "build", "cache_root", "check_board_target", "describe_run", "format_size_report", "get_board", "run_on_qemu",
    "size_report",
]
