"""Normalizations: batch, layer, instance and group norm; NCHW and NHWC inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from ..harness import LAYOUTS, check


def _randomize(module):
    torch.manual_seed(1)
    for p in module.parameters():
        p.data.normal_()
    for name, b in module.named_buffers():
        if "running_var" in name:
            b.uniform_(0.5, 2.0)
        elif "running_mean" in name:
            b.normal_()
    return module


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_batch_norm_standalone(nhwc):
    check(_randomize(nn.BatchNorm2d(3)), torch.randn(2, 3, 4, 5), nhwc=nhwc)


def test_batch_norm_1d():
    check(_randomize(nn.BatchNorm1d(4)), torch.randn(3, 4))


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_layer_norm_over_channels_last(nhwc):
    check(_randomize(nn.LayerNorm([4, 5])), torch.randn(2, 3, 4, 5), nhwc=nhwc)


def test_layer_norm_transformer_style():
    check(_randomize(nn.LayerNorm(8)), torch.randn(2, 6, 8) * 3 + 1)


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm(nhwc, affine):
    check(_randomize(nn.InstanceNorm2d(3, affine=affine)), torch.randn(2, 3, 4, 5), nhwc=nhwc)


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_group_norm(nhwc):
    check(_randomize(nn.GroupNorm(2, 4)), torch.randn(2, 4, 3, 5), nhwc=nhwc)
