"""What Android does with a model on a phone's devices, before the model reaches the phone.

``partition_plan`` takes an NNAPI ``Model``, a PyTorch model (converted here) or a converted
module, replays Android 11's partitioner over device profiles (``runtime.partitioning``) and
returns a ``DevicePlan``: the steps, the device of each, every operation that falls to
``nnapi-reference`` with the profile rule its driver failed, and an estimated time per step
(``runtime.estimate``). ``check``, ``inspect`` and ``bench --device`` print it.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from ...nnapi.codes import PreferenceCode
from ...nnapi.devices import REFERENCE_NAME, DeviceProfile, load_profile, reference_profile
from ...nnapi.model import Model
from ...runtime.estimate import CpuBaseline, PlanEstimate, Sizes, estimate, example_sizes
from ...runtime.partitioning import Plan, Step, exec_time_factor, plan
from ..options import preference_code

if TYPE_CHECKING:
    from ..api import Conversion
    from ..fallback.convert import PartitionedConversion

DeviceSpec = DeviceProfile | str


@dataclass(frozen=True)
class FallenOperation:
    """An operation Android gives to ``nnapi-reference`` and why no driver got it."""

    index: int
    operation: str
    reason: str


@dataclass(frozen=True)
class DevicePlan:
    """Android's plan for ``model`` on ``devices`` (the drivers, then ``nnapi-reference``):
    ``steps`` in execution order, each with its ``device`` and ``operations`` (indices into
    ``model.operations``), the estimate per step and the operations on ``nnapi-reference``."""

    model: Model
    plan: Plan
    devices: tuple[DeviceProfile, ...]
    estimate: PlanEstimate
    fallen: tuple[FallenOperation, ...]
    host_seconds: tuple[float, ...] = ()  # each step timed on the host runtime, when asked

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.plan.steps

    @property
    def reference_share(self) -> float | None:
        """The fraction of the estimated time spent on ``nnapi-reference`` (None when a
        step's estimate is unknown: ``estimate.unknown`` says why)."""
        return self.estimate.reference_share

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the plan, each step's estimate, the fallen operations."""
        data = self.plan.as_dict()
        for step, guess in zip(data["steps"], self.estimate.steps, strict=True):
            step["estimated_seconds"] = guess.seconds
            step["copy_seconds"] = guess.copy_seconds
            step["multiply_adds"] = guess.multiply_adds
            step["estimate_unknown"] = guess.unknown
        for step, seconds in zip(data["steps"], self.host_seconds, strict=False):
            step["host_seconds"] = seconds
        data["estimated_seconds"] = self.estimate.seconds
        data["reference_share"] = self.reference_share
        data["estimate_unknown"] = self.estimate.unknown
        data["on_reference"] = [{"operation": f.index, "type": f.operation, "reason": f.reason}
                                for f in self.fallen]
        return data

    def render(self, reasons_limit: int = 10, crossing_limit: int = 3) -> list[str]:
        """The plan for people: one line per step and one per tensor crossing into it, then
        the operations on nnapi-reference, grouped by why the drivers did not get them."""
        drivers = [d.name for d in self.devices if d.name != REFERENCE_NAME]
        share = self.reference_share
        lines = [f"devices {', '.join(drivers) or '(none)'} + {REFERENCE_NAME}"
                 f" ({self.plan.preference.name.lower()}): {len(self.steps)} step(s),"
                 + (f" estimated {_ms(self.estimate.seconds)}, {share:.0%} on {REFERENCE_NAME}"
                    if self.estimate.seconds is not None and share is not None else
                    f" estimate unknown ({self.estimate.unknown})")]
        if self.plan.fallback:
            lines.append(f"  partitioning failed, the whole model runs on {REFERENCE_NAME}:"
                         f" {self.plan.fallback}")
        host = self.host_seconds or (None,) * len(self.steps)
        for step, guess, measured in zip(self.steps, self.estimate.steps, host, strict=True):
            crossing = [t for t in step.inputs if t.producer is not None]
            copied = sum(t.nbytes or 0 for t in crossing)
            guessed = "estimate unknown" if guess.seconds is None else \
                f"estimated {_ms(guess.seconds)}"
            lines.append(f"  step {step.index}: {step.device}, {len(step.operations)}"
                         f" operation(s) {_ranges(step.operations)}, {guessed}"
                         + ("" if measured is None else f", host runtime {_ms(measured)}")
                         + (f", {len(crossing)} tensor(s) in from other steps"
                            f" ({_size(copied)})" if crossing else ""))
            lines += [f"    in: {t.description} from step {t.producer}"
                      f" ({'size unknown' if t.nbytes is None else _size(t.nbytes)})"
                      for t in crossing[:crossing_limit]]
            if len(crossing) > crossing_limit:
                lines.append(f"    ... and {len(crossing) - crossing_limit} more")
        by_reason: dict[str, list[FallenOperation]] = {}
        for f in self.fallen:
            by_reason.setdefault(f.reason, []).append(f)
        for reason, fallen in list(by_reason.items())[:reasons_limit]:
            kinds = Counter(f.operation for f in fallen)
            lines.append(f"  on {REFERENCE_NAME}: operation(s) {_ranges([f.index for f in fallen])}"
                         f" ({', '.join(f'{k} x{n}' for k, n in kinds.most_common())}),"
                         f" because {reason}")
        if len(by_reason) > reasons_limit:
            lines.append(f"  ... and {len(by_reason) - reasons_limit} more reason(s)")
        return lines


def partition_plan(model: object, example_inputs: object = None, *,
                   devices: Sequence[DeviceSpec],
                   preference: str | int = "sustained_speed",
                   relax_fp32_to_fp16: bool = False,
                   baseline: CpuBaseline | None = None) -> DevicePlan:
    """Android 11's plan for ``model`` on a phone whose drivers are ``devices`` (shipped
    profile names, JSON paths or profiles; ``nnapi-reference`` is added last, as Android's
    DeviceManager does). ``model``: an NNAPI ``Model`` (finished), a converted module, or a
    PyTorch model converted here with ``example_inputs``. ``baseline``: the CPU's speed the
    estimates scale (docs/device_profiles.md, "Estimated time").

    ProfileError for a profile that cannot be read; ValueError for a bad preference, a
    partitioned module (plan its regions: ``region_plans``) or a model that cannot convert."""
    nnapi_model = nnapi_model_of(model, example_inputs, relax_fp32_to_fp16)
    sizes = _sizes_on_examples(model, nnapi_model, example_inputs)
    return plan_model(nnapi_model, devices, preference, baseline, sizes)


def plan_model(model: Model, devices: Sequence[DeviceSpec], preference: str | int,
               baseline: CpuBaseline | None = None, sizes: Sizes | None = None) -> DevicePlan:
    """``partition_plan`` for a finished NNAPI ``Model``; ``sizes``: the dimensions its
    tensors of unknown size had on example inputs (``runtime.estimate.example_sizes``)."""
    profiles = device_list(devices)
    code = PreferenceCode(preference_code(preference))
    made = plan(model, profiles, code)
    return DevicePlan(model, made, profiles, estimate(made, model, profiles, baseline, sizes),
                      _fallen(model, made, profiles))


def _sizes_on_examples(model: object, nnapi_model: Model, example_inputs: object) -> Sizes:
    """The sizes ``nnapi_model``'s tensors take on the example inputs, when there are some
    and a tensor's size is unknown ({} otherwise)."""
    if example_inputs is None:
        return {}
    inputs: list[Any] = list(example_inputs) if isinstance(example_inputs, tuple | list) \
        else [example_inputs]
    if isinstance(model, Model):
        arrays = [x.numpy() if isinstance(x, torch.Tensor) else x for x in inputs]
        return example_sizes(nnapi_model, arrays)
    module = model if isinstance(model, torch.jit.ScriptModule) and hasattr(model, "nnapi") \
        else None
    if module is None:
        return {}  # a PyTorch model: converted with these examples, its sizes are known
    from .host import host_inputs, program_of

    return example_sizes(nnapi_model, host_inputs(program_of(module), inputs))


def device_list(devices: Sequence[DeviceSpec]) -> tuple[DeviceProfile, ...]:
    """The profiles of ``devices``, ``nnapi-reference`` last (added when not named)."""
    if isinstance(devices, str | DeviceProfile):
        devices = [devices]
    profiles = [d if isinstance(d, DeviceProfile) else load_profile(d)
                for d in devices if d != REFERENCE_NAME]
    return (*(p for p in profiles if p.name != REFERENCE_NAME), reference_profile())


def nnapi_model_of(model: object, example_inputs: object, relax: bool) -> Model:
    """The finished NNAPI model behind ``model`` (see ``partition_plan``)."""
    if isinstance(model, Model):
        if relax and not model.relax_float32_to_float16:
            model = copy.copy(model)
            model.relax_float32_to_float16 = True
        return model
    if isinstance(model, torch.jit.ScriptModule) and hasattr(model, "nnapi"):
        return _converted_model(model, example_inputs)
    if isinstance(model, torch.jit.ScriptModule) and _is_partitioned(model):
        raise ValueError("a partitioned module has one NNAPI model per region: plan them with"
                         " region_plans")
    from ..api import convert_with_details
    from ..fallback.convert import PartitionedConversion

    conversion = convert_with_details(model, example_inputs, relax_fp32_to_fp16=relax)
    if isinstance(conversion, PartitionedConversion):  # not reached without fallback=True
        raise ValueError("the model converted partitioned: plan its regions with region_plans")
    return conversion.model


def region_plans(module: torch.jit.ScriptModule, devices: Sequence[DeviceSpec],
                 preference: str | int = "sustained_speed",
                 baseline: CpuBaseline | None = None) -> list[DevicePlan]:
    """The plan of each NNAPI region of a partitioned module (``convert(...,
    fallback=True)``), in running order: each region is a compilation of its own."""
    from ..fallback.run import region_programs
    from ..torchscript.deserialize import deserialize

    plans = []
    for program in region_programs(module):
        weights = [w.contiguous().numpy() for w in program.weights]
        model = deserialize(program.ser_model.numpy(), weights).model
        plans.append(plan_model(model, devices, preference, baseline))
    return plans


def timed_on_host(made: DevicePlan, module: torch.jit.ScriptModule,
                  inputs: Sequence[torch.Tensor], runs: int = 3) -> DevicePlan:
    """``made`` (the plan of a converted, not partitioned, module) with each step timed on
    the host runtime for ``inputs``, as runtime.partitioned runs the steps."""
    from ...runtime.partitioned import time_steps
    from .host import host_inputs, program_of

    ready = host_inputs(program_of(module), inputs)
    return replace(made, host_seconds=tuple(time_steps(made.model, made.plan, ready, runs)))


def _converted_model(module: torch.jit.ScriptModule, example_inputs: object) -> Model:
    from ..torchscript.deserialize import deserialize
    from .host import model_for, program_of

    if example_inputs is not None:
        inputs = example_inputs if isinstance(example_inputs, tuple | list) \
            else (example_inputs,)
        return model_for(module, list(inputs))
    program = program_of(module)
    weights = [w.contiguous().numpy() for w in program.weights]
    return deserialize(program.ser_model.numpy(), weights).model


def _is_partitioned(module: torch.jit.ScriptModule) -> bool:
    from ..fallback.run import is_partitioned

    return bool(is_partitioned(module))


def _fallen(model: Model, made: Plan, profiles: Sequence[DeviceProfile]) -> \
        tuple[FallenOperation, ...]:
    """The operations of steps on nnapi-reference (not interpreted IF or WHILE) and, per
    driver, the rule it failed or the figure it lost on."""
    drivers = [d for d in profiles if d.name != REFERENCE_NAME]
    fallen = []
    for step in made.steps:
        if step.device != REFERENCE_NAME or step.interpreted:
            continue
        for index in step.operations:
            if made.fallback:
                fallen.append(FallenOperation(index, model.operations[index].type.name,
                                              f"partitioning failed ({made.fallback})"))
                continue
            reasons = [f"{d.name}: {_why_not(d, model, index)}" for d in drivers]
            fallen.append(FallenOperation(index, model.operations[index].type.name,
                                          "; ".join(reasons) or "no driver"))
    return tuple(fallen)


def _why_not(device: DeviceProfile, model: Model, index: int) -> str:
    why = device.why_unsupported(model, index)
    if why:
        return why
    factor = exec_time_factor(model, index, device)
    return f"supported, but its execTime {factor:g} is not below the CPU's 1"


def _ranges(indices: Sequence[int]) -> str:
    """[0-3, 7] for 0, 1, 2, 3, 7."""
    parts: list[str] = []
    start = prev = None
    for i in indices:
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = i
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return "[" + ", ".join(parts) + "]"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _size(nbytes: int) -> str:
    return f"{nbytes / 1024:.1f} KB" if nbytes >= 1024 else f"{nbytes} B"


def plans_for_model(model: object, example_inputs: object, devices: Sequence[DeviceSpec],
                    preference: str | int = "sustained_speed",
                    baseline: CpuBaseline | None = None, **options: Any) -> list[DevicePlan]:
    """Converts ``model`` with ``options`` (as ``convert`` takes them, ``fallback=True``
    included) and plans its NNAPI model, or each region's: a list in running order."""
    from ..api import convert_with_details

    conversion = convert_with_details(model, example_inputs, **options)
    return plans_of_conversion(conversion, devices, preference, baseline)


def plans_of_conversion(conversion: Conversion | PartitionedConversion,
                        devices: Sequence[DeviceSpec],
                        preference: str | int = "sustained_speed",
                        baseline: CpuBaseline | None = None) -> list[DevicePlan]:
    """The plan of a conversion's (``convert_with_details``) NNAPI model, or of each of its
    regions, in running order."""
    from ..fallback.convert import PartitionedConversion

    if isinstance(conversion, PartitionedConversion):
        return [plan_model(region.lowered.cx.model, devices, preference, baseline)
                for region in conversion.regions if region.lowered is not None]
    return [plan_model(conversion.model, devices, preference, baseline)]
