"""torchvision's operators defined in Python when its compiled extension cannot load."""

from __future__ import annotations

import pytest
import torch

from ...realmodels.torchvision_support import load_torchvision


def _greedy_nms(boxes: torch.Tensor, scores: torch.Tensor, threshold: float) -> list[int]:
    """The definition, written the slow way: the full IoU matrix, one box at a time."""
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    top_left = torch.maximum(boxes[:, None, :2], boxes[None, :, :2])
    bottom_right = torch.minimum(boxes[:, None, 2:], boxes[None, :, 2:])
    overlap = (bottom_right - top_left).clamp(min=0).prod(dim=2)
    iou = overlap / (area[:, None] + area[None, :] - overlap)
    kept: list[int] = []
    for i in torch.sort(scores, descending=True, stable=True).indices.tolist():
        if all(iou[i, k] <= threshold for k in kept):
            kept.append(i)
    return kept


def test_nms_keeps_what_the_definition_keeps():
    torchvision = load_torchvision()
    g = torch.Generator().manual_seed(0)
    corners = torch.rand(200, 2, generator=g) * 50
    boxes = torch.cat([corners, corners + 5 + torch.rand(200, 2, generator=g) * 20], dim=1)
    scores = torch.rand(200, generator=g)
    for threshold in (0.3, 0.5, 0.7):
        kept = torchvision.ops.nms(boxes, scores, threshold)
        assert kept.tolist() == _greedy_nms(boxes, scores, threshold)


def test_roi_align_averages_the_sampled_region():
    torchvision = load_torchvision()
    image = torch.arange(16.0).reshape(1, 1, 4, 4)
    # the whole image pooled to one value, sampled at its pixel centres: their mean
    pooled = torchvision.ops.roi_align(image, [torch.tensor([[0.0, 0.0, 4.0, 4.0]])], 1,
                                       aligned=True, sampling_ratio=4)
    assert pooled.shape == (1, 1, 1, 1)
    torch.testing.assert_close(pooled.flatten(), torch.tensor([7.5]))


def test_an_operator_without_a_definition_says_so():
    torchvision = load_torchvision()
    if torchvision.extension._has_ops.__name__ != "_operators_defined":
        pytest.skip("torchvision's own compiled operators load here: every operator runs")
    with pytest.raises(RuntimeError, match="cannot run here.*nms, qnms and roi_align"):
        torchvision.ops.roi_pool(torch.rand(1, 1, 4, 4), [torch.tensor([[0.0, 0, 2, 2]])], 1)
