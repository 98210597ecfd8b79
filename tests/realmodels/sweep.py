"""Which full-size torchvision models the slow suite (`-m slow`, run by .ci/run) checks, and
which only the exhaustive sweep (`-m sweep`: every model up to 150M parameters through every
path, about 25 minutes on a 2-core machine, run by .ci/run after the slow suite)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

# One model of each architecture family: plain and residual CNNs, depthwise/squeeze-excite
# networks, dense connections, ConvNeXt, and the transformers (ViT, Swin V1/V2, MaxViT).
REPRESENTATIVE = frozenset({
    "alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "maxvit_t", "resnet50",
    "swin_t", "swin_v2_t", "vgg11_bn", "vit_b_16"})
# The export and trace_to_code paths: one residual CNN, one depthwise/squeeze-excite network.
REPRESENTATIVE_EXPORT = frozenset({"efficientnet_b0", "resnet50"})


def by_cost(names: Iterable[str], representative: frozenset[str]) -> list:
    """``names`` as parameters: the representative ones marked slow, the others sweep."""
    return [pytest.param(name, marks=pytest.mark.slow if name in representative
                         else pytest.mark.sweep) for name in names]
