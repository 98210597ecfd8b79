"""torchvision's quantizable classification models (``torchvision.models.quantization``) after
eager post-training quantization with qnnpack: random weights with non-trivial batch norm
statistics, fused, calibrated on random data, converted, run through PyTorch's NNAPI runtime
and compared with eager PyTorch: within 3 output quanta, with the same top-1 class.

The full sweep is slow (``-m slow``); one representative runs in the default suite.
"""

from __future__ import annotations

import pytest
import torch

from ..convert.harness import compare_in_quanta, convert, dequantized_scale, run
from ..convert.zoo import randomize_batchnorm
from .torchvision_support import load_torchvision

# name -> input size (inception_v3 needs at least 75x75)
MODELS = {
    "googlenet": 64, "inception_v3": 96, "mobilenet_v2": 64, "mobilenet_v3_large": 64,
    "resnet18": 64, "resnet50": 64, "resnext101_32x8d": 64, "resnext101_64x4d": 64,
    "shufflenet_v2_x0_5": 64, "shufflenet_v2_x1_0": 64, "shufflenet_v2_x1_5": 64,
    "shufflenet_v2_x2_0": 64,
}
# torchvision's quantizable blocks own a FloatFunctional even where they do not use it (an
# inverted residual block without a residual), whose observer then never runs.
pytestmark = pytest.mark.filterwarnings(
    "ignore:must run observer before calling calculate_qparams")

FAST = "mobilenet_v3_large"  # hardswish, squeeze-excitation multiplies, residual adds
MAX_QUANTA = 3


def quantized_model(name: str) -> torch.nn.Module:
    """``name`` quantized the eager way: fuse, prepare, calibrate, convert."""
    quantization = load_torchvision().models.quantization
    torch.manual_seed(0)
    # torchvision initializes GoogLeNet and Inception v3 with a truncated normal of std 0.1,
    # under which random activations grow to ~1e9 over their ~90 layers; PyTorch's default
    # initialization keeps them in a range 8-bit quantization can represent.
    options = {"aux_logits": False, "init_weights": False} \
        if name in ("googlenet", "inception_v3") else {}
    model = getattr(quantization, name)(weights=None, quantize=False, **options)
    model = randomize_batchnorm(model).eval()
    model.fuse_model(is_qat=False)
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(model, inplace=True)
    size = MODELS[name]
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(2, 3, size, size))
    return torch.ao.quantization.convert(model, inplace=True)


def check_quantized(name: str) -> None:
    model = quantized_model(name)
    size = MODELS[name]
    x = torch.randn(1, 3, size, size)
    conversion = convert(model, x)
    with torch.no_grad():
        expected = model(x)
    stats = compare_in_quanta(run(conversion.module, (x,)), expected,
                              dequantized_scale(conversion))
    assert stats.top1_agree and stats.max_quanta <= MAX_QUANTA, stats


def test_representative_quantized_model(qnnpack):
    check_quantized(FAST)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(MODELS) - {FAST}))
def test_quantized_model(name, qnnpack):
    check_quantized(name)
