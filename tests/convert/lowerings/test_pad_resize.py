"""Padding modes and upsampling (nearest, bilinear both ways); NCHW and NHWC inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..harness import LAYOUTS, Fn, check, nnapi_ops

PADS = {
    "constant": lambda x: F.pad(x, (1, 2, 0, 3)),
    "constant_value": lambda x: F.pad(x, (1, 1, 2, 0), value=0.5),
    "negative": lambda x: F.pad(x, (-1, 2, 1, -1)),
    "reflect": lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
    "replicate": lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate"),
    "circular": lambda x: F.pad(x, (2, 1, 1, 2), mode="circular"),
    "zero_pad_module": nn.ZeroPad2d((1, 0, 2, 1)),
    "reflection_module": nn.ReflectionPad2d(1),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(PADS))
def test_pad(name, nhwc):
    torch.manual_seed(0)
    check(Fn(PADS[name]), torch.randn(1, 3, 5, 6), nhwc=nhwc)


def test_pad_1d():
    check(Fn(lambda x: F.pad(x, (2, 3), mode="reflect")), torch.randn(2, 3, 7))


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("value", [0.0, 0.5])
def test_pad_to_a_multiple_of_flexible_sizes(nhwc, value):
    def to_multiple_of_4(x):  # Swin's padding of its feature map to whole windows
        h, w = x.shape[2], x.shape[3]
        return F.pad(x, (0, (4 - w % 4) % 4, 1, (4 - h % 4) % 4), value=value)

    sizes = [torch.randn(1, 3, 5, 6), torch.randn(1, 3, 8, 9), torch.randn(1, 3, 3, 12)]
    check(Fn(to_multiple_of_4), sizes[0], nhwc=nhwc, flexible={0: [2, 3]}, run_inputs=sizes)


RESIZES = {
    "nearest_x2": lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
    "nearest_size": lambda x: F.interpolate(x, size=(7, 9), mode="nearest"),
    "nearest_down": lambda x: F.interpolate(x, size=(3, 4), mode="nearest"),
    "nearest_fraction": lambda x: F.interpolate(x, scale_factor=1.7, mode="nearest"),
    "bilinear_x2": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    "bilinear_x2_corners": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear",
                                                   align_corners=True),
    "bilinear_size": lambda x: F.interpolate(x, size=(7, 3), mode="bilinear"),
    "bilinear_size_corners": lambda x: F.interpolate(x, size=(9, 11), mode="bilinear",
                                                     align_corners=True),
    "upsample_module": nn.Upsample(scale_factor=3),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(RESIZES))
def test_resize(name, nhwc):
    torch.manual_seed(0)
    check(Fn(RESIZES[name]), torch.randn(1, 3, 5, 6), nhwc=nhwc)


def test_nearest_x2_is_one_resize():
    conversion, _ = check(Fn(RESIZES["nearest_x2"]), torch.randn(1, 2, 3, 4))
    assert nnapi_ops(conversion) == ["RESIZE_NEAREST_NEIGHBOR"]
