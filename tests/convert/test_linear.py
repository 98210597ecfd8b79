"""Linear layers and matrix products."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from .harness import check, nnapi_ops


class Fn(nn.Module):
    def __init__(self, fn, *params):
        super().__init__()
        self.fn = fn
        self.params = nn.ParameterList([nn.Parameter(p, requires_grad=False) for p in params])

    def forward(self, *xs):
        return self.fn(*xs, *self.params)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5), (2, 2, 3, 5)])
def test_linear_any_rank(shape):
    torch.manual_seed(0)
    conversion, _ = check(nn.Linear(5, 4), torch.randn(*shape))
    assert "FULLY_CONNECTED" in nnapi_ops(conversion)


def test_linear_without_bias_and_addmm():
    torch.manual_seed(0)
    check(nn.Linear(6, 3, bias=False), torch.randn(4, 6))
    w, b = torch.randn(6, 3), torch.randn(3)
    check(Fn(lambda x, w, b: torch.addmm(b, x, w, beta=0.5, alpha=2.0), w, b),
          torch.randn(4, 6))


def test_matmul_with_constant_operands():
    torch.manual_seed(0)
    w = torch.randn(5, 3)
    check(Fn(lambda x, w: x @ w, w), torch.randn(2, 4, 5))
    check(Fn(lambda x, v: torch.matmul(x, v), torch.randn(5)), torch.randn(3, 5))
    check(Fn(lambda x, a: torch.mm(a, x), torch.randn(3, 4)), torch.randn(4, 6))


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 2, 3, 4), (2, 2, 4, 5)), ((4,), (4, 5)),
    ((3, 4), (4,)), ((2, 3, 4), (4, 5))])
def test_matmul_of_two_model_tensors(a_shape, b_shape):
    torch.manual_seed(0)
    check(Fn(torch.matmul), (torch.randn(*a_shape), torch.randn(*b_shape)))


def test_attention_scores_read_the_transposed_operand_in_place():
    torch.manual_seed(0)
    conversion, _ = check(Fn(lambda q, k: torch.bmm(q, k.transpose(1, 2))),
                          (torch.randn(2, 5, 8), torch.randn(2, 6, 8)))
    assert "TRANSPOSE" not in nnapi_ops(conversion)
