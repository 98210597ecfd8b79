"""Attention: F.scaled_dot_product_attention (masks, is_causal, scale, grouped-query),
nn.MultiheadAttention without weights, and whole transformer models (transformers.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_nnapi.convert.errors import ConversionError

from .. import transformers
from ..harness import Fn, check, convert, nnapi_ops


def _qkv(*shape):
    torch.manual_seed(0)
    return tuple(torch.randn(*shape) for _ in range(3))


@pytest.mark.parametrize("options", [{}, {"is_causal": True}, {"scale": 0.25}],
                         ids=["plain", "causal", "scale"])
def test_scaled_dot_product_attention(options):
    conversion, _ = check(Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **options)),
                          _qkv(2, 3, 7, 8))
    ops = nnapi_ops(conversion)
    assert ops.count("GROUPED_CONV_2D") == 2 and ops.count("SOFTMAX") == 1


def test_attention_masks_float_and_bool_from_the_model():
    torch.manual_seed(0)
    q, k, v = _qkv(2, 2, 5, 4)
    keep = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    bias = torch.randn(5, 5)
    check(Fn(lambda q, k, v, keep: F.scaled_dot_product_attention(
        q, k, v, attn_mask=keep[:, None, None, :] > 0) + F.scaled_dot_product_attention(
        q, k, v, attn_mask=bias)), (q, k, v, keep))


def test_key_and_value_lengths_differ_from_the_query():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 5)
    check(Fn(F.scaled_dot_product_attention), (q, k, v))


def test_grouped_query_attention():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 4, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    check(Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)),
          (q, k, v))


def test_attention_dropout_is_refused():
    with pytest.raises(ConversionError, match="dropout_p"):
        convert(Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)),
                _qkv(1, 2, 3, 4))


class SelfAttention(nn.Module):
    def __init__(self, batch_first: bool):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4, batch_first=batch_first)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class CrossAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x, memory, padding):
        # with the head-averaged weights; the runtime takes no bool inputs
        return self.mha(x, memory, memory, key_padding_mask=padding > 0)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_without_weights(batch_first):
    torch.manual_seed(0)
    conversion, _ = check(SelfAttention(batch_first), torch.randn(2, 5, 16))
    assert "REDUCE_SUM" not in nnapi_ops(conversion)


def test_multihead_attention_weights_and_masks():
    torch.manual_seed(0)
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    padding = torch.zeros(2, 7, dtype=torch.long)
    padding[0, 5:] = 1
    check(CrossAttention(), (x, memory, padding))


def test_text_encoder_with_token_ids_and_attention_mask():
    torch.manual_seed(0)
    model = transformers.TextEncoder().eval()
    ids = torch.randint(0, 120, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 8:] = 0
    check(model, (ids, mask))


def test_decoder_only_transformer():
    torch.manual_seed(0)
    conversion, _ = check(transformers.Decoder().eval(), torch.randint(0, 100, (2, 10)))
    assert "REDUCE_SUM" not in nnapi_ops(conversion)


def test_audio_encoder():
    torch.manual_seed(0)
    check(transformers.AudioEncoder().eval(), torch.randn(2, 16, 40))


def test_explicit_masks_and_rank_5_head_split():
    torch.manual_seed(0)
    keep = torch.tensor([[1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 1, 0]])
    check(transformers.MaskedAttention().eval(), (torch.randn(2, 6, 16), keep))


@pytest.mark.parametrize("capture", ["trace", "export"])
@pytest.mark.parametrize("causal", [False, True], ids=["bert_style", "gpt_style"])
def test_padding_masks_built_by_advanced_indexing_convert_whole(causal, capture):
    """The padding mask indexed with broadcast arange index tensors, as text transformer
    libraries build attention masks: whole on NNAPI (no fallback), the dict returned."""
    torch.manual_seed(0)
    model = transformers.PaddedTransformer(causal).eval()
    ids = torch.randint(0, 100, (2, 9))
    padding = torch.ones(2, 9, dtype=torch.long)
    padding[1, 6:] = 0
    conversion, _ = check(model, (ids, padding), capture=capture)  # compares the dicts
    assert "FULLY_CONNECTED" in nnapi_ops(conversion)
