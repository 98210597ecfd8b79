"""Shared checks for converter tests: convert, run, compare with eager PyTorch.

Converted modules run through PyTorch's own NNAPI runtime (torch.classes._nnapi) on
torch-nnapi's libneuralnetworks.so when the C library is built; otherwise on the host
runtime (the same serialized model, deserialized into our Model). Every operation the
converter emits has a signature and a host kernel, so nothing is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
import torch
import torch.nn as nn

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.outputs import leaves_of, structure_of
from torch_nnapi.convert.tools.host import run_on_host

FLOAT_TOLERANCE = 1e-5  # relative to the output's magnitude
# The ``nhwc`` option of a conversion, for tests that run with either input layout.
LAYOUTS = [pytest.param(False, id="nchw"), pytest.param(True, id="nhwc")]


class Fn(nn.Module):
    """A module applying ``fn`` to its inputs: the PyTorch code under test, as a lambda."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def torch_runtime_available() -> bool:
    """True when torch's NNAPI runtime can load torch-nnapi's C library."""
    try:
        import torch_nnapi

        path = torch_nnapi.library_path()  # provided by the C library layer
    except (AttributeError, ImportError, OSError, RuntimeError):
        return False
    return bool(path) and os.path.exists(path)


def convert(model, inputs, **options):
    return convert_with_details(model, inputs, **options)


def run(module, inputs, host: bool | None = None):
    """Runs a converted module: torch's NNAPI runtime if available, else the host runtime."""
    inputs = tuple(inputs)
    if host is None:
        host = not torch_runtime_available()
    if host:
        return run_on_host(module, *inputs)
    return module(*inputs)


def as_list(out):
    """The tensors a model returns (nested in tuples, lists, dicts...), in order."""
    return leaves_of(out)


def assert_close(actual, expected, what: str = "output",
                 tolerance: float = FLOAT_TOLERANCE) -> float:
    """The same structure (dicts, tuples...: dict subclasses aside, as TorchScript returns
    them), each float within ``tolerance`` (1e-5) of the output's magnitude, each quantized
    tensor within one quantum."""
    worst = 0.0
    got, want = structure_of(actual), structure_of(expected)
    assert got.same_as(want), f"returns {got.describe()}, expected {want.describe()}"
    actual, expected = as_list(actual), as_list(expected)
    assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert tuple(a.shape) == tuple(e.shape), \
            f"{what} {i}: shape {list(a.shape)}, expected {list(e.shape)}"
        if e.is_quantized:
            assert a.is_quantized, f"{what} {i}: expected a quantized tensor"
            assert abs(a.q_scale() - e.q_scale()) <= 1e-6 * e.q_scale(), \
                f"{what} {i}: scale {a.q_scale()}, expected {e.q_scale()}"
            assert a.q_zero_point() == e.q_zero_point(), \
                f"{what} {i}: zero point {a.q_zero_point()}, expected {e.q_zero_point()}"
            diff = (a.int_repr().int() - e.int_repr().int()).abs().max().item()
            assert diff <= 1, f"{what} {i}: off by {diff} quanta"
            worst = max(worst, float(diff))
            continue
        assert a.dtype == e.dtype, f"{what} {i}: dtype {a.dtype}, expected {e.dtype}"
        if e.dtype in (torch.bool, torch.int64, torch.int32):
            assert torch.equal(a, e), f"{what} {i}: {a} != {e}"
            continue
        scale = max(e.abs().max().item(), 1e-30)
        err = (a.float() - e.float()).abs().max().item() / scale
        assert err <= tolerance, f"{what} {i}: relative error {err:.3g}"
        worst = max(worst, err)
    return worst


def check(model, inputs, *, host: bool | None = None, run_inputs=None, **options):
    """Converts ``model`` for ``inputs``, runs it (on ``run_inputs`` if given) and compares
    with eager; returns the conversion and the worst error."""
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    model = model.eval() if isinstance(model, torch.nn.Module) else model
    conversion = convert(model, inputs, **options)
    worst = 0.0
    for xs in (run_inputs or [inputs]):
        xs = (xs,) if isinstance(xs, torch.Tensor) else tuple(xs)
        with torch.no_grad():
            expected = model(*xs)
        actual = run(conversion.module, xs, host)
        worst = max(worst, assert_close(actual, expected))
    return conversion, worst


def nnapi_ops(conversion) -> list[str]:
    return [op.type.name for op in conversion.model.operations]


class QuantaStats(NamedTuple):
    max_quanta: float
    within_one: float  # fraction of elements within one quantum
    top1_agree: bool


def dequantized_scale(conversion) -> float:
    """The scale of the quantized tensor the model's (first) float output is dequantized from."""
    model = conversion.model
    producer = {o: op for op in model.operations for o in op.outputs}
    op = producer[model.outputs[0]]
    while op.type.name != "DEQUANTIZE":
        op = producer[op.inputs[0]]
    return model.operands[op.inputs[0]].scale


def compare_in_quanta(actual, expected, scale: float) -> QuantaStats:
    """How far a quantized model's float output is from PyTorch's, in quanta."""
    a, e = as_list(actual)[0].float(), as_list(expected)[0].float()
    assert a.shape == e.shape, f"shape {list(a.shape)}, expected {list(e.shape)}"
    quanta = (a - e).abs() / scale
    top1 = bool(torch.equal(a.reshape(a.shape[0], -1).argmax(1),
                            e.reshape(e.shape[0], -1).argmax(1)))
    return QuantaStats(round(quanta.max().item(), 3),
                       (quanta <= 1.001).float().mean().item(), top1)


def save_for_fresh_process(directory: Path, name: str, module: torch.jit.ScriptModule,
                           inputs: list, expected: list) -> None:
    """Saves ``module`` (full and lite) with its inputs and eager's outputs, for
    :func:`check_in_fresh_process`."""
    torch.jit.save(module, str(directory / f"{name}.pt"))
    module._save_for_lite_interpreter(str(directory / f"{name}.ptl"))
    torch.save({"inputs": inputs, "expected": expected}, directory / f"{name}.data")


def check_in_fresh_process(directory: Path, names: list[str]) -> None:
    """Loads each saved module in a fresh process, as a full and a lite-interpreter module,
    and compares its outputs on the saved inputs with eager's."""
    root = Path(__file__).resolve().parents[2]
    script = textwrap.dedent(f"""
        import sys, warnings
        warnings.simplefilter("ignore")
        sys.path.insert(0, {str(root)!r})
        import torch, torch_nnapi
        from tests.convert.harness import assert_close
        from torch.jit.mobile import _load_for_lite_interpreter
        for name in {names!r}:
            path = {str(directory)!r} + "/" + name
            data = torch.load(path + ".data")
            full = torch.jit.load(path + ".pt")
            lite = _load_for_lite_interpreter(path + ".ptl")
            for x, expected in zip(data["inputs"], data["expected"]):
                assert_close(full(*x), expected, name + " full")
                assert_close(lite(*x), expected, name + " lite")
            print(name, "ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [w for n in names for w in (n, "ok")]
