"""Flexible input dimensions: resolved at load time, one artifact for several shapes."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.errors import ConversionError

from . import zoo
from .harness import LAYOUTS, Fn, check, convert, nnapi_ops, run

SHAPES = [(1, 3, 32, 32), (2, 3, 48, 40), (1, 3, 17, 23)]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        b = x.size(0)
        y = F.relu(self.conv1(x))
        y = F.max_pool2d(y, 3, 2, 1, ceil_mode=True)
        y = F.hardswish(self.conv2(y))
        z = F.interpolate(y, scale_factor=2, mode="nearest")
        z = z[:, :, 1:, : z.shape[3] - 1]
        y = F.adaptive_avg_pool2d(z, 1).view(b, -1)
        return self.fc(y), z


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_one_artifact_serves_several_resolutions(nhwc):
    torch.manual_seed(0)
    inputs = [torch.randn(*s) for s in SHAPES]
    conversion, _ = check(Net(), inputs[0], nhwc=nhwc, flexible={0: [0, 2, 3]},
                          run_inputs=inputs + inputs[:1])
    model = conversion.model
    assert model.operands[model.inputs[0]].dimensions == ((0, 0, 0, 3) if nhwc else (0, 3, 0, 0))


def test_flexible_model_survives_save_and_load(tmp_path):
    torch.manual_seed(0)
    model = Net().eval()
    module = convert(model, torch.randn(1, 3, 32, 32), flexible={0: [2, 3]}).module
    module.save(str(tmp_path / "flex.pt"))
    loaded = torch.jit.load(str(tmp_path / "flex.pt"))
    for shape in SHAPES[:1] + [(1, 3, 40, 24)]:
        x = torch.randn(*shape)
        out = run(loaded, (x,))
        torch.testing.assert_close(out[0], model(x)[0], rtol=1e-5, atol=1e-5)


def test_flexible_zoo_model():
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(zoo.MobileNetV3Small(num_classes=10))
    check(model, torch.randn(1, 3, 64, 64), flexible={0: [2, 3]},
          run_inputs=[torch.randn(1, 3, 64, 64), torch.randn(1, 3, 96, 80)], nhwc=True)


def test_guards_reject_shapes_a_lowering_cannot_serve():
    class Halves(nn.Module):
        def forward(self, x):
            a, b = x.chunk(2, dim=2)
            return a * b

    conversion, _ = check(Halves(), torch.randn(1, 2, 8, 3), flexible={0: [2]},
                          run_inputs=[torch.randn(1, 2, 8, 3), torch.randn(1, 2, 6, 3)])
    with pytest.raises(Exception, match="divisible by 2"):
        run(conversion.module, (torch.randn(1, 2, 7, 3),))


def test_static_dimensions_stay_checked():
    conversion = convert(Net(), torch.randn(1, 3, 32, 32), flexible={0: [2, 3]})
    with pytest.raises(Exception, match="input 0 has shape"):
        run(conversion.module, (torch.randn(1, 4, 32, 32),))


def test_what_flexible_dimensions_cannot_do_is_reported():
    class Bilinear(nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=1.5, mode="bilinear")

    with pytest.raises(ConversionError, match="non-integer scale factor"):
        convert_with_details(Bilinear(), torch.randn(1, 2, 8, 8), flexible={0: [2, 3]})


class PositionEmbedding(nn.Module):
    """Patches plus a position embedding sized for one image size (ViT's way)."""

    def __init__(self):
        super().__init__()
        self.position = nn.Parameter(torch.randn(1, 16, 4))

    def forward(self, x):
        return x.flatten(2).transpose(1, 2) + self.position


class FixedGrid(nn.Module):
    """A reshape to the grid the model was built for (MaxViT's grid partition)."""

    def forward(self, x):
        return x.reshape(1, 4, 2, 2, 2, 2).permute(0, 2, 4, 1, 3, 5).reshape(1, 16, 4)


@pytest.mark.parametrize("model, reason", [
    (PositionEmbedding(), "meets the fixed size 16 in a broadcast"),
    (FixedGrid(), r"reshaped to the fixed shape \[1, 4, 2, 2, 2, 2\]"),
], ids=["broadcast", "reshape"])
def test_models_of_one_input_size_are_refused_when_converted(model, reason):
    with pytest.raises(ConversionError, match=f"{reason}.*runs at one input size only"):
        convert_with_details(model, torch.randn(1, 4, 4, 4), flexible={0: [2, 3]})
    check(model, torch.randn(1, 4, 4, 4))  # at its one size it converts


TWO_SIZES = [torch.randn(1, 3, 5, 6), torch.randn(1, 3, 7, 4)]


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("corners", [False, True])
def test_bilinear_upsampling_to_load_time_sizes(nhwc, corners):
    class Upsample(nn.Module):
        def forward(self, x):
            return F.interpolate(x, size=(x.shape[2] * 3 + 1, x.shape[3] * 2), mode="bilinear",
                                 align_corners=corners)

    conversion, _ = check(Upsample(), TWO_SIZES[0], nhwc=nhwc, flexible={0: [2, 3]},
                          run_inputs=TWO_SIZES)
    # PyTorch's pixel centres (or corners) need Android 11's flags on RESIZE_BILINEAR
    assert nnapi_ops(conversion) == ["RESIZE_BILINEAR"] and conversion.feature_level == 4


def test_bilinear_upsampling_of_a_pooled_pixel_is_a_tile():
    class Pyramid(nn.Module):  # DeepLabV3's image pooling branch
        def forward(self, x):
            pooled = F.adaptive_avg_pool2d(x, 1)
            return F.interpolate(pooled, size=x.shape[-2:], mode="bilinear") + x

    conversion, _ = check(Pyramid(), TWO_SIZES[0], nhwc=True, flexible={0: [2, 3]},
                          run_inputs=TWO_SIZES)
    assert "TILE" in nnapi_ops(conversion) and conversion.feature_level <= 3


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_nearest_upsampling_to_a_load_time_size(nhwc):
    class Nearest(nn.Module):
        def forward(self, x, like):
            return F.interpolate(x, size=like.shape[-2:], mode="nearest")

    shapes = [(torch.randn(1, 3, 5, 6), torch.randn(1, 1, 13, 17)),
              (torch.randn(1, 3, 7, 4), torch.randn(1, 1, 29, 9))]
    conversion, _ = check(Nearest(), shapes[0], nhwc=[nhwc, False],
                          flexible={0: [2, 3], 1: [2, 3]}, run_inputs=shapes)
    assert nnapi_ops(conversion) == ["RESIZE_NEAREST_NEIGHBOR"]


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_adaptive_pooling_windows_are_computed_at_load_time(nhwc):
    class Pools(nn.Module):
        def forward(self, x):
            return F.adaptive_avg_pool2d(x, (7, 7)), F.adaptive_max_pool2d(x, (7, 7))

    sizes = [torch.randn(1, 3, 14, 21), torch.randn(1, 3, 28, 7)]
    conversion, _ = check(Pools(), sizes[0], nhwc=nhwc, flexible={0: [2, 3]},
                          run_inputs=sizes)
    with pytest.raises(Exception, match="multiple of 7"):
        run(conversion.module, (torch.randn(1, 3, 15, 21),))


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("factors", [(2, 2), (3, 4), (1, 3), (5, 2)])
def test_bilinear_upsampling_by_integer_factors_stays_below_level_4(nhwc, factors):
    class Upsample(nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=factors, mode="bilinear")

    class Sized(nn.Module):  # the same by an explicit size
        def forward(self, x):
            return F.interpolate(x, size=(x.shape[2] * factors[0], x.shape[3] * factors[1]),
                                 mode="bilinear")

    for model in (Upsample(), Sized()):
        conversion, _ = check(model, TWO_SIZES[0], nhwc=nhwc, flexible={0: [2, 3]},
                              run_inputs=TWO_SIZES)
        assert conversion.feature_level <= 3


def test_products_batched_over_a_flexible_dimension():
    """Swin's attention: one product per window, the window count known at load time."""
    torch.manual_seed(0)
    def attention(x):
        q, k = x[..., :8], x[..., 8:]
        return (q @ k.transpose(-2, -1)).softmax(-1) @ k

    conversion, _ = check(Fn(attention), torch.randn(4, 2, 5, 16), flexible={0: [0]},
                          run_inputs=[torch.randn(4, 2, 5, 16), torch.randn(7, 2, 5, 16)])
    assert "GROUPED_CONV_2D" in nnapi_ops(conversion)
