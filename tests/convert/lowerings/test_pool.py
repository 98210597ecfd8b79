"""Pools: padding, ceil_mode, count_include_pad, 1-D, adaptive; NCHW and NHWC inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..harness import LAYOUTS, Fn, check, nnapi_ops


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("kernel,stride,padding,ceil", [
    (2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (3, 3, 0, True), (2, 1, 0, False),
    ((3, 2), (2, 1), (1, 0), True)])
def test_max_pool2d(nhwc, kernel, stride, padding, ceil):
    pool = nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil)
    check(pool, torch.randn(2, 3, 10, 11), nhwc=nhwc)


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("padding,ceil,include", [
    (0, False, True), (1, False, True), (1, False, False), (1, True, False), (1, True, True),
    (0, True, True)])
def test_avg_pool2d(nhwc, padding, ceil, include):
    pool = nn.AvgPool2d(3, 2, padding, ceil_mode=ceil, count_include_pad=include)
    check(pool, torch.randn(1, 4, 10, 9), nhwc=nhwc)


def test_avg_pool2d_divisor_override():
    check(nn.AvgPool2d(2, divisor_override=3), torch.randn(1, 2, 6, 6))


def test_pools_1d():
    check(Fn(lambda x: F.max_pool1d(x, 3, 2, 1) + F.avg_pool1d(x, 3, 2, 1)),
          torch.randn(2, 3, 15))


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("size", [1, (2, 3), (None, 2)])
def test_adaptive_avg_pool2d(nhwc, size):
    conversion, _ = check(nn.AdaptiveAvgPool2d(size), torch.randn(2, 3, 8, 6), nhwc=nhwc)
    if size == 1:  # channels-last: a pool over the whole image, level 1 (MEAN needs 2)
        assert nnapi_ops(conversion) == ["AVERAGE_POOL_2D" if nhwc else "MEAN"]


def test_adaptive_max_pool2d():
    check(nn.AdaptiveMaxPool2d(1), torch.randn(1, 3, 5, 7))
    check(nn.AdaptiveMaxPool2d((2, 2)), torch.randn(1, 3, 6, 8))


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_adaptive_avg_pool_to_uneven_sizes(nhwc):
    check(nn.AdaptiveAvgPool2d((3, 5)), torch.randn(1, 2, 7, 8), nhwc=nhwc)


def test_adaptive_max_pool_to_uneven_sizes_is_reported():
    from torch_nnapi.convert.api import convert_with_details
    from torch_nnapi.convert.errors import ConversionError

    with pytest.raises(ConversionError, match="multiple of the output size"):
        convert_with_details(nn.AdaptiveMaxPool2d(3), torch.randn(1, 2, 7, 7))
