"""Finding the cross compiler and the emulator, with the install hint when they are missing."""

from __future__ import annotations

import functools
import shutil
import subprocess

#: How every build of the C sources compiles them (host library, firmware, exported projects):
#: strict C99 (not gnu99, whose default -ffp-contract=fast would fuse float multiply-adds), no FMA
#: contraction (fp32 results must not depend on the compiler's fusing, or the host and the boards
#: would differ), and type punning through the arena as CMSIS-NN does.
PORTABLE_C_FLAGS = ("-std=c99", "-ffp-contract=off", "-fno-strict-aliasing")

INSTALL_HINT = ("install the Arm cross toolchain and the emulator, on Debian/Ubuntu: "
                "sudo apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm")


class ToolchainMissing(RuntimeError):
    """arm-none-eabi-gcc, its newlib or qemu-system-arm is not installed."""


def require(tool: str) -> str:
    """The path of ``tool`` on PATH, or a ToolchainMissing that says how to install it."""
    path = shutil.which(tool)
    if path is None:
        raise ToolchainMissing(f"{tool} not found on PATH: {INSTALL_HINT}")
    return path


@functools.cache
def version(tool: str) -> str:
    """The first line of ``tool --version`` (part of the build cache key)."""
    out = subprocess.run([require(tool), "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else ""
