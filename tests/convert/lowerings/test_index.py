"""Slicing, splitting and gathering."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from torch_nnapi.convert.errors import ConversionError

from ..harness import LAYOUTS, Fn, check, convert, nnapi_ops

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


ROWS, COLS = torch.tensor([2, 0, 1]), torch.tensor([1, 3, -1])

ADVANCED_INDEXING = {
    "two_tensors": lambda x: x[ROWS, COLS],
    "after_a_slice": lambda x: x[:, ROWS, COLS],
    "separated_by_a_slice": lambda x: x[:, ROWS, :, COLS[:1]],
    "broadcast": lambda x: x[ROWS[:, None], COLS[None, :]],
    "broadcast_after_a_slice": lambda x: x[:, ROWS[:, None], COLS[None, :2]],
    "three_tensors": lambda x: x[ROWS, COLS, torch.tensor([4])],
    "negative": lambda x: x[:, torch.tensor([-1, 0]), torch.tensor([-2, 1])],
    "ellipsis": lambda x: x[..., ROWS, COLS],
}


@pytest.mark.parametrize("name", sorted(ADVANCED_INDEXING))
def test_advanced_indexing_with_several_constant_index_tensors(name):
    torch.manual_seed(0)
    conversion, _ = check(Fn(ADVANCED_INDEXING[name]), torch.randn(3, 4, 5, 6))
    assert "GATHER" in nnapi_ops(conversion)


def test_none_between_index_tensors():
    torch.manual_seed(0)
    check(Fn(lambda x: x[None, :, ROWS, COLS]), torch.randn(2, 3, 4))


def _padding_mask_4d(mask: torch.Tensor) -> torch.Tensor:
    """A text transformer's mask builder: the padding mask [B, K] indexed with broadcast
    batch and key-position index tensors made by arange, into [B, 1, Q, K]."""
    batch, keys = mask.shape
    batch_index = torch.arange(batch)[:, None, None, None]
    query_index = torch.arange(keys)[None, None, :, None]
    key_index = torch.arange(keys)[None, None, None, :]
    causal = key_index <= query_index
    return causal & mask[batch_index, key_index]


def test_a_padding_mask_indexed_the_way_mask_builders_index_it_selects_nothing():
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    conversion, _ = check(Fn(_padding_mask_4d), mask)
    assert "GATHER" not in nnapi_ops(conversion)  # arange covers each dimension whole


COMPUTED_INDEXING = {
    "two_tensors": lambda x, i: x[i, i + 1],
    "after_a_slice": lambda x, i: x[:, i, i * 2],
    "negative": lambda x, i: x[i - 3, i],
    "broadcast": lambda x, i: x[:, i[:, None], i[None, :]],
}


@pytest.mark.parametrize("name", sorted(COMPUTED_INDEXING))
def test_advanced_indexing_with_computed_index_tensors_at_feature_level_4(name):
    torch.manual_seed(0)
    x, i = torch.randn(3, 4, 5, 6), torch.tensor([0, 2, 1])
    check(Fn(COMPUTED_INDEXING[name]), (x, i), target_level=4)


def test_computed_index_tensors_need_feature_level_4():
    x, i = torch.randn(3, 4, 5), torch.tensor([0, 2, 1])
    with pytest.raises(ConversionError, match="feature level 4"):
        convert(Fn(lambda x, i: x[i, i + 1]), (x, i), target_level=3)


def _set_item(x: torch.Tensor) -> torch.Tensor:
    y = x * 1
    y[:, ROWS, COLS] = 0.5
    return y


def _written_into_a_constant(x: torch.Tensor) -> torch.Tensor:
    y = torch.zeros(4, 5)
    y[torch.tensor([0, 3])] = x
    return y


WRITES = {
    "index_put": lambda x: x.clone().index_put_((ROWS, COLS), torch.ones(3, 5, 6)),
    "index_put_accumulate": lambda x: x.clone().index_put_((ROWS, COLS), torch.ones(5, 6),
                                                           accumulate=True),
    "index_put_repeated_position": lambda x: x.clone().index_put_(
        (torch.tensor([1, 1]), torch.tensor([2, 2])), x[0, :2] * 2),
    "index_copy": lambda x: x.clone().index_copy_(1, torch.tensor([3, 0]),
                                                  torch.ones(3, 2, 5, 6)),
    "set_item": _set_item,
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writes_at_constant_positions(name):
    torch.manual_seed(0)
    conversion, _ = check(Fn(WRITES[name]), torch.randn(3, 4, 5, 6))
    assert "SELECT" in nnapi_ops(conversion) or "ADD" in nnapi_ops(conversion)


def test_a_model_writes_its_values_into_a_constant():
    torch.manual_seed(0)
    check(Fn(_written_into_a_constant), torch.randn(2, 5))


def test_writes_at_computed_positions_are_unsupported_naming_the_index():
    x, i = torch.randn(4, 5), torch.tensor([0, 2])
    with pytest.raises(ConversionError, match="aten::index_put"):
        convert(Fn(lambda x, i: x.clone().index_put_((i,), torch.ones(2, 5))), (x, i))
