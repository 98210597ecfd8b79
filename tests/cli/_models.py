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
