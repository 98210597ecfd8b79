"""Box transforms and non-maximum suppression: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
GENERATE_PROPOSALS, DETECTION_POSTPROCESSING.

As Android's reference does, everything is computed in float32 (quantized inputs dequantized,
results rounded back). BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS have output shapes that
depend on the data: their prepare computes the result (deferred to execution when the data is
not constant) and execute reuses it. Sorts are stable, so equal scores keep Android's
candidate order; suppression follows Android's greedy loop exactly (see ``_detection``).
"""

from __future__ import annotations

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
    rois = check_rank(ctx, 0, (2,), "rois")
    deltas = check_rank(ctx, 1, (2,), "deltas")
    batch_index = check_rank(ctx, 2, (1,), "batch_index")
    image_info = check_rank(ctx, 3, (2,), "image_info")
    if rois[1] != ROI_DIM:
        raise BadDataError(f"input 0 (rois) must have shape [num_rois, 4], got {list(rois)}")
    if deltas[0] != rois[0] or deltas[1] < ROI_DIM or deltas[1] % ROI_DIM:
        raise BadDataError(f"input 1 (deltas) must have shape [{rois[0]}, num_classes * 4],"
                           f" got {list(deltas)}")
    if batch_index[0] != rois[0]:
        raise BadDataError(f"input 2 (batch_index) must have shape [{rois[0]}], got"
                           f" {list(batch_index)}")
    if image_info[0] <= 0 or image_info[1] != 2:
        raise BadDataError(f"input 3 (image_info) must have shape [batches, 2], got"
                           f" {list(image_info)}")
    return [(rois[0], deltas[1])]


@register(Op.AXIS_ALIGNED_BBOX_TRANSFORM, prepare=_prepare_bbox_transform)
def axis_aligned_bbox_transform(ctx: KernelContext) -> np.ndarray:
    num_rois, width = ctx.input_shape(1)
    if num_rois == 0:
        return np.zeros((0, width), ctx.output_dtype())
    rois = float_input(ctx, 0)
    image_info = float_input(ctx, 3)
    batch_index = ctx.input(2)
    check_batch_index(batch_index, image_info.shape[0])
    check_corners(rois)
    deltas = float_input(ctx, 1).reshape(num_rois, -1, ROI_DIM)
    boxes = _transform(rois, deltas, image_info[batch_index])
    return output_from_float(ctx, 0, boxes.reshape(num_rois, width))


# ------------------------------------------------------------------------- BOX_WITH_NMS_LIMIT

_HARD, _LINEAR, _GAUSSIAN = 0, 1, 2


def _check_nms_inputs(ctx: KernelContext) -> tuple[int, int]:
    scores = check_rank(ctx, 0, (2,), "scores")
    rois = check_rank(ctx, 1, (2,), "rois")
    batch_index = check_rank(ctx, 2, (1,), "batch_index")
    num_rois, num_classes = scores
    if num_classes < 2:
        raise BadDataError(f"input 0 (scores) needs at least 2 classes (class 0 is the"
                           f" background), got shape {list(scores)}")
    if tuple(rois) != (num_rois, num_classes * ROI_DIM):
        raise BadDataError(f"input 1 (rois) must have shape [{num_rois}, {num_classes * 4}],"
                           f" got {list(rois)}")
    if batch_index[0] != num_rois:
        raise BadDataError(f"input 2 (batch_index) must have shape [{num_rois}], got"
                           f" {list(batch_index)}")
    kernel = ctx.scalar(5)
    if kernel not in (_HARD, _LINEAR, _GAUSSIAN):
        raise BadDataError(f"input 5 (nms_kernel) must be 0 (hard), 1 (linear) or 2"
                           f" (gaussian), got {kernel}")
    if kernel == _GAUSSIAN and not float_scalar(ctx, 7) > 0:
        raise BadDataError(f"input 7 (sigma) must be positive for the gaussian kernel, got"
                           f" {ctx.scalar(7)}")
    return num_rois, num_classes


def _soft_suppression(ctx: KernelContext, scores: np.ndarray):
    """Rescores pending boxes by the kernel of their IoU; drops those below the NMS threshold."""
    kernel = ctx.scalar(5)
    iou_threshold, sigma = float_scalar(ctx, 6), float_scalar(ctx, 7)
    nms_score_threshold = float_scalar(ctx, 8)

    def factor(iou: np.ndarray) -> np.ndarray:
        if kernel == _GAUSSIAN:
            return np.exp(F32(-1) * iou * iou / sigma)
        below = iou < iou_threshold
        return np.where(below, F32(1), F32(0) if kernel == _HARD else F32(1) - iou)

    def suppress(iou: np.ndarray, ids: np.ndarray) -> np.ndarray:
        rescored = scores[ids] * factor(iou).astype(F32)
        scores[ids] = rescored
        return rescored < nms_score_threshold

    return suppress


def _box_with_nms(ctx: KernelContext):
    """(kept flat indices into [num_rois * num_classes], their scores, their batch index)."""
    num_rois, num_classes = _check_nms_inputs(ctx)
    if num_rois == 0:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(0, F32), empty
    scores = float_input(ctx, 0).reshape(-1).copy()  # soft NMS rescores in place
    boxes = float_input(ctx, 1).reshape(-1, ROI_DIM)
    batch_index = ctx.input(2)
    if batch_index.min() < 0:
        raise OpFailedError(f"batch indices must be >= 0, got {int(batch_index.min())}")
    check_corners(boxes)
    score_threshold = float_scalar(ctx, 3)
    max_detections = ctx.scalar(4)
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
    num_classes = ctx.input_shape(0)[1]
    rois = ctx.input(1).reshape(-1, ROI_DIM)  # copied as given, as Android does
    return (output_from_float(ctx, 0, scores), rois[kept], (kept % num_classes).astype(np.int32),
            batches.astype(np.int32))


# ------------------------------------------------------------------------- GENERATE_PROPOSALS

def _prepare_proposal_inputs(ctx: KernelContext) -> None:
    scores = check_rank(ctx, 0, (4,), "scores")
    deltas = check_rank(ctx, 1, (4,), "deltas")
    anchors = check_rank(ctx, 2, (2,), "anchors")
    image_info = check_rank(ctx, 3, (2,), "image_info")
    nchw = bool(ctx.scalar(10))
    batches, height, width, num_anchors = (scores[0], scores[2], scores[3], scores[1]) \
        if nchw else scores
    expected = (batches, num_anchors * ROI_DIM, height, width) if nchw \
        else (batches, height, width, num_anchors * ROI_DIM)
    if tuple(deltas) != expected:
        raise BadDataError(f"input 1 (deltas) must have shape {list(expected)}, got"
                           f" {list(deltas)}")
    if tuple(anchors) != (num_anchors, ROI_DIM):
        raise BadDataError(f"input 2 (anchors) must have shape [{num_anchors}, 4], got"
                           f" {list(anchors)}")
    if tuple(image_info) != (batches, 2):
        raise BadDataError(f"input 3 (image_info) must have shape [{batches}, 2], got"
                           f" {list(image_info)}")
    for i, name in ((4, "height_stride"), (5, "width_stride")):
        if not float_scalar(ctx, i) > 0:
            raise BadDataError(f"input {i} ({name}) must be positive, got {ctx.scalar(i)}")


def _generate_proposals(ctx: KernelContext):
    """(scores, boxes [n, 4], batch index) of the proposals kept, in float32."""
    _prepare_proposal_inputs(ctx)
    nchw = bool(ctx.scalar(10))
    scores = to_nhwc(float_input(ctx, 0), nchw)
    deltas = to_nhwc(float_input(ctx, 1), nchw)
    anchors = float_input(ctx, 2)
    image_info = float_input(ctx, 3)
    height_stride, width_stride = float_scalar(ctx, 4), float_scalar(ctx, 5)
    pre_nms, post_nms = ctx.scalar(6), ctx.scalar(7)
    suppress = hard_suppression(float_scalar(ctx, 8))
    min_size = float_scalar(ctx, 9)
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
    return (width > min_size) & (height > min_size) & (center_x < image_hw[1]) \
        & (center_y < image_hw[0])


_generate_proposals_once = OncePerContext(_generate_proposals)


def _prepare_generate_proposals(ctx: KernelContext) -> list[Shape]:
    count = _generate_proposals_once(ctx)[0].size
    return [(count,), (count, ROI_DIM), (count,)]


@register(Op.GENERATE_PROPOSALS, prepare=_prepare_generate_proposals)
def generate_proposals(ctx: KernelContext) -> tuple[np.ndarray, ...]:
    scores, boxes, batches = _generate_proposals_once(ctx)
    return output_from_float(ctx, 0, scores), output_from_float(ctx, 1, boxes), batches


# ------------------------------------------------------------------------- DETECTION_POSTPROC...

def _prepare_detection_postprocessing(ctx: KernelContext) -> list[Shape]:
    scores = check_rank(ctx, 0, (3,), "scores")
    deltas = check_rank(ctx, 1, (3,), "deltas")
    anchors = check_rank(ctx, 2, (2,), "anchors")
    batches, num_anchors, num_classes = scores
    if deltas[0] != batches or deltas[1] != num_anchors or deltas[2] < ROI_DIM:
        raise BadDataError(f"input 1 (deltas) must have shape [{batches}, {num_anchors},"
                           f" >= 4], got {list(deltas)}")
    if tuple(anchors) != (num_anchors, ROI_DIM):
        raise BadDataError(f"input 2 (anchors) must have shape [{num_anchors}, 4], got"
                           f" {list(anchors)}")
    if num_classes < 2:
        raise BadDataError(f"input 0 (scores) needs at least 2 classes (class 0 is the"
                           f" background), got shape {list(scores)}")
    for i, name in ((3, "scale_y"), (4, "scale_x"), (5, "scale_h"), (6, "scale_w")):
        if not float_scalar(ctx, i) > 0:
            raise BadDataError(f"input {i} ({name}) must be positive, got {ctx.scalar(i)}")
    for i, name in ((11, "score_threshold"), (12, "iou_threshold")):
        if not float_scalar(ctx, i) >= 0:
            raise BadDataError(f"input {i} ({name}) must be >= 0, got {ctx.scalar(i)}")
    detections = ctx.scalar(8)
    if detections <= 0:
        raise BadDataError(f"input 8 (max_detections) must be positive, got {detections}")
    if ctx.scalar(7):
        if ctx.scalar(10) <= 0:
            raise BadDataError(f"input 10 (max_detections_per_class) must be positive, got"
                               f" {ctx.scalar(10)}")
    else:
        if ctx.scalar(9) <= 0:
            raise BadDataError(f"input 9 (max_classes_per_detection) must be positive, got"
                               f" {ctx.scalar(9)}")
        detections *= ctx.scalar(9)
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
    scores = float_input(ctx, 0)
    deltas = float_input(ctx, 1)[..., :ROI_DIM]
    anchors = float_input(ctx, 2)
    scales = np.array([float_scalar(ctx, i) for i in (3, 4, 5, 6)], dtype=F32)
    regular = bool(ctx.scalar(7))
    max_detections, max_classes, max_per_class = ctx.scalar(8), ctx.scalar(9), ctx.scalar(10)
    score_threshold = float_scalar(ctx, 11)
    suppress = hard_suppression(float_scalar(ctx, 12))
    label_offset = 0 if ctx.scalar(13) else 1  # labels count from the background class or not

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
            for cls in range(1, num_classes):
                ids = np.arange(cls, flat.size, num_classes)
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
    return (output_from_float(ctx, 0, out_scores), output_from_float(ctx, 1, out_boxes),
            out_classes, counts)
