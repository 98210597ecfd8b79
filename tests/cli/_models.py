"""Small models for the CLI tests."""

from __future__ import annotations

import collections

import torch
from torch import nn


class Scaled(nn.Module):
    """Element-wise arithmetic in the input's layout, a flatten that needs PyTorch's order
    (a TRANSPOSE when the input is NHWC), EXP (feature level 3) and a softmax."""

    def forward(self, x):
        y = torch.relu(x * 3.0 - 1.0)
        z = torch.exp(y.flatten(1) * 0.25)
        return torch.softmax(z, 1)


class Plain(nn.Module):
    """Level-1 operations only (MUL, ADD with a fused RELU, LOGISTIC)."""

    def forward(self, x):
        return torch.sigmoid(torch.relu(x * 2.0 + 1.0))


class Unsupported(nn.Module):
    """cumsum and erfinv have no NNAPI lowering; erfinv is used twice."""

    def forward(self, x):
        a = torch.cumsum(x, 0)
        b = torch.erfinv(x * 0.5)
        c = torch.erfinv(x * 0.25)
        return a + b + c


class QuantizedRelu(nn.Module):
    """Quantize, ReLU and dequantize: compared in quanta."""

    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
        return torch.relu(q).dequantize()


def save(model: nn.Module, example: torch.Tensor, path) -> str:
    torch.jit.save(torch.jit.trace(model.eval(), example), str(path))
    return str(path)


class AroundCumsum(nn.Module):
    """Two NNAPI regions around a cumsum, which NNAPI lacks; a dict of outputs."""

    def forward(self, x):
        y = torch.cumsum(torch.relu(x * 2.0 + 1.0), -1)
        return {"scores": torch.sigmoid(y - 1.0), "total": y.sum(-1)}


class DeepQuantized(nn.Module):
    """Eager post-training quantization's shape of a CNN: convolutions and ReLUs between
    QuantStub and DeQuantStub, averaged into a small linear head (whose outputs match while
    the layers before drift by a quantum)."""

    def __init__(self, depth: int = 8, width: int = 16):
        super().__init__()
        from torch.ao.quantization import DeQuantStub, QuantStub

        self.quant, self.dequant = QuantStub(), DeQuantStub()
        layers: list[nn.Module] = [nn.Conv2d(3, width, 3, padding=1), nn.ReLU()]
        for _ in range(depth):
            layers += [nn.Conv2d(width, width, 3, padding=1), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        x = self.pool(self.body(self.quant(x))).flatten(1)
        return self.dequant(self.head(x))


def save_deep_quantized(path, size: int = 16) -> str:
    """DeepQuantized, random weights, calibrated on 4 random batches with qnnpack, traced."""
    from torch_nnapi.convert.tools.check import quantized_engine

    torch.manual_seed(0)
    with quantized_engine("qnnpack"):
        model = DeepQuantized().eval()
        model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
        torch.ao.quantization.prepare(model, inplace=True)
        for _ in range(4):
            model(torch.randn(1, 3, size, size))
        torch.ao.quantization.convert(model, inplace=True)
        return save(model, torch.randn(1, 3, size, size), path)


def saved_loop_decoder(directory) -> tuple[str, str, torch.nn.Module]:
    """A greedy GRU decoder converted with the fallback (its one region inside its loop)
    and saved, its inputs saved (a .pt tuple): (model path, inputs path, the scripted
    original)."""
    from torch_nnapi.convert.api import convert_with_details

    from ..convert import control_models as cm

    model = cm.scripted(cm.GreedyGru())
    inputs = (torch.randn(1, 16, generator=torch.Generator().manual_seed(0)),
              torch.tensor([1]))
    module = convert_with_details(model, inputs, fallback=True).module
    path, data = str(directory / "gru_nnapi.pt"), str(directory / "gru_inputs.pt")
    torch.jit.save(module, path)
    torch.save(inputs, data)
    return path, data, model


class ConvLinear(nn.Module):
    """A convolution, a ReLU, a mean and a linear layer: what PT2E quantizes for NNAPI."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.linear = nn.Linear(4, 2)

    def forward(self, x):
        return self.linear(torch.relu(self.conv(x)).mean((2, 3)))


Pair = collections.namedtuple("Pair", ["out", "state"])


class ReturnsPair(nn.Module):
    """A named tuple holding a tensor and a dict."""

    def forward(self, x):
        return Pair(torch.relu(x), {"doubled": x * 2.0})
