"""Typed attribute values: encoding to and decoding from the attrs pool of 32-bit words.

A value is a tag word ``tag | count << 8`` followed by its payload (see layout.py for the
tags). The encoding is self-delimiting and LIST/DICT carry their payload size, so a C reader
can skip a value without understanding it and check every bound before reading.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from mcuforge.ir import TensorRef
from mcuforge.program import layout as L
from mcuforge.program.layout import ProgramFormatError

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def float_to_word(value: float) -> int:
    """float32 bits of ``value``: rounds to nearest; magnitudes beyond float32 become +-inf."""
    with np.errstate(over="ignore"):
        return int(np.float32(value).view(np.uint32))


def word_to_float(word: int) -> float:
    return _F32.unpack(_U32.pack(word))[0]


def to_signed(word: int) -> int:
    return word - (1 << 32) if word & 0x8000_0000 else word


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_float(value: Any) -> bool:
    return isinstance(value, float | np.floating)


class StringTable:
    """The writer's string table: UTF-8 strings, each followed by a NUL, stored once."""

    def __init__(self) -> None:
        self._offsets: dict[str, int] = {}
        self._blob = bytearray()

    def add(self, text: str) -> tuple[int, int]:
        """(offset, byte length) of ``text`` in the table."""
        raw = text.encode("utf-8")
        if text not in self._offsets:
            self._offsets[text] = len(self._blob)
            # The NUL lets a C runtime print names straight from flash.
            self._blob += raw + b"\0"
        return self._offsets[text], len(raw)

    def tobytes(self) -> bytes:
        return bytes(self._blob)


class ValueEncoder:
    """Encodes one op's attribute values; ``n_inputs`` bounds its TensorRef indices."""

    def __init__(self, strings: StringTable, n_inputs: int) -> None:
        self.strings = strings
        self.n_inputs = n_inputs

    def encode_attr(self, value: Any, attr_type: str, where: str) -> list[int]:
        if attr_type == "int":
            if not _is_int(value):
                raise ValueError(f"{where}: expected an int, got {type(value).__name__} {value!r}")
            return self._int32(value, where)
        if attr_type == "float":
            if not (_is_float(value) or _is_int(value)):
                raise ValueError(f"{where}: expected a float, got {type(value).__name__} {value!r}")
            return [L.tag_word(L.TAG_FLOAT, 1), float_to_word(value)]
        if attr_type == "ints":
            if not isinstance(value, list | tuple) or not all(_is_int(v) for v in value):
                raise ValueError(f"{where}: expected a list of ints, got {value!r}")
            return self._ints(value, where)
        if attr_type == "str":
            if not isinstance(value, str):
                raise ValueError(f"{where}: expected a str, got {type(value).__name__} {value!r}")
            return self._str(value)
        if attr_type == "any":
            return self._any(value, where, depth=0)
        raise ValueError(f"{where}: unknown attribute type {attr_type!r} in OP_KINDS")

    def _int32(self, value: Any, where: str) -> list[int]:
        if not L.I32_MIN <= int(value) <= L.I32_MAX:
            raise ValueError(f"{where}: {value} does not fit in int32")
        return [L.tag_word(L.TAG_INT, 1), int(value) & L.U32_MAX]

    def _ints(self, values: Any, where: str) -> list[int]:
        if len(values) > L.MAX_COUNT:
            raise ValueError(f"{where}: list of {len(values)} values is too long")
        for v in values:
            if not L.I32_MIN <= int(v) <= L.I32_MAX:
                raise ValueError(f"{where}: {v} does not fit in int32")
        return [L.tag_word(L.TAG_INTS, len(values))] + [int(v) & L.U32_MAX for v in values]

    def _str(self, text: str) -> list[int]:
        offset, length = self.strings.add(text)
        return [L.tag_word(L.TAG_STR, 1), offset, length]

    def _any(self, value: Any, where: str, depth: int) -> list[int]:
        if value is None:
            return [L.tag_word(L.TAG_NONE, 0)]
        if isinstance(value, bool | np.bool_):
            return [L.tag_word(L.TAG_BOOL, 1), int(bool(value))]
        if _is_int(value):
            return self._any_int(int(value), where)
        if _is_float(value):
            return [L.tag_word(L.TAG_FLOAT, 1), float_to_word(value)]
        if isinstance(value, str):
            return self._str(value)
        if isinstance(value, TensorRef):
            return self._tensor_ref(value, where)
        if isinstance(value, dict):
            return self._dict(value, where, depth)
        if isinstance(value, list | tuple):
            return self._sequence(value, where, depth)
        raise ValueError(
            f"{where}: cannot store a {type(value).__name__} ({value!r}); supported: None, bool, int, "
            "float, str, TensorRef, list, tuple, dict"
        )

    def _any_int(self, value: int, where: str) -> list[int]:
        if L.I32_MIN <= value <= L.I32_MAX:
            return [L.tag_word(L.TAG_INT, 1), value & L.U32_MAX]
        # aten args hold int64 sentinels such as slice(end=sys.maxsize).
        if L.I64_MIN <= value <= L.I64_MAX:
            bits = value & ((1 << 64) - 1)
            return [L.tag_word(L.TAG_INT64, 1), bits & L.U32_MAX, bits >> 32]
        raise ValueError(f"{where}: {value} does not fit in int64")

    def _tensor_ref(self, ref: TensorRef, where: str) -> list[int]:
        if not _is_int(ref.index) or not 0 <= ref.index < self.n_inputs:
            raise ValueError(f"{where}: {ref} is not an index into the op's {self.n_inputs} inputs")
        return [L.tag_word(L.TAG_TENSOR, 1), int(ref.index)]

    def _sequence(self, values: list | tuple, where: str, depth: int) -> list[int]:
        if len(values) > L.MAX_COUNT:
            raise ValueError(f"{where}: list of {len(values)} values is too long")
        # Homogeneous lists get the compact forms; anything else is a generic LIST.
        if all(_is_int(v) and L.I32_MIN <= v <= L.I32_MAX for v in values):
            return self._ints(values, where)
        if all(_is_float(v) for v in values):
            return [L.tag_word(L.TAG_FLOATS, len(values))] + [float_to_word(v) for v in values]
        self._check_depth(depth, where)
        payload: list[int] = []
        for i, v in enumerate(values):
            payload += self._any(v, f"{where}[{i}]", depth + 1)
        return [L.tag_word(L.TAG_LIST, len(values)), len(payload)] + payload

    @staticmethod
    def _check_depth(depth: int, where: str) -> None:
        # The same limit as the reader's: a LIST/DICT at depth 0..MAX_VALUE_DEPTH - 1.
        if depth >= L.MAX_VALUE_DEPTH:
            raise ValueError(f"{where}: lists/dicts nested deeper than {L.MAX_VALUE_DEPTH} levels")

    def _dict(self, values: dict, where: str, depth: int) -> list[int]:
        if len(values) > L.MAX_COUNT:
            raise ValueError(f"{where}: dict of {len(values)} items is too long")
        self._check_depth(depth, where)
        payload: list[int] = []
        for key, v in values.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: dict key {key!r} is not a str")
            payload += self._str(key) + self._any(v, f"{where}[{key!r}]", depth + 1)
        return [L.tag_word(L.TAG_DICT, len(values)), len(payload)] + payload


class ValueDecoder:
    """Decodes attribute values from the attrs pool, checking every tag, count and bound.

    ``words`` is the whole pool as unsigned ints; ``pool_offset`` is its file offset (for error
    messages); ``read_string(offset, length, where)`` returns a string-table entry or raises.
    """

    def __init__(
        self, words: list[int], pool_offset: int, read_string: Callable[[int, int, str], str]
    ) -> None:
        self.words = words
        self.pool_offset = pool_offset
        self.read_string = read_string

    def decode_attrs(
        self, start: int, n_words: int, specs: list[tuple[str, str]], n_inputs: int, where: str,
        optional: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The op's attributes (``specs`` from OP_KINDS) from words [start, start + n_words); the ``optional``
        trailing ones (ir.OPTIONAL_ATTRS) may be absent, and are then left out of the result."""
        end = start + n_words
        attrs: dict[str, Any] = {}
        pos = start
        for name, attr_type in specs:
            ctx = f"{where}, attr {name!r}"
            if pos >= end and optional and name in optional:
                break
            if pos >= end:
                raise self._error(ctx, pos, f"value missing: the op's {n_words} attrs words end here")
            expected = L.TAG_OF_ATTR_TYPE.get(attr_type)
            tag = self.words[pos] & 0xFF
            if expected is not None and tag != expected:
                raise self._error(
                    ctx, pos,
                    f"declared {attr_type!r} needs tag {L.TAG_NAMES[expected]}, found tag {tag}",
                )
            attrs[name], pos = self._read(pos, end, 0, n_inputs, ctx)
        if pos != end:
            raise self._error(where, pos, f"{end - pos} attrs words left over after the last value")
        return attrs

    def _error(self, ctx: str, pos: int, message: str) -> ProgramFormatError:
        byte = self.pool_offset + 4 * pos
        return ProgramFormatError(f"{ctx}: {message} (attrs word {pos}, file byte {byte})")

    def _need(self, pos: int, n: int, end: int, ctx: str) -> None:
        if n > end - pos:
            raise self._error(ctx, pos, f"value needs {n} words, only {end - pos} left in its range")

    def _read(self, pos: int, end: int, depth: int, n_inputs: int, ctx: str) -> tuple[Any, int]:
        """(value, position after it) for the value whose tag word is at ``pos``."""
        self._need(pos, 1, end, ctx)
        word = self.words[pos]
        tag, count = word & 0xFF, word >> 8
        reader = self._READERS.get(tag)
        if reader is None:
            raise self._error(ctx, pos, f"unknown value tag {tag}")
        return reader(self, pos + 1, count, end, depth, n_inputs, ctx)

    def _scalar(self, pos: int, count: int, end: int, n_words: int, ctx: str) -> list[int]:
        if count != 1:
            raise self._error(ctx, pos - 1, f"scalar value with count {count} (must be 1)")
        self._need(pos, n_words, end, ctx)
        return self.words[pos:pos + n_words]

    def _none(self, pos, count, end, depth, n_inputs, ctx):
        if count != 0:
            raise self._error(ctx, pos - 1, f"NONE value with count {count} (must be 0)")
        return None, pos

    def _int(self, pos, count, end, depth, n_inputs, ctx):
        (word,) = self._scalar(pos, count, end, 1, ctx)
        return to_signed(word), pos + 1

    def _int64(self, pos, count, end, depth, n_inputs, ctx):
        low, high = self._scalar(pos, count, end, 2, ctx)
        return (to_signed(high) << 32) | low, pos + 2

    def _float(self, pos, count, end, depth, n_inputs, ctx):
        (word,) = self._scalar(pos, count, end, 1, ctx)
        return word_to_float(word), pos + 1

    def _bool(self, pos, count, end, depth, n_inputs, ctx):
        (word,) = self._scalar(pos, count, end, 1, ctx)
        if word > 1:
            raise self._error(ctx, pos, f"BOOL payload {word} (must be 0 or 1)")
        return bool(word), pos + 1

    def _ints(self, pos, count, end, depth, n_inputs, ctx):
        self._need(pos, count, end, ctx)
        return [to_signed(w) for w in self.words[pos:pos + count]], pos + count

    def _floats(self, pos, count, end, depth, n_inputs, ctx):
        self._need(pos, count, end, ctx)
        return [word_to_float(w) for w in self.words[pos:pos + count]], pos + count

    def _str(self, pos, count, end, depth, n_inputs, ctx):
        offset, length = self._scalar(pos, count, end, 2, ctx)
        return self.read_string(offset, length, f"{ctx} (attrs word {pos})"), pos + 2

    def _tensor(self, pos, count, end, depth, n_inputs, ctx):
        (index,) = self._scalar(pos, count, end, 1, ctx)
        if index >= n_inputs:
            raise self._error(ctx, pos, f"tensor argument {index} but the op has {n_inputs} inputs")
        return TensorRef(index), pos + 1

    def _container_end(self, pos: int, end: int, depth: int, ctx: str) -> int:
        """End of a LIST/DICT payload whose size word is at ``pos``, checked against ``end``."""
        if depth >= L.MAX_VALUE_DEPTH:
            raise self._error(ctx, pos - 1, f"values nested deeper than {L.MAX_VALUE_DEPTH} levels")
        self._need(pos, 1, end, ctx)
        size = self.words[pos]
        self._need(pos + 1, size, end, ctx)
        return pos + 1 + size

    def _list(self, pos, count, end, depth, n_inputs, ctx):
        inner_end = self._container_end(pos, end, depth, ctx)
        items, pos = [], pos + 1
        for _ in range(count):
            item, pos = self._read(pos, inner_end, depth + 1, n_inputs, ctx)
            items.append(item)
        if pos != inner_end:
            raise self._error(ctx, pos, f"{inner_end - pos} words of the LIST's size left unused")
        return items, pos

    def _dict(self, pos, count, end, depth, n_inputs, ctx):
        inner_end = self._container_end(pos, end, depth, ctx)
        items: dict[str, Any] = {}
        pos += 1
        for _ in range(count):
            self._need(pos, 1, inner_end, ctx)
            if self.words[pos] & 0xFF != L.TAG_STR:
                raise self._error(ctx, pos, f"DICT key has tag {self.words[pos] & 0xFF}, not STR")
            key, pos = self._read(pos, inner_end, depth + 1, n_inputs, ctx)
            if key in items:
                raise self._error(ctx, pos, f"DICT key {key!r} appears twice")
            items[key], pos = self._read(pos, inner_end, depth + 1, n_inputs, ctx)
        if pos != inner_end:
            raise self._error(ctx, pos, f"{inner_end - pos} words of the DICT's size left unused")
        return items, pos

    _READERS = {
        L.TAG_NONE: _none, L.TAG_INT: _int, L.TAG_INT64: _int64, L.TAG_FLOAT: _float,
        L.TAG_BOOL: _bool, L.TAG_INTS: _ints, L.TAG_FLOATS: _floats, L.TAG_STR: _str,
        L.TAG_TENSOR: _tensor, L.TAG_LIST: _list, L.TAG_DICT: _dict,
    }
