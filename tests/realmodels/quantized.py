"""torchvision's quantizable classification models (``torchvision.models.quantization``),
quantized the eager way with qnnpack: random weights with non-trivial batch norm statistics,
fused, calibrated on random data, converted. Shared by the tests and bench/families.py."""

from __future__ import annotations

import torch

from ..convert.zoo import randomize_batchnorm
from .torchvision_support import load_torchvision

# name -> input size (inception_v3 needs at least 75x75)
MODELS = {
    "googlenet": 64, "inception_v3": 96, "mobilenet_v2": 64, "mobilenet_v3_large": 64,
    "resnet18": 64, "resnet50": 64, "resnext101_32x8d": 64, "resnext101_64x4d": 64,
    "shufflenet_v2_x0_5": 64, "shufflenet_v2_x1_0": 64, "shufflenet_v2_x1_5": 64,
    "shufflenet_v2_x2_0": 64,
}


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
    randomize_batchnorm(model).eval()  # in place: model keeps quantizable's own type
    model.fuse_model(is_qat=False)
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(model, inplace=True)
    size = MODELS[name]
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(2, 3, size, size))
    return torch.ao.quantization.convert(model, inplace=True)
