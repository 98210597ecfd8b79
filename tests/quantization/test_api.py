"""``torch_nnapi.quantize`` and the QAT variant, end to end to NNAPI."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import torch_nnapi
from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.quantization import (
    calibrate,
    convert_prepared,
    prepare,
    prepare_qat,
    quantize_with_details,
)

from ..convert import zoo
from ..convert.harness import compare_in_quanta, dequantized_scale, run


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean((2, 3)))


def _assert_matches(quantized, x, quanta: float = 3, level: int = 3) -> None:
    conversion = convert_with_details(quantized, (x,))
    assert isinstance(conversion, Conversion)
    # uint8 inputs are quantized on the host; int8 ones (level 4) by NNAPI's QUANTIZE, as
    # PyTorch's NNAPI runtime cannot pass qint8 tensors
    quantizes = 1 if level >= 4 else 0
    assert [op.type.name for op in conversion.model.operations].count("QUANTIZE") == quantizes
    assert (conversion.feature_level == 4) == (level >= 4)
    with torch.no_grad():
        expected = quantized(x)
    stats = compare_in_quanta(run(conversion.module, (x,)), expected,
                              dequantized_scale(conversion))
    assert stats.max_quanta <= quanta and stats.top1_agree, stats


def test_quantize_is_the_package_function():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    model = zoo.randomize_batchnorm(ConvBnRelu())
    quantized = torch_nnapi.quantize(model, (x,), [torch.randn(1, 3, 8, 8) for _ in range(3)])
    _assert_matches(quantized, x)


def test_calibration_forms():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    model = zoo.randomize_batchnorm(ConvBnRelu())
    seen = []
    details = quantize_with_details(model, (x,), lambda m: seen.append(m(x)),
                                    observer="minmax")
    assert len(seen) == 1 and details.seconds >= details.calibration_seconds > 0
    quantize_with_details(model, (x,), [x, (x,)], observer="minmax")  # tensors or tuples
    quantize_with_details(model, (x,), observer="minmax")  # the example inputs
    with pytest.raises(ValueError, match="the calibration data is empty"):
        quantize_with_details(model, (x,), [], observer="minmax")


def test_prepare_calibrate_convert_in_steps_from_an_exported_program():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    program = torch.export.export(zoo.randomize_batchnorm(ConvBnRelu()), (x,))
    prepared = prepare(program, observer="minmax")  # example inputs from the program
    calibrate(prepared, [torch.randn(1, 3, 8, 8) for _ in range(3)])
    _assert_matches(convert_prepared(prepared), x)


def test_flexible_quantized_model():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    quantized = torch_nnapi.quantize(zoo.randomize_batchnorm(ConvBnRelu()), (x,),
                                     flexible={0: [2, 3]}, observer="minmax")
    conversion = convert_with_details(quantized, (x,))
    assert isinstance(conversion, Conversion)
    assert conversion.lowered.specs[0].flexible == (2, 3)
    y = torch.randn(1, 3, 12, 10)
    with torch.no_grad():
        expected = quantized(y)
    stats = compare_in_quanta(run(conversion.module, (y,)), expected,
                              dequantized_scale(conversion))
    assert stats.max_quanta <= 3


@pytest.mark.slow
@pytest.mark.parametrize("level", [3, 4])
def test_quantization_aware_training(level):
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(ConvBnRelu()).train()
    x = torch.randn(2, 3, 8, 8)
    prepared = prepare_qat(model, (x,), target_level=level)
    optimizer = torch.optim.SGD(prepared.parameters(), lr=0.01)
    for _ in range(3):
        loss = prepared(torch.randn(2, 3, 8, 8)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    quantized = convert_prepared(prepared)
    assert not any("batch_norm" in str(n.target) for n in quantized.graph.nodes)  # folded
    _assert_matches(quantized, x, level=level)
