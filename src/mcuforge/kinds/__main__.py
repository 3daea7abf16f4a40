"""``python -m mcuforge.kinds``: regenerate csrc/runtime/kind_table.h, kind_scratch.h and csrc/kernels/kernel_list.h
from the kind table."""

from .cheader import HEADER, KERNEL_LIST, SCRATCH_HEADER, write

if __name__ == "__main__":
    print(f"{HEADER}, {SCRATCH_HEADER.name}, {KERNEL_LIST.name}: {'written' if write() else 'up to date'}")
