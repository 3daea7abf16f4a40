"""``python -m mcuforge.kinds``: regenerate csrc/runtime/kind_table.h from the kind table."""

from .cheader import HEADER, write

if __name__ == "__main__":
    print(f"{HEADER}: {'written' if write() else 'up to date'}")
