"""Running a partition plan on the host: each step a model of its own, as Android makes it.

Android compiles each step's operations as a model of their own (ExecutionStep's step
model: its inputs the tensors crossing in, its outputs those crossing out) for the step's
device, and runs the steps in order, copying the crossing tensors. Here every device is the
host runtime, so a partitioned model computes what the whole model computes; running the
steps checks that the plan is complete and consistent. A plan of one step (the usual case,
and every fallback) compiles the whole model as ``Compilation`` does.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..nnapi.codes import PreferenceCode
from ..nnapi.devices import DeviceProfile
from ..nnapi.errors import BadStateError, NnapiError, OpFailedError
from ..nnapi.model import Lifetime, Model
from .context import OMITTED
from .executor import Compilation, ExecutionResult
from .partitioning import Plan, Step, plan, whole_model_on_cpu
from .steps import prefixed
from .timeouts import NO_LIMITS, RunLimits


def compile_for_devices(model: Model, devices: Sequence[DeviceProfile],
                        preference: PreferenceCode | int = PreferenceCode.FAST_SINGLE_ANSWER, *,
                        fallback: bool = True, kernels: str | None = None) \
        -> tuple[Compilation, Plan]:
    """Compiles ``model`` as Android would for ``devices`` (see ``partitioning.plan``) and
    returns the compilation with its plan. With ``fallback`` (Compilation_create), a step
    that fails to compile makes the whole model run on the CPU, as CompilationBuilder::finish
    does; without it (createForDevices) the failure is the compilation's."""
    the_plan = plan(model, devices, preference, fallback=fallback)
    if len(the_plan.steps) == 1:
        return Compilation(model, preference=preference, kernels=kernels), the_plan
    try:
        return PartitionedCompilation(model, the_plan, kernels=kernels), the_plan
    except NnapiError as e:
        if not fallback:
            raise OpFailedError(f"compiling a step failed: {e}") from e
        reason = f"compiling a step failed ({e})"
    cpu_plan = whole_model_on_cpu(model, the_plan.devices, the_plan.preference, reason)
    return Compilation(model, preference=preference, kernels=kernels), cpu_plan


@dataclass(frozen=True)
class CompiledStep:
    """A step's model compiled by the host runtime; ``inputs`` and ``outputs`` are the
    operands of the partitioned model its inputs and outputs are."""

    step: Step
    compilation: Compilation
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @property
    def where(self) -> str:
        return f"step {self.step.index} ({self.step.device})"


class PartitionedCompilation(Compilation):
    """A finished model compiled as a plan of several steps, each a model of its own.

    It is a Compilation whose executions (``create_execution``, ``run``: the runtime's
    Execution, checking inputs as for any model) run the steps in order under the
    execution's limits. Nothing of the whole model is compiled, so the base class's
    initializer is not called."""

    def __init__(self, model: Model, the_plan: Plan, *, kernels: str | None = None):
        self.model = model
        self.plan = the_plan
        self.preference = the_plan.preference
        self.parts = [
            CompiledStep(step, Compilation(step_model(model, step), preference=self.preference,
                                           kernels=kernels),
                         tuple(t.operand for t in step.inputs),
                         tuple(t.operand for t in step.outputs))
            for step in the_plan.steps]

    def check_omitted(self, omitted: set[int]) -> None:
        """Omitted model inputs, checked by each step that reads them."""
        for compiled in self.parts:
            step_inputs = compiled.compilation.model.inputs
            inner = {step_inputs[p] for p, o in enumerate(compiled.inputs) if o in omitted}
            if inner:
                try:
                    compiled.compilation.check_omitted(inner)
                except NnapiError as e:
                    raise prefixed(e, compiled.where) from e

    def _execute(self, inputs: Sequence[Any], keep_intermediates: bool, profile: bool,
                 limits: RunLimits = NO_LIMITS,
                 substitutes: Mapping[int, np.ndarray] | None = None) -> ExecutionResult:
        if keep_intermediates or profile or substitutes:
            raise BadStateError("a partitioned compilation keeps no intermediates, profile or"
                                " substitutes: compile the whole model for those")
        values: dict[int, Any] = dict(zip(self.model.inputs, inputs, strict=True))
        for compiled in self.parts:
            self.run_step(compiled, values, limits)
        outputs = [values[o] for o in self.model.outputs]
        return ExecutionResult(outputs, dict(zip(self.model.outputs, outputs, strict=True)))

    def run_step(self, compiled: CompiledStep, values: dict[int, Any],
                 limits: RunLimits = NO_LIMITS) -> None:
        """Runs one step on ``values`` (operand -> array, the model's inputs and what the
        steps before computed) and adds the tensors it computes."""
        limits.check_deadline()
        execution = compiled.compilation.create_execution()
        for position, operand in enumerate(compiled.inputs):
            value = values[operand]
            execution.set_input(position, None if value is OMITTED else value)
        try:
            outputs = execution.compute(limits=limits).outputs
        except NnapiError as e:
            raise prefixed(e, compiled.where) from e
        values.update(zip(compiled.outputs, outputs, strict=True))


def time_steps(model: Model, the_plan: Plan, inputs: Sequence[Any], runs: int = 3, *,
               kernels: str | None = None) -> list[float]:
    """Each step's time on the host runtime, the best of ``runs`` (seconds, in step order):
    the plan's steps compiled as Android compiles them, run in order on ``inputs``."""
    compilation = PartitionedCompilation(model, the_plan, kernels=kernels)
    best = [float("inf")] * len(compilation.parts)
    for _ in range(runs):
        values: dict[int, Any] = dict(zip(model.inputs, inputs, strict=True))
        for k, compiled in enumerate(compilation.parts):
            start = time.perf_counter()
            compilation.run_step(compiled, values)
            best[k] = min(best[k], time.perf_counter() - start)
    return best


def step_model(model: Model, step: Step) -> Model:
    """The model of one step: its operations, the operands they use (constants, omitted
    operands and called models as in ``model``), the crossing tensors as inputs and
    outputs."""
    part = Model()
    index: dict[int, int] = {}
    for operation in (model.operations[i] for i in step.operations):
        for operand in (*operation.inputs, *operation.outputs):
            if operand not in index:
                index[operand] = _copy_operand(model, operand, part)
        part.add_operation(operation.type, [index[i] for i in operation.inputs],
                           [index[o] for o in operation.outputs])
    part.identify_inputs_and_outputs([index[t.operand] for t in step.inputs],
                                     [index[t.operand] for t in step.outputs])
    part.relax_computation_float32_to_float16(model.relax_float32_to_float16)
    return part.finish()


def _copy_operand(model: Model, operand: int, part: Model) -> int:
    source = model.operands[operand]
    copy = part.add_operand(source.type, source.dimensions, source.scale, source.zero_point,
                            name=source.name)
    if source.channel_quant is not None:
        part.set_operand_symm_per_channel_quant_params(copy, source.channel_quant.scales,
                                                       source.channel_quant.channel_dim)
    if source.lifetime is Lifetime.CONSTANT:
        part.set_operand_value(copy, source.value, copy=False)
    elif source.lifetime is Lifetime.NO_VALUE:
        part.set_operand_value(copy, None)
    elif source.lifetime is Lifetime.REFERENCED_MODEL and source.model is not None:
        part.set_operand_value_from_model(copy, source.model)
    return copy
