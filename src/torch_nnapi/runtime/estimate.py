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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..nnapi.codes import OperationType
from ..nnapi.devices import REFERENCE_NAME, DeviceProfile
from ..nnapi.model import Model, Operand, element_count
from ..nnapi.signatures import RuleContext
from .partitioning import Plan, exec_time_factor

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
    written; tensors of unknown size count 0)."""

    multiply_adds: int
    bytes_moved: int


@dataclass(frozen=True)
class StepEstimate:
    """A step's estimated ``seconds``: its operations' plus ``copy_seconds`` for the tensors
    crossing into it from another device."""

    index: int
    device: str
    seconds: float
    copy_seconds: float
    multiply_adds: int


@dataclass(frozen=True)
class PlanEstimate:
    """Every step's estimate; ``reference_share`` is the fraction of the time spent on
    ``nnapi-reference``."""

    steps: tuple[StepEstimate, ...]

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def reference_share(self) -> float:
        total = self.seconds
        on_cpu = sum(s.seconds for s in self.steps if s.device == REFERENCE_NAME)
        return on_cpu / total if total > 0 else 0.0


def operation_work(model: Model, index: int) -> OperationWork:
    """The multiply-adds (a convolution's or fully connected layer's dot products; one per
    output element otherwise) and bytes moved of operation ``index``."""
    operation = model.operations[index]
    tensors = [model.operands[i] for i in (*operation.inputs, *operation.outputs)]
    moved = sum(_bytes(o) for o in tensors if o.info.is_tensor)
    outputs = sum(_elements(model.operands[i]) for i in operation.outputs)
    name, channels = _WEIGHTS.get(operation.type, _DEFAULT_WEIGHTS)
    weights = _weights(model, index, name)
    if weights is None or len(weights.dimensions) <= channels or not weights.dimensions[channels]:
        return OperationWork(outputs, moved)
    per_output = element_count(weights.dimensions) // weights.dimensions[channels]
    return OperationWork(outputs * per_output, moved)


def estimate(plan: Plan, model: Model, devices: Sequence[DeviceProfile],
             baseline: CpuBaseline | None = None) -> PlanEstimate:
    """The estimated time of each step of ``plan`` (made for ``model`` over ``devices``)."""
    baseline = baseline or CpuBaseline()
    by_name = {d.name: d for d in devices}
    estimates = []
    for step in plan.steps:
        device = by_name[step.device]
        seconds = 0.0
        macs = 0
        for index in step.operations:
            work = operation_work(model, index)
            factor = exec_time_factor(model, index, device)
            seconds += factor * (work.multiply_adds / baseline.macs_per_second
                                 + work.bytes_moved / baseline.bytes_per_second)
            macs += work.multiply_adds
        crossing = sum(t.nbytes or 0 for t in step.inputs if t.producer is not None
                       and plan.steps[t.producer].device != step.device)
        copy = crossing / baseline.bytes_per_second
        estimates.append(StepEstimate(step.index, step.device, seconds + copy, copy, macs))
    return PlanEstimate(tuple(estimates))


def _weights(model: Model, index: int, name: str) -> Operand | None:
    operation = model.operations[index]
    match = model.matches[index]
    if not any(a.name == name for a in match.form.inputs):
        return None
    return RuleContext(model.operands, operation.inputs, operation.outputs, match).input(name)


def _elements(operand: Operand) -> int:
    return element_count(operand.dimensions) if operand.dimensions else 1


def _bytes(operand: Operand) -> int:
    return _elements(operand) * operand.info.element_size
