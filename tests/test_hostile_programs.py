"""Hostile program files: each corruption below is rejected by both readers -- the Python reader
with a ProgramFormatError whose message names the problem, the C loader (host build) with the
expected mf_status -- and neither crashes. Truncations, damage to every header field and to every
kind of record (with both CRCs recomputed, so that the structural checks and not the CRCs must catch
it), out-of-range offsets, wrong CRCs, wrong targets and huge sizes. The inputs the fuzzers found
(tests/fuzz_regressions) are replayed here too.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path

import pytest
from test_c_validation import fix_crcs, patch, sample_program

from mcuforge import cruntime
from mcuforge.fuzz import fix_program_crcs, program_one_input, trace_one_input
from mcuforge.program import ProgramFormatError, deserialize, read_header
from mcuforge.program import layout as L
from mcuforge.trace.reader import parse

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"


def flip(data: bytes, offset: int, bit: int = 0, *, fix: bool = True) -> bytes:
    damaged = bytearray(data)
    damaged[offset] ^= 1 << bit
    return fix_crcs(damaged) if fix else bytes(damaged)


def word(data: bytes, offset: int, fmt: str = "<I") -> int:
    return struct.unpack_from(fmt, data, offset)[0]


def cut_with_header_fixed(data: bytes, cut: int) -> bytes:
    """The first ``cut`` bytes, the header's file size and both CRCs rewritten to match them."""
    return fix_crcs(bytearray(patch(data, 12, "<I", cut)[:cut]))


def with_header(data: bytes, offset: int, fmt: str, value) -> bytes:
    """A header field changed, both CRCs recomputed over the (unchanged) sizes of the original."""
    return patch(data, offset, fmt, value)


@functools.cache
def layout() -> dict:
    data = sample_program()
    h = read_header(data)
    names = list(deserialize(data).tensors)
    op_attrs = [struct.unpack_from("<I", data, h.ops_offset + i * h.op_record_size + 20)[0]
                for i in range(h.op_count)]
    return {"h": h, "names": names, "op_attrs": op_attrs}


def tensor_at(name: str, field: int = 0) -> int:
    lay = layout()
    return lay["h"].tensors_offset + lay["names"].index(name) * lay["h"].tensor_record_size + field


def op_at(i: int, field: int = 0) -> int:
    h = layout()["h"]
    return h.ops_offset + i * h.op_record_size + field


def attr_word(op: int, k: int) -> int:
    """File offset of attrs word k of op ``op``."""
    return layout()["h"].attrs_offset + 4 * (layout()["op_attrs"][op] + k)


def index_entry(i: int) -> int:
    return layout()["h"].index_offset + 4 * i


def op_input_entry(op: int, j: int) -> int:
    start = struct.unpack_from("<I", sample_program(), op_at(op, 4))[0]
    return index_entry(start + j)


def op_output_entry(op: int) -> int:
    start = struct.unpack_from("<I", sample_program(), op_at(op, 12))[0]
    return index_entry(start)


def corruptions() -> list[tuple[str, bytes, str, str]]:
    """(what, damaged file, C status, Python message pattern)."""
    data = sample_program()
    h = layout()["h"]
    n = layout()["names"]
    w = n.index("w")
    gelu_str = data.index(b"aten.gelu.default")
    x_name = h.strings_offset + struct.unpack_from("<I", data, tensor_at("x"))[0]
    return [
        # -- truncations --------------------------------------------------------------------------
        ("empty file", b"", "MF_ERR_TRUNCATED", r"truncated: 0 bytes"),
        ("3 bytes of the magic", data[:3], "MF_ERR_TRUNCATED", r"truncated: 3 bytes"),
        ("magic and version only", data[:8], "MF_ERR_TRUNCATED", r"truncated: 8 bytes, the header alone is 128"),
        ("header less one byte", data[:127], "MF_ERR_TRUNCATED", r"truncated: 127 bytes"),
        ("header only", data[:128], "MF_ERR_TRUNCATED",
         rf"truncated: 128 bytes, the header says the file is {len(data)}"),
        ("cut inside the constants", data[:h.constants_offset + 5], "MF_ERR_TRUNCATED", r"the header says the file is"),
        ("last byte missing", data[:-1], "MF_ERR_TRUNCATED", rf"truncated: {len(data) - 1} bytes"),
        ("cut, file size and CRCs rewritten to match", cut_with_header_fixed(data, h.constants_offset),
         "MF_ERR_BOUNDS", r"constants section .* is outside the body"),
        ("trailing bytes", fix_crcs(bytearray(data + bytes(16))), "MF_ERR_FORMAT", r"16 bytes after the"),
        # -- CRCs ---------------------------------------------------------------------------------
        ("payload byte flipped", flip(data, h.constants_offset + 3, fix=False), "MF_ERR_CRC", r"payload CRC mismatch"),
        ("payload CRC field flipped", flip(data, 16, 4, fix=False), "MF_ERR_CRC", r"header CRC mismatch"),
        ("header CRC field flipped", flip(data, L.HEADER_CRC_OFFSET, fix=False), "MF_ERR_CRC", r"header CRC mismatch"),
        ("arena size flipped, CRCs stale", flip(data, 24, 3, fix=False), "MF_ERR_CRC", r"header CRC mismatch"),
        ("wrong payload CRC with a valid header CRC", patch_payload_crc(data), "MF_ERR_CRC", r"payload CRC mismatch"),
        # -- header fields, each with both CRCs recomputed ------------------------------------------
        ("magic", with_header(data, 0, "<4s", b"MCUG"), "MF_ERR_MAGIC", r"not an mcuforge program: magic b'MCUG'"),
        ("major version 4", with_header(data, 4, "<H", 4),
         "MF_ERR_VERSION", r"program format 4\.\d+, this reader supports 2\.x and 3\.x"),
        ("header size not a multiple of 4", with_header(data, 8, "<I", 130),
         "MF_ERR_FORMAT", r"header size 130 \(byte 8\)"),
        ("header size below 128", with_header(data, 8, "<I", 124), "MF_ERR_FORMAT", r"header size 124"),
        ("header size past the sections", with_header(data, 8, "<I", 256),
         "MF_ERR_BOUNDS", r"section \[\d+, \d+\) is outside the body \[256,"),
        ("header size past the end", with_header(data, 8, "<I", len(data) + 4),
         "MF_ERR_TRUNCATED", r"the header alone is"),
        ("file size smaller than the header", with_header(data, 12, "<I", 64),
         "MF_ERR_FORMAT", r"file size 64 \(byte 12\) is smaller"),
        ("file size one more", with_header(data, 12, "<I", len(data) + 1),
         "MF_ERR_TRUNCATED", r"the header says the file is"),
        ("unknown target id", with_header(data, 20, "<H", 99), "MF_ERR_FORMAT", r"unknown target id 99 \(byte 20\)"),
        ("target id 0", with_header(data, 20, "<H", 0), "MF_ERR_FORMAT", r"unknown target id 0"),
        ("isa of another target", with_header(data, 22, "<H", 1),
         "MF_ERR_FORMAT", r"isa id 1 \(byte 22\) does not match target cortex-m55"),
        ("unknown isa", with_header(data, 22, "<H", 0xFFFF), "MF_ERR_FORMAT", r"isa id 65535"),
        ("arena smaller than an activation", with_header(data, 24, "<I", 64),
         "MF_ERR_BOUNDS", r"outside the 64-byte arena"),
        ("constant bytes disagree", with_header(data, 28, "<I", h.constant_bytes + 1),
         "MF_ERR_FORMAT", r"constant bytes \d+ \(byte 28\)"),
        ("tensors offset misaligned", with_header(data, 32, "<I", h.tensors_offset + 2),
         "MF_ERR_FORMAT", r"tensors section offset \d+ is not 4-byte aligned"),
        ("tensors past the end", with_header(data, 32, "<I", h.file_size),
         "MF_ERR_BOUNDS", r"tensors section .* is outside the body"),
        ("huge tensor count", with_header(data, 36, "<I", 0x7FFFFFFF),
         "MF_ERR_BOUNDS", r"tensors section .* is outside the body"),
        ("tensor record size 48", with_header(data, 40, "<I", 48),
         "MF_ERR_FORMAT", r"tensor record size 48 \(byte 40\)"),
        ("ops overlap the tensors", with_header(data, 44, "<I", h.tensors_offset + 4),
         "MF_ERR_FORMAT", r"section overlaps the"),
        ("huge op count", with_header(data, 48, "<I", 0xFFFFFFFF),
         "MF_ERR_BOUNDS", r"ops section .* is outside the body"),
        ("op record size 34", with_header(data, 52, "<I", 34), "MF_ERR_FORMAT", r"op record size 34 \(byte 52\)"),
        ("index pool past the end", with_header(data, 56, "<I", h.file_size - 4),
         "MF_ERR_BOUNDS", r"index pool section"),
        ("huge index count", with_header(data, 60, "<I", 0x40000000), "MF_ERR_BOUNDS", r"index pool section"),
        ("attrs pool misaligned", with_header(data, 64, "<I", h.attrs_offset + 1),
         "MF_ERR_FORMAT", r"attrs pool section offset \d+ is not 4-byte"),
        ("huge attr word count", with_header(data, 68, "<I", 0x3FFFFFFF), "MF_ERR_BOUNDS", r"attrs pool section"),
        ("strings before the header ends", with_header(data, 72, "<I", 64), "MF_ERR_BOUNDS", r"strings section \[64,"),
        ("huge string table", with_header(data, 76, "<I", 0xFFFFFFFF), "MF_ERR_BOUNDS", r"strings section"),
        ("constants 4- but not 16-byte aligned", with_header(data, 80, "<I", h.constants_offset + 4),
         "MF_ERR_FORMAT", r"constants section offset \d+ is not 16-byte aligned"),
        ("huge constants size", with_header(data, 84, "<I", 0xFFFFFFF0), "MF_ERR_BOUNDS", r"constants section"),
        ("graph inputs past the index pool", with_header(data, 88, "<I", 0xFFFFFFF0),
         "MF_ERR_BOUNDS", r"graph inputs: index-pool entries"),
        ("huge graph input count", with_header(data, 92, "<I", 0xFFFFFFFF),
         "MF_ERR_BOUNDS", r"graph inputs: index-pool entries"),
        ("graph outputs past the index pool", with_header(data, 96, "<I", h.index_count),
         "MF_ERR_BOUNDS", r"graph outputs: index-pool entries"),
        ("huge graph output count", with_header(data, 100, "<I", 0x10000),
         "MF_ERR_BOUNDS", r"graph outputs: index-pool entries"),
        # -- tensor records -----------------------------------------------------------------------
        ("name offset out of range", patch(data, tensor_at("x"), "<I", 0xFFFFFFFF),
         "MF_ERR_BOUNDS", r"tensor \d+ name .* outside the"),
        ("name length runs past the table", patch(data, tensor_at("x", 4), "<I", h.string_bytes),
         "MF_ERR_BOUNDS", r"outside the \d+-byte string table"),
        ("empty name", patch(data, tensor_at("x"), "<Q", struct.unpack_from("<I", data, tensor_at("x"))[0] + 1),
         "MF_ERR_FORMAT", r"tensor \d+ '' \(byte \d+\): empty name"),
        ("name without its NUL", patch(data, tensor_at("x", 4), "<I", 2), "MF_ERR_FORMAT", r"is not NUL-terminated"),
        ("name not UTF-8", patch(data, x_name, "<B", 0xFF), "MF_ERR_FORMAT", r"is not UTF-8"),
        ("two tensors with one name", patch(data, tensor_at("c"), "<Q", word(data, tensor_at("f"), "<Q")),
         "MF_ERR_FORMAT", r"name 'f' is used by an earlier tensor"),
        ("unknown dtype", patch(data, tensor_at("x", 8), "<B", 9), "MF_ERR_FORMAT", r"unknown dtype code 9"),
        ("rank 7", patch(data, tensor_at("x", 9), "<B", 7), "MF_ERR_FORMAT", r"rank 7 is above the maximum 6"),
        ("unknown layout", patch(data, tensor_at("x", 10), "<B", 5), "MF_ERR_FORMAT", r"unknown layout code 5"),
        ("unknown flag bit", patch(data, tensor_at("x", 11), "<B", 8), "MF_ERR_FORMAT", r"unknown flag bits 0x08"),
        ("pitched flag without the pitch field", patch(data, tensor_at("x", 11), "<B", 4), "MF_ERR_FORMAT",
         r"pitched flag in a 52-byte tensor record"),
        ("shape word beyond the rank", patch(data, tensor_at("y", 12 + 4 * 5), "<I", 3),
         "MF_ERR_FORMAT", r"shape words beyond rank 2"),
        ("shape product overflows 32 bits", patch(data, tensor_at("f", 12), "<I", 0xFFFFFFFF),
         "MF_ERR_FORMAT", r"more than 2\*\*32 - 1 elements"),
        ("nbytes disagrees with the shape", patch(data, tensor_at("x", 48), "<I", 74),
         "MF_ERR_FORMAT", r"nbytes 74, but shape"),
        ("qparams scale NaN", patch(patch(data, tensor_at("x", 11), "<B", 2), tensor_at("x", 36), "<f", float("nan")),
         "MF_ERR_FORMAT", r"scale nan is not a positive finite number"),
        ("qparams scale negative", patch(patch(data, tensor_at("x", 11), "<B", 2), tensor_at("x", 36), "<f", -0.5),
         "MF_ERR_FORMAT", r"scale -0.5 is not a positive"),
        ("zero point without qparams", patch(data, tensor_at("x", 40), "<i", 3),
         "MF_ERR_FORMAT", r"scale/zero point set on a tensor without qparams"),
        ("constant offset not 16-aligned", patch(data, tensor_at("w", 44), "<I", 8),
         "MF_ERR_FORMAT", r"constant offset 8 is not 16-byte aligned"),
        ("constant past its section", patch(data, tensor_at("w", 44), "<I", -(-h.constants_size // 16) * 16),
         "MF_ERR_BOUNDS", r"outside the \d+-byte constants section"),
        ("activation past the arena", patch(data, tensor_at("x", 44), "<I", h.arena_bytes),
         "MF_ERR_BOUNDS", r"is outside the \d+-byte arena"),
        ("activation offset wraps 32 bits", patch(data, tensor_at("f", 44), "<I", 0xFFFFFFF0),
         "MF_ERR_BOUNDS", r"is outside the \d+-byte arena"),
        ("float activation at an odd offset", patch(data, tensor_at("f", 44), "<I", 1),
         "MF_ERR_FORMAT", r"arena offset 1 is not a multiple of its item size 4"),
        # -- op records ---------------------------------------------------------------------------
        ("unknown op kind", patch(data, op_at(0), "<H", 999),
         "MF_ERR_UNSUPPORTED_OP", r"op 0 \(byte \d+\): unknown op kind id 999"),
        ("unknown backend", patch(data, op_at(0, 2), "<B", 7),
         "MF_ERR_FORMAT", r"op 0 \(conv2d_s8, byte \d+\): unknown backend code 7"),
        ("npu backend on a conv", patch(data, op_at(0, 2), "<B", 2),
         "MF_ERR_FORMAT", r"op 0 \(conv2d_s8\): backend 'npu' on an op that is not a delegate"),
        ("conv with 3 inputs", patch(data, op_at(0, 8), "<I", 3), "MF_ERR_FORMAT", r"3 inputs, expected 4\.\.5"),
        ("op inputs past the index pool", patch(data, op_at(0, 4), "<I", h.index_count),
         "MF_ERR_BOUNDS", r"op 0 .* inputs: index-pool entries"),
        ("huge op output count", patch(data, op_at(5, 16), "<I", 0xFFFFFFFF),
         "MF_ERR_BOUNDS", r"op 5 .* outputs: index-pool entries"),
        ("op attrs past the pool", patch(data, op_at(0, 20), "<I", 0xFFFFFFF0),
         "MF_ERR_BOUNDS", r"attrs words \[\d+, \d+\) are outside the"),
        ("op attrs one word short", patch(data, op_at(0, 24), "<I", word(data, op_at(0, 24)) - 1),
         "MF_ERR_BOUNDS", r"op 0 \(conv2d_s8.*value needs 1 words, only 0 left"),
        ("conv scratch below its kernel's need", patch(data, op_at(0, 28), "<I", 8),
         "MF_ERR_SHAPE", r"op 0 \(conv2d_s8\): scratch_bytes 8 is less than the"),
        # -- index pool ---------------------------------------------------------------------------
        ("op input index out of range", patch(data, op_input_entry(0, 0), "<i", len(n)), "MF_ERR_BOUNDS",
         rf"input 0: tensor index {len(n)}, the file has {len(n)} tensors"),
        ("absent required input", patch(data, op_input_entry(0, 0), "<i", -1),
         "MF_ERR_BOUNDS", r"input 0: tensor index -1"),
        ("op writes a constant", patch(data, op_output_entry(0), "<i", w),
         "MF_ERR_FORMAT", r"op 0 .*: output 'w' is a constant"),
        ("output on its own input's bytes", patch(data, tensor_at("g", 44), "<I", word(data, tensor_at("f", 44))),
         "MF_ERR_FORMAT", r"op 2 \(aten_fp32\): output 'g' .* overlaps 'f'"),
        ("graph input is a constant", patch(data, index_entry(h.inputs_start), "<i", w),
         "MF_ERR_FORMAT", r"graph input 'w' is a constant"),
        ("graph output index negative", patch(data, index_entry(h.outputs_start), "<i", -5),
         "MF_ERR_BOUNDS", r"graph outputs: tensor index -5"),
        # -- attribute values ---------------------------------------------------------------------
        ("typed attribute with another tag", patch(data, attr_word(0, 0), "<I", L.tag_word(L.TAG_FLOAT, 1)),
         "MF_ERR_FORMAT", r"attr 'input_offset': declared 'int' needs tag INT, found tag 3"),
        ("unknown tag", patch(data, attr_word(3, 3), "<I", L.tag_word(42, 1)),
         "MF_ERR_FORMAT", r"unknown value tag 42"),
        ("INTS count beyond the op's words", patch(data, attr_word(0, 4), "<I", L.tag_word(L.TAG_INTS, 0xFFFFFF)),
         "MF_ERR_BOUNDS", r"attr 'stride': value needs 16777215 words"),
        ("INT with count 2", patch(data, attr_word(0, 0), "<I", L.tag_word(L.TAG_INT, 2)),
         "MF_ERR_FORMAT", r"scalar value with count 2"),
        ("STR outside the string table", patch(data, attr_word(3, 1), "<I", 0x7FFFFFFF),
         "MF_ERR_BOUNDS", r"attr 'target'.*outside the"),
        ("TENSOR argument beyond the op's inputs", patch(data, attr_word(3, 6), "<I", 1),
         "MF_ERR_BOUNDS", r"tensor argument 1 but the op has 1 inputs"),
        ("LIST size past the op's words", patch(data, attr_word(3, 4), "<I", 0xFFFF),
         "MF_ERR_BOUNDS", r"attr 'args': value needs 65535 words"),
        ("LIST count beyond its size", patch(data, attr_word(3, 3), "<I", L.tag_word(L.TAG_LIST, 2)),
         "MF_ERR_BOUNDS", r"attr 'args'"),
        ("DICT key not a STR", patch(data, attr_word(3, 9), "<I", L.tag_word(L.TAG_INTS, 2)),
         "MF_ERR_FORMAT", r"DICT key has tag 5, not STR"),
        ("unknown aten target", patch(data, gelu_str, "<17s", b"aten.gelu.defaulx"), "MF_ERR_UNSUPPORTED_OP",
         r"table_index \d+ for 'aten\.gelu\.defaulx', which is at -1: it is not in the C runtime's fp32 table"),
    ]


def patch_payload_crc(data: bytes) -> bytes:
    """The payload CRC field changed and the header CRC recomputed over it: only the payload CRC is wrong."""
    damaged = bytearray(data)
    struct.pack_into("<I", damaged, 16, struct.unpack_from("<I", data, 16)[0] ^ 0x80000000)
    struct.pack_into("<I", damaged, L.HEADER_CRC_OFFSET, L.header_crc(bytes(damaged[:128])))
    return bytes(damaged)


CASES = corruptions()


def test_at_least_forty_distinct_corruptions():
    both = [c for c in CASES if c[3] is not None]
    assert len(both) >= 40 and len({c[0] for c in CASES}) == len(CASES)
    assert len({c[1] for c in CASES}) == len(CASES), "two cases damage the file the same way"
    assert sample_program() not in {c[1] for c in CASES}


def c_load_status(data: bytes) -> str:
    try:
        cruntime.LoadedProgram(data)
    except cruntime.CRuntimeError as err:
        return err.status
    return "MF_OK"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rejected_by_both_readers(case):
    what, damaged, status, message = case
    assert c_load_status(damaged) == status, what
    if message is None:  # beyond the format: only the C runtime knows which aten ops it has
        deserialize(damaged)
        return
    with pytest.raises(ProgramFormatError, match=message):
        deserialize(damaged)


def test_a_runtime_of_another_isa_refuses_the_program(tmp_path):
    """A runtime built for one ISA (here DSP, as on a Cortex-M4) refuses a Cortex-M55 (MVE) program with
    MF_ERR_TARGET; the host tools say so before booting a board."""
    from mcuforge.firmware import FirmwareRunError, check_board_target

    driver = cruntime.build("driver", sanitize=True, extra_flags=("-DMF_ISA=1",))
    program = tmp_path / "p.mfp"
    program.write_bytes(sample_program())
    import subprocess

    done = subprocess.run([str(driver), str(program), str(tmp_path / "out.bin")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 7 and "MF_ERR_TARGET" in done.stderr, done.stderr
    with pytest.raises(FirmwareRunError, match=r"compiled for cortex-m55 \(isa mve\) and cannot run on cortex-m4"):
        check_board_target("cortex-m55", "cortex-m4")


# ---------------------------------------------------------------------------------------------
# What the fuzzers found, replayed: every file in tests/fuzz_regressions, through both readers and
# (program files) the C runtime's whole path under the sanitizers.


def regression_files(prefix: str) -> list[Path]:
    return sorted(REGRESSIONS.glob(f"{prefix}-*"))


def test_regression_files_are_there():
    assert regression_files("c"), "tests/fuzz_regressions holds the C harness's findings"


# Each saved program input and the exact rejection it was saved for: the Python reader's message, the
# C loader's status and failing op. A file that no longer reaches its check (a format change stopping it
# earlier, at the version say) fails here; scripts/fuzz_regressions.py rebuilds it in today's format.
REJECTIONS = {
    "c-concat-output-overlaps-input.bin": (
        r"^op 0 \(concat_s8\): output 'y' \(arena bytes \[0, 256\)\) overlaps 'a' \(\[16, 144\)\): the kernel "
        r"would overwrite what it reads$", "MF_ERR_FORMAT", 0),
}


def c_rejection(data: bytes) -> tuple[str, int | None]:
    try:
        cruntime.LoadedProgram(data)
    except cruntime.CRuntimeError as err:
        return err.status, err.op_index
    return "MF_OK", None


@pytest.mark.parametrize("path", regression_files("c") + regression_files("program"), ids=lambda p: p.name)
def test_fuzz_regression_program(path):
    data = path.read_bytes()
    assert path.name in REJECTIONS, f"say which rejection {path.name} was saved for (REJECTIONS)"
    message, status, op_index = REJECTIONS[path.name]
    program_one_input(data)  # the Python harness's own checks: accepted and re-serializable, or refused
    for variant in (data, fix_program_crcs(data)):  # saved with valid CRCs: recomputing them changes nothing
        with pytest.raises(ProgramFormatError, match=message):
            deserialize(variant)
        assert c_rejection(variant) == (status, op_index)


def tensor_records(data: bytes) -> list[tuple]:
    h = read_header(data)
    return [L.TENSOR.unpack_from(data, h.tensors_offset + i * h.tensor_record_size) for i in range(h.tensor_count)]


def test_concat_regression_is_one_overlap_away_from_valid():
    """The concat regression's only defect is the overlap: input 'a' moved to the arena's free bytes, the
    same file loads in both readers (so nothing before the overlap check stops it)."""
    data = (REGRESSIONS / "c-concat-output-overlaps-input.bin").read_bytes()
    h = read_header(data)
    records = tensor_records(data)
    spans = [(r[-2], r[-2] + r[-1]) for r in records]
    a = 0  # tensors in the writer's order: a, b, y
    taken = [s for i, s in enumerate(spans) if i != a]
    size = spans[a][1] - spans[a][0]
    free = next(lo for lo in range(0, h.arena_bytes - size + 1, 16)
                if all(lo + size <= s_lo or s_hi <= lo for s_lo, s_hi in taken))
    fixed = patch(data, h.tensors_offset + a * h.tensor_record_size + 44, "<I", free)
    graph = deserialize(fixed)
    assert list(graph.tensors)[a] == "a" and [op.kind for op in graph.ops] == ["concat_s8"]
    assert graph.ops[0].inputs == ["a", "b"]
    assert c_rejection(fixed) == ("MF_OK", None)


def format_version_problem(name: str, data: bytes) -> str | None:
    """Why a saved regression input does not carry the current format version (None when it does): a
    program file (c-*, program-*) its header's major.minor, a trace (trace-*) its STREAM_START's."""
    from mcuforge.program import FORMAT_VERSION
    from mcuforge.trace import format as TF

    if name.startswith(("c-", "program-")):
        if data[:4] != b"MCUF" or len(data) < 8:
            return "not a program file (no MCUF magic)"
        found, want = struct.unpack_from("<HH", data, 4), FORMAT_VERSION
    elif name.startswith("trace-"):
        start = TF.FRAME.size + TF.PAYLOADS[TF.STREAM_START].size
        if len(data) < start or data[:2] != TF.SYNC or data[2] != TF.STREAM_START:
            return "does not begin with a STREAM_START record"
        found, want = struct.unpack_from("<HH", data, TF.FRAME.size), TF.VERSION
    else:
        return "unknown kind of input (names begin with c-, program- or trace-)"
    if tuple(found) == tuple(want):
        return None
    return f"format {found[0]}.{found[1]}, the current one is {want[0]}.{want[1]}"


def test_regression_files_carry_the_current_format_version():
    files = sorted(p for p in REGRESSIONS.iterdir() if p.is_file())
    assert files
    problems = {p.name: format_version_problem(p.name, p.read_bytes()) for p in files}
    assert not any(problems.values()), problems


def test_format_version_check_catches_an_old_file():
    """The check above fails on a file of another version (here the concat input written as 1.0, as it was)."""
    data = (REGRESSIONS / "c-concat-output-overlaps-input.bin").read_bytes()
    assert format_version_problem("c-x.bin", data) is None
    old = bytearray(data)
    struct.pack_into("<HH", old, 4, 1, 0)
    assert format_version_problem("c-x.bin", bytes(old)).startswith("format 1.0, the current one is")
    trace = regression_files("trace")[0].read_bytes()
    assert format_version_problem("trace-x.bin", trace) is None
    assert format_version_problem("trace-x.bin", trace[:8] + struct.pack("<HH", 0, 9) + trace[12:]) is not None
    assert format_version_problem("notes.txt", b"") is not None


@pytest.mark.parametrize("path", regression_files("trace"), ids=lambda p: p.name)
def test_fuzz_regression_traces(path):
    """Trace inputs the fuzzer found: the Python harness's checks on each (no run or op that ends before it
    starts, no run read twice)."""
    trace_one_input(path.read_bytes())
    trace = parse(path.read_bytes())
    indices = [r.index for r in trace.runs]
    assert len(indices) == len(set(indices))
