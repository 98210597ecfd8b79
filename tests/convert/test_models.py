"""The model zoo: convert, run through NNAPI, compare with eager PyTorch."""

from __future__ import annotations

import pytest
import torch

from . import zoo
from .harness import LAYOUTS, check, nnapi_ops

FLOAT_MODELS = {
    "mobilenet_v2": (lambda: zoo.MobileNetV2(num_classes=10), (1, 3, 64, 64)),
    "resnet18": (lambda: zoo.ResNet18(num_classes=10), (1, 3, 64, 64)),
    "mobilenet_v3_small": (lambda: zoo.MobileNetV3Small(num_classes=10), (1, 3, 64, 64)),
    "shufflenet_v2": (lambda: zoo.ShuffleNetV2(num_classes=10), (1, 3, 64, 64)),
    "unet": (lambda: zoo.UNet(), (1, 3, 64, 64)),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(FLOAT_MODELS))
def test_float_model(name, nhwc):
    torch.manual_seed(0)
    build, shape = FLOAT_MODELS[name]
    model = zoo.randomize_batchnorm(build())
    conversion, worst = check(model, torch.randn(*shape), nhwc=nhwc)
    if nhwc:
        # channels-last all the way: no layout changes until the classifier or the output
        assert nnapi_ops(conversion).count("TRANSPOSE") <= 1


def test_transformer_encoder():
    torch.manual_seed(0)
    model = zoo.TransformerEncoder().eval()
    tokens = torch.randint(0, 100, (2, 16))
    check(model, tokens)


def test_shufflenet_channel_shuffle_is_one_operation():
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(zoo.ShuffleNetV2(num_classes=10))
    conversion, _ = check(model, torch.randn(1, 3, 64, 64))
    assert "CHANNEL_SHUFFLE" in nnapi_ops(conversion)


QUANTIZED_MODELS = {
    # ContiguousReLU6: see zoo.ContiguousReLU6 (a PyTorch bug in the eager reference)
    "mobilenet_v2": lambda: zoo.MobileNetV2(num_classes=10, act=zoo.ContiguousReLU6),
    "resnet18": lambda: zoo.ResNet18(num_classes=10),
}


# Per-channel layers run in float in PyTorch Mobile's format, which the converter says in a
# warning (asserted in tests/quantization/test_quantizer.py); here the results are checked.
@pytest.mark.filterwarnings("ignore:torch-nnapi.*per-channel weights:UserWarning")
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("name", sorted(QUANTIZED_MODELS))
def test_fx_quantized_model(name, per_channel, qnnpack):
    from torch_nnapi.convert.tools.compare import compare_layers

    from .harness import compare_in_quanta, convert, dequantized_scale, run
    from .lowerings.test_quantized import fx_quantize

    torch.manual_seed(0)
    x = torch.randn(1, 3, 64, 64)
    q = fx_quantize(zoo.randomize_batchnorm(QUANTIZED_MODELS[name]()), x, per_channel)
    conversion = convert(q, x)
    stats = compare_in_quanta(run(conversion.module, (x,)), q(x), dequantized_scale(conversion))
    # Each layer alone is within one quantum (test_quantized.py); along 20-50 layers the
    # one-quantum differences add up a little, residual additions most.
    worst = max(d.error for d in compare_layers(q, x) if d.unit == "quanta")
    assert stats.top1_agree and stats.max_quanta <= 3, stats
    assert worst <= 6
