"""serialize: Graph -> program file bytes.

The writer checks everything the reader will check, so a graph it accepts always loads; its
errors (ValueError) name the tensor, op or attribute at fault.
"""

from __future__ import annotations

import math
import struct
import zlib
from typing import Any

import numpy as np

from mcuforge.ir import (
    DTYPES,
    INT4,
    OP_KINDS,
    OPTIONAL_ATTRS,
    Graph,
    Op,
    Tensor,
    arena_extent,
    arena_overlap_problem,
    kind_precisions,
    op_precision,
    pitch_problem,
    scratch_size_problem,
)
from mcuforge.kernels.fc_pairs import S8_PAIRS, S8_PAIRS_KINDS, pairs_problem
from mcuforge.kernels.int4 import S4_HALVES, halves_problem, packing_problem
from mcuforge.program import layout as L
from mcuforge.program.delegate import delegate_problem
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
from mcuforge.program.values import StringTable, ValueEncoder, float_to_word, word_to_float
from mcuforge.targets import ISA_IDS, get_target


def serialize(graph: Graph) -> bytes:
    """The program file of ``graph`` (planned: every activation has its arena offset)."""
    target = get_target(graph.target)
    arena_bytes = _u32(graph.arena_bytes, "graph arena_bytes")
    names = list(graph.tensors)
    index_of = {name: i for i, name in enumerate(names)}
    strings = StringTable()
    constants = bytearray()
    problem = pitch_problem(graph.tensors, graph.ops, graph.inputs + graph.outputs)
    if problem:
        raise ValueError(problem)
    pitched = any(graph.tensors[n].pitch for n in names)  # 3.4: every record grows by the pitch field
    pairs = any(graph.tensors[n].layout == S8_PAIRS for n in names)  # 3.5: a layout code older readers refuse
    tensor_records = [
        _tensor_record(name, graph.tensors[name], arena_bytes, strings, constants, pitched) for name in names
    ]
    index_pool: list[int] = []
    attr_pool: list[int] = []
    op_records = [
        _op_record(i, op, index_of, graph, strings, index_pool, attr_pool) for i, op in enumerate(graph.ops)
    ]
    _check_pairs_uses(graph)
    inputs_start = len(index_pool)
    index_pool += _graph_io(graph.inputs, "input", index_of, graph)
    outputs_start = len(index_pool)
    index_pool += _graph_io(graph.outputs, "output", index_of, graph)

    sections = _Sections()
    tensors_offset = sections.add(b"".join(tensor_records), L.SECTION_ALIGN)
    ops_offset = sections.add(b"".join(op_records), L.SECTION_ALIGN)
    index_offset = sections.add(struct.pack(f"<{len(index_pool)}i", *index_pool), L.SECTION_ALIGN)
    attrs_offset = sections.add(struct.pack(f"<{len(attr_pool)}I", *attr_pool), L.SECTION_ALIGN)
    region_records = _region_records(graph, strings)
    string_blob = strings.tobytes()
    strings_offset = sections.add(string_blob, L.SECTION_ALIGN)
    regions_offset = sections.add(region_records, L.SECTION_ALIGN) if graph.regions else 0
    constants_offset = sections.add(bytes(constants), L.CONSTANT_ALIGN)
    body = sections.body()
    file_size = _u32(L.HEADER.size + len(body), "program file size")

    header = L.Header(
        magic=L.MAGIC, version_major=L.FORMAT_VERSION[0],
        version_minor=(L.PAIRS_VERSION if pairs else L.PITCH_VERSION if pitched else
                       L.CONSTANTS_RAM_VERSION if graph.constants_at >= 0 else
                       L.REGIONS_VERSION if graph.regions else L.FORMAT_VERSION)[1],
        header_size=L.HEADER.size, file_size=file_size, crc32=zlib.crc32(body),
        target_id=target.id, isa_id=ISA_IDS[target.isa], arena_bytes=arena_bytes,
        constant_bytes=_u32(graph.constant_bytes, "constant bytes"),
        tensors_offset=tensors_offset, tensor_count=len(tensor_records),
        tensor_record_size=L.TENSOR_PITCHED_SIZE if pitched else L.TENSOR.size,
        ops_offset=ops_offset, op_count=len(op_records), op_record_size=L.OP.size,
        index_offset=index_offset, index_count=len(index_pool),
        attrs_offset=attrs_offset, attr_word_count=len(attr_pool),
        strings_offset=strings_offset, string_bytes=len(string_blob),
        constants_offset=constants_offset, constants_size=len(constants),
        inputs_start=inputs_start, input_count=len(graph.inputs),
        outputs_start=outputs_start, output_count=len(graph.outputs), header_crc32=0,
    )
    head = bytearray(L.HEADER.pack(*header))
    constants_copy = _constants_copy(graph, len(constants))
    L.REGION_FIELDS.pack_into(head, L.REGION_FIELDS_OFFSET, regions_offset, len(graph.regions))
    L.CONSTANTS_FIELDS.pack_into(head, L.CONSTANTS_FIELDS_OFFSET, *constants_copy)
    header = header._replace(header_crc32=L.header_crc(bytes(head)))
    head[:L.HEADER.size] = L.HEADER.pack(*header)
    L.REGION_FIELDS.pack_into(head, L.REGION_FIELDS_OFFSET, regions_offset, len(graph.regions))
    L.CONSTANTS_FIELDS.pack_into(head, L.CONSTANTS_FIELDS_OFFSET, *constants_copy)
    return bytes(head) + body


def _constants_copy(graph: Graph, constants_size: int) -> tuple[int, int]:
    """Header bytes 116..123 (3.3): (flags, arena offset) of the constants' copy in RAM; (0, 0) without one."""
    at = graph.constants_at
    if at < 0:
        return 0, 0
    if at % L.CONSTANT_ALIGN or at + constants_size > graph.arena_bytes:
        raise ValueError(f"the constants' copy at arena offset {at} ({constants_size} bytes) is not 16-aligned "
                         f"inside the arena of {graph.arena_bytes} bytes")
    return L.CONSTANTS_IN_RAM, at


def _region_records(graph: Graph, strings: StringTable) -> bytes:
    """The region table of a program that spans several regions (empty for one arena)."""
    if not graph.regions:
        return b""
    if not 2 <= len(graph.regions) <= L.MAX_REGIONS:
        raise ValueError(f"{len(graph.regions)} regions: a region table holds 2..{L.MAX_REGIONS}")
    records, start = [], 0
    for name, first, nbytes in graph.regions:
        if first != start or nbytes % L.CONSTANT_ALIGN or nbytes <= 0:
            raise ValueError(f"region {name!r} ({first}, {nbytes}): regions lie end to end from 0 in "
                             "16-byte multiples")
        records.append(L.REGION.pack(*strings.add(name), first, nbytes))
        start += nbytes
    if start != graph.arena_bytes:
        raise ValueError(f"the regions add up to {start} bytes, the arena is {graph.arena_bytes}")
    return b"".join(records)


class _Sections:
    """Lays sections out one after another, after the header, each at its alignment."""

    def __init__(self) -> None:
        self._body = bytearray()

    def add(self, payload: bytes, alignment: int) -> int:
        """File offset of ``payload`` once appended (zero padding before it if needed)."""
        pad = L.align_up(L.HEADER.size + len(self._body), alignment) - L.HEADER.size - len(self._body)
        self._body += bytes(pad)
        offset = L.HEADER.size + len(self._body)
        self._body += payload
        return offset

    def body(self) -> bytes:
        return bytes(self._body)


def _u32(value: Any, what: str) -> int:
    if not isinstance(value, int | np.integer) or not 0 <= value <= L.U32_MAX:
        raise ValueError(f"{what} = {value!r} is not an unsigned 32-bit integer")
    return int(value)


def _check_pairs_uses(graph: Graph) -> None:
    """S8_PAIRS tensors are the weights (input 1) of the fully connected kinds and nothing else."""
    for i, op in enumerate(graph.ops):
        for pos, name in enumerate(op.inputs):
            if name and graph.tensors[name].layout == S8_PAIRS and not (pos == 1 and op.kind in S8_PAIRS_KINDS):
                raise ValueError(f"op {i} ({op.kind}): input {pos} {name!r} is {S8_PAIRS}, which only the weights "
                                 f"(input 1) of {', '.join(S8_PAIRS_KINDS)} may be")
    for name in graph.inputs + graph.outputs:
        if name in graph.tensors and graph.tensors[name].layout == S8_PAIRS:
            raise ValueError(f"graph input/output {name!r} is {S8_PAIRS} (weights)")


def _tensor_record(
    name: str, t: Tensor, arena_bytes: int, strings: StringTable, constants: bytearray, pitched: bool = False
) -> bytes:
    where = f"tensor {name!r}"
    if t.name != name:
        raise ValueError(f"{where}: Tensor.name is {t.name!r}, the graph's key is {name!r}")
    if not name:
        raise ValueError("a tensor has an empty name ('' marks an absent optional op input)")
    if t.dtype not in L.DTYPE_CODES:
        raise ValueError(f"{where}: dtype {t.dtype!r} is not one of {list(L.DTYPE_CODES)}")
    if t.layout not in L.LAYOUT_CODES:
        raise ValueError(f"{where}: layout {t.layout!r} is not one of {list(L.LAYOUT_CODES)}")
    shape = _shape(t.shape, where)
    if t.layout == S4_HALVES and (t.dtype != INT4 or halves_problem(shape)):
        raise ValueError(f"{where}: layout {S4_HALVES} on {t.dtype} {shape}: "
                         f"{halves_problem(shape) or 'only int4 weights take it'}")
    if t.layout == S8_PAIRS and (t.dtype != "int8" or not t.is_constant or pairs_problem(shape)):
        raise ValueError(f"{where}: layout {S8_PAIRS} on {t.dtype} {shape}: "
                         f"{pairs_problem(shape) or 'only constant int8 weights take it'}")
    nbytes = _u32(t.nbytes, f"{where} nbytes")
    flags, scale_bits, zero_point = _qparams(t, where)
    if t.is_constant:
        flags |= L.TENSOR_FLAG_CONSTANT
        offset = _append_constant(t, constants, where)
    elif t.dtype == INT4:
        raise ValueError(f"{where}: int4 tensors are packed weights, constants only (no kernel reads int4 activations)")
    else:
        offset = t.offset
        extent = arena_extent(t)
        if not isinstance(offset, int | np.integer) or offset < 0 or offset + extent > arena_bytes:
            raise ValueError(
                f"{where}: arena offset {offset} + {extent} bytes is outside the arena of "
                f"{arena_bytes} bytes (run the planner before serializing)"
            )
        if offset % DTYPES[t.dtype].itemsize:
            raise ValueError(f"{where}: arena offset {offset} is not a multiple of its item size "
                             f"{DTYPES[t.dtype].itemsize} (kernels read activations through typed pointers)")
    if t.pitch:
        flags |= L.TENSOR_FLAG_PITCHED
    name_offset, name_length = strings.add(name)
    dims = list(shape) + [0] * (L.MAX_RANK - len(shape))
    record = L.TENSOR.pack(
        name_offset, name_length, L.DTYPE_CODES[t.dtype], len(shape), L.LAYOUT_CODES[t.layout], flags,
        *dims, word_to_float(scale_bits), zero_point, int(offset), nbytes,
    )
    return record + L.TENSOR_PITCH.pack(_u32(t.pitch, f"{where} pitch")) if pitched else record


def _shape(shape: Any, where: str) -> tuple[int, ...]:
    dims = tuple(_u32(d, f"{where} shape {tuple(shape)}") for d in shape)
    problem = L.shape_problem(dims)
    if problem:
        raise ValueError(f"{where}: {problem}")
    return dims


def _qparams(t: Tensor, where: str) -> tuple[int, int, int]:
    """(flags, float32 bits of scale, zero point) of ``t``'s quantization."""
    if t.qparams is None:
        return 0, 0, 0
    scale_bits = float_to_word(t.qparams.scale)
    scale = word_to_float(scale_bits)
    # The runtime divides by the scale: it must survive the float32 rounding as a positive number.
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"{where}: scale {t.qparams.scale!r} is not a positive finite float32")
    zp = t.qparams.zero_point
    if not isinstance(zp, int | np.integer) or not L.I32_MIN <= zp <= L.I32_MAX:
        raise ValueError(f"{where}: zero point {zp!r} is not an int32")
    return L.TENSOR_FLAG_QPARAMS, scale_bits, int(zp)


def _append_constant(t: Tensor, constants: bytearray, where: str) -> int:
    """Offset of ``t``'s data inside the constants section, after appending it 16-byte aligned."""
    data = t.data
    if not isinstance(data, np.ndarray):
        raise ValueError(f"{where}: constant data is a {type(data).__name__}, not a numpy array")
    if t.dtype == INT4:  # the packed bytes (mcuforge.kernels.int4), two values per byte
        problem = packing_problem(data, t.numel) if data.dtype == np.int8 else f"packed int4 data is {data.dtype}"
        if problem:
            raise ValueError(f"{where}: {problem}")
    elif data.dtype != DTYPES[t.dtype]:
        raise ValueError(f"{where}: constant data is {data.dtype}, declared {t.dtype}; cast it when lowering")
    elif tuple(data.shape) != tuple(t.shape):
        raise ValueError(f"{where}: constant data has shape {data.shape}, declared {tuple(t.shape)}")
    constants += bytes(L.align_up(len(constants), L.CONSTANT_ALIGN) - len(constants))
    offset = len(constants)
    constants += data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
    return offset


def _op_record(
    i: int, op: Op, index_of: dict[str, int], graph: Graph, strings: StringTable,
    index_pool: list[int], attr_pool: list[int],
) -> bytes:
    where = f"op {i} ({op.kind})"
    spec = OP_KINDS.get(op.kind)
    if spec is None:
        raise ValueError(f"{where}: unknown op kind; known kinds: {', '.join(OP_KINDS)}")
    if op.backend not in L.BACKEND_CODES:
        raise ValueError(f"{where}: backend {op.backend!r} is not one of {list(L.BACKEND_CODES)}")
    precision = op_precision(op, graph.tensors)
    if precision not in kind_precisions(op.kind):
        raise ValueError(f"{where}: precision {precision!r} is not one of the kind's {list(kind_precisions(op.kind))}")
    inputs_start = len(index_pool)
    index_pool += _op_inputs(op, spec["inputs"], index_of, where)
    outputs_start = len(index_pool)
    index_pool += _op_outputs(op, index_of, graph, where)
    attrs_start = len(attr_pool)
    attr_pool += _op_attrs(op, spec["attrs"], strings, where)
    scratch = _u32(op.scratch_bytes, f"{where} scratch_bytes")
    scratch_offset = op.scratch_offset if scratch else 0
    problem = delegate_problem(op, graph.tensors) if op.kind == "delegate" else None
    if problem is None and op.kind != "delegate" and op.backend == "npu":
        problem = "backend 'npu' on an op that is not a delegate"
    if problem is None:
        problem = (shifts_problem(op, graph.tensors) or compact_params_problem(op, graph.tensors)
                   or aten_index_problem(op) or recurrent_problem(op, graph.tensors)
                   or minmax_problem(op, graph.tensors) or kernel_shape_problem(op, graph.tensors)
                   or fill_problem(op) or outside_problem(op))
    if problem is None and scratch:
        problem = scratch_problem(scratch_offset, scratch, graph.arena_bytes,
                                    [(n, graph.tensors[n].offset, arena_extent(graph.tensors[n]))
                                     for n in op.inputs + op.outputs if n and not graph.tensors[n].is_constant])
        if problem and scratch_offset < 0:
            problem += " (run the planner before serializing)"
    if problem is None:
        problem = arena_overlap_problem(op, graph.tensors) or scratch_size_problem(op, graph.tensors, graph.target)
    if problem:
        raise ValueError(f"{where}: {problem}")
    return L.OP.pack(
        spec["id"], L.BACKEND_CODES[op.backend], L.PRECISION_CODES[precision], inputs_start, len(op.inputs),
        outputs_start, len(op.outputs), attrs_start, len(attr_pool) - attrs_start, scratch, scratch_offset,
    )


def _op_inputs(op: Op, input_spec: list[str], index_of: dict[str, int], where: str) -> list[int]:
    problem = L.input_count_problem(len(op.inputs), input_spec)
    if problem:
        raise ValueError(f"{where}: {problem}")
    indices = []
    for pos, name in enumerate(op.inputs):
        if name == "" and L.optional_input(input_spec, pos):
            indices.append(L.ABSENT_INPUT)
        elif name in index_of:
            indices.append(index_of[name])
        else:
            raise ValueError(f"{where}: input {pos} names unknown tensor {name!r}")
    return indices


def _op_outputs(op: Op, index_of: dict[str, int], graph: Graph, where: str) -> list[int]:
    for name in op.outputs:
        if name not in index_of:
            raise ValueError(f"{where}: output names unknown tensor {name!r}")
        # Constants live in flash: a kernel writing one would fault on the device.
        if graph.tensors[name].is_constant:
            raise ValueError(f"{where}: output {name!r} is a constant")
    return [index_of[name] for name in op.outputs]


def _op_attrs(op: Op, specs: list[tuple[str, str]], strings: StringTable, where: str) -> list[int]:
    declared = [name for name, _ in specs]
    optional = OPTIONAL_ATTRS.get(op.kind, {})
    missing = [name for name in declared if name not in op.attrs and name not in optional]
    extra = [name for name in op.attrs if name not in declared]
    # The file has no attribute names: a missing or unknown one cannot be stored faithfully.
    if missing or extra:
        raise ValueError(f"{where}: attrs must be exactly {declared} ({', '.join(optional) or 'none'} optional); "
                         f"missing {missing}, unknown {extra}")
    # Optional trailing attributes are stored up to the last one that differs from its default.
    stored = list(specs)
    while stored and stored[-1][0] in optional and op.attrs.get(stored[-1][0], optional[stored[-1][0]]) == \
            optional[stored[-1][0]]:
        stored.pop()
    encoder = ValueEncoder(strings, len(op.inputs))
    words: list[int] = []
    for name, attr_type in stored:
        value = op.attrs.get(name, optional.get(name))
        words += encoder.encode_attr(value, attr_type, f"{where}, attr {name!r}")
    return words


def _graph_io(names: list[str], role: str, index_of: dict[str, int], graph: Graph) -> list[int]:
    for name in names:
        if name not in index_of:
            raise ValueError(f"graph {role} {name!r} is not a tensor of the graph")
        if role == "input" and graph.tensors[name].is_constant:
            raise ValueError(f"graph input {name!r} is a constant")
    return [index_of[name] for name in names]

