"""The public API on a custom two-input, two-output model and on the examples' factories."""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import mcuforge

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "models.py"


def load_examples():
    spec = importlib.util.spec_from_file_location("example_models", EXAMPLES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_inputs_two_outputs():
    model, example = load_examples().make_sensor_net()
    gen = torch.Generator().manual_seed(0)
    calib = [(torch.randn(1, 1, 12, 12, generator=gen), torch.randn(1, 6, generator=gen)) for _ in range(16)]
    prog = mcuforge.compile(model, example, calibration=calib, target="cortex-m33", progress=False)
    assert prog.target == "cortex-m33"
    logits, probs = prog.run(*example)
    ref_logits, ref_probs = model(*example)
    assert logits.shape == (1, 3) and probs.shape == (1, 3)
    np.testing.assert_allclose(logits, ref_logits.detach().numpy(), atol=0.1)
    np.testing.assert_allclose(probs, ref_probs.detach().numpy(), atol=0.05)
    # numpy inputs work as well as tensors
    np.testing.assert_array_equal(prog.run(*(x.numpy() for x in example))[0], logits)
    with pytest.raises(ValueError, match="takes 2 input"):
        prog.run(example[0])


def test_op_records_describe_the_program():
    model, example = load_examples().make_kws()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = mcuforge.compile(model, example, target="cortex-m4", progress=False)
    first = prog.ops[0]
    assert (first.kind, first.backend, first.reason) == ("conv2d_s8", "int8", "")
    assert first.input_shapes == ((1, 49, 10, 1),) and first.output_shapes == ((1, 25, 5, 64),)
    assert first.macs == 25 * 5 * 64 * 10 * 4
    assert prog.arena_bytes >= 2 * 25 * 5 * 64  # two 8,000-byte activations are live at once
    assert prog.constant_bytes > sum(p.numel() for p in model.parameters() if p.dim() > 1)


def test_random_calibration_warns():
    model, example = load_examples().make_kws()
    with pytest.warns(UserWarning, match="no calibration data"):
        mcuforge.compile(model, example, progress=False)


def test_unknown_target_is_a_clear_error():
    model, example = load_examples().make_kws()
    with pytest.raises(ValueError, match="unknown target 'cortex-m99'"):
        mcuforge.compile(model, example, target="cortex-m99", progress=False)


def test_capture_failure_names_the_model():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # data-dependent control flow: torch.export cannot capture it
                return x
            return -x

    with pytest.raises(mcuforge.CaptureError, match="DataDependent"):
        mcuforge.compile(DataDependent(), (torch.randn(1, 4),), calibration=[(torch.randn(1, 4),)], progress=False)
