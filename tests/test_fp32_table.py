"""The fp32 op table is closed: an aten op the compiler can emit as fp32 has a C kernel (and a Python
one); any other aten op is a compile error naming the module and the op. MACs are counted for every op,
whatever its backend, and `mcuforge info` reports the share on int8 kernels."""

import ctypes
import re
import struct
import warnings
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from test_c_validation import fix_crcs
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import mcuforge
from mcuforge import cruntime
from mcuforge.cli import main
from mcuforge.lower import LoweringError, fallback
from mcuforge.program import ProgramFormatError, deserialize, read_header, serialize
from mcuforge.runtime.fp32 import resolve_aten

from conftest import compiled

ATEN_LIST = (cruntime.CSRC / "kernels" / "fp32" / "aten_list.h").read_text()
REGISTERED = set(re.findall(r"^MF_ATEN\((\w+)\)", ATEN_LIST, re.M))


def c_runtime_has(name: str) -> bool:
    """Ask the built C runtime itself: its dispatch table (runtime/registry.c, generated from
    aten_list.h) finds a kernel for the aten op ``name``."""
    find = cruntime.load_library().mf_aten_find
    find.restype = ctypes.c_void_p
    find.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
    return find(name.encode(), len(name)) is not None


def test_fp32_table_is_what_the_c_runtime_registers():
    table = fallback.fp32_op_table()
    assert len(table) >= 80  # what the C runtime implements today; it only grows
    assert len(REGISTERED) == len(table)  # one aten_list.h line per op of the table
    assert not c_runtime_has("aten.cumsum.default")  # the check can fail


def c_table_entry(index: int) -> str | None:
    """The aten name of entry ``index`` of the built C runtime's dispatch table (``mf_aten_at``)."""
    at = cruntime.load_library().mf_aten_at
    at.restype = ctypes.c_void_p
    at.argtypes = [ctypes.c_int32]
    entry = at(index)
    return None if entry is None else ctypes.cast(entry, ctypes.POINTER(ctypes.c_char_p)).contents.value.decode()


def test_the_compiler_dispatch_index_is_the_c_table_position():
    """An aten_fp32 op stores table_index = the position of its name in the sorted table; the C runtime
    dispatches by it, so its table must be in exactly that order (aten_list.h sorted by aten name)."""
    table = cruntime.c_aten_table()
    assert list(table) == sorted(table) and len(table) == len(REGISTERED)
    assert [c_table_entry(i) for i in range(len(table))] == list(table)
    assert c_table_entry(-1) is None and c_table_entry(len(table)) is None
    assert [cruntime.aten_table_index(n) for n in table] == list(range(len(table)))
    assert cruntime.aten_table_index("aten.cumsum.default") == -1


def test_a_wrong_table_index_is_refused_by_both_readers():
    _model, example, prog = compiled("custom_fallback")
    i, op = next((i, op) for i, op in enumerate(prog.graph.ops) if op.kind == "aten_fp32")
    index = op.attrs["table_index"]
    assert index == cruntime.c_aten_table().index(op.attrs["target"])
    data = prog.to_bytes()
    other = (index + 1) % len(cruntime.c_aten_table())  # a valid entry, of another aten op
    wrong = replace(op, attrs={**op.attrs, "table_index": other})
    graph = replace(prog.graph, ops=[wrong if j == i else o for j, o in enumerate(prog.graph.ops)])
    with pytest.raises(ValueError, match=rf"op {i} \(aten_fp32\): table_index {other} for '{op.attrs['target']}'"):
        serialize(graph)
    # The same damage in a file: the value of table_index is the op's last attribute word.
    h = read_header(data)
    attrs_start, attr_words = struct.unpack_from("<II", data, h.ops_offset + i * h.op_record_size + 20)
    pos = h.attrs_offset + 4 * (attrs_start + attr_words - 1)
    assert struct.unpack_from("<i", data, pos)[0] == index
    bad = bytearray(data)
    struct.pack_into("<i", bad, pos, other)
    bad = fix_crcs(bad)
    with pytest.raises(ProgramFormatError, match=rf"op {i} \(aten_fp32, byte \d+\): table_index {other}"):
        deserialize(bad)
    with pytest.raises(cruntime.CRuntimeError, match="MF_ERR_UNSUPPORTED_OP") as err:
        cruntime.LoadedProgram(bad)
    assert err.value.op_index == i


@pytest.mark.parametrize("name", sorted(fallback.fp32_op_table()))
def test_every_fp32_table_op_has_a_python_and_a_c_kernel(name):
    # the host runtime computes it as the C kernel (runtime/fp32_exact.py) or calls the aten op itself
    assert isinstance(resolve_aten(name), torch._ops.OpOverload)
    assert c_runtime_has(name)


class Outer(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(3, 4, 1), inner)

    def forward(self, x):
        return self.block(x)


class CumSum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


class DynamicConv(nn.Module):
    def forward(self, x):
        return F.conv2d(x, x[:, :, :2, :2].expand(2, -1, -1, -1))  # weights computed from the input: fp32


@pytest.mark.parametrize("inner,aten", [(CumSum(), "aten.cumsum.default"), (DynamicConv(), "aten.conv2d.default")],
                         ids=["cumsum", "dynamic-conv"])
def test_an_op_outside_the_table_is_a_compile_error_naming_module_and_op(inner, aten):
    x = torch.randn(1, 3, 4, 4)
    with pytest.raises(LoweringError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mcuforge.compile(Outer(inner).eval(), (x,), calibration=[(x,)], progress=False)
    message = str(err.value)
    assert "\n" not in message
    assert "module 'block.1'" in message and aten in message and "no fp32 kernel" in message
    assert "aten_list.h" in message  # and what to do about it


def test_no_compiled_program_holds_an_op_without_a_c_kernel():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.norm = nn.GroupNorm(2, 8)

        def forward(self, x):
            y = self.norm(self.conv(x)).transpose(1, 3)  # fp32 island: group_norm, a transpose
            return torch.exp(y).flatten(1)

    x = torch.randn(1, 3, 6, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(Net().eval(), (x,), calibration=[(torch.randn(1, 3, 6, 6),)], progress=False)
    assert cruntime.ops_without_c_kernel(prog.graph) == []
    fp32 = [op for op in prog.ops if op.backend == "fp32"]
    assert {op.attrs["target"] for op in prog.graph.ops if op.kind == "aten_fp32"} >= {"aten.group_norm.default",
                                                                                      "aten.exp.default"}
    assert fp32 and all(op.reason for op in fp32), [(op.kind, op.aten) for op in fp32 if not op.reason]
    for a, b in zip(prog.run_raw(x), prog.run_raw(x, backend="c"), strict=True):
        assert a.tobytes() == b.tobytes() or abs(a - b).max() <= 1e-5


class DynamicWeights(nn.Module):
    """A conv and a linear layer in fp32 (weights from the second input) beside int8 ones."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 5)

    def forward(self, x, w):
        y = self.conv(x)  # int8
        z = F.conv2d(y, w)  # fp32: 8 -> 4 channels, 3x3
        return self.fc(y.mean((2, 3))), F.linear(z.flatten(1), w.flatten(1)[:, :64])


def test_macs_are_counted_for_fp32_ops_too_and_info_reports_the_int8_share(monkeypatch, tmp_path, capsys):
    # As if the C runtime had fp32 conv and linear kernels: the fp32 ops then compile, and their MACs count.
    table = fallback.fp32_op_table() | {"aten.conv2d.default", "aten.linear.default", "aten.slice.Tensor"}
    monkeypatch.setattr(fallback, "fp32_op_table", lambda: table)
    model = DynamicWeights().eval()
    example = (torch.randn(1, 3, 8, 8), torch.randn(4, 8, 3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, calibration=[example], progress=False)
    with FlopCounterMode(display=False) as counter:
        model(*example)
    total = counter.get_total_flops() // 2  # counted by torch, independently of mcuforge
    assert sum(op.macs for op in prog.ops) == total
    fp32_macs = sum(op.macs for op in prog.ops if op.backend == "fp32")
    assert fp32_macs == 4 * 8 * 9 * 4 * 4 + 4 * 64  # the fp32 conv (4x4 output) and linear
    assert prog.int8_mac_share == pytest.approx(1 - fp32_macs / total)
    assert main(["info", str(prog.save(tmp_path / "dyn.mfp"))]) == 0
    out = capsys.readouterr().out
    assert f"MACs on int8    {prog.int8_mac_share:.1%} ({total - fp32_macs:,} of {total:,}" in out
