"""Memory regions: the RAMs of a board, named presets of real boards, and the placement of a planned
program's buffers into them.

A board has several RAMs of different speed and size (an STM32H743: 128 KB DTCM at zero wait states, 512 KB
AXI SRAM, 288 KB of SRAM1-3 in another domain). ``plan.plan_arena`` lays every tensor and scratch buffer out
in one arena; ``place`` puts that plan into the board's regions:

- when one of the fastest regions holds the whole arena, it goes there and nothing else changes (the
  program file is byte-identical to a program planned without a board);
- else every allocation is placed on its own into the fastest region with room for its whole lifetime, the
  shortest-lived first (op scratch buffers and the tensors between neighbouring ops: the hottest bytes per
  byte), so the large, long-lived ones spill to the slower regions (largest first when that order leaves one
  out: it packs tighter); when no split fits, the whole arena in a slower region that holds it;
  ``RegionError`` when nothing fits, naming the buffer that fits nowhere, the ops it lives across and the
  bytes missing.

The regions' arenas are laid end to end in one offset space (region k's arena starts where region k-1's
ends, 16-byte aligned): a tensor's offset in the program file is its offset in that space and the file's
region table says where each region's arena starts. A runtime given one buffer per region
(``mf_init_regions``) maps an offset to its region's buffer; one given a single buffer of the total size
(``mf_init``) runs the same program unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .fit import FitError
from .ir import Graph
from .plan import ALIGNMENT, Key, _align, alias_offsets, alias_roots, allocations
from .program.layout import CONSTANT_ALIGN, align_up
from .targets import KB, MB, BoardMemory, get_target


@dataclass(frozen=True)
class Region:
    """One memory of a board: ``speed`` ranks the RAMs (0 fastest); ``kind`` "ram" (the planner may use it),
    "flash" (where the program file lives) or "code" (RAM kept for the firmware: not planned into). ``npu``: the
    board's NPU reaches it with its own DMA (an Ethos-U reads its command stream and weights and reads and writes
    its scratch there itself; a core's TCM is private to the core). False on a board without an NPU."""

    name: str
    base: int
    size: int
    speed: int = 0
    kind: str = "ram"
    note: str = ""
    npu: bool = False


@dataclass(frozen=True)
class BoardSpec:
    """A named board: its core and memory map. ``constants``: the region the program file (its constants
    read in place) lives in -- the flash, or a RAM region it is copied to at boot."""

    key: str
    name: str
    target: str
    regions: tuple[Region, ...]
    constants: str = "flash"
    source: str = ""  # the datasheet / reference-manual section the figures come from

    @property
    def ram_regions(self) -> tuple[Region, ...]:
        """The RAMs the planner may use, fastest first (the listed order among equals)."""
        ram = [r for r in self.regions if r.kind == "ram"]
        return tuple(sorted(ram, key=lambda r: r.speed))

    def region(self, name: str) -> Region:
        for r in self.regions:
            if r.name == name:
                return r
        raise ValueError(f"board {self.key!r} has no region {name!r}: {', '.join(r.name for r in self.regions)}")

    @property
    def constants_region(self) -> Region | None:
        """The RAM region the constants are copied to at ``mf_init`` (None: read in place from the flash)."""
        region = self.region(self.constants)
        return region if region.kind == "ram" else None

    @property
    def flash(self) -> Region:
        """Where the program file lives: the constants' region when it is the flash, else the first flash."""
        region = self.region(self.constants)
        if region.kind == "flash":
            return region
        flashes = [r for r in self.regions if r.kind == "flash"]
        if not flashes:
            raise ValueError(f"board {self.key!r} lists no flash region for the program file")
        return flashes[0]

    @property
    def npu_regions(self) -> tuple[Region, ...]:
        """The RAMs the board's NPU reaches, fastest first (empty: the board has no NPU)."""
        return tuple(r for r in self.ram_regions if r.npu)

    @property
    def memory(self) -> BoardMemory:
        """The board as the single-arena fit check sees it: the constants' region and all the RAM."""
        ram = sum(r.size for r in self.ram_regions)
        return BoardMemory(self.name, self.flash.size, ram,
                           " + ".join(f"{r.name} {r.size // KB:,} KB" for r in self.ram_regions))


def _b(key: str, name: str, target: str, regions: tuple[Region, ...], source: str) -> BoardSpec:
    return BoardSpec(key, name, target, regions, source=source)


#: Named boards. Addresses and sizes as their vendors give them (checked where the comment says so).
BOARDS: dict[str, BoardSpec] = {b.key: b for b in (
    # STM32H743: RM0433 sec. 2.3.2 (memory map) and the CMSIS device header stm32h743xx.h (D1_DTCMRAM_BASE
    # 0x20000000, D1_AXISRAM_BASE 0x24000000, D2_AHBSRAM_BASE 0x30000000 "up to 288KB", D3_SRAM_BASE
    # 0x38000000 64 KB, flash 0x08000000 2 MB): checked. SRAM1 128 + SRAM2 128 + SRAM3 32 KB are contiguous
    # from 0x30000000: one region. The ITCM (64 KB at 0) is left to the code. Speed ranks: DTCM zero wait
    # states on the core's own port; AXI SRAM on the 64-bit AXI matrix in the core's domain; SRAM1-3 and
    # SRAM4 behind the AXI->AHB bridges of the D2 / D3 domains (unchecked as cycle figures: an order only).
    _b("stm32h743", "STM32H743 (Nucleo-H743ZI2)", "cortex-m7", (
        Region("ITCM", 0x0000_0000, 64 * KB, 0, "code", "instruction TCM: the firmware's hot code"),
        Region("DTCM", 0x2000_0000, 128 * KB, 0),
        Region("AXI_SRAM", 0x2400_0000, 512 * KB, 1),
        Region("SRAM1_3", 0x3000_0000, 288 * KB, 2, note="SRAM1 128 KB + SRAM2 128 KB + SRAM3 32 KB (D2)"),
        Region("SRAM4", 0x3800_0000, 64 * KB, 3, note="D3 domain"),
        Region("flash", 0x0800_0000, 2 * MB, 9, "flash"),
    ), "RM0433 sec. 2.3.2; stm32h743xx.h"),
    # STM32L4R5 (the MLPerf Tiny reference board's MCU family, NUCLEO-L4R5ZI): the CMSIS device header
    # stm32l4r5xx.h (SRAM1 0x20000000 192 KB, SRAM2 0x10000000 64 KB, SRAM3 0x20040000 384 KB, flash
    # 0x08000000 2 MB): checked; RM0432 sec. 2.2. SRAM2 is also aliased at 0x20030000 (contiguous with SRAM1);
    # the planner keeps the regions apart. All three on the AHB matrix at zero wait states: equal speed.
    _b("stm32l4r5", "STM32L4R5 (NUCLEO-L4R5ZI)", "cortex-m4", (
        Region("SRAM1", 0x2000_0000, 192 * KB, 0),
        Region("SRAM2", 0x1000_0000, 64 * KB, 0, note="parity-checked; also at 0x20030000"),
        Region("SRAM3", 0x2004_0000, 384 * KB, 0),
        Region("flash", 0x0800_0000, 2 * MB, 9, "flash"),
    ), "RM0432 sec. 2.2; stm32l4r5xx.h"),
    # nRF5340 application core: flash 1 MB at 0, SRAM 512 KB at 0x20000000 (Zephyr's nrf5340_cpuapp_qkaa.dtsi;
    # nRF5340 Product Specification, "Application core memory"): checked. One RAM region.
    _b("nrf5340", "nRF5340 (application core)", "cortex-m33", (
        Region("SRAM", 0x2000_0000, 512 * KB, 0),
        Region("flash", 0x0000_0000, 1 * MB, 9, "flash"),
    ), "nRF5340 PS, application core memory map; Zephyr nrf5340_cpuapp_qkaa.dtsi"),
    # Corstone-300 FPGA image AN547 (the QEMU mps3-an547 board): QEMU hw/arm/mps2-tz.c an547_raminfo and
    # armsse.c (ITCM 512 KB at 0, SRAM 2 MB at 0x01000000, DTCM 4 x 128 KB at 0x20000000, ISRAM 4 MB at
    # 0x21000000, QSPI 8 MB (ROM) at 0x28000000, DDR at 0x60000000): checked against QEMU's model; Arm AN547
    # sec. 4 (memory map) gives the same. The DDR region is the part of it the test firmware gives programs
    # (mcuforge.firmware.boards: 64 MB). The ISRAM's first 1 MB holds the firmware's data and stack.
    # NPU reach (``npu``): the Ethos-U55's two AXI managers sit on the SSE-300's main interconnect (SRAM, ISRAM,
    # DDR, the QSPI flash: Arm's ML embedded evaluation kit, "Memory considerations", puts the NPU's tensor arena
    # in the SRAM and reads the model from the flash over the NPU's second AXI port); the ITCM and DTCM are the
    # Cortex-M55's tightly coupled memories, on its own TCM interface, which the NPU's DMA does not reach.
    _b("mps3-an547", "Corstone-300 (MPS3 AN547)", "cortex-m55", (
        Region("ITCM", 0x0000_0000, 512 * KB, 0, "code"),
        Region("DTCM", 0x2000_0000, 512 * KB, 0, note="4 banks of 128 KB"),
        Region("SRAM", 0x0100_0000, 2 * MB, 1, npu=True),
        Region("ISRAM", 0x2110_0000, 3 * MB, 1, note="0x21000000 4 MB; the first 1 MB is the firmware's", npu=True),
        Region("DDR", 0x6000_0000, 64 * MB, 2, npu=True),
        Region("flash", 0x2800_0000, 8 * MB, 9, "flash", "the QSPI flash (QEMU: a ROM)", npu=True),
    ), "QEMU hw/arm/mps2-tz.c an547_raminfo; Arm AN547 sec. 4"),
)}
BOARDS["corstone-300"] = BOARDS["mps3-an547"]
# The QEMU mps2-an386 board (cortex-m4; QEMU hw/arm/mps2.c: SSRAM2/3 4 MB at 0x20000000, PSRAM 16 MB at
# 0x21000000, whose first 1 MB is the test firmware's): two RAM regions to split a program across.
BOARDS["mps2-an386"] = _b("mps2-an386", "QEMU MPS2 AN386", "cortex-m4", (
    Region("SSRAM23", 0x2000_0000, 4 * MB, 0),
    Region("PSRAM", 0x2110_0000, 15 * MB, 1, note="the test firmware's heap"),
    Region("flash", 0x0000_0000, 4 * MB, 9, "flash", "SSRAM1 (QEMU): the firmware's code; programs go to RAM"),
), "QEMU hw/arm/mps2.c")


def get_board_spec(name: str) -> BoardSpec:
    """The board called ``name``; a clear error lists the known ones. "board@REGION" (``"mps3-an547@DTCM"``):
    that board with its constants copied to the RAM region REGION at ``mf_init`` (or kept in a flash region)."""
    key, _, constants = name.partition("@")
    try:
        spec = BOARDS[key.lower()]
    except KeyError:
        raise ValueError(f"unknown board {key!r}; known boards: {', '.join(BOARDS)}") from None
    if not constants:
        return spec
    region = spec.region(constants)
    if region.kind == "code":
        raise ValueError(f"{spec.key}'s {region.name} is kept for the firmware's code: the constants go to the "
                         f"flash or a RAM region ({', '.join(r.name for r in spec.ram_regions)})")
    return replace(spec, constants=region.name)


def resolve_target(target: str | None, board: str | BoardSpec | None) -> tuple[str, BoardSpec | None]:
    """The compile target and the board: a board names its core; a target given too must be that core (an
    Ethos-U suffix may follow it)."""
    spec = get_board_spec(board) if isinstance(board, str) else board
    if spec is None:
        return target or "cortex-m55", None
    if target is not None and target.split("+", 1)[0] != spec.target:
        raise ValueError(f"board {spec.key!r} has a {spec.target}, not a {target.split('+', 1)[0]}: give the "
                         f"board alone, or target={spec.target!r}")
    get_target(spec.target)
    return target or spec.target, spec


class RegionError(FitError):
    """The program's buffers do not fit the board's RAM regions (the message names one that fits nowhere)."""


@dataclass(frozen=True)
class RegionUse:
    """One region's arena in a placed program: ``start`` in the program's offset space, ``bytes`` used."""

    name: str
    start: int
    bytes: int
    size: int  # the region's capacity (0: not known, a program read from a file)


def _first_fit(placed: list[tuple[int, int, int, int]], first: int, last: int, size: int) -> int:
    """The lowest aligned offset free for ``size`` bytes over ops [first, last] among ``placed``."""
    offset = 0
    for o, e in sorted((o, e) for o, e, f, l in placed if f <= last and first <= l):
        if offset + size <= o:
            break
        offset = max(offset, _align(e))
    return offset


def _split(spans: dict[Key, tuple[int, int, int]], regions: tuple[Region, ...],
           order: list[Key], npu_keys: frozenset[Key] = frozenset()) -> tuple[dict[Key, tuple[int, int]], Key | None]:
    """Allocation -> (region index, offset in it), placing in ``order`` each into the fastest region with
    room (an NPU buffer, ``npu_keys``, only into a region the NPU reaches); the first allocation that fits
    nowhere (None when all fit)."""
    placed: list[list[tuple[int, int, int, int]]] = [[] for _ in regions]
    where: dict[Key, tuple[int, int]] = {}
    for key in order:
        first, last, size = spans[key]
        for j, region in enumerate(regions):
            if key in npu_keys and not region.npu:
                continue
            offset = _first_fit(placed[j], first, last, size)
            if offset + size <= region.size:
                placed[j].append((offset, offset + size, first, last))
                where[key] = (j, offset)
                break
        else:
            return where, key
    return where, None


def _describe(graph: Graph, key: Key, spans: dict[Key, tuple[int, int, int]], regions: tuple[Region, ...],
              where: dict[Key, tuple[int, int]]) -> str:
    first, last, size = spans[key]
    what = f"op {key}'s scratch" if isinstance(key, int) else f"tensor {key}"
    live = {j: sum(spans[k][2] for k, (jj, _o) in where.items() if jj == j
                   and spans[k][0] <= last and first <= spans[k][1]) for j in range(len(regions))}
    free = ", ".join(f"{r.name} {r.size:,} B with {live[j]:,} B live" for j, r in enumerate(regions))
    ops = f"op {first}" if first == last else f"ops {max(first, 0)}..{min(last, len(graph.ops) - 1)}"
    total = sum(r.size for r in regions)
    need = graph.ram_bytes
    return (f"{what} ({size:,} B, live over {ops}) fits no RAM region ({free}); the arena planned as one needs "
            f"{need:,} B, the regions hold {total:,} B"
            + (f": short by {need - total:,} B" if need > total else " but not in pieces that fit"))


def npu_scratch_ops(graph: Graph) -> frozenset[int]:
    """The ops whose scratch buffer the NPU reads and writes itself: each delegate op's (Vela's scratch region,
    which holds the subgraph's inputs, outputs and intermediates). The delegate's input and output tensors
    are copied in and out of it by the CPU, so they may lie anywhere."""
    return frozenset(i for i, op in enumerate(graph.ops) if op.kind == "delegate" and op.scratch_bytes)


def _delegate_name(graph: Graph, i: int) -> str:
    op = graph.ops[i]
    return f"delegate op {i} ({op.attrs.get('npu', 'npu')}, {op.debug.get('module') or 'subgraph'})"


def _describe_npu(graph: Graph, key: int, spans: dict[Key, tuple[int, int, int]], regions: tuple[Region, ...],
                  where: dict[Key, tuple[int, int]], board: BoardSpec) -> str:
    """The refusal for a delegate's scratch that fits no region its NPU reaches: the op, the buffer, the bytes
    missing in the reachable region closest to holding it."""
    first, last, size = spans[key]
    reach = [(j, r) for j, r in enumerate(regions) if r.npu]
    others = ", ".join(r.name for r in regions if not r.npu)
    head = f"{_delegate_name(graph, key)}: its NPU scratch buffer (op {key}'s scratch, {size:,} B) "
    if not reach:
        return head + f"has no RAM region of {board.name} the NPU reaches (none is marked npu; {others} are not)"
    live = {j: sum(spans[k][2] for k, (jj, _o) in where.items() if jj == j and k != key
                   and spans[k][0] <= last and first <= spans[k][1]) for j, _r in reach}
    short = min(live[j] + size - r.size for j, r in reach)
    free = ", ".join(f"{r.name} {r.size:,} B with {live[j]:,} B live" for j, r in reach)
    return (head + f"fits no region the NPU reaches ({free}" + (f"; not {others}: the NPU does not reach them"
                                                               if others else "") + ")"
            + (f": short by {short:,} B" if short > 0 else ": the free bytes are not in one piece"))


def _check_npu_constants(graph: Graph, board: BoardSpec) -> None:
    """The NPU reads each delegate's command stream and weights where the constants are (the flash, or their
    RAM copy): refuse a board whose constants' home the NPU does not reach, naming the op and the blobs."""
    ops = sorted(npu_scratch_ops(graph) | {i for i, op in enumerate(graph.ops) if op.kind == "delegate"})
    if not ops:
        return
    if not any(r.npu for r in board.regions):
        raise RegionError(f"{_delegate_name(graph, ops[0])} runs on an NPU, but {board.name} lists no memory an NPU "
                          f"reaches (no region is marked npu: the board has no NPU)")
    home = board.region(board.constants)
    if home.npu:
        return
    i = ops[0]
    op = graph.ops[i]
    blobs = [n for n in op.inputs[op.attrs.get("input_count", 0):] if n and not n.endswith(".tosa")]
    what = " and ".join(f"{n} ({graph.tensors[n].nbytes:,} B)" for n in blobs)
    reach = ", ".join(r.name for r in board.regions if r.npu)
    raise RegionError(f"{_delegate_name(graph, i)}: the NPU reads its {what} where the constants are, "
                      f"{board.name}'s {home.name}, which the NPU does not reach: keep the constants in a memory it "
                      f"reaches ({reach})")


def constants_section_bytes(graph: Graph) -> int:
    """The program file's constants section as the writer lays it out: each constant 16-byte aligned, in the
    tensor table's order (the bytes ``mf_init`` copies to a RAM region)."""
    size = 0
    for t in graph.tensors.values():
        if t.is_constant:
            size = align_up(size, CONSTANT_ALIGN) + t.nbytes  # _append_constant's rule (program/writer.py)
    return size


def _constants_error(graph: Graph, board: BoardSpec, region: Region, need: int) -> RegionError:
    consts = sorted(((t.nbytes, n) for n, t in graph.tensors.items() if t.is_constant), reverse=True)
    largest = ", ".join(f"{n} ({b:,} B)" for b, n in consts[:3])
    return RegionError(f"the constants ({need:,} B in {len(consts)} tensors; largest {largest}) do not fit "
                       f"{board.name}'s {region.name} ({region.size:,} B) they are copied to: short by "
                       f"{need - region.size:,} B; keep them in the flash or copy them to a larger region")


def place(graph: Graph, board: BoardSpec) -> list[RegionUse]:
    """Put the planned program (``plan.plan_arena`` first) into ``board``'s RAM regions: rewrites the
    tensors' and scratch buffers' offsets and ``graph.arena_bytes`` when the program spans several regions
    and records ``graph.regions``; returns each used region's share. RegionError when it cannot fit.

    A board whose ``constants`` is a RAM region: the constants section's bytes are reserved at the start of
    that region's arena (``graph.constants_at``, its arena offset) before the buffers are placed, so the fit
    check and the region's use include them; ``mf_init`` copies the constants there and the kernels read
    them from RAM."""
    regions = board.ram_regions
    if not regions:
        raise ValueError(f"board {board.key!r} lists no RAM region")
    _check_npu_constants(graph, board)
    graph.constants_at = -1
    target = board.constants_region
    reserve = _align(constants_section_bytes(graph)) if target is not None else 0
    if target is None or reserve == 0:
        return _place(graph, board, regions)
    if reserve > target.size:
        raise _constants_error(graph, board, target, reserve)
    k = next(i for i, r in enumerate(regions) if r.name == target.name)
    shrunk = tuple(replace(r, size=r.size - reserve) if i == k else r for i, r in enumerate(regions))
    try:
        uses = _place(graph, board, shrunk)
    except RegionError as e:
        raise RegionError(f"{e} (with the constants' {reserve:,} B reserved in {target.name})") from None
    return _reserve(graph, regions, uses, k, reserve)


def _reserve(graph: Graph, regions: tuple[Region, ...], uses: list[RegionUse], k: int,
             reserve: int) -> list[RegionUse]:
    """Open ``reserve`` bytes at the start of region ``k``'s arena (adding that region when no buffer went
    there) for the constants' copy: every buffer from there on moves up by ``reserve``."""
    name = regions[k].name
    table = list(graph.regions) or [(uses[0].name, 0, _align(graph.arena_bytes))]
    order = [r.name for r in regions]
    if name not in [n for n, _s, _b in table]:  # a region of the constants alone, in the regions' order
        table.append((name, 0, 0))
        table.sort(key=lambda r: order.index(r[0]))
    at = 0
    for n, _s, _b in table:
        if n == name:
            break
        at += _b
    for t in graph.tensors.values():
        if not t.is_constant and t.offset >= at:
            t.offset += reserve
    for op in graph.ops:
        if op.scratch_bytes and op.scratch_offset >= at:
            op.scratch_offset += reserve
    rebuilt, start = [], 0
    for n, _s, b in table:
        b = b + reserve if n == name else b
        rebuilt.append((n, start, b))
        start += b
    single = len(rebuilt) == 1
    graph.arena_bytes = (graph.arena_bytes + reserve) if single else start
    graph.regions = () if single else tuple(rebuilt)
    graph.constants_at = at
    size = {r.name: r.size for r in regions}
    return [RegionUse(n, s, b, size[n]) for n, s, b in rebuilt]


def _place(graph: Graph, board: BoardSpec, regions: tuple[Region, ...]) -> list[RegionUse]:
    npu_keys = npu_scratch_ops(graph)
    # The arena whole in one region only where the NPU reaches it when a delegate's scratch is in it: a faster
    # TCM the NPU cannot reach then takes the CPU's buffers and the scratch goes to a region the NPU reaches.
    whole = [r for r in regions if graph.arena_bytes <= r.size and (r.npu or not npu_keys)]
    if whole and whole[0].speed == regions[0].speed:  # one of the fastest regions holds it: the plan as it is
        graph.regions = ()
        return [RegionUse(whole[0].name, 0, graph.arena_bytes, whole[0].size)]
    spans = allocations(graph)
    tie = {k: (isinstance(k, int), str(k)) for k in spans}
    orders = (
        sorted(spans, key=lambda k: (spans[k][1] - spans[k][0], spans[k][2], tie[k])),  # shortest-lived first
        sorted(spans, key=lambda k: (-spans[k][2], spans[k][0], tie[k])),  # largest first: packs tighter
    )
    where, missing = _split(spans, regions, orders[0], npu_keys)
    if missing is not None:
        where2, missing2 = _split(spans, regions, orders[1], npu_keys)
        if missing2 is not None and whole:  # no split fits, but a slower region holds it all
            graph.regions = ()
            return [RegionUse(whole[0].name, 0, graph.arena_bytes, whole[0].size)]
        if missing2 is not None:
            if missing not in npu_keys and missing2 in npu_keys:
                missing, where = missing2, where2
            raise RegionError(f"the program does not fit the RAM regions of {board.name}: "
                              + (_describe_npu(graph, missing, spans, regions, where, board) if missing in npu_keys
                                 else _describe(graph, missing, spans, regions, where)))
        where = where2
    used = [max((o + spans[k][2] for k, (j, o) in where.items() if j == i), default=0)
            for i in range(len(regions))]
    starts, start = [], 0
    for n in used:
        starts.append(start)
        start += _align(n)
    offset = {k: starts[j] + o for k, (j, o) in where.items()}
    for name, (root, at) in alias_offsets(graph).items():  # at: a placed concat input, an overlapped input
        graph.tensors[name].offset = offset[root] + at
    for i, op in enumerate(graph.ops):
        op.scratch_offset = offset[i] if op.scratch_bytes else -1
    uses = [RegionUse(r.name, starts[i], used[i], r.size) for i, r in enumerate(regions) if used[i]]
    graph.arena_bytes = start
    graph.regions = tuple((u.name, u.start, _align(u.bytes)) for u in uses)
    if len(uses) == 1:  # every allocation in one region after all: a plain single arena
        graph.regions = ()
    return uses


def region_of(graph: Graph, offset: int) -> str:
    """The region an arena offset lies in ("arena" for a single-region program)."""
    for name, start, size in graph.regions:
        if start <= offset < start + size:
            return name
    return "arena"


assert ALIGNMENT == 16  # the regions' arenas start 16-byte aligned, as every buffer in them


@dataclass(frozen=True)
class RegionPlan:
    """One region's arena as ``prog.memory_plan`` shows it: its buffers (tensor name, or "op i scratch"),
    each with its offset in the region, bytes and the ops it lives across."""

    name: str
    start: int  # in the program's arena offset space
    bytes: int
    buffers: tuple[tuple[str, int, int, int, int], ...]  # (buffer, offset in the region, bytes, first op, last op)


def memory_plan(graph: Graph) -> list[RegionPlan]:
    """Each region's arena with the buffers placed in it (one "arena" region for a single-arena program)."""
    from .plan import lifetimes

    regions = graph.regions or (("arena", 0, graph.arena_bytes),)
    life = lifetimes(graph)
    roots = alias_roots(graph)
    buffers = [(name, graph.tensors[name].offset, _align(max(graph.tensors[name].nbytes, 1)), *life[name])
               for name in life if roots[name] == name]
    buffers += [(f"op {i} scratch", op.scratch_offset, _align(op.scratch_bytes), i, i)
                for i, op in enumerate(graph.ops) if op.scratch_bytes]
    if graph.constants_at >= 0:  # the constants' copy in RAM: live from mf_init on
        buffers.append(("constants", graph.constants_at, _align(constants_section_bytes(graph)), -1, len(graph.ops)))
    out = []
    for name, start, size in regions:
        inside = sorted((b, o - start, n, f, la) for b, o, n, f, la in buffers if start <= o < start + size)
        out.append(RegionPlan(name, start, size, tuple(sorted(inside, key=lambda b: (b[1], b[0])))))
    return out
