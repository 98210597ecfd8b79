"""The NNAPI quantizer's annotations, seen through the models it produces."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.quantization import NnapiQuantizer, quantize


class AfterHardSwish(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3)
        self.b = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        return self.b(F.hardswish(self.a(x)))


def _ops(model, x, **options) -> list[str]:
    conversion = convert_with_details(model, (x,), **options)
    assert isinstance(conversion, Conversion)
    return [op.type.name for op in conversion.model.operations]


def test_levels_1_and_2_keep_what_follows_a_float_op_in_float():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    # (hard swish divides by 6: level 2)
    at_level_2 = quantize(AfterHardSwish().eval(), (x,), target_level=2, observer="minmax")
    ops = _ops(at_level_2, x, target_level=2)  # converts: no QUANTIZE needed
    assert "QUANTIZE" not in ops and ops.count("DEQUANTIZE") == 1
    at_level_3 = quantize(AfterHardSwish().eval(), (x,), target_level=3, observer="minmax")
    assert _ops(at_level_3, x).count("QUANTIZE") == 1  # back to 8 bits for the second conv


def test_post_training_quantization_needs_eval_mode():
    x = torch.randn(1, 3, 8, 8)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).train()
    exported = torch.export.export(model, (x,)).module()
    with pytest.raises(ValueError, match="exported in training mode; call model.eval()"):
        quantize(exported, (x,))


def test_options_are_checked():
    with pytest.raises(ValueError, match="observer must be one of histogram, minmax"):
        NnapiQuantizer(observer="percentile")
    assert NnapiQuantizer(2).act_dtype == torch.uint8


def test_level_4_quantizes_activations_to_int8():
    """Signed asymmetric activations in [-128, 127], sigmoid at NNAPI's signed fixed
    quantization (1/256, -128), hardswish observed on its own; weights stay int8."""
    quantizer = NnapiQuantizer(4)
    assert (quantizer.act_dtype, quantizer.act_range) == (torch.int8, (-128, 127))
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Hardswish(), nn.Conv2d(4, 4, 1), nn.Sigmoid())
    quantized = quantize(model.eval(), (x,), target_level=4, observer="minmax")
    quantizes = [n for n in quantized.graph.nodes
                 if n.target == torch.ops.quantized_decomposed.quantize_per_tensor.default]
    assert quantizes and {n.args[5] for n in quantizes} == {torch.int8}
    assert {tuple(n.args[3:5]) for n in quantizes} == {(-128, 127)}
    last = quantizes[-1].args
    assert (last[1], last[2]) == (1 / 256, -128)
    ops = _ops(quantized, x, target_level=4)
    assert "HARD_SWISH" in ops and ops.count("QUANTIZE") == 1, ops


def test_levels_outside_nnapi_are_refused():
    with pytest.raises(ValueError, match="target_level=0 is not a feature level"):
        NnapiQuantizer(0)


def test_weights_are_per_tensor_symmetric_int8():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    quantized = quantize(AfterHardSwish().eval(), (x,), observer="minmax")
    weights = [n for n in quantized.graph.nodes if n.op == "call_function"
               and "dequantize_per_tensor" in str(n.target) and n.args[5] == torch.int8]
    assert len(weights) == 2
    for n in weights:
        assert n.args[2:5] == (0, -127, 127)  # zero point 0, symmetric range
    assert not any("per_channel" in str(n.target) for n in quantized.graph.nodes)


def test_per_channel_weights_are_symmetric_int8_along_output_channels():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    quantized = quantize(AfterHardSwish().eval(), (x,), observer="minmax", per_channel=True)
    per_channel = [n for n in quantized.graph.nodes if n.op == "call_function"
                   and "dequantize_per_channel" in str(n.target)]
    weights = [n for n in per_channel if n.args[6] == torch.int8]
    assert len(weights) == 2
    assert [n.args[6] for n in per_channel if n not in weights] == [torch.int32] * 2  # biases
    for n in weights:
        scales, zero_points = (getattr(quantized, a.target) for a in n.args[1:3])
        assert scales.shape == (8,) and not zero_points.any()
        assert n.args[3:7] == (0, -127, 127, torch.int8)  # axis 0, symmetric range


def test_per_channel_weights_need_level_3():
    with pytest.raises(ValueError, match="per_channel=True: .* need target_level 3"):
        NnapiQuantizer(2, per_channel=True)


def test_the_torchscript_path_says_why_per_channel_layers_run_in_float():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    quantized = quantize(AfterHardSwish().eval(), (x,), observer="minmax", per_channel=True)
    with pytest.warns(UserWarning, match="2 quantized layer.s. have per-channel weights, which"
                      " PyTorch Mobile's NNAPI format cannot carry") as caught:
        ops = _ops(quantized, x)
    assert len([w for w in caught if "per-channel" in str(w.message)]) == 1
    assert "\n" not in str(caught[0].message)
    assert ops.count("DEQUANTIZE") >= 2 and "CONV_2D" in ops
