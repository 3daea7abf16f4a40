"""The program file: round trip, byte layout, and a reader that rejects every bad file cleanly."""

from __future__ import annotations

import random
import struct
import sys
import zlib
from typing import Any

import numpy as np
import pytest

from mcuforge.cruntime import aten_table_index
from mcuforge.ir import (
    DTYPES,
    OP_KINDS,
    OPTIONAL_ATTRS,
    Graph,
    Op,
    QParams,
    Tensor,
    TensorRef,
    least_scratch_bytes,
)
from mcuforge.lower.fallback import aten_fp32_attrs
from mcuforge.program import FORMAT_VERSION, MAGIC, ProgramFormatError, deserialize, read_header, serialize
from mcuforge.program import layout as L
from mcuforge.targets import ISA_IDS, TARGETS

# ---------------------------------------------------------------------------------------------
# Graphs built by hand


def _planned(tensors: list[Tensor]) -> tuple[dict[str, Tensor], int]:
    """Tensors by name, activations placed one after another (8-byte aligned); the arena size."""
    offset = 0
    for t in tensors:
        if not t.is_constant:
            t.offset = offset
            offset += -(-t.nbytes // 8) * 8
    return {t.name: t for t in tensors}, offset


def conv_attrs() -> dict[str, Any]:
    return {
        "input_offset": 3, "output_offset": -5, "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
        "act_min": -128, "act_max": 127,
    }


def make_graph(target: str = "cortex-m4") -> Graph:
    """Two inputs, three outputs: conv2d_s8 -> dequantize -> aten gelu / aten with nested args ->
    quantize, a fully connected op without bias, a reshape and a rank-6 transpose."""
    rng = np.random.default_rng(0)
    tensors = [
        Tensor("x", (1, 4, 4, 3), "int8", QParams(0.05, -3), layout="nhwc"),
        Tensor("conv.weight", (2, 3, 3, 3), "int8", QParams(0.01, 0),
               data=rng.integers(-128, 128, (2, 3, 3, 3), dtype=np.int8)),
        Tensor("conv.bias", (2,), "int32", data=np.array([1234, -77], np.int32)),
        Tensor("conv.mult", (2,), "int32", data=np.array([1 << 30, 1518500250], np.int32)),
        Tensor("conv.shift", (2,), "int8", data=np.array([-7, -8], np.int8)),
        Tensor("y", (1, 4, 4, 2), "int8", QParams(0.1, -5), layout="nhwc"),
        Tensor("y_f", (1, 4, 4, 2), "float32", layout="nhwc"),
        Tensor("gelu", (1, 4, 4, 2), "float32", layout="nhwc"),
        Tensor("mix", (1, 4, 4, 2), "float32", layout="nhwc"),
        Tensor("out", (1, 4, 4, 2), "int8", QParams(0.0123, 7), layout="nhwc"),
        Tensor("v", (1, 8), "int8", QParams(0.5, 0)),
        Tensor("fc.weight", (3, 8), "int8", data=rng.integers(-128, 128, (3, 8), dtype=np.int8)),
        Tensor("fc.mult", (3,), "int32", data=np.array([1 << 30] * 3, np.int32)),
        Tensor("fc.shift", (), "int8", data=np.array(-3, np.int8)),  # rank 0
        Tensor("fc.out", (1, 3), "int8", QParams(0.25, 1)),
        Tensor("r", (1, 1, 2, 1, 1, 3), "int8", QParams(0.25, 1)),  # rank 6
        Tensor("rt", (3, 1, 1, 2, 1, 1), "int8", QParams(0.25, 1)),
        Tensor("lut", (256,), "int16", data=np.arange(-128, 128, dtype=np.int16) * 3),
        Tensor("empty", (0, 5), "float32", data=np.zeros((0, 5), np.float32)),
    ]
    tensors_by_name, arena = _planned(tensors)
    scratch = least_scratch_bytes("conv2d_s8", (2, 3, 3, 3), target)  # 160 bytes on cortex-m4 (the im2col plan)
    ops = [
        Op("conv2d_s8", ["x", "conv.weight", "conv.bias", "conv.mult", "conv.shift"], ["y"], conv_attrs(),
           scratch_bytes=scratch, scratch_offset=-(-arena // 16) * 16, reason="ignored", debug={"module": "conv"}),
        Op("dequantize", ["y"], ["y_f"], {"scale": 0.1, "zero_point": -5}, backend="fp32"),
        Op("aten_fp32", ["y_f"], ["gelu"],
           aten_fp32_attrs("aten.gelu.default", [TensorRef(0)], {"approximate": "tanh"}), backend="fp32"),
        Op("aten_fp32", ["gelu", "y_f"], ["mix"], {
            "target": "aten.custom.default",
            "args": [TensorRef(0), [1, 1], 0.5, None, "tanh", [TensorRef(1), [2, [3.25, False]]],
                     -(2**63), sys.maxsize, [], [0.25, -1.5], "ünïcode"],
            "kwargs": {"alpha": 2.0, "dims": [0, -1], "flag": True, "nested": {"k": [None]}},
            "table_index": -1,  # not an op of the C runtime's fp32 table
        }, backend="fp32"),
        Op("quantize", ["mix"], ["out"], {"scale": 0.0123, "zero_point": 7}, backend="fp32"),
        Op("fully_connected_s8", ["v", "fc.weight", "", "fc.mult", "fc.shift"], ["fc.out"],
           {"input_offset": 0, "output_offset": 1, "act_min": -128, "act_max": 127}),
        Op("reshape", ["fc.out"], ["r"], {}),
        Op("transpose", ["r"], ["rt"], {"perm": [5, 4, 3, 2, 1, 0]}),
    ]
    return Graph(tensors_by_name, ops, inputs=["x", "v"], outputs=["out", "y", "rt"], target=target,
                 arena_bytes=ops[0].scratch_offset + scratch + 16)


def tiny_graph() -> Graph:
    """A small program for the exhaustive corruption tests: one constant, every attr kind."""
    tensors, arena = _planned([
        Tensor("a", (2, 3), "int8", QParams(0.5, 3)),
        Tensor("w", (3,), "int8", data=np.array([1, -2, 3], np.int8)),
        Tensor("a_f", (2, 3), "float32"),
        Tensor("b", (2, 3), "float32"),
    ])
    ops = [
        Op("dequantize", ["a"], ["a_f"], {"scale": 0.5, "zero_point": 3}, backend="fp32"),
        Op("aten_fp32", ["a_f", "w"], ["b"], {
            "target": "aten.leaky_relu.default", "args": [TensorRef(0), [1, -2], 0.25, None, "s"],
            "kwargs": {"k": [TensorRef(1), True, 1 << 40]},
            "table_index": aten_table_index("aten.leaky_relu.default"),
        }, backend="fp32"),
    ]
    return Graph(tensors, ops, inputs=["a"], outputs=["b"], target="cortex-m33", arena_bytes=arena)


def f32(x: float) -> float:
    return float(np.float32(x))


def expected_attr(value: Any, attr_type: str) -> Any:
    """What an attribute reads back as: floats at float32 precision, tuples as lists."""
    if attr_type == "float" or isinstance(value, float):
        return f32(value)
    if isinstance(value, list | tuple):
        return [expected_attr(v, "any") for v in value]
    if isinstance(value, dict):
        return {k: expected_attr(v, "any") for k, v in value.items()}
    return value


def assert_same_graph(got: Graph, want: Graph) -> None:
    assert (got.target, got.arena_bytes) == (want.target, want.arena_bytes)
    assert (got.inputs, got.outputs) == (want.inputs, want.outputs)
    assert list(got.tensors) == list(want.tensors)
    for name, w in want.tensors.items():
        g = got.tensors[name]
        assert (g.name, g.shape, g.dtype, g.layout) == (w.name, tuple(w.shape), w.dtype, w.layout), name
        if w.qparams is None:
            assert g.qparams is None
        else:
            assert g.qparams == QParams(f32(w.qparams.scale), w.qparams.zero_point), name
        if w.is_constant:
            assert g.offset == -1 and g.data.dtype == w.data.dtype and g.data.shape == w.data.shape
            assert g.data.tobytes() == w.data.tobytes(), name
        else:
            assert g.data is None and g.offset == w.offset, name
    assert len(got.ops) == len(want.ops)
    for g, w in zip(got.ops, want.ops, strict=True):
        assert (g.kind, g.inputs, g.outputs, g.backend, g.scratch_bytes, g.scratch_offset) == (
            w.kind, w.inputs, w.outputs, w.backend, w.scratch_bytes, w.scratch_offset)
        specs = OP_KINDS[w.kind]["attrs"]
        assert list(g.attrs) == [name for name, _ in specs]
        want = {**OPTIONAL_ATTRS.get(w.kind, {}), **w.attrs}  # an absent optional attribute reads as its default
        assert g.attrs == {name: expected_attr(want[name], t) for name, t in specs}
        assert (g.reason, g.debug) == ("", {})


# ---------------------------------------------------------------------------------------------
# Round trip and layout


def test_round_trip_keeps_everything() -> None:
    graph = make_graph()
    data = serialize(graph)
    back = deserialize(data)
    assert_same_graph(back, graph)
    # Reading is exact from then on: a second trip gives the same bytes.
    assert serialize(back) == data


def test_attr_values_read_back_typed() -> None:
    back = deserialize(serialize(make_graph()))
    args = back.ops[3].attrs["args"]
    assert args[0] == TensorRef(0) and args[1] == [1, 1] and args[3] is None
    assert args[6] == -(2**63) and args[7] == sys.maxsize
    assert args[5] == [TensorRef(1), [2, [3.25, False]]] and args[5][1][1][1] is False
    assert back.ops[3].attrs["kwargs"]["flag"] is True
    # A float attr is stored as float32: 0.0123 comes back as its float32 value, not exactly.
    scale = back.ops[4].attrs["scale"]
    assert scale == f32(0.0123) and scale != 0.0123


def test_constants_are_aligned_raw_and_in_place() -> None:
    graph = make_graph()
    data = serialize(graph)
    h = read_header(data)
    assert h.constants_offset % 16 == 0
    assert h.constant_bytes == graph.constant_bytes
    for i, name in enumerate(graph.tensors):
        record = L.TENSOR.unpack_from(data, h.tensors_offset + i * h.tensor_record_size)
        flags, offset, nbytes = record[5], record[14], record[15]
        t = graph.tensors[name]
        assert bool(flags & L.TENSOR_FLAG_CONSTANT) == t.is_constant
        if t.is_constant:
            start = h.constants_offset + offset
            assert start % 16 == 0, name
            assert data[start:start + nbytes] == t.data.astype(t.data.dtype.newbyteorder("<")).tobytes()
        else:
            assert offset == t.offset


def test_header_fields() -> None:
    graph = make_graph()
    data = serialize(graph)
    h = read_header(data)
    assert data[:4] == MAGIC == h.magic
    assert (h.version_major, h.version_minor) == FORMAT_VERSION
    assert h.header_size == L.HEADER.size == 128
    assert h.file_size == len(data)
    assert h.crc32 == zlib.crc32(data[h.header_size:])
    assert h.header_crc32 == zlib.crc32(data[:104] + bytes(4) + data[108:128])
    assert h.arena_bytes == graph.arena_bytes
    assert (h.tensor_count, h.op_count) == (len(graph.tensors), len(graph.ops))
    assert (h.input_count, h.output_count) == (2, 3)
    for offset in (h.tensors_offset, h.ops_offset, h.index_offset, h.attrs_offset, h.strings_offset):
        assert offset % 4 == 0


@pytest.mark.parametrize("target", list(TARGETS))
def test_target_ids_recorded(target: str) -> None:
    data = serialize(make_graph(target))
    h = read_header(data)
    assert (h.target_id, h.isa_id) == (TARGETS[target].id, ISA_IDS[TARGETS[target].isa])
    assert deserialize(data).target == target


def patch_header(data: bytes, offset: int, fmt: str, *values: Any) -> bytes:
    """``data`` with header bytes replaced and the header CRC recomputed (a deliberate edit)."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    struct.pack_into("<I", out, L.HEADER_CRC_OFFSET, L.header_crc(bytes(out[:L.HEADER.size])))
    return bytes(out)


def test_target_and_isa_mismatch_rejected() -> None:
    data = serialize(make_graph("cortex-m55"))
    with pytest.raises(ProgramFormatError, match="isa id 1 .* does not match target cortex-m55"):
        deserialize(patch_header(data, 22, "<H", 1))
    with pytest.raises(ProgramFormatError, match="unknown target id 99"):
        deserialize(patch_header(data, 20, "<H", 99))
    # A consistent pair survives: an m4 program stays an m4 program, not silently an m55 one.
    m4 = TARGETS["cortex-m4"]
    assert deserialize(patch_header(data, 20, "<HH", m4.id, ISA_IDS[m4.isa])).target == "cortex-m4"


def test_future_major_version_rejected_minor_accepted() -> None:
    data = serialize(make_graph())
    assert FORMAT_VERSION == (3, 1)
    with pytest.raises(ProgramFormatError, match=r"program format 4\.0, this reader supports 2\.x and 3\.x"):
        deserialize(patch_header(data, 4, "<HH", 4, 0))
    with pytest.raises(ProgramFormatError, match=r"program format 1\.0, this reader supports 2\.x and 3\.x"):
        deserialize(patch_header(data, 4, "<HH", 1, 0))
    assert_same_graph(deserialize(patch_header(data, 4, "<HH", 3, 7)), make_graph())
    # a 2.x file is 3.0's layout without the s4 kinds' compact parameters: read as it is
    assert_same_graph(deserialize(patch_header(data, 4, "<HH", 2, 0)), make_graph())


def test_empty_graph_round_trips() -> None:
    tensors, arena = _planned([Tensor("x", (4,), "float32")])
    graph = Graph(tensors, [], ["x"], ["x"], target="cortex-m0plus", arena_bytes=arena)
    assert_same_graph(deserialize(serialize(graph)), graph)


def test_constants_come_back_writable_and_native() -> None:
    w = deserialize(serialize(make_graph())).tensors["conv.weight"].data
    assert w.flags.writeable and w.dtype == DTYPES["int8"]


# ---------------------------------------------------------------------------------------------
# The writer refuses what it cannot store faithfully


def _broken(change: str) -> Graph:
    g = make_graph()
    if change == "unplanned":
        g.tensors["y"].offset = -1
    elif change == "outside arena":
        g.arena_bytes = 8
    elif change == "missing attr":
        del g.ops[0].attrs["act_max"]
    elif change == "unknown attr":
        g.ops[0].attrs["groups"] = 1
    elif change == "int attr too big":
        g.ops[0].attrs["act_min"] = 1 << 31
    elif change == "ints attr not a list":
        g.ops[0].attrs["stride"] = 1
    elif change == "data dtype":
        g.tensors["conv.bias"].data = g.tensors["conv.bias"].data.astype(np.int64)
    elif change == "data shape":
        g.tensors["conv.bias"].data = np.zeros(3, np.int32)
    elif change == "tensor ref":
        g.ops[2].attrs["args"] = [TensorRef(1)]
    elif change == "unsupported value":
        g.ops[2].attrs["kwargs"] = {"x": np.zeros(2)}
    elif change == "scale":
        g.tensors["y"].qparams = QParams(0.0, 0)
    elif change == "unknown tensor":
        g.ops[1].inputs = ["nope"]
    elif change == "constant output":
        g.ops[1].outputs = ["conv.bias"]
    elif change == "rank 7":
        g.tensors["r"].shape = (1,) * 7
    elif change == "absent required input":
        g.ops[0].inputs[0] = ""
    elif change == "unknown kind":
        g.ops[0].kind = "conv3d_s8"
    elif change == "backend":
        g.ops[0].backend = "gpu"
    elif change == "too deep":
        deep: Any = [None]
        for _ in range(L.MAX_VALUE_DEPTH):
            deep = [deep, None]
        g.ops[2].attrs["args"] = deep
    elif change == "target":
        g.target = "cortex-a53"
    elif change == "int32 shifts":
        g.tensors["conv.shift"].dtype = "int32"
        g.tensors["conv.shift"].data = g.tensors["conv.shift"].data.astype(np.int32)
    elif change == "shift out of range":
        g.tensors["conv.shift"].data = np.array([-7, 31], np.int8)
    elif change == "unplanned scratch":
        g.ops[0].scratch_offset = -1
    elif change == "scratch over an input":
        g.ops[0].scratch_offset = 0
    return g


#: Each damage and the error it must raise: the check that refuses it, not just any ValueError.
WRITER_REJECTS = {
    "unplanned": r"tensor 'y': arena offset -1 \+ 32 bytes is outside the arena",
    "outside arena": r"tensor 'x': arena offset 0 \+ 48 bytes is outside the arena of 8 bytes",
    "missing attr": r"op 0 \(conv2d_s8\): attrs must be exactly .*missing \['act_max'\], unknown \[\]",
    "unknown attr": r"op 0 \(conv2d_s8\): attrs must be exactly .*missing \[\], unknown \['groups'\]",
    "int attr too big": r"op 0 \(conv2d_s8\), attr 'act_min': 2147483648 does not fit in int32",
    "ints attr not a list": r"op 0 \(conv2d_s8\), attr 'stride': expected a list of ints, got 1",
    "data dtype": r"tensor 'conv.bias': constant data is int64, declared int32",
    "data shape": r"tensor 'conv.bias': constant data has shape \(3,\), declared \(2,\)",
    "tensor ref": r"op 2 \(aten_fp32\), attr 'args'\[0\]: TensorRef\(index=1\) is not an index into the op's 1 inputs",
    "unsupported value": r"op 2 \(aten_fp32\), attr 'kwargs'\['x'\]: cannot store a ndarray",
    "scale": r"tensor 'y': scale 0.0 is not a positive finite float32",
    "unknown tensor": r"op 1 \(dequantize\): input 0 names unknown tensor 'nope'",
    "constant output": r"op 1 \(dequantize\): output 'conv.bias' is a constant",
    "rank 7": r"tensor 'r': rank 7 is above the maximum 6",
    "absent required input": r"op 0 \(conv2d_s8\): input 0 names unknown tensor ''",  # '' only marks optional inputs
    "unknown kind": r"op 0 \(conv3d_s8\): unknown op kind",
    "backend": r"op 0 \(conv2d_s8\): backend 'gpu' is not one of",
    "too deep": r"op 2 \(aten_fp32\), attr 'args'(\[0\]){8}: lists/dicts nested deeper than 8 levels",
    "target": r"unknown target 'cortex-a53'",
    "int32 shifts": r"op 0 \(conv2d_s8\): shifts 'conv.shift' must be an int8 constant, got a constant of int32",
    "shift out of range": r"op 0 \(conv2d_s8\): shifts 'conv.shift' hold values outside \[-31, 30\]",
    "unplanned scratch": r"op 0 \(conv2d_s8\): scratch buffer at arena offset -1 \+ 160 bytes is not .*run the planner",
    "scratch over an input": r"op 0 \(conv2d_s8\): scratch buffer \[0, 160\) overlaps tensor 'x' \[0, 48\)",
}


@pytest.mark.parametrize("change", list(WRITER_REJECTS))
def test_writer_rejects(change: str) -> None:
    with pytest.raises(ValueError, match=WRITER_REJECTS[change]):
        serialize(_broken(change))


# ---------------------------------------------------------------------------------------------
# A bad file is a ProgramFormatError, never another exception, never a hang


def reads_or_rejects(data: bytes) -> Graph | None:
    """The graph if ``data`` is accepted, None if rejected; any other exception fails the test."""
    try:
        return deserialize(data)
    except ProgramFormatError:
        return None


def with_crcs_fixed(data: bytearray) -> bytes:
    """``data`` with both CRCs recomputed, so that only the structural checks stand in the way."""
    if len(data) >= L.HEADER.size:
        header_size = struct.unpack_from("<I", data, 8)[0]
        if L.HEADER.size <= header_size <= len(data):
            struct.pack_into("<I", data, 16, zlib.crc32(bytes(data[header_size:])))
            struct.pack_into("<I", data, L.HEADER_CRC_OFFSET, L.header_crc(bytes(data[:header_size])))
    return bytes(data)


def check_accepted(graph: Graph) -> None:
    """A corrupted file that passes every check must still be a graph the writer can store."""
    again = serialize(graph)
    assert serialize(deserialize(again)) == again


def test_every_truncation_rejected() -> None:
    data = serialize(tiny_graph())
    for n in range(len(data)):
        with pytest.raises(ProgramFormatError):
            deserialize(data[:n])
    with pytest.raises(ProgramFormatError, match="after the"):
        deserialize(data + b"\0")


def test_every_single_byte_flip_rejected() -> None:
    data = serialize(tiny_graph())
    for i in range(len(data)):
        for mask in (0x01, 0x80, 0xFF):
            bad = bytearray(data)
            bad[i] ^= mask
            # Both CRCs together cover every byte: each flip is caught.
            with pytest.raises(ProgramFormatError):
                deserialize(bytes(bad))


def test_not_a_program() -> None:
    with pytest.raises(ProgramFormatError, match="not an mcuforge program"):
        deserialize(b"\x7fELF" + bytes(200))
    with pytest.raises(ProgramFormatError, match="truncated"):
        deserialize(b"MC")


def test_structural_corruption_with_crcs_fixed_byte_by_byte() -> None:
    """Every byte set to a few values, CRCs recomputed: the structural checks alone decide."""
    data = serialize(tiny_graph())
    rejected = accepted = 0
    for i in range(len(data)):
        for value in {0x00, 0xFF, 0x80, 0x7F, data[i] ^ 0x01, data[i] ^ 0x10}:
            if value == data[i]:
                continue
            bad = bytearray(data)
            bad[i] = value
            graph = reads_or_rejects(with_crcs_fixed(bad))
            if graph is None:
                rejected += 1
            else:
                accepted += 1
                check_accepted(graph)
    # Most edits break the structure; some are harmless (a constant's value, an arena offset...).
    assert rejected > 3 * accepted > 0


def _corrupt(rng: random.Random, data: bytes) -> bytearray:
    bad = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0:  # a few random bytes anywhere
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
    elif kind == 1:  # an aligned 32-bit field set to an interesting value
        pos = rng.randrange(len(bad) // 4) * 4
        value = rng.choice([0, 1, 2, 3, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, len(bad), len(bad) + 4,
                            rng.randrange(1 << 32), rng.randrange(256) << 8 | rng.randrange(12)])
        struct.pack_into("<I", bad, pos, value)
    elif kind == 2:  # a run of bytes overwritten
        pos, n = rng.randrange(len(bad)), rng.randint(2, 16)
        bad[pos:pos + n] = bytes(rng.randrange(256) for _ in range(n))
        del bad[len(data):]
    else:  # cut or extended, with the file size field made to agree half of the time
        del bad[rng.randrange(len(bad)):]
        bad += bytes(rng.randrange(256) for _ in range(rng.randrange(8)))
        if len(bad) >= 16 and rng.random() < 0.5:
            struct.pack_into("<I", bad, 12, len(bad))
    return bad


@pytest.mark.parametrize(("make", "rounds"), [(tiny_graph, 4000), (make_graph, 2000)])
def test_random_structural_corruption_with_crcs_fixed(make: Any, rounds: int) -> None:
    """Seeded random edits (bytes, 32-bit fields, runs, cuts), CRCs recomputed."""
    rng = random.Random(1234)
    data = serialize(make())
    rejected = 0
    for _ in range(rounds):
        graph = reads_or_rejects(with_crcs_fixed(_corrupt(rng, data)))
        if graph is None:
            rejected += 1
        else:
            check_accepted(graph)
    assert rejected > rounds // 2


def with_attr_words(data: bytes, op_index: int, words: list[int]) -> bytes:
    """The program with op ``op_index``'s attribute values replaced by ``words`` (appended to the
    attrs pool, the sections laid out again, CRCs fixed): hand-made encodings for the reader."""
    h = read_header(data)
    ops = bytearray(data[h.ops_offset:h.ops_offset + h.op_count * h.op_record_size])
    struct.pack_into("<II", ops, op_index * h.op_record_size + 20, h.attr_word_count, len(words))
    parts = [
        (data[h.tensors_offset:h.tensors_offset + h.tensor_count * h.tensor_record_size], 4),
        (bytes(ops), 4),
        (data[h.index_offset:h.index_offset + 4 * h.index_count], 4),
        (data[h.attrs_offset:h.attrs_offset + 4 * h.attr_word_count] + struct.pack(f"<{len(words)}I", *words),
         4),
        (data[h.strings_offset:h.strings_offset + h.string_bytes], 4),
        (data[h.constants_offset:h.constants_offset + h.constants_size], 16),
    ]
    body, offsets = bytearray(), []
    for part, alignment in parts:
        body += bytes(-(h.header_size + len(body)) % alignment)
        offsets.append(h.header_size + len(body))
        body += part
    header = h._replace(
        file_size=h.header_size + len(body), tensors_offset=offsets[0], ops_offset=offsets[1],
        index_offset=offsets[2], attrs_offset=offsets[3], attr_word_count=h.attr_word_count + len(words),
        strings_offset=offsets[4], constants_offset=offsets[5],
    )
    return with_crcs_fixed(bytearray(L.HEADER.pack(*header) + body))


T = L.tag_word
STR_A = [T(L.TAG_STR, 1), 0, 1]  # the string "a": tiny_graph's first tensor name


def list_words(*items: list[int]) -> list[int]:
    payload = [w for item in items for w in item]
    return [T(L.TAG_LIST, len(items)), len(payload), *payload]


def nested_lists(levels: int, inner: list[int] | None = None) -> list[int]:
    words = inner or [T(L.TAG_NONE, 0)]
    for _ in range(levels):
        words = list_words(words)
    return words


def test_attr_words_helper_is_faithful() -> None:
    """Hand-made words that are valid read back as meant (nesting at the depth limit included)."""
    data = serialize(tiny_graph())
    kwargs = [T(L.TAG_DICT, 1), 6, *STR_A, T(L.TAG_INT64, 1), 0, 1]
    no_index = [T(L.TAG_INT, 1), 0xFFFFFFFF]  # table_index -1: "a" is no op of the fp32 table
    words = STR_A + nested_lists(L.MAX_VALUE_DEPTH, [T(L.TAG_TENSOR, 1), 1]) + kwargs + no_index
    attrs = deserialize(with_attr_words(data, 1, words)).ops[1].attrs
    args: Any = attrs["args"]
    for _ in range(L.MAX_VALUE_DEPTH - 1):
        (args,) = args
    assert args == [TensorRef(1)]
    assert attrs["target"] == "a" and attrs["kwargs"] == {"a": 1 << 32}


@pytest.mark.parametrize(("words", "message"), [
    (STR_A + [T(L.TAG_NONE, 0)] * 2 + [T(L.TAG_INT, 1), 0xFFFFFFFF, 0], "1 attrs words left over"),
    ([T(L.TAG_INT, 1), 5], "declared 'str' needs tag STR"),
    ([T(L.TAG_STR, 1), 10_000, 3], "string .* is outside the"),
    (STR_A + [T(99, 0)], "unknown value tag 99"),
    (STR_A + [T(L.TAG_INTS, 500), 1], "needs 500 words"),
    (STR_A + [T(L.TAG_INTS, 0xFF_FFFF), 1], "needs 16777215 words"),
    (STR_A + [T(L.TAG_TENSOR, 1), 7], "tensor argument 7 but the op has 2 inputs"),
    (STR_A + [T(L.TAG_BOOL, 1), 2], "BOOL payload 2"),
    (STR_A + [T(L.TAG_INT, 2), 2, 3], "count 2"),
    (STR_A + [T(L.TAG_NONE, 1)], "NONE value with count 1"),
    (STR_A + [T(L.TAG_LIST, 2), 1, T(L.TAG_NONE, 0)], "needs 1 words"),
    (STR_A + [T(L.TAG_LIST, 1), 5, T(L.TAG_NONE, 0)], "needs 5 words"),
    (STR_A + [T(L.TAG_LIST, 1), 2, T(L.TAG_NONE, 0), T(L.TAG_NONE, 0)], "LIST's size left unused"),
    (STR_A + [T(L.TAG_NONE, 0), T(L.TAG_DICT, 1), 2, T(L.TAG_INT, 1), 3], "DICT key has tag 1"),
    (STR_A + [T(L.TAG_NONE, 0), T(L.TAG_DICT, 2), 8, *STR_A, T(L.TAG_NONE, 0), *STR_A, T(L.TAG_NONE, 0)],
     "DICT key 'a' appears twice"),
    (STR_A + nested_lists(L.MAX_VALUE_DEPTH + 1), "nested deeper"),
    (STR_A + [T(L.TAG_NONE, 0)], "value missing"),
])
def test_bad_attribute_values(words: list[int], message: str) -> None:
    """Hand-made attribute encodings for tiny_graph's aten op (op 1: target, args, kwargs, table_index)."""
    with pytest.raises(ProgramFormatError, match=message):
        deserialize(with_attr_words(serialize(tiny_graph()), 1, words))


def _field_position(h: Any, where: str, record: int, field: int) -> int:
    start = {
        "header": 0, "tensor": h.tensors_offset + record * h.tensor_record_size,
        "op": h.ops_offset + record * h.op_record_size, "index": h.index_offset + 4 * record,
    }[where]
    return start + field


# tiny_graph: tensors a, w (constant), a_f, b; op 0 dequantize a -> a_f, op 1 aten (a_f, w) -> b;
# index pool: op 0 input, op 0 output, op 1 inputs (2), op 1 output, graph input, graph output.
@pytest.mark.parametrize(("where", "record", "field", "fmt", "value", "message"), [
    ("tensor", 0, 8, "<B", 9, "tensor 0 'a' .*unknown dtype code 9"),
    ("tensor", 0, 9, "<B", 7, "rank 7 is above"),
    ("tensor", 0, 10, "<B", 5, "unknown layout code 5"),
    ("tensor", 0, 11, "<B", 0x12, "unknown flag bits"),
    ("tensor", 0, 20, "<I", 3, "shape words beyond rank 2"),
    ("tensor", 0, 48, "<I", 7, "nbytes 7, but shape"),
    ("tensor", 0, 44, "<I", 10**6, "outside the .*-byte arena"),
    ("tensor", 0, 36, "<f", float("nan"), "scale nan"),
    ("tensor", 0, 36, "<f", -1.0, "scale -1.0"),
    ("tensor", 0, 4, "<I", 1000, "tensor 0 name .*string .* outside"),
    ("tensor", 1, 44, "<I", 8, "tensor 1 'w' .*not 16-byte aligned"),
    ("tensor", 1, 44, "<I", 4096, "outside the .*constants section"),
    ("tensor", 1, 0, "<I", 0, "name 'a' is used by an earlier tensor"),
    ("tensor", 1, 11, "<B", 0, "constant bytes"),
    ("tensor", 2, 36, "<f", 1.0, "scale/zero point set on a tensor without qparams"),
    ("op", 0, 0, "<H", 77, "op 0 .*unknown op kind id 77"),
    ("op", 0, 2, "<B", 9, r"op 0 \(dequantize.*unknown backend code 9"),
    ("op", 0, 8, "<I", 2, "2 inputs, expected 1..1"),
    ("op", 0, 4, "<I", 10**6, "inputs: index-pool entries .* outside"),
    ("op", 0, 20, "<I", 10**6, "attrs words .* outside"),
    ("op", 0, 24, "<I", 0, "value missing"),
    ("op", 0, 32, "<I", 16, r"op 0 \(dequantize.*scratch offset 16 without scratch bytes"),
    ("index", 0, 0, "<i", 99, "op 0 .* input 0: tensor index 99, the file has 4 tensors"),
    ("index", 0, 0, "<i", -1, "tensor index -1"),
    ("index", 1, 0, "<i", 1, "output 'w' is a constant"),
    ("index", 5, 0, "<i", 1, "graph input 'w' is a constant"),
    ("index", 6, 0, "<i", 4, "graph outputs: tensor index 4"),
    ("header", 0, 8, "<I", 130, "header size 130"),
    ("header", 0, 12, "<I", 100, "file size 100"),
    ("header", 0, 24, "<I", 4, "arena"),
    ("header", 0, 28, "<I", 1, "constant bytes 1"),
    ("header", 0, 32, "<I", 130, "tensors section offset 130 is not 4-byte aligned"),
    ("header", 0, 36, "<I", 1000, "tensors section .* is outside the body"),
    ("header", 0, 40, "<I", 50, "tensor record size 50"),
    ("header", 0, 52, "<I", 8, "op record size 8"),
    ("header", 0, 44, "<I", 128, "section overlaps the (ops|tensors) section at byte 128"),
    ("header", 0, 80, "<I", 132, "constants section offset 132 is not 16-byte aligned"),
    ("header", 0, 92, "<I", 1000, "graph inputs: index-pool entries"),
])
def test_structural_errors_name_the_problem(
    where: str, record: int, field: int, fmt: str, value: Any, message: str
) -> None:
    data = serialize(tiny_graph())
    bad = bytearray(data)
    struct.pack_into(fmt, bad, _field_position(read_header(data), where, record, field), value)
    with pytest.raises(ProgramFormatError, match=message):
        deserialize(with_crcs_fixed(bad))


@pytest.mark.parametrize(("offset", "message"), [
    (8, "scratch buffer at arena offset 8 .* not a 16-byte aligned range"),
    (1 << 20, r"scratch buffer at arena offset 1048576 \+ 160 bytes is not a 16-byte aligned range of the "
              r"704-byte arena$"),
    (0, r"scratch buffer \[0, 160\) overlaps tensor 'x'"),
])
def test_bad_scratch_offset_rejected(offset: int, message: str) -> None:
    data = serialize(make_graph())
    h = read_header(data)
    bad = bytearray(data)
    struct.pack_into("<I", bad, h.ops_offset + 32, offset)  # op 0: the conv, 160 scratch bytes
    with pytest.raises(ProgramFormatError, match=r"op 0 \(conv2d_s8, byte \d+\): " + message):
        deserialize(with_crcs_fixed(bad))
