"""Timing a greedy generation (``torch-nnapi bench --generate``): time to first token and
tokens per second of a :class:`~..torchscript.generate.Generator`, against eager's; what a
quantized generation is compared on (:class:`StepRecorder`, :func:`decided_tokens`); and
the same greedy loop in plain Python over an ExecuTorch program (:func:`generate_pte`).

The first token costs the prompt (one step per prompt token, filling the cache) and an
argmax; every further token one step. Both are medians over whole generations: one of one
new token (the first token), one of ``new_tokens`` (the rest, per token, is the difference).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..torchscript.generate import Generator

if TYPE_CHECKING:
    from ..executorch.pte_file import PteModule

NNAPI_PROGRAM = "NnapiProgram"  # the TorchScript class of a compiled NNAPI model


@dataclass
class GenerationTiming:
    first_token: float  # seconds from the prompt to the first generated token
    per_token: float  # seconds per further token
    tokens: int  # tokens generated (the end token never stops a timed generation)

    @property
    def tokens_per_second(self) -> float:
        return 1.0 / self.per_token if self.per_token > 0 else float("inf")

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), tokens_per_second=self.tokens_per_second)


def executions_per_step(module: torch.nn.Module) -> int:
    """The NNAPI models a module holds (a converted step: 1; a partitioned one: its regions,
    each executed once per call when no loop or branch holds them)."""
    return sum(1 for m in module.modules() if getattr(m, "original_name", "") == NNAPI_PROGRAM)


class StepRecorder(torch.nn.Module):
    """A decoder step that records what it is called with and the logits it returns, for
    an eager (unscripted) :class:`~..torchscript.generate.Generator`: the calibration
    inputs of a quantizer, or the logits each generated token was chosen from."""

    def __init__(self, step: Callable[..., Any]) -> None:
        super().__init__()
        self.step = step
        self.inputs: list[tuple[torch.Tensor, ...]] = []
        self.logits: list[torch.Tensor] = []

    def forward(self, *inputs: torch.Tensor) -> Any:
        self.inputs.append(tuple(t.clone() for t in inputs))
        result = self.step(*inputs)
        self.logits.append(result[0].detach().reshape(-1))
        return result


def decided_tokens(logits: list[torch.Tensor], prompt_length: int, quantum: float) -> int:
    """How many generated tokens a quantized model chose unambiguously, from the logits a
    :class:`StepRecorder` saw: tokens up to (not including) the first whose best two
    logits are within one output ``quantum``, where one rounding step apart could choose
    the other (and every later token follows from that choice). Token ``j`` comes from the
    step after prompt token ``prompt_length - 1 + j``."""
    chosen = logits[prompt_length - 1:]
    for j, row in enumerate(chosen):
        best, second = row.topk(2).values.tolist()
        if best - second <= quantum:
            return j
    return len(chosen)


def time_generation(generator: Callable[[torch.Tensor, int, int], torch.Tensor],
                    prompt: torch.Tensor, new_tokens: int, runs: int) -> GenerationTiming:
    """Medians of ``runs`` generations (after one untimed: a converted step compiles on its
    first call) with no end token (``eos_id`` -1)."""
    if new_tokens < 2:
        raise ValueError("timing a generation needs at least 2 new tokens")

    def median(count: int) -> float:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            generator(prompt, count, -1)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    with torch.no_grad():
        generator(prompt, new_tokens, -1)
        first, whole = median(1), median(new_tokens)
    return GenerationTiming(first, max(whole - first, 0.0) / (new_tokens - 1), new_tokens)


def generate_pte(program: bytes | PteModule, prompt_ids: torch.Tensor, max_new_tokens: int,
                 eos_id: int, *, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Greedy decoding with a decoder step lowered to a .pte (``program``: its bytes, or a
    loaded :class:`PteModule`), as an app runs it with ExecuTorch: the loop of
    :class:`Generator` in plain Python, each token one execution of the program."""
    from ..executorch.pte_file import PteModule  # ExecuTorch's reader: the extra's import

    step = _ProgramStep(program if isinstance(program, PteModule) else PteModule(program))
    with torch.no_grad():
        tokens: torch.Tensor = Generator(step, keys, values)(prompt_ids, max_new_tokens, eos_id)
    return tokens


class _ProgramStep(torch.nn.Module):
    """A loaded .pte as the step module :class:`Generator` calls (run eagerly)."""

    def __init__(self, program: PteModule) -> None:
        super().__init__()
        self.program = program

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.program(*inputs)


__all__ = ["GenerationTiming", "StepRecorder", "decided_tokens", "executions_per_step",
           "generate_pte", "time_generation"]

