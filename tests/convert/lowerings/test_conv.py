"""Convolutions: groups, dilation, padding modes, 1-D, transposed; NCHW and NHWC inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from ..harness import LAYOUTS, check, nnapi_ops


def _seeded():
    torch.manual_seed(0)


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("groups,dilation,expected", [
    (1, 1, "CONV_2D"), (1, 2, "CONV_2D"), (8, 1, "DEPTHWISE_CONV_2D"),
    (8, 2, "DEPTHWISE_CONV_2D"), (2, 1, "GROUPED_CONV_2D"), (2, 2, "SPLIT")])
def test_conv2d_groups_and_dilation(nhwc, groups, dilation, expected):
    _seeded()
    conv = nn.Conv2d(8, 16, 3, stride=(1, 2), padding=(2, 1), dilation=dilation, groups=groups)
    conversion, _ = check(conv, torch.randn(2, 8, 11, 12), nhwc=nhwc)
    assert expected in nnapi_ops(conversion)


# An even kernel with padding="same" is the asymmetric case; eager PyTorch notes it pads a copy.
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths:UserWarning")
@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("padding", ["same", "valid", 0])
def test_conv2d_string_padding_without_bias(nhwc, padding):
    _seeded()
    conv = nn.Conv2d(3, 4, (3, 4), padding=padding, bias=False)
    check(conv, torch.randn(1, 3, 9, 10), nhwc=nhwc)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv2d_padding_modes(mode):
    _seeded()
    conv = nn.Conv2d(3, 4, 3, padding=1, padding_mode=mode)
    check(conv, torch.randn(1, 3, 7, 8))


@pytest.mark.parametrize("groups", [1, 4])
def test_conv1d(groups):
    _seeded()
    conv = nn.Conv1d(4, 8, 3, stride=2, padding=1, groups=groups)
    check(conv, torch.randn(2, 4, 17))


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_conv_transpose2d(nhwc):
    _seeded()
    conv = nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1)
    conversion, _ = check(conv, torch.randn(1, 6, 5, 7), nhwc=nhwc)
    assert nnapi_ops(conversion) == ["TRANSPOSE_CONV_2D"]


def test_conv_batchnorm_is_folded_and_standalone_batchnorm_is_affine():
    _seeded()
    folded, standalone = nn.BatchNorm2d(8), nn.BatchNorm2d(8)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), folded, nn.ReLU(), standalone)
    for bn in (folded, standalone):
        assert bn.running_mean is not None and bn.running_var is not None  # tracked (default)
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.normal_()
        bn.bias.data.normal_()
    conversion, _ = check(model, torch.randn(1, 3, 8, 8))
    assert nnapi_ops(conversion) == ["CONV_2D", "MUL", "ADD"]  # the ReLU is fused


def test_channels_last_propagates_through_convolutions():
    _seeded()
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3, groups=8),
                          nn.MaxPool2d(2), nn.Conv2d(8, 4, 1))
    conversion, _ = check(model, torch.randn(1, 3, 12, 12), nhwc=True)
    assert "TRANSPOSE" not in nnapi_ops(conversion)
    out = conversion.model.operands[conversion.model.outputs[0]]
    assert out.dimensions == (1, 4, 4, 4)


class Twice(nn.Module):
    def __init__(self, in_place: bool, reuse_before: bool):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.in_place, self.reuse_before = in_place, reuse_before

    def forward(self, x):
        y = self.conv(x)
        z = y * 2 if self.reuse_before else None
        r = torch.relu_(y) if self.in_place else torch.relu(y)
        return (r + z) if z is not None else r + y


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("reuse_before", [False, True])
def test_activation_fusion_only_when_nothing_else_reads_the_input(in_place, reuse_before):
    torch.manual_seed(0)
    conversion, _ = check(Twice(in_place, reuse_before), torch.randn(1, 3, 6, 6))
    # a ReLU folds into the convolution only if no other op reads the convolution's output
    # before it (in place, later readers see the ReLU's result anyway)
    fused = in_place and not reuse_before
    assert ("RELU" not in nnapi_ops(conversion)) == fused


def test_relu6_folds_into_depthwise_convolution():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(4, 4, 3, groups=4), nn.ReLU6(inplace=True))
    conversion, _ = check(model, torch.randn(1, 4, 6, 6))
    assert nnapi_ops(conversion) == ["DEPTHWISE_CONV_2D"]
