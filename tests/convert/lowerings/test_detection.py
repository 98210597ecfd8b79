"""torchvision's roi_align as NNAPI's ROI_ALIGN."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torch_nnapi.convert.errors import ConversionError

from ...realmodels.torchvision_support import load_torchvision
from ..harness import LAYOUTS, check, convert, nnapi_ops


class RoiAlign(nn.Module):
    def __init__(self, scale: float, sampling_ratio: int, aligned: bool = False,
                 rois: torch.Tensor | None = None):
        super().__init__()
        self.ops = load_torchvision().ops
        self.scale, self.sampling_ratio, self.aligned = scale, sampling_ratio, aligned
        self.rois = rois

    def forward(self, features, *rois):
        boxes = rois[0] if rois else self.rois
        return self.ops.roi_align(features, boxes, (5, 4), self.scale, self.sampling_ratio,
                                  self.aligned)


def _rois(count: int = 6, image: float = 64.0) -> torch.Tensor:
    """[count, 5] rois (batch index, x1, y1, x2, y2) inside the image, some under a pixel of
    the feature map wide, some touching its far edge."""
    g = torch.Generator().manual_seed(0)
    corners = torch.rand(count, 2, 2, generator=g) * image
    low, high = corners.min(1).values, corners.max(1).values
    high[0], low[1] = low[0] + 0.5, torch.tensor([image - 2.0, image - 3.0])
    high[1] = image
    batch = torch.arange(count).remainder(2).float()
    return torch.cat([batch[:, None], low, high], 1)


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("sampling_ratio", [2, 0], ids=["two_samples", "adaptive"])
def test_roi_align_matches_torchvision(sampling_ratio, nhwc):
    torch.manual_seed(0)
    features = torch.randn(2, 8, 16, 16)
    conversion, _ = check(RoiAlign(0.25, sampling_ratio), (features, _rois()), nhwc=nhwc)
    assert "ROI_ALIGN" in nnapi_ops(conversion)


def test_roi_align_with_constant_rois():
    torch.manual_seed(0)
    check(RoiAlign(0.125, 2, rois=_rois(image=128.0)), torch.randn(2, 4, 16, 16))


def test_aligned_roi_align_is_reported():
    with pytest.raises(ConversionError, match="aligned=True"):
        convert(RoiAlign(0.25, 2, aligned=True), (torch.randn(2, 8, 16, 16), _rois()))
