"""ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT: reading feature maps inside boxes.

ROI_ALIGN averages bilinear samples; its quantized path uses Android's integer arithmetic
(bilinear weights quantized to 1/255, a fixed-point rescale per sampling count). ROI_POOLING
takes the maximum over rounded bins. HEATMAP_MAX_KEYPOINT refines each heatmap's maximum by a
quadratic Taylor fit. Every loop below runs over a small axis (sample or bin offsets, the 3x3
grid) with the work over all boxes vectorized; zero boxes give empty outputs.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError, OpFailedError
from ..context import KernelContext, Shape
from ..quant import (
    ASYMM_8BIT,
    multiply_by_quantized_multiplier,
    quantize_multiplier_smaller_than_one,
    round_half_away,
    saturate,
)
from ..registry import register
from ._common import check_rank
from ._detection import (
    F32,
    ROI_DIM,
    check_batch_index,
    check_corners,
    float_input,
    float_scalar,
    from_nhwc,
    output_from_float,
    positive_scalar,
    to_nhwc,
)

_BOX_SCALE = F32(0.125)
_WEIGHT_SCALE = F32(1.0) / F32(255.0)  # ROI_ALIGN's quantized bilinear weights


# ------------------------------------------------------------------------- ROI_ALIGN / POOLING

def _prepare_roi(ctx: KernelContext) -> list[Shape]:
    """Shared shape checks; the output is [num_rois, out_height, out_width, depth] (or NCHW)."""
    shape = check_rank(ctx, "input", (4,))
    rois = check_rank(ctx, "rois", (2,))
    batch_index = check_rank(ctx, "batch_index", (1,))
    nchw = bool(ctx.scalar("nchw"))
    batches, height, width, depth = _nhwc_dims(shape, nchw)
    if min(batches, height, width, depth) <= 0:
        raise BadDataError(f"{ctx.describe_input('input')} must have non-zero batches, height,"
                           f" width and depth, got shape {list(shape)}")
    if rois[1] != ROI_DIM:
        raise BadDataError(f"{ctx.describe_input('rois')} must have shape [num_rois, 4], got"
                           f" {list(rois)}")
    if batch_index[0] != rois[0]:
        raise BadDataError(f"{ctx.describe_input('batch_index')} must have one entry per roi"
                           f" ({rois[0]}), got shape {list(batch_index)}")
    out_height, out_width = ctx.scalar("out_height"), ctx.scalar("out_width")
    if out_height <= 0 or out_width <= 0:
        raise BadDataError(f"output height and width ({ctx.describe_input('out_height')},"
                           f" {ctx.describe_input('out_width')}) must be positive, got"
                           f" {out_height} and {out_width}")
    for name in ("height_ratio", "width_ratio"):
        positive_scalar(ctx, name)
    if ctx.operation == Op.ROI_ALIGN:
        samples = ctx.scalar("height_samples"), ctx.scalar("width_samples")
        if min(samples) < 0:
            raise BadDataError(f"sampling ratios ({ctx.describe_input('height_samples')},"
                               f" {ctx.describe_input('width_samples')}) must be >= 0"
                               f" (0: adaptive), got {samples[0]} and {samples[1]}")
    if nchw:
        return [(rois[0], depth, out_height, out_width)]
    return [(rois[0], out_height, out_width, depth)]


def _nhwc_dims(shape: Shape, nchw: bool) -> tuple[int, int, int, int]:
    return (shape[0], shape[2], shape[3], shape[1]) if nchw else \
        (shape[0], shape[1], shape[2], shape[3])


def _scaled_rois(ctx: KernelContext, feature_hw: tuple[int, int]) -> np.ndarray:
    """The rois in feature-map coordinates [x1, y1, x2, y2], checked to lie inside the map."""
    height_scale = F32(1.0) / float_scalar(ctx, "height_ratio")
    width_scale = F32(1.0) / float_scalar(ctx, "width_ratio")
    scale = np.array([width_scale, height_scale, width_scale, height_scale], dtype=F32)
    rois = ctx.input("rois")
    if ctx.input_type("input") in ASYMM_8BIT and ctx.operation == Op.ROI_ALIGN:
        scaled = rois.astype(F32) * scale * _BOX_SCALE  # this order, as Android's integer path
    else:
        scaled = float_input(ctx, "rois") * scale
    height, width = feature_hw
    limit = np.array([width, height, width, height], dtype=F32)
    outside = np.flatnonzero(~np.all((scaled >= 0) & (scaled <= limit), axis=1))
    if outside.size:
        k = int(outside[0])
        raise OpFailedError(f"roi {k} {rois[k].tolist()} lies outside the {height}x{width}"
                            " feature map")
    check_corners(scaled)
    return cast("np.ndarray", scaled)


def _axis_samples(position: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear neighbours (low, high) and the fraction toward high, clamped at the far edge."""
    low = np.floor(position)
    fraction = position - low
    low = low.astype(np.int64)
    at_edge = low >= size - 1
    low = np.where(at_edge, size - 1, low)
    high = np.where(at_edge, size - 1, low + 1)
    return low, high, np.where(at_edge, F32(0), fraction).astype(F32)


@register(Op.ROI_ALIGN, prepare=_prepare_roi)
def roi_align(ctx: KernelContext) -> np.ndarray:
    nchw = bool(ctx.scalar("nchw"))
    out_height, out_width = ctx.scalar("out_height"), ctx.scalar("out_width")
    height_samples, width_samples = ctx.scalar("height_samples"), ctx.scalar("width_samples")
    feature = to_nhwc(ctx.input("input"), nchw)
    batches, height, width, depth = feature.shape
    num_rois = ctx.input_shape("rois")[0]
    if num_rois == 0:
        empty = np.zeros((0, out_height, out_width, depth), ctx.output_dtype())
        return from_nhwc(empty, nchw)
    batch_index = ctx.input("batch_index")
    check_batch_index(batch_index, batches)
    rois = _scaled_rois(ctx, (height, width))
    quantized = ctx.input_type("input") in ASYMM_8BIT
    if not quantized:
        feature = feature.astype(F32, copy=False)

    # Per roi: bin size, number of samples per bin along each axis, and the sample spacing.
    roi_width = np.maximum(rois[:, 2] - rois[:, 0], F32(1))
    roi_height = np.maximum(rois[:, 3] - rois[:, 1], F32(1))
    width_step = roi_width / F32(out_width)
    height_step = roi_height / F32(out_height)
    width_ratio = _sampling_ratio(width_samples, width_step)
    height_ratio = _sampling_ratio(height_samples, height_step)
    width_bin = width_step / width_ratio.astype(F32)
    height_bin = height_step / height_ratio.astype(F32)
    # Where each output bin starts, then the first sample's centre: [num_rois, out_w or out_h].
    x_first = (width_step[:, None] * np.arange(out_width, dtype=F32) + rois[:, 0:1]) \
        + (width_bin / F32(2))[:, None]
    y_first = (height_step[:, None] * np.arange(out_height, dtype=F32) + rois[:, 1:2]) \
        + (height_bin / F32(2))[:, None]

    b = batch_index[:, None, None]
    uniform = np.all(width_ratio == width_ratio[0]) and np.all(height_ratio == height_ratio[0])
    acc = np.zeros((num_rois, out_height, out_width, depth), np.int64 if quantized else F32)
    zero_point = ctx.input_quant("input")[1]
    for y_index in range(int(height_ratio.max())):
        y_low, y_high, dy = _axis_samples(y_first + height_bin[:, None] * F32(y_index), height)
        for x_index in range(int(width_ratio.max())):
            x_low, x_high, dx = _axis_samples(x_first + width_bin[:, None] * F32(x_index), width)
            fx, fy = dx[:, None, :], dy[:, :, None]
            weights = ((F32(1) - fx) * (F32(1) - fy), fx * (F32(1) - fy),
                       (F32(1) - fx) * fy, fx * fy)
            corners = ((y_low, x_low), (y_low, x_high), (y_high, x_low), (y_high, x_high))
            sample: np.ndarray | None = None
            for weight, (ys, xs) in zip(weights, corners, strict=True):
                values = feature[b, ys[:, :, None], xs[:, None, :]]
                if quantized:
                    weight_q = round_half_away(weight / _WEIGHT_SCALE).astype(np.int64)
                    term = weight_q[..., None] * (values.astype(np.int64) - zero_point)
                else:
                    term = weight[..., None] * values
                sample = term if sample is None else sample + term
            if not uniform:
                inside = (y_index < height_ratio) & (x_index < width_ratio)
                sample = np.where(inside[:, None, None, None], cast("np.ndarray", sample), 0)
            acc += sample
    count = height_ratio * width_ratio
    if quantized:
        out = _requantize_roi_align(ctx, acc, count)
    else:
        out = (acc / count.astype(F32)[:, None, None, None]).astype(ctx.output_dtype())
    return from_nhwc(out, nchw)


def _sampling_ratio(requested: int, step: np.ndarray) -> np.ndarray:
    """Samples per bin along one axis: as requested, or ceil(bin size) when 0 (adaptive)."""
    if requested > 0:
        return np.full(step.shape, requested, np.int64)
    return cast("np.ndarray", np.ceil(step).astype(np.int64))


def _requantize_roi_align(ctx: KernelContext, acc: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Averages and rescales the integer sums; the multiplier depends on each roi's count."""
    (in_scale, _), (out_scale, out_zero_point) = ctx.input_quant("input"), ctx.output_quant()
    out = np.empty(acc.shape, ctx.output_dtype())
    for samples in np.unique(count):
        real = (F32(in_scale) * _WEIGHT_SCALE / F32(out_scale)) / F32(samples)
        try:
            multiplier, right_shift = quantize_multiplier_smaller_than_one(float(real))
        except BadDataError as e:
            raise OpFailedError(f"cannot rescale to the output: {e}") from None
        rows = count == samples
        scaled = multiply_by_quantized_multiplier(acc[rows], multiplier, -right_shift)
        out[rows] = saturate(scaled + out_zero_point, out.dtype)
    return out


@register(Op.ROI_POOLING, prepare=_prepare_roi)
def roi_pooling(ctx: KernelContext) -> np.ndarray:
    nchw = bool(ctx.scalar("nchw"))
    out_height, out_width = ctx.scalar("out_height"), ctx.scalar("out_width")
    feature = to_nhwc(ctx.input("input"), nchw)
    batches, height, width, depth = feature.shape
    num_rois = ctx.input_shape("rois")[0]
    if num_rois == 0:
        return from_nhwc(np.zeros((0, out_height, out_width, depth), feature.dtype), nchw)
    batch_index = ctx.input("batch_index")
    check_batch_index(batch_index, batches)
    corners = round_half_away(_scaled_rois(ctx, (height, width))).astype(np.int64)
    y_start, y_stop = _pooling_bins(corners[:, 1], corners[:, 3], out_height, height)
    x_start, x_stop = _pooling_bins(corners[:, 0], corners[:, 2], out_width, width)

    # Running maximum over the offsets inside each bin; bins are at most a few pixels wide.
    lowest = -np.inf if feature.dtype.kind == "f" else np.iinfo(feature.dtype).min
    best = np.full((num_rois, out_height, out_width, depth), lowest, feature.dtype)
    seen = np.zeros((num_rois, out_height, out_width, 1), bool)
    b = batch_index[:, None, None]
    for dy in range(int((y_stop - y_start).max(initial=0))):
        rows = y_start + dy
        row_ok = rows < y_stop
        rows = np.minimum(rows, height - 1)
        for dx in range(int((x_stop - x_start).max(initial=0))):
            cols = x_start + dx
            inside = (row_ok[:, :, None] & (cols < x_stop)[:, None, :])[..., None]
            values = feature[b, rows[:, :, None], np.minimum(cols, width - 1)[:, None, :]]
            best = np.where(inside, np.maximum(best, values), best)
            seen |= inside
    # An empty bin (at the map's far edge) reads as the zero point, as Android's does.
    empty = ctx.input_quant("input")[1] if ctx.input_type("input") in ASYMM_8BIT else 0
    return from_nhwc(np.where(seen, best, np.array(empty, feature.dtype)), nchw)


def _pooling_bins(start: np.ndarray, end: np.ndarray, bins: int,
                  size: int) -> tuple[np.ndarray, np.ndarray]:
    """[start, stop) of each bin along one axis: floor and ceil of even splits, clamped."""
    step = np.maximum(end - start + 1, 1).astype(F32) / F32(bins)
    k = np.arange(bins, dtype=F32)
    origin = start.astype(F32)[:, None]
    lo = np.floor(step[:, None] * k + origin).astype(np.int64)
    hi = np.ceil(step[:, None] * (k + F32(1)) + origin).astype(np.int64)
    return np.minimum(lo, size), np.minimum(hi, size)


# ------------------------------------------------------------------------- HEATMAP_MAX_KEYPOINT

def _prepare_heatmap(ctx: KernelContext) -> list[Shape]:
    shape = check_rank(ctx, "heatmaps", (4,))
    boxes = check_rank(ctx, "boxes", (2,))
    nchw = bool(ctx.scalar("nchw"))
    num_boxes, size, other, keypoints = _nhwc_dims(shape, nchw)
    if size != other:
        raise BadDataError(f"{ctx.describe_input('heatmaps')} must be square, got shape"
                           f" {list(shape)}")
    if size < 2:
        raise BadDataError(f"{ctx.describe_input('heatmaps')} must be at least 2x2, got shape"
                           f" {list(shape)}")
    if tuple(boxes) != (num_boxes, ROI_DIM):
        raise BadDataError(f"{ctx.describe_input('boxes')} must have shape [{num_boxes}, 4], got"
                           f" {list(boxes)}")
    return [(num_boxes, keypoints), (num_boxes, keypoints, 2)]


# Android's invertibility tolerance of the Taylor fit, per heatmap type.
_FIT_TOLERANCE = {OperandType.TENSOR_FLOAT16: F32(1e-3)}


@register(Op.HEATMAP_MAX_KEYPOINT, prepare=_prepare_heatmap)
def heatmap_max_keypoint(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray]:
    heatmaps = to_nhwc(float_input(ctx, "heatmaps"), bool(ctx.scalar("nchw")))
    boxes = float_input(ctx, "boxes")
    check_corners(boxes, "box")
    num_boxes, size, _, keypoints = heatmaps.shape
    flat = heatmaps.reshape(num_boxes, size * size, keypoints)
    index = np.argmax(np.where(np.isnan(flat), -np.inf, flat), axis=1)  # first maximum
    max_score = np.maximum(np.take_along_axis(flat, index[:, None, :], axis=1)[:, 0],
                           F32(-np.finfo(F32).max))
    row, col = index // size, index % size

    # The 3x3 neighbourhood of each maximum, mirrored at the border: grid[dy][dx].
    def mirrored(i: np.ndarray) -> np.ndarray:
        return np.where(i < 0, 1, np.where(i >= size, size - 2, i))

    n = np.arange(num_boxes)[:, None]
    k = np.arange(keypoints)[None, :]
    grid = [[flat[n, mirrored(row + dy) * size + mirrored(col + dx), k] for dx in (-1, 0, 1)]
            for dy in (-1, 0, 1)]
    tolerance = _FIT_TOLERANCE.get(ctx.input_type("heatmaps"), F32(1e-5))
    delta_x, delta_y, score = _taylor_maximum(grid, max_score, tolerance)

    x1, y1, x2, y2 = (boxes[:, i:i + 1] for i in range(ROI_DIM))
    x_rel = (col.astype(F32) + delta_x + F32(0.5)) / F32(size)
    y_rel = (row.astype(F32) + delta_y + F32(0.5)) / F32(size)
    points = np.stack([x_rel * (x2 - x1) + x1, y_rel * (y2 - y1) + y1], axis=-1)
    return output_from_float(ctx, "scores", score), output_from_float(ctx, "keypoints", points)


def _taylor_maximum(g: list[list[np.ndarray]], max_score: np.ndarray, tolerance: np.float32) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solves the 2nd order Taylor expansion around each maximum for its sub-pixel offset.

    Offsets longer than 1.5 pixels are scaled back; where the Hessian is (nearly) singular the
    integer maximum is kept.
    """
    two = F32(2)
    b0 = -(g[1][2] - g[1][0]) / two
    b1 = -(g[2][1] - g[0][1]) / two
    a00 = g[1][0] - two * g[1][1] + g[1][2]
    a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / F32(4)
    a11 = g[0][1] - two * g[1][1] + g[2][1]
    cross = a00 * a11
    det = cross - a01 * a01
    with np.errstate(divide="ignore", invalid="ignore"):
        solvable = ~(np.abs(det) < tolerance + tolerance * cross)
        dx = np.where(solvable, (a11 * b0 - a01 * b1) / det, F32(0))
        dy = np.where(solvable, (a00 * b1 - a01 * b0) / det, F32(0))
        longest = np.maximum(np.abs(dx), np.abs(dy))
        shrink = np.where(longest > F32(1.5), F32(1.5) / longest, F32(1))
    dx, dy = dx * shrink, dy * shrink
    fitted = g[1][1] - b0 * dx - b1 * dy + \
        ((a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) / two
    return dx, dy, np.where(solvable, fitted, max_score).astype(F32)
