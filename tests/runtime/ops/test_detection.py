"""AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS, DETECTION_POSTPROCESSING.

The references below are written plainly (loops, float64, dictionaries of pending boxes) and
assume distinct scores; tie-breaking is tested separately against Android's candidate order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, Model, OperationType
from torch_nnapi.nnapi import OperandType as T
from torch_nnapi.nnapi.errors import OpFailedError
from torch_nnapi.runtime import Compilation
from torch_nnapi.runtime.ops import _detection, detection

from ._detection_support import quantize
from ._single_op import build, const, feed, out, run

Op = OperationType
RNG = np.random.default_rng(11)
F32_TYPES = {"f32": (T.TENSOR_FLOAT32, np.float32, T.FLOAT32),
             "f16": (T.TENSOR_FLOAT16, np.float16, T.FLOAT16)}


# ------------------------------------------------------------------------- references

def iou(a, b) -> float:
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def greedy_reference(scores: dict, boxes, max_keep, factor, drop_below):
    """Keeps the best pending box, rescales the others by factor(iou), drops low scores."""
    pending = dict(scores)
    kept: list[tuple[int, float]] = []
    while pending and (max_keep < 0 or len(kept) < max_keep):
        best = max(pending, key=pending.__getitem__)
        kept.append((best, pending.pop(best)))
        for i in list(pending):
            pending[i] *= factor(iou(boxes[i], boxes[best]))
            if drop_below(pending[i]):
                del pending[i]
    return kept


def transform_reference(box, delta, image_hw):
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    cx, cy = x1 + w / 2 + delta[0] * w, y1 + h / 2 + delta[1] * h
    w, h = w * math.exp(delta[2]), h * math.exp(delta[3])
    clip = [image_hw[1], image_hw[0]] * 2
    return [min(max(v, 0), c) for v, c in zip([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2],
                                               clip, strict=True)]


def random_boxes(count, size=40.0):
    x1, y1 = RNG.uniform(0, size, count), RNG.uniform(0, size, count)
    return np.stack([x1, y1, x1 + RNG.uniform(2, size / 2, count),
                     y1 + RNG.uniform(2, size / 2, count)], axis=1).astype(np.float32)


# ------------------------------------------------------------------------- AXIS_ALIGNED_BBOX_...

def _bbox_inputs(rois, deltas, batch, image_info, kind="f32"):
    if kind == "q":
        return ([feed(T.TENSOR_QUANT16_ASYMM, quantize(rois, 0.125, 0, np.uint16), 0.125, 0),
                 feed(T.TENSOR_QUANT8_ASYMM, quantize(deltas, 0.05, 128, np.uint8), 0.05, 128),
                 feed(T.TENSOR_INT32, np.asarray(batch, np.int32)),
                 feed(T.TENSOR_QUANT16_ASYMM, quantize(image_info, 0.125, 0, np.uint16), 0.125, 0)],
                [out(T.TENSOR_QUANT16_ASYMM, (0, 0), 0.125, 0)])
    tensor, dtype, _ = F32_TYPES[kind]
    return ([feed(tensor, rois.astype(dtype)), feed(tensor, deltas.astype(dtype)),
             feed(T.TENSOR_INT32, np.asarray(batch, np.int32)),
             feed(tensor, image_info.astype(dtype))], [out(tensor, (0, 0))])


def test_bbox_transform_matches_reference_and_clips():
    rois = random_boxes(6)
    deltas = RNG.uniform(-1, 1, (6, 12)).astype(np.float32)
    batch = [0, 0, 1, 2, 2, 1]
    image_info = np.array([[30, 35], [64, 64], [20, 50]], np.float32)
    got = run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *_bbox_inputs(rois, deltas, batch, image_info))[0]
    want = [[transform_reference(rois[r], deltas[r, 4 * c:4 * c + 4], image_info[batch[r]])
             for c in range(3)] for r in range(6)]
    np.testing.assert_allclose(got.reshape(6, 3, 4), want, rtol=1e-5, atol=1e-4)
    assert got.min() == 0 and (got[:, 2::4] <= image_info[batch, 1:2]).all()


def test_bbox_transform_quantized_and_float16_round_trip():
    rois = random_boxes(4)
    deltas = RNG.uniform(-0.5, 0.5, (4, 8)).astype(np.float32)
    image_info = np.array([[64, 64]], np.float32)
    want = run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *_bbox_inputs(rois, deltas, [0] * 4,
                                                             image_info))[0]
    half = run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *_bbox_inputs(rois, deltas, [0] * 4, image_info,
                                                             "f16"))[0]
    np.testing.assert_allclose(half.astype(np.float32), want, atol=0.1)
    quant = run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *_bbox_inputs(rois, deltas, [0] * 4, image_info,
                                                              "q"))[0]
    assert quant.dtype == np.uint16
    np.testing.assert_allclose(quant * 0.125, want, atol=1.5)


def test_bbox_transform_zero_rois_and_bad_batch_index():
    inputs, outputs = _bbox_inputs(np.zeros((0, 4), np.float32), np.zeros((0, 8), np.float32),
                                   [], np.array([[10, 10]], np.float32))
    inputs[0].dims, inputs[1].dims, inputs[2].dims = (0, 4), (0, 8), (0,)
    assert run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, inputs, outputs)[0].shape == (0, 8)
    with pytest.raises(OpFailedError, match="batch index 1"):
        run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *_bbox_inputs(
            random_boxes(1), np.zeros((1, 4), np.float32), [1], np.array([[9, 9]], np.float32)))
    with pytest.raises(BadDataError, match="num_classes \\* 4"):
        run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *_bbox_inputs(
            random_boxes(1), np.zeros((1, 6), np.float32), [0], np.array([[9, 9]], np.float32)))


# ------------------------------------------------------------------------- BOX_WITH_NMS_LIMIT

HARD, LINEAR, GAUSSIAN = 0, 1, 2


def nms_limit_reference(scores, boxes, batch, score_thr, max_det, kernel, iou_thr, sigma,
                        nms_thr):
    """Rows of (score, box, class, batch) as BOX_WITH_NMS_LIMIT documents them."""
    def factor(v):
        if kernel == GAUSSIAN:
            return math.exp(-v * v / sigma)
        return 1.0 if v < iou_thr else (0.0 if kernel == HARD else 1 - v)

    rows = []
    for b in dict.fromkeys(batch):
        members = [r for r in range(len(batch)) if batch[r] == b]
        found = []
        for c in range(1, scores.shape[1]):
            pending = {r: float(scores[r, c]) for r in members if scores[r, c] > score_thr}
            class_boxes = {r: boxes[r, 4 * c:4 * c + 4] for r in members}
            for r, s in greedy_reference(pending, class_boxes, max_det, factor,
                                         lambda s: s < nms_thr):
                found.append((s, list(class_boxes[r]), c, b))
        found.sort(key=lambda row: -row[0])
        found = found[:max_det] if max_det >= 0 else found
        rows += sorted(found, key=lambda row: (row[2], -row[0]))
    return rows


def _nms_inputs(scores, boxes, batch, params, kind="f32"):
    score_thr, max_det, kernel, iou_thr, sigma, nms_thr = params
    if kind == "q8":
        inputs = [feed(T.TENSOR_QUANT8_ASYMM, quantize(scores, 0.01, 0, np.uint8), 0.01, 0),
                  feed(T.TENSOR_QUANT16_ASYMM, quantize(boxes, 0.125, 0, np.uint16), 0.125, 0)]
        scalar = T.FLOAT32
        outputs = [out(T.TENSOR_QUANT8_ASYMM, (0,), 0.01, 0),
                   out(T.TENSOR_QUANT16_ASYMM, (0, 0), 0.125)]
    else:
        tensor, dtype, scalar = F32_TYPES[kind]
        inputs = [feed(tensor, scores.astype(dtype)), feed(tensor, boxes.astype(dtype))]
        outputs = [out(tensor, (0,)), out(tensor, (0, 0))]
    inputs += [feed(T.TENSOR_INT32, np.asarray(batch, np.int32)), const(scalar, score_thr),
               const(T.INT32, max_det), const(T.INT32, kernel), const(scalar, iou_thr),
               const(scalar, sigma), const(scalar, nms_thr)]
    return inputs, outputs + [out(T.TENSOR_INT32, (0,)), out(T.TENSOR_INT32, (0,))]


def _overlapping_detections(num_rois, num_classes):
    """Boxes in clusters, so that suppression has work to do; distinct scores."""
    centres = RNG.uniform(10, 40, (num_rois, 1, 2))
    jitter = RNG.uniform(-3, 3, (num_rois, num_classes, 2))
    sizes = RNG.uniform(6, 12, (num_rois, num_classes, 2))
    low = centres + jitter - sizes / 2
    boxes = np.concatenate([low, low + sizes], axis=-1).reshape(num_rois, -1)
    scores = RNG.permutation(num_rois * num_classes).reshape(num_rois, num_classes)
    return (0.05 + 0.9 * scores / scores.max()).astype(np.float32), boxes.astype(np.float32)


@pytest.mark.parametrize("kernel", [HARD, LINEAR, GAUSSIAN])
@pytest.mark.parametrize("max_det", [-1, 3])
def test_box_with_nms_limit_matches_reference(kernel, max_det):
    scores, boxes = _overlapping_detections(12, 3)
    batch = [0] * 5 + [3] * 7
    params = (0.2, max_det, kernel, 0.3, 0.6, 0.25)
    out_scores, out_boxes, classes, batches = run(Op.BOX_WITH_NMS_LIMIT,
                                                  *_nms_inputs(scores, boxes, batch, params))
    want = nms_limit_reference(scores, boxes, batch, *params)
    assert len(want) > 2
    np.testing.assert_allclose(out_scores, [r[0] for r in want], rtol=1e-5)
    np.testing.assert_array_equal(out_boxes, np.array([r[1] for r in want], np.float32))
    np.testing.assert_array_equal(classes, [r[2] for r in want])
    np.testing.assert_array_equal(batches, [r[3] for r in want])


@pytest.mark.parametrize("kind", ["f16", "q8"])
def test_box_with_nms_limit_other_types_follow_float32(kind):
    scores, boxes = _overlapping_detections(8, 3)
    boxes = np.round(boxes * 8) / 8  # exact in both float16 and 1/8 px units
    params = (0.2, -1, LINEAR, 0.3, 0.5, 0.25)
    want = run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores, boxes, [0] * 8, params))
    got = run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores, boxes, [0] * 8, params, kind))
    scale = 0.01 if kind == "q8" else 1.0
    np.testing.assert_allclose(got[0].astype(np.float32) * scale, want[0], atol=0.011)
    np.testing.assert_allclose(got[1].astype(np.float32) * (0.125 if kind == "q8" else 1),
                               want[1])
    np.testing.assert_array_equal(got[2], want[2])


def test_equal_scores_are_picked_in_android_candidate_order():
    # Box 1 overlaps box 0 and is dropped: Android swaps the last pending box (3) into its
    # place, so of the equal scores box 3 is picked before box 2.
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 9], [20, 20, 30, 30], [40, 40, 50, 50]],
                     np.float32)
    scores = np.array([[0, 0.9], [0, 0.8], [0, 0.8], [0, 0.8]], np.float32)
    out = run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores, np.tile(boxes, (1, 2)), [0] * 4,
                                                  (0.1, -1, HARD, 0.5, 1.0, 0.1)))
    np.testing.assert_array_equal(out[1], boxes[[0, 3, 2]])


def test_swap_partition_matches_android_loop():
    """The vectorized survivor order equals a literal run of Android's swap-to-end loop."""
    for _ in range(50):
        n = int(RNG.integers(1, 12))
        drop = RNG.random(n) < 0.5
        rest = np.arange(n) * 10
        order, end, i = list(rest), n, 0
        while i < end:
            if drop[order[i] // 10]:
                end -= 1
                order[i], order[end] = order[end], order[i]
            else:
                i += 1
        np.testing.assert_array_equal(_detection._swap_to_end(rest, drop), order[:end])


def test_box_with_nms_limit_output_shapes_follow_the_data():
    scores, boxes = _overlapping_detections(6, 2)
    inputs, outputs = _nms_inputs(scores, boxes, [0] * 6, (0.5, -1, HARD, 0.4, 1.0, 0.3))
    for i in (0, 1, 2):
        inputs[i].dims = (0,) * (1 if i == 2 else 2)
    compilation = Compilation(build(Op.BOX_WITH_NMS_LIMIT, inputs, outputs))
    counts = []
    for data in (scores, scores * 0.1):
        result = compilation.run([data, boxes, np.zeros(6, np.int32)]).outputs
        count = len(result[0])
        assert [r.shape for r in result] == [(count,), (count, 4), (count,), (count,)]
        counts.append(count)
    assert counts[0] > 0 and counts[1] == 0  # scaled down, every score is below 0.5


def test_box_with_nms_limit_computes_once_per_execution(monkeypatch):
    calls = []
    compute = detection._box_with_nms_once._compute

    def counted(ctx):
        result = compute(ctx)  # raises ValueNotKnown at compile time, before finishing
        calls.append(1)
        return result

    monkeypatch.setattr(detection._box_with_nms_once, "_compute", counted)
    scores, boxes = _overlapping_detections(5, 2)
    run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores, boxes, [0] * 5,
                                            (0.1, -1, HARD, 0.4, 1.0, 0.3)))
    assert len(calls) == 1


def test_box_with_nms_limit_rejects_bad_parameters():
    scores, boxes = _overlapping_detections(3, 2)
    with pytest.raises(BadDataError, match="nms_kernel"):
        run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores, boxes, [0] * 3, (0.1, -1, 3, .4, 1, .3)))
    with pytest.raises(BadDataError, match="sigma"):
        run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores, boxes, [0] * 3, (0.1, -1, 2, .4, 0, .3)))
    with pytest.raises(BadDataError, match="at least 2 classes"):
        run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores[:, :1], boxes[:, :4], [0] * 3,
                                                (0.1, -1, 0, .4, 1, .3)))
    bad = boxes.copy()
    bad[1, 4:8] = [5, 5, 1, 1]
    with pytest.raises(OpFailedError, match="x1 <= x2"):
        run(Op.BOX_WITH_NMS_LIMIT, *_nms_inputs(scores, bad, [0] * 3, (0.1, -1, 0, .4, 1, .3)))


def test_zero_detections_flow_into_roi_align():
    """BOX_WITH_NMS_LIMIT -> ROI_ALIGN with data-dependent, possibly zero, box counts."""
    m = Model()
    scores = m.add_operand(T.TENSOR_FLOAT32, (0, 2))
    rois = m.add_operand(T.TENSOR_FLOAT32, (0, 8))
    batch = m.add_operand(T.TENSOR_INT32, (0,))
    params = [m.add_scalar(t, v) for t, v in ((T.FLOAT32, 0.3), (T.INT32, -1), (T.INT32, 0),
                                              (T.FLOAT32, 0.4), (T.FLOAT32, 1.0),
                                              (T.FLOAT32, 0.3))]
    kept = [m.add_operand(T.TENSOR_FLOAT32, (0,)), m.add_operand(T.TENSOR_FLOAT32, (0, 0)),
            m.add_operand(T.TENSOR_INT32, (0,)), m.add_operand(T.TENSOR_INT32, (0,))]
    m.add_operation(Op.BOX_WITH_NMS_LIMIT, [scores, rois, batch] + params, kept)
    feature = m.add_operand(T.TENSOR_FLOAT32, (1, 4, 4, 1))
    pooled = m.add_operand(T.TENSOR_FLOAT32, (0, 2, 2, 1))
    align = [m.add_scalar(T.INT32, 2), m.add_scalar(T.INT32, 2), m.add_scalar(T.FLOAT32, 2.0),
             m.add_scalar(T.FLOAT32, 2.0), m.add_scalar(T.INT32, 2), m.add_scalar(T.INT32, 2),
             m.add_scalar(T.BOOL, False)]
    m.add_operation(Op.ROI_ALIGN, [feature, kept[1], kept[3]] + align, [pooled])
    m.identify_inputs_and_outputs([scores, rois, batch, feature], [kept[0], pooled])
    compilation = Compilation(m.finish())
    image = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    boxes = np.array([[1, 1, 8, 8, 0, 0, 8, 8], [0, 0, 4, 4, 0, 0, 2, 2]], np.float32)
    for class_scores, count in (([0.1, 0.2], 0), ([0.8, 0.9], 2)):
        s = np.array([[0.5, class_scores[0]], [0.5, class_scores[1]]], np.float32)
        out_scores, out_pooled = compilation.run([s, boxes, np.zeros(2, np.int32), image]).outputs
        assert out_pooled.shape == (count, 2, 2, 1) and out_scores.shape == (count,)


# ------------------------------------------------------------------------- GENERATE_PROPOSALS

def proposals_reference(scores, deltas, anchors, image_info, strides, pre, post, iou_thr,
                        min_size):
    """NHWC scores [b, h, w, a], deltas [b, h, w, a * 4] -> (score, box, batch) rows."""
    batches, height, width, num_anchors = scores.shape
    rows = []
    for b in range(batches):
        candidates = []
        for y in range(height):
            for x in range(width):
                for a in range(num_anchors):
                    shift = [x * strides[1], y * strides[0]] * 2
                    box = transform_reference(anchors[a] + shift,
                                              deltas[b, y, x, 4 * a:4 * a + 4], image_info[b])
                    candidates.append((float(scores[b, y, x, a]), box))
        candidates.sort(key=lambda c: -c[0])
        if pre > 0:
            candidates = candidates[:pre]
        boxes, pending = {}, {}
        for k, (s, box) in enumerate(candidates):
            w, h = box[2] - box[0], box[3] - box[1]
            if w > min_size and h > min_size and box[0] + w / 2 < image_info[b][1] \
                    and box[1] + h / 2 < image_info[b][0]:
                boxes[k], pending[k] = box, s
        kept = greedy_reference(pending, boxes, post if post > 0 else -1,
                                lambda v: 0.0 if v >= iou_thr else 1.0, lambda s: s == 0)
        rows += [(s, boxes[k], b) for k, s in kept]
    return rows


def _proposal_inputs(scores, deltas, anchors, image_info, params, nchw=False, kind="f32"):
    if nchw:
        scores, deltas = scores.transpose(0, 3, 1, 2), deltas.transpose(0, 3, 1, 2)
    if kind == "q8":
        inputs = [feed(T.TENSOR_QUANT8_ASYMM, quantize(scores, 0.005, 0, np.uint8), 0.005, 0),
                  feed(T.TENSOR_QUANT8_ASYMM, quantize(deltas, 0.01, 128, np.uint8), 0.01, 128),
                  feed(T.TENSOR_QUANT16_SYMM, quantize(anchors, 0.125, 0, np.int16), 0.125),
                  feed(T.TENSOR_QUANT16_ASYMM, quantize(image_info, 0.125, 0, np.uint16), 0.125)]
        scalar = T.FLOAT32
        outputs = [out(T.TENSOR_QUANT8_ASYMM, (0,), 0.005, 0),
                   out(T.TENSOR_QUANT16_ASYMM, (0, 0), 0.125)]
    else:
        tensor, dtype, scalar = F32_TYPES[kind]
        inputs = [feed(tensor, x.astype(dtype)) for x in (scores, deltas, anchors, image_info)]
        outputs = [out(tensor, (0,)), out(tensor, (0, 0))]
    h_stride, w_stride, pre, post, iou_thr, min_size = params
    inputs += [const(scalar, h_stride), const(scalar, w_stride), const(T.INT32, pre),
               const(T.INT32, post), const(scalar, iou_thr), const(scalar, min_size),
               const(T.BOOL, nchw)]
    return inputs, outputs + [out(T.TENSOR_INT32, (0,))]


def _proposal_data(batches=2, height=4, width=5, num_anchors=3):
    scores = ((1 + RNG.permutation(batches * height * width * num_anchors))
              .reshape(batches, height, width, num_anchors) / 200.0).astype(np.float32)
    deltas = RNG.uniform(-0.4, 0.4, (batches, height, width, num_anchors * 4)).astype(np.float32)
    half = RNG.uniform(2, 8, (num_anchors, 2))
    anchors = np.concatenate([-half, half], axis=1).astype(np.float32)
    image_info = np.array([[30, 38], [25, 40]][:batches], np.float32)
    return scores, deltas, anchors, image_info


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize("limits", [(-1, -1), (20, 6), (0, 0)])
def test_generate_proposals_matches_reference(nchw, limits):
    scores, deltas, anchors, image_info = _proposal_data()
    params = (8.0, 8.0, *limits, 0.4, 2.0)
    out_scores, out_boxes, out_batch = run(Op.GENERATE_PROPOSALS, *_proposal_inputs(
        scores, deltas, anchors, image_info, params, nchw))
    pre, post = limits
    want = proposals_reference(scores, deltas, anchors, image_info, (8.0, 8.0), pre, post, 0.4,
                               2.0)
    assert len(want) > 4
    np.testing.assert_allclose(out_scores, [r[0] for r in want])
    np.testing.assert_allclose(out_boxes, [r[1] for r in want], rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(out_batch, [r[2] for r in want])


@pytest.mark.parametrize("kind", ["f16", "q8"])
def test_generate_proposals_other_types_follow_float32(kind):
    scores, deltas, anchors, image_info = _proposal_data(batches=1)
    deltas = np.round(deltas * 50) / 50
    params = (8.0, 8.0, -1, 5, 0.4, 2.0)
    want = run(Op.GENERATE_PROPOSALS, *_proposal_inputs(scores, deltas, anchors, image_info,
                                                        params))
    got = run(Op.GENERATE_PROPOSALS, *_proposal_inputs(scores, deltas, anchors, image_info,
                                                       params, kind=kind))
    scales = (0.005, 0.125) if kind == "q8" else (1, 1)
    np.testing.assert_allclose(got[0].astype(np.float32) * scales[0], want[0], atol=0.003)
    np.testing.assert_allclose(got[1].astype(np.float32) * scales[1], want[1], atol=0.2)


def test_generate_proposals_can_keep_nothing():
    scores, deltas, anchors, image_info = _proposal_data(batches=1)
    out = run(Op.GENERATE_PROPOSALS, *_proposal_inputs(scores, deltas, anchors, image_info,
                                                       (8.0, 8.0, -1, -1, 0.4, 100.0)))
    assert [o.shape for o in out] == [(0,), (0, 4), (0,)]


def test_generate_proposals_rejects_mismatched_shapes():
    scores, deltas, anchors, image_info = _proposal_data(batches=1)
    with pytest.raises(BadDataError, match="input 1 \\(deltas\\) must have shape"):
        run(Op.GENERATE_PROPOSALS, *_proposal_inputs(scores, deltas[..., :8], anchors,
                                                     image_info, (8.0, 8.0, -1, -1, 0.4, 1.0)))
    with pytest.raises(BadDataError, match="height_stride"):
        run(Op.GENERATE_PROPOSALS, *_proposal_inputs(scores, deltas, anchors, image_info,
                                                     (0.0, 8.0, -1, -1, 0.4, 1.0)))


# ------------------------------------------------------------------------- DETECTION_POSTPROC...

def decode_reference(delta, anchor, scales):
    cy = anchor[0] + anchor[2] * delta[0] / scales[0]
    cx = anchor[1] + anchor[3] * delta[1] / scales[1]
    h = anchor[2] * math.exp(delta[2] / scales[2])
    w = anchor[3] * math.exp(delta[3] / scales[3])
    return [cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2]


def postprocess_reference(scores, deltas, anchors, scales, regular, max_det, max_classes,
                          per_class, score_thr, iou_thr, background_in_label):
    hard = (lambda v: 0.0 if v >= iou_thr else 1.0, lambda s: s == 0)
    results = []
    for b in range(scores.shape[0]):
        boxes = [decode_reference(deltas[b, a], anchors[a], scales)
                 for a in range(scores.shape[1])]
        rows = []
        if regular:
            for c in range(1, scores.shape[2]):
                pending = {a: float(scores[b, a, c]) for a in range(len(boxes))
                           if scores[b, a, c] > score_thr}
                rows += [(s, a, c) for a, s in greedy_reference(pending, boxes, per_class, *hard)]
            rows = sorted(rows, key=lambda r: -r[0])[:max_det]
        else:
            best = {a: float(scores[b, a, 1:].max()) for a in range(len(boxes))
                    if scores[b, a, 1:].max() > score_thr}
            for a, _ in greedy_reference(best, boxes, max_det, *hard):
                ranked = sorted(range(1, scores.shape[2]), key=lambda c: -scores[b, a, c])
                rows += [(float(scores[b, a, c]), a, c) for c in ranked[:max_classes]]
        offset = 0 if background_in_label else 1
        results.append([(s, boxes[a], c - offset) for s, a, c in rows])
    return results


@pytest.mark.parametrize("regular", [True, False])
@pytest.mark.parametrize("background_in_label", [True, False])
def test_detection_postprocessing_matches_reference(regular, background_in_label):
    batches, num_anchors, num_classes = 2, 10, 4
    scores = (RNG.permutation(batches * num_anchors * num_classes)
              .reshape(batches, num_anchors, num_classes) / 80.0).astype(np.float32)
    deltas = RNG.uniform(-1, 1, (batches, num_anchors, 6)).astype(np.float32)
    centres = RNG.uniform(0.3, 0.7, (num_anchors, 2))
    anchors = np.concatenate([centres, RNG.uniform(0.1, 0.3, (num_anchors, 2))], axis=1)
    anchors = anchors.astype(np.float32)
    scales = (10.0, 10.0, 5.0, 5.0)
    config = (regular, 5, 2, 3, 0.1, 0.3, background_in_label)
    inputs = [feed(T.TENSOR_FLOAT32, scores), feed(T.TENSOR_FLOAT32, deltas),
              feed(T.TENSOR_FLOAT32, anchors)] + [const(T.FLOAT32, s) for s in scales] + [
        const(T.BOOL, regular), const(T.INT32, 5), const(T.INT32, 2), const(T.INT32, 3),
        const(T.FLOAT32, 0.1), const(T.FLOAT32, 0.3), const(T.BOOL, background_in_label)]
    outputs = [out(T.TENSOR_FLOAT32, (0, 0)), out(T.TENSOR_FLOAT32, (0, 0, 0)),
               out(T.TENSOR_INT32, (0, 0)), out(T.TENSOR_INT32, (0,))]
    out_scores, out_boxes, out_classes, counts = run(Op.DETECTION_POSTPROCESSING, inputs, outputs)
    slots = 5 if regular else 10
    assert out_scores.shape == (2, slots) and out_boxes.shape == (2, slots, 4)
    want = postprocess_reference(scores, deltas, anchors, scales, *config)
    for b in range(batches):
        n = len(want[b])
        assert counts[b] == n and n > 0
        np.testing.assert_allclose(out_scores[b, :n], [r[0] for r in want[b]])
        np.testing.assert_allclose(out_boxes[b, :n], [r[1] for r in want[b]], rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_array_equal(out_classes[b, :n], [r[2] for r in want[b]])
        assert not out_scores[b, n:].any() and not out_boxes[b, n:].any()


def test_detection_postprocessing_rejects_bad_parameters():
    scores = np.zeros((1, 2, 3), np.float32)
    inputs = [feed(T.TENSOR_FLOAT32, scores), feed(T.TENSOR_FLOAT32, np.zeros((1, 2, 4))),
              feed(T.TENSOR_FLOAT32, np.ones((2, 4)))] + [
        const(T.FLOAT32, s) for s in (10.0, 0.0, 5.0, 5.0)] + [
        const(T.BOOL, True), const(T.INT32, 5), const(T.INT32, 2), const(T.INT32, 3),
        const(T.FLOAT32, 0.1), const(T.FLOAT32, 0.3), const(T.BOOL, False)]
    outputs = [out(T.TENSOR_FLOAT32, (0, 0)), out(T.TENSOR_FLOAT32, (0, 0, 0)),
               out(T.TENSOR_INT32, (0, 0)), out(T.TENSOR_INT32, (0,))]
    with pytest.raises(BadDataError, match="scale_x"):
        run(Op.DETECTION_POSTPROCESSING, inputs, outputs)
    inputs[4] = const(T.FLOAT32, 10.0)
    inputs[8] = const(T.INT32, 0)
    with pytest.raises(BadDataError, match="max_detections"):
        run(Op.DETECTION_POSTPROCESSING, inputs, outputs)
