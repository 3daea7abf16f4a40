"""The program file: one little-endian file with everything the C runtime needs to run a graph.

``serialize(graph) -> bytes`` writes it, ``deserialize(bytes) -> Graph`` reads and validates it;
docs/format.md is the byte layout.
"""

from mcuforge.program.layout import FORMAT_VERSION, MAGIC, Header, ProgramFormatError
from mcuforge.program.reader import deserialize, read_header
from mcuforge.program.writer import serialize

__all__ = [
    "FORMAT_VERSION", "MAGIC", "Header", "ProgramFormatError", "deserialize", "read_header", "serialize",
]
