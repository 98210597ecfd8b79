"""torchvision's segmentation models (FCN, DeepLabV3, LR-ASPP): converted and matching eager
in PyTorch's order, channels-last, and with flexible height and width, the prototype's
motivating case (a camera whose aspect ratio is known only at load time). Their final
bilinear upsampling to the input size becomes RESIZE_BILINEAR's size form, computed when
the model is loaded. The full sweep is slow; LR-ASPP runs in the default suite."""

from __future__ import annotations

import importlib.util

import pytest
import torch.nn as nn

from .checks import check_float_model, nontrivial_weights
from .torchvision_support import load_torchvision


class Segmenter(nn.Module):
    """The model's main output (torchvision returns a dict)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def segmentation_names() -> list[str]:
    if importlib.util.find_spec("torchvision") is None:
        return []
    models = load_torchvision().models
    return sorted(models.list_models(module=models.segmentation))


def build(name: str) -> nn.Module:
    models = load_torchvision().models
    model = models.get_model(name, weights=None, weights_backbone=None, num_classes=5)
    return Segmenter(nontrivial_weights(model)).eval()


@pytest.mark.slow
@pytest.mark.parametrize("name", segmentation_names())
def test_segmentation_model(name):
    results = check_float_model(build(name), 32, (48, 40))
    assert set(results) == {"seconds", "nchw", "nhwc", "flexible"}


def test_lraspp_with_flexible_height_and_width():
    check_float_model(build("lraspp_mobilenet_v3_large"), 32, (48, 40))
