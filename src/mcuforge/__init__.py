"""mcuforge: PyTorch models to int8 Arm Cortex-M programs.

The flow, one function per stage::

    prog = mcuforge.compile(model, example_inputs, calibration=data, target="cortex-m55")
    prog.save("model.mfp"); prog = mcuforge.load("model.mfp")
    outputs = prog.run(*inputs)
"""

import logging

# torchao's CPU wheel tries to load its CUDA extensions and torch warns about an Enum that
# torchao registers: import-time noise that says nothing about the user's model.
logging.getLogger("torchao").setLevel(logging.ERROR)
logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)

from . import kernels  # noqa: E402
from .api import OpRecord, Program, compile, load  # noqa: E402
from .capture import CaptureError, capture  # noqa: E402
from .evaluate import evaluate  # noqa: E402
from .inspect import Inspector  # noqa: E402
from .lower import LoweringError  # noqa: E402
from .program import ProgramFormatError  # noqa: E402
from .qat import prepare_qat, train_qat  # noqa: E402
from .targets import TARGETS, get_target  # noqa: E402
from .trace import Trace  # noqa: E402

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``mcuforge.sweep``: imported on first use (it loads pandas, Parquet and matplotlib)."""
    if name == "sweep":
        import importlib

        return importlib.import_module(".sweep", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TARGETS", "CaptureError", "Inspector", "LoweringError", "OpRecord", "Program", "ProgramFormatError", "Trace",
    "capture", "compile", "evaluate", "get_target", "kernels", "load", "prepare_qat", "train_qat",
]
