"""Estimated cycles (mcuforge.cycles): the plugin's counts, the classifier, the timing tables.

The central check is a synthetic firmware of known instruction mix (back-to-back loads, a store, MACs,
taken and untaken branches, a divide, LDRD, PUSH/POP {pc}), assembled with arm-none-eabi-gcc and run
on the Cortex-M4 board through the plugin: its estimated cycles must be exactly what the Cortex-M4
tables (docs/cycles.md) give by hand, block by block.
"""

import json
import re
import subprocess

import numpy as np
import pytest

from mcuforge.cycles import get_core, isa, plugin
from mcuforge.cycles import run as cycle_run
from mcuforge.cycles.estimate import block_costs, span
from mcuforge.cycles.isa import decode
from mcuforge.cycles.model import ZERO_WAIT, Memory
from mcuforge.cycles.v7m import M3_CYCLES, M4_CYCLES, insn_cycles
from mcuforge.firmware import toolchain
from mcuforge.firmware.boards import get_board

TARGET = "cortex-m4"

# The kernel between the two marks. Blocks as QEMU translates them (a block ends at a branch):
#   B1 kernel: push .. bne (first loop iteration)   B2 loop: ldr .. bne (3 more iterations)
#   B3 after the loop: movs .. cbz                   B4 skip: pop {.., pc}    B5 main: bl done
SYNTHETIC = r"""
    .syntax unified
    .cpu cortex-m4
    .thumb
    .section .vectors, "a"
    .word 0x21010000
    .word reset + 1
    .text
    .thumb_func
reset:
    bl kernel
    bl done
    movs r0, #0x18
    ldr r1, =0x20026
    bkpt 0xab
    .thumb_func
    .global kernel
kernel:
    push {r4-r9, lr}
    movs r0, #4
    ldr r1, =buf
    movs r6, #0
    movs r7, #0
loop:
    ldr r2, [r1]
    ldr r3, [r1, #4]
    add r5, r2, r3
    mla r6, r2, r3, r6
    smlad r7, r2, r3, r7
    str r5, [r1, #8]
    subs r0, #1
    bne loop
    movs r4, #7
    udiv r8, r6, r4
    add r9, r1, #4
    ldr r2, [r9]
    ldrd r2, r3, [r1]
    cbz r0, skip
    nop
skip:
    pop {r4-r9, pc}
    .thumb_func
    .global done
done:
    bx lr
    .ltorg
    .data
buf:
    .word 3, 5, 0, 0
"""

P = 2  # the Cortex-M4 model's pipeline refill
LOOP_BODY = 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1  # ldr, ldr (pipelined), add, mla, smlad, str #imm, subs, bne
B1 = 8 + 1 + 2 + 1 + 1 + LOOP_BODY  # push 7 regs (1+N), movs, ldr literal, movs, movs, first iteration
B2 = LOOP_BODY
B3 = 1 + 7 + 1 + (2 + 1) + 3 + 1  # movs, udiv (7), add, ldr stalled on add's r9, ldrd, cbz
B4 = 8  # pop 7 registers (1+N)
B5 = 1  # bl
EXPECTED = {  # block: (executions, taken exits, cycles)
    "B1": (1, 1, B1 + P), "B2": (3, 2, 3 * B2 + 2 * P), "B3": (1, 1, B3 + P), "B4": (1, 1, B4 + P),
    "B5": (1, 1, B5 + P),
}
EXPECTED_CYCLES = sum(c for _, _, c in EXPECTED.values())  # 86
EXPECTED_INSTRUCTIONS = 13 + 3 * 8 + 6 + 1 + 1


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    gcc = toolchain.require("arm-none-eabi-gcc")  # the project's toolchain: missing, the test fails with the hint
    folder = tmp_path_factory.mktemp("synthetic")
    (folder / "s.S").write_text(SYNTHETIC)
    elf = folder / "s.elf"
    board = get_board(TARGET)
    subprocess.run([gcc, "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-nostartfiles", f"-Ttext={board.code + 0x400:#x}",
                    f"-Tdata={board.ram:#x}", "-Wl,--section-start=.vectors=0", "-o", str(elf), str(folder / "s.S")],
                   check=True, capture_output=True)
    marks = [isa.symbol_address(elf, "kernel"), isa.symbol_address(elf, "done")]
    done, counts = plugin.run_qemu(TARGET, elf, folder, marks, timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return elf, counts, marks


def test_the_synthetic_kernel_costs_exactly_what_the_m4_tables_say(synthetic):
    elf, counts, (kernel, done) = synthetic
    segs = [s for s in counts.segments if s.mark == kernel]
    assert len(segs) == 1 and counts.segments[-1].mark == done
    costs = block_costs(counts, elf, TARGET, get_core(TARGET))
    got = span(segs, costs, mix=True)
    assert got.instructions == EXPECTED_INSTRUCTIONS
    assert got.taken_branches == sum(t for _, t, _ in EXPECTED.values())
    per_block = sorted((runs, taken, runs * costs[b].fall_through + taken * costs[b].taken_extra)
                       for b, (runs, taken) in segs[0].counts.items())
    assert per_block == sorted(EXPECTED.values())
    assert got.cycles == EXPECTED_CYCLES == 86
    assert got.mix["div"] == 1 and got.mix["load_d"] == 1 and got.mix["mla"] == 8 and got.mix["load"] == 10


def test_the_synthetic_kernel_on_other_cores_tables(synthetic):
    """The same counts costed by other cores' models: each differs from the M4's where its table does."""
    elf, counts, (kernel, _done) = synthetic
    segs = [s for s in counts.segments if s.mark == kernel]
    m3 = span(segs, block_costs(counts, elf, TARGET, get_core("cortex-m3"))).cycles
    assert m3 == EXPECTED_CYCLES + 4 * (M3_CYCLES["mla"] - M4_CYCLES["mla"]) * 2  # mla and smlad: 2 on the M3
    m0 = span(segs, block_costs(counts, elf, TARGET, get_core("cortex-m0plus"))).cycles
    m7 = span(segs, block_costs(counts, elf, TARGET, get_core("cortex-m7"))).cycles
    assert m7 < EXPECTED_CYCLES  # dual issue and 1-cycle loads
    assert m0 != EXPECTED_CYCLES
    waits = span(segs, block_costs(counts, elf, TARGET, get_core(TARGET), Memory(fetch_wait_states=3))).cycles
    assert waits == EXPECTED_CYCLES + 3 * 6  # six taken exits, each refilling from a 3-wait-state memory
    slow_data = span(segs, block_costs(counts, elf, TARGET, get_core(TARGET), Memory(load_wait_states=1))).cycles
    assert slow_data == EXPECTED_CYCLES + 3 + 3 * 2 + 3 + 7  # words loaded: B1 3, B2 2 x 3, B3 1 + LDRD 2, POP 7


def test_plugin_counts_every_instruction_once(synthetic):
    """Every instruction the board ran is counted once: the whole run (boot to semihosting exit)."""
    _elf, counts, _marks = synthetic
    # reset's bl kernel; the kernel segment (up to main's bl done); done's bx lr; movs, ldr, bkpt (exit)
    assert counts.instructions() == 1 + EXPECTED_INSTRUCTIONS + 1 + 3


@pytest.mark.parametrize("mnemonic, operands, cls, extra", [
    ("ldr.w", "r2, [r3, #4]", "load", {"writes": ("r2",), "address_regs": ("r3",)}),
    ("ldr", "r1, [pc, #80]\t@ (98 <f+0x58>)", "load", {"address_regs": ("r15",)}),
    ("str", "r5, [r1, r2]", "store", {"register_offset": True}),
    ("ldrd", "r2, r3, [r1], #8", "load_d", {"writes": ("r2", "r3")}),
    ("pop", "{r4, r5, r6, pc}", "ldm", {"count": 4, "writes_pc": True}),
    ("push", "{r4-r9, lr}", "stm", {"count": 7}),
    ("vpush", "{d8-d11}", "fp_stm", {"count": 8}),
    ("bne.n", "1c <loop>", "branch", {"conditional": True}),
    ("cbz", "r0, 30 <skip>", "cbz", {"conditional": True}),
    ("addeq", "r0, r1", "alu", {}),
    ("smlad", "r7, r2, r3, r7", "mla", {}),
    ("smlal", "r0, r1, r2, r3", "mlal", {"writes": ("r0", "r1")}),
    ("mls", "r0, r1, r2, r3", "mla", {}),  # not "m" + condition "ls"
    ("vadd.f32", "s0, s1, s2", "fp_alu", {}),
    ("vadd.i8", "q0, q1, q2", "mve_alu", {}),
    ("vldrb.s16", "q0, [r0, #8]", "mve_load", {}),
    ("vldrbt.s16", "q0, [r0, #8]", "mve_load", {}),
    ("vmlava.s8", "r0, q1, q2", "mve_mac", {}),
    ("vpstt", "", "vpt", {}),
    ("letp", "lr, 40 <loop>", "loop_end", {}),
    ("udiv", "r8, r6, r4", "div", {}),
])
def test_classifier(mnemonic, operands, cls, extra):
    insn = decode(0x100, 4, mnemonic, operands)
    assert insn.cls == cls
    for key, value in extra.items():
        assert getattr(insn, key) == value


def test_m4_load_pipelining_rules():
    first = decode(0, 2, "ldr", "r2, [r1]")
    independent = decode(2, 2, "ldr", "r3, [r1, #4]")
    dependent = decode(2, 2, "ldr", "r3, [r2]")  # its address is the first load's result
    after_add = decode(4, 2, "ldr", "r0, [r5]")
    add = decode(2, 2, "adds", "r5, r5, #4")
    assert insn_cycles(first, None, M4_CYCLES) == 2
    assert insn_cycles(independent, first, M4_CYCLES) == 1
    assert insn_cycles(dependent, first, M4_CYCLES) == 2
    assert insn_cycles(after_add, add, M4_CYCLES) == 3  # no forwarding to the address generator
    assert insn_cycles(decode(0, 2, "str", "r0, [r1, #4]"), add, M4_CYCLES) == 1
    assert insn_cycles(decode(0, 2, "str", "r0, [r1, r2]"), add, M4_CYCLES) == 2
    assert insn_cycles(decode(0, 2, "str", "r0, [r1, r3]"), first, M4_CYCLES) == 1  # pipelined after a load


def test_m55_helium_beats_overlap():
    load = decode(0, 4, "vldrb.s8", "q0, [r0], #16")
    mac = decode(4, 4, "vmlava.s8", "r2, q0, q1")
    core = get_core("cortex-m55")
    alone, _ = core.cost_block([load], ZERO_WAIT)
    pair, _ = core.cost_block([load, mac], ZERO_WAIT)
    same_unit, _ = core.cost_block([load, decode(4, 4, "vldrb.s8", "q1, [r1], #16")], ZERO_WAIT)
    assert (alone, pair, same_unit) == (2, 3, 4)  # 2 beats per cycle; overlap only across units


def test_m7_dual_issue():
    core = get_core("cortex-m7")
    independent = [decode(0, 2, "adds", "r0, r0, #1"), decode(2, 2, "adds", "r1, r1, #1")]
    dependent = [decode(0, 2, "adds", "r0, r0, #1"), decode(2, 2, "adds", "r1, r0, #1")]
    assert core.cost_block(independent, ZERO_WAIT)[0] == 1
    assert core.cost_block(dependent, ZERO_WAIT)[0] == 2


def test_unknown_core_is_refused():
    with pytest.raises(ValueError, match="no timing model"):
        get_core("cortex-m85")


@pytest.fixture(scope="module")
def small_program():
    """The one small model of these tests: a conv, a ReLU and a linear layer, int8 for the M4."""
    import torch

    import mcuforge

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 6 * 6, 10)).eval()
    example = (torch.randn(1, 3, 8, 8),)
    return mcuforge.compile(model, example, calibration=[example], target=TARGET, progress=False)


def test_a_traced_model_run_estimates_every_op(tmp_path, small_program):
    """A small model on the M4 board, traced, with the plugin: each op's plugin-counted instructions
    agree with the trace's SysTick count (to its resolution, 40, plus the timer read), every op has an
    estimate of at least one cycle per instruction (true of the M4 table by construction), and the
    Inspector shows them."""
    from mcuforge.inspect import Inspector

    prog = small_program
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    measured = {}
    out, trace = prog.run(x, backend="qemu", trace=True, measured=measured, board={"cycles": True, "clock_mhz": 120})
    estimate = measured["cycles"]
    assert np.array_equal(out, prog.run(x))  # the plugin changes nothing the board computes
    resolution = get_board(TARGET).instructions_per_tick
    assert len(estimate.op_cycles) == len(trace.ops) == len(prog.graph.ops)
    for event, cycles, instructions in zip(trace.ops, estimate.op_cycles, estimate.op_instructions, strict=True):
        assert abs(instructions - event.duration) <= resolution + 50
        assert cycles >= instructions > 0
    assert abs(estimate.instructions - measured["instructions"]) <= resolution + 50 * len(trace.ops) + 200
    assert estimate.clock_hz == 120e6 and estimate.ms == pytest.approx(estimate.cycles / 120e3)
    assert sum(estimate.functions.values()) == pytest.approx(estimate.cycles)
    assert next(iter(estimate.functions)).startswith(("mf_", "conv", "run"))  # a function of the firmware
    df = Inspector(prog, trace).to_dataframe()
    assert list(df["est_cycles"]) == estimate.op_cycles
    assert df.attrs["cycle_model"] == TARGET and "estimate" in df.attrs["cycle_note"]
    chrome = json.loads(Inspector(prog, trace).to_chrome_trace(tmp_path / "t.json").read_text())
    ops = [e for e in chrome["traceEvents"] if e.get("cat") not in (None, "run") and e["ph"] == "X"]
    assert [e["args"]["estimated_cycles"] for e in ops] == estimate.op_cycles
    html = Inspector(prog, trace).to_html(tmp_path / "r.html").read_text()
    assert 'id="cycle-estimate"' in html and "estimated cycles" in html


def test_run_marks_need_the_firmware_symbols(synthetic):
    elf, _counts, _marks = synthetic
    with pytest.raises(plugin.PluginError, match="mf_invoke"):
        cycle_run.marks(elf, traced=False)


def test_timed_calls_segment_any_elf(synthetic):
    """The harness-style segmentation (one marker, its calls paired) on the synthetic firmware: the span
    from the kernel's entry to the next mark is the kernel."""
    elf, counts, _marks = synthetic
    (kernel,) = cycle_run.timed_calls(counts, elf, TARGET, marker="kernel")
    assert (kernel.cycles, kernel.instructions) == (EXPECTED_CYCLES, EXPECTED_INSTRUCTIONS)


def test_cli_run_and_info_show_estimates(tmp_path, capsys, small_program):
    """`mcuforge run --on qemu` and `mcuforge info --cycles` print estimated cycles and milliseconds at the
    given clock, labelled as estimates."""
    from mcuforge.cli import main

    prog = small_program
    path = tmp_path / "m.mfp"
    prog.save(path)
    assert main(["run", str(path), "--on", "qemu", "--clock-mhz", "120"]) == 0
    out = capsys.readouterr().out
    assert "est. cycles" in out and "est. ms @ 120 MHz" in out and "timing model, an estimate" in out
    assert main(["info", str(path), "--cycles", "--clock-mhz", "80"]) == 0
    out = capsys.readouterr().out
    plain = int(re.search(r"estimated ([\d,]+) cycles per inference", out).group(1).replace(",", ""))
    assert "ESTIMATED cycles on cortex-m4" in out and "est. ms @ 80 MHz" in out and "cycles/MAC" in out
    assert "where the estimated cycles go" in out
    assert main(["info", str(path), "--cycles", "--fetch-wait-states", "5"]) == 0
    slow = re.search(r"estimated ([\d,]+) cycles per inference", capsys.readouterr().out).group(1)
    assert int(slow.replace(",", "")) > plain  # every taken branch refills from a 5-wait-state memory
    assert main(["run", str(path), "--on", "qemu", "--no-cycles"]) == 0
    assert "est. cycles" not in capsys.readouterr().out
    trace = tmp_path / "run.trace"
    assert main(["run", str(path), "--on", "qemu", "--trace", str(trace), "--clock-mhz", "64"]) == 0
    assert (tmp_path / "run.trace.cycles.json").is_file()  # the estimate is kept beside the trace
    capsys.readouterr()
    assert main(["inspect", str(path), str(trace)]) == 0
    out = capsys.readouterr().out
    assert "est. ms @ 64 MHz" in out and "timing model, an estimate" in out
