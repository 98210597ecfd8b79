"""Models returning what users write, for the output-structure tests (front-ends and the
command line): an LSTM's ``out, (h, c)``, a dict holding a named tuple, a list and None, and
a return with a number in it."""

from __future__ import annotations

import collections

import torch
from torch import nn

Pair = collections.namedtuple("Pair", "out state")


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 5, batch_first=True)

    def forward(self, x: torch.Tensor) -> object:
        return self.lstm(x)


class Nested(nn.Module):
    """A dict holding a named tuple, a list with None, and a tensor returned twice; cumsum
    has no NNAPI lowering (a CPU node with ``fallback=True``)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> object:
        y = self.fc(x)
        return {"logits": y, "extra": Pair(torch.relu(y), (y * 2, None)),
                "again": [y, torch.cumsum(y, 1)]}


NESTED = ("{'logits': output 0, 'extra': Pair(out=output 1, state=(output 2, None)),"
          " 'again': [output 3, output 4]}")


class WithCount(nn.Module):
    def forward(self, x: torch.Tensor) -> object:
        return x * 2, {"count": 3}
