"""How long a plan's steps would take: the profiles' PerformanceInfo times the arithmetic.

Android's Capabilities say how fast a driver is *relative to the CPU* (execTime 1.0 is the
CPU, ``nnapi-reference``), per operand type, and nothing absolute. An estimate therefore needs
a baseline: what ``nnapi-reference`` (single-threaded reference kernels) achieves per second
in multiply-adds and in bytes moved, a ``CpuBaseline`` the caller may replace with figures
measured on the phone. Per operation, on its step's device:

    seconds = execTime(first input's type) * (multiply_adds / macs_per_second
                                             + bytes_moved / bytes_per_second)

and each tensor crossing between steps of different devices costs one copy, bytes /
bytes_per_second. docs/device_profiles.md ("Estimated time") states the limits: an order of
magnitude, not a measurement.

A tensor of unknown size (a dynamic dimension) takes the size it had when the model ran on
example inputs (``example_sizes``), when the caller has them; otherwise its step's estimate
is unknown, with the reason, never a silent zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..nnapi.codes import OperationType
from ..nnapi.devices import REFERENCE_NAME, DeviceProfile
from ..nnapi.model import Model, Operand, element_count
from ..nnapi.signatures import RuleContext
from .partitioning import Plan, exec_time_factor

Sizes = Mapping[int, tuple[int, ...]]  # operand index -> its dimensions on example inputs

# The input holding the weights each output element is a dot product with, and the
# dimension of it that counts output channels (the rest is one dot product's length).
_WEIGHTS = {OperationType.DEPTHWISE_CONV_2D: ("filter", 3),
            OperationType.FULLY_CONNECTED: ("weights", 0)}
_DEFAULT_WEIGHTS = ("filter", 0)


@dataclass(frozen=True)
class CpuBaseline:
    """What ``nnapi-reference`` (execTime 1.0) does per second: the unit every profile's
    figures are relative to. The defaults are a single core running reference kernels."""

    macs_per_second: float = 1e9
    bytes_per_second: float = 2e9


@dataclass(frozen=True)
class OperationWork:
    """One operation's arithmetic: multiply-adds and the bytes of its tensors (read and
    written); ``unknown`` says which tensor's size is unknown (then the figures are 0)."""

    multiply_adds: int
    bytes_moved: int
    unknown: str = ""


@dataclass(frozen=True)
class StepEstimate:
    """A step's estimated ``seconds``: its operations' plus ``copy_seconds`` for the tensors
    crossing into it from another device; None, with the reason in ``unknown``, when a
    tensor's size is unknown."""

    index: int
    device: str
    seconds: float | None
    copy_seconds: float | None
    multiply_adds: int | None
    unknown: str = ""


@dataclass(frozen=True)
class PlanEstimate:
    """Every step's estimate; ``reference_share`` is the fraction of the time spent on
    ``nnapi-reference``."""

    steps: tuple[StepEstimate, ...]

    @property
    def unknown(self) -> str:
        """Why some step's estimate is unknown ("" when every step has one)."""
        return next((f"step {s.index}: {s.unknown}" for s in self.steps if s.unknown), "")

    @property
    def seconds(self) -> float | None:
        """The whole plan's estimate; None when a step's is unknown."""
        if self.unknown:
            return None
        return sum(s.seconds or 0.0 for s in self.steps)

    @property
    def reference_share(self) -> float | None:
        """The share of the estimate on ``nnapi-reference``; None when a step's is unknown."""
        total = self.seconds
        if total is None:
            return None
        on_cpu = sum(s.seconds or 0.0 for s in self.steps if s.device == REFERENCE_NAME)
        return on_cpu / total if total > 0 else 0.0


def operation_work(model: Model, index: int, sizes: Sizes | None = None) -> OperationWork:
    """The multiply-adds (a convolution's or fully connected layer's dot products; one per
    output element otherwise) and bytes moved of operation ``index``; ``sizes`` fills in the
    dimensions of tensors of unknown size."""
    operation = model.operations[index]
    sizes = sizes or {}
    dims = {}
    for position, i in enumerate((*operation.inputs, *operation.outputs)):
        operand = model.operands[i]
        if not operand.info.is_tensor:
            continue
        known = _dimensions(operand, sizes.get(i))
        if known is None:
            where = f"input {position}" if position < len(operation.inputs) else \
                f"output {position - len(operation.inputs)}"
            return OperationWork(0, 0, f"operation {index} ({operation.type.name}): {where},"
                                       f" operand {i} {operand.describe()}, has a size"
                                       " unknown without example inputs")
        dims[i] = known
    moved = sum(element_count(d) * model.operands[i].info.element_size
                for i, d in dims.items())
    outputs = sum(element_count(dims.get(i, ())) for i in operation.outputs)
    name, channels = _WEIGHTS.get(operation.type, _DEFAULT_WEIGHTS)
    weights = _weights(model, index, name)
    if weights is None or len(weights.dimensions) <= channels or not weights.dimensions[channels]:
        return OperationWork(outputs, moved)
    per_output = element_count(weights.dimensions) // weights.dimensions[channels]
    return OperationWork(outputs * per_output, moved)


def estimate(plan: Plan, model: Model, devices: Sequence[DeviceProfile],
             baseline: CpuBaseline | None = None, sizes: Sizes | None = None) -> PlanEstimate:
    """The estimated time of each step of ``plan`` (made for ``model`` over ``devices``);
    ``sizes`` (``example_sizes``) gives tensors of unknown size the size they had on
    example inputs."""
    baseline = baseline or CpuBaseline()
    by_name = {d.name: d for d in devices}
    estimates = []
    for step in plan.steps:
        device = by_name[step.device]
        seconds = 0.0
        macs = 0
        unknown = ""
        for index in step.operations:
            work = operation_work(model, index, sizes)
            unknown = unknown or work.unknown
            factor = exec_time_factor(model, index, device)
            seconds += factor * (work.multiply_adds / baseline.macs_per_second
                                 + work.bytes_moved / baseline.bytes_per_second)
            macs += work.multiply_adds
        crossing = 0
        for tensor in step.inputs:
            if tensor.producer is None or plan.steps[tensor.producer].device == step.device:
                continue
            operand = model.operands[tensor.operand]
            known = _dimensions(operand, (sizes or {}).get(tensor.operand))
            if known is None:
                unknown = unknown or (f"operand {tensor.operand} {operand.describe()}, copied in"
                                      f" from step {tensor.producer}, has a size unknown"
                                      " without example inputs")
                continue
            crossing += element_count(known) * operand.info.element_size
        copy = crossing / baseline.bytes_per_second
        if unknown:
            estimates.append(StepEstimate(step.index, step.device, None, None, None, unknown))
        else:
            estimates.append(StepEstimate(step.index, step.device, seconds + copy, copy, macs))
    return PlanEstimate(tuple(estimates))


def example_sizes(model: Model, inputs: Sequence[Any]) -> dict[int, tuple[int, ...]]:
    """The dimensions every tensor of ``model`` takes when it runs on ``inputs`` (arrays in
    model-input order) on the host runtime: what ``estimate`` uses for tensors of unknown
    size. Only run when some tensor's size is unknown ({} otherwise)."""
    if all(_dimensions(o, None) is not None for o in model.operands if o.info.is_tensor):
        return {}
    from .executor import Compilation

    result = Compilation(model).run(list(inputs), keep_intermediates=True)
    sizes = {i: tuple(int(d) for d in value.shape) for i, value in result.values.items()
             if hasattr(value, "shape")}
    sizes.update((i, tuple(int(d) for d in out.shape))
                 for i, out in zip(model.outputs, result.outputs, strict=True))
    return sizes


def _weights(model: Model, index: int, name: str) -> Operand | None:
    operation = model.operations[index]
    match = model.matches[index]
    if not any(a.name == name for a in match.form.inputs):
        return None
    return RuleContext(model.operands, operation.inputs, operation.outputs, match).input(name)


def _dimensions(operand: Operand, example: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """A tensor's dimensions: its own when fully specified, else those it had on the example
    inputs; None when neither is known."""
    if operand.fully_specified:
        return operand.dimensions
    return example
