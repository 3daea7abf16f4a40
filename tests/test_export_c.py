"""export-c: the exported C project builds with arm-none-eabi-gcc from its own Makefile, and its
example, run on the emulated board, prints the host runtime's outputs byte for byte."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from test_firmware import program_inputs

from mcuforge import cruntime, firmware
from mcuforge.cli import main
from mcuforge.export import PROGRAM_SECTION, export_c
from mcuforge.firmware.qemu import free_port
from mcuforge.runtime import execute
from mcuforge.trace import Trace

from conftest import compiled


@pytest.fixture(scope="module", autouse=True)
def toolchain():
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm", "make"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} not found on PATH: {firmware.INSTALL_HINT} (and make)", pytrace=False)


def make(folder, *targets):
    done = subprocess.run(["make", "-j2", *targets], cwd=folder, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, check=False)
    assert done.returncode == 0, f"make {' '.join(targets)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def printed_outputs(stdout):
    return {int(i): bytes.fromhex(h) for i, h in re.findall(r"^output(\d+) ([0-9a-f]*)$", stdout, re.M)}


@pytest.mark.parametrize(("name", "target"), [("ds_cnn", "cortex-m4"), ("custom_fallback", "cortex-m55")])
def test_export_builds_and_runs_bit_exact(name, target, tmp_path):
    _, _, prog = compiled(name, target)
    inputs = program_inputs(prog.graph, np.random.default_rng(5))
    out = export_c(prog.to_bytes(), tmp_path / "export", inputs=inputs)
    assert (out / "mcuforge" / "include" / "mcuforge.h").is_file()
    assert not (out / "mcuforge" / "firmware").exists() and not (out / "mcuforge" / "export").exists()
    header = (out / "model.h").read_text()
    arena = int(re.search(r"#define MF_ARENA_BYTES (\d+)u", header).group(1))
    assert arena >= prog.arena_bytes
    assert f"#define MF_MODEL_PROGRAM_BYTES {len(prog.to_bytes())}u" in header
    assert f'section("{PROGRAM_SECTION}"), aligned(16)' in (out / "model_program.c").read_text()

    make(out)
    elf = out / "build" / "example.elf"
    assert elf.is_file() and (out / "build" / "libmcuforge.a").is_file()
    # The program sits 16-byte aligned in its own section; the arena is exactly MF_ARENA_BYTES.
    symbols = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    program_addr, program_size = re.search(r"^([0-9a-f]+) ([0-9a-f]+) R mf_model_program$", symbols, re.M).groups()
    assert int(program_addr, 16) % 16 == 0 and int(program_size, 16) == len(prog.to_bytes())
    arena_addr, arena_size = re.search(r"^([0-9a-f]+) ([0-9a-f]+) b arena$", symbols, re.M).groups()
    assert int(arena_addr, 16) % 16 == 0 and int(arena_size, 16) == arena
    # Only the kernels the program uses are linked (the others are cut from the dispatch lists).
    linked = set(re.findall(r" [Rr] mf_kernel_(\w+)$", symbols, re.M))
    assert linked == {op.kind for op in prog.graph.ops}
    # fp32 ops: exactly those the program uses, each still at its table position (the others are NULL)
    kept = re.findall(r"^(MF_ATEN|MF_ATEN_UNUSED)\((\w+)\)$", (out / "mcuforge/kernels/fp32/aten_list.h").read_text(),
                      re.M)
    assert len(kept) == len(cruntime.c_aten_table())
    used = {op.attrs["table_index"] for op in prog.graph.ops if op.kind == "aten_fp32"}
    assert {i for i, (macro, _) in enumerate(kept) if macro == "MF_ATEN"} == used
    assert set(re.findall(r" [Rr] mf_aten_(\w+)$", symbols, re.M)) == {kept[i][1] for i in used}
    assert len(used) == (1 if name == "custom_fallback" else 0)  # layer_norm

    # The example checks mf_program_arena_bytes == MF_ARENA_BYTES itself before it runs.
    got = printed_outputs(make(out, "run"))
    expected = execute(prog.graph, inputs)
    assert sorted(got) == list(range(len(expected)))
    for i, want in enumerate(expected):
        assert got[i] == np.ascontiguousarray(want).tobytes()


def test_export_from_a_file_with_zero_inputs(tmp_path):
    _, _, prog = compiled("fc_autoencoder", "cortex-m4")
    path = prog.save(tmp_path / "model.mfp")
    out = export_c(path, tmp_path / "export")
    header = (out / "model.h").read_text()
    assert '#define MF_MODEL_TARGET "cortex-m4"' in header
    assert "-mcpu=cortex-m4 -mfloat-abi=hard -mfpu=fpv4-sp-d16" in (out / "Makefile").read_text()
    got = printed_outputs(make(out, "run"))
    zeros = [np.zeros(prog.graph.tensors[n].shape, np.dtype(prog.graph.tensors[n].dtype)) for n in prog.graph.inputs]
    assert got[0] == np.ascontiguousarray(execute(prog.graph, zeros)[0]).tobytes()


def test_export_builds_with_cmake(tmp_path):
    if shutil.which("cmake") is None:
        pytest.fail("cmake not found on PATH (apt-get install cmake)", pytrace=False)
    _, _, prog = compiled("ds_cnn", "cortex-m4")
    out = export_c(prog.to_bytes(), tmp_path / "export")
    build = tmp_path / "cmake-build"
    for cmd in (["cmake", "-S", str(out), "-B", str(build), f"-DCMAKE_TOOLCHAIN_FILE={out / 'arm-none-eabi.cmake'}"],
                ["cmake", "--build", str(build), "-j2"]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert (build / "example.elf").is_file()


def test_export_traces_over_the_uart(tmp_path, capsys):
    """make TRACE=uart: the example's trace on UART0, captured over QEMU's serial port by
    `mcuforge capture` and read by `mcuforge inspect` with the exported model.mfp."""
    _, _, prog = compiled("ds_cnn", "cortex-m4")
    out = export_c(prog.save(tmp_path / "ds_cnn.mfp"), tmp_path / "export")
    assert (out / "model.mfp").read_bytes() == prog.to_bytes() and (out / "model.mfp.dbg.json").is_file()
    readme = (out / "README.md").read_text()
    assert "make TRACE=uart" in readme and "mcuforge capture" in readme and "trace_uart_port_write" in readme
    make(out, "TRACE=uart", "TIMER=icount")  # instructions: what QEMU counts (its DWT CYCCNT reads 0)
    port = free_port()
    board = subprocess.Popen(["make", "run", "TRACE=uart", "TIMER=icount", f"PORT={port}"], cwd=out, text=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        trace_path = tmp_path / "uart.trace"
        assert main(["capture", f"socket://127.0.0.1:{port}", "-o", str(trace_path), "-q", "--open-timeout", "60",
                     "--timeout", "60"]) == 0
        stdout = board.communicate(timeout=120)[0]
    finally:
        board.kill()
        board.wait()
    assert board.returncode == 0, stdout[-3000:]
    assert re.search(r"^trace: \d+ bytes on the UART, 0 records dropped$", stdout, re.M)
    zeros = [np.zeros(prog.graph.tensors[n].shape, np.dtype(prog.graph.tensors[n].dtype)) for n in prog.graph.inputs]
    assert printed_outputs(stdout)[0] == np.ascontiguousarray(execute(prog.graph, zeros)[0]).tobytes()
    trace = Trace.load(trace_path)
    assert trace.intact and trace.unit == "instructions" and len(trace.ops) == len(prog.graph.ops)
    assert all(e.duration > 0 for e in trace.ops)
    capsys.readouterr()
    assert main(["inspect", str(out / "model.mfp"), str(trace_path)]) == 0
    table = capsys.readouterr().out
    assert "stem.0" in table and "trace intact: 1 run(s)" in table


def test_export_for_a_board_without_qemu_asks_for_its_uart_function(tmp_path):
    """cortex-m0plus has no emulated board: its trace_uart_port.c is the one function to write."""
    from mcuforge.export import _trace_port

    _trace_port(tmp_path, "cortex-m0plus")
    done = subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m0plus", "-mthumb", "-c", "trace_uart_port.c", "-o",
                           "port.o"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "write trace_uart_port_write for your board's UART" in done.stderr
