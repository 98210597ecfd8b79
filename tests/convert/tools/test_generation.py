"""Timing a generation (tools/generation.py): first token, tokens per second, and how many
NNAPI models a step runs."""

from __future__ import annotations

import pytest
import torch

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.tools.generation import executions_per_step, time_generation


class CountingGenerator:
    """Records the token counts it is asked for."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, prompt: torch.Tensor, count: int, eos_id: int) -> torch.Tensor:
        self.calls.append(count)
        return torch.zeros(count, dtype=torch.int64)


def test_one_warm_up_then_first_token_and_whole_generations():
    generator = CountingGenerator()
    timing = time_generation(generator, torch.tensor([1, 2]), 5, runs=3)
    assert generator.calls == [5, 1, 1, 1, 5, 5, 5]
    assert timing.tokens == 5 and timing.first_token >= 0 and timing.per_token >= 0
    assert timing.to_json()["tokens_per_second"] == timing.tokens_per_second


def test_fewer_than_two_tokens_cannot_be_timed():
    with pytest.raises(ValueError, match="at least 2 new tokens"):
        time_generation(CountingGenerator(), torch.tensor([1]), 1, runs=1)


def test_a_converted_step_is_one_nnapi_execution():
    model = torch.nn.Linear(4, 4).eval()
    module = convert_with_details(model, torch.randn(1, 4)).module
    assert executions_per_step(module) == 1
    assert executions_per_step(model) == 0
