"""``export-c``: a program as a self-contained C project for a Cortex-M firmware.

The output folder holds the C runtime (``mcuforge/``, its dispatch lists cut down to the kernels
the program uses, so that the linker drops the rest), the program as a flash array
(``model_program.c``), a header with the arena size and the I/O tensors (``model.h``), example
inputs (``model_inputs.c``), an example ``main.c``, a Makefile and a CMakeLists.txt; for a CPU
with an emulated board also its start-up and linker script (``board/``), so ``make run`` runs
the example on QEMU. ``make TRACE=uart`` builds the example with its trace on a UART (board
support in ``mcuforge/board/``, the UART in ``trace_uart_port.c``: the CMSDK UART0 of the QEMU
board, or the one function to write for another board); ``README.md`` says how to capture it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .firmware.boards import BOARDS
from .firmware.builder import BOARD_SRC, CSRC, FIRMWARE_SRC, icount_scale, runtime_files
from .firmware.toolchain import PORTABLE_C_FLAGS
from .ir import DTYPES, Graph, input_bytes
from .program import deserialize, read_header
from .targets import TARGET_BY_ID

TEMPLATES = CSRC / "export"
C_DTYPES = {"int8": "MF_INT8", "int16": "MF_INT16", "int32": "MF_INT32", "float32": "MF_FLOAT32",
            "int64": "MF_INT64", "bool": "MF_BOOL"}
PROGRAM_SECTION = ".rodata.mcuforge_program"
REGION_SECTION = ".mcuforge_region."  # + the region's name: the arena of one RAM region


def _c_bytes(data: bytes, indent: str = "    ") -> str:
    rows = (", ".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16))
    return ",\n".join(indent + row for row in rows)


def _c_float(value: float) -> str:
    """A float32 as an exact C99 hexadecimal literal."""
    return f"{float(np.float32(value)).hex()}f"


def _copy_runtime(out: Path) -> None:
    """The portable runtime (the firmware's manifest, ``runtime_files``), folders kept as they are (sources
    include each other by relative path); and the board support (UART trace sink, timers, CMSDK UART driver) in
    mcuforge/board/."""
    board = sorted(p for p in BOARD_SRC.iterdir() if p.suffix in (".c", ".h"))
    for path in [*runtime_files(), *board]:
        dest = out / "mcuforge" / path.relative_to(CSRC)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)


def _keep_used_kernels(out: Path, graph: Graph) -> None:
    """Rewrite the exported dispatch lists with only the kernels and fp32 ops this program uses: the
    others are then referenced by nothing, and ``--gc-sections`` leaves them out of the firmware. The
    fp32 table keeps its positions (an aten_fp32 op dispatches by its ``table_index``): an unused
    entry becomes ``MF_ATEN_UNUSED(symbol)``, a NULL in the table."""
    kinds = {op.kind for op in graph.ops if op.kind != "delegate"}  # NPU ops: runtime/delegate.c, not a kernel
    path = out / "mcuforge" / "kernels" / "kernel_list.h"
    entries = [(line, re.fullmatch(r"MF_KERNEL\((\w+)\)", line.strip())) for line in
               path.read_text().splitlines(keepends=True)]
    missing = kinds - {m.group(1) for _, m in entries if m}
    if missing:
        raise ValueError(f"the program uses {sorted(missing)}, which the C runtime's kernels/kernel_list.h "
                         "does not list")
    path.write_text("".join(line for line, m in entries if m is None or m.group(1) in kinds))

    used = {op.attrs["table_index"] for op in graph.ops if op.kind == "aten_fp32"}
    path = out / "mcuforge" / "kernels" / "fp32" / "aten_list.h"
    lines, position = [], 0
    for line in path.read_text().splitlines(keepends=True):
        if re.fullmatch(r"MF_ATEN\(\w+\)", line.strip()):
            if position not in used:
                line = line.replace("MF_ATEN(", "MF_ATEN_UNUSED(", 1)
            used.discard(position)
            position += 1
        lines.append(line)
    if used:
        raise ValueError(f"the program uses fp32 table entries {sorted(used)}, beyond the {position} of the C "
                         "runtime's kernels/fp32/aten_list.h")
    path.write_text("".join(lines))


def _tensor_macros(graph: Graph, kind: str, names: Sequence[str]) -> list[str]:
    lines = []
    for i, name in enumerate(names):
        t = graph.tensors[name]
        prefix = f"MF_MODEL_{kind.upper()}{i}"
        q = f", scale {t.qparams.scale:.9g}, zero point {t.qparams.zero_point}" if t.qparams else ""
        lines += [f"/* {kind} {i}: {name!r}, {t.dtype}, {t.layout.upper()} {list(t.shape)}{q} */",
                  f"#define {prefix}_BYTES {t.nbytes}u",
                  f"#define {prefix}_DTYPE {C_DTYPES[t.dtype]}",
                  f"#define {prefix}_RANK {len(t.shape)}u",
                  f"#define {prefix}_SHAPE {{{', '.join(str(d) for d in t.shape)}}}"]
        if t.qparams:
            lines += [f"#define {prefix}_SCALE {_c_float(t.qparams.scale)}",
                      f"#define {prefix}_ZERO_POINT ({t.qparams.zero_point})"]
        lines.append("")
    return lines


def _model_header(graph: Graph, target: str, program_size: int, arena: int) -> str:
    lines = [
        "/* The exported model: sizes and I/O tensors. Generated by `mcuforge export-c`. */",
        "#ifndef MCUFORGE_MODEL_H", "#define MCUFORGE_MODEL_H", "", "#include <stddef.h>", "#include <stdint.h>", "",
        '#include "mcuforge.h"', "",
        f'#define MF_MODEL_TARGET "{target}"',
        "/* RAM the runtime needs (mf_program_arena_bytes): activations + the largest scratch buffer. */",
        f"#define MF_ARENA_BYTES {arena}u",
        f"#define MF_MODEL_PROGRAM_BYTES {program_size}u",
        f"#define MF_MODEL_CONSTANT_BYTES {graph.constant_bytes}u",
        f"#define MF_MODEL_INPUT_COUNT {len(graph.inputs)}u",
        f"#define MF_MODEL_OUTPUT_COUNT {len(graph.outputs)}u", "",
        *_region_macros(graph),
        *_tensor_macros(graph, "input", graph.inputs),
        *_tensor_macros(graph, "output", graph.outputs),
        f"/* The program file, in flash (section {PROGRAM_SECTION}, 16-byte aligned). */",
        "extern const uint8_t mf_model_program[MF_MODEL_PROGRAM_BYTES];",
        "/* Example inputs (model_inputs.c): input i is mf_model_inputs[i], mf_model_input_bytes[i] bytes. */",
        "extern const void *const mf_model_inputs[MF_MODEL_INPUT_COUNT];",
        "extern const size_t mf_model_input_bytes[MF_MODEL_INPUT_COUNT];", "",
        "#endif", "",
    ]
    return "\n".join(lines)


def _region_id(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _region_macros(graph: Graph) -> list[str]:
    """model.h: the RAM regions of a program split across them (mf_init_regions' buffers), 0 for one arena."""
    lines = ["/* RAM regions of a program split across a board's memories (0: one arena, MF_ARENA_BYTES). */",
             f"#define MF_MODEL_REGION_COUNT {len(graph.regions)}u"]
    for k, (name, _start, nbytes) in enumerate(graph.regions):
        lines.append(f"#define MF_MODEL_REGION{k}_BYTES {nbytes}u /* {name}: section {REGION_SECTION}{name} */")
    if graph.regions:
        lines += ["/* Each region's buffer (model_program.c), in its own section for the linker script to place. */",
                  "extern uint8_t *const mf_model_region_buffers[MF_MODEL_REGION_COUNT];",
                  "extern const size_t mf_model_region_bytes[MF_MODEL_REGION_COUNT];"]
    return [*lines, ""]


def _program_source(data: bytes, graph: Graph) -> str:
    text = ("/* The program file, read in place by the runtime. Generated by `mcuforge export-c`. */\n"
            '#include "model.h"\n\n'
            f'__attribute__((section("{PROGRAM_SECTION}"), aligned(16)))\n'
            f"const uint8_t mf_model_program[MF_MODEL_PROGRAM_BYTES] = {{\n{_c_bytes(data)}\n}};\n")
    if not graph.regions:
        return text
    lines = ["", "/* Each RAM region's arena, in section .mcuforge_region.<region> for the linker script. */"]
    for k, (name, _start, _n) in enumerate(graph.regions):
        lines.append(f'static uint8_t region_{_region_id(name)}[MF_MODEL_REGION{k}_BYTES] '
                     f'__attribute__((section("{REGION_SECTION}{name}"), aligned(16)));')
    ids = ", ".join(f"region_{_region_id(name)}" for name, _s, _n in graph.regions)
    sizes = ", ".join(f"MF_MODEL_REGION{k}_BYTES" for k in range(len(graph.regions)))
    lines += [f"uint8_t *const mf_model_region_buffers[MF_MODEL_REGION_COUNT] = {{{ids}}};",
              f"const size_t mf_model_region_bytes[MF_MODEL_REGION_COUNT] = {{{sizes}}};", ""]
    return text + "\n".join(lines)


def _region_link(graph: Graph, target: str) -> dict[str, str]:
    """The linker script's lines for the regions: a MEMORY entry at the board's address of each (the QEMU
    board's table, firmware/boards.py) and a NOLOAD output section for its buffer; a region the board keeps
    in its heap memory, or one the QEMU board does not have (a program split for another board, whose own
    linker script places the sections), goes to EXTRA, so that the example still runs on QEMU."""
    places = {name: (address, size) for name, address, size in BOARDS[target].regions}
    memory, sections = [], []
    for name, _start, nbytes in graph.regions:
        address, size = places.get(name, (0, 0))
        where = "EXTRA"
        if address and nbytes <= size:
            where = f"R_{_region_id(name)}"
            memory.append(f"  {where} (rw) : ORIGIN = {address:#x}, LENGTH = {size:#x}")
        sections.append(f"  .mcuforge_region_{_region_id(name)} (NOLOAD) : {{ . = ALIGN(16); "
                        f"KEEP(*({REGION_SECTION}{name})) }} > {where}")
    return {"REGION_MEMORY": "\n".join(memory), "REGION_SECTIONS": "\n".join(sections)}


def _inputs_source(graph: Graph, inputs: Sequence[np.ndarray] | None) -> str:
    parts = ["/* Example inputs (program dtype and layout). Generated by `mcuforge export-c`. */",
             '#include "model.h"', ""]
    if inputs is None:
        inputs = [np.zeros(graph.tensors[n].shape, DTYPES[graph.tensors[n].dtype]) for n in graph.inputs]
    for i, data in enumerate(input_bytes(graph, inputs)):
        parts += [f"static const uint8_t input{i}[{max(len(data), 1)}] __attribute__((aligned(16))) = {{",
                  _c_bytes(data) if data else "    0", "};", ""]
    count = len(graph.inputs)
    parts += [f"const void *const mf_model_inputs[{max(count, 1)}] = {{"
              f"{', '.join(f'input{i}' for i in range(count)) or '0'}}};",
              f"const size_t mf_model_input_bytes[{max(count, 1)}] = {{"
              f"{', '.join(f'MF_MODEL_INPUT{i}_BYTES' for i in range(count)) or '0'}}};", ""]
    return "\n".join(parts)


def _fill(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    leftover = re.search(r"@[A-Z_]+@", template)
    if leftover:
        raise RuntimeError(f"export template has an unfilled placeholder {leftover.group()}")
    return template


_PORT_CMSDK = """#include "cmsdk_uart.h"

#define UART0 {uart:#x}u /* {machine}'s UART0, a CMSDK APB UART (QEMU: -serial) */

void trace_uart_port_init(void) {{ mf_cmsdk_uart_init(UART0, 16u); }}

size_t trace_uart_port_write(void *uart, const uint8_t *bytes, size_t n) {{
    (void)uart;
    return mf_cmsdk_uart_write((void *)UART0, bytes, n);
}}
"""

_PORT_TEMPLATE = """
#error "write trace_uart_port_write for your board's UART (see the comment above), then delete this line"

void trace_uart_port_init(void) {}

size_t trace_uart_port_write(void *uart, const uint8_t *bytes, size_t n) {
    (void)uart;
    (void)bytes;
    (void)n;
    return 0; /* bytes the UART took */
}
"""


def _trace_port(out: Path, target: str) -> None:
    """trace_uart_port.c: the QEMU board's CMSDK UART0, or the function to write for another board."""
    board = BOARDS.get(target)
    body = _PORT_TEMPLATE if board is None else _PORT_CMSDK.format(uart=board.uart, machine=board.machine)
    (out / "trace_uart_port.c").write_text(_fill((TEMPLATES / "trace_uart_port.c.in").read_text(),
                                                 {"TARGET": target, "PORT_BODY": body}))
    shutil.copy2(TEMPLATES / "trace_uart_port.h", out / "trace_uart_port.h")


def _board_files(out: Path, target: str, graph: Graph) -> dict[str, str]:
    board = BOARDS.get(target)
    if board is None:
        return {"BOARD": "", "MACHINE_OR_NONE": "no emulated board", "BOARD_SOURCES": "", "BOARD_LINK_FLAGS": "",
                "BOARD_DEFINES": "", "BOARD_DEFINES_CMAKE": ""}
    (out / "board").mkdir(exist_ok=True)
    shutil.copy2(FIRMWARE_SRC / "start.c", out / "board" / "start.c")  # the firmware's, its newlib half
    # The M55's 512 KB ITCM is small: its program goes to the DDR ("EXTRA") instead.
    region = "EXTRA" if board.code_bytes < 1 << 20 else "CODE"
    script = _fill((TEMPLATES / "board" / "link.ld.in").read_text(), {
        "MACHINE": board.machine, "TARGET": target, "PROGRAM_REGION": region,
        "CODE": hex(board.code), "CODE_BYTES": hex(board.code_bytes), "RAM": hex(board.ram),
        "RAM_BYTES": hex(board.ram_bytes), "HEAP": hex(board.heap), "HEAP_BYTES": hex(board.heap_bytes),
        **_region_link(graph, target)})
    (out / "board" / "link.ld").write_text(script)
    link = "--specs=rdimon.specs -nostartfiles -T${CMAKE_CURRENT_SOURCE_DIR}/board/link.ld"
    mul, shift = icount_scale(board)  # TIMER=icount: instructions per SysTick tick on this board
    return {"BOARD": board.machine, "MACHINE_OR_NONE": board.machine, "BOARD_SOURCES": "board/start.c",
            "BOARD_LINK_FLAGS": link, "BOARD_DEFINES": f"-DICOUNT_MUL={mul}u -DICOUNT_SHIFT={shift}",
            "BOARD_DEFINES_CMAKE":
                f"target_compile_definitions(mcuforge PUBLIC ICOUNT_MUL={mul}u ICOUNT_SHIFT={shift})"}


def export_c(program: bytes | str | Path, out_dir: str | Path,
             inputs: Sequence[np.ndarray] | None = None) -> Path:
    """Write ``program`` (the file's bytes or its path) as a C project into ``out_dir``.

    ``inputs`` (program dtype and layout, as :func:`mcuforge.runtime.execute` takes them) become
    the example's inputs; zeros without them. The program is also written as ``model.mfp`` (with
    its debug record when ``program`` is a path that has one), for ``mcuforge inspect``. Returns
    ``out_dir``.
    """
    from .api import DEBUG_SUFFIX

    given = isinstance(program, bytes | bytearray | memoryview)
    data = bytes(program) if given else Path(program).read_bytes()
    header = read_header(data)
    graph = deserialize(data)
    target = TARGET_BY_ID[header.target_id]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _copy_runtime(out)
    _keep_used_kernels(out, graph)
    arena = graph.ram_bytes  # what mf_program_arena_bytes returns
    (out / "model.h").write_text(_model_header(graph, target.name, len(data), arena))
    (out / "model_program.c").write_text(_program_source(data, graph))
    (out / "model_inputs.c").write_text(_inputs_source(graph, inputs))
    shutil.copy2(TEMPLATES / "main.c", out / "main.c")
    shutil.copy2(TEMPLATES / "arm-none-eabi.cmake", out / "arm-none-eabi.cmake")
    _trace_port(out, target.name)
    (out / "model.mfp").write_bytes(data)
    debug = Path(str(program) + DEBUG_SUFFIX) if not given else None
    if debug is not None and debug.is_file():
        shutil.copy2(debug, out / f"model.mfp{DEBUG_SUFFIX}")
    values = {"TARGET": target.name, "CPU_FLAGS": " ".join(target.gcc_flags),
              "PORTABLE_C_FLAGS": " ".join(PORTABLE_C_FLAGS), "CPU_FLAGS_CMAKE": " ".join(target.gcc_flags),
              **_board_files(out, target.name, graph)}
    (out / "Makefile").write_text(_fill((TEMPLATES / "Makefile.in").read_text(), values))
    (out / "CMakeLists.txt").write_text(_fill((TEMPLATES / "CMakeLists.txt.in").read_text(), values))
    readme = {"MODEL": "The model" if given else Path(program).stem, "TARGET": target.name,
              "PROGRAM_BYTES": f"{len(data):,}", "ARENA_BYTES": f"{arena:,}",
              "MACHINE_OR_NONE": values["MACHINE_OR_NONE"]}
    (out / "README.md").write_text(_fill((TEMPLATES / "README.md.in").read_text(), readme))
    return out
