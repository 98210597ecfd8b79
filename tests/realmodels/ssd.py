"""An SSD-style detector written with standard torch ops only, for the ExecuTorch suite.

torchvision's own SSD/SSDlite cannot be captured by ``torch.export`` (see
test_executorch_detection.py), so this one keeps their structure with static shapes: a
MobileNet-like backbone (depthwise-separable blocks), box and class heads on two feature
levels, default boxes decoded SSD's way (centre offsets scaled by 0.1, sizes by 0.2 through
exp), the best foreground class per box, a score threshold, the top ``candidates`` boxes and a
greedy class-aware NMS unrolled over them (no data-dependent sizes: dropped detections have
score 0 and label 0). The backbone and heads are what NNAPI takes; the decoding and NMS are
meant for ExecuTorch's portable kernels.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .checks import nontrivial_weights


def _separable(inputs: int, outputs: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(inputs, inputs, 3, stride, 1, groups=inputs, bias=False),
        nn.BatchNorm2d(inputs), nn.ReLU6(),
        nn.Conv2d(inputs, outputs, 1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU6())


def default_boxes(image: int, grids: tuple[int, ...], scales: tuple[float, ...],
                  ratios: tuple[float, ...]) -> torch.Tensor:
    """(cx, cy, w, h) in pixels, level by level, cell by cell (row-major), ratio by ratio:
    the order the heads' outputs are flattened in."""
    boxes = []
    for grid, scale in zip(grids, scales, strict=True):
        step = image / grid
        for row in range(grid):
            for column in range(grid):
                for ratio in ratios:
                    boxes.append([(column + 0.5) * step, (row + 0.5) * step,
                                  scale * image * math.sqrt(ratio),
                                  scale * image / math.sqrt(ratio)])
    return torch.tensor(boxes)


class SsdDetector(nn.Module):
    """Image [1, 3, S, S] -> {"boxes": [K, 4] xyxy, "scores": [K], "labels": [K] int64}."""

    priors: torch.Tensor  # [boxes, 4]: (cx, cy, w, h)

    def __init__(self, classes: int = 4, image: int = 64, candidates: int = 32,
                 score_threshold: float = 0.75, iou_threshold: float = 0.3) -> None:
        super().__init__()
        self.classes, self.candidates = classes + 1, candidates  # class 0: background
        self.score_threshold, self.iou_threshold = score_threshold, iou_threshold
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU6())
        self.stage1 = nn.Sequential(_separable(8, 16, 2), _separable(16, 24, 2))  # 1/8
        self.stage2 = nn.Sequential(_separable(24, 32, 2), _separable(32, 32, 1))  # 1/16
        ratios = (1.0, 2.0, 0.5)
        self.anchors = len(ratios)
        self.box_heads = nn.ModuleList(nn.Conv2d(c, self.anchors * 4, 3, padding=1)
                                       for c in (24, 32))
        self.class_heads = nn.ModuleList(nn.Conv2d(c, self.anchors * self.classes, 3,
                                                   padding=1) for c in (24, 32))
        self.register_buffer("priors", default_boxes(image, (image // 8, image // 16),
                                                     (0.2, 0.45), ratios))
        nontrivial_weights(self)
        with torch.no_grad():  # random heads score every box alike: spread them as trained
            for heads, gain in ((self.class_heads, 40.0), (self.box_heads, 20.0)):
                for head in heads:
                    assert isinstance(head, nn.Conv2d)
                    head.weight.mul_(gain)

    def _flatten(self, head: torch.Tensor, width: int) -> torch.Tensor:
        # [1, A*width, H, W] -> [H*W*A, width], the priors' order
        return head.permute(0, 2, 3, 1).reshape(-1, width)

    def forward(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.postprocess(*self.heads(image))

    def heads(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Box offsets [boxes, 4] and class logits [boxes, classes], the priors' order."""
        level1 = self.stage1(self.stem(image))
        level2 = self.stage2(level1)
        levels = (level1, level2)
        offsets = torch.cat([self._flatten(h(f), 4) for h, f in zip(self.box_heads, levels,
                                                                     strict=True)])
        logits = torch.cat([self._flatten(h(f), self.classes)
                            for h, f in zip(self.class_heads, levels, strict=True)])
        return offsets, logits

    def postprocess(self, offsets: torch.Tensor, logits: torch.Tensor
                    ) -> dict[str, torch.Tensor]:
        boxes = self.decode(offsets)
        best, label = torch.softmax(logits, -1)[:, 1:].max(-1)
        score = torch.where(best > self.score_threshold, best, torch.zeros_like(best))
        score, order = torch.topk(score, self.candidates)
        boxes, label = boxes[order], label[order] + 1
        keep = self.greedy_nms(boxes, label, score > 0)
        return {"boxes": boxes * keep.unsqueeze(-1), "scores": score * keep,
                "labels": label * keep.long()}

    def decode(self, offsets: torch.Tensor) -> torch.Tensor:
        priors = self.priors
        centre = priors[:, :2] + 0.1 * offsets[:, :2] * priors[:, 2:]
        size = priors[:, 2:] * torch.exp(torch.clamp(0.2 * offsets[:, 2:], max=4.0))
        return torch.cat([centre - size / 2, centre + size / 2], -1)

    def greedy_nms(self, boxes: torch.Tensor, label: torch.Tensor, valid: torch.Tensor
                   ) -> torch.Tensor:
        """Which of the score-ordered boxes survive: each is dropped when a kept box before
        it of the same label overlaps it above the threshold (unrolled: static shapes)."""
        iou = self.overlaps(boxes)
        earlier = torch.ones(self.candidates, self.candidates).triu(1) > 0  # [j, i]: j < i
        over = (iou > self.iou_threshold) & (label[:, None] == label[None, :]) & earlier
        keep = valid
        for i in range(self.candidates):
            dropped = (keep & over[:, i]).any()
            keep = keep & ~(dropped & (torch.arange(self.candidates) == i))
        return keep.to(boxes.dtype)

    def overlaps(self, boxes: torch.Tensor) -> torch.Tensor:
        """Intersection over union of every pair of ``boxes`` (xyxy)."""
        top_left = torch.maximum(boxes[:, None, :2], boxes[None, :, :2])
        bottom_right = torch.minimum(boxes[:, None, 2:], boxes[None, :, 2:])
        inter = torch.clamp(bottom_right - top_left, min=0.0).prod(-1)
        area = (boxes[:, 2:] - boxes[:, :2]).prod(-1)
        return inter / (area[:, None] + area[None, :] - inter)

    def margins(self, image: torch.Tensor) -> tuple[float, float, float]:
        """How far eager's decisions on ``image`` are from flipping: the smallest gap between
        the top scores, from the score threshold, and between the IoU of two candidates of
        one label and the NMS threshold (a rounding this small could change the answer)."""
        with torch.no_grad():
            offsets, logits = self.heads(image)
            best, label = torch.softmax(logits, -1)[:, 1:].max(-1)
            top, order = torch.topk(best, self.candidates + 1)
            iou = self.overlaps(self.decode(offsets)[order[:-1]])
        valid = top[:-1] > self.score_threshold
        same = (label[order[:-1], None] == label[None, order[:-1]]) & valid[:, None] \
            & valid[None, :]
        return (float((top[:-1] - top[1:]).min()), float((best - self.score_threshold).abs()
                                                        .min()),
                float((iou[same] - self.iou_threshold).abs().min()))
