"""Greedy autoregressive decoding around a converted decoder step, for PyTorch Mobile.

A decoder step with a fixed-size key/value cache converts whole to NNAPI when the cache is
an input and its update an output: ``step(token [1], position [1], keys, values) ->
(logits [1, vocab], keys, values)``, the caches ``[..., capacity, head_dim]`` written at
``position`` (``torch.where`` over the cache length, for instance). Every token is then one
execution of the same compilation: the shapes never change. :class:`Generator` is the loop
around it, a TorchScript module an app saves with the step inside
(``torch.jit.script(Generator(step, keys, values))``); the prompt feeds the cache one token
per step, then each step's argmax is the next token until ``eos_id`` or
``max_new_tokens``.
"""

from __future__ import annotations

import torch
from torch import nn


class Generator(nn.Module):
    """``forward(prompt_ids, max_new_tokens, eos_id)``: the generated token ids (1-D,
    ``eos_id`` included when reached), for a step module of the shape above. ``keys`` and
    ``values`` are the empty caches (their shapes and dtype; they are copied per call)."""

    def __init__(self, step: nn.Module, keys: torch.Tensor, values: torch.Tensor) -> None:
        super().__init__()
        if keys.dim() < 2 or keys.shape != values.shape:
            raise ValueError(f"keys {tuple(keys.shape)} and values {tuple(values.shape)}:"
                             " the caches need one shape [..., capacity, head_dim]")
        self.step = step
        self.keys = keys
        self.values = values
        self.capacity = int(keys.shape[-2])

    def forward(self, prompt_ids: torch.Tensor, max_new_tokens: int, eos_id: int
                ) -> torch.Tensor:
        prompt = prompt_ids.reshape(-1).to(torch.int64)
        length = prompt.shape[0]
        if length == 0:
            raise ValueError("generate: the prompt is empty")
        if length + max_new_tokens - 1 > self.capacity:
            raise ValueError(f"generate: a prompt of {length} tokens and {max_new_tokens}"
                             f" new tokens do not fit the cache's {self.capacity} slots")
        keys, values = self.keys.clone(), self.values.clone()
        logits = torch.zeros(0)
        for position in range(length):
            logits, keys, values = self.step(prompt[position:position + 1],
                                             torch.tensor([position]), keys, values)
        generated: list[torch.Tensor] = []
        position = length
        for _ in range(max_new_tokens):
            token = logits.argmax(dim=-1).reshape(1)
            generated.append(token)
            if int(token[0]) == eos_id or len(generated) == max_new_tokens:
                break
            logits, keys, values = self.step(token, torch.tensor([position]), keys, values)
            position += 1
        if len(generated) == 0:
            return torch.zeros(0, dtype=torch.int64)
        return torch.cat(generated)


def generate(step_module: nn.Module, prompt_ids: torch.Tensor, max_new_tokens: int,
             eos_id: int, *, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Greedy decoding with ``step_module`` (eager, traced or converted) from
    ``prompt_ids``, scripted as PyTorch Mobile would run it: see :class:`Generator`."""
    generator = torch.jit.script(Generator(step_module, keys, values))
    result: torch.Tensor = generator(prompt_ids, max_new_tokens, eos_id)
    return result


__all__ = ["Generator", "generate"]
