"""topk, sort and argsort on TOPK_V2."""

from __future__ import annotations

import pytest
import torch

from ..harness import LAYOUTS, Fn, check, nnapi_ops

SORTS = {
    "topk_last": lambda x: x.topk(3),
    "topk_channels": lambda x: torch.topk(x, 2, dim=1),
    "topk_smallest": lambda x: torch.topk(x, 4, dim=2, largest=False),
    "sort_descending": lambda x: torch.sort(x, dim=1, descending=True),
    "sort_ascending_ties": lambda x: torch.sort(x.relu().floor(), dim=-1),
    "stable_sort_ties": lambda x: torch.sort(x.relu().floor(), dim=2, stable=True,
                                             descending=True),
    "argsort_ties": lambda x: torch.argsort(x.relu().floor(), dim=1),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(SORTS))
def test_sorting_matches_values_and_indices(name, nhwc):
    """Equal values (ReLU and floor) keep their order in sort and argsort."""
    torch.manual_seed(0)
    conversion, _ = check(Fn(SORTS[name]), torch.randn(1, 5, 6, 7) * 2, nhwc=nhwc)
    assert "TOPK_V2" in nnapi_ops(conversion)


def test_unsorted_topk_is_reported():
    from torch_nnapi.convert.api import convert_with_details
    from torch_nnapi.convert.errors import ConversionError

    with pytest.raises(ConversionError, match="sorted=False"):
        convert_with_details(Fn(lambda x: x.topk(2, sorted=False)), torch.randn(3, 5))
