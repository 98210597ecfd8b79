"""Greedy decoding over an ExecuTorch program (tools/generation.py ``generate_pte``, public as
``torch_nnapi.executorch.generate``): the GPT-style step with a fixed-size cache lowers to a
.pte that is one NNAPI delegate and nothing else, so each token is one execution, and the
plain Python loop over it generates eager's 32 tokens."""

from __future__ import annotations

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402

import torch_nnapi.executorch as nnapi_executorch  # noqa: E402
from torch_nnapi.convert.executorch.pte_file import PteModule, read_pte  # noqa: E402
from torch_nnapi.convert.torchscript.generate import generate  # noqa: E402

from .. import control_models as cm  # noqa: E402

PROMPT = torch.tensor([1, 7, 3, 9])
NEW_TOKENS = 32


@pytest.fixture(scope="module")
def gpt() -> tuple[torch.nn.Module, bytes, torch.Tensor]:
    torch.manual_seed(0)
    step = cm.TinyGptStep().eval().requires_grad_(False)
    keys = torch.zeros(step.cache_shape())
    pte = nnapi_executorch.to_pte(step, (torch.tensor([5]), torch.tensor([3]), keys, keys))
    return step, pte, keys


def test_the_step_is_one_nnapi_delegate(gpt: tuple[torch.nn.Module, bytes, torch.Tensor]
                                        ) -> None:
    _, pte, _ = gpt
    info = read_pte(pte)
    assert info.steps == [0] and [d.backend for d in info.delegates] == ["NnapiBackend"]


def test_generation_over_the_program_matches_eager(
        gpt: tuple[torch.nn.Module, bytes, torch.Tensor]) -> None:
    step, pte, keys = gpt
    eager = generate(step, PROMPT, NEW_TOKENS, eos_id=-1, keys=keys, values=keys)
    got = nnapi_executorch.generate(pte, PROMPT, NEW_TOKENS, -1, keys=keys, values=keys)
    assert eager.shape == (NEW_TOKENS,) and got.tolist() == eager.tolist()
    program = PteModule(pte)  # a loaded program is taken as it is, and stops at the end token
    eos = int(eager[5])
    stopped = nnapi_executorch.generate(program, PROMPT, NEW_TOKENS, eos, keys=keys,
                                        values=keys)
    first = eager.tolist().index(eos)
    assert stopped.tolist() == eager[:first + 1].tolist()
