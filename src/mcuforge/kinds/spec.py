"""What one op kind is: the record every table about kinds is derived from (see :mod:`mcuforge.kinds.table`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Attribute types: "int", "float", "ints" (list of int), "str", "any" (a generic value, the fp32 fallback's).
ATTR_TYPES = ("int", "float", "ints", "str", "any")

#: How an op of a kind counts its multiply-accumulates (mcuforge.kinds.macs): "" none.
MAC_RULES = ("", "conv", "depthwise", "fully_connected", "transpose_conv", "batch_matmul", "recurrent", "aten")


@dataclass(frozen=True)
class KindSpec:
    """One op kind, written once.

    ``id`` is the kind's number in the program file (never reused); ``inputs`` the input names in file order
    (a trailing "?" marks an input that may be absent; ["*"]: any number, at least ``min_inputs``);
    ``attrs`` the attributes in file order, the ``optional_attrs`` (name -> default) last: an op may end before
    them (format 3.1). ``precisions``: what an op of the kind may record (the first is the kernel's own;
    data movement takes the precision of the values it moves). ``in_place``: the input positions its kernel may
    write its output exactly onto (it reads element i before writing element i, and nothing after it).
    ``int4_weights``: input 1 is packed int4. ``recurrent_gates``: gates per layer of a recurrent kind.
    ``searchable_weights``: its weights are a precision choice (sensitivity, precision search).
    ``macs``: its MAC rule (:data:`MAC_RULES`). ``tosa``: it has a TOSA lowering; ``npu_compute``: it does
    arithmetic (a subgraph delegated to the NPU must hold one). ``c_kernel``: the C ``mf_kernel`` it runs
    (csrc/kernels/<file>.c, "" for the delegate op, which runtime/delegate.c runs). ``cmsis_nn``: its CMSIS-NN
    counterpart, or why there is none. ``aten``: the aten overloads ("upsample_nearest2d.vec") its lowering takes
    (one declared with ``int8_lowering(kind=...)`` gets its targets from here); ``shares_input_qparams``: the
    quantizer gives those aten ops' output their input's quantization (a byte copy needs no requantization).
    """

    name: str
    id: int
    inputs: tuple[str, ...]
    attrs: tuple[tuple[str, str], ...] = ()
    precisions: tuple[str, ...] = ("a8",)
    optional_attrs: dict[str, Any] = field(default_factory=dict)
    min_inputs: int = -1  # -1: the inputs without "?"
    in_place: tuple[int, ...] = ()
    int4_weights: bool = False
    recurrent_gates: int = 0
    searchable_weights: bool = False
    macs: str = ""
    tosa: bool = False
    npu_compute: bool = False
    c_kernel: str = ""  # "" with c=True: the kind's name
    c: bool = True
    cmsis_nn: str = ""
    aten: tuple[str, ...] = ()
    shares_input_qparams: bool = False

    @property
    def variadic(self) -> bool:
        return self.inputs == ("*",)

    @property
    def n_inputs(self) -> tuple[int, int]:
        """The fewest and most inputs (255: any number)."""
        if self.variadic:
            return (max(self.min_inputs, 0), 255)
        required = sum(not name.endswith("?") for name in self.inputs)
        return (required if self.min_inputs < 0 else self.min_inputs, len(self.inputs))

    @property
    def optional_inputs(self) -> tuple[int, ...]:
        return tuple(i for i, name in enumerate(self.inputs) if name.endswith("?"))

    @property
    def kernel(self) -> str:
        """The C kernel's name (``mf_kernel_<kernel>``), "" when the kind has none in kernels/."""
        return (self.c_kernel or self.name) if self.c else ""
