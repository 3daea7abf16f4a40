"""The program file's byte layout: header and record structs, codes and limits.

Everything here is shared by the writer and the reader so that the two cannot drift apart;
docs/format.md describes the same layout for the C runtime. All integers are little-endian.
"""

from __future__ import annotations

import math
import struct
import zlib
from typing import NamedTuple

MAGIC = b"MCUF"
FORMAT_VERSION = (3, 1)  # (major, minor): a reader accepts its own major and any minor
#: 3.0 is 2.0's layout with the s4 kinds' compact per-channel parameters (int16 bias and multipliers), which a
#: 2.x reader must not read as int32 ones; a 2.x file holds none, so a 3.x reader reads it as it is. 3.1 adds an
#: optional trailing attribute (fully connected's filter_offset, ir.OPTIONAL_ATTRS), stored only where nonzero: a 3.0
#: reader reads every 3.1 file without it and refuses one with it (attribute words left over).
READABLE_MAJORS = (2, 3)
#: 3.2: a program whose arena spans several memory regions (mcuforge.regions) has a region table; only such a
#: program is written as 3.2 (every other stays 3.1, byte for byte). A 3.1 reader ignores the table (header bytes
#: 108..115 were reserved, zero) and runs the program in one arena of ``arena_bytes``, which is as valid.
REGIONS_VERSION = (3, 2)
#: 3.3: a program whose constants are copied to a RAM region at mf_init (a board's ``constants`` region) says
#: where in the arena (header bytes 116..123); only such a program is written as 3.3. A 3.2 reader would read the
#: constants in place, which is as valid (the reserved arena bytes stay unused).
CONSTANTS_RAM_VERSION = (3, 3)
#: 3.4: pitched tensors (concat by placement along the channels, ``Tensor.pitch``): tensor records grow to
#: ``TENSOR_PITCHED`` (a u32 pitch after the 52 bytes) and carry flag ``TENSOR_FLAG_PITCHED``; only a program with
#: one is written as 3.4 (every other as before, byte for byte). Older readers refuse the flag (unknown bit).
PITCH_VERSION = (3, 4)
#: 3.5: int8 fully connected weights in layout S8_PAIRS (code 3, mcuforge.kernels.fc_pairs), what the DSP cores'
#: loops read; only a program with one is written as 3.5. Older readers refuse the code (unknown layout).
PAIRS_VERSION = (3, 5)

CONSTANT_ALIGN = 16  # constants are read in place from flash, with SIMD loads on MVE
SECTION_ALIGN = 4  # every other section holds 32-bit words
MAX_RANK = 6
MAX_VALUE_DEPTH = 8  # nesting limit of LIST/DICT values: bounds the reader's recursion
U32_MAX = 0xFFFF_FFFF
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class ProgramFormatError(ValueError):
    """A program file is malformed, truncated, corrupted or of an unsupported version."""


class Header(NamedTuple):
    """The fixed header at file offset 0 (reserved bytes left out)."""

    magic: bytes
    version_major: int
    version_minor: int
    header_size: int
    file_size: int
    crc32: int  # zlib.crc32 of bytes [header_size, file_size)
    target_id: int
    isa_id: int
    arena_bytes: int
    constant_bytes: int  # sum of the constant tensors' nbytes (without alignment padding)
    tensors_offset: int
    tensor_count: int
    tensor_record_size: int
    ops_offset: int
    op_count: int
    op_record_size: int
    index_offset: int
    index_count: int  # int32 words
    attrs_offset: int
    attr_word_count: int  # int32 words
    strings_offset: int
    string_bytes: int
    constants_offset: int
    constants_size: int  # bytes, including alignment padding
    inputs_start: int  # graph inputs: a range of the index pool
    input_count: int
    outputs_start: int  # graph outputs: a range of the index pool
    output_count: int
    header_crc32: int  # zlib.crc32 of bytes [0, header_size) with this field read as zero


# 108 bytes of fields then 20 reserved bytes: 128 in all, a multiple of 16.
HEADER = struct.Struct("<4sHHIIIHHII18II20x")
assert HEADER.size == 128 and len(Header._fields) == 29
HEADER_CRC_OFFSET = 104

# Region table (3.2, header bytes 108..115, zero in a single-arena file): file offset and count of the region
# records, each: name (string offset, length), start in the arena's offset space, bytes (16-byte multiples; the
# regions lie end to end from 0 and add up to arena_bytes). Every arena range lies in one region.
REGION_FIELDS = struct.Struct("<II")
REGION_FIELDS_OFFSET = 108
REGION = struct.Struct("<IIII")
# Constants in RAM (3.3, header bytes 116..123, zero otherwise): flags (bit 0: copy the constants section to the
# arena at mf_init and read the constants there; no other bit) and the arena offset of the copy (a multiple of
# 16; [offset, offset + constants_size) inside the arena, inside one region, sharing no byte with any buffer).
CONSTANTS_FIELDS = struct.Struct("<II")
CONSTANTS_FIELDS_OFFSET = 116
CONSTANTS_IN_RAM = 1
MAX_REGIONS = 8

# Tensor record: name (offset, length), dtype, rank, layout, flags, shape[6], scale, zero_point,
# offset (arena offset of an activation, or offset of a constant inside the constants section),
# nbytes.
TENSOR = struct.Struct("<IIBBBB6IfiII")
assert TENSOR.size == 52
# 3.4: the record of a program with a pitched tensor (every record of that program): the 52 bytes, then the pitch
# (elements from one pixel's channels to the next's; 0 unless TENSOR_FLAG_PITCHED).
TENSOR_PITCH = struct.Struct("<I")
TENSOR_PITCHED_SIZE = TENSOR.size + TENSOR_PITCH.size

# Op record: kind id, backend, precision, inputs (start, count) and outputs (start, count) in the index
# pool, attribute values (start, word count) in the attrs pool, scratch bytes and the scratch buffer's
# arena offset (0 without scratch).
OP = struct.Struct("<HBB8I")
assert OP.size == 36

TENSOR_FLAG_CONSTANT = 1
TENSOR_FLAG_QPARAMS = 2
TENSOR_FLAG_PITCHED = 4  # 3.4: the record's pitch field is the tensor's pitch (mcuforge.ir.Tensor.pitch)
TENSOR_FLAGS_KNOWN = TENSOR_FLAG_CONSTANT | TENSOR_FLAG_QPARAMS | TENSOR_FLAG_PITCHED

# Stable codes: never renumber, only append.
DTYPE_CODES = {"int8": 0, "int16": 1, "int32": 2, "float32": 3, "int64": 4, "bool": 5, "int4": 6}
# s4_halves: int4 weights of conv2d_s4 / fully_connected_s4 in Helium's order (mcuforge.kernels.int4.S4_HALVES);
# a reader without it refuses the program (an unknown layout code), as it must. s8_pairs: int8 weights of the fully
# connected kinds in the DSP cores' order (mcuforge.kernels.fc_pairs.S8_PAIRS), the same.
LAYOUT_CODES = {"plain": 0, "nhwc": 1, "s4_halves": 2, "s8_pairs": 3}
BACKEND_CODES = {"int8": 0, "fp32": 1, "npu": 2}  # npu: a delegate op
DTYPE_BY_CODE = {code: name for name, code in DTYPE_CODES.items()}
LAYOUT_BY_CODE = {code: name for name, code in LAYOUT_CODES.items()}
BACKEND_BY_CODE = {code: name for name, code in BACKEND_CODES.items()}
# Op precision (mcuforge.ir.PRECISIONS), op record byte 3 since 1.1; 0: not recorded (a 1.0 file).
PRECISION_CODES = {"fp32": 1, "a8": 2, "a8w8": 3, "a8w4": 4, "a16": 5, "a16w8": 6}
PRECISION_BY_CODE = {code: name for name, code in PRECISION_CODES.items()}
PRECISION_NOT_RECORDED = 0

ABSENT_INPUT = -1  # index-pool entry of an omitted optional op input (an "" input name in the IR)

# Typed attribute values: a tag word (tag | count << 8), then the payload words.
TAG_NONE = 0  # count 0, no payload
TAG_INT = 1  # count 1, payload: int32
TAG_INT64 = 2  # count 1, payload: low word, high word (only for ints outside int32)
TAG_FLOAT = 3  # count 1, payload: float32 bits
TAG_BOOL = 4  # count 1, payload: 0 or 1
TAG_INTS = 5  # count n, payload: n int32
TAG_FLOATS = 6  # count n, payload: n float32
TAG_STR = 7  # count 1, payload: string table offset, byte length
TAG_TENSOR = 8  # count 1, payload: index into the op's input list
TAG_LIST = 9  # count n, payload: size in words of the rest, then n values
TAG_DICT = 10  # count n, payload: size in words of the rest, then n (STR key, value) pairs
TAG_NAMES = {
    TAG_NONE: "NONE", TAG_INT: "INT", TAG_INT64: "INT64", TAG_FLOAT: "FLOAT", TAG_BOOL: "BOOL",
    TAG_INTS: "INTS", TAG_FLOATS: "FLOATS", TAG_STR: "STR", TAG_TENSOR: "TENSOR", TAG_LIST: "LIST",
    TAG_DICT: "DICT",
}
MAX_COUNT = (1 << 24) - 1

# The tag an attribute of each declared type must have ("any" takes every tag).
TAG_OF_ATTR_TYPE = {"int": TAG_INT, "float": TAG_FLOAT, "ints": TAG_INTS, "str": TAG_STR}


def tag_word(tag: int, count: int) -> int:
    """The unsigned 32-bit tag word of a value."""
    return tag | (count << 8)


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def optional_input(input_spec: list[str], pos: int) -> bool:
    """Whether op input ``pos`` may be absent: its OP_KINDS name ends with "?"."""
    return pos < len(input_spec) and input_spec[pos].endswith("?")


def input_count_problem(count: int, input_spec: list[str]) -> str | None:
    """Why ``count`` inputs do not fit an op's declared inputs (``["*"]``: any number), or None."""
    if input_spec == ["*"]:
        return None
    required = sum(not name.endswith("?") for name in input_spec)
    if required <= count <= len(input_spec):
        return None
    return f"{count} inputs, expected {required}..{len(input_spec)} ({', '.join(input_spec)})"


def header_crc(header_bytes: bytes) -> int:
    """CRC32 of the header with its own CRC field zeroed (the payload CRC alone would leave
    arena size, target and section offsets unprotected)."""
    return zlib.crc32(
        header_bytes[:HEADER_CRC_OFFSET] + bytes(4) + header_bytes[HEADER_CRC_OFFSET + 4:]
    )


def shape_problem(shape: tuple[int, ...]) -> str | None:
    """Why ``shape`` cannot be stored, or None: the product of its non-zero dimensions must fit in
    32 bits, so that no size computation overflows even for zero-element tensors."""
    if len(shape) > MAX_RANK:
        return f"rank {len(shape)} is above the maximum {MAX_RANK}"
    if math.prod(d or 1 for d in shape) > U32_MAX:
        return f"shape {shape} has more than 2**32 - 1 elements (counting zero dimensions as 1)"
    return None

