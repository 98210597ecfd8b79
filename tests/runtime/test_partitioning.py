"""Android 11's partitioner, replayed from profiles, against the oracle and by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from torch_nnapi.conformance import VERSIONS
from torch_nnapi.conformance.spec import build_model
from torch_nnapi.nnapi import Model, NnapiError, OperationType, PreferenceCode
from torch_nnapi.nnapi.devices import (
    DeviceProfile,
    parse_profile,
    reference_profile,
)
from torch_nnapi.nnapi.errors import BadDataError, OpFailedError
from torch_nnapi.runtime.partitioning import Plan, plan

from ..conformance.cts_cases import cts_tests
from . import android_oracle as oracle
from .partition_support import chain, check_against_oracle, if_model, profiles

ADD, MUL, SUB = OperationType.ADD, OperationType.MUL, OperationType.SUB


def _structure(spec: dict[str, Any]) -> str:
    """What the drivers and the partitioner read of a spec's model: operation and operand
    types, which operands are constants or of unknown size, relaxation; not values."""
    return json.dumps([[o["type"] for o in spec["operations"]],
                       [(o["type"], not o["dimensions"] or 0 in o["dimensions"], "value" in o)
                        for o in spec["operands"]],
                       spec.get("relaxComputationFloat32toFloat16", False),
                       [_structure(r) for r in spec.get("referenced", [])]])


def _one_model_per_structure(version: str) -> list[tuple[str, Model]]:
    """A model of each structure among a version's conformance tests (their variants differ
    in types, relaxation and shapes; their examples and values do not matter here)."""
    models, seen = [], set()
    for test_id, test in cts_tests():
        if test.path.parent.name != version:
            continue
        spec = test.load()[0]
        structure = _structure(spec)  # type: ignore[arg-type]  # a spec is a dict
        if structure in seen:
            continue
        seen.add(structure)
        try:
            models.append((test_id, build_model(spec)))
        except NnapiError:  # a model the CTS expects to be refused
            continue
    return models


@pytest.mark.parametrize("version", VERSIONS)
def test_cts_models_partition_as_android(version):
    models = _one_model_per_structure(version)
    if not models:
        pytest.skip(f"no {version} conformance vectors")
    for test_id, model in models:
        check_against_oracle(model, test_id)


@pytest.mark.parametrize("model", [
    chain([ADD, MUL, ADD]), chain([MUL, ADD, MUL, ADD]), chain([ADD, ADD, SUB]),
    if_model([ADD, MUL], [MUL]), if_model([ADD], [ADD, ADD]),
    chain([ADD, MUL, ADD], unknown_middle=True),
], ids=["add-mul-add", "mul-add-mul-add", "add-add-sub", "if-add-mul", "if-add",
        "unknown-temporaries"])
def test_small_models_partition_as_android(model):
    check_against_oracle(model, "model")


def test_steps_alternate_and_say_what_crosses():
    the_plan = plan(chain([ADD, MUL, ADD]), profiles(["nnapi-sample_minimal", oracle.CPU]))
    assert [(s.device, s.operations) for s in the_plan.steps] == [
        ("nnapi-sample_minimal", (0,)), ("nnapi-reference", (1,)),
        ("nnapi-sample_minimal", (2,))]
    first, second, third = the_plan.steps
    # Operands: x=0, b=1, then per operation its output and its fuse code: 2, 3; 4, 5; 6, 7.
    assert [(t.operand, t.producer, t.nbytes) for t in first.inputs] == [(0, None, 8),
                                                                        (1, None, 8)]
    assert [(t.operand, t.producer) for t in second.inputs] == [(2, 0), (1, None)]
    assert [(t.operand, t.producer) for t in third.inputs] == [(4, 1), (1, None)]
    assert [t.operand for t in first.outputs] == [2]
    assert [t.operand for t in third.outputs] == [6]
    assert "TENSOR_FLOAT32[2]" in first.outputs[0].description
    assert [the_plan.device_of(i) for i in range(3)] == [
        "nnapi-sample_minimal", "nnapi-reference", "nnapi-sample_minimal"]
    assert the_plan.fallback == ""


def test_the_preference_picks_speed_or_power():
    names = ["nnapi-sample_float_fast", "nnapi-sample_float_slow", oracle.CPU]
    model = chain([ADD, MUL])
    fast = plan(model, profiles(names), PreferenceCode.FAST_SINGLE_ANSWER)
    frugal = plan(model, profiles(names), PreferenceCode.LOW_POWER)
    assert [s.device for s in fast.steps] == ["nnapi-sample_float_fast"]
    assert [s.device for s in frugal.steps] == ["nnapi-sample_float_slow"]


def test_ties_go_to_the_cpu_then_to_the_first_listed():
    model = chain([ADD])
    # nnapi-sample_all is 1.1 everywhere, slower and hungrier than the CPU's 1.0.
    assert plan(model, profiles(["nnapi-sample_all", oracle.CPU])).steps[0].device == \
        oracle.CPU
    same = _profile("twin-a", exec_time=1.0), _profile("twin-b", exec_time=1.0)
    assert plan(model, [*same, reference_profile("t")]).steps[0].device == oracle.CPU
    assert plan(model, list(same)).steps[0].device == "twin-a"
    assert plan(model, list(reversed(same))).steps[0].device == "twin-b"


def _profile(name: str, *, exec_time: float = 1.0, relaxed: float = 1.0) -> DeviceProfile:
    perf = {"execTime": exec_time, "powerUsage": 1.0}
    fast16 = {"execTime": relaxed, "powerUsage": 1.0}
    return parse_profile(json.dumps({
        "format": "torch-nnapi-device-profile/1", "name": name, "type": "GPU",
        "featureLevel": 30, "version": "1",
        "capabilities": {"operandPerformance": {"default": perf},
                         "relaxedFloat32toFloat16PerformanceScalar": fast16,
                         "relaxedFloat32toFloat16PerformanceTensor": fast16,
                         "ifPerformance": perf, "whilePerformance": perf},
        "supportedOperations": [{"operations": "*"}]}), name)


def test_relaxed_models_use_the_relaxed_performance():
    gpu = _profile("fp16-gpu", exec_time=2.0, relaxed=0.5)
    model = chain([ADD], finish=False)
    model.relax_computation_float32_to_float16(True)
    relaxed = model.finish()
    assert plan(chain([ADD]), [gpu, reference_profile("t")]).steps[0].device == oracle.CPU
    assert plan(relaxed, [gpu, reference_profile("t")]).steps[0].device == "fp16-gpu"


def test_an_unknown_size_between_steps_falls_back_to_the_cpu():
    model = chain([ADD, MUL, ADD], unknown_middle=True)
    names = profiles(["nnapi-sample_minimal", oracle.CPU])
    fallen = plan(model, names)
    assert [(s.device, s.operations) for s in fallen.steps] == [(oracle.CPU, (0, 1, 2))]
    assert "TENSOR_FLOAT32[?]" in fallen.fallback and "unknown size" in fallen.fallback
    with pytest.raises(OpFailedError, match="partitioning failed: step 0"):
        plan(model, names, fallback=False)


def test_an_operation_no_device_supports_is_bad_data():
    with pytest.raises(BadDataError, match=r"operation 1 \(MUL\): no device among"
                                           r" \['nnapi-sample_minimal'\] can run it"):
        plan(chain([ADD, MUL]), profiles(["nnapi-sample_minimal"]))


def test_an_if_on_the_cpu_is_interpreted_and_its_models_partitioned():
    the_plan = plan(if_model([ADD, MUL], [MUL]), profiles(["nnapi-sample_minimal", oracle.CPU]))
    (step,) = the_plan.steps
    assert step.interpreted and step.device == oracle.CPU
    then_plan, else_plan = (c.plan for c in step.called)
    assert [c.role for c in step.called] == ["then", "else"]
    assert [(s.device, s.operations) for s in then_plan.steps] == [
        ("nnapi-sample_minimal", (0,)), (oracle.CPU, (1,))]
    assert [(s.device, s.operations) for s in else_plan.steps] == [(oracle.CPU, (0,))]


def test_a_plan_is_data():
    the_plan = plan(chain([ADD]), profiles([oracle.CPU]), PreferenceCode.LOW_POWER)
    assert isinstance(the_plan, Plan)
    assert the_plan.devices == (oracle.CPU,)
    assert the_plan.preference is PreferenceCode.LOW_POWER
    with pytest.raises(BadDataError, match="names a device twice"):
        plan(chain([ADD]), profiles([oracle.CPU, oracle.CPU]))
