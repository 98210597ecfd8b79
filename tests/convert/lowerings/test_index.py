"""Slicing, splitting and gathering."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from ..harness import LAYOUTS, Fn, check, nnapi_ops

INDEX_OPS = {
    "slice": lambda x: x[:, 1:3, ::2, 1:],
    "slice_negative": lambda x: x[..., -3:-1],
    "select": lambda x: x[:, 1],
    "select_last": lambda x: x[..., -1] * 1,
    "narrow": lambda x: x.narrow(2, 1, 2) * 1,
    "chunk": lambda x: torch.cat(x.chunk(2, 3)[::-1], 3),
    "chunk_uneven": lambda x: x.chunk(2, 1)[1] * 1,
    "split": lambda x: x.split(2, 3)[1] * 1,
    "split_sizes": lambda x: x.split([1, 2], 1)[1] * 1,
    "unbind": lambda x: x.unbind(1)[2] * 1,
    "index_select": lambda x: torch.index_select(x, 3, torch.tensor([4, 0, 2])),
    "index": lambda x: x[:, torch.tensor([2, 0])],
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(INDEX_OPS))
def test_index_op(name, nhwc):
    torch.manual_seed(0)
    check(Fn(INDEX_OPS[name]), torch.randn(2, 3, 4, 6), nhwc=nhwc)


def test_equal_chunks_are_one_split():
    conversion, _ = check(Fn(lambda x: x.chunk(3, 1)[1] * 1), torch.randn(2, 6))
    assert nnapi_ops(conversion) == ["SPLIT", "MUL"]


def test_embedding_with_int64_indices():
    torch.manual_seed(0)
    emb = nn.Embedding(10, 4)
    check(emb, torch.tensor([[1, 5, 9], [0, 0, 3]]))
