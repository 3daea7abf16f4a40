"""Estimated cycles must not depend on where code lands: QEMU ends a translation block at a 1 KB page end
(and after a 32-bit instruction that straddles one) even in straight-line code, and the timing model
costs a block entered by falling through from such a cut block as the continuation of that sequence.

One synthetic firmware on the Cortex-M55 board holds four copies of the same kernel (a loop of scalar
loads, Helium loads and MACs, a multiply-accumulate): one inside a page, one with the page end between two
back-to-back loads, one between a Helium load and the MAC that overlaps it, one where the MAC straddles the
page end. Every core's model must give the four copies the same cycles; costing each piece apart (the rule
before) must not.
"""

import subprocess

import pytest

from mcuforge.cycles import CORES, get_core, isa, plugin
from mcuforge.cycles.estimate import block_costs, cost_decoded, is_cut, span
from mcuforge.cycles.isa import decode
from mcuforge.cycles.plugin import Block, Counts, Segment
from mcuforge.firmware import toolchain
from mcuforge.firmware.boards import get_board

TARGET = "cortex-m55"
PAGE = 1024
ITERATIONS = 8

# The kernel, with each instruction's width fixed (.n/.w) so the offsets below hold in every copy.
KERNEL = """
kernel{k}:
    push {{r4-r7, lr}}
    movs r0, #{iterations}
    movw r1, #:lower16:buf
    movt r1, #:upper16:buf
    movs r6, #0
loop{k}:
    ldr r2, [r1]
    ldr r3, [r1, #4]
    ldr.w r4, [r1, #8]
    adds r5, r2, r3
    vldrb.s8 q0, [r1]
    vmlava.s8 r6, q0, q0
    vldrb.s8 q1, [r1, #16]
    vmlava.s8 r6, q1, q0
    mla r7, r2, r3, r7
    subs r0, #1
    bne.n loop{k}
    pop {{r4-r7, pc}}
"""
# Where the page ends, as an offset from the kernel's start (None: the kernel is inside one page).
CUTS = {
    0: None,
    1: 16,  # between ldr r2 and ldr r3 (a load that pipelines behind the one before it)
    2: 28,  # between vldrb q0 and the vmlava that overlaps it (another Helium unit)
    3: 30,  # the middle of that vmlava (28..32): QEMU gives the straddling instruction a block of its own
}
CALLS = "\n".join(f"    bl kernel{k}" for k in CUTS)
COPIES = "\n".join(f"    .balign {PAGE}\n" + (f"    .space {PAGE - cut}\n" if cut else "")
                   + KERNEL.format(k=k, iterations=ITERATIONS) for k, cut in CUTS.items())
SOURCE = f"""
    .syntax unified
    .arch armv8.1-m.main
    .arch_extension mve
    .thumb
    .section .vectors, "a"
    .word 0x21010000
    .word reset + 1
    .text
    .thumb_func
reset:
    ldr r0, =0xE000ED88  @ CPACR: enable the FPU/MVE coprocessors (cp10, cp11)
    ldr r1, [r0]
    orr r1, r1, #0xF00000
    str r1, [r0]
    dsb
    isb
{CALLS}
    bl done
    movs r0, #0x18
    ldr r1, =0x20026
    bkpt 0xab
    .thumb_func
done:
    bx lr
    .ltorg
{COPIES}
    .data
buf:
    .byte 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
    .byte 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32
"""


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    gcc = toolchain.require("arm-none-eabi-gcc")
    folder = tmp_path_factory.mktemp("cuts")
    (folder / "k.S").write_text(SOURCE)
    elf = folder / "k.elf"
    board = get_board(TARGET)
    subprocess.run([gcc, "-march=armv8.1-m.main+mve", "-mthumb", "-nostdlib", "-nostartfiles",
                    f"-Ttext={board.code + 0x400:#x}", f"-Tdata={board.ram:#x}", "-Wl,--section-start=.vectors=0",
                    "-o", str(elf), str(folder / "k.S")], check=True, capture_output=True)
    kernels = [isa.symbol_address(elf, f"kernel{k}") for k in CUTS]
    done, counts = plugin.run_qemu(TARGET, elf, folder, [*kernels, isa.symbol_address(elf, "done")], timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    segments = {k: [s for s in counts.segments if s.mark == address] for k, address in zip(CUTS, kernels, strict=True)}
    assert all(len(s) == 1 for s in segments.values())
    return elf, counts, {k: s[0] for k, s in segments.items()}, kernels


def _cut_ends(counts, costs, segment):
    """The addresses where blocks of ``segment`` end without a branch."""
    return sorted({c.insns[-1].address + c.insns[-1].size for b in segment.counts
                   if is_cut((c := costs[b]).insns)})


def _pieces(segment, costs) -> float:
    """The rule before: every block costed on its own."""
    return sum(runs * costs[b].fall_through + taken * costs[b].taken_extra
               for b, (runs, taken) in segment.counts.items())


def test_the_copies_are_cut_where_they_claim(copies):
    """The layout is right (else the other tests prove nothing): copy 0 has no cut block, copies 1-3 are cut
    at the page end (copy 3 also after the straddling MAC), once per loop iteration."""
    elf, counts, segments, kernels = copies
    costs = block_costs(counts, elf, TARGET, get_core(TARGET))
    for k, cut in CUTS.items():
        ends = _cut_ends(counts, costs, segments[k])
        if cut is None:
            assert ends == []
        else:
            assert (kernels[k] + cut) % PAGE == 0
            expected = [kernels[k] + 28, kernels[k] + 32] if k == 3 else [kernels[k] + cut]
            assert ends == expected
            assert span([segments[k]], costs).continued == ITERATIONS * len(expected)
        assert span([segments[k]], costs).instructions == span([segments[0]], costs).instructions


@pytest.mark.parametrize("core", sorted(CORES))
def test_every_core_costs_the_kernel_the_same_wherever_it_lands(copies, core):
    elf, counts, segments, _kernels = copies
    costs = block_costs(counts, elf, TARGET, get_core(core))
    reference = span([segments[0]], costs).cycles
    assert reference > 0
    for k in CUTS:
        # equal up to float rounding: a continuation's cost is a mean over the ways into its predecessor
        assert span([segments[k]], costs).cycles == pytest.approx(reference, abs=1e-6), f"copy {k} (+{CUTS[k]})"


def test_costing_the_pieces_apart_would_not(copies):
    """What the rule fixes, exactly: on the M4 model the split load pair loses its pipelining (1 cycle an
    iteration), on the M55 model also the Helium overlap (1 cycle an iteration, 2 when the MAC straddles)."""
    elf, counts, segments, _kernels = copies
    excess = {}
    for core in ("cortex-m4", "cortex-m55"):
        costs = block_costs(counts, elf, TARGET, get_core(core))
        reference = _pieces(segments[0], costs)
        excess[core] = [_pieces(segments[k], costs) - reference for k in CUTS]
    assert excess == {"cortex-m4": [0, ITERATIONS, 0, 0], "cortex-m55": [0, ITERATIONS, ITERATIONS, 2 * ITERATIONS]}


def _block(bid: int, pc: int, insns: list) -> tuple[Block, tuple]:
    return Block(bid, pc, tuple((i.address, b"") for i in insns)), tuple(insns)


def test_a_block_also_entered_by_a_branch_keeps_its_own_cost_there():
    """Synthetic counts (no QEMU): block 1 ends at a page end without a branch and falls through to block 2
    three times; a branch enters block 2 twice more. Only the three fall-through entries are costed as the
    continuation; a predecessor that ends with a branch changes nothing."""
    core = get_core("cortex-m4")
    load_a = decode(0x3FC, 2, "ldr", "r2, [r1]")
    add = decode(0x3FE, 2, "adds", "r5, r5, #1")
    load_b = decode(0x400, 2, "ldr", "r3, [r1, #4]")
    b0, i0 = _block(0, 0x3F8, [decode(0x3F8, 2, "adds", "r0, #1"), decode(0x3FA, 2, "bne.n", "3f0 <x>")])
    b1, i1 = _block(1, 0x3FC, [load_a])
    b2, i2 = _block(2, 0x400, [load_b, add])
    seg = Segment(0, 0, {0: (1, 0), 1: (3, 0), 2: (6, 0)}, {(1, 2): 3, (0, 2): 1})
    costs = cost_decoded(Counts({0: b0, 1: b1, 2: b2}, [seg]), {0: i0, 1: i1, 2: i2}, core)
    assert costs[2].fall_through == 3 and costs[2].after == {1: 2.0}  # the load pipelines behind block 1's
    assert 0 not in costs[2].after  # block 0 ends with a branch: a real sequence end
    got = span([seg], costs)
    assert got.continued == 3
    assert got.cycles == 2 + 3 * 2 + 3 * 2 + 3 * 3  # block 0; block 1; block 2 continued 3x, alone 3x
