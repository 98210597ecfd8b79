"""torchvision's detection models with random weights that give distinct scores, and a
comparison of detections that does not depend on the order of near-equal scores."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn as nn

from ..realmodels.torchvision_support import load_torchvision
from .zoo import randomize_batchnorm

SIZE = 320
DETECTIONS = ("boxes", "scores", "labels")
_NORMS = (nn.BatchNorm2d, nn.GroupNorm)


class Detector(nn.Module):
    """One image tensor in, a tuple of the detections' fields (``outputs``, boxes, scores
    and labels first) out: the eager forward takes a list of images and returns a list of
    dicts."""

    def __init__(self, model: nn.Module, outputs: Sequence[str] = DETECTIONS):
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)

    def forward(self, x):
        found = self.model([x[0]])[0]
        return tuple(found[name] for name in self.outputs)


class MaskDetector(nn.Module):
    """Mask R-CNN's boxes, scores, labels and masks pasted into the image, then the masks
    the mask head predicted for each box before pasting ([N, 1, 28, 28] probabilities)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        model: Any = self.model  # torchvision's GeneralizedRCNN
        original_size = (x.shape[-2], x.shape[-1])
        images, _ = model.transform([x[0]])
        features = model.backbone(images.tensors)
        proposals, _ = model.rpn(images, features)
        found, _ = model.roi_heads(features, proposals, images.image_sizes)
        predicted = found[0]["masks"]
        found = model.transform.postprocess(found, images.image_sizes, [original_size])[0]
        return found["boxes"], found["scores"], found["labels"], found["masks"], predicted

    def masks_at(self, x, boxes, labels) -> tuple[torch.Tensor, torch.Tensor]:
        """The masks eager PyTorch predicts and pastes for given detections (of an image the
        transform does not resize, so that boxes are the same in both): a detection's boxes
        are chaotic with random weights, its masks must follow from them."""
        load_torchvision()
        from torchvision.models.detection.roi_heads import maskrcnn_inference
        from torchvision.models.detection.transform import paste_masks_in_image

        model: Any = self.model
        images, _ = model.transform([x[0]])
        assert tuple(images.image_sizes[0]) == tuple(x.shape[-2:]), "the transform resizes"
        features = model.backbone(images.tensors)
        heads = model.roi_heads
        logits = heads.mask_predictor(heads.mask_head(
            heads.mask_roi_pool(features, [boxes], images.image_sizes)))
        predicted = maskrcnn_inference(logits, [labels])[0]
        return paste_masks_in_image(predicted, boxes, tuple(x.shape[-2:])), predicted


def _renormalized(head: nn.Module) -> set[int]:
    """The layers of a roi head (the second stage) a normalization layer follows: scaled
    down, they give that norm inputs that vary little between rois, so that under batch
    norm's running statistics every roi gets the same features and the same score."""
    ids: set[int] = set()
    for m in head.modules():
        children = list(m.children())
        for layer, following in itertools.pairwise(children):
            if isinstance(following, _NORMS):
                ids.add(id(layer))
    return ids


def _random_detector(name: str, classes: int, detections: int, size: int | None,
                     proposals: int | None) -> nn.Module:
    """``name`` from torchvision.models.detection with weights under which features vary
    across the image (He initialization, batch norms with real statistics) and scores are
    distinct: softmax heads scaled down (not saturated), sigmoid scores (RetinaNet, FCOS)
    with no threshold. ``size``: the transform's min and max size (the image is resized to
    it; SSDs have their own); ``proposals``: how many the RPN keeps (torchvision's 1000 make the
    second stage's roi align most of a test's time)."""
    load_torchvision()
    from torchvision.models import detection

    torch.manual_seed(0)
    sizes = {} if size is None else {"min_size": size, "max_size": size}
    model = getattr(detection, name)(weights=None, weights_backbone=None, num_classes=classes,
                                     **sizes)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
    randomize_batchnorm(model)
    if isinstance(model, (detection.RetinaNet, detection.FCOS)):  # sigmoid scores
        model.score_thresh = 0.0
        heads = [model.head]
    else:  # (the layers of nested heads are scaled once per head they are in)
        heads = [m for name_, m in model.named_modules()
                 if name_.endswith(("head", "roi_heads"))]
    kept = _renormalized(model.roi_heads) if hasattr(model, "roi_heads") else set()
    masks = getattr(getattr(model, "roi_heads", None), "mask_predictor", None)
    if masks is not None:  # per-pixel sigmoids: scaled as heads they are all 0.5, as He
        # initialized them, logits of thousands saturate them; these give logits of a few
        kept |= {id(m) for m in (*model.roi_heads.mask_head.modules(), *masks.modules())}
    with torch.no_grad():
        for head in heads:
            for m in head.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)) and id(m) not in kept:
                    m.weight.mul_(0.1)
        if masks is not None:
            masks.mask_fcn_logits.weight.mul_(1e-3)
    model.detections_per_img = detections
    if hasattr(model, "roi_heads"):
        model.roi_heads.detections_per_img = detections
    if proposals is not None:
        model.rpn._post_nms_top_n["testing"] = proposals
    return model


def detector(name: str, classes: int = 5, detections: int = 50, size: int | None = None,
             proposals: int | None = None, outputs: Sequence[str] = DETECTIONS) -> Detector:
    """Detector of ``name`` with random weights (_random_detector)."""
    return Detector(_random_detector(name, classes, detections, size, proposals),
                    outputs).eval()


def mask_detector(name: str, size: int, proposals: int, classes: int = 5,
                  detections: int = 50) -> MaskDetector:
    """MaskDetector of the Mask R-CNN ``name`` with random weights (_random_detector)."""
    return MaskDetector(_random_detector(name, classes, detections, size, proposals)).eval()


def image(seed: int) -> torch.Tensor:
    """A smooth random image (objects are larger than a pixel)."""
    g = torch.Generator().manual_seed(seed)
    coarse = torch.rand(1, 3, 8, 8, generator=g)
    return nn.functional.interpolate(coarse, size=(SIZE, SIZE), mode="bilinear",
                                     align_corners=False)


def matched_detections(actual, expected) -> list[tuple[int, int, float]]:
    """(actual index, expected index, difference) for each expected detection and the
    closest actual one of its label not matched before: the difference is the larger of the
    scores' and of the boxes' relative to the image size (the order of near-equal scores is
    not compared). Different counts or a label without a match fail."""
    (boxes, scores, labels), (e_boxes, e_scores, e_labels) = actual[:3], expected[:3]
    assert len(scores) == len(e_scores), f"{len(scores)} detections, expected {len(e_scores)}"
    unused = set(range(len(scores)))
    pairs = []
    for i in range(len(e_scores)):
        candidates = [j for j in unused if labels[j] == e_labels[i]]
        assert candidates, f"no detection of label {int(e_labels[i])} left for detection {i}"
        errors = [max(abs(float(scores[j] - e_scores[i])),
                      float((boxes[j] - e_boxes[i]).abs().max()) / SIZE) for j in candidates]
        best = min(range(len(candidates)), key=errors.__getitem__)
        unused.discard(candidates[best])
        pairs.append((candidates[best], i, errors[best]))
    return pairs


def detection_error(actual, expected) -> float:
    """The largest difference between matched detections (matched_detections)."""
    return max((error for _, _, error in matched_detections(actual, expected)), default=0.0)


@contextlib.contextmanager
def traced_nms() -> Iterator[None]:
    """torchvision's batched NMS as a traced model runs it: on the CPU, eager PyTorch
    suppresses each class (level) apart above 4000 box coordinates, a trace always offsets
    the boxes of each class apart and suppresses them together. The two differ where random
    weights make proposals a hundredth of a pixel wide, whose overlaps lose their precision
    when offset (torch.jit.trace of Keypoint R-CNN differs from eager for that reason)."""
    load_torchvision()
    from torchvision.ops import boxes

    vanilla = boxes._batched_nms_vanilla
    boxes._batched_nms_vanilla = boxes._batched_nms_coordinate_trick
    try:
        yield
    finally:
        boxes._batched_nms_vanilla = vanilla


def field_error(actual, expected, field: int, scale: float) -> float:
    """The largest difference of output ``field`` (keypoints) between matched detections,
    divided by ``scale``."""
    return max((float((actual[field][j] - expected[field][i]).abs().max()) / scale
                for j, i, _ in matched_detections(actual, expected)), default=0.0)
