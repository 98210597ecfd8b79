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
from .quantized import MODELS, quantized_model

# torchvision's quantizable blocks own a FloatFunctional even where they do not use it (an
# inverted residual block without a residual), whose observer then never runs.
pytestmark = pytest.mark.filterwarnings(
    "ignore:must run observer before calling calculate_qparams")

FAST = "mobilenet_v3_large"  # hardswish, squeeze-excitation multiplies, residual adds
MAX_QUANTA = 3


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
