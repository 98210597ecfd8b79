"""Small models for the CLI tests, and skips for NNAPI operations not on this branch yet."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

STRICT = os.environ.get("TORCH_NNAPI_STRICT") == "1"


def require_operations(*names: str) -> None:
    """Skips the test when an NNAPI operation has no signature or host kernel yet (set
    TORCH_NNAPI_STRICT=1 to fail instead)."""
    from torch_nnapi.nnapi.codes import OperationType
    from torch_nnapi.nnapi.signatures import signature_of
    from torch_nnapi.runtime import kernel_for

    for name in names:
        op = OperationType[name]
        try:
            signature_of(op)
            missing = kernel_for(op) is None
        except NotImplementedError:
            missing = True
        if missing and not STRICT:
            pytest.skip(f"NNAPI operation {name} has no signature/kernel on this branch yet")


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
