"""Hugging Face transformers' text models, built from small configs (random weights, nothing
downloaded), token ids and a padding mask in, their ModelOutput back (a dict). Their
attention-mask builder indexes the padding mask with broadcast arange index tensors (advanced
indexing with two index tensors), which stopped every one of them; they now convert whole."""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

import pytest
import torch
from torch import nn

from ..convert.harness import check, run
from .torchvision_support import load_torchvision


@functools.cache
def _transformers() -> ModuleType:
    """transformers imports torchvision when it is installed: loaded first, so it imports
    with the CPU torch."""
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed (pip install '.[torch,test]' installs it)")
    load_torchvision()
    import transformers

    return transformers


SMALL = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=37, max_position_embeddings=64)


def _model(name: str) -> nn.Module:
    t = _transformers()
    made = {
        "bert": lambda: t.BertModel(t.BertConfig(**SMALL)),
        "distilbert": lambda: t.DistilBertModel(t.DistilBertConfig(
            vocab_size=99, dim=32, n_layers=2, n_heads=4, hidden_dim=37,
            max_position_embeddings=64)),
        "gpt2": lambda: t.GPT2LMHeadModel(t.GPT2Config(
            vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0,
            eos_token_id=0, use_cache=False)),
        "llama": lambda: t.LlamaForCausalLM(t.LlamaConfig(
            **SMALL, num_key_value_heads=2, bos_token_id=0, eos_token_id=0, use_cache=False)),
    }
    return made[name]().eval()


class ByKeyword(nn.Module):
    """Calls the model as users do: input_ids and attention_mask by keyword (a decoder's
    second parameter is its cache)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> object:
        return self.model(input_ids=ids, attention_mask=mask)


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(0, 99, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 4:] = 0  # the second sequence padded at the end
    return ids, mask


CAPTURES = ["trace", pytest.param("export", marks=pytest.mark.slow)]


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("name", ["bert", "distilbert", "gpt2", "llama"])
def test_text_models_with_padding_masks_convert_whole_and_return_their_outputs(name, capture):
    torch.manual_seed(0)
    model = ByKeyword(_model(name)).eval()
    ids, mask = _inputs()
    with torch.no_grad():
        expected = model(ids, mask)
    assert isinstance(expected, dict)  # a ModelOutput
    conversion, _ = check(model, (ids, mask), capture=capture)  # no fallback: whole
    assert list(run(conversion.module, (ids, mask))) == list(expected)  # keys, in order
