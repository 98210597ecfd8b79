"""Tensor factories and fills: constants at conversion time, TILEs for flexible sizes,
masked_fill as SELECT, and in-place writes into views refused rather than lost."""

from __future__ import annotations

import pytest
import torch

from torch_nnapi.convert.errors import ConversionError

from ..harness import Fn, check, convert, nnapi_ops, run


@pytest.mark.parametrize("make", [
    lambda x: torch.zeros(x.shape[0], 4) + x,
    lambda x: torch.ones(3, 4, dtype=torch.float32) * x,
    lambda x: torch.full((3, 4), 2.5) - x,
    lambda x: torch.zeros_like(x) + x,
    lambda x: torch.ones_like(x) * 3 + x,
    lambda x: torch.full_like(x, 7.0) / x,
    lambda x: x.new_zeros((3, 4)) + x,
    lambda x: x.new_full((1, 4), -1.0) * x,
    lambda x: torch.empty_like(x).fill_(2.0) * x,
    lambda x: torch.empty(3, 4).zero_() + x,
], ids=["zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros",
        "new_full", "empty_like_fill", "empty_zero"])
def test_factories_are_constants(make):
    torch.manual_seed(0)
    conversion, _ = check(Fn(make), torch.randn(3, 4))
    assert len(nnapi_ops(conversion)) == 1


def test_factories_of_flexible_sizes_tile_at_load_time():
    conversion, _ = check(Fn(lambda x: torch.full((x.shape[0], x.shape[1]), 3.0) * x),
                          torch.randn(3, 4), flexible={0: [0, 1]},
                          run_inputs=[torch.randn(3, 4), torch.randn(5, 2)])
    assert "TILE" in nnapi_ops(conversion)


def test_shape_as_tensor_and_arange_of_known_sizes():
    check(Fn(lambda x: x * torch._shape_as_tensor(x)[1] + torch.arange(x.shape[1])),
          torch.randn(3, 4))


def test_arange_over_a_flexible_length_is_reported():
    with pytest.raises(ConversionError, match="arange over a flexible length"):
        convert(Fn(lambda x: x + torch.arange(x.shape[1])), torch.randn(3, 4),
                flexible={0: [1]})


def test_masks_written_slice_by_slice_fold():
    def mask(x):  # Swin's shifted-window mask: slices of a fresh tensor filled in place
        m = x.new_zeros((4, 6))
        count = 0
        for h in ((0, -2), (-2, -1), (-1, None)):
            for w in ((0, -3), (-3, -1), (-1, None)):
                m[h[0]:h[1], w[0]:w[1]] = count
                count += 1
        return x + m.masked_fill(m != 0, -100.0)

    conversion, _ = check(Fn(mask), torch.randn(4, 6))
    assert nnapi_ops(conversion) == ["ADD"]


def _shifted_window_mask(x):  # Swin's: regions cut at -window and -shift from the end
    m = x.new_zeros((x.shape[0], x.shape[1]))
    count = 0
    for h in ((0, -4), (-4, -2), (-2, None)):
        for w in ((0, -4), (-4, -2), (-2, None)):
            m[h[0]:h[1], w[0]:w[1]] = count
            count += 1
    return x + m.masked_fill(m != 0, -100.0)


def test_masks_written_slice_by_slice_of_flexible_sizes_tile_their_regions():
    conversion, _ = check(Fn(_shifted_window_mask), torch.randn(8, 12), flexible={0: [0, 1]},
                          run_inputs=[torch.randn(8, 12), torch.randn(5, 16),
                                      torch.randn(12, 5)])
    ops = nnapi_ops(conversion)
    assert "TILE" in ops and "CONCATENATION" in ops


def test_masks_of_flexible_sizes_refuse_sizes_that_reorder_their_regions():
    conversion = convert(Fn(_shifted_window_mask), torch.randn(8, 12), flexible={0: [0, 1]})
    with pytest.raises(Exception, match="regions filled through slices .* would be empty"):
        run(conversion.module, (torch.randn(4, 12),))  # [0:-4] would be empty


def test_masked_fill():
    torch.manual_seed(0)
    check(Fn(lambda x: x.masked_fill(x > 0.5, -1.0)), torch.randn(3, 4))
    keep = torch.tensor([1.0, -1.0, 1.0, -1.0])
    check(Fn(lambda x, k: x.masked_fill(k[None, :] > 0, float("-inf")).softmax(-1)),
          (torch.randn(3, 4), keep))
    check(Fn(lambda x: torch.zeros(3, 4).masked_fill_(x > 0, 2.0) + 1), torch.randn(3, 4))


def test_writes_into_a_view_of_a_model_tensor_are_refused():
    with pytest.raises(ConversionError, match="writes into a view"):
        convert(Fn(lambda x: (x.view(-1)[2:5].fill_(1.0), x * 2)[1]), torch.randn(3, 4))
