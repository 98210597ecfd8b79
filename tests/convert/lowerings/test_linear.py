"""Linear layers and matrix products."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from ..harness import check, nnapi_ops


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
    ((3, 4), (4,)), ((2, 3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (1, 3, 4, 5)), ((2, 3, 2, 3, 4), (2, 3, 2, 4, 5)), ((3, 1), (1, 4))])
def test_matmul_of_two_model_tensors(a_shape, b_shape):
    torch.manual_seed(0)
    check(Fn(torch.matmul), (torch.randn(*a_shape), torch.randn(*b_shape)))


def test_batched_products_are_one_grouped_convolution():
    torch.manual_seed(0)
    conversion, _ = check(Fn(torch.bmm), (torch.randn(3, 5, 8), torch.randn(3, 8, 6)))
    ops = nnapi_ops(conversion)
    assert ops.count("GROUPED_CONV_2D") == 1 and "TRANSPOSE" not in ops
    conversion, _ = check(Fn(lambda a, b: a @ b), (torch.randn(2, 3, 2, 5, 4),
                                                    torch.randn(2, 3, 2, 4, 6)))
    assert nnapi_ops(conversion).count("GROUPED_CONV_2D") == 1


def test_attention_scores_move_one_operand_at_most():
    torch.manual_seed(0)
    conversion, _ = check(Fn(lambda q, k: torch.bmm(q, k.transpose(1, 2))),
                          (torch.randn(2, 5, 8), torch.randn(2, 6, 8)))
    ops = nnapi_ops(conversion)
    assert ops.count("TRANSPOSE") <= 1 and "MUL" not in ops and "REDUCE_SUM" not in ops


def test_product_without_batch_is_a_fully_connected_layer():
    conversion, _ = check(Fn(lambda a, b: a @ b.t()), (torch.randn(5, 8), torch.randn(6, 8)))
    assert nnapi_ops(conversion) == ["FULLY_CONNECTED"]


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("B G H I D, B G H J D -> B G H I J", [(1, 4, 2, 6, 8), (1, 4, 2, 6, 8)]),  # MaxViT
    ("bgij,bgjd->bgid", [(2, 3, 5, 6), (2, 3, 6, 4)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("bij,bjk->bk", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk->kij", [(3, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
])
def test_einsum(equation, shapes):
    torch.manual_seed(0)
    check(Fn(lambda *xs: torch.einsum(equation, *xs) * 1), tuple(torch.randn(*s) for s in shapes))


def test_einsum_of_batched_products_is_one_operation():
    conversion, _ = check(Fn(lambda a, b: torch.einsum("bgij,bgjd->bgid", a, b)),
                          (torch.randn(2, 3, 5, 6), torch.randn(2, 3, 6, 4)))
    assert nnapi_ops(conversion).count("GROUPED_CONV_2D") == 1


def test_baddbmm():
    torch.manual_seed(0)
    check(Fn(lambda b, x, y: torch.baddbmm(b, x, y, beta=0.5, alpha=2.0)),
          (torch.randn(3, 1, 6), torch.randn(3, 5, 4), torch.randn(3, 4, 6)))
