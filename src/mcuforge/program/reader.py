"""deserialize: program file bytes -> Graph, validating every field before it is used.

Each check runs before the value it guards is used as an offset, a size or an index, so a
malformed file ends in ProgramFormatError and never in IndexError, struct.error, numpy errors
or a huge allocation. The C runtime's loader makes the same checks in the same order
(docs/format.md).
"""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np

from mcuforge.ir import (
    DTYPES,
    INT4,
    INT4_WEIGHT_KINDS,
    OP_KIND_BY_ID,
    OP_KINDS,
    OPTIONAL_ATTRS,
    Graph,
    Op,
    QParams,
    Tensor,
    arena_extent,
    arena_overlap_problem,
    dtype_nbytes,
    kind_precisions,
    pitch_problem,
    scratch_size_problem,
)
from mcuforge.kernels.fc_pairs import S8_PAIRS, S8_PAIRS_KINDS, pairs_problem
from mcuforge.kernels.int4 import S4_HALVES, S4_HALVES_KINDS, halves_problem, packing_problem
from mcuforge.program import layout as L
from mcuforge.program.delegate import delegate_problem
from mcuforge.program.layout import Header, ProgramFormatError
from mcuforge.program.op_checks import (
    aten_index_problem,
    compact_params_problem,
    fill_problem,
    kernel_shape_problem,
    minmax_problem,
    outside_problem,
    recurrent_problem,
    scratch_problem,
    shifts_problem,
)
from mcuforge.program.values import ValueDecoder
from mcuforge.targets import ISA_IDS, TARGET_BY_ID


def deserialize(data: bytes | bytearray | memoryview) -> Graph:
    """The Graph stored in a program file; ProgramFormatError if the file is not valid.

    Op ``reason`` and ``debug`` are not in the program (they belong to the debug record) and come
    back empty; float attributes and qparams scales come back rounded to float32.
    """
    buf = bytes(data)
    header = _read_header(buf)
    strings = _Strings(buf, header)
    tensors = [_read_tensor(buf, header, strings, i) for i in range(header.tensor_count)]
    _check_tensor_table(tensors, header)
    index = list(struct.unpack_from(f"<{header.index_count}i", buf, header.index_offset))
    words = list(struct.unpack_from(f"<{header.attr_word_count}I", buf, header.attrs_offset))
    decoder = ValueDecoder(words, header.attrs_offset, strings.get)
    reader = _OpReader(header, index, tensors, decoder)
    ops = [reader.read(buf, i) for i in range(header.op_count)]
    _check_delegates(ops, {t.name: t for t in tensors})
    _check_arena_use(ops, {t.name: t for t in tensors}, TARGET_BY_ID[header.target_id].name)
    graph_inputs = reader.graph_io("input", header.inputs_start, header.input_count)
    graph_outputs = reader.graph_io("output", header.outputs_start, header.output_count)
    _check_int4_uses(ops, {t.name: t for t in tensors}, graph_inputs + graph_outputs)
    problem = pitch_problem({t.name: t for t in tensors}, ops, graph_inputs + graph_outputs)
    if problem:
        raise ProgramFormatError(problem)
    regions = _read_regions(buf, header, strings)
    _check_region_use(regions, tensors, ops)
    constants_at = _read_constants_copy(buf, header, regions, tensors, ops)
    return Graph(
        tensors={t.name: t for t in tensors},
        ops=ops,
        inputs=graph_inputs,
        outputs=graph_outputs,
        target=TARGET_BY_ID[header.target_id].name,
        arena_bytes=header.arena_bytes,
        regions=regions,
        constants_at=constants_at,
    )


def _read_constants_copy(buf: bytes, h: Header, regions: tuple[tuple[str, int, int], ...], tensors: list[Tensor],
                         ops: list[Op]) -> int:
    """Header bytes 116..123 (3.3): the arena offset the constants are copied to (-1: read in place)."""
    flags, at = L.CONSTANTS_FIELDS.unpack_from(buf, L.CONSTANTS_FIELDS_OFFSET)
    if flags == 0 and at == 0:
        return -1
    if h.version_major == L.CONSTANTS_RAM_VERSION[0] and h.version_minor < L.CONSTANTS_RAM_VERSION[1]:
        raise ProgramFormatError(f"constants in RAM in a {h.version_major}.{h.version_minor} file (bytes 116..123 "
                                 "are reserved before 3.3)")
    if flags != L.CONSTANTS_IN_RAM:
        raise ProgramFormatError(f"constants flags {flags:#x} (byte 116): 0 or 1")
    end = at + h.constants_size
    if at % L.CONSTANT_ALIGN or end > h.arena_bytes:
        raise ProgramFormatError(f"the constants' copy [{at}, {end}) is not a 16-aligned range of the arena "
                                 f"({h.arena_bytes} bytes)")
    if regions and h.constants_size and not any(s <= at and end <= s + n for _r, s, n in regions):
        raise ProgramFormatError(f"the constants' copy [{at}, {end}) crosses a region boundary")
    ranges = [(f"tensor {t.name!r}", t.offset, arena_extent(t)) for t in tensors if not t.is_constant and t.nbytes]
    ranges += [(f"op {i}'s scratch", op.scratch_offset, op.scratch_bytes) for i, op in enumerate(ops)
               if op.scratch_bytes]
    for what, offset, nbytes in ranges:
        if offset < end and at < offset + nbytes:
            raise ProgramFormatError(f"{what} [{offset}, {offset + nbytes}) overlaps the constants' copy "
                                     f"[{at}, {end})")
    return at


def _read_regions(buf: bytes, h: Header, strings: _Strings) -> tuple[tuple[str, int, int], ...]:
    """The region table (3.2): regions end to end from 0 in 16-byte multiples, adding up to the arena."""
    offset, count = L.REGION_FIELDS.unpack_from(buf, L.REGION_FIELDS_OFFSET)
    if count == 0 and offset == 0:
        return ()
    if h.version_minor < L.REGIONS_VERSION[1] and h.version_major == L.REGIONS_VERSION[0]:
        raise ProgramFormatError(f"region table in a {h.version_major}.{h.version_minor} file (bytes 108..115 "
                                 "are reserved before 3.2)")
    if not 2 <= count <= L.MAX_REGIONS:
        raise ProgramFormatError(f"region count {count} (byte 112): 2..{L.MAX_REGIONS}")
    end = offset + count * L.REGION.size
    if offset % L.SECTION_ALIGN or offset < h.header_size or end > h.file_size:
        raise ProgramFormatError(f"region table [{offset}, {end}) is not a 4-aligned range of the body")
    sections = [(h.tensors_offset, h.tensor_count * h.tensor_record_size),
                (h.ops_offset, h.op_count * h.op_record_size),
                (h.index_offset, 4 * h.index_count), (h.attrs_offset, 4 * h.attr_word_count),
                (h.strings_offset, h.string_bytes), (h.constants_offset, h.constants_size)]
    if any(size and o < end and offset < o + size for o, size in sections):
        raise ProgramFormatError(f"region table [{offset}, {end}) overlaps another section")
    regions, start = [], 0
    for i in range(count):
        name_off, name_len, first, nbytes = L.REGION.unpack_from(buf, offset + i * L.REGION.size)
        name = strings.get(name_off, name_len, f"region {i}")
        if first != start or nbytes == 0 or nbytes % L.CONSTANT_ALIGN:
            raise ProgramFormatError(f"region {i} ({name!r}) [{first}, {first + nbytes}): regions lie end to end "
                                     "from 0, each a nonzero multiple of 16 bytes")
        regions.append((name, first, nbytes))
        start += nbytes
    if start != h.arena_bytes:
        raise ProgramFormatError(f"the regions add up to {start} bytes; the arena (byte 24) is {h.arena_bytes}")
    return tuple(regions)


def _check_region_use(regions: tuple[tuple[str, int, int], ...], tensors: list[Tensor], ops: list[Op]) -> None:
    """Every activation and scratch buffer lies inside one region: a runtime maps it to that region's buffer."""
    if not regions:
        return
    ranges = [(f"tensor {t.name!r}", t.offset, arena_extent(t)) for t in tensors if not t.is_constant and t.nbytes]
    ranges += [(f"op {i}'s scratch", op.scratch_offset, op.scratch_bytes) for i, op in enumerate(ops)
               if op.scratch_bytes]
    for what, offset, nbytes in ranges:
        if not any(first <= offset and offset + nbytes <= first + size for _n, first, size in regions):
            raise ProgramFormatError(f"{what} [{offset}, {offset + nbytes}) crosses a region boundary")


def _check_delegates(ops: list[Op], tensors: dict[str, Tensor]) -> None:
    for i, op in enumerate(ops):
        problem = delegate_problem(op, tensors) if op.kind == "delegate" else None
        if problem is None and op.kind != "delegate" and op.backend == "npu":
            problem = "backend 'npu' on an op that is not a delegate"
        if problem:
            raise ProgramFormatError(f"op {i} ({op.kind}): {problem}")


def _check_arena_use(ops: list[Op], tensors: dict[str, Tensor], target: str) -> None:
    """Each op's scratch fits its kernel and its outputs do not overlap what it reads."""
    for i, op in enumerate(ops):
        problem = arena_overlap_problem(op, tensors) or scratch_size_problem(op, tensors, target)
        if problem:
            raise ProgramFormatError(f"op {i} ({op.kind}): {problem}")


def _check_int4_uses(ops: list[Op], tensors: dict[str, Tensor], graph_io: list[str]) -> None:
    """int4 tensors are the packed weights of the s4 kinds (their input 1) and nothing else."""
    for i, op in enumerate(ops):
        for pos, name in enumerate(op.inputs):
            if name and tensors[name].dtype == INT4 and not (pos == 1 and op.kind in INT4_WEIGHT_KINDS):
                raise ProgramFormatError(f"op {i} ({op.kind}): input {pos} {name!r} is int4, which only the "
                                         f"weights (input 1) of {', '.join(INT4_WEIGHT_KINDS)} may be")
            if name and tensors[name].layout == S4_HALVES and not (pos == 1 and op.kind in S4_HALVES_KINDS):
                raise ProgramFormatError(f"op {i} ({op.kind}): input {pos} {name!r} is {S4_HALVES}, which only the "
                                         f"weights (input 1) of {', '.join(S4_HALVES_KINDS)} may be")
            if name and tensors[name].layout == S8_PAIRS and not (pos == 1 and op.kind in S8_PAIRS_KINDS):
                raise ProgramFormatError(f"op {i} ({op.kind}): input {pos} {name!r} is {S8_PAIRS}, which only the "
                                         f"weights (input 1) of {', '.join(S8_PAIRS_KINDS)} may be")
    for name in graph_io:
        if tensors[name].dtype == INT4:
            raise ProgramFormatError(f"graph input/output {name!r} is int4 (packed weights)")
        if tensors[name].layout == S8_PAIRS:
            raise ProgramFormatError(f"graph input/output {name!r} is {S8_PAIRS} (weights)")


def read_header(data: bytes | bytearray | memoryview) -> Header:
    """The validated header (sizes, CRC, target, section bounds) without reading the sections."""
    return _read_header(bytes(data))


def _read_header(buf: bytes) -> Header:
    _check_magic_and_version(buf)
    if len(buf) < L.HEADER.size:
        raise ProgramFormatError(f"truncated: {len(buf)} bytes, the header alone is {L.HEADER.size}")
    h = Header._make(L.HEADER.unpack_from(buf))
    _check_header_size(buf, h)
    crc = L.header_crc(buf[:h.header_size])
    if crc != h.header_crc32:
        raise ProgramFormatError(
            f"header CRC mismatch: byte {L.HEADER_CRC_OFFSET} says 0x{h.header_crc32:08x}, bytes "
            f"0..{h.header_size} give 0x{crc:08x} (header corrupted)"
        )
    _check_file_size(buf, h)
    crc = zlib.crc32(memoryview(buf)[h.header_size:h.file_size])
    if crc != h.crc32:
        raise ProgramFormatError(
            f"payload CRC mismatch: byte 16 says 0x{h.crc32:08x}, bytes {h.header_size}..{h.file_size} "
            f"give 0x{crc:08x} (file corrupted)"
        )
    _check_target(h)
    _check_sections(h)
    return h


def _check_magic_and_version(buf: bytes) -> None:
    # A short prefix of the magic is a truncated program, anything else is not a program.
    if buf[:4] != L.MAGIC[:len(buf[:4])]:
        raise ProgramFormatError(f"not an mcuforge program: magic {buf[:4]!r}, expected {L.MAGIC!r}")
    if len(buf) < 8:
        raise ProgramFormatError(f"truncated: {len(buf)} bytes, the header alone is {L.HEADER.size}")
    major, minor = struct.unpack_from("<HH", buf, 4)
    # Minor versions only add what older readers may ignore; a new major changes the layout.
    if major not in L.READABLE_MAJORS:
        raise ProgramFormatError(
            f"program format {major}.{minor}, this reader supports "
            f"{' and '.join(f'{m}.x' for m in L.READABLE_MAJORS)}"
        )


def _check_header_size(buf: bytes, h: Header) -> None:
    if h.header_size < L.HEADER.size or h.header_size % L.SECTION_ALIGN:
        raise ProgramFormatError(
            f"header size {h.header_size} (byte 8): must be a multiple of 4 and at least {L.HEADER.size}"
        )
    if h.header_size > len(buf):
        raise ProgramFormatError(f"truncated: {len(buf)} bytes, the header alone is {h.header_size}")


def _check_file_size(buf: bytes, h: Header) -> None:
    if h.file_size < h.header_size:
        raise ProgramFormatError(f"file size {h.file_size} (byte 12) is smaller than the header size")
    if len(buf) < h.file_size:
        raise ProgramFormatError(f"truncated: {len(buf)} bytes, the header says the file is {h.file_size}")
    if len(buf) > h.file_size:
        raise ProgramFormatError(f"{len(buf) - h.file_size} bytes after the {h.file_size}-byte file")


def _check_target(h: Header) -> None:
    target = TARGET_BY_ID.get(h.target_id)
    if target is None:
        known = ", ".join(f"{t.id}={t.name}" for t in TARGET_BY_ID.values())
        raise ProgramFormatError(f"unknown target id {h.target_id} (byte 20); known: {known}")
    if h.isa_id != ISA_IDS[target.isa]:
        raise ProgramFormatError(
            f"isa id {h.isa_id} (byte 22) does not match target {target.name} "
            f"({target.isa} = {ISA_IDS[target.isa]})"
        )


def _check_sections(h: Header) -> None:
    if h.tensor_record_size < L.TENSOR.size or h.tensor_record_size % 4:
        raise ProgramFormatError(f"tensor record size {h.tensor_record_size} (byte 40) is not valid")
    if h.op_record_size < L.OP.size or h.op_record_size % 4:
        raise ProgramFormatError(f"op record size {h.op_record_size} (byte 52) is not valid")
    sections = [
        ("tensors", h.tensors_offset, h.tensor_count * h.tensor_record_size, L.SECTION_ALIGN),
        ("ops", h.ops_offset, h.op_count * h.op_record_size, L.SECTION_ALIGN),
        ("index pool", h.index_offset, 4 * h.index_count, L.SECTION_ALIGN),
        ("attrs pool", h.attrs_offset, 4 * h.attr_word_count, L.SECTION_ALIGN),
        ("strings", h.strings_offset, h.string_bytes, L.SECTION_ALIGN),
        ("constants", h.constants_offset, h.constants_size, L.CONSTANT_ALIGN),
    ]
    for name, offset, size, alignment in sections:
        if offset % alignment:
            raise ProgramFormatError(f"{name} section offset {offset} is not {alignment}-byte aligned")
        if offset < h.header_size or offset + size > h.file_size:
            raise ProgramFormatError(
                f"{name} section [{offset}, {offset + size}) is outside the body "
                f"[{h.header_size}, {h.file_size})"
            )
    placed = sorted((offset, offset + size, name) for name, offset, size, _ in sections if size)
    for (_, end, name), (start, _, next_name) in zip(placed, placed[1:], strict=False):
        if start < end:
            raise ProgramFormatError(f"{name} section overlaps the {next_name} section at byte {start}")


class _Strings:
    """The string table: UTF-8 strings addressed by (offset, length), each followed by a NUL."""

    def __init__(self, buf: bytes, h: Header) -> None:
        self.blob = buf[h.strings_offset:h.strings_offset + h.string_bytes]
        self.offset = h.strings_offset

    def get(self, offset: int, length: int, where: str) -> str:
        # offset + length must index the NUL terminator, so it is strictly inside the table.
        if offset >= len(self.blob) or length >= len(self.blob) - offset:
            raise ProgramFormatError(
                f"{where}: string [{offset}, {offset + length}) + NUL is outside the "
                f"{len(self.blob)}-byte string table (file byte {self.offset})"
            )
        if self.blob[offset + length] != 0:
            raise ProgramFormatError(f"{where}: string at table offset {offset} is not NUL-terminated")
        try:
            return self.blob[offset:offset + length].decode("utf-8")
        except UnicodeDecodeError as e:
            message = f"{where}: string at table offset {offset} is not UTF-8 ({e.reason})"
            raise ProgramFormatError(message) from None


def _read_tensor(buf: bytes, h: Header, strings: _Strings, i: int) -> Tensor:
    pos = h.tensors_offset + i * h.tensor_record_size
    record = L.TENSOR.unpack_from(buf, pos)
    name_offset, name_length, dtype_code, rank, layout_code, flags = record[:6]
    dims, (scale, zero_point, offset, nbytes) = list(record[6:12]), record[12:]
    name = strings.get(name_offset, name_length, f"tensor {i} name (byte {pos})")
    where = f"tensor {i} {name!r} (byte {pos})"
    if not name:
        raise ProgramFormatError(f"{where}: empty name")
    dtype = L.DTYPE_BY_CODE.get(dtype_code)
    if dtype is None:
        raise ProgramFormatError(f"{where}: unknown dtype code {dtype_code}")
    layout = L.LAYOUT_BY_CODE.get(layout_code)
    if layout is None:
        raise ProgramFormatError(f"{where}: unknown layout code {layout_code}")
    if flags & ~L.TENSOR_FLAGS_KNOWN:
        raise ProgramFormatError(f"{where}: unknown flag bits 0x{flags:02x}")
    pitch = _pitch(buf, h, pos, flags, where)
    shape = _shape(dims, rank, where)
    if layout == S4_HALVES and (dtype != INT4 or halves_problem(shape)):
        raise ProgramFormatError(f"{where}: layout {S4_HALVES} on {dtype} {shape}: "
                                 f"{halves_problem(shape) or 'only int4 weights take it'}")
    if layout == S8_PAIRS and (dtype != "int8" or not flags & L.TENSOR_FLAG_CONSTANT or pairs_problem(shape)):
        raise ProgramFormatError(f"{where}: layout {S8_PAIRS} on {dtype} {shape}: "
                                 f"{pairs_problem(shape) or 'only constant int8 weights take it'}")
    needed = dtype_nbytes(dtype, math.prod(shape))
    if needed != nbytes:
        raise ProgramFormatError(f"{where}: nbytes {nbytes}, but shape {shape} of {dtype} is {needed} bytes")
    qparams = _qparams(flags, scale, zero_point, where)
    if dtype == INT4 and not flags & L.TENSOR_FLAG_CONSTANT:
        raise ProgramFormatError(f"{where}: an int4 activation (int4 is for packed constant weights only)")
    if flags & L.TENSOR_FLAG_CONSTANT:
        if pitch:
            raise ProgramFormatError(f"{where}: a pitched constant (only activations may be pitched)")
        data = _constant_data(buf, h, offset, shape, dtype, where)
        return Tensor(name, shape, dtype, qparams, data=data, layout=layout)
    t = Tensor(name, shape, dtype, qparams, layout=layout, offset=offset)
    if pitch:
        if dtype != "int8" or len(shape) != 4 or layout != "nhwc" or pitch < shape[3]:
            raise ProgramFormatError(f"{where}: pitch {pitch} on a {dtype} {layout} tensor of shape {shape}: only a "
                                     "4-D int8 NHWC activation may be pitched, by at least its channel count")
        t.pitch = pitch
    end = offset + arena_extent(t)
    if end > h.arena_bytes:
        raise ProgramFormatError(f"{where}: arena range [{offset}, {end}) is outside the {h.arena_bytes}-byte arena")
    if offset % DTYPES[dtype].itemsize:
        raise ProgramFormatError(f"{where}: arena offset {offset} is not a multiple of its item size "
                                 f"{DTYPES[dtype].itemsize}")
    return t


def _pitch(buf: bytes, h: Header, pos: int, flags: int, where: str) -> int:
    """The record's pitch (3.4): nonzero with TENSOR_FLAG_PITCHED, in a record that has the field; else 0."""
    if h.tensor_record_size < L.TENSOR_PITCHED_SIZE:
        if flags & L.TENSOR_FLAG_PITCHED:
            raise ProgramFormatError(f"{where}: pitched flag in a {h.tensor_record_size}-byte tensor record "
                                     f"(the pitch field needs {L.TENSOR_PITCHED_SIZE})")
        return 0
    (pitch,) = L.TENSOR_PITCH.unpack_from(buf, pos + L.TENSOR.size)
    if flags & L.TENSOR_FLAG_PITCHED:
        if h.version_major == L.PITCH_VERSION[0] and h.version_minor < L.PITCH_VERSION[1]:
            raise ProgramFormatError(f"{where}: pitched tensor in a {h.version_major}.{h.version_minor} file "
                                     f"(pitches are {L.PITCH_VERSION[0]}.{L.PITCH_VERSION[1]})")
        if pitch == 0:
            raise ProgramFormatError(f"{where}: pitched flag with pitch 0")
        return pitch
    if pitch:
        raise ProgramFormatError(f"{where}: pitch {pitch} without the pitched flag (0x04)")
    return 0


def _shape(dims: list[int], rank: int, where: str) -> tuple[int, ...]:
    if rank > L.MAX_RANK:
        raise ProgramFormatError(f"{where}: rank {rank} is above the maximum {L.MAX_RANK}")
    if any(dims[rank:]):
        raise ProgramFormatError(f"{where}: shape words beyond rank {rank} are not zero: {dims}")
    shape = tuple(dims[:rank])
    problem = L.shape_problem(shape)
    if problem:
        raise ProgramFormatError(f"{where}: {problem}")
    return shape


def _qparams(flags: int, scale: float, zero_point: int, where: str) -> QParams | None:
    if not flags & L.TENSOR_FLAG_QPARAMS:
        if scale != 0 or zero_point != 0:
            raise ProgramFormatError(f"{where}: scale/zero point set on a tensor without qparams")
        return None
    if not (math.isfinite(scale) and scale > 0):
        raise ProgramFormatError(f"{where}: scale {scale} is not a positive finite number")
    return QParams(scale, zero_point)


def _constant_data(
    buf: bytes, h: Header, offset: int, shape: tuple[int, ...], dtype: str, where: str
) -> np.ndarray:
    nbytes = dtype_nbytes(dtype, math.prod(shape))
    if offset % L.CONSTANT_ALIGN:
        raise ProgramFormatError(f"{where}: constant offset {offset} is not {L.CONSTANT_ALIGN}-byte aligned")
    if offset + nbytes > h.constants_size:
        raise ProgramFormatError(
            f"{where}: constant [{offset}, {offset + nbytes}) is outside the "
            f"{h.constants_size}-byte constants section (file byte {h.constants_offset})"
        )
    if dtype == INT4:  # the packed bytes as they are; the pad nibble of an odd count must be 0
        packed = np.frombuffer(buf, np.int8, count=nbytes, offset=h.constants_offset + offset).copy()
        problem = packing_problem(packed, math.prod(shape))
        if problem:
            raise ProgramFormatError(f"{where}: {problem}")
        return packed
    if nbytes == 0:
        return np.zeros(shape, DTYPES[dtype])
    raw = np.frombuffer(
        buf, DTYPES[dtype].newbyteorder("<"), count=math.prod(shape), offset=h.constants_offset + offset
    )
    # A writable native-order copy: the host side may keep the Graph after the file is gone.
    return raw.astype(DTYPES[dtype]).reshape(shape)


def _check_tensor_table(tensors: list[Tensor], h: Header) -> None:
    seen: set[str] = set()
    for i, t in enumerate(tensors):
        if t.name in seen:
            raise ProgramFormatError(f"tensor {i}: name {t.name!r} is used by an earlier tensor")
        seen.add(t.name)
    total = sum(t.nbytes for t in tensors if t.is_constant)
    if total != h.constant_bytes:
        raise ProgramFormatError(f"constant bytes {h.constant_bytes} (byte 28), the tensors hold {total}")


class _OpReader:
    """Reads op records and the graph I/O lists, resolving index-pool entries to tensor names."""

    def __init__(self, h: Header, index: list[int], tensors: list[Tensor], decoder: ValueDecoder) -> None:
        self.h = h
        self.index = index
        self.tensors = tensors
        self.by_name = {t.name: t for t in tensors}
        self.decoder = decoder

    def read(self, buf: bytes, i: int) -> Op:
        pos = self.h.ops_offset + i * self.h.op_record_size
        kind_id, backend_code, precision_code, in_start, in_count, *rest = L.OP.unpack_from(buf, pos)
        out_start, out_count, attrs_start, attr_words, scratch, scratch_offset = rest
        kind = OP_KIND_BY_ID.get(kind_id)
        if kind is None:
            raise ProgramFormatError(f"op {i} (byte {pos}): unknown op kind id {kind_id}")
        where = f"op {i} ({kind}, byte {pos})"
        backend = L.BACKEND_BY_CODE.get(backend_code)
        if backend is None:
            raise ProgramFormatError(f"{where}: unknown backend code {backend_code}")
        precision = ""  # not recorded (format 1.0): mcuforge.ir.op_precision derives it
        if precision_code != L.PRECISION_NOT_RECORDED:
            precision = L.PRECISION_BY_CODE.get(precision_code, "")
            if precision not in kind_precisions(kind):
                raise ProgramFormatError(f"{where}: precision code {precision_code} ({precision or 'unknown'}) is "
                                         f"not one of the kind's {list(kind_precisions(kind))}")
        spec = OP_KINDS[kind]
        problem = L.input_count_problem(in_count, spec["inputs"])
        if problem:
            raise ProgramFormatError(f"{where}: {problem}")
        inputs = [
            self._input_name(idx, pos_, spec["inputs"], where)
            for pos_, idx in enumerate(self._range(in_start, in_count, f"{where} inputs"))
        ]
        out_indices = self._range(out_start, out_count, f"{where} outputs")
        outputs = [self._output_name(idx, where) for idx in out_indices]
        if attrs_start > self.h.attr_word_count or attr_words > self.h.attr_word_count - attrs_start:
            raise ProgramFormatError(
                f"{where}: attrs words [{attrs_start}, {attrs_start + attr_words}) are outside the "
                f"{self.h.attr_word_count}-word attrs pool"
            )
        attrs = self.decoder.decode_attrs(attrs_start, attr_words, spec["attrs"], in_count, where,
                                          OPTIONAL_ATTRS.get(kind, {}))
        self._check_scratch(scratch, scratch_offset, inputs + outputs, where)
        op = Op(kind, inputs, outputs, attrs, backend=backend, scratch_bytes=scratch,
                scratch_offset=scratch_offset if scratch else -1, precision=precision)
        problem = (shifts_problem(op, self.by_name) or compact_params_problem(op, self.by_name)
                   or aten_index_problem(op) or recurrent_problem(op, self.by_name)
                   or minmax_problem(op, self.by_name) or kernel_shape_problem(op, self.by_name)
                   or fill_problem(op) or outside_problem(op))
        if problem:
            raise ProgramFormatError(f"{where}: {problem}")
        return op

    def _check_scratch(self, nbytes: int, offset: int, names: list[str], where: str) -> None:
        if nbytes == 0:
            if offset != 0:
                raise ProgramFormatError(f"{where}: scratch offset {offset} without scratch bytes (must be 0)")
            return
        problem = scratch_problem(offset, nbytes, self.h.arena_bytes,
                                    [(n, self.by_name[n].offset, arena_extent(self.by_name[n])) for n in names
                                     if n and not self.by_name[n].is_constant])
        if problem:
            raise ProgramFormatError(f"{where}: {problem}")

    def graph_io(self, role: str, start: int, count: int) -> list[str]:
        names = []
        for idx in self._range(start, count, f"graph {role}s"):
            name = self._tensor_name(idx, f"graph {role}s")
            # The caller writes graph inputs into the arena: they cannot be constants in flash.
            if role == "input" and self.tensors[idx].is_constant:
                raise ProgramFormatError(f"graph input {name!r} is a constant")
            names.append(name)
        return names

    def _range(self, start: int, count: int, where: str) -> list[int]:
        if start > len(self.index) or count > len(self.index) - start:
            raise ProgramFormatError(
                f"{where}: index-pool entries [{start}, {start + count}) are outside the "
                f"{len(self.index)}-entry pool (file byte {self.h.index_offset})"
            )
        return self.index[start:start + count]

    def _tensor_name(self, idx: int, where: str) -> str:
        if not 0 <= idx < len(self.tensors):
            raise ProgramFormatError(f"{where}: tensor index {idx}, the file has {len(self.tensors)} tensors")
        return self.tensors[idx].name

    def _input_name(self, idx: int, pos: int, input_spec: list[str], where: str) -> str:
        if idx == L.ABSENT_INPUT and L.optional_input(input_spec, pos):
            return ""
        return self._tensor_name(idx, f"{where} input {pos}")

    def _output_name(self, idx: int, where: str) -> str:
        name = self._tensor_name(idx, f"{where} output")
        # A kernel writing into a constant would write into flash.
        if self.tensors[idx].is_constant:
            raise ProgramFormatError(f"{where}: output {name!r} is a constant")
        return name
