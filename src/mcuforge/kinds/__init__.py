"""The op kinds: one :class:`KindSpec` per kind in :mod:`mcuforge.kinds.table`, everything else derived.

``python -m mcuforge.kinds`` regenerates the C runtime's ``csrc/runtime/kind_table.h`` from the table
(tests/test_kinds.py fails while it is stale). docs/adding-an-op.md walks through adding a kind.
"""

from __future__ import annotations

from .spec import ATTR_TYPES, MAC_RULES, KindSpec
from .table import KIND, KIND_BY_ID, KINDS


def kinds_where(**flags: object) -> tuple[str, ...]:
    """The kinds (in id order) whose spec fields equal ``flags``, e.g. ``kinds_where(tosa=True)``."""
    return tuple(s.name for s in KINDS if all(getattr(s, k) == v for k, v in flags.items()))


__all__ = ["ATTR_TYPES", "KIND", "KINDS", "KIND_BY_ID", "MAC_RULES", "KindSpec", "kinds_where"]
