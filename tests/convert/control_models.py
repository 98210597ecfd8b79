"""Scripted models with loops and branches on computed values (tests of convert/control/):
their bodies hold what NNAPI runs, the control flow itself stays in TorchScript."""

from __future__ import annotations

import torch
from torch import nn

VOCAB = 12
END_TOKEN = 10


class GreedyGru(nn.Module):
    """A greedy GRU decoder: embedding, GRUCell, linear, argmax, ``break`` on an end token."""

    def __init__(self, hidden: int = 16, max_steps: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, VOCAB)
        self.max_steps = max_steps
        self.end_token = END_TOKEN

    def forward(self, state: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        tokens: list[torch.Tensor] = []
        for _ in range(self.max_steps):
            state = self.cell(self.embed(token), state)
            token = self.head(state).argmax(dim=1)
            tokens.append(token)
            if int(token[0]) == self.end_token:
                break
        return torch.stack(tokens, dim=1)


class DataDependentLoop(nn.Module):
    """Refines ``x`` until its mean falls below a threshold: a trip count from the data."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps = int(x.abs().sum().item()) % 5 + 1
        for _ in range(steps):
            x = torch.tanh(self.layer(x)) * 0.5 + x * 0.25
        while bool(x.abs().mean() > 0.05):
            x = x * 0.5
        return x


class GrowingLoop(nn.Module):
    """A loop that grows the tensor it carries: its body keeps the CPU, as compiled."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.layer(x)  # a region before the loop
        for _ in range(int(x.abs().sum().item()) % 3 + 2):
            out = torch.cat([out, torch.relu(self.layer(out[-1:]))], dim=0)
        return out


class NestedIfs(nn.Module):
    """Branches nested two deep on computed values, a different network in each leaf."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.c = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        if bool(y.sum() > 8.0):
            if bool(y[0].sum() > y[1].sum()):
                out = torch.sigmoid(self.b(y))
            else:
                out = torch.tanh(self.c(y))
        else:
            out = self.c(y) * 2.0
        return out + 1.0


class Cascade(nn.Module):
    """A small classifier; a larger network runs only when its confidence is low."""

    def __init__(self, threshold: float = 0.45) -> None:
        super().__init__()
        self.small = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                   nn.Flatten(), nn.Linear(4, 5))
        self.large = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3),
                                   nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                   nn.Linear(8, 5))
        self.threshold = threshold

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        scores = torch.softmax(self.small(image), dim=1)
        if bool(scores.max() < self.threshold):
            scores = torch.softmax(self.large(image), dim=1)
        return scores


def scripted(model: nn.Module, seed: int = 0) -> torch.jit.ScriptModule:
    torch.manual_seed(seed)
    for p in model.parameters():
        nn.init.normal_(p, std=0.5)
    return torch.jit.script(model.eval())


class TinyGptStep(nn.Module):
    """One decoding step of a GPT-style decoder (pre-norm blocks, learned positions) with a
    fixed-size key/value cache: ``(token [1], position [1], keys, values) -> (logits
    [1, vocab], keys, values)``, the caches ``[layers, heads, capacity, head_dim]`` written
    at ``position`` through a ``torch.where`` mask over the cache length."""

    def __init__(self, vocab: int = 40, width: int = 32, heads: int = 2, layers: int = 2,
                 capacity: int = 48, index_copy: bool = False, assign: bool = False) -> None:
        """``index_copy``: the caches written by ``index_copy`` at the position instead;
        ``assign``: by slice assignment (``cache[:, position] = k``)."""
        super().__init__()
        self.heads, self.capacity = heads, capacity
        self.token_embedding = nn.Embedding(vocab, width)
        self.position_embedding = nn.Embedding(capacity, width)
        self.blocks = nn.ModuleList(GptBlock(width, heads, index_copy, assign)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def cache_shape(self) -> tuple[int, int, int, int]:
        width = self.token_embedding.embedding_dim
        return (len(self.blocks), self.heads, self.capacity, width // self.heads)

    def forward(self, token: torch.Tensor, position: torch.Tensor, keys: torch.Tensor,
                values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.token_embedding(token) + self.position_embedding(position)  # [1, width]
        slots = torch.arange(self.capacity)  # the cache's slot numbers
        written = slots.reshape(1, -1, 1) == position  # the slot this step fills
        # the slots it attends to: 0 where visible, -1e9 past the position
        hidden = torch.where(slots.reshape(1, 1, -1) <= position, 0.0, -1e9)
        new_keys, new_values = [], []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, keys[i], values[i], position, written, hidden)
            new_keys.append(k)
            new_values.append(v)
        return self.head(self.norm(x)), torch.stack(new_keys), torch.stack(new_values)


class GptBlock(nn.Module):
    def __init__(self, width: int, heads: int, index_copy: bool = False,
                 assign: bool = False) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, width // heads
        self.index_copy, self.assign = index_copy, assign
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                position: torch.Tensor, written: torch.Tensor, hidden: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = self.qkv(self.norm1(x)).reshape(3, self.heads, 1, self.head_dim).unbind(0)
        if self.index_copy:
            keys = keys.index_copy(1, position, k)
            values = values.index_copy(1, position, v)
        elif self.assign:
            keys, values = keys.clone(), values.clone()
            keys[:, position] = k
            values[:, position] = v
        else:
            keys = torch.where(written, k, keys)  # [heads, capacity, head_dim]
            values = torch.where(written, v, values)
        scores = q @ keys.transpose(1, 2) / self.head_dim ** 0.5 + hidden  # [heads, 1, slots]
        attended = torch.softmax(scores, dim=-1) @ values  # [heads, 1, head_dim]
        x = x + self.out(attended.reshape(1, -1))
        return x + self.mlp(self.norm2(x)), keys, values


def quantized_gpt_step(step: TinyGptStep, prompts: list[list[int]], new_tokens: int = 32
                       ) -> torch.nn.Module:
    """``step`` quantized for NNAPI (``torch_nnapi.quantize``, PT2E, feature level 3),
    calibrated on the steps of the float model's greedy generations from ``prompts``."""
    import torch_nnapi
    from torch_nnapi.convert.tools.generation import StepRecorder
    from torch_nnapi.convert.torchscript.generate import Generator

    keys = torch.zeros(step.cache_shape())
    recorder = StepRecorder(step)
    with torch.no_grad():
        for prompt in prompts:
            Generator(recorder, keys, keys)(torch.tensor(prompt), new_tokens, -1)
    return torch_nnapi.quantize(step, recorder.inputs[0], recorder.inputs, target_level=3)
