"""Quantized models (eager and FX graph mode, qnnpack): per-tensor and per-channel weights;
results within one quantum of PyTorch's."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from torch.ao.quantization import QConfig, QConfigMapping, get_default_qconfig_mapping
from torch.ao.quantization.observer import (
    HistogramObserver,
    PerChannelMinMaxObserver,
)
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

from torch_nnapi.convert.errors import ConversionError
from torch_nnapi.convert.tools.compare import compare_layers

from ..harness import LAYOUTS, check, compare_in_quanta, convert, dequantized_scale, nnapi_ops, run

# Per-channel layers run in float in PyTorch Mobile's format, which the converter says in a
# warning (asserted in tests/quantization/test_quantizer.py); here the results are checked.
pytestmark = [pytest.mark.usefixtures("qnnpack"),
              pytest.mark.filterwarnings("ignore:torch-nnapi.*per-channel weights:UserWarning")]


def per_channel_mapping() -> QConfigMapping:
    qconfig = QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                      weight=PerChannelMinMaxObserver.with_args(
                          dtype=torch.qint8, qscheme=torch.per_channel_symmetric))
    per_tensor = get_default_qconfig_mapping("qnnpack").global_qconfig
    # PyTorch has no per-channel observer for transposed convolutions
    return QConfigMapping().set_global(qconfig).set_object_type(nn.ConvTranspose2d, per_tensor)


def fx_quantize(model: nn.Module, x: torch.Tensor, per_channel: bool = False) -> nn.Module:
    torch.manual_seed(0)
    model = copy.deepcopy(model).eval()
    mapping = per_channel_mapping() if per_channel else get_default_qconfig_mapping("qnnpack")
    prepared = prepare_fx(model, mapping, (x,))
    for _ in range(4):
        prepared(torch.randn_like(x))
    return convert_fx(prepared)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.grouped = nn.Conv2d(8, 8, 1, groups=2)
        self.hs = nn.Hardswish()
        self.up = nn.ConvTranspose2d(16, 4, 2, stride=2)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        y = self.relu(self.bn(self.conv(x)))
        z = self.grouped(self.dw(y)) + y
        z = self.hs(z)
        z = torch.cat([z, y], 1)
        z = self.pool(self.up(z))
        z = nn.functional.adaptive_avg_pool2d(z, 1).flatten(1)
        return self.fc(z)


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_fx_quantized_block(nhwc, per_channel):
    torch.manual_seed(0)  # the input, independent of the tests that ran before
    x = torch.randn(1, 3, 12, 12)
    q = fx_quantize(Block(), x, per_channel)
    conversion = convert(q, x, nhwc=nhwc)
    # Layer by layer, every quantized tensor of the convolutional trunk is within one
    # quantum of PyTorch's. Requantizing the pooled features at a finer scale magnifies a
    # one-quantum difference, so the float output is compared in quanta, loosely.
    trunk = True
    for d in compare_layers(q, x, nhwc=nhwc):
        trunk = trunk and d.kind != "aten::dequantize"
        if trunk:
            assert d.error <= 1, str(d)
    stats = compare_in_quanta(run(conversion.module, (x,)), q(x), dequantized_scale(conversion))
    assert stats.top1_agree and stats.max_quanta <= 8, stats
    ops = nnapi_ops(conversion)
    # the input is quantized by the wrapper, as PyTorch does (NNAPI's QUANTIZE needs level 3)
    model = conversion.model
    assert model.operands[model.inputs[0]].type.name == "TENSOR_QUANT8_ASYMM"
    assert ops[0] != "QUANTIZE" and ops[-1] == "DEQUANTIZE"
    if not per_channel:
        assert "FULLY_CONNECTED" in ops and "CONV_2D" in ops


class QuantizedOutput(nn.Module):
    """Returns quantized tensors directly: compared quantum by quantum."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(torch.quantize_per_tensor(x, 0.05, 128, torch.quint8))


def _functional(scale: float, zero_point: int):
    f = torch.ao.nn.quantized.QFunctional()
    f.scale, f.zero_point = scale, zero_point
    return f


class Pairwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.add = _functional(0.07, 120)
        self.add_relu = _functional(0.04, 0)
        self.mul = _functional(0.1, 128)
        self.cat = _functional(0.06, 100)

    def forward(self, q):
        a = self.add.add(q, q)
        b = self.add_relu.add_relu(q, a)
        c = self.mul.mul(a, b)
        return self.cat.cat([a, b, c], 1), torch.relu(c), torch.sigmoid(a)


def test_quantized_binary_ops_within_one_quantum():
    torch.manual_seed(0)
    check(QuantizedOutput(Pairwise()), torch.randn(1, 3, 4, 5) * 3)


def fx_quantized_io(layer: nn.Module, x: torch.Tensor, per_channel: bool = False):
    """A quantized model whose input and output are quint8 tensors (no (de)quantize)."""
    from torch.ao.quantization.fx.custom_config import PrepareCustomConfig

    torch.manual_seed(0)
    layer = copy.deepcopy(layer).eval()
    mapping = per_channel_mapping() if per_channel else get_default_qconfig_mapping("qnnpack")
    config = PrepareCustomConfig().set_input_quantized_indexes([0]) \
        .set_output_quantized_indexes([0])
    prepared = prepare_fx(layer, mapping, (x,), prepare_custom_config=config)
    for _ in range(4):
        prepared(torch.randn_like(x) * 2)
    model = convert_fx(prepared)
    scale, zero_point = _input_qparams(prepared)
    return model, torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)


def _input_qparams(prepared) -> tuple[float, int]:
    for name, module in prepared.named_modules():
        if "activation_post_process" in name:
            scale, zero_point = module.calculate_qparams()
            if scale.numel() == 1:
                return float(scale), int(zero_point)
    raise AssertionError("no input observer")


class Seq(nn.Sequential):
    pass


LAYERS = {
    "conv": lambda: nn.Conv2d(4, 8, 3, padding=1),
    "conv_stride_relu": lambda: Seq(nn.Conv2d(4, 8, 3, stride=2), nn.ReLU()),
    "depthwise": lambda: nn.Conv2d(4, 8, 3, padding=1, groups=4),
    "grouped": lambda: nn.Conv2d(4, 8, 1, groups=2),
    "conv_bn_relu": lambda: Seq(nn.Conv2d(4, 6, 3), nn.BatchNorm2d(6), nn.ReLU()),
    "linear": lambda: Seq(nn.Flatten(), nn.Linear(4 * 6 * 6, 7)),
    "linear_relu": lambda: Seq(nn.Flatten(), nn.Linear(4 * 6 * 6, 7), nn.ReLU()),
    "hardswish": lambda: nn.Hardswish(),
    "relu6": lambda: nn.ReLU6(),
    "max_pool": lambda: nn.MaxPool2d(2),
    "avg_pool": lambda: nn.AvgPool2d(2),
    "adaptive_avg_pool": lambda: nn.AdaptiveAvgPool2d(1),
    "upsample_nearest": lambda: nn.Upsample(scale_factor=2),
    "sigmoid": lambda: nn.Sigmoid(),
    "layer_norm": lambda: nn.LayerNorm(6),
    "group_norm": lambda: nn.GroupNorm(2, 4),
    "softmax": lambda: Seq(nn.Conv2d(4, 4, 1), nn.Softmax(dim=1)),
    "dropout": lambda: Seq(nn.Conv2d(4, 4, 1), nn.Dropout(0.3)),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_quantized_layer_within_one_quantum(name, nhwc):
    x = torch.randn(1, 4, 6, 6) * 2
    model, qx = fx_quantized_io(LAYERS[name](), x)
    check(model, qx, nhwc=nhwc)


@pytest.mark.parametrize("name", ["conv", "depthwise", "grouped", "linear_relu"])
def test_per_channel_layer_within_one_quantum(name):
    x = torch.randn(1, 4, 6, 6) * 2
    model, qx = fx_quantized_io(LAYERS[name](), x, per_channel=True)
    check(model, qx)


class TokenMixer(nn.Module):
    """What FX makes of a transformer-style block: a quantized position embedding and layer
    scale (constants), a residual sum that starts from 0 (quantized::add.Scalar2), layer norm
    and a softmax between linear layers."""

    def __init__(self, width: int = 8, tokens: int = 4):
        super().__init__()
        self.embed = nn.Linear(width, width)
        self.position = nn.Parameter(torch.randn(1, tokens, width))
        self.branches = nn.ModuleList([nn.Linear(width, width) for _ in range(2)])
        self.norm = nn.LayerNorm(width)
        self.layer_scale = nn.Parameter(torch.rand(width) + 0.5)
        self.head = nn.Linear(width, width)

    def forward(self, x):
        x = self.embed(x) + self.position
        total = 0
        for branch in self.branches:
            total = total + branch(x)
        y = self.norm(total) * self.layer_scale
        return self.head(torch.softmax(y, dim=-1))


def test_fx_scalar_and_constant_operands_layer_norm_and_softmax():
    x = torch.randn(2, 4, 8)
    q = fx_quantize(TokenMixer(), x)
    diffs = compare_layers(q, x)
    assert {"quantized::add", "quantized::mul", "quantized::layer_norm"} <= {d.kind for d in diffs}
    # one quantum per layer; layer norm doubles a difference of its input on this small width
    for d in diffs:
        assert d.unit != "quanta" or d.error <= 2, str(d)
    conversion = convert(q, x)
    stats = compare_in_quanta(run(conversion.module, (x,)), q(x), dequantized_scale(conversion))
    assert stats.max_quanta <= 3, stats


class EagerNorms(nn.Module):
    """Eager-mode quantization of the normalizations, dropout and scalar arithmetic."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv = nn.Conv2d(3, 8, 3)
        self.instance_norm = nn.InstanceNorm2d(8, affine=True)
        self.group_norm = nn.GroupNorm(2, 8)
        self.layer_norm = nn.LayerNorm([4, 4])
        self.dropout = nn.Dropout(0.2)
        self.arithmetic = torch.ao.nn.quantized.FloatFunctional()
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.instance_norm(self.conv(self.quant(x)))
        x = self.layer_norm(self.group_norm(x))
        x = self.arithmetic.mul_scalar(self.arithmetic.add_scalar(x, 0.5), 1.5)
        return self.dequant(self.dropout(x))


# PyTorch's eager scalar ops never run their output observer (their output quantization is
# derived from the input's), so converting the model warns about the unused observer.
@pytest.mark.filterwarnings("ignore:must run observer before calling calculate_qparams")
def test_eager_quantized_norms_dropout_and_scalars():
    torch.manual_seed(0)
    model = EagerNorms().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(model, inplace=True)
    for _ in range(4):
        model(torch.randn(2, 3, 6, 6))
    torch.ao.quantization.convert(model, inplace=True)
    x = torch.randn(1, 3, 6, 6)
    diffs = compare_layers(model, x)
    assert {"quantized::instance_norm", "quantized::group_norm", "quantized::layer_norm",
            "quantized::add_scalar", "quantized::mul_scalar"} <= {d.kind for d in diffs}
    for d in diffs:
        assert d.unit != "quanta" or d.error <= 2, str(d)


class Dropout(nn.Module):
    def forward(self, q):
        return torch.ops.quantized.dropout(q, 0.05, 128, 0.5, False)


def test_quantized_dropout_is_the_identity():
    conversion, _ = check(QuantizedOutput(Dropout()), torch.randn(1, 3, 4, 5))
    assert nnapi_ops(conversion) == ["RESHAPE"]  # returning the input needs one copy


class AttentionScores(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)

    def forward(self, x):
        return torch.matmul(self.query(x), self.key(x).transpose(-2, -1))


def test_fx_quantized_matmul_of_two_tensors():
    x = torch.randn(2, 4, 8)
    q = fx_quantize(AttentionScores(), x)
    diffs = compare_layers(q, x)
    assert "quantized::matmul" in {d.kind for d in diffs}
    assert all(d.error <= 1 for d in diffs if d.unit == "quanta"), diffs


def test_fx_quantized_transformer_encoder():
    """Token ids in: embedding, attention (its matmuls and softmax stay float in FX's
    graph), quantized linears, residual adds and layer norms."""
    from .. import zoo

    torch.manual_seed(0)
    model = zoo.TransformerEncoder().eval()
    tokens = torch.randint(0, 100, (2, 16))
    prepared = prepare_fx(model, get_default_qconfig_mapping("qnnpack"), (tokens,))
    for _ in range(4):
        prepared(torch.randint(0, 100, (2, 16)))
    q = convert_fx(prepared)
    conversion = convert(q, tokens)
    stats = compare_in_quanta(run(conversion.module, (tokens,)), q(tokens),
                              dequantized_scale(conversion))
    # Each float island (attention, GELU) is requantized at a finer scale than the
    # one-quantum differences of its input, and layer norms rescale them: over two layers
    # they add up to a few quanta, as the layer-by-layer comparison shows.
    assert stats.top1_agree and stats.max_quanta <= 6, stats


class SignedRoundTrip(nn.Module):
    def forward(self, x):
        return torch.quantize_per_tensor(x, 0.05, -3, torch.qint8).dequantize()


class ReturnsSigned(nn.Module):
    def forward(self, x):
        return torch.relu(torch.quantize_per_tensor(x, 0.05, -3, torch.qint8))


def test_a_quantize_to_qint8_is_a_signed_quantize_at_level_4():
    x = torch.randn(2, 8)
    conversion = convert(SignedRoundTrip(), (x,))
    model = conversion.model
    assert [(op.type.name, model.operands[op.outputs[0]].type.name)
            for op in model.operations] == [("QUANTIZE", "TENSOR_QUANT8_ASYMM_SIGNED"),
                                            ("DEQUANTIZE", "TENSOR_FLOAT32")]
    assert conversion.feature_level == 4
    assert torch.equal(run(conversion.module, (x,)), SignedRoundTrip()(x))


def test_a_qint8_output_is_refused():
    """PyTorch's NNAPI runtime cannot return qint8 tensors ("Bad dtype")."""
    with pytest.raises(ConversionError, match="output 0 is a qint8 tensor, which PyTorch's"
                       " NNAPI runtime cannot return; dequantize it in the model"):
        convert(ReturnsSigned(), (torch.randn(2, 8),))
