"""Runs conformance tests through a backend and compares results by the Android harness rules."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np

from ..nnapi.codes import OperandType
from ..nnapi.errors import NnapiError, counted
from .spec import (
    CtsTest,
    SpecExample,
    SpecModel,
    build_model,
    example_arrays,
    operand_type,
    relaxed_or_float16,
)

FLOAT_TOLERANCE = (1e-5, 5 * 2.0**-23)  # (atol, rtol)
RELAXED_TOLERANCE = (5 * 2.0**-10, 5 * 2.0**-10)
MULTINOMIAL_LOGITS = 1024


if TYPE_CHECKING:
    from ..runtime import Compilation

_Prepared = TypeVar("_Prepared")


class Backend(Protocol[_Prepared]):
    """Something that can build a spec model and execute it on example inputs."""

    name: str

    def prepare(self, spec_model: SpecModel) -> _Prepared: ...

    def execute(self, prepared: _Prepared,
                inputs: list[np.ndarray | None]) -> list[np.ndarray]: ...


class PythonBackend:
    """The host runtime through its Python API, with the given kernel set (None: the
    default, see runtime.native)."""

    name = "python"

    def __init__(self, kernels: str | None = None) -> None:
        self.kernels = kernels

    def prepare(self, spec_model: SpecModel) -> Compilation:
        from ..runtime import Compilation

        return Compilation(build_model(spec_model), kernels=self.kernels)

    def execute(self, prepared: Compilation,
                inputs: list[np.ndarray | None]) -> list[np.ndarray]:
        return list(prepared.run(inputs).outputs)


@dataclass
class Outcome:
    test: CtsTest
    passed: bool
    message: str = ""


def run_test(test: CtsTest, backend: Backend[_Prepared]) -> Outcome:
    if test.expect_failure:
        return _run_expecting_failure(test, backend)
    spec_model, examples = test.load()
    try:
        prepared = backend.prepare(spec_model)
    except Exception as e:  # noqa: BLE001 - a failure is reported, not raised
        return Outcome(test, False, f"model: {type(e).__name__}: {e}")
    for k, example in enumerate(examples):
        inputs = example_arrays(spec_model, example["inputs"], "inputs")
        try:
            outputs = backend.execute(prepared, inputs)
        except Exception as e:  # noqa: BLE001
            return Outcome(test, False, f"example {k}: {type(e).__name__}: {e}")
        problem = compare_example(test, spec_model, example, outputs)
        if problem:
            return Outcome(test, False, f"example {k}: {problem}")
    return Outcome(test, True)


def _run_expecting_failure(test: CtsTest, backend: Backend[_Prepared]) -> Outcome:
    """Passes when building, compiling or executing the model fails with an NNAPI error."""
    spec_model, examples = test.load()
    try:
        prepared = backend.prepare(spec_model)
        for example in examples:
            backend.execute(prepared, example_arrays(spec_model, example["inputs"], "inputs"))
    except NnapiError as e:
        return Outcome(test, True, f"rejected as expected: {e}")
    except Exception as e:  # noqa: BLE001 - anything but an NNAPI error is a crash
        return Outcome(test, False, f"expected an NNAPI error, got {type(e).__name__}: {e}")
    return Outcome(test, False, "expected a failure, but the model ran to an answer")


def compare_example(test: CtsTest, spec_model: SpecModel, example: SpecExample,
                    outputs: Sequence[np.ndarray]) -> str | None:
    """The first way ``outputs`` differ from the example's expectation, or None."""
    expected = example_arrays(spec_model, example["outputs"], "outputs")
    if len(outputs) != len(expected):
        return f"got {counted(len(outputs), 'output')}, expected {len(expected)}"
    ignored = set(spec_model.get("ignoredOutputs", []))
    relaxed = relaxed_or_float16(spec_model, example)
    for pos, (actual, want) in enumerate(zip(outputs, expected, strict=True)):
        if want is None:
            continue
        actual = np.asarray(actual)
        if list(actual.shape) != list(want.shape):
            return f"output {pos} has dimensions {list(actual.shape)}, expected {list(want.shape)}"
        if pos in ignored:
            continue
        output_type = operand_type(spec_model["operands"][spec_model["outputs"][pos]])
        problem = _compare_values(actual, want, output_type, relaxed, test.name)
        if problem:
            return f"output {pos}: {problem}"
    tolerance = example.get("expectedMultinomialDistributionTolerance")
    if tolerance is not None:
        return _compare_distribution(spec_model, example, outputs, tolerance)
    return None


def _compare_values(actual: np.ndarray, want: np.ndarray, operand_type: OperandType,
                    relaxed: bool, test_name: str) -> str | None:
    if want.dtype.kind == "f":
        atol, rtol = RELAXED_TOLERANCE if relaxed else FLOAT_TOLERANCE
        a, w = actual.astype(np.float64), want.astype(np.float64)
        bad = ~(np.abs(a - w) <= atol + rtol * np.abs(w))
        bad |= np.isnan(a) != np.isnan(w)
    elif operand_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
        bad = actual != want
    else:
        limit = 2 if "mobilenet" in test_name and want.dtype.itemsize == 1 else 1
        bad = np.abs(actual.astype(np.int64) - want.astype(np.int64)) > limit
    if not np.any(bad):
        return None
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
    return (f"{int(np.sum(bad))} of {bad.size} values differ; at {list(first)} got"
            f" {actual[first].item()}, expected {want[first].item()}")


def _compare_distribution(spec_model: SpecModel, example: SpecExample,
                          outputs: Sequence[np.ndarray], tolerance: float) -> str | None:
    given = example_arrays(spec_model, example["inputs"], "inputs")[0]
    if given is None:
        return "the example gives no logits (input 0) to compare the drawn classes with"
    logits = given.astype(np.float64).reshape(-1)[:MULTINOMIAL_LOGITS]
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    samples = np.asarray(outputs[0]).reshape(-1)
    counts = np.bincount(samples, minlength=len(probabilities))[: len(probabilities)]
    frequency = counts / max(len(samples), 1)
    worst = int(np.argmax(np.abs(frequency - probabilities)))
    if abs(frequency[worst] - probabilities[worst]) > tolerance:
        return (f"class {worst} drawn with frequency {frequency[worst]:.4f}, probability"
                f" {probabilities[worst]:.4f} (tolerance {tolerance})")
    return None


def run_tests(tests: Iterable[CtsTest], backend: Backend[_Prepared],
              report: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    outcomes = []
    for test in tests:
        outcome = run_test(test, backend)
        if report:
            report(outcome)
        outcomes.append(outcome)
    return outcomes
