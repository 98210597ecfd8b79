"""Reductions, arg-reductions and softmax; NCHW and NHWC inputs."""

from __future__ import annotations

import pytest
import torch

from ..harness import LAYOUTS, Fn, check

REDUCTIONS = {
    "mean_hw": lambda x: x.mean((2, 3)),
    "mean_keep": lambda x: x.mean(1, keepdim=True),
    "mean_all": lambda x: x.mean(),
    "sum": lambda x: x.sum(-1),
    "sum_all": lambda x: torch.sum(x),
    "amax": lambda x: x.amax((1, 3)),
    "amin": lambda x: x.amin(2, keepdim=True),
    "prod": lambda x: (x * 0.5 + 1).prod(1),
    "max_dim": lambda x: x.max(1)[0],
    "max_dim_indices": lambda x: x.max(1, keepdim=True)[1],
    "min_all": lambda x: x.min(),
    "argmax": lambda x: x.argmax(1),
    "argmin_keep": lambda x: x.argmin(3, keepdim=True),
    "argmax_all": lambda x: x.argmax(),
    "var": lambda x: x.var(1),
    "std": lambda x: x.std((2, 3), keepdim=True),
    "softmax": lambda x: torch.softmax(x, 1),
    "softmax_last": lambda x: x.softmax(-1),
    "log_softmax": lambda x: torch.log_softmax(x, 1),
    "any": lambda x: (x > 1).any(1),
    "all_keep": lambda x: torch.all(x > -1, dim=-1, keepdim=True),
    "any_all_dims": lambda x: (x > 2).any(),
    "any_of_floats": lambda x: torch.relu(x - 1).any(2),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name, nhwc):
    torch.manual_seed(0)
    check(Fn(REDUCTIONS[name]), torch.randn(2, 3, 4, 5), nhwc=nhwc)


@pytest.mark.parametrize("norm", [
    lambda x: torch.linalg.vector_norm(x, dim=-1, keepdim=True),
    lambda x: torch.nn.functional.normalize(x, dim=-1),
    lambda x: x.norm(1, dim=1),
    lambda x: torch.linalg.vector_norm(x, float("inf")).reshape(1),
    lambda x: torch.linalg.vector_norm(x, float("-inf"), dim=0),
    lambda x: torch.linalg.vector_norm(x, 3, dim=(0, 2)),
], ids=["l2", "normalize", "l1", "max", "min", "l3"])
def test_vector_norms(norm):
    torch.manual_seed(0)
    check(Fn(norm), torch.randn(2, 3, 8))
