"""Tracing compiled out costs nothing: no trace code in the firmware, no instruction in mf_invoke.

With ``MF_TRACE=0`` (the default) the firmware links no symbol of runtime/trace.c; mf_invoke calls the
op loop, which calls only what running an op needs (mf_call_read, mf_kernel_find, mf_delegate_run and
the kernel through its pointer), and that loop is the same code when tracing is compiled in. Measured
on the board, over a program of many cheap ops: the firmware with tracing compiled in but not asked
for runs within one SysTick period of the one without it, while a traced run costs hundreds of
instructions per op -- the measurement would see a per-op cost.
"""

import re
import subprocess

import numpy as np

from mcuforge import firmware
from mcuforge.firmware.builder import build
from mcuforge.ir import Graph, Op, Tensor
from mcuforge.plan import plan_arena
from mcuforge.program import serialize

TARGET = "cortex-m4"
OPS = 200


def symbols(elf) -> dict[str, int]:
    """Symbol name -> size of every sized symbol of the ELF."""
    out = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    return {m.group(3): int(m.group(1), 16) for m in re.finditer(r"^[0-9a-f]+ ([0-9a-f]+) (\w) (\S+)$", out, re.M)
            if m.group(2) in "tTrRdDbB"}


def disassembly(elf, function: str) -> list[str]:
    """The instructions of ``function`` (or of gcc's clone of it, e.g. run_ops.constprop.0), without
    their addresses and with branch targets by symbol only."""
    dump = subprocess.run(["arm-none-eabi-objdump", "-d", "--no-show-raw-insn", str(elf)], capture_output=True,
                          text=True, check=True).stdout
    body = re.search(rf"^[0-9a-f]+ <{function}(?:\.\w+\.\d+)?>:\n(.*?)\n\n", dump, re.M | re.S).group(1)
    lines = [line.split("\t", 1)[1] for line in body.splitlines() if "\t" in line]
    return [re.sub(r"[0-9a-f]+ <([\w.]+?)(?:\+0x[0-9a-f]+)?>", r"<\1>", line) for line in lines]


def calls_of(elf, function: str) -> set[str]:
    """The functions ``function`` calls directly (bl / b to a symbol)."""
    targets = [m for line in disassembly(elf, function) for m in re.findall(r"\bbl?(?:\.w)?\s+<([\w.]+)>", line)]
    calls = {name.split(".")[0] for name in targets}
    return calls - {function}


def test_compiled_out_tracing_leaves_no_code():
    plain, traced = symbols(build(TARGET, trace=False)), symbols(build(TARGET, trace=True))
    trace_code = {"mf_trace_begin", "mf_trace_end", "mf_trace_run_start", "mf_trace_run_end", "mf_trace_op",
                  "alloc_record", "record"}
    assert trace_code <= set(traced)  # the check can fail: compiled in, they are there
    assert not trace_code & set(plain) and not [s for s in plain if "trace" in s]
    assert plain["mf_invoke"] < traced["mf_invoke"]
    plain_elf, traced_elf = build(TARGET, trace=False), build(TARGET, trace=True)
    assert calls_of(plain_elf, "mf_invoke") == {"run_ops"}
    assert calls_of(traced_elf, "mf_invoke") == {"run_ops", "run_ops_traced"}  # the check can fail
    assert calls_of(plain_elf, "run_ops") == {"mf_call_read", "mf_kernel_find", "mf_delegate_run"}
    # The untraced op loop is the same code in both builds.
    assert disassembly(plain_elf, "run_ops") == disassembly(traced_elf, "run_ops")


def clamp_chain(n: int) -> bytes:
    tensors = {f"t{i}": Tensor(f"t{i}", (1, 16), "int8") for i in range(n + 1)}
    ops = [Op("clamp_s8", [f"t{i}"], [f"t{i + 1}"], {"act_min": -100 + i % 50, "act_max": 100}) for i in range(n)]
    graph = Graph(tensors, ops, ["t0"], [f"t{n}"], target=TARGET)
    plan_arena(graph)
    return serialize(graph)


def test_an_untraced_invoke_costs_the_same_with_tracing_compiled_in_or_out():
    program, x = clamp_chain(OPS), [np.arange(16, dtype=np.int8).reshape(1, 16)]
    out, _, plain = firmware.run_on_qemu(program, x, TARGET)
    out_in, _, compiled_in = firmware.run_on_qemu(program, x, TARGET, trace_compiled_in=True)
    out_traced, _, traced = firmware.run_on_qemu(program, x, TARGET, trace=True)
    np.testing.assert_array_equal(out[0], out_in[0])
    np.testing.assert_array_equal(out[0], out_traced[0])
    tick = plain["instruction_resolution"]
    # the same code: the same count but for the phase of the SysTick count (where the loop sits in the image)
    assert abs(compiled_in["instructions"] - plain["instructions"]) <= tick
    assert traced["instructions"] > plain["instructions"] + 100 * OPS  # a per-op cost would show
