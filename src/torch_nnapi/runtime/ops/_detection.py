"""Helpers of the detection kernels: Android's float round trip, box geometry, greedy NMS.

Android's reference computes every detection operation except ROI_ALIGN's quantized path in
float32: quantized inputs are dequantized, the result is computed, then rounded back. These
helpers reproduce that round trip and the exact candidate order of Android's greedy
non-maximum suppression, so that ties are broken as on a device.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

import numpy as np

from ...nnapi.errors import BadDataError, OpFailedError
from ..context import KernelContext
from ..quant import round_half_away

F32 = np.float32
ROI_DIM = 4
Result = TypeVar("Result")


def float_input(ctx: KernelContext, name: str) -> np.ndarray:
    """Input ``name`` as float32: floats widened, quantized values (q - zero_point) * scale."""
    value = ctx.input(name)
    if value.dtype.kind == "f":
        return value.astype(F32, copy=False)
    scale, zero_point = ctx.input_quant(name)
    return cast("np.ndarray", (value.astype(F32) - F32(zero_point)) * F32(scale))


def float_scalar(ctx: KernelContext, name: str) -> np.float32:
    """A FLOAT32 or FLOAT16 scalar input as float32 (the precision Android computes in)."""
    return cast("np.float32", F32(ctx.scalar(name)))


def positive_scalar(ctx: KernelContext, name: str) -> float:
    """Scalar input ``name``, checked to be greater than zero."""
    value = ctx.scalar(name)
    if not value > 0:
        raise BadDataError(f"{ctx.describe_input(name)} must be positive, got {value}")
    return cast("float", value)


def output_from_float(ctx: KernelContext, name: str, values: np.ndarray) -> np.ndarray:
    """float32 results in output ``name``'s type; quantized as round(v / scale + zero_point)."""
    dtype = ctx.output_dtype(name)
    values = np.asarray(values, dtype=F32)
    if dtype.kind == "f":
        return values.astype(dtype)
    scale, zero_point = ctx.output_quant(name)
    with np.errstate(invalid="ignore", over="ignore"):
        q = round_half_away(values / F32(scale) + F32(zero_point))
    limits = np.iinfo(dtype)
    return cast("np.ndarray", np.clip(np.nan_to_num(q), limits.min, limits.max).astype(dtype))


def to_nhwc(array: np.ndarray, nchw: bool) -> np.ndarray:
    return array.transpose(0, 2, 3, 1) if nchw else array


def from_nhwc(array: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(array.transpose(0, 3, 1, 2) if nchw else array)


def check_batch_index(batch_index: np.ndarray, num_batches: int, what: str = "roi") -> None:
    """Each box's batch index must name a batch of the feature map or image list."""
    bad = np.flatnonzero((batch_index < 0) | (batch_index >= num_batches))
    if bad.size:
        k = int(bad[0])
        raise OpFailedError(f"{what} {k} has batch index {int(batch_index[k])}, outside"
                            f" [0, {num_batches})")


def check_corners(boxes: np.ndarray, what: str = "roi") -> None:
    """Boxes [..., 4] as [x1, y1, x2, y2] must have x1 <= x2 and y1 <= y2."""
    flat = boxes.reshape(-1, ROI_DIM)
    bad = np.flatnonzero(~((flat[:, 0] <= flat[:, 2]) & (flat[:, 1] <= flat[:, 3])))
    if bad.size:
        k = int(bad[0])
        raise OpFailedError(f"{what} {k} {flat[k].tolist()} is not a valid box: it needs"
                            " x1 <= x2 and y1 <= y2")


def batch_runs(batch_index: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of equal consecutive batch indices (boxes come grouped)."""
    if batch_index.size == 0:
        return []
    starts = np.flatnonzero(np.r_[True, batch_index[1:] != batch_index[:-1]])
    stops = np.r_[starts[1:], batch_index.size]
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


def iou_with(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over union of one [x1, y1, x2, y2] box with each of ``boxes``, in float32."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    width = np.maximum(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), F32(0))
    height = np.maximum(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]),
                        F32(0))
    intersection = width * height
    with np.errstate(divide="ignore", invalid="ignore"):
        return cast("np.ndarray", intersection / (areas + area - intersection))


def _swap_to_end(rest: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """The survivors of ``rest`` in the order Android leaves them.

    Android drops a candidate by swapping it with the last pending one and examining that one
    in its place; so survivors keep their position, except that each hole is filled by the
    survivors from the far end, last first. The order matters: it breaks ties between equal
    scores in the next round.
    """
    keep = ~drop
    count = int(keep.sum())
    survivors = rest[:count].copy()
    holes = np.flatnonzero(drop[:count])
    fillers = count + np.flatnonzero(keep[count:])[::-1]
    survivors[holes] = rest[fillers]
    return cast("np.ndarray", survivors)


def greedy_nms(scores: np.ndarray, boxes: np.ndarray, candidates: np.ndarray, max_keep: int,
               suppress: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """Greedy non-maximum suppression: repeatedly keeps the best pending candidate.

    ``scores`` and ``boxes`` are indexed by candidate id; ``suppress(iou, ids)`` gets the IoU of
    the pending ``ids`` with the box just kept and returns which of them to drop (soft kernels
    rescore ``scores[ids]`` there). ``max_keep < 0`` means no limit. Returns the kept ids in
    selection order. Each round is vectorized; the rounds themselves are inherently sequential.
    """
    order = np.array(candidates, dtype=np.int64)
    end = order.size
    limit = end if max_keep < 0 else min(max_keep, end)
    kept = 0
    while kept < min(end, limit):
        best = kept + int(np.argmax(scores[order[kept:end]]))  # the first of equal maxima
        order[kept], order[best] = order[best], order[kept]
        rest = order[kept + 1:end]
        survivors = _swap_to_end(rest, suppress(iou_with(boxes[order[kept]], boxes[rest]), rest))
        order[kept + 1:kept + 1 + survivors.size] = survivors
        end = kept + 1 + survivors.size
        kept += 1
    return order[:kept]


def hard_suppression(iou_threshold: np.float32) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Drops candidates overlapping the kept box by ``iou_threshold`` or more."""
    return lambda iou, ids: iou >= iou_threshold


def descending(scores: np.ndarray) -> np.ndarray:
    """Indices ordering ``scores`` from highest to lowest; equal scores keep their order."""
    return np.argsort(-scores, kind="stable")


class OncePerContext(Generic[Result]):
    """Shares a data-dependent result between prepare and execute of one operation run.

    Operations whose output shapes depend on the data must compute their result in prepare;
    execute, called next with the same context, takes it from here instead of recomputing.
    """

    def __init__(self, compute: Callable[[KernelContext], Result]):
        self._compute = compute
        self._local = threading.local()

    def __call__(self, ctx: KernelContext) -> Result:
        entry = getattr(self._local, "entry", None)
        if entry is not None and entry[0] is ctx:
            self._local.entry = None
            return cast("Result", entry[1])
        result = self._compute(ctx)
        self._local.entry = (ctx, result)
        return result
