"""The ``mcuforge`` command: compile, info, run, inspect, capture, export-c, size, demo."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .regions import BOARDS as REGION_BOARDS
from .targets import TARGETS, get_target


class CliError(Exception):
    """A user error: printed as one line, exit code 2."""


# -- loading user code and data -------------------------------------------------------------------

def load_factory(spec: str) -> Callable[[], Any]:
    """``models.py:make_kws`` or ``package.module:make_kws`` -> the factory function."""
    if ":" not in spec:
        raise CliError(f"expected FILE.py:FACTORY or MODULE:FACTORY, got {spec!r}")
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py") or Path(where).exists():
        path = Path(where)
        if not path.exists():
            raise CliError(f"no such file: {path}")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.parent.resolve()))
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - anything the user's file raises is the user's to fix
            raise CliError(f"cannot load {path}: {_user_code_error(exc, path)}") from exc
        finally:
            sys.path.pop(0)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise CliError(f"cannot import module {where!r}: {exc}") from exc
    factory = getattr(module, name, None)
    if not callable(factory):
        raise CliError(f"{where} has no function {name!r}")
    return factory


def _user_code_error(exc: BaseException, path: Path | None = None) -> str:
    """``NameError: name 'nn' is not defined (models.py:3)``: the exception and the last line of the
    user's code it went through (of ``path`` when given, else the last frame outside mcuforge)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError: {exc.msg} ({Path(exc.filename).name}:{exc.lineno})"
    ours = str(Path(__file__).parent)
    mine = [f for f in frames if (path is not None and Path(f.filename).resolve() == path.resolve())
            or (path is None and not f.filename.startswith(ours))]
    at = f" ({Path(mine[-1].filename).name}:{mine[-1].lineno})" if mine else ""
    message = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {message[0] if message else ''}{at}"


def call_factory(spec: str) -> tuple[Any, tuple[Any, ...]]:
    """(model, example inputs) from the user's factory, checked: one line says what is wrong."""
    where = spec.rsplit(":", 1)[0]
    factory = load_factory(spec)
    try:
        result = factory()
    except Exception as exc:  # noqa: BLE001 - the user's code: report it, do not crash in it
        path = Path(where) if Path(where).exists() else None
        raise CliError(f"{spec}() raised {_user_code_error(exc, path)}") from exc
    if not (isinstance(result, tuple) and len(result) == 2):
        got = f"a tuple of {len(result)}" if isinstance(result, tuple) else f"a {type(result).__name__}"
        raise CliError(f"{spec} must return (model, example_inputs), it returned {got}")
    model, example = result
    if not isinstance(model, torch.nn.Module):
        raise CliError(f"{spec} must return (model, example_inputs): the model is a {type(model).__name__}, "
                       "not a torch.nn.Module")
    example = (example,) if isinstance(example, torch.Tensor) else example
    if not isinstance(example, tuple | list) or not all(isinstance(x, torch.Tensor) for x in example):
        kinds = type(example).__name__ if not isinstance(example, tuple | list) else \
            ", ".join(type(x).__name__ for x in example)
        raise CliError(f"{spec} must return (model, example_inputs): example_inputs must be a tensor or a tuple "
                       f"of tensors, got {kinds}")
    return model, tuple(example)


def load_arrays(path: str) -> list[np.ndarray]:
    """Arrays of a .npy (one) or .npz (several, in file order)."""
    p = Path(path)
    if not p.exists():
        raise CliError(f"no such file: {p}")
    try:
        data = np.load(p, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - numpy raises many types on bad files
        raise CliError(f"cannot read {p}: {exc}") from exc
    if isinstance(data, np.ndarray):
        return [data]
    return [data[k] for k in data.files]


def calibration_from_npz(path: str, example: Sequence[torch.Tensor]) -> list[tuple[torch.Tensor, ...]]:
    """Calibration items from an .npz: one array per model input, samples along the first axis
    (either batches of the example's batch size, or one leading sample axis more)."""
    arrays = load_arrays(path)
    if len(arrays) != len(example):
        raise CliError(f"{path} holds {len(arrays)} arrays; the model takes {len(example)} inputs")
    chunks = []
    for i, (arr, ex) in enumerate(zip(arrays, example, strict=True)):
        if arr.shape[1:] == tuple(ex.shape[1:]):
            b = ex.shape[0]
            chunks.append([arr[j:j + b] for j in range(0, len(arr) - b + 1, b)])
        elif arr.shape[1:] == tuple(ex.shape):
            chunks.append(list(arr))
        else:
            raise CliError(f"{path}: array {i} has shape {arr.shape}; expected (N, {', '.join(map(str, ex.shape[1:]))})"
                           f" or (N, {', '.join(map(str, ex.shape))})")
    count = min(len(c) for c in chunks)
    return [tuple(torch.from_numpy(np.ascontiguousarray(c[j], dtype=np.float32)) for c in chunks)
            for j in range(count)]


# -- commands ---------------------------------------------------------------------------------------

def cmd_compile(args: argparse.Namespace) -> int:
    from . import api
    from .report import memory_summary

    model, example = call_factory(args.model)
    calibration = calibration_from_npz(args.calibration, example) if args.calibration else None
    auto = args.quantization == "auto"
    prog = api.compile(model, example, calibration=calibration, target=args.target,
                       quantization="int8" if auto else args.quantization, precision="auto" if auto else None,
                       flash_budget=args.flash_budget, ram_budget=args.ram_budget, patches=args.patches,
                       flash_bytes=args.flash_bytes, ram_bytes=args.ram_bytes, fit_check=not args.no_fit_check,
                       equalization=args.equalization, bias_correction=args.bias_correction, board=args.board)
    out = Path(args.output or (args.model.rsplit(":", 1)[1] + ".mfp"))
    prog.save(out)
    print(f"wrote {out} ({prog.program_bytes:,} bytes) and {out}{api.DEBUG_SUFFIX} "
          f"in {prog.compile_seconds:.1f} s")
    print(memory_summary(prog))
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from . import api
    from .report import memory_summary, op_table, precision_choice_table

    prog = api.load(args.program)
    print(op_table(prog))
    print()
    choice = precision_choice_table(prog)
    if choice:
        print(choice)
        print()
    print(memory_summary(prog))
    ops = prog.ops
    total = sum(op.macs for op in ops)
    int8 = sum(op.macs for op in ops if op.backend != "fp32")  # integer kernels and NPU subgraphs
    widths = {op.precision for op in ops if op.backend != "fp32" and op.macs} - {"a8w8", ""}
    label = "MACs on int8   " if not widths else "MACs on integer"  # int16 / int4 kernels are not "int8"
    print(f"{label} {int8 / total if total else 1.0:.1%} ({int8:,} of {total:,}; the rest runs in fp32)")
    if widths:
        shares = {}
        for op in ops:
            if op.backend != "fp32" and op.macs:
                shares[op.precision or "npu"] = shares.get(op.precision or "npu", 0) + op.macs
        print("MACs by width   " + ", ".join(f"{p} {m / total:.1%}" for p, m in sorted(shares.items())))
    if any(op.kind == "delegate" for op in prog.graph.ops):
        from .ethosu.report import npu_summary

        print(npu_summary(prog))
    if args.cycles:
        _print_cycle_estimate(prog, args)
    return 0


def _print_cycle_estimate(prog: Any, args: argparse.Namespace) -> None:
    """info --cycles: one traced run on the emulated board with the cycle plugin; estimated cycles and
    milliseconds per op and per inference (random inputs: the kernels' instruction paths do not depend
    on the values, except divides and early-terminating multiplies)."""
    from .firmware import describe_run

    target = args.target or prog.target
    measured: dict[str, Any] = {}
    _outputs, trace = prog.run(*_random_inputs(prog), backend="qemu", target=target, trace=True,
                               measured=measured, board={"cycles": True, "clock_mhz": args.clock_mhz,
                                                         "memory": _memory(args)})
    estimate = measured["cycles"]
    print(f"\nESTIMATED cycles on {estimate.core} (timing model over QEMU's executed instructions, "
          f"not a measurement; docs/cycles.md):")
    _print_estimate_table(prog, estimate)
    top = list(estimate.functions.items())[:8]
    print("where the estimated cycles go (firmware functions): " + ", ".join(
        f"{name} {cycles / estimate.cycles:.1%}" for name, cycles in top))
    print(describe_run(measured))


def _memory(args: argparse.Namespace) -> Any:
    """--fetch-wait-states / --load-wait-states as the timing model's memory."""
    from .cycles import Memory

    return Memory(fetch_wait_states=args.fetch_wait_states, load_wait_states=args.load_wait_states)


def _add_memory_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fetch-wait-states", type=int, default=0, metavar="N",
                   help="estimated cycles: wait states added to every taken branch's refill (a flash without a "
                        "cache; 0 behind a cache that holds the loops, as ST's ART; default 0)")
    p.add_argument("--load-wait-states", type=int, default=0, metavar="N",
                   help="estimated cycles: wait states added to every data load (default 0)")


def _print_estimate_table(prog: Any, estimate: Any) -> None:
    import pandas as pd

    ops = prog.ops
    rows = [{"op": i, "kind": ops[i].kind if i < len(ops) else "?", "instructions": n, "est. cycles": round(c),
             f"est. ms @ {estimate.clock_hz / 1e6:g} MHz": c * 1e3 / estimate.clock_hz,
             "cycles/MAC": c / ops[i].macs if i < len(ops) and ops[i].macs else float("nan")}
            for i, (c, n) in enumerate(zip(estimate.op_cycles or [], estimate.op_instructions or [], strict=True))]
    with pd.option_context("display.max_rows", None, "display.width", 160):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def _random_inputs(prog: Any) -> list[np.ndarray]:
    gen = np.random.default_rng(0)
    inputs = []
    for name, shape in zip(prog.graph.inputs, prog.input_shapes, strict=True):
        t = prog.graph.tensors[name]
        floating = t.dtype == "float32" or t.qparams is not None
        inputs.append(gen.standard_normal(shape).astype(np.float32) if floating else np.zeros(shape, t.dtype))
    return inputs


def cmd_run(args: argparse.Namespace) -> int:
    from . import api

    prog = api.load(args.program)
    backend = {"host": "python", "c": "c", "qemu": "qemu"}[args.on]
    board = _board_options(args, backend)
    if backend == "qemu" and args.cycles:
        from .cycles.plugin import PluginError, build

        try:
            build()  # the plugin needs the host C compiler: without one, run without the estimate
            board.update(cycles=True, clock_mhz=args.clock_mhz, memory=_memory(args))
        except PluginError as exc:
            print(f"warning: no estimated cycles: {exc}", file=sys.stderr)
    if args.inputs:
        inputs = load_arrays(args.inputs)
    else:
        print("warning: no --inputs given: running on random normal inputs", file=sys.stderr)
        inputs = _random_inputs(prog)
    trace_mode = ("full" if args.full else True) if args.trace else False
    if args.full and not args.trace:
        raise CliError("--full needs --trace FILE")
    if backend == "qemu" and not trace_mode:
        trace_mode = True  # on a board the per-op instruction counts are the point of the run
    measured: dict[str, Any] = {}
    outputs = prog.run(*inputs, backend=backend, target=args.target, trace=trace_mode, measured=measured,
                       board=board)
    if trace_mode:
        outputs, trace = outputs
        if args.trace:
            trace.save(args.trace)
            print(f"wrote {args.trace} ({len(trace.to_bytes()):,} bytes): {trace.status_line}")
            if trace.cycles is not None:  # the estimate is not part of the stream: kept beside it
                from .cycles.run import SIDECAR

                print(f"wrote {trace.cycles.save(str(args.trace) + SIDECAR)} (estimated cycles)")
        if backend == "qemu":
            from .firmware import describe_run
            from .inspect import Inspector

            clock = {"icount": "QEMU -icount shift=0, counted with SysTick", "systick": "SysTick",
                     "dwt": "DWT CYCCNT, which QEMU leaves at 0"}[args.timer]
            via = f", trace over UART0 ({measured['trace_dropped']} records dropped)" if args.via == "uart" else ""
            print(f"per-op {trace.unit} ({clock}{via}):")
            print_inspection(Inspector(prog, trace), depth=1)
            print(describe_run(measured))
    np.set_printoptions(precision=4, suppress=True, linewidth=110, threshold=200)
    for i, out in enumerate(outputs):
        print(f"output {i}: shape {list(out.shape)}")
        print(out)
    if args.output:
        np.savez(args.output, *outputs)
        print(f"wrote {args.output}")
    return 0


def _board_options(args: argparse.Namespace, backend: str) -> dict[str, Any] | None:
    """run's --via and --timer, which only a board has."""
    if backend != "qemu":
        if args.via != "semihosting" or args.timer != "icount":
            raise CliError("--via and --timer are options of --on qemu")
        if args.clock_mhz is not None:
            raise CliError("--clock-mhz is an option of --on qemu (the estimated cycles' clock)")
        return None
    return {"via": args.via, "timer": args.timer, "progress": args.via == "uart"}


def print_inspection(insp: Any, depth: int | None) -> Any:
    """The Inspector's op table and its totals per module and per op kind; returns the DataFrame."""
    import pandas as pd

    from .inspect.gaps import gap_lines

    if not insp.trace.intact:
        print(f"warning: {insp.trace.status_line}", file=sys.stderr)
    df = insp.to_dataframe()
    shown = ["run", "op_index", "kind", "backend", "module", "duration"]
    shown += ["ms"] if "ms" in df else []
    shown += ["est_cycles", "est_ms"] if "est_cycles" in df else []  # a core's timing model: estimates
    shown += ["run_gaps"] if insp.trace.gaps else []  # a run that lost records says so on every row
    table = df[shown].rename(columns={"op_index": "op", "duration": f"time ({insp.unit})",
                                      "run_gaps": "gaps in run", "est_cycles": "est. cycles",
                                      "est_ms": f"est. ms @ {df.attrs.get('cycle_clock_hz', 0) / 1e6:g} MHz"})
    with pd.option_context("display.max_rows", None, "display.width", 160):
        print(table.to_string(index=False))
        for by in ("module", "kind"):
            print(f"\ntotals per {by} ({insp.unit}):")
            print(insp.totals(by, depth if by == "module" else None).to_string(float_format=lambda v: f"{v:,.3g}"))
    if insp.trace.gaps:
        print("\ngaps:")
        print("\n".join(gap_lines(insp.trace)))
    print(f"\n{insp.trace.status_line}")
    return df


def cmd_inspect(args: argparse.Namespace) -> int:
    from .inspect import Inspector

    insp = Inspector.load(args.program, args.trace, clock_hz=args.clock_hz)
    df = print_inspection(insp, args.depth)
    if insp.trace.cycles is not None:
        print(f"{insp.trace.cycles.summary()} ({args.trace}.cycles.json)")
    for path, write in ((args.html, insp.to_html), (args.chrome, insp.to_chrome_trace), (args.csv, df.to_csv)):
        if path:
            write(path)
            print(f"wrote {path}")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from .trace import Trace
    from .trace.uart import capture

    got = capture(args.port, baudrate=args.baud, timeout=args.timeout, max_seconds=args.max_seconds,
                  progress=not args.quiet, open_timeout=args.open_timeout)
    print(f"received {got.summary()}")
    if not got.data:
        raise CliError(f"no trace stream arrived on {args.port} (no valid STREAM_START in "
                       f"{got.skipped_before:,} bytes)")
    Path(args.output).write_bytes(got.data)
    print(f"wrote {args.output}: {Trace.from_bytes(got.data).status_line}")
    return 0


def cmd_export_c(args: argparse.Namespace) -> int:
    from .export import export_c

    out = export_c(args.program, args.output)
    print(f"wrote {out}/: runtime sources, model_program.c (the program in flash), model.h (arena size, I/O), "
          f"main.c, Makefile, CMakeLists.txt")
    print(f"build it with: make -C {out}")
    return 0


def cmd_size(args: argparse.Namespace) -> int:
    from . import api
    from .firmware import check_board_target, format_size_report, size_report

    prog = api.load(args.program) if args.program else None
    target = args.target or (prog.target if prog is not None else "cortex-m55")
    if prog is not None:
        check_board_target(prog.target, target)
    print(format_size_report(size_report(target, prog)))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from . import api
    from .evaluate import evaluate
    from .examples.digits import fp32_accuracy, load_digits_data, train_digits_cnn
    from .report import memory_summary, op_table

    print("1. training a small CNN on scikit-learn's digits (8x8 images, 10 classes)")
    data = load_digits_data()
    model = train_digits_cnn(data, epochs=args.epochs)
    fp32 = fp32_accuracy(model, data.x_test, data.y_test)
    print(f"\n2. compiling for {args.target}: PT2E int8, calibrated on 256 training images")
    calibration = [(data.x_train[i:i + 1],) for i in range(256)]
    prog = api.compile(model, (data.x_test[:1],), calibration=calibration, target=args.target)
    print(op_table(prog))
    print()
    print(memory_summary(prog))
    print(f"compiled in {prog.compile_seconds:.1f} s")
    if args.output:
        prog.save(args.output)
        print(f"wrote {args.output}")
    print(f"\n3. running the int8 program on the host runtime over {len(data.x_test)} test images")
    batches = [(data.x_test[i:i + 32], data.y_test[i:i + 32]) for i in range(0, len(data.x_test), 32)]
    int8 = evaluate(prog, batches)
    print(f"\n   fp32 accuracy  {fp32 * 100:6.2f} %")
    print(f"   int8 accuracy  {int8 * 100:6.2f} %   ({(int8 - fp32) * 100:+.2f} points)")
    if args.host_only or get_target(args.target).qemu_machine is None:
        return 0
    _demo_on_board(prog, model, data.x_test[:1], args.html)
    return 0


def _demo_on_board(prog: Any, model: Any, x: Any, html: str | None) -> None:
    """Step 4 of the demo: one image through the C runtime and the firmware on QEMU, compared
    byte for byte with the host runtime, and the board's per-op profile."""
    from .firmware import describe_run
    from .inspect import Inspector

    board = get_target(prog.target).qemu_machine
    print(f"\n4. the same program in C: on this machine, and as firmware on the emulated {prog.target} "
          f"({board}, QEMU)")
    # Outputs are dequantized from int8 with one scale each, so equal floats are equal bytes.
    host = prog.run(x)
    c_runtime = prog.run(x, backend="c")
    measured: dict[str, Any] = {}
    on_board, trace = prog.run(x, backend="qemu", trace=True, measured=measured)
    same = all(np.array_equal(a, b) and np.array_equal(a, c)
               for a, b, c in zip(host, c_runtime, on_board, strict=True))
    print(f"   output bytes: host Python {'==' if same else '!='} host C {'==' if same else '!='} "
          f"{prog.target} on QEMU{'' if same else '   MISMATCH'}")
    print(f"   {describe_run(measured)}\n")
    insp = Inspector(prog, trace)
    print_inspection(insp, depth=1)
    if html:
        insp.numeric_gap(model, x)
        insp.to_html(html)
        print(f"wrote {html} (per-op instructions, arena timeline, SQNR per layer)")
    if not same:
        raise CliError("the C runtime or the board gave different bytes from the host runtime")


def byte_count(value: str) -> int:
    """``262144``, ``256K``, ``1.5M``, ``2MB`` -> bytes (K and M are 1024 and 1024**2)."""
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    try:
        number = float(text[:-1] if scale > 1 else text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a byte count (e.g. 262144, 256K, 2M)") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive byte count")
    return int(number * scale)


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (no usage block): the CLI's errors are all one line, exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _quantization(value: str) -> str:
    """--quantization of compile: "auto" or a scheme name mcuforge.quantize.SCHEMES has (checked before the model
    loads)."""
    from .quantize import get_scheme

    if value == "auto":
        return value
    try:
        return get_scheme(value).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _board_name(value: str) -> str:
    """--board of compile: a named board of mcuforge.regions ("board@REGION": its constants copied to REGION)."""
    from .regions import get_board_spec

    try:
        get_board_spec(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    key, at, region = value.partition("@")
    return key.lower() + at + region


def _compile_target(value: str) -> str:
    """--target of compile: a Cortex-M, or "CPU+NPU" (e.g. cortex-m55+ethos-u55-128)."""
    from .ethosu.npu import split_target

    try:
        cpu, _npu = split_target(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if cpu not in TARGETS:
        raise argparse.ArgumentTypeError(f"unknown target {cpu!r}; known: {', '.join(sorted(TARGETS))}")
    return value


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run a sweep (points not yet in --out's table), or with --report draw its Pareto front."""
    from . import sweep

    if args.report:
        done = sweep.report(args.out, objective=args.objective)
        print(f"{len(done['table'])} points, {len(done['front'])} on the Pareto front ({done['quality']}); "
              f"plot {done['png']}, report {done['html']}")
        print(sweep.report_module.best_text(done["best"], done["quality"]))
        return 0
    if not args.spec:
        raise CliError("mcuforge sweep: give the sweep description (sweep.yaml), or --report")
    table = sweep.run(args.spec, args.out, ray=args.ray, workers=args.workers, progress=not args.quiet,
                      retry_failed=args.retry_failed)
    counts = table["status"].value_counts().to_dict() if len(table) else {}
    print(f"{len(table)} points in {args.out}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcuforge", description="PyTorch models to int8 Cortex-M programs.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("compile", help="capture, quantize, lower and plan a model; write the program")
    p.add_argument("model", help="FILE.py:FACTORY or MODULE:FACTORY; FACTORY() returns (model, example_inputs)")
    p.add_argument("--target", default=None, type=_compile_target, metavar="TARGET",
                   help=f"a Cortex-M ({', '.join(sorted(TARGETS))}), optionally with an Ethos-U NPU: "
                        "cortex-m55+ethos-u55-128 (ops the NPU runs are delegated, compiled by Vela); default: "
                        "the --board's core, else cortex-m55")
    p.add_argument("--board", type=_board_name, metavar="BOARD",
                   help=f"a named board ({', '.join(sorted(REGION_BOARDS))}): its core, flash and RAM regions "
                        "(the arena is split across them when no one region holds it); BOARD@REGION copies the "
                        "constants to that RAM region at mf_init (e.g. mps3-an547@DTCM)")
    p.add_argument("--calibration", help=".npz with one array per input, samples along the first axis")
    p.add_argument("--quantization", default="int8", type=_quantization, metavar="SCHEME",
                   help="int8 (default); w4a8: int4 weights for convolutions and linear layers (about half the "
                        "flash); a16w8: int16 activations, int8 weights (CMSIS-NN's s16 kernels); auto: int8, "
                        "w4a8 or a16w8 per layer, chosen to meet --flash-budget / --ram-budget with the least loss "
                        "of output SQNR on the calibration data")
    p.add_argument("--flash-budget", type=byte_count, metavar="N",
                   help="program bytes at most (refused above; --quantization auto chooses precisions to meet it)")
    p.add_argument("--ram-budget", type=byte_count, metavar="N",
                   help="arena bytes at most (met by precision with --quantization auto, else by patch-based "
                        "execution; refused when neither meets it)")
    p.add_argument("--patches", type=int, metavar="N", help="run the leading ops over N x N spatial patches")
    p.add_argument("--equalization", action=argparse.BooleanOptionalAction, default=None,
                   help="cross-layer equalization before quantizing, kept if it raises the calibration SQNR "
                        "(default: off)")
    p.add_argument("--bias-correction", action=argparse.BooleanOptionalAction, default=None,
                   help="take each layer's mean output error (quantized against fp32, on the calibration data) "
                        "out of its bias (default: the layers with 4-bit weights only, where it lost on no model)")
    p.add_argument("-o", "--output", help="program file to write (default: FACTORY.mfp)")
    p.add_argument("--flash-bytes", type=byte_count, metavar="N",
                   help="your part's flash for the program file (e.g. 1M, 512K); default: the target's reference "
                        "board (mcuforge.targets)")
    p.add_argument("--ram-bytes", type=byte_count, metavar="N", help="your part's RAM for the arena (e.g. 256K)")
    p.add_argument("--no-fit-check", action="store_true", help="write the program even if it does not fit the board")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("info", help="show a program's ops, where each runs and why, and its memory")
    p.add_argument("program")
    p.add_argument("--cycles", action="store_true",
                   help="also run it once on the emulated board and show ESTIMATED cycles and milliseconds per "
                        "op and per inference (a per-core timing model over the executed instructions)")
    p.add_argument("--target", choices=sorted(TARGETS), help="with --cycles: the board (default: the program's)")
    p.add_argument("--clock-mhz", type=float, help="with --cycles: the clock of the milliseconds (default: the "
                                                   "board's)")
    _add_memory_options(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("run", help="run a program on the host (Python or C runtime) or on an emulated board")
    p.add_argument("program")
    p.add_argument("--on", choices=("host", "c", "qemu"), default="host",
                   help="host: the Python runtime; c: the C runtime built for this machine; "
                        "qemu: the firmware on the emulated board of --target")
    p.add_argument("--target", choices=sorted(TARGETS), help="board for --on qemu (default: the program's target)")
    p.add_argument("--inputs", help=".npy (one input) or .npz (one array per input), NCHW float")
    p.add_argument("-o", "--output", help="write the outputs to this .npz")
    p.add_argument("--trace", metavar="FILE", help="also write the trace stream (per-op times) to FILE")
    p.add_argument("--full", action="store_true", help="with --trace: also record every op's output")
    p.add_argument("--via", choices=("semihosting", "uart"), default="semihosting",
                   help="--on qemu: how the trace leaves the board: a semihosting file, or its UART0 (captured "
                        "over QEMU's serial TCP port, as `mcuforge capture` reads a real board's)")
    p.add_argument("--timer", choices=("icount", "systick", "dwt"), default="icount",
                   help="--on qemu: the trace's clock, built into the firmware: instructions (icount), cycles "
                        "from SysTick, or DWT CYCCNT cycles (which QEMU does not count)")
    p.add_argument("--cycles", action=argparse.BooleanOptionalAction, default=True,
                   help="--on qemu: ESTIMATED cycles and milliseconds per op and per inference, from a per-core "
                        "timing model over the executed instructions (a QEMU plugin built with the host gcc; "
                        "default: on)")
    p.add_argument("--clock-mhz", type=float, help="--on qemu: the clock of the estimated milliseconds (default: "
                                                   "the board's)")
    _add_memory_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("inspect", help="a trace of a program: op table, totals per module and kind, reports")
    p.add_argument("program")
    p.add_argument("trace")
    p.add_argument("--html", metavar="FILE", help="write the HTML report (plots, tables)")
    p.add_argument("--chrome", metavar="FILE", help="write a Chrome trace JSON (Perfetto)")
    p.add_argument("--csv", metavar="FILE", help="write the op table (one row per op per run)")
    p.add_argument("--depth", type=int, help="module totals by path prefix of this many parts")
    p.add_argument("--clock-hz", type=float, help="the core's clock: a cycle trace's times also in milliseconds")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("capture", help="read a trace from a serial port (a board's UART) into a trace file")
    p.add_argument("port", help="a serial device (/dev/ttyACM0, COM3) or a pyserial URL; socket://HOST:PORT "
                                "reaches QEMU's -serial tcp:HOST:PORT,server=on")
    p.add_argument("-o", "--output", required=True, help="trace file to write (for `mcuforge inspect`)")
    p.add_argument("--baud", type=int, default=115200, help="baud rate of a serial device (default 115200)")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="stop when no byte came for this many seconds (default 10); it also stops at STREAM_END")
    p.add_argument("--max-seconds", type=float, help="stop after this many seconds in all")
    p.add_argument("--open-timeout", type=float, default=0.0,
                   help="retry opening the port for this many seconds (a QEMU or board still starting)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_capture)

    p = sub.add_parser("export-c", help="write a C project: runtime sources, the program in flash, Makefile, CMake")
    p.add_argument("program")
    p.add_argument("-o", "--output", required=True, help="folder to write")
    p.set_defaults(func=cmd_export_c)

    p = sub.add_parser("size", help="runtime code bytes on a target; with a program, its flash, RAM and stack "
                                    "measured on the emulated board")
    p.add_argument("program", nargs="?")
    p.add_argument("--target", choices=sorted(TARGETS), help="default: the program's target")
    p.set_defaults(func=cmd_size)

    p = sub.add_parser("demo", help="the built-in example: digits CNN, fp32 vs int8")
    p.add_argument("--target", default="cortex-m55", choices=sorted(TARGETS))
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("-o", "--output", help="also save the program here")
    p.add_argument("--host-only", action="store_true", help="skip step 4 (C runtime and the emulated board)")
    p.add_argument("--html", help="write the Inspector's HTML report of the board run here")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("sweep", help="a design-space sweep: models x precisions x budgets x boards, measured; "
                                     "--report draws its Pareto front")
    p.add_argument("spec", nargs="?", help="the sweep description (YAML, docs/sweeps.md)")
    p.add_argument("--out", required=True, help="the result folder (Parquet table; a rerun resumes)")
    p.add_argument("--ray", metavar="ADDRESS", help="run on a Ray cluster ('local' starts one; needs the ray extra)")
    p.add_argument("--workers", type=int, help="local processes (or the local Ray cluster's CPUs); default: cores")
    p.add_argument("--retry-failed", action="store_true", help="compute failed points again")
    p.add_argument("--report", action="store_true", help="write the Pareto plot and HTML table, print the best")
    p.add_argument("--objective", help="the report's quality column (default: accuracy with labels, else sqnr_db)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """Warnings as one plain line, without the source line of the library that raised them."""
    print(f"warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A user's mistake is one line on stderr and exit 2; a bug in mcuforge is one line,
    a line asking for a bug report with the files that reproduce it (the traceback goes to a file), exit 1."""
    from .capture import CaptureError
    from .cruntime import CRuntimeBuildError, CRuntimeError
    from .firmware import FirmwareBuildError, FirmwareRunError, ToolchainMissing
    from .lower import LoweringError
    from .program import ProgramFormatError
    from .runtime import OpExecutionError
    from .trace import TraceFormatError
    from .trace.uart import SerialCaptureError

    user_errors = (CliError, ProgramFormatError, TraceFormatError, CaptureError, LoweringError, OpExecutionError,
                   CRuntimeError, CRuntimeBuildError, FirmwareBuildError, FirmwareRunError, ToolchainMissing,
                   SerialCaptureError, ValueError, OSError)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error (its one line is printed already)
        return exc.code if isinstance(exc.code, int) else 2
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.showwarning = _show_warning
    try:
        return args.func(args)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"mcuforge {args.command}: interrupted", file=sys.stderr)
        return 130
    except user_errors as exc:
        print(f"mcuforge {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a bug of ours: say so, keep the traceback for the report
        report = _write_crash_report(exc, argv)
        print(f"mcuforge {args.command}: internal error: {type(exc).__name__}: {_one_line(exc)}{_our_frame(exc)}",
              file=sys.stderr)
        files = [a for a in (argv if argv is not None else sys.argv[1:]) if Path(a.split(":")[0]).is_file()]
        print(f"this is a bug in mcuforge, not in your input: please report it with the command line, the file(s) "
              f"that reproduce it ({', '.join(files) or 'your model and data'}) and {report}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return "; ".join(lines[:1] + ([f"... ({len(lines) - 1} more lines)"] if len(lines) > 1 else [])) or \
        type(exc).__name__


def _our_frame(exc: BaseException) -> str:
    """" (at mcuforge/lower/to_ir.py:123)": the innermost frame in mcuforge's own code."""
    import traceback

    root = Path(__file__).parent
    ours = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).is_relative_to(root)]
    return f" (at mcuforge/{Path(ours[-1].filename).relative_to(root)}:{ours[-1].lineno})" if ours else ""


def _write_crash_report(exc: BaseException, argv: Sequence[str] | None) -> str:
    """The traceback and the command line in a file (its path, for the bug report)."""
    import platform
    import tempfile
    import traceback

    from . import __version__

    text = (f"mcuforge {__version__}, Python {platform.python_version()}, torch {torch.__version__}\n"
            f"command: mcuforge {' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
            + "".join(traceback.format_exception(exc)))
    try:
        with tempfile.NamedTemporaryFile("w", prefix="mcuforge-crash-", suffix=".txt", delete=False) as f:
            f.write(text)
        return f"the traceback in {f.name}"
    except OSError:
        return "the traceback (could not be written to a file)"


if __name__ == "__main__":
    raise SystemExit(main())
