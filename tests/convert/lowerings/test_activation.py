"""Activations and unary math, including in-place variants; NCHW and NHWC inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..harness import LAYOUTS, Fn, check, nnapi_ops

ACTIVATIONS = {
    "relu": torch.relu, "relu_": lambda x: torch.relu_(x * 1.0), "relu6": F.relu6,
    "hardtanh": lambda x: F.hardtanh(x, -2.0, 3.0), "hardtanh_": lambda x: F.hardtanh_(x * 1.0),
    "sigmoid": torch.sigmoid, "sigmoid_": lambda x: (x * 1.0).sigmoid_(), "tanh": torch.tanh,
    "hardswish": F.hardswish, "hardswish_": lambda x: F.hardswish(x * 1.0, inplace=True),
    "hardsigmoid": F.hardsigmoid, "silu": F.silu, "silu_": lambda x: F.silu(x * 1.0, True),
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "elu": lambda x: F.elu(x, 0.7), "elu_": lambda x: F.elu_(x * 1.0),
    "selu": F.selu, "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "leaky_relu_": lambda x: F.leaky_relu_(x * 1.0), "softplus": F.softplus,
    "clamp": lambda x: torch.clamp(x, -0.5, 0.7), "clamp_min": lambda x: x.clamp(min=0.1),
    "clamp_max": lambda x: x.clamp(max=0.1), "clamp_relu1": lambda x: x.clamp(-1, 1),
    "clamp_": lambda x: (x * 1.0).clamp_(0, 6),
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "floor": torch.floor,
    "ceil": torch.ceil, "sin": torch.sin,
}
POSITIVE = {
    "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "sqrt_": lambda x: (x * 1).sqrt_(),
    "pow2": lambda x: x ** 2, "pow_half": lambda x: x ** 0.5, "pow_3": lambda x: x.pow(3.0),
    "pow_inv": lambda x: x ** -1, "pow_rsqrt": lambda x: x ** -0.5,
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name, nhwc):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 6) * 3
    check(Fn(ACTIVATIONS[name]), x, nhwc=nhwc)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_math_on_positive_inputs(name):
    torch.manual_seed(0)
    check(Fn(POSITIVE[name]), torch.rand(2, 3, 4) + 0.1)


def test_prelu_per_channel_and_shared():
    torch.manual_seed(0)
    per_channel = nn.PReLU(4)
    per_channel.weight.data.uniform_(0, 0.5)
    check(per_channel, torch.randn(2, 4, 3, 3))
    check(nn.PReLU(), torch.randn(2, 4, 3))


def test_gelu_matches_exact_erf_over_a_wide_range():
    x = torch.linspace(-12, 12, 4001).reshape(1, -1)
    check(Fn(F.gelu), x)


def test_relu_is_one_operation():
    conversion, _ = check(Fn(lambda x: torch.relu(x)), torch.randn(3, 4))
    assert nnapi_ops(conversion) == ["RELU"]
