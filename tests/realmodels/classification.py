"""torchvision's classification models at small input sizes, for the real-model suites.

Every model torchvision lists in ``torchvision.models``, built with random weights (batch
norms with non-trivial statistics) and fed a 64x64 image where the architecture allows:
Inception and GoogLeNet need 96x96 (their stems shrink the image 32 times before
inception blocks with 3x3 valid convolutions); the vision transformers are built for 64x64
(``image_size=64``, a ViT-H/14 for 56x56); MaxViT only accepts 224x224.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
import torch
import torch.nn as nn

from ..convert.zoo import randomize_batchnorm
from .checks import nontrivial_weights
from .torchvision_support import load_torchvision

_SIZES = {"inception_v3": 96, "googlenet": 96, "maxvit_t": 224, "vit_h_14": 56}
# keyword arguments of get_model
_BUILD_OPTIONS: dict[str, dict[str, Any]] = {
    "vit_b_16": {"image_size": 64}, "vit_b_32": {"image_size": 64},
    "vit_l_16": {"image_size": 64}, "vit_l_32": {"image_size": 64},
    "vit_h_14": {"image_size": 56}, "googlenet": {"aux_logits": False, "init_weights": True},
    "inception_v3": {"aux_logits": False, "init_weights": True}}


# The suites cover models up to MAX_PARAMETERS; these are above it
# (test_classification.py's test_the_excluded_models_are_the_large_ones checks it).
MAX_PARAMETERS = 150_000_000
TOO_LARGE = frozenset({"convnext_large", "regnet_y_128gf", "vit_h_14", "vit_l_16", "vit_l_32"})


def classification_models() -> list[str]:
    """Their names up to MAX_PARAMETERS (none without torchvision: the tests using them then
    skip)."""
    if importlib.util.find_spec("torchvision") is None:
        return []
    models = load_torchvision().models
    return sorted(set(models.list_models(module=models)) - TOO_LARGE)


def build(name: str, seed: int = 0) -> tuple[nn.Module, torch.Tensor]:
    """The model in eval mode and an example image for it."""
    torch.manual_seed(seed)
    model = load_torchvision().models.get_model(name, weights=None,
                                                **_BUILD_OPTIONS.get(name, {}))
    size = _SIZES.get(name, 64)
    with torch.no_grad():
        model = randomize_batchnorm(model, seed)
    return model, torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(seed))


def require_memory(model: nn.Module, copies: int) -> None:
    """Skips the test when the machine lacks the memory for ``copies`` of the model's weights
    (a conversion holds several: the model, its capture, the NNAPI constants, the artifact)."""
    need = copies * sum(t.numel() * t.element_size() for t in model.state_dict().values())
    available = _available_memory()
    if available is not None and need > available:
        pytest.skip(f"needs about {need / 2**30:.0f} GB of free memory for {copies} copies of"
                    f" the weights, {available / 2**30:.0f} GB available")


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# Small configurations of torchvision's transformer classes, for the default suite.


def small_vision_transformer() -> nn.Module:
    models = load_torchvision().models
    model = models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                     hidden_dim=32, mlp_dim=64, num_classes=10)
    return nontrivial_weights(model)


def small_swin_transformer(version: int) -> nn.Module:
    """Two stages (feature maps a quarter, then an eighth of the image), windows of 4."""
    models = load_torchvision().models
    swin = models.swin_transformer
    blocks = {} if version == 1 else dict(block=swin.SwinTransformerBlockV2,
                                          downsample_layer=swin.PatchMergingV2)
    model = models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                                   num_heads=[2, 4], window_size=[4, 4], num_classes=10,
                                   stochastic_depth_prob=0.0, **blocks)
    return nontrivial_weights(model)


def small_maxvit() -> nn.Module:
    models = load_torchvision().models
    model = models.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2,
                          block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                          stochastic_depth_prob=0.0, num_classes=10)
    return nontrivial_weights(model)
