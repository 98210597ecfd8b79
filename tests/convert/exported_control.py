"""Models with ``torch.cond``, ``torch.while_loop`` and ``scan`` on computed values (tests
of lowerings/control.py, of the ExecuTorch path, and of the CPU fallback's TorchScript
control flow for PyTorch Mobile): NNAPI runs them as IF and WHILE at feature level 4."""

from __future__ import annotations

import torch
from torch import nn
from torch._higher_order_ops import while_loop
from torch._higher_order_ops.scan import scan


class BranchOnSum(nn.Module):
    """Different ops in each branch, one with a linear layer (its weights reach the
    branch as constants)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def positive(x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.fc(x)) * 2.0

        def negative(x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(x) - x.abs()

        return torch.cond(x.sum() > 0, positive, negative, (x,))


class NestedBranches(nn.Module):
    """A cond inside a branch of a cond, two results."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def inner_big(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x * y, y - 1.0

        def inner_small(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x + y, torch.tanh(y)

        def outer_true(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return torch.cond(y.mean() > 0.5, inner_big, inner_small, (x, y))

        def outer_false(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return -x, y.exp()

        a, b = torch.cond(x.max() > 0, outer_true, outer_false, (x, y))
        return a, b


class GrowUntil(nn.Module):
    """A loop whose trip count depends on the data: grows ``x`` until its magnitude passes
    ``limit``, counting the steps."""

    def forward(self, x: torch.Tensor, limit: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def going(y: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
            return y.abs().sum() < limit.sum()

        def step(y: torch.Tensor, steps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return y * 1.5 + 0.5, steps + 1.0

        y, steps = while_loop(going, step, (x, torch.zeros(1)))
        return y, steps


class CountedLoop(nn.Module):
    """An integer counter against a count given as an input (of shape [1]: ExecuTorch's
    regions take no 0-D inputs)."""

    def forward(self, x: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
        def going(i: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return i < count.reshape(())

        def step(i: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, torch.tanh(y) + y

        _, y = while_loop(going, step, (torch.zeros((), dtype=torch.int64), x))
        return y


class CumsumBranch(nn.Module):
    """A branch NNAPI cannot run (cumsum has no lowering), the other one it can."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def running(x: torch.Tensor) -> torch.Tensor:
            return torch.cumsum(x, 0) * 0.5

        def plain(x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(x) * 2.0

        return torch.cond(x.sum() > 0, running, plain, (x,))


class RunningState(nn.Module):
    """A scan over the leading dimension: a recurrent state through a linear layer, each
    step's output stacked (a cumulative state, as an RNN cell unrolled over time)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, xs: torch.Tensor, state: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        def step(h: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = torch.tanh(self.fc(x) + h)
            return h, h * 2.0

        last, outputs = scan(step, state, xs)
        return last, outputs
