"""ROI_ALIGN, ROI_POOLING, HEATMAP_MAX_KEYPOINT against plain NumPy references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, OperationType
from torch_nnapi.nnapi import OperandType as T
from torch_nnapi.nnapi.errors import OpFailedError

from ._detection_support import quantize
from ._single_op import build, const, feed, out, run

Op = OperationType
RNG = np.random.default_rng(7)


# ------------------------------------------------------------------------- references

def _bilinear(image: np.ndarray, y: float, x: float) -> np.ndarray:
    height, width = image.shape[:2]
    y0, x0 = math.floor(y), math.floor(x)
    fy, fx = y - y0, x - x0
    if y0 >= height - 1:
        y0, fy = height - 1, 0.0
    if x0 >= width - 1:
        x0, fx = width - 1, 0.0
    y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
    return ((1 - fy) * ((1 - fx) * image[y0, x0] + fx * image[y0, x1])
            + fy * ((1 - fx) * image[y1, x0] + fx * image[y1, x1]))


def roi_align_reference(feature, rois, batch, out_h, out_w, h_ratio, w_ratio, h_samples,
                        w_samples):
    feature = feature.astype(np.float64)
    out = np.zeros((len(rois), out_h, out_w, feature.shape[3]))
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        x1, x2, y1, y2 = x1 / w_ratio, x2 / w_ratio, y1 / h_ratio, y2 / h_ratio
        bin_w, bin_h = max(x2 - x1, 1) / out_w, max(y2 - y1, 1) / out_h
        nx = w_samples or math.ceil(bin_w)
        ny = h_samples or math.ceil(bin_h)
        for i in range(out_h):
            for j in range(out_w):
                samples = [_bilinear(feature[batch[r]], y1 + i * bin_h + (a + 0.5) * bin_h / ny,
                                     x1 + j * bin_w + (c + 0.5) * bin_w / nx)
                           for a in range(ny) for c in range(nx)]
                out[r, i, j] = sum(samples) / (nx * ny)
    return out


def roi_pooling_reference(feature, rois, batch, out_h, out_w, h_ratio, w_ratio, empty=0):
    out = np.zeros((len(rois), out_h, out_w, feature.shape[3]), feature.dtype)
    height, width = feature.shape[1:3]
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        x1, x2 = (math.floor(v / w_ratio + 0.5) for v in (x1, x2))
        y1, y2 = (math.floor(v / h_ratio + 0.5) for v in (y1, y2))
        bin_w, bin_h = max(x2 - x1 + 1, 1) / out_w, max(y2 - y1 + 1, 1) / out_h
        for i in range(out_h):
            for j in range(out_w):
                ys = slice(min(math.floor(i * bin_h + y1), height),
                           min(math.ceil((i + 1) * bin_h + y1), height))
                xs = slice(min(math.floor(j * bin_w + x1), width),
                           min(math.ceil((j + 1) * bin_w + x1), width))
                window = feature[batch[r], ys, xs].reshape(-1, feature.shape[3])
                out[r, i, j] = window.max(axis=0) if len(window) else empty
    return out


# ------------------------------------------------------------------------- model builders

def _roi_inputs(op, feature, rois, batch, out_hw, ratios, samples=None, nchw=False,
                kind="f32", quant=((0.25, 128), (0.25, 128))):
    if nchw:
        feature = feature.transpose(0, 3, 1, 2)
    if kind == "q8":
        (s_in, z_in), (s_out, z_out) = quant
        inputs = [feed(T.TENSOR_QUANT8_ASYMM, quantize(feature, s_in, z_in, np.uint8), s_in, z_in),
                  feed(T.TENSOR_QUANT16_ASYMM, quantize(rois, 0.125, 0, np.uint16), 0.125, 0)]
        scalar, output = T.FLOAT32, out(T.TENSOR_QUANT8_ASYMM, (0, 0, 0, 0), s_out, z_out)
    else:
        tensor, dtype, scalar = {"f32": (T.TENSOR_FLOAT32, np.float32, T.FLOAT32),
                                 "f16": (T.TENSOR_FLOAT16, np.float16, T.FLOAT16)}[kind]
        inputs = [feed(tensor, feature.astype(dtype)), feed(tensor, rois.astype(dtype))]
        output = out(tensor, (0, 0, 0, 0))
    inputs += [feed(T.TENSOR_INT32, np.asarray(batch, np.int32)), const(T.INT32, out_hw[0]),
               const(T.INT32, out_hw[1]), const(scalar, ratios[0]), const(scalar, ratios[1])]
    if op == Op.ROI_ALIGN:
        inputs += [const(T.INT32, samples[0]), const(T.INT32, samples[1])]
    inputs.append(const(T.BOOL, nchw))
    return inputs, [output]


def _random_rois(count, height, width, ratio=1.0, rng=RNG):
    x1 = rng.uniform(0, width - 1, count)
    y1 = rng.uniform(0, height - 1, count)
    x2 = np.minimum(x1 + rng.uniform(0, width, count), width)
    y2 = np.minimum(y1 + rng.uniform(0, height, count), height)
    return (np.stack([x1, y1, x2, y2], axis=1) * ratio).astype(np.float32)


def _to_nhwc(x, nchw):
    return x.transpose(0, 2, 3, 1) if nchw else x


# ------------------------------------------------------------------------- ROI_ALIGN

@pytest.mark.parametrize("samples", [(2, 2), (0, 0), (3, 0)])
@pytest.mark.parametrize("nchw", [False, True])
def test_roi_align_matches_reference(samples, nchw):
    feature = RNG.standard_normal((2, 9, 11, 3)).astype(np.float32)
    rois = _random_rois(6, 9, 11, ratio=2.0)
    batch = [0, 1, 1, 0, 1, 0]
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, feature, rois, batch, (3, 2), (2.0, 2.0),
                                  samples, nchw)
    got = _to_nhwc(run(Op.ROI_ALIGN, inputs, outputs)[0], nchw)
    want = roi_align_reference(feature, rois, batch, 3, 2, 2.0, 2.0, *samples)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_roi_align_float16_and_quant8_follow_float32():
    feature = RNG.uniform(-8, 8, (1, 8, 8, 2)).astype(np.float32)
    rois = _random_rois(5, 8, 8, ratio=4.0)
    args = (Op.ROI_ALIGN, feature, rois, [0] * 5, (2, 2), (4.0, 4.0), (0, 0))
    want = run(Op.ROI_ALIGN, *_roi_inputs(*args))[0]
    half = run(Op.ROI_ALIGN, *_roi_inputs(*args, kind="f16"))[0]
    np.testing.assert_allclose(half.astype(np.float32), want, atol=0.05)
    quant = ((0.0625, 128), (0.0625, 128))
    got = run(Op.ROI_ALIGN, *_roi_inputs(*args, kind="q8", quant=quant))[0]
    # Quantized rois (1/8 px) and 1/255 weights: within two output steps of the float result.
    exact = roi_align_reference(quantize(feature, 0.0625, 128, np.uint8).astype(np.float64)
                                * 0.0625 - 8, quantize(rois, 0.125, 0, np.uint16) * 0.125,
                                [0] * 5, 2, 2, 4.0, 4.0, 0, 0)
    assert np.abs(got.astype(np.int32) - quantize(exact, 0.0625, 128, np.uint8)).max() <= 2


def test_roi_align_quant8_rescales_with_integer_multiplier():
    # A constant feature map averages to itself exactly: any rounding shows up here.
    feature = np.full((1, 4, 4, 1), 3.0, np.float32)
    rois = np.array([[0, 0, 4, 4], [1, 1, 3, 2]], np.float32)
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, feature, rois, [0, 0], (2, 2), (1.0, 1.0),
                                  (2, 2), kind="q8", quant=((0.5, 10), (0.25, 0)))
    got = run(Op.ROI_ALIGN, inputs, outputs)[0]
    assert np.all(got == 12)


def test_roi_align_zero_rois_give_empty_output():
    feature = RNG.standard_normal((1, 4, 4, 2)).astype(np.float32)
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, feature, np.zeros((0, 4), np.float32), [],
                                  (2, 3), (1.0, 1.0), (2, 2), nchw=True)
    inputs[1].dims, inputs[2].dims = (0, 4), (0,)
    assert run(Op.ROI_ALIGN, inputs, outputs)[0].shape == (0, 2, 2, 3)


@pytest.mark.parametrize("roi, batch, message", [
    ([0, 0, 9, 2], 0, "outside the 4x4 feature map"),
    ([3, 0, 1, 2], 0, "x1 <= x2"),
    ([0, 0, 1, 1], 2, "batch index 2"),
])
def test_roi_align_rejects_bad_rois(roi, batch, message):
    feature = np.zeros((2, 4, 4, 1), np.float32)
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, feature, np.array([roi], np.float32), [batch],
                                  (2, 2), (1.0, 1.0), (1, 1))
    with pytest.raises(OpFailedError, match=message):
        run(Op.ROI_ALIGN, inputs, outputs)


def test_roi_align_rejects_bad_parameters():
    feature = np.zeros((1, 4, 4, 1), np.float32)
    rois = np.array([[0, 0, 1, 1]], np.float32)
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, feature, rois, [0], (0, 2), (1.0, 1.0), (1, 1))
    with pytest.raises(BadDataError, match="output height and width"):
        run(Op.ROI_ALIGN, inputs, outputs)
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, feature, rois, [0], (2, 2), (1.0, 1.0), (-1, 1))
    with pytest.raises(BadDataError, match="sampling ratios"):
        run(Op.ROI_ALIGN, inputs, outputs)
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, feature, rois, [0, 0], (2, 2), (1.0, 1.0),
                                  (1, 1))
    with pytest.raises(BadDataError, match="one entry per roi"):
        run(Op.ROI_ALIGN, inputs, outputs)


def test_quantized_rois_need_android_box_scale():
    inputs, outputs = _roi_inputs(Op.ROI_ALIGN, np.zeros((1, 2, 2, 1), np.float32),
                                  np.zeros((1, 4), np.float32), [0], (1, 1), (1.0, 1.0), (1, 1),
                                  kind="q8")
    inputs[1].scale = 0.25
    with pytest.raises(BadDataError, match="rois must have scale 0.125"):
        build(Op.ROI_ALIGN, inputs, outputs)


# ------------------------------------------------------------------------- ROI_POOLING

@pytest.mark.parametrize("nchw", [False, True])
def test_roi_pooling_matches_reference(nchw):
    feature = RNG.standard_normal((2, 7, 9, 3)).astype(np.float32)
    rois = _random_rois(8, 7, 9, ratio=2.0)
    rois[0] = [0, 0, 18, 14]  # the whole map
    rois[1] = [16, 12, 18, 14]  # a corner, where bins fall off the map and stay empty
    batch = [0, 1, 0, 1, 1, 0, 0, 1]
    inputs, outputs = _roi_inputs(Op.ROI_POOLING, feature, rois, batch, (3, 4), (2.0, 2.0),
                                  nchw=nchw)
    got = _to_nhwc(run(Op.ROI_POOLING, inputs, outputs)[0], nchw)
    np.testing.assert_array_equal(got, roi_pooling_reference(feature, rois, batch, 3, 4, 2.0,
                                                              2.0))


def test_roi_pooling_quant8_is_the_max_of_raw_values_and_zero_point_when_empty():
    feature = RNG.uniform(-10, 10, (1, 5, 5, 2)).astype(np.float32)
    rois = np.array([[0, 0, 9, 9], [4, 4, 10, 10], [8, 8, 10, 10]], np.float32)
    inputs, outputs = _roi_inputs(Op.ROI_POOLING, feature, rois, [0] * 3, (3, 3), (2.0, 2.0),
                                  kind="q8", quant=((0.1, 120), (0.1, 120)))
    got = run(Op.ROI_POOLING, inputs, outputs)[0]
    raw = quantize(feature, 0.1, 120, np.uint8)
    want = roi_pooling_reference(raw, rois, [0] * 3, 3, 3, 2.0, 2.0, empty=120)
    np.testing.assert_array_equal(got, want)
    assert (got == 120).any()  # the last roi has bins past the map's edge


def test_roi_pooling_output_keeps_input_quantization():
    inputs, outputs = _roi_inputs(Op.ROI_POOLING, np.zeros((1, 2, 2, 1), np.float32),
                                  np.zeros((1, 4), np.float32), [0], (1, 1), (1.0, 1.0),
                                  kind="q8", quant=((0.1, 120), (0.2, 120)))
    with pytest.raises(BadDataError, match="scale and zero point of input"):
        build(Op.ROI_POOLING, inputs, outputs)


# ------------------------------------------------------------------------- HEATMAP_MAX_KEYPOINT

def heatmap_reference(heatmaps, boxes):
    """Maximum of each heatmap refined by a quadratic fit of its 3x3 neighbourhood."""
    num, size, _, keypoints = heatmaps.shape
    scores = np.zeros((num, keypoints))
    points = np.zeros((num, keypoints, 2))
    for n in range(num):
        for k in range(keypoints):
            grid = heatmaps[n, :, :, k].astype(np.float64)
            row, col = np.unravel_index(np.argmax(grid), grid.shape)
            idx = np.array([[1 if i < 0 else size - 2 if i >= size else i
                             for i in (c - 1, c, c + 1)] for c in (row, col)])
            g = grid[np.ix_(idx[0], idx[1])]
            gradient = np.array([g[1, 2] - g[1, 0], g[2, 1] - g[0, 1]]) / 2
            hessian = np.array([[g[1, 0] - 2 * g[1, 1] + g[1, 2],
                                 (g[2, 2] - g[2, 0] - g[0, 2] + g[0, 0]) / 4],
                                [0, g[0, 1] - 2 * g[1, 1] + g[2, 1]]])
            hessian[1, 0] = hessian[0, 1]
            delta, score = np.zeros(2), g[1, 1]
            if abs(np.linalg.det(hessian)) >= 1e-5 + 1e-5 * hessian[0, 0] * hessian[1, 1]:
                delta = -np.linalg.solve(hessian, gradient)
                if np.abs(delta).max() > 1.5:
                    delta *= 1.5 / np.abs(delta).max()
                score = g[1, 1] + gradient @ delta + delta @ hessian @ delta / 2
            x1, y1, x2, y2 = boxes[n]
            scores[n, k] = score
            points[n, k] = [(col + delta[0] + 0.5) / size * (x2 - x1) + x1,
                            (row + delta[1] + 0.5) / size * (y2 - y1) + y1]
    return scores, points


def _heatmap_inputs(heatmaps, boxes, nchw=False, kind="f32"):
    if nchw:
        heatmaps = heatmaps.transpose(0, 3, 1, 2)
    if kind == "q8":
        return ([feed(T.TENSOR_QUANT8_ASYMM, quantize(heatmaps, 0.05, 100, np.uint8), 0.05, 100),
                 feed(T.TENSOR_QUANT16_ASYMM, quantize(boxes, 0.125, 0, np.uint16), 0.125, 0),
                 const(T.BOOL, nchw)],
                [out(T.TENSOR_QUANT8_ASYMM, (0, 0), 0.05, 100),
                 out(T.TENSOR_QUANT16_ASYMM, (0, 0, 0), 0.125)])
    tensor, dtype = {"f32": (T.TENSOR_FLOAT32, np.float32),
                     "f16": (T.TENSOR_FLOAT16, np.float16)}[kind]
    return ([feed(tensor, heatmaps.astype(dtype)), feed(tensor, boxes.astype(dtype)),
             const(T.BOOL, nchw)], [out(tensor, (0, 0)), out(tensor, (0, 0, 0))])


def _smooth_heatmaps(num, size, keypoints, rng=RNG):
    """Gaussian bumps at random sub-pixel centres (some at the border), plus noise."""
    grid = np.arange(size)
    centres = rng.uniform(-0.5, size - 0.5, (num, keypoints, 2))
    dy = grid[None, :, None, None] - centres[:, None, None, :, 0]
    dx = grid[None, None, :, None] - centres[:, None, None, :, 1]
    return (np.exp(-(dx ** 2 + dy ** 2) / 6) + rng.uniform(0, 0.01, dx.shape)).astype(np.float32)


@pytest.mark.parametrize("nchw", [False, True])
def test_heatmap_max_keypoint_matches_reference(nchw):
    heatmaps = _smooth_heatmaps(5, 8, 3)
    boxes = _random_rois(5, 50, 50)
    scores, points = run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(heatmaps, boxes, nchw))
    want_scores, want_points = heatmap_reference(heatmaps, boxes)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(points, want_points, rtol=1e-4, atol=1e-3)


def test_heatmap_flat_neighbourhood_keeps_the_integer_maximum():
    heatmaps = np.zeros((1, 4, 4, 1), np.float32)
    heatmaps[0, 1:4, 0:3, 0] = 1.0  # a plateau: the fitted Hessian is singular
    boxes = np.array([[0, 0, 8, 8]], np.float32)
    scores, points = run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(heatmaps, boxes))
    np.testing.assert_allclose(scores, [[1.0]])
    np.testing.assert_allclose(points, [[[1.0, 3.0]]])  # first maximum, cell (1, 0)


def test_heatmap_float16_and_quant8_follow_float32():
    """Its own data (the shared generator's state depends on which tests ran before: some
    draws put two maxima within a quantum, where 8 bits may pick the other one)."""
    rng = np.random.default_rng(11)
    heatmaps = _smooth_heatmaps(3, 6, 2, rng)
    boxes = _random_rois(3, 40, 40, rng=rng)
    want_scores, want_points = run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(heatmaps, boxes))
    scores, points = run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(heatmaps, boxes, kind="f16"))
    np.testing.assert_allclose(scores.astype(np.float32), want_scores, atol=0.01)
    np.testing.assert_allclose(points.astype(np.float32), want_points, atol=0.2)
    scores, points = run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(heatmaps, boxes, kind="q8"))
    np.testing.assert_allclose((scores.astype(np.float32) - 100) * 0.05, want_scores, atol=0.1)
    np.testing.assert_allclose(points * 0.125, want_points, atol=1.5)


def test_heatmap_rejects_bad_shapes_and_boxes():
    boxes = np.array([[0, 0, 4, 4]], np.float32)
    with pytest.raises(BadDataError, match="must be square"):
        run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(np.zeros((1, 4, 5, 1), np.float32), boxes))
    with pytest.raises(BadDataError, match="at least 2x2"):
        run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(np.zeros((1, 1, 1, 1), np.float32), boxes))
    with pytest.raises(OpFailedError, match="x1 <= x2"):
        run(Op.HEATMAP_MAX_KEYPOINT, *_heatmap_inputs(np.zeros((1, 3, 3, 1), np.float32),
                                                      np.array([[4, 0, 0, 4]], np.float32)))
