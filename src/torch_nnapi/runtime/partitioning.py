"""Android 11's partitioner: which device runs each operation, and the steps that follow.

This replays nn/runtime/ExecutionPlan.cpp (ModelBuilder::partitionTheWork and
findBestDeviceForEachOperation) and CompilationBuilder::finish, from the devices' profiles
alone, so the plan is the one a phone with those drivers makes:

* each operation goes to the device, among those supporting it, with the best performance for
  the operand type of the operation's first input (execTime, or powerUsage under LOW_POWER;
  relaxed float32 performance when the model relaxes float32 to float16; IF and WHILE: the
  device's IF/WHILE performance plus their called models' performance); ties go to the CPU
  (``nnapi-reference``), otherwise to the device listed first;
* when one device gets every operation, the whole model is one step on it;
* otherwise operations are queued per device as their inputs become known, and steps are made
  by draining the queue of the last device (in list order) that has work, the CPU's first;
* IF and WHILE given to the CPU run on Android's control-flow interpreter, which partitions
  their called models the same way (the ``called`` plans of a step);
* a temporary of unknown size crossing a step boundary fails the partitioning; then, unless
  the device list was explicit (createForDevices), the whole model runs on the CPU.

Floating-point sums are float32, as Android's, so ties break identically.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nnapi.codes import OperandType, OperationType, PreferenceCode
from ..nnapi.devices import (
    REFERENCE_NAME,
    DeviceProfile,
    PerformanceInfo,
    load_profile,
    reference_profile,
)
from ..nnapi.errors import BadDataError, OpFailedError
from ..nnapi.model import Lifetime, Model, Operand, element_count
from .registry import kernel_for

# The called models' operands of IF (then, else) and WHILE (condition, body), by position.
CALLED_MODELS = {OperationType.IF: (("then", 1), ("else", 2)),
                 OperationType.WHILE: (("condition", 0), ("body", 1))}


@dataclass(frozen=True)
class Tensor:
    """A tensor crossing a step boundary. ``producer`` is the step computing it (None: a
    model input); ``nbytes`` its size from its declared dimensions (None when unknown before
    execution)."""

    operand: int
    producer: int | None
    nbytes: int | None
    description: str


@dataclass(frozen=True)
class CalledModel:
    """A model an interpreted IF or WHILE calls (``role``: then, else, condition, body), and
    its own plan."""

    role: str
    model: Model = field(repr=False)
    plan: Plan


@dataclass(frozen=True)
class Step:
    """One step: ``operations`` (indices into its model's ``operations``) on ``device``;
    ``inputs`` and ``outputs`` are the tensors copied in and out. An IF or WHILE that the
    CPU's control-flow interpreter runs is a step of its own whose ``called`` models have
    their own plans."""

    index: int
    device: str
    operations: tuple[int, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    called: tuple[CalledModel, ...] = ()

    @property
    def interpreted(self) -> bool:
        return bool(self.called)


@dataclass(frozen=True)
class Plan:
    """What Android does with a model on these devices: ``steps`` in execution order.
    ``fallback`` says why the whole model runs on the CPU instead of as partitioned (empty
    when it does not); ``devices`` are the device names considered, in order."""

    devices: tuple[str, ...]
    preference: PreferenceCode
    steps: tuple[Step, ...]
    fallback: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data (reports, the command line)."""
        return {"devices": list(self.devices), "preference": self.preference.name,
                "fallback": self.fallback, "steps": [_step_dict(s) for s in self.steps]}

    def device_of(self, operation: int) -> str:
        """The device running an operation of the model (the CPU for an interpreted IF or
        WHILE, whose called models run as their own plans say)."""
        for step in self.steps:
            if operation in step.operations:
                return step.device
        raise IndexError(f"operation {operation} is in no step")


def _step_dict(step: Step) -> dict[str, Any]:
    def tensor(t: Tensor) -> dict[str, Any]:
        return {"operand": t.operand, "producer": t.producer, "bytes": t.nbytes,
                "description": t.description}

    return {"index": step.index, "device": step.device, "operations": list(step.operations),
            "inputs": [tensor(t) for t in step.inputs],
            "outputs": [tensor(t) for t in step.outputs],
            "called": [{"role": c.role, "plan": c.plan.as_dict()} for c in step.called]}


def plan(model: Model, devices: Sequence[DeviceProfile | str],
         preference: PreferenceCode | int = PreferenceCode.FAST_SINGLE_ANSWER, *,
         fallback: bool = True) -> Plan:
    """Android's plan for the finished ``model`` on ``devices``: profiles, or names of shipped
    profiles, paths of JSON ones and ``nnapi-reference`` (see ``nnapi.devices``). As
    ANeuralNetworksCompilation_create sees them, list the drivers then ``nnapi-reference``,
    with ``fallback``; as createForDevices does, the devices chosen, without.

    BadDataError when no device can run an operation; OpFailedError when partitioning fails
    and ``fallback`` is False; ProfileError for a device that cannot be loaded."""
    preference = PreferenceCode(preference)
    profiles = tuple(_profile(d) for d in devices)
    names = tuple(d.name for d in profiles)
    if len(set(names)) != len(names) or not names:
        raise BadDataError(f"the device list {list(names)} is empty or names a device twice")
    partitioner = _Partitioner(profiles, preference)
    steps = partitioner.partition(model, main=True)
    if partitioner.failure and fallback:
        return whole_model_on_cpu(model, names, preference, partitioner.failure)
    if partitioner.failure:
        raise OpFailedError(f"partitioning failed: {partitioner.failure}")
    return Plan(names, preference, steps)


def _profile(device: DeviceProfile | str) -> DeviceProfile:
    if isinstance(device, DeviceProfile):
        return device
    return reference_profile() if device == REFERENCE_NAME else load_profile(device)


def supported_operations(device: DeviceProfile, model: Model) -> list[bool]:
    """``device``'s getSupportedOperations answer for the finished ``model``, per operation
    in ``model.operations`` order. ``nnapi-reference`` is the host runtime here: it supports
    what its profile says (every operation) and the runtime has a kernel for."""
    answer = device.supported_operations(model)
    if device.name != REFERENCE_NAME:
        return answer
    return [yes and kernel_for(op.type) is not None
            for yes, op in zip(answer, model.operations, strict=True)]


def exec_time_factor(model: Model, index: int, device: DeviceProfile) -> float:
    """The execTime Android compares for operation ``index`` of ``model`` on ``device``
    (relative to the CPU's 1.0; IF and WHILE add their called models' figures)."""
    return _Partitioner((device,), PreferenceCode.FAST_SINGLE_ANSWER).performance(
        model, index, device)


def whole_model_on_cpu(model: Model, devices: tuple[str, ...], preference: PreferenceCode,
                       reason: str) -> Plan:
    """CompilationBuilder::finish's fallback: one step, the whole model, on the CPU."""
    step = _describe_steps(model, [(REFERENCE_NAME, list(range(len(model.operations))), ())])
    return Plan(devices, preference, step, reason)


class _Partitioner:
    """One partitioning: the devices, the preference, and the first failure met."""

    def __init__(self, devices: tuple[DeviceProfile, ...], preference: PreferenceCode):
        self.devices = devices
        self.preference = preference
        self.cpu = next((i for i, d in enumerate(devices) if d.name == REFERENCE_NAME), None)
        self.interpreter = len(devices)  # the queue of the control-flow interpreter
        self.failure = ""

    # ---------------------------------------------------------------- choosing devices

    def best_devices(self, model: Model) -> list[int]:
        """findBestDeviceForEachOperation: a device index per operation, or the
        interpreter's."""
        can_do = [supported_operations(d, model) for d in self.devices]
        best_for = []
        for index, operation in enumerate(model.operations):
            best: int | None = None
            if _control_flow_of_unknown_size(model, index):
                # The 1.3 HAL cannot run those on a driver: the CPU or nothing.
                if self.cpu is not None and can_do[self.cpu][index]:
                    best = self.cpu
            else:
                best_perf = 0.0
                for d, device in enumerate(self.devices):
                    if not can_do[d][index]:
                        continue
                    perf = self.performance(model, index, device)
                    if best is None or perf < best_perf or (perf == best_perf and d == self.cpu):
                        best, best_perf = d, perf
            if best is None:
                raise BadDataError(f"operation {index} ({operation.type.name}): no device among"
                                   f" {[d.name for d in self.devices]} can run it")
            # An IF or WHILE the CPU gets runs on the interpreter, its called models
            # partitioned in turn (supportedByControlFlowInterpreter).
            interpreted = best == self.cpu and operation.type in CALLED_MODELS \
                and not _control_flow_of_unknown_size(model, index)
            best_for.append(self.interpreter if interpreted else best)
        return best_for

    def performance(self, model: Model, index: int, device: DeviceProfile) -> float:
        """ModelBuilder::getPerformance for one operation, a float32 as Android computes it
        (the sum of two float32 values rounded to float32 is the float32 sum)."""
        caps = device.capabilities
        operation = model.operations[index]
        if operation.type is OperationType.IF:
            then_model, else_model = _called(model, index)
            halves = _f32(self.model_performance(then_model, device)
                          + self.model_performance(else_model, device))
            return _f32(self._apply(caps.if_performance) + 0.5 * halves)
        if operation.type is OperationType.WHILE:
            condition, body = _called(model, index)
            loop = _f32(self._apply(caps.while_performance)
                        + self.model_performance(condition, device))
            return _f32(loop + self.model_performance(body, device))
        # Android assumes the first input's type says what the operation computes in.
        operand_type = model.operands[operation.inputs[0]].type
        if model.relax_float32_to_float16 and operand_type is OperandType.FLOAT32:
            return self._apply(caps.relaxed_scalar)
        if model.relax_float32_to_float16 and operand_type is OperandType.TENSOR_FLOAT32:
            return self._apply(caps.relaxed_tensor)
        return self._apply(caps.performance(operand_type))

    def model_performance(self, model: Model, device: DeviceProfile) -> float:
        total = 0.0
        for index in range(len(model.operations)):
            total = _f32(total + self.performance(model, index, device))
        return total

    def _apply(self, perf: PerformanceInfo) -> float:
        """The figure the preference compares (profile values are float32 already)."""
        return perf.power_usage if self.preference is PreferenceCode.LOW_POWER \
            else perf.exec_time

    # ---------------------------------------------------------------- forming steps

    def partition(self, model: Model, main: bool) -> tuple[Step, ...]:
        """partitionTheWorkInternal: the steps of ``model`` (``main``: the compiled model,
        which may become a single step)."""
        best_for = self.best_devices(model)
        if main and len(set(best_for)) == 1 and best_for[0] != self.interpreter:
            everything = list(range(len(model.operations)))
            return _describe_steps(model, [(self.devices[best_for[0]].name, everything, ())])
        queues: list[deque[int]] = [deque() for _ in range(len(self.devices) + 1)]
        ready = _ReadyOperations(model, lambda op: queues[best_for[op]].append(op))
        formed: list[_Formed] = []
        while any(queues):
            device = max(d for d, queue in enumerate(queues) if queue)
            queue = queues[device]
            if device != self.interpreter:
                operations: list[int] = []
                while queue:
                    operations.append(queue.popleft())
                    ready.mark_done(operations[-1])
                formed.append((self.devices[device].name, operations, ()))
                continue
            while queue:
                index = queue.popleft()
                formed.append((REFERENCE_NAME, [index], self.called_plans(model, index)))
                ready.mark_done(index)
        steps = _describe_steps(model, formed)
        if not self.failure:
            self.failure = _unknown_size_crossing(model, steps)
        return steps

    def called_plans(self, model: Model, index: int) -> tuple[CalledModel, ...]:
        roles = CALLED_MODELS[model.operations[index].type]
        names = tuple(d.name for d in self.devices)
        return tuple(
            CalledModel(role, called, Plan(names, self.preference,
                                           self.partition(called, main=False)))
            for (role, _), called in zip(roles, _called(model, index), strict=True))


class _ReadyOperations:
    """Android's OperandTracker: calls ``on_ready`` for each operation once every operand it
    reads that an operation writes is known."""

    def __init__(self, model: Model, on_ready: Callable[[int], None]):
        self.model, self.on_ready = model, on_ready
        self.readers: dict[int, list[int]] = {}
        self.waiting: list[int] = []
        for index, operation in enumerate(model.operations):
            computed = [i for i in operation.inputs if _is_computed(model.operands[i])]
            for operand in computed:
                self.readers.setdefault(operand, []).append(index)
            self.waiting.append(len(computed))
            if not computed:
                on_ready(index)

    def mark_done(self, index: int) -> None:
        for operand in self.model.operations[index].outputs:
            for reader in self.readers.get(operand, []):
                self.waiting[reader] -= 1
                if self.waiting[reader] == 0:
                    self.on_ready(reader)


# A step as the partitioner forms it: the device, the operations, an interpreted IF's or
# WHILE's called models.
_Formed = tuple[str, list[int], tuple[CalledModel, ...]]


def _describe_steps(model: Model, formed: Sequence[_Formed]) -> tuple[Step, ...]:
    """The steps with the tensors crossing into and out of each: model inputs and operands
    another step computes in; model outputs and operands another step reads out."""
    producer = {o: s for s, (_, ops, _) in enumerate(formed) for i in ops
                for o in model.operations[i].outputs}
    readers: dict[int, set[int]] = {}
    for s, (_, ops, _) in enumerate(formed):
        for i in ops:
            for operand in model.operations[i].inputs:
                readers.setdefault(operand, set()).add(s)
    model_outputs = set(model.outputs)

    def tensor(operand: int) -> Tensor:
        return Tensor(operand, producer.get(operand), _nbytes(model.operands[operand]),
                      model.describe_operand(operand))

    steps = []
    for s, (device, ops, called) in enumerate(formed):
        read = dict.fromkeys(i for op in ops for i in model.operations[op].inputs)
        inputs = [i for i in read if model.operands[i].lifetime is Lifetime.MODEL_INPUT
                  or producer.get(i, s) != s]
        written = [o for op in ops for o in model.operations[op].outputs]
        outputs = [o for o in written if o in model_outputs or readers.get(o, set()) - {s}]
        steps.append(Step(s, device, tuple(sorted(ops)), tuple(map(tensor, inputs)),
                          tuple(map(tensor, outputs)), called))
    return tuple(steps)


def _unknown_size_crossing(model: Model, steps: Sequence[Step]) -> str:
    """Why Android's CompoundBody::finish fails (a temporary an execution step hands to
    another step has unknown size), or ""."""
    for step in steps:
        if step.interpreted:
            continue
        for t in step.outputs:
            operand = model.operands[t.operand]
            if operand.lifetime is Lifetime.TEMPORARY and _unknown_size(operand):
                return (f"step {step.index} ({step.device}) hands {t.description} to another"
                        " step, and Android 11 cannot pass a temporary of unknown size between"
                        " steps")
    return ""


def _called(model: Model, index: int) -> tuple[Model, Model]:
    operation = model.operations[index]
    first, second = (model.operands[operation.inputs[p]].model
                     for _, p in CALLED_MODELS[operation.type])
    assert first is not None and second is not None, "a finished model's MODEL operands"
    return first, second


def _control_flow_of_unknown_size(model: Model, index: int) -> bool:
    """isControlFlowOperationWithOperandOfUnknownSize: an IF or WHILE whose operands, or
    its called models' inputs and outputs, have unknown size."""
    operation = model.operations[index]
    if operation.type not in CALLED_MODELS:
        return False
    if any(_unknown_size(model.operands[i]) for i in (*operation.inputs, *operation.outputs)):
        return True
    return any(_unknown_size(called.operands[i])
               for called in _called(model, index) for i in (*called.inputs, *called.outputs))


def _unknown_size(operand: Operand) -> bool:
    """Android's hasUnknownSize: a tensor of unknown rank or with an unknown dimension."""
    if not operand.dimensions:
        return operand.info.is_tensor
    return any(d == 0 for d in operand.dimensions)


def _is_computed(operand: Operand) -> bool:
    return operand.lifetime in (Lifetime.TEMPORARY, Lifetime.MODEL_OUTPUT)


def _nbytes(operand: Operand) -> int | None:
    if operand.is_scalar:
        return operand.info.element_size
    if _unknown_size(operand):
        return None
    return element_count(operand.dimensions) * operand.info.element_size


def _f32(value: float) -> float:
    """``value`` rounded to float32, the precision of Android's performance arithmetic."""
    return float(np.float32(value))
