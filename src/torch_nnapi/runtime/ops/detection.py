"""Box transforms and non-maximum suppression: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
GENERATE_PROPOSALS, DETECTION_POSTPROCESSING.

As Android's reference does, everything is computed in float32 (quantized inputs dequantized,
results rounded back). BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS have output shapes that
depend on the data: their prepare computes the result (deferred to execution when the data is
not constant) and execute reuses it. Sorts are stable, so equal scores keep Android's
candidate order; suppression follows Android's greedy loop exactly (see ``_detection``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError, OpFailedError
from ..context import KernelContext, Shape
from ..registry import register
from ._common import check_rank
from ._detection import (
    F32,
    ROI_DIM,
    OncePerContext,
    batch_runs,
    check_batch_index,
    check_corners,
    descending,
    float_input,
    float_scalar,
    greedy_nms,
    hard_suppression,
    output_from_float,
    positive_scalar,
    to_nhwc,
)


def _transform(boxes: np.ndarray, deltas: np.ndarray, image_hw: np.ndarray) -> np.ndarray:
    """Applies [dx, dy, dw, dh] deltas to [x1, y1, x2, y2] boxes and clips to the image.

    ``boxes`` [n, 4], ``deltas`` [n, k, 4], ``image_hw`` [n, 2] (height, width) -> [n, k, 4].
    """
    x1, y1, x2, y2 = (boxes[:, i:i + 1] for i in range(ROI_DIM))
    width, height = x2 - x1, y2 - y1
    center_x, center_y = (x1 + x2) / F32(2), (y1 + y2) / F32(2)
    with np.errstate(over="ignore"):
        new_width = np.exp(deltas[..., 2]) * width
        new_height = np.exp(deltas[..., 3]) * height
    new_x = center_x + deltas[..., 0] * width
    new_y = center_y + deltas[..., 1] * height
    image_h, image_w = image_hw[:, 0:1], image_hw[:, 1:2]
    half_w, half_h = new_width / F32(2), new_height / F32(2)
    return np.stack([
        np.minimum(np.maximum(new_x - half_w, F32(0)), image_w),
        np.minimum(np.maximum(new_y - half_h, F32(0)), image_h),
        np.minimum(np.maximum(new_x + half_w, F32(0)), image_w),
        np.minimum(np.maximum(new_y + half_h, F32(0)), image_h),
    ], axis=-1)


# ------------------------------------------------------------------------- AXIS_ALIGNED_BBOX_...

def _prepare_bbox_transform(ctx: KernelContext) -> list[Shape]:
    rois = check_rank(ctx, "rois", (2,))
    deltas = check_rank(ctx, "deltas", (2,))
    batch_index = check_rank(ctx, "batch_index", (1,))
    image_info = check_rank(ctx, "image_info", (2,))
    if rois[1] != ROI_DIM:
        raise BadDataError(f"{ctx.describe_input('rois')} must have shape [num_rois, 4], got"
                           f" {list(rois)}")
    if deltas[0] != rois[0] or deltas[1] < ROI_DIM or deltas[1] % ROI_DIM:
        raise BadDataError(f"{ctx.describe_input('deltas')} must have shape [{rois[0]},"
                           f" num_classes * 4], got {list(deltas)}")
    if batch_index[0] != rois[0]:
        raise BadDataError(f"{ctx.describe_input('batch_index')} must have shape [{rois[0]}], got"
                           f" {list(batch_index)}")
    if image_info[0] <= 0 or image_info[1] != 2:
        raise BadDataError(f"{ctx.describe_input('image_info')} must have shape [batches, 2], got"
                           f" {list(image_info)}")
    return [(rois[0], deltas[1])]


@register(Op.AXIS_ALIGNED_BBOX_TRANSFORM, prepare=_prepare_bbox_transform)
def axis_aligned_bbox_transform(ctx: KernelContext) -> np.ndarray:
    num_rois, width = ctx.input_shape("deltas")
    if num_rois == 0:
        return np.zeros((0, width), ctx.output_dtype())
    rois = float_input(ctx, "rois")
    image_info = float_input(ctx, "image_info")
    batch_index = ctx.input("batch_index")
    check_batch_index(batch_index, image_info.shape[0])
    check_corners(rois)
    deltas = float_input(ctx, "deltas").reshape(num_rois, -1, ROI_DIM)
    boxes = _transform(rois, deltas, image_info[batch_index])
    return output_from_float(ctx, "output", boxes.reshape(num_rois, width))


# ------------------------------------------------------------------------- BOX_WITH_NMS_LIMIT

_HARD, _LINEAR, _GAUSSIAN = 0, 1, 2


def _check_nms_inputs(ctx: KernelContext) -> tuple[int, int]:
    scores = check_rank(ctx, "scores", (2,))
    rois = check_rank(ctx, "rois", (2,))
    batch_index = check_rank(ctx, "batch_index", (1,))
    num_rois, num_classes = scores
    if num_classes < 2:
        raise BadDataError(f"{ctx.describe_input('scores')} needs at least 2 classes (class 0"
                           f" is the background), got shape {list(scores)}")
    if tuple(rois) != (num_rois, num_classes * ROI_DIM):
        raise BadDataError(f"{ctx.describe_input('rois')} must have shape [{num_rois},"
                           f" {num_classes * 4}], got {list(rois)}")
    if batch_index[0] != num_rois:
        raise BadDataError(f"{ctx.describe_input('batch_index')} must have shape [{num_rois}], got"
                           f" {list(batch_index)}")
    kernel = ctx.scalar("nms_kernel")
    if kernel not in (_HARD, _LINEAR, _GAUSSIAN):
        raise BadDataError(f"{ctx.describe_input('nms_kernel')} must be 0 (hard), 1 (linear) or 2"
                           f" (gaussian), got {kernel}")
    if kernel == _GAUSSIAN and not float_scalar(ctx, "sigma") > 0:
        raise BadDataError(f"{ctx.describe_input('sigma')} must be positive for the gaussian"
                           f" kernel, got {ctx.scalar('sigma')}")
    return num_rois, num_classes


def _soft_suppression(ctx: KernelContext,
                      scores: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Rescores pending boxes by the kernel of their IoU; drops those below the NMS threshold."""
    kernel = ctx.scalar("nms_kernel")
    iou_threshold, sigma = float_scalar(ctx, "iou_threshold"), float_scalar(ctx, "sigma")
    nms_score_threshold = float_scalar(ctx, "nms_score_threshold")

    def factor(iou: np.ndarray) -> np.ndarray:
        if kernel == _GAUSSIAN:
            return cast("np.ndarray", np.exp(F32(-1) * iou * iou / sigma))
        below = iou < iou_threshold
        return cast("np.ndarray",
                    np.where(below, F32(1), F32(0) if kernel == _HARD else F32(1) - iou))

    def suppress(iou: np.ndarray, ids: np.ndarray) -> np.ndarray:
        rescored = scores[ids] * factor(iou).astype(F32)
        scores[ids] = rescored
        return cast("np.ndarray", rescored < nms_score_threshold)

    return suppress


def _box_with_nms(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kept flat indices into [num_rois * num_classes], their scores, their batch index)."""
    num_rois, num_classes = _check_nms_inputs(ctx)
    if num_rois == 0:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(0, F32), empty
    scores = float_input(ctx, "scores").reshape(-1).copy()  # soft NMS rescores in place
    boxes = float_input(ctx, "rois").reshape(-1, ROI_DIM)
    batch_index = ctx.input("batch_index")
    if batch_index.min() < 0:
        raise OpFailedError(f"batch indices must be >= 0, got {int(batch_index.min())}")
    check_corners(boxes)
    score_threshold = float_scalar(ctx, "score_threshold")
    max_detections = ctx.scalar("max_detections")
    suppress = _soft_suppression(ctx, scores)
    kept, kept_batches = [], []
    for start, stop in batch_runs(batch_index):
        first, last = start * num_classes, stop * num_classes
        selected = []
        for cls in range(1, num_classes):  # class 0 is the background
            ids = np.arange(first + cls, last, num_classes)
            ids = ids[scores[ids] > score_threshold]
            selected.append(greedy_nms(scores, boxes, ids, max_detections, suppress))
        chosen = np.concatenate(selected)
        chosen = chosen[descending(scores[chosen])]
        if max_detections >= 0:
            chosen = chosen[:max_detections]
        chosen = chosen[np.lexsort((-scores[chosen], chosen % num_classes))]
        kept.append(chosen)
        kept_batches.append(np.full(chosen.size, batch_index[start], np.int64))
    kept_all = np.concatenate(kept)
    return kept_all, scores[kept_all], np.concatenate(kept_batches)


_box_with_nms_once = OncePerContext(_box_with_nms)


def _prepare_box_with_nms(ctx: KernelContext) -> list[Shape]:
    count = _box_with_nms_once(ctx)[0].size
    return [(count,), (count, ROI_DIM), (count,), (count,)]


@register(Op.BOX_WITH_NMS_LIMIT, prepare=_prepare_box_with_nms)
def box_with_nms_limit(ctx: KernelContext) -> tuple[np.ndarray, ...]:
    kept, scores, batches = _box_with_nms_once(ctx)
    num_classes = ctx.input_shape("scores")[1]
    rois = ctx.input("rois").reshape(-1, ROI_DIM)  # copied as given, as Android does
    return (output_from_float(ctx, "out_scores", scores), rois[kept],
            (kept % num_classes).astype(np.int32), batches.astype(np.int32))


# ------------------------------------------------------------------------- GENERATE_PROPOSALS

def _prepare_proposal_inputs(ctx: KernelContext) -> None:
    scores = check_rank(ctx, "scores", (4,))
    deltas = check_rank(ctx, "deltas", (4,))
    anchors = check_rank(ctx, "anchors", (2,))
    image_info = check_rank(ctx, "image_info", (2,))
    nchw = bool(ctx.scalar("nchw"))
    batches, height, width, num_anchors = (scores[0], scores[2], scores[3], scores[1]) \
        if nchw else scores
    expected = (batches, num_anchors * ROI_DIM, height, width) if nchw \
        else (batches, height, width, num_anchors * ROI_DIM)
    if tuple(deltas) != expected:
        raise BadDataError(f"{ctx.describe_input('deltas')} must have shape {list(expected)}, got"
                           f" {list(deltas)}")
    if tuple(anchors) != (num_anchors, ROI_DIM):
        raise BadDataError(f"{ctx.describe_input('anchors')} must have shape [{num_anchors}, 4],"
                           f" got {list(anchors)}")
    if tuple(image_info) != (batches, 2):
        raise BadDataError(f"{ctx.describe_input('image_info')} must have shape [{batches}, 2], got"
                           f" {list(image_info)}")
    for name in ("height_stride", "width_stride"):
        positive_scalar(ctx, name)


def _generate_proposals(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, boxes [n, 4], batch index) of the proposals kept, in float32."""
    _prepare_proposal_inputs(ctx)
    nchw = bool(ctx.scalar("nchw"))
    scores = to_nhwc(float_input(ctx, "scores"), nchw)
    deltas = to_nhwc(float_input(ctx, "deltas"), nchw)
    anchors = float_input(ctx, "anchors")
    image_info = float_input(ctx, "image_info")
    height_stride = float_scalar(ctx, "height_stride")
    width_stride = float_scalar(ctx, "width_stride")
    pre_nms, post_nms = ctx.scalar("pre_nms_max"), ctx.scalar("post_nms_max")
    suppress = hard_suppression(float_scalar(ctx, "iou_threshold"))
    min_size = float_scalar(ctx, "min_size")
    check_corners(anchors, "anchor")

    batches, height, width, num_anchors = scores.shape
    # Every anchor at every feature-map position, in image coordinates: [h, w, anchor, 4].
    shift_x = np.arange(width, dtype=F32) * width_stride
    shift_y = np.arange(height, dtype=F32) * height_stride
    shifts = np.zeros((height, width, 1, ROI_DIM), F32)
    shifts[..., 0::2] = shift_x[None, :, None, None]
    shifts[..., 1::2] = shift_y[:, None, None, None]
    grid_boxes = (anchors[None, None] + shifts).reshape(-1, ROI_DIM)

    out_scores, out_boxes = [np.zeros(0, F32)], [np.zeros((0, ROI_DIM), F32)]
    out_batches = [np.zeros(0, np.int32)]
    for b in range(batches):
        batch_scores = scores[b].reshape(-1)
        hw = np.broadcast_to(image_info[b], (grid_boxes.shape[0], 2))
        boxes = _transform(grid_boxes, deltas[b].reshape(-1, 1, ROI_DIM), hw)[:, 0]
        candidates = np.arange(batch_scores.size)
        if 0 < pre_nms < candidates.size:
            candidates = descending(batch_scores)[:pre_nms]
        candidates = candidates[_large_enough(boxes[candidates], image_info[b], min_size)]
        kept = greedy_nms(batch_scores, boxes, candidates, post_nms if post_nms > 0 else -1,
                          suppress)
        out_scores.append(batch_scores[kept])
        out_boxes.append(boxes[kept])
        out_batches.append(np.full(kept.size, b, np.int32))
    return np.concatenate(out_scores), np.concatenate(out_boxes), np.concatenate(out_batches)


def _large_enough(boxes: np.ndarray, image_hw: np.ndarray, min_size: np.float32) -> np.ndarray:
    """Boxes wider and taller than ``min_size`` whose centre lies inside the image."""
    width = boxes[:, 2] - boxes[:, 0]
    height = boxes[:, 3] - boxes[:, 1]
    center_x = boxes[:, 0] + width / F32(2)
    center_y = boxes[:, 1] + height / F32(2)
    return cast("np.ndarray", (width > min_size) & (height > min_size) & (center_x < image_hw[1]) \
        & (center_y < image_hw[0]))


_generate_proposals_once = OncePerContext(_generate_proposals)


def _prepare_generate_proposals(ctx: KernelContext) -> list[Shape]:
    count = _generate_proposals_once(ctx)[0].size
    return [(count,), (count, ROI_DIM), (count,)]


@register(Op.GENERATE_PROPOSALS, prepare=_prepare_generate_proposals)
def generate_proposals(ctx: KernelContext) -> tuple[np.ndarray, ...]:
    scores, boxes, batches = _generate_proposals_once(ctx)
    return (output_from_float(ctx, "out_scores", scores), output_from_float(ctx, "out_rois", boxes),
            batches)


# ------------------------------------------------------------------------- DETECTION_POSTPROC...

def _prepare_detection_postprocessing(ctx: KernelContext) -> list[Shape]:
    scores = check_rank(ctx, "scores", (3,))
    deltas = check_rank(ctx, "deltas", (3,))
    anchors = check_rank(ctx, "anchors", (2,))
    batches, num_anchors, num_classes = scores
    if deltas[0] != batches or deltas[1] != num_anchors or deltas[2] < ROI_DIM:
        raise BadDataError(f"{ctx.describe_input('deltas')} must have shape [{batches},"
                           f" {num_anchors}, >= 4], got {list(deltas)}")
    if tuple(anchors) != (num_anchors, ROI_DIM):
        raise BadDataError(f"{ctx.describe_input('anchors')} must have shape [{num_anchors}, 4],"
                           f" got {list(anchors)}")
    if num_classes < 2:
        raise BadDataError(f"{ctx.describe_input('scores')} needs at least 2 classes (class 0"
                           f" is the background), got shape {list(scores)}")
    for name in ("scale_y", "scale_x", "scale_h", "scale_w"):
        positive_scalar(ctx, name)
    for name in ("score_threshold", "iou_threshold"):
        if not float_scalar(ctx, name) >= 0:
            raise BadDataError(f"{ctx.describe_input(name)} must be >= 0, got"
                               f" {ctx.scalar(name)}")
    detections = int(positive_scalar(ctx, "max_detections"))
    if ctx.scalar("regular_nms"):
        positive_scalar(ctx, "max_detections_per_class")
    else:
        detections *= int(positive_scalar(ctx, "max_classes_per_detection"))
    return [(batches, detections), (batches, detections, ROI_DIM), (batches, detections),
            (batches,)]


def _decode_anchors(deltas: np.ndarray, anchors: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """[dy, dx, dh, dw] deltas on [ctr_y, ctr_x, h, w] anchors -> boxes [y1, x1, y2, x2]."""
    center_y = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / scales[0]
    center_x = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / scales[1]
    with np.errstate(over="ignore"):
        half_h = anchors[:, 2] * np.exp(deltas[:, 2] / scales[2]) * F32(0.5)
        half_w = anchors[:, 3] * np.exp(deltas[:, 3] / scales[3]) * F32(0.5)
    return np.stack([center_y - half_h, center_x - half_w, center_y + half_h,
                     center_x + half_w], axis=-1)


@register(Op.DETECTION_POSTPROCESSING, prepare=_prepare_detection_postprocessing)
def detection_postprocessing(ctx: KernelContext) -> tuple[np.ndarray, ...]:
    scores = float_input(ctx, "scores")
    deltas = float_input(ctx, "deltas")[..., :ROI_DIM]
    anchors = float_input(ctx, "anchors")
    scales = np.array([float_scalar(ctx, name) for name in ("scale_y", "scale_x", "scale_h",
                                                            "scale_w")], dtype=F32)
    regular = bool(ctx.scalar("regular_nms"))
    max_detections = ctx.scalar("max_detections")
    max_classes = ctx.scalar("max_classes_per_detection")
    max_per_class = ctx.scalar("max_detections_per_class")
    score_threshold = float_scalar(ctx, "score_threshold")
    suppress = hard_suppression(float_scalar(ctx, "iou_threshold"))
    # Labels count from the background class or from the first real one.
    label_offset = 0 if ctx.scalar("background_in_label") else 1

    batches, num_anchors, num_classes = scores.shape
    slots = max_detections if regular else max_detections * max_classes
    out_scores = np.zeros((batches, slots), F32)
    out_boxes = np.zeros((batches, slots, ROI_DIM), F32)
    out_classes = np.zeros((batches, slots), np.int32)
    counts = np.zeros(batches, np.int32)
    for b in range(batches):
        boxes = _decode_anchors(deltas[b], anchors, scales)
        if regular:
            flat = scores[b].reshape(-1)  # index = anchor * num_classes + class
            flat_boxes = np.repeat(boxes, num_classes, axis=0)
            selected = []
            for class_id in range(1, num_classes):
                ids = np.arange(class_id, flat.size, num_classes)
                ids = ids[flat[ids] > score_threshold]
                selected.append(greedy_nms(flat, flat_boxes, ids, max_per_class, suppress))
            chosen = np.concatenate(selected)
            chosen = chosen[descending(flat[chosen])][:max_detections]
            anchor, cls = chosen // num_classes, chosen % num_classes
            picked_scores = flat[chosen]
        else:
            best = scores[b, :, 1:].max(axis=1)
            candidates = np.flatnonzero(best > score_threshold)
            chosen = greedy_nms(best, boxes, candidates, max_detections, suppress)
            per_box = min(num_classes - 1, max_classes)
            ranked = 1 + np.argsort(-scores[b, chosen, 1:], axis=1, kind="stable")[:, :per_box]
            anchor = np.repeat(chosen, per_box)
            cls = ranked.reshape(-1)
            picked_scores = scores[b, anchor, cls]
        count = anchor.size
        out_scores[b, :count] = picked_scores
        out_boxes[b, :count] = boxes[anchor]
        out_classes[b, :count] = cls - label_offset
        counts[b] = count
    return (output_from_float(ctx, "out_scores", out_scores),
            output_from_float(ctx, "out_boxes", out_boxes), out_classes, counts)
