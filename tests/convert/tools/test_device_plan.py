"""partition_plan: Android's plan for a converted model on device profiles, and converting for
a device (``convert(..., device=...)``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import torch_nnapi
from torch_nnapi.convert import convert_with_details
from torch_nnapi.convert.fallback.convert import PartitionedConversion
from torch_nnapi.convert.tools.device_plan import (
    partition_plan,
    plans_for_model,
    region_plans,
    timed_on_host,
)
from torch_nnapi.convert.tools.host import run_on_host
from torch_nnapi.nnapi import OperationType
from torch_nnapi.nnapi.devices import ProfileError

from ...runtime.partition_support import chain

MINIMAL = "nnapi-sample_minimal"  # ADD, CONCATENATION and float32 CONV_2D only


def _conv_sigmoid_conv() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sigmoid(),
                                torch.nn.Conv2d(4, 4, 3)).eval()
    return model, torch.randn(1, 3, 12, 12)


def test_the_plan_alternates_between_the_driver_and_the_cpu_and_says_why():
    model, x = _conv_sigmoid_conv()
    made = torch_nnapi.partition_plan(model, x, devices=[MINIMAL])
    ops = [o.type.name for o in made.model.operations]
    assert ops == ["CONV_2D", "LOGISTIC", "CONV_2D"]
    assert [(s.device, s.operations) for s in made.steps] == [
        (MINIMAL, (0,)), ("nnapi-reference", (1,)), (MINIMAL, (2,))]
    assert [f.index for f in made.fallen] == [1]
    assert made.fallen[0].reason.startswith(f"{MINIMAL}: ")
    assert "LOGISTIC" in made.fallen[0].reason
    # the convolutions are nearly all the work, and the driver is 2.5 times the CPU's speed
    assert 0 < made.reference_share < 0.5
    assert all(g.seconds > 0 for g in made.estimate.steps)
    text = "\n".join(made.render())
    assert "3 step(s)" in text
    assert (f"on nnapi-reference: operation(s) [1] (LOGISTIC x1), because {MINIMAL}: no rule"
            " supports LOGISTIC") in text
    data = json.loads(json.dumps(made.as_dict()))
    assert [s["device"] for s in data["steps"]] == [MINIMAL, "nnapi-reference", MINIMAL]
    assert data["on_reference"][0]["operation"] == 1


def test_a_model_its_conversion_and_its_nnapi_model_plan_alike():
    model, x = _conv_sigmoid_conv()
    conversion = convert_with_details(model, x)
    by_module = partition_plan(conversion.module, devices=MINIMAL)
    by_inputs = partition_plan(conversion.module, (x,), devices=[MINIMAL])
    by_model = partition_plan(conversion.model, devices=[MINIMAL, "nnapi-reference"],
                              preference="low_power")
    steps = [(s.device, s.operations) for s in by_module.steps]
    assert [(s.device, s.operations) for s in by_inputs.steps] == steps
    assert [(s.device, s.operations) for s in by_model.steps] == steps
    assert by_model.plan.preference.name == "LOW_POWER"


def test_the_steps_run_on_the_host_and_are_timed():
    model, x = _conv_sigmoid_conv()
    module = convert_with_details(model, x).module
    made = timed_on_host(partition_plan(module, (x,), devices=[MINIMAL]), module, [x], runs=1)
    assert len(made.host_seconds) == 3 and all(t > 0 for t in made.host_seconds)
    assert "host runtime" in made.render()[1]


def test_bad_devices_are_one_line_naming_them(tmp_path):
    model, x = _conv_sigmoid_conv()
    with pytest.raises(ProfileError, match="nnapi-sample_fast: no shipped profile"):
        partition_plan(model, x, devices=["nnapi-sample_fast"])
    bad = tmp_path / "npu.json"
    bad.write_text("{")
    with pytest.raises(ProfileError, match="npu.json: not valid JSON"):
        partition_plan(model, x, devices=[str(bad)])
    with pytest.raises(ValueError, match="compilation_preference must be one of"):
        partition_plan(model, x, devices=[MINIMAL], preference="fastest")


def test_converting_for_a_device_keeps_what_it_cannot_run_on_the_cpu():
    model, x = _conv_sigmoid_conv()
    conversion = convert_with_details(model, x, device=MINIMAL, fallback=True, nhwc=False)
    assert isinstance(conversion, PartitionedConversion)
    assert [c.node.kind for c in conversion.partition.cpu] == ["aten::sigmoid"]
    assert f"{MINIMAL} does not run its LOGISTIC" in conversion.partition.cpu[0].reason
    for made in region_plans(conversion.module, [MINIMAL]):
        assert [s.device for s in made.steps] == [MINIMAL]
        assert made.reference_share == 0
    with torch.no_grad():
        torch.testing.assert_close(run_on_host(conversion.module, x), model(x),
                                   rtol=1e-4, atol=1e-4)
    assert len(plans_for_model(model, x, [MINIMAL], device=MINIMAL, fallback=True)) == 2


def test_a_device_needs_the_fallback():
    model, x = _conv_sigmoid_conv()
    with pytest.raises(ValueError, match="device needs fallback=True"):
        convert_with_details(model, x, device=MINIMAL)


def test_flexible_sizes_take_the_example_inputs_sizes_or_are_shown_unknown():
    model, x = _conv_sigmoid_conv()
    module = convert_with_details(model, x, flexible={0: [2, 3]}).module
    unknown = partition_plan(module, devices=[MINIMAL])
    assert unknown.estimate.seconds is None and unknown.reference_share is None
    first = unknown.render()[0]
    # a tensor of unknown size between steps fails Android's partitioning: one CPU step
    assert first.startswith(f"devices {MINIMAL} + nnapi-reference (sustained_speed): 1 step(s),"
                            " estimate unknown (step 0: operation 0 (CONV_2D): input 0,")
    assert "has a size unknown without example inputs" in first
    assert "step 0: nnapi-reference, 3 operation(s) [0-2], estimate unknown" in \
        "\n".join(unknown.render())
    assert unknown.as_dict()["estimate_unknown"].startswith("step 0:")
    known = partition_plan(module, x, devices=[MINIMAL])
    assert known.estimate.unknown == "" and known.estimate.seconds is not None
    fixed = partition_plan(convert_with_details(model, x).module, devices=[MINIMAL])
    assert known.estimate.seconds == pytest.approx(fixed.estimate.seconds)


def test_an_nnapi_model_of_unknown_sizes_takes_them_from_example_arrays():
    model = chain([OperationType.ADD, OperationType.MAXIMUM, OperationType.ADD], (0,),
                  unknown_middle=True)
    assert partition_plan(model, devices=[MINIMAL]).estimate.seconds is None
    arrays = [np.ones(1000, np.float32), np.ones(1000, np.float32)]
    made = partition_plan(model, arrays, devices=[MINIMAL])
    assert made.estimate.unknown == ""
    assert made.estimate.seconds is not None and made.estimate.seconds > 0
