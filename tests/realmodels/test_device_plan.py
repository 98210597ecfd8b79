"""The seed scenario of issue 22, "why is NNAPI slow on my phone": torchvision's quantizable
MobileNetV2 (random weights, calibrated, quantized the eager way) with a float classifier,
converted the prototype's way (NCHW, a float island), planned for quantized-only drivers;
then converted for the driver, so that its NNAPI regions run whole on it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import torch_nnapi
from torch_nnapi.convert import convert_with_details
from torch_nnapi.convert.fallback.convert import PartitionedConversion
from torch_nnapi.convert.tools.device_plan import region_plans

from .quantized import quantized_model

# torchvision's quantizable blocks own a FloatFunctional even where they do not use it (an
# inverted residual block without a residual), whose observer then never runs.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:must run observer before calling calculate_qparams"),
]

NPU = str(Path(__file__).parents[2] / "docs" / "profiles" / "example-quant-npu.json")


def _mobilenet_with_a_float_classifier() -> torch.nn.Module:
    model = quantized_model("mobilenet_v2")
    torch.manual_seed(1)
    model.classifier = torch.nn.Sequential(
        torch.ao.nn.quantized.DeQuantize(), torch.nn.Linear(1280, 10),
        torch.ao.nn.quantized.Quantize(0.05, 128, torch.quint8))
    return model.eval()


def test_quantized_mobilenet_v2_on_quantized_only_drivers():
    model = _mobilenet_with_a_float_classifier()
    x = torch.randn(1, 3, 64, 64)
    conversion = convert_with_details(model, x, nhwc=False)
    # AOSP's sample_quant is 50 times slower than the CPU: Android runs it all on the CPU
    on_sample = torch_nnapi.partition_plan(conversion.model, devices=["nnapi-sample_quant"])
    assert [s.device for s in on_sample.steps] == ["nnapi-reference"]
    assert on_sample.reference_share == 1
    assert "execTime 50 is not below the CPU's 1" in on_sample.fallen[0].reason
    # a fast 8-bit accelerator: the float island (the classifier) goes to nnapi-reference
    on_npu = torch_nnapi.partition_plan(conversion.module, devices=[NPU])
    ops = [o.type.name for o in on_npu.model.operations]
    assert [s.device for s in on_npu.steps] == ["example-quant-npu", "nnapi-reference",
                                                "example-quant-npu"]
    assert [ops[i] for i in on_npu.steps[1].operations] == ["FULLY_CONNECTED", "QUANTIZE"]
    assert all("input '0' is TENSOR_FLOAT32" in f.reason for f in on_npu.fallen)
    assert 0 < on_npu.reference_share < 1

    for_npu = convert_with_details(model, x, nhwc=False, fallback=True, device=NPU)
    assert isinstance(for_npu, PartitionedConversion)
    assert sorted(c.node.kind for c in for_npu.partition.cpu) == \
        ["aten::linear", "aten::quantize_per_tensor"]
    plans = region_plans(for_npu.module, [NPU])
    assert [[s.device for s in p.steps] for p in plans] == [["example-quant-npu"]] * 2
    assert all(p.reference_share == 0 for p in plans)
    with torch.no_grad():
        expected = model(x)
        torch.testing.assert_close(for_npu.module(x), expected, atol=0.05 * 3, rtol=0)
