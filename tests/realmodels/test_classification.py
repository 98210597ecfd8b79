"""torchvision's classification models: every one up to 150M parameters (ViT, Swin V1/V2 and
MaxViT included) converts and matches eager PyTorch in PyTorch's order and channels-last,
and with flexible height and width (one artifact run at two sizes) except ViT and MaxViT,
which eager PyTorch runs at one input size only (their flexible conversion is refused). One
model per family is slow (``-m slow``), the others are the sweep (``-m sweep``), both run by
.ci/run; small configurations of the same torchvision classes run in the default suite."""

from __future__ import annotations

import pytest
import torch

from torch_nnapi.convert.errors import ConversionError

from ..convert.harness import convert, run
from .checks import check_float_model, nontrivial_weights
from .classification import (
    MAX_PARAMETERS,
    TOO_LARGE,
    classification_models,
    small_maxvit,
    small_swin_transformer,
    small_vision_transformer,
)
from .sweep import REPRESENTATIVE, by_cost
from .torchvision_support import load_torchvision

# (input size, the other (height, width) the flexible conversion also runs at). Most models
# take any size; AlexNet's and the VGGs' adaptive pooling to 6x6 / 7x7 needs a feature map
# that is a multiple of it, which the converted model checks when it is loaded. Swin shifts
# its windows only in stages whose padded feature map exceeds the window (7, V2: 8), a
# decision the converted model keeps: both sizes shift in the first two stages (V2: the
# first) and not after, and the second pads its feature maps up to whole windows.
DEFAULT_SIZES = (32, (48, 40))
SIZES = {"alexnet": (224, (416, 224)), "inception_v3": (80, (96, 88)),
         **{name: (224, (448, 224)) for name in
            ("vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
             "vgg19_bn")},
         **{name: (64, (96, 80)) for name in ("swin_t", "swin_s", "swin_b")},
         **{name: (64, (56, 48)) for name in ("swin_v2_t", "swin_v2_s", "swin_v2_b")}}
# Models built for one input size, whose eager forward refuses any other: ViT's position
# embeddings and MaxViT's grid partition are sized for it. They convert channels-last at
# their one size; a flexible conversion is refused (test_one_size_models_refuse_flexible_sizes).
ONE_SIZE = {"maxvit_t": 224, "vit_b_16": 64, "vit_b_32": 64}


def build(name: str):
    models = load_torchvision().models
    options = {"image_size": ONE_SIZE[name]} if name.startswith("vit_") else {}
    model = models.get_model(name, weights=None, **options)
    return nontrivial_weights(model)


@pytest.mark.parametrize("name", by_cost(classification_models(), REPRESENTATIVE))
def test_classification_model(name):
    model = build(name)
    assert sum(p.numel() for p in model.parameters()) <= MAX_PARAMETERS
    if name in ONE_SIZE:
        check_float_model(model, ONE_SIZE[name], None)
    else:
        size, other = SIZES.get(name, DEFAULT_SIZES)
        check_float_model(model, size, other)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TOO_LARGE))
def test_the_excluded_models_are_the_large_ones(name):
    models = load_torchvision().models
    model = models.get_model(name, weights=None)
    assert sum(p.numel() for p in model.parameters()) > MAX_PARAMETERS


# ------------------------------------------------------------------- the default suite


def test_small_vision_transformer():
    check_float_model(small_vision_transformer(), 32, None)


# Windows of 4 on a feature map a quarter of the image, then an eighth: at 32 and (24, 28)
# the first stage shifts (padded to 8: 24 / 4 = 6 is padded) and the second does not; at 48
# and (64, 56) both shift (12 -> 12, 6 -> 8; 16, 14 -> 16, 8, 7 -> 8).
@pytest.mark.parametrize("size, other", [(32, (24, 28)), (48, (64, 56))],
                         ids=["second-stage-unshifted", "both-shifted"])
@pytest.mark.parametrize("version", [1, 2])
def test_small_swin_transformer(version, size, other):
    check_float_model(small_swin_transformer(version), size, other)


@pytest.mark.parametrize("version", [1, 2])
def test_small_swin_refuses_sizes_where_it_would_shift_differently(version):
    """Converted at 32, whose second stage (4x4, one window) does not shift; at (48, 40)
    eager Swin would shift it (padded to 8x8), which the artifact refuses when loaded."""
    model = small_swin_transformer(version)
    module = convert(model, (torch.randn(1, 3, 32, 32),), nhwc=True,
                     flexible={0: [2, 3]}).module
    with pytest.raises(Exception, match=r"Swin shifts its windows only where the padded"
                       r" feature height exceeds the window size 4.* only where it is <= 4"):
        run(module, (torch.randn(1, 3, 48, 40),))


def test_small_maxvit():
    check_float_model(small_maxvit(), 32, None)


@pytest.mark.parametrize("make, reason", [
    (small_vision_transformer, r"aten::add x1\n.*meets the fixed size 17 in a broadcast, so"
     r" this model runs at one input size only.*\n.*vision_transformer.py"),
    (small_maxvit, r"reshaped to the fixed shape \[1, 4, 4, 2, 2, 16\], so this model runs at"
     r" one input size only.*\n.*maxvit.py"),
], ids=["vit", "maxvit"])
def test_one_size_models_refuse_flexible_sizes(make, reason):
    """ViT's position embedding and MaxViT's grid partition are sized for one input: eager
    refuses any other size, so a flexible conversion is refused, naming the operation."""
    with pytest.raises(ConversionError, match=reason):
        convert(make(), (torch.randn(1, 3, 32, 32),), nhwc=True, flexible={0: [2, 3]})


def test_resnet18_with_flexible_height_and_width():
    check_float_model(build("resnet18"), 32, (48, 40))
