"""Damaged program files are rejected by the C loader with an error code, never a crash -- also
under AddressSanitizer and UBSan (a standalone driver built with -fsanitize=address,undefined).

Damage: truncation at every section boundary, random byte flips with both CRCs recomputed (so the
structural checks, not the CRCs, must catch them), and targeted out-of-range offsets, counts and
indices. The C loader must be at least as strict as the Python reader.
"""

from __future__ import annotations

import functools
import os
import struct
import subprocess
import zlib

import numpy as np
import pytest

from mcuforge import cruntime
from mcuforge.ir import Graph, Op, Tensor, TensorRef, kernel_scratch_bytes
from mcuforge.lower.fallback import aten_fp32_attrs
from mcuforge.plan import plan_arena
from mcuforge.program import ProgramFormatError, deserialize, read_header, serialize, writer
from mcuforge.program.layout import HEADER_CRC_OFFSET, header_crc
from mcuforge.runtime import execute
from mcuforge.trace import HostTraceRecorder, Trace

OP = struct.Struct("<HBB7I")
TENSOR = struct.Struct("<IIBBBB6IfiII")
KERNEL_LEVEL = {"MF_ERR_SHAPE", "MF_ERR_UNSUPPORTED_OP", "MF_ERR_FORMAT"}


@functools.cache
def sample_program() -> bytes:
    """Small, but every section and value kind: constants, an optional input, nested LIST and DICT
    attribute values, strings, int8 and fp32 ops."""
    rng = np.random.default_rng(0)
    t = {
        "x": Tensor("x", (1, 5, 5, 3), "int8"),
        "w": Tensor("w", (4, 3, 3, 3), "int8", data=rng.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8)),
        "b": Tensor("b", (4,), "int32", data=rng.integers(-999, 999, 4).astype(np.int32)),
        "m": Tensor("m", (4,), "int32", data=np.full(4, 1 << 30, np.int32)),
        "s": Tensor("s", (4,), "int8", data=np.full(4, -7, np.int8)),
        "c": Tensor("c", (1, 5, 5, 4), "int8"),
        "f": Tensor("f", (1, 5, 5, 4), "float32"),
        "g": Tensor("g", (1, 5, 5, 8), "float32"),
        "h": Tensor("h", (1, 5, 5, 8), "float32"),
        "q": Tensor("q", (1, 5, 5, 8), "int8"),
        "y": Tensor("y", (1, 200), "int8"),
    }
    ops = [
        Op("conv2d_s8", ["x", "w", "b", "m", "s"], ["c"],
           {"input_offset": 3, "output_offset": -2, "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
            "act_min": -128, "act_max": 127},
           scratch_bytes=kernel_scratch_bytes("conv2d_s8", (4, 3, 3, 3), "cortex-m55")),
        Op("dequantize", ["c"], ["f"], {"scale": 0.05, "zero_point": -2}),
        Op("aten_fp32", ["f"], ["g"], aten_fp32_attrs("aten.cat.default", [[TensorRef(0), TensorRef(0)], -1], {}),
           backend="fp32"),
        Op("aten_fp32", ["g"], ["h"], aten_fp32_attrs("aten.gelu.default", [TensorRef(0)], {"approximate": "tanh"}),
           backend="fp32"),
        Op("quantize", ["h"], ["q"], {"scale": 0.04, "zero_point": -20}),
        Op("reshape", ["q"], ["y"], {}),
    ]
    graph = Graph(t, ops, ["x"], ["y"], target="cortex-m55")
    plan_arena(graph)
    return serialize(graph)


def sample_input() -> list[np.ndarray]:
    return [np.random.default_rng(1).integers(-128, 128, (1, 5, 5, 3), dtype=np.int8)]


def fix_crcs(data: bytearray) -> bytes:
    """Recompute the payload CRC and then the header CRC (using the header's own sizes if sane)."""
    header_size = struct.unpack_from("<I", data, 8)[0]
    if not 128 <= header_size <= len(data):
        header_size = 128
    file_size = struct.unpack_from("<I", data, 12)[0]
    struct.pack_into("<I", data, 16, zlib.crc32(bytes(data[header_size:max(file_size, header_size)])))
    struct.pack_into("<I", data, HEADER_CRC_OFFSET, header_crc(bytes(data[:header_size])))
    return bytes(data)


def c_status(data: bytes) -> str:
    """'MF_OK' if the C runtime loads and runs the program, else the status name."""
    try:
        cruntime.run_program(data, sample_input())
    except cruntime.CRuntimeError as err:
        return err.status
    except ValueError:  # the input no longer fits the (damaged) declared input
        loaded = cruntime.LoadedProgram(data)  # loading succeeded: run with inputs of its own shape
        values = [np.zeros(i.shape_tuple, cruntime._DTYPES[i.dtype]) for i in loaded.inputs]
        try:
            loaded.run(values)
        except cruntime.CRuntimeError as err:
            return err.status
    return "MF_OK"


def python_accepts(data: bytes) -> bool:
    try:
        deserialize(data)
    except ProgramFormatError:
        return False
    return True


def test_sample_program_runs_bit_exact():
    data = sample_program()
    expected = execute(deserialize(data), sample_input())
    got, stream = cruntime.run_program(data, sample_input(), trace="full")
    assert len(got) == len(expected) == 1
    assert got[0].dtype == expected[0].dtype and got[0].shape == expected[0].shape
    assert got[0].tobytes() == expected[0].tobytes()
    # Why exact holds: every op's output is the same bytes, the fp32 gelu's included (the host runtime
    # computes it with the C runtime's mf_math: runtime/fp32_exact.py).
    graph = deserialize(data)
    recorder = HostTraceRecorder(graph, data, full=True)
    execute(graph, sample_input(), recorder)
    board, host = Trace.from_bytes(stream), Trace.from_bytes(recorder.finish())
    assert [t.op_index for t in board.tensors] == [t.op_index for t in host.tensors] == list(range(len(graph.ops)))
    assert any(op.attrs.get("target") == "aten.gelu.default" for op in graph.ops)
    for c_out, py_out in zip(board.tensors, host.tensors, strict=True):
        assert c_out.data == py_out.data, f"op {c_out.op_index} ({graph.ops[c_out.op_index].kind})"


def section_boundaries(data: bytes) -> list[int]:
    h = read_header(data)
    sections = [(h.tensors_offset, h.tensor_count * h.tensor_record_size),
                (h.ops_offset, h.op_count * h.op_record_size),
                (h.index_offset, 4 * h.index_count), (h.attrs_offset, 4 * h.attr_word_count),
                (h.strings_offset, h.string_bytes), (h.constants_offset, h.constants_size)]
    cuts = {0, 1, 3, 4, 7, 8, 127, 128, 129, len(data) - 1}
    for offset, size in sections:
        cuts |= {offset - 1, offset, offset + 1, offset + size - 1, offset + size}
    return sorted(c for c in cuts if 0 <= c < len(data))


def test_truncation_at_every_section_boundary():
    data = sample_program()
    for cut in section_boundaries(data):
        assert c_status(data[:cut]) == "MF_ERR_TRUNCATED", f"cut at {cut}"
        # The same cut with the header's file size and CRCs rewritten to match: now the section
        # bounds must catch it.
        if cut >= 128:
            patched = bytearray(data[:cut])
            struct.pack_into("<I", patched, 12, cut)
            patched = fix_crcs(patched)
            status = c_status(patched)
            assert status != "MF_OK", f"cut at {cut} with fixed header accepted"
            assert not python_accepts(patched)


def test_random_byte_flips_with_crcs_recomputed():
    data = sample_program()
    rng = np.random.default_rng(2)
    counts = {"rejected": 0, "accepted": 0}
    for trial in range(400):
        damaged = bytearray(data)
        for _ in range(int(rng.integers(1, 3))):
            pos = int(rng.integers(0, len(data)))
            if pos in range(16, 20) or pos in range(HEADER_CRC_OFFSET, HEADER_CRC_OFFSET + 4):
                continue
            damaged[pos] ^= 1 << int(rng.integers(0, 8))
        damaged = fix_crcs(damaged)
        status = c_status(damaged)
        if not python_accepts(damaged):
            assert status != "MF_OK", f"trial {trial}: the Python reader rejects, the C loader accepted"
        elif status != "MF_OK":
            # Stricter than the format: kernel-level checks (shapes, parameter ranges, alignment)
            assert status in KERNEL_LEVEL, f"trial {trial}: {status}"
        counts["accepted" if status == "MF_OK" else "rejected"] += 1
    assert counts["rejected"] > 100  # most flips hit structure; the rest hit data and run fine


def patch(data: bytes, offset: int, fmt: str, value) -> bytes:
    damaged = bytearray(data)
    struct.pack_into(fmt, damaged, offset, value)
    return fix_crcs(damaged)


def targeted_damage() -> list[tuple[str, bytes, str]]:
    data = sample_program()
    h = read_header(data)
    tensor = lambda i: h.tensors_offset + i * h.tensor_record_size  # noqa: E731
    op = lambda i: h.ops_offset + i * h.op_record_size  # noqa: E731
    names = list(deserialize(data).tensors)
    x, w, f = names.index("x"), names.index("w"), names.index("f")
    conv_attrs = struct.unpack_from("<7I", data, op(0) + 4)[4]
    scratch = struct.unpack_from("<I", data, op(0) + 32)[0]
    x_offset = struct.unpack_from("<I", data, tensor(x) + 44)[0]
    gelu_target = data.index(b"aten.gelu.default")
    return [
        ("version 4.0", patch(data, 4, "<H", 4), "MF_ERR_VERSION"),
        ("version 1.0", patch(data, 4, "<H", 1), "MF_ERR_VERSION"),
        ("magic", patch(data, 0, "<4s", b"MCUX"), "MF_ERR_MAGIC"),
        ("unknown target", patch(data, 20, "<H", 99), "MF_ERR_FORMAT"),
        ("isa of another target", patch(data, 22, "<H", 1), "MF_ERR_FORMAT"),
        ("tensors past the end", patch(data, 32, "<I", h.file_size), "MF_ERR_BOUNDS"),
        ("huge tensor count", patch(data, 36, "<I", 0x7FFFFFFF), "MF_ERR_BOUNDS"),
        ("huge op count", patch(data, 48, "<I", 0xFFFFFFFF), "MF_ERR_BOUNDS"),
        ("misaligned constants", patch(data, 80, "<I", h.constants_offset + 4), "MF_ERR_FORMAT"),
        ("graph input index out of range", patch(data, 88, "<I", 0xFFFFFFF0), "MF_ERR_BOUNDS"),
        ("activation past the arena", patch(data, tensor(x) + 44, "<I", h.arena_bytes), "MF_ERR_BOUNDS"),
        ("constant past its section", patch(data, tensor(w) + 44, "<I", -(-h.constants_size // 16) * 16),
         "MF_ERR_BOUNDS"),
        ("name offset out of range", patch(data, tensor(x), "<I", 0xFFFFFFFF), "MF_ERR_BOUNDS"),
        ("rank 7", patch(data, tensor(x) + 9, "<B", 7), "MF_ERR_FORMAT"),
        ("shape product overflows", patch(data, tensor(f) + 12, "<I", 0xFFFFFFFF), "MF_ERR_FORMAT"),
        ("nbytes disagrees", patch(data, tensor(x) + 48, "<I", 1), "MF_ERR_FORMAT"),
        ("unknown dtype", patch(data, tensor(x) + 8, "<B", 9), "MF_ERR_FORMAT"),
        ("op inputs past the index pool", patch(data, op(0) + 4, "<I", h.index_count), "MF_ERR_BOUNDS"),
        ("op input index out of range", patch(data, h.index_offset, "<i", len(names)), "MF_ERR_BOUNDS"),
        ("absent non-optional input", patch(data, h.index_offset, "<i", -1), "MF_ERR_BOUNDS"),
        ("op attrs past the pool", patch(data, op(0) + 20, "<I", 0xFFFFFFF0), "MF_ERR_BOUNDS"),
        ("INTS count beyond the words", patch(data, h.attrs_offset + 4 * (conv_attrs + 4), "<I", 5 | 0xFFFFFF << 8),
         "MF_ERR_BOUNDS"),
        ("typed attribute with another tag", patch(data, h.attrs_offset + 4 * conv_attrs, "<I", 3 | 1 << 8),
         "MF_ERR_FORMAT"),
        ("unknown op kind", patch(data, op(0), "<H", 999), "MF_ERR_UNSUPPORTED_OP"),
        ("unknown aten op", patch(data, gelu_target, "<17s", b"aten.gelu.defaulx"), "MF_ERR_UNSUPPORTED_OP"),
        ("stride 0", patch(data, h.attrs_offset + 4 * (conv_attrs + 5), "<i", 0), "MF_ERR_SHAPE"),
        ("misaligned scratch", patch(data, op(0) + 32, "<I", scratch + 8), "MF_ERR_FORMAT"),
        ("scratch past the arena", patch(data, op(0) + 32, "<I", h.arena_bytes - 16), "MF_ERR_BOUNDS"),
        ("scratch over the op's input", patch(data, op(0) + 32, "<I", x_offset), "MF_ERR_FORMAT"),
        ("scratch offset without scratch", patch(data, op(1) + 32, "<I", 16), "MF_ERR_FORMAT"),
        ("trailing bytes", fix_crcs(bytearray(data + b"\0" * 4)), "MF_ERR_FORMAT"),
    ]


@pytest.mark.parametrize("case", range(len(targeted_damage())), ids=[c[0] for c in targeted_damage()])
def test_targeted_damage_gives_the_right_error(case):
    what, damaged, expected = targeted_damage()[case]
    assert c_status(damaged) == expected, what
    if expected not in KERNEL_LEVEL:
        assert not python_accepts(damaged), what


def test_both_readers_take_a_2x_file_as_it_is():
    """3.0 is 2.0's layout plus the s4 kinds' compact parameters, which a 2.x file does not hold."""
    data = sample_program()
    old = patch(data, 4, "<H", 2)
    assert c_status(data) == c_status(old) == "MF_OK" and python_accepts(old)


def test_unknown_aten_op_error_names_the_op():
    _what, damaged, _expected = next(c for c in targeted_damage() if c[0] == "unknown aten op")
    with pytest.raises(cruntime.CRuntimeError, match=r"at op 3 \(aten_fp32\)") as err:
        cruntime.run_program(damaged, sample_input())
    assert err.value.op_index == 3


# ---------------------------------------------------------------------------------------------
# The same under AddressSanitizer + UBSan, in a standalone driver process
# ---------------------------------------------------------------------------------------------


@functools.cache
def sanitized_driver() -> str:
    """The mf_run driver built with -fsanitize=address,undefined (a build failure fails the test)."""
    return str(cruntime.build("driver", sanitize=True))


def run_driver(tmp_path, data: bytes, inputs: list[np.ndarray]) -> tuple[int, str, bytes]:
    driver = sanitized_driver()
    program = tmp_path / "p.mcuf"
    program.write_bytes(data)
    args = [driver, str(program), str(tmp_path / "out.bin")]
    for i, value in enumerate(inputs):
        path = tmp_path / f"in{i}.bin"
        path.write_bytes(value.tobytes())
        args.append(str(path))
    env = {**os.environ, "ASAN_OPTIONS": "exitcode=99:detect_leaks=1",
           "UBSAN_OPTIONS": "halt_on_error=1:exitcode=98:print_stacktrace=1"}
    result = subprocess.run(args, capture_output=True, env=env, timeout=60)
    out = (tmp_path / "out.bin").read_bytes() if (tmp_path / "out.bin").exists() else b""
    return result.returncode, result.stderr.decode(errors="replace"), out


def test_sanitizers_valid_program_and_damaged_files(tmp_path):
    data = sample_program()
    code, err, out = run_driver(tmp_path, data, sample_input())
    assert code == 0, err
    expected, _ = cruntime.run_program(data, sample_input())
    assert out == expected[0].tobytes()
    damaged = [d for _w, d, _e in targeted_damage()]
    damaged += [data[:cut] for cut in section_boundaries(data)[::2]]
    rng = np.random.default_rng(3)
    for _ in range(60):
        flipped = bytearray(data)
        flipped[int(rng.integers(0, len(data)))] ^= 1 << int(rng.integers(0, 8))
        damaged.append(fix_crcs(flipped))
    for i, d in enumerate(damaged):
        (tmp_path / "out.bin").unlink(missing_ok=True)
        code, err, _out = run_driver(tmp_path, d, sample_input())
        assert "Sanitizer" not in err and "runtime error" not in err, f"file {i}:\n{err}"
        assert 0 <= code <= 12, f"file {i}: exit {code}\n{err}"


def test_int32_shifts_are_rejected_by_both_readers(monkeypatch):
    """Format 2.0 stores requantization shifts as int8; a file with int32 shifts (1.0's form, written
    here with the writer's check switched off) is an error for both readers, not a misread."""
    monkeypatch.setattr(writer, "shifts_problem", lambda op, tensors: None)
    g = deserialize(sample_program())
    g.tensors["s"].dtype, g.tensors["s"].data = "int32", g.tensors["s"].data.astype(np.int32)
    data = serialize(g)
    with pytest.raises(ProgramFormatError, match=r"op 0 \(conv2d_s8, byte \d+\): shifts 's' must be an int8 constant"):
        deserialize(data)
    assert c_status(data) == "MF_ERR_SHAPE"
