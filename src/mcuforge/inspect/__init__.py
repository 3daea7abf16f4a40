"""The Inspector: a trace joined with the program's debug record (tables, totals, numeric gap per
layer, Chrome trace, HTML report)."""

from .inspector import Inspector, TraceMismatchError

__all__ = ["Inspector", "TraceMismatchError"]
