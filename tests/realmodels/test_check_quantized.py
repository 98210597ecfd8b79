"""``check`` on FX-quantized MobileNetV2 (torchvision's definition, random weights): the
conversion is not blamed for PyTorch's qnnpack hardtanh, which returns a channels-last
tensor's values in the wrong order (reported as a 125-quanta MISMATCH before the reference
was checked against a second engine)."""

from __future__ import annotations

import pytest
import torch

from .torchvision_support import load_torchvision

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not {"qnnpack", "x86"} <= set(torch.backends.quantized.supported_engines),
                    reason="needs PyTorch's qnnpack and x86 quantized engines")
def test_fx_quantized_mobilenet_v2_is_not_blamed_for_qnnpack():
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    from torch_nnapi.convert.tools.check import check_model, quantized_engine

    torchvision = load_torchvision()
    torch.manual_seed(0)
    x = torch.randn(1, 3, 224, 224)
    with quantized_engine("qnnpack"):
        model = torchvision.models.mobilenet_v2(weights=None).eval()
        prepared = prepare_fx(model, get_default_qconfig_mapping("qnnpack"), (x,))
        for _ in range(2):
            prepared(torch.randn(1, 3, 224, 224))
        quantized = convert_fx(prepared)
    report = check_model(quantized, (x,))
    layers = report.accuracy.layers
    assert report.exit_code == 0, [t for t in layers if not t.ok][:3]
    hardtanh = [t for t in layers if t.kind.startswith("aten::hardtanh")]
    assert any(t.reference_disagrees for t in hardtanh)
    assert all(t.alternate is not None and t.alternate.error <= 3 for t in hardtanh)


@pytest.mark.skipif("qnnpack" not in torch.backends.quantized.supported_engines,
                    reason="needs PyTorch's qnnpack quantized engine")
def test_eager_quantized_mobilenet_v2_drifts_without_failing():
    """torchvision's quantizable MobileNetV2, eager post-training quantization (random
    weights, calibrated): its layers drift up to 11 quanta against a tolerance of 8, carried
    down the network, while its output matches within 0 quanta. Check said FAIL (exit 2);
    the verdict is the outputs', the drift is reported as drift."""
    from torch_nnapi.convert.tools.check import check_model, quantized_engine

    torchvision = load_torchvision()
    torch.manual_seed(0)
    with quantized_engine("qnnpack"):
        model = torchvision.models.quantization.mobilenet_v2(weights=None,
                                                             quantize=False).eval()
        model.fuse_model()
        model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
        torch.ao.quantization.prepare(model, inplace=True)
        for _ in range(4):
            model(torch.randn(1, 3, 96, 96))
        torch.ao.quantization.convert(model, inplace=True)
    report = check_model(model, (torch.randn(1, 3, 96, 96),))
    accuracy = report.accuracy
    assert report.exit_code == 0, report.verdict()
    assert all(o.within for o in accuracy.outputs)
    assert accuracy.drifting and all(t.unit == "quanta" for t in accuracy.drifting)
    assert "drift up to" in report.verdict()
    assert all(t.ok for t in accuracy.layers)
