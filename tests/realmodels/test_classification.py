"""torchvision's classification models: every one up to 150M parameters (ViT, Swin V1/V2 and
MaxViT included) converts and matches eager PyTorch in PyTorch's order, channels-last, and
with flexible height and width (one artifact run at two sizes). The full sweep is slow
(``-m slow``, run by .ci/run); small configurations of the same torchvision classes run in
the default suite."""

from __future__ import annotations

import pytest

from .checks import check_float_model, nontrivial_weights
from .classification import MAX_PARAMETERS, TOO_LARGE, classification_models
from .sweep import REPRESENTATIVE, by_cost
from .torchvision_support import load_torchvision

# (input size, the other (height, width) the flexible conversion also runs at). Most models
# take any size; AlexNet's and the VGGs' adaptive pooling to 6x6 / 7x7 needs a feature map
# that is a multiple of it, which the converted model checks when it is loaded.
DEFAULT_SIZES = (32, (48, 40))
SIZES = {"alexnet": (224, (416, 224)), "inception_v3": (80, (96, 88)),
         **{name: (224, (448, 224)) for name in
            ("vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
             "vgg19_bn")}}
# Models built for one input size: ViT's position embeddings and MaxViT's grid partition are
# sized for it, and Swin's shifted-window mask is written slice by slice over the padded
# feature map, which NNAPI cannot express for sizes known only at load time. They convert
# channels-last at their one size.
ONE_SIZE = {"maxvit_t": 224, "swin_t": 64, "swin_s": 64, "swin_b": 64, "swin_v2_t": 64,
            "swin_v2_s": 64, "swin_v2_b": 64, "vit_b_16": 64, "vit_b_32": 64}


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
    models = load_torchvision().models
    model = models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                     hidden_dim=32, mlp_dim=64, num_classes=10)
    check_float_model(nontrivial_weights(model), 32, None)


@pytest.mark.parametrize("version", [1, 2])
def test_small_swin_transformer(version):
    models = load_torchvision().models
    swin = models.swin_transformer
    blocks = {} if version == 1 else dict(block=swin.SwinTransformerBlockV2,
                                          downsample_layer=swin.PatchMergingV2)
    model = models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                                   num_heads=[2, 4], window_size=[4, 4], num_classes=10,
                                   stochastic_depth_prob=0.0, **blocks)
    check_float_model(nontrivial_weights(model), 32, None)


def test_small_maxvit():
    models = load_torchvision().models
    model = models.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2,
                          block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                          stochastic_depth_prob=0.0, num_classes=10)
    check_float_model(nontrivial_weights(model), 32, None)


def test_resnet18_with_flexible_height_and_width():
    check_float_model(build("resnet18"), 32, (48, 40))
