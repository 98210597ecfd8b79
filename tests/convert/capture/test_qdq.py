"""PT2E quantize/dequantize patterns folded into quantized NNAPI operations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.convert.capture.packed import StoredWeight
from torch_nnapi.convert.errors import FeatureLevelError
from torch_nnapi.convert.lowerings.quantized import _weight
from torch_nnapi.convert.tools.check import check_model
from torch_nnapi.nnapi.codes import OperandType
from torch_nnapi.quantization import quantize

from .. import zoo
from ..harness import compare_in_quanta, dequantized_scale, nnapi_ops, run, torch_runtime_available

_Q8 = OperandType.TENSOR_QUANT8_ASYMM


class Block(nn.Module):
    """Conv + batch norm + ReLU, pools, a residual add, a flatten and a linear layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        y = F.relu6(self.conv2(y)) + y
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.fc(y)


class Mixed(nn.Module):
    """Multiplication, concatenation, sigmoid, tanh and softmax."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 4, 1)
        self.b = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        a, b = self.a(x), self.b(x)
        y = torch.cat([a * torch.sigmoid(b), torch.tanh(b)], 1)
        return torch.softmax(y.flatten(1), 1)


class Movement(nn.Module):
    """Resizing, padding, pooling, permutes and reshapes, a mean, a tanh."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = F.interpolate(self.a(x), scale_factor=2, mode="nearest")
        y = self.b(F.avg_pool2d(F.pad(y, (1, 1, 1, 1)), 2))
        z = y.permute(0, 2, 3, 1).squeeze(0).unsqueeze(0)
        return torch.tanh(z.mean((1, 2)))


class HardSwish(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3)
        self.b = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        return self.b(F.hardswish(self.a(x)))


def _quantized(model, x, level=3):
    torch.manual_seed(1)
    calibration = [torch.randn_like(x) for _ in range(4)]
    return quantize(zoo.randomize_batchnorm(model), (x,), calibration, target_level=level,
                    observer="minmax")


def _types(conversion, name: str) -> set:
    model = conversion.model
    return {model.operands[op.outputs[0]].type for op in model.operations
            if op.type.name == name}


def _matches(quantized, conversion, x, quanta: float = 3) -> None:
    with torch.no_grad():
        expected = quantized(x)
    stats = compare_in_quanta(run(conversion.module, (x,)), expected,
                              dequantized_scale(conversion))
    assert stats.max_quanta <= quanta and stats.top1_agree, stats


@pytest.mark.parametrize("level", [1, 3])
def test_convolutions_pools_and_adds_run_in_8_bits(level):
    x = torch.randn(1, 3, 16, 16)
    quantized = _quantized(Block(), x, level)
    conversion = convert_with_details(quantized, (x,), target_level=level)
    ops = nnapi_ops(conversion)
    # the input is quantized on the host; only the final output is dequantized
    assert "QUANTIZE" not in ops and ops.count("DEQUANTIZE") == 1, ops
    assert ops[-1] == "DEQUANTIZE"
    for name in ("CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D", "ADD", "FULLY_CONNECTED"):
        assert _types(conversion, name) == {_Q8}, name
    assert conversion.feature_level == 1
    _matches(quantized, conversion, x)


def test_bias_is_int32_with_the_product_of_input_and_weight_scales():
    x = torch.randn(1, 3, 16, 16)
    conversion = convert_with_details(_quantized(Block(), x), (x,))
    assert isinstance(conversion, Conversion)
    model = conversion.model
    for op in model.operations:
        if op.type.name == "CONV_2D":
            data, weight, bias = (model.operands[i] for i in op.inputs[:3])
            assert bias.type == OperandType.TENSOR_INT32
            assert bias.scale == pytest.approx(data.scale * weight.scale, rel=1e-6)


def test_fixed_output_scales_and_concatenation():
    x = torch.randn(1, 3, 4, 4)
    quantized = _quantized(Mixed(), x)
    conversion = convert_with_details(quantized, (x,))
    assert isinstance(conversion, Conversion)
    model = conversion.model
    assert "QUANTIZE" not in nnapi_ops(conversion)
    for name, params in (("LOGISTIC", (1 / 256, 0)), ("TANH", (1 / 128, 128)),
                         ("SOFTMAX", (1 / 256, 0))):
        (op,) = [op for op in model.operations if op.type.name == name]
        out = model.operands[op.outputs[0]]
        assert (out.type, out.scale, out.zero_point) == (_Q8, *params), name
    assert _types(conversion, "MUL") == {_Q8} and _types(conversion, "CONCATENATION") == {_Q8}
    _matches(quantized, conversion, x)


def test_data_movement_keeps_8_bits():
    x = torch.randn(1, 3, 8, 8)
    quantized = _quantized(Movement(), x)
    conversion = convert_with_details(quantized, (x,))
    ops = nnapi_ops(conversion)
    assert "QUANTIZE" not in ops and ops.count("DEQUANTIZE") == 1, ops
    for name in ("RESIZE_NEAREST_NEIGHBOR", "PAD", "AVERAGE_POOL_2D", "MEAN", "TANH"):
        assert _types(conversion, name) == {_Q8}, name
    _matches(quantized, conversion, x)


def test_concatenation_shares_one_scale_before_level_3():
    x = torch.randn(1, 3, 4, 4)

    def cat_scales(level):
        conversion = convert_with_details(_quantized(Mixed(), x, level), (x,))
        assert isinstance(conversion, Conversion)
        model = conversion.model
        (op,) = [op for op in model.operations if op.type.name == "CONCATENATION"]
        return {(model.operands[i].scale, model.operands[i].zero_point)
                for i in (*op.inputs[:-1], *op.outputs)}

    assert len(cat_scales(2)) == 1  # CONCATENATION needs equal scales before Android 10
    assert len(cat_scales(3)) > 1


def test_float_islands_are_listed_with_why():
    x = torch.randn(1, 3, 8, 8)
    quantized = _quantized(HardSwish(), x)
    report = check_model(quantized, (x,))
    assert report.exit_code == 0, report.errors
    (island,) = report.quantization.float_islands
    (source,) = island.sources
    assert source["kind"] == "aten::hardswish"
    assert "no quantized HARD_SWISH before feature level 4" in source["reason"]
    assert "test_qdq.py" in source["location"]
    conversion = convert_with_details(quantized, (x,))
    assert isinstance(conversion, Conversion)
    ops = [op.type.name for op in conversion.model.operations]
    assert ops.count("QUANTIZE") == 1 and ops.count("DEQUANTIZE") == 2


def test_stored_per_channel_weights_run_in_float():
    values = torch.randint(-127, 128, (4, 3, 1, 1), dtype=torch.int8)
    scales = torch.tensor([0.1, 0.2, 0.3, 0.4])
    weight = StoredWeight(values, scales, torch.zeros(4, dtype=torch.int64), axis=0)
    assert _weight(weight) is None  # per-channel: the float path
    expected = values.double() * scales.double().reshape(4, 1, 1, 1)
    assert torch.equal(weight.dequantize(), expected)
    per_tensor = StoredWeight(values, 0.5, 0)
    found = _weight(per_tensor)
    assert found is not None
    q, scale, zero_point = found
    assert (scale, zero_point) == (0.5, 128) and int(q.min()) >= 1


# ------------------------------------------------------------------ int8 signed (level 4)

_S8 = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
_NOT_8_BIT = ("QUANTIZE", "DEQUANTIZE")


def _signed(model, shape):
    x = torch.randn(*shape)
    quantized = _quantized(model, x, 4)
    conversion = convert_with_details(quantized, (x,), target_level=4)
    assert isinstance(conversion, Conversion)
    return x, quantized, conversion


def _computing_types(conversion) -> set:
    model = conversion.model
    return {model.operands[op.outputs[0]].type for op in model.operations
            if op.type.name not in _NOT_8_BIT}


def test_level_4_runs_int8_signed_convolutions_pools_and_adds():
    x, quantized, conversion = _signed(Block(), (1, 3, 16, 16))
    ops = nnapi_ops(conversion)
    # PyTorch's NNAPI runtime cannot pass qint8 tensors: the model quantizes its float input
    assert ops[0] == "QUANTIZE" and ops[-1] == "DEQUANTIZE"
    assert ops.count("QUANTIZE") == 1 and ops.count("DEQUANTIZE") == 1, ops
    assert _computing_types(conversion) == {_S8}
    model = conversion.model
    for op in model.operations:
        if op.type.name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            data, weight, bias = (model.operands[i] for i in op.inputs[:3])
            assert (data.type, weight.type, weight.zero_point) == (_S8, _S8, 0), op.type.name
            assert bias.type == OperandType.TENSOR_INT32
            assert bias.scale == pytest.approx(data.scale * weight.scale, rel=1e-6)
    assert conversion.feature_level == 4
    _matches(quantized, conversion, x)


def test_signed_fixed_output_scales_and_concatenation():
    x, quantized, conversion = _signed(Mixed(), (1, 3, 4, 4))
    model = conversion.model
    assert nnapi_ops(conversion).count("QUANTIZE") == 1
    # NNAPI's signed LOGISTIC and SOFTMAX give zero point -128, signed TANH 0
    for name, params in (("LOGISTIC", (1 / 256, -128)), ("TANH", (1 / 128, 0)),
                         ("SOFTMAX", (1 / 256, -128))):
        (op,) = [op for op in model.operations if op.type.name == name]
        out = model.operands[op.outputs[0]]
        assert (out.type, out.scale, out.zero_point) == (_S8, *params), name
    assert _computing_types(conversion) == {_S8}
    _matches(quantized, conversion, x)


@pytest.mark.parametrize("model, shape", [(Movement, (1, 3, 8, 8)), (HardSwish, (1, 3, 8, 8))],
                         ids=["movement", "hardswish"])
def test_signed_data_movement_and_hard_swish_keep_8_bits(model, shape):
    x, quantized, conversion = _signed(model(), shape)
    ops = nnapi_ops(conversion)
    assert ops.count("QUANTIZE") == 1 and ops.count("DEQUANTIZE") == 1, ops
    assert _computing_types(conversion) == {_S8}
    _matches(quantized, conversion, x)


def test_check_reports_int8_without_float_islands():
    x = torch.randn(1, 3, 8, 8)
    report = check_model(_quantized(HardSwish(), x, 4), (x,), target_level=4)
    assert report.exit_code == 0, report.errors
    assert report.quantization.types == ["int8"] and report.quantization.float_islands == []
    assert report.levels.feature_level == 4


def test_signed_models_are_refused_below_level_4():
    x = torch.randn(1, 3, 16, 16)
    quantized = _quantized(Block(), x, 4)
    with pytest.raises(FeatureLevelError, match="signed 8-bit operands"
                       r" \(TENSOR_QUANT8_ASYMM_SIGNED, a model quantized with target_level=4\)"
                       " need level 4"):
        convert_with_details(quantized, (x,), target_level=3)


def test_signed_artifact_runs_saved_and_reloaded(tmp_path):
    if not torch_runtime_available():
        pytest.skip("needs torch-nnapi's libneuralnetworks.so for torch's NNAPI runtime")
    x, quantized, conversion = _signed(Block(), (1, 3, 16, 16))
    path = tmp_path / "signed.pt"
    conversion.module.save(str(path))
    loaded = torch.jit.load(str(path))
    with torch.no_grad():
        expected = quantized(x)
    stats = compare_in_quanta(loaded(x), expected, dequantized_scale(conversion))
    assert stats.max_quanta <= 3 and stats.top1_agree, stats


@pytest.mark.parametrize("stored, dtype, expected", [
    (torch.tensor([-127, 0, 127], dtype=torch.int8), "qint8", ([-127, 0, 127], 0)),
    (torch.tensor([-127, 0, 127], dtype=torch.int8), "quint8", ([1, 128, 255], 128)),
    (torch.tensor([0, 128, 255], dtype=torch.uint8), "qint8", ([-128, 0, 127], -128)),
])
def test_per_tensor_weights_take_the_activation_type(stored, dtype, expected):
    found = _weight(StoredWeight(stored, 0.5, 0), dtype)
    assert found is not None
    q, scale, zp = found
    assert (q.tolist(), zp) == expected and scale == 0.5
    assert q.dtype == (np.int8 if dtype == "qint8" else np.uint8)
