"""torchvision's detection models with random weights that give distinct scores, and a
comparison of detections that does not depend on the order of near-equal scores."""

from __future__ import annotations

import torch
import torch.nn as nn

from ..realmodels.torchvision_support import load_torchvision
from .zoo import randomize_batchnorm

SIZE = 320


class Detector(nn.Module):
    """One image tensor in, (boxes, scores, labels) out: the eager forward takes a list of
    images and returns a list of dicts."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        found = self.model([x[0]])[0]
        return found["boxes"], found["scores"], found["labels"]


def detector(name: str, classes: int = 5, detections: int = 50) -> Detector:
    """``name`` from torchvision.models.detection with weights under which features vary
    across the image (He initialization, batch norms with real statistics) and scores are
    not saturated (heads scaled down)."""
    load_torchvision()
    from torchvision.models import detection

    torch.manual_seed(0)
    model = getattr(detection, name)(weights=None, weights_backbone=None, num_classes=classes)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
    randomize_batchnorm(model)
    heads = [m for name_, m in model.named_modules() if name_.endswith(("head", "roi_heads"))]
    with torch.no_grad():
        for head in heads:
            for m in head.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    m.weight.mul_(0.1)
    model.detections_per_img = detections
    if hasattr(model, "roi_heads"):
        model.roi_heads.detections_per_img = detections
    return Detector(model).eval()


def image(seed: int) -> torch.Tensor:
    """A smooth random image (objects are larger than a pixel)."""
    g = torch.Generator().manual_seed(seed)
    coarse = torch.rand(1, 3, 8, 8, generator=g)
    return nn.functional.interpolate(coarse, size=(SIZE, SIZE), mode="bilinear",
                                     align_corners=False)


def detection_error(actual, expected) -> float:
    """The largest difference between matched detections: scores absolutely, boxes relative
    to the image size, each expected detection matched to the closest one of its label
    (the order of near-equal scores is not compared). Different counts or a label without
    a match fail."""
    (boxes, scores, labels), (e_boxes, e_scores, e_labels) = actual, expected
    assert len(scores) == len(e_scores), f"{len(scores)} detections, expected {len(e_scores)}"
    unused = set(range(len(scores)))
    worst = 0.0
    for i in range(len(e_scores)):
        candidates = [j for j in unused if labels[j] == e_labels[i]]
        assert candidates, f"no detection of label {int(e_labels[i])} left for detection {i}"
        errors = [max(abs(float(scores[j] - e_scores[i])),
                      float((boxes[j] - e_boxes[i]).abs().max()) / SIZE) for j in candidates]
        best = min(range(len(candidates)), key=errors.__getitem__)
        unused.discard(candidates[best])
        worst = max(worst, errors[best])
    return worst
