"""``check`` and ``bench`` for a .pte: ExecuTorch's runtime with NnapiBackend against eager.

A .pte runs where it runs: its NNAPI regions on NnapiBackend (on Linux over torch-nnapi's
libneuralnetworks.so, i.e. the host runtime), the rest on ExecuTorch's kernels.
:func:`check_pte` compares its outputs, flattened in the order ExecuTorch returns them, with
the original model's: float outputs within a tolerance relative to their magnitude, those a
delegate dequantizes from a quantized NNAPI tensor in quanta of that tensor.
:func:`bench_pte` times loading (which builds and compiles every NNAPI model), the first run
and the runs after, and eager PyTorch on the same inputs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from ...nnapi.errors import counted
from ...runtime.threads import get_num_threads
from ..executorch.outputs import leaf_paths
from ..executorch.pte_file import PteInfo, PteModule
from .check import FLOAT_TOLERANCE, QUANTA_TOLERANCE, tensor_error
from .check_report import TensorCheck
from .timing import Latency, quiet_pools, refusal, time_calls


@dataclass
class PteCheck:
    """Each output of the .pte against the original model's."""

    info: PteInfo
    checks: list[TensorCheck] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # what prevents a comparison

    @property
    def ok(self) -> bool:
        return not self.errors and all(c.ok for c in self.checks)


def eager_outputs(original: Any, inputs: Sequence[torch.Tensor]) -> Any:
    """The original model's outputs (an ExportedProgram's module), without gradients."""
    if isinstance(original, torch.export.ExportedProgram):
        original = original.module()
    with torch.no_grad():
        return original(*[x.clone() for x in inputs])


def compare_pte(info: PteInfo, actual: Any, expected: Any,
                float_tolerance: float = FLOAT_TOLERANCE,
                quanta_tolerance: float = QUANTA_TOLERANCE) -> PteCheck:
    """The .pte's outputs ``actual`` against ``expected``, leaf by leaf."""
    report = PteCheck(info)
    got = [x for x in tree_leaves(actual) if isinstance(x, torch.Tensor)]
    want = [x for x in tree_leaves(expected) if isinstance(x, torch.Tensor)]
    if len(got) != len(want):
        report.errors.append(f"the .pte returned {counted(len(got), 'tensor')},"
                             f" the model {len(want)}")
        return report
    names = leaf_paths(info.structure, len(got))
    for i, (a, e) in enumerate(zip(got, want, strict=True)):
        if tuple(a.shape) != tuple(e.shape) or a.dtype != e.dtype:
            report.errors.append(f"{names[i]} is {a.dtype} {list(a.shape)}, the model's"
                                 f" {e.dtype} {list(e.shape)}")
            continue
        quantum = info.quanta[i] if i < len(info.quanta) else 0.0
        if a.dtype.is_floating_point:
            error, unit = tensor_error(a, e, quantum)
        else:  # integers and bools are exact
            error = float((a.long() - e.long()).abs().max()) if a.numel() else 0.0
            unit = "relative"
        report.checks.append(TensorCheck(
            name=names[i], shape=list(e.shape), error=error, unit=unit,
            tolerance=quanta_tolerance if unit == "quanta" else
            (float_tolerance if a.dtype.is_floating_point else 0.0)))
    return report


def check_pte(module: PteModule, inputs: Sequence[torch.Tensor], original: Any,
              float_tolerance: float = FLOAT_TOLERANCE,
              quanta_tolerance: float = QUANTA_TOLERANCE) -> PteCheck:
    """Runs the .pte and the original model on ``inputs`` and compares them."""
    return compare_pte(module.info, module(*inputs), eager_outputs(original, inputs),
                       float_tolerance, quanta_tolerance)


@dataclass
class PteBench:
    load_seconds: float  # loading the program: NnapiBackend builds and compiles its models
    first_run_seconds: float
    latency: Latency
    eager: Latency | None = None
    check: PteCheck | None = None

    @property
    def refusal(self) -> str:
        """Why there is no ratio (timing.refusal; empty: there is one, or no eager)."""
        return "" if self.eager is None else refusal({".pte": self.latency, "eager": self.eager})

    @property
    def ratio(self) -> float | None:
        """The .pte's median over eager PyTorch's; None from contended or unlike runs."""
        if self.eager is None or not self.eager.median or self.refusal:
            return None
        return self.latency.median / self.eager.median

    def to_json(self) -> dict[str, Any]:
        return {"load_seconds": self.load_seconds, "first_run_seconds": self.first_run_seconds,
                "pte": self.latency.to_json(),
                "eager": None if self.eager is None else self.eager.to_json(),
                "ratio": self.ratio, "ratio_refused": self.refusal or None,
                "outputs": [] if self.check is None else [
                    {"output": c.name, "error": c.error, "unit": c.unit}
                    for c in self.check.checks]}


def bench_pte(data: bytes, inputs: Sequence[torch.Tensor], runs: int,
              original: Any = None) -> PteBench:
    """Times the .pte (and eager ``original``) on ``inputs`` (see the module docstring)."""
    start = time.perf_counter()
    module = PteModule(data)
    loaded = time.perf_counter()
    actual = module(*inputs)
    first = time.perf_counter() - loaded
    threads = get_num_threads()  # each side on these, the other's pool quiet
    with quiet_pools(threads, torch_threads=1):
        report = PteBench(loaded - start, first,
                          time_calls(lambda: module(*inputs), runs, side="nnapi"))
    report.latency.threads = threads
    if original is not None:
        expected = eager_outputs(original, inputs)
        model = original.module() if isinstance(original, torch.export.ExportedProgram) \
            else original
        with torch.no_grad(), quiet_pools(threads):
            report.eager = time_calls(lambda: model(*inputs), runs, side="eager")
        report.eager.threads = threads
        report.check = compare_pte(module.info, actual, expected)
    return report
