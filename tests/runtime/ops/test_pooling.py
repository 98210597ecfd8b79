"""AVERAGE/MAX/L2_POOL_2D and RESIZE_BILINEAR/NEAREST_NEIGHBOR against NumPy references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel, OperationType
from torch_nnapi.runtime import Compilation

from ._single_op import F16, F32, Q8, boolean, build, f16, f32, feed, i32, out, run1

Op = OperationType
RNG = np.random.default_rng(11)
SAME, VALID = 1, 2


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def pool_ref(x, kind, pads, strides, filt):
    """Windows clipped to the input: padding never counts. pads = (top, bottom, left, right)."""
    n, h, w, c = x.shape
    top, bottom, left, right = pads
    oh = (h + top + bottom - filt[0]) // strides[0] + 1
    ow = (w + left + right - filt[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c))
    for y in range(oh):
        for z in range(ow):
            r0, c0 = y * strides[0] - top, z * strides[1] - left
            win = x[:, max(r0, 0):min(r0 + filt[0], h), max(c0, 0):min(c0 + filt[1], w)]
            win = win.astype(np.float64)
            if kind == "max":
                out[:, y, z] = win.max(axis=(1, 2))
            elif kind == "avg":
                out[:, y, z] = win.mean(axis=(1, 2))
            else:
                out[:, y, z] = np.sqrt((win ** 2).mean(axis=(1, 2)))
    return out


def pool_args(x, *, explicit=None, scheme=None, strides=(1, 1), filt=(2, 2), fuse=0,
              nchw=None):
    args = [x] + ([i32(p) for p in explicit] if explicit is not None else [i32(scheme)])
    args += [i32(strides[1]), i32(strides[0]), i32(filt[1]), i32(filt[0]), i32(fuse)]
    return args + ([boolean(nchw)] if nchw is not None else [])


_POOLS = {"avg": Op.AVERAGE_POOL_2D, "max": Op.MAX_POOL_2D, "l2": Op.L2_POOL_2D}


@pytest.mark.parametrize("kind", ["avg", "max", "l2"])
@pytest.mark.parametrize("pads,strides,filt", [((0, 0, 0, 0), (1, 1), (2, 2)),
                                               ((1, 1, 1, 1), (2, 2), (3, 3)),
                                               ((0, 2, 1, 0), (1, 3), (3, 4))])
def test_pools_match_reference_and_exclude_padding(kind, pads, strides, filt):
    x = rand(2, 7, 9, 3)
    left, right, top, bottom = pads
    got = run1(_POOLS[kind], pool_args(feed(F32, x), explicit=pads, strides=strides, filt=filt),
               out(F32))
    want = pool_ref(x, kind, (top, bottom, left, right), strides, filt)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["avg", "max", "l2"])
def test_pools_nchw_and_implicit_same(kind):
    x = rand(1, 6, 5, 4)
    nhwc = run1(_POOLS[kind], pool_args(feed(F32, x), scheme=SAME, strides=(2, 2), filt=(3, 3),
                                        nchw=False), out(F32))
    nchw = run1(_POOLS[kind], pool_args(feed(F32, x.transpose(0, 3, 1, 2)), scheme=SAME,
                                        strides=(2, 2), filt=(3, 3), nchw=True), out(F32))
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-6)
    # SAME, stride 2, filter 3: height 6 pads 0 + 1, width 5 pads 1 + 1.
    np.testing.assert_allclose(nhwc, pool_ref(x, kind, (0, 1, 1, 1), (2, 2), (3, 3)),
                               rtol=1e-5, atol=1e-5)


def test_quantized_average_rounds_half_up_and_max_clamps():
    x = np.array([1, 2, 2, 2, 7, 9, 200, 255], np.uint8).reshape(1, 2, 4, 1)
    got = run1(Op.AVERAGE_POOL_2D, pool_args(feed(Q8, x, 0.5, 3), scheme=VALID,
                                             strides=(2, 2), filt=(2, 2)), out(Q8, (), 0.5, 3))
    # (1+2+7+9)=19 -> (19+2)//4 = 5; (2+2+200+255)=459 -> (459+2)//4 = 115.
    np.testing.assert_array_equal(got.ravel(), [5, 115])
    # RELU1 with scale 0.5, zero point 3 clamps to [1, 5].
    got = run1(Op.MAX_POOL_2D, pool_args(feed(Q8, x, 0.5, 3), scheme=VALID, strides=(1, 2),
                                         filt=(1, 2), fuse=2), out(Q8, (), 0.5, 3))
    np.testing.assert_array_equal(got.ravel(), [2, 2, 5, 5])


def test_float16_pools_and_relu6():
    x = (rand(1, 4, 4, 2) * 5).astype(np.float16)
    got = run1(Op.AVERAGE_POOL_2D, pool_args(feed(F16, x), scheme=VALID, filt=(2, 2), fuse=3),
               out(F16))
    want = np.clip(pool_ref(x.astype(np.float32), "avg", (0, 0, 0, 0), (1, 1), (2, 2)), 0, 6)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=5e-3, atol=5e-3)


def test_pool_zero_batches_and_dynamic_shapes():
    model = build(Op.MAX_POOL_2D, pool_args(feed(F32, rand(1, 4, 4, 2), dims=(0, 0, 0, 0)),
                                            scheme=SAME, strides=(2, 2)), [out(F32)])
    compilation = Compilation(model)
    assert compilation.run([np.zeros((0, 4, 4, 2), np.float32)]).outputs[0].shape == \
        (0, 2, 2, 2)
    x = rand(2, 5, 3, 2)
    np.testing.assert_allclose(compilation.run([x]).outputs[0],
                               pool_ref(x, "max", (0, 1, 0, 1), (2, 2), (2, 2)))


def test_pool_errors():
    x = feed(F32, rand(1, 4, 4, 1))
    with pytest.raises(BadDataError, match=r"MAX_POOL_2D\): input 4 \(filter_w\) and input 5"
                                           r" \(filter_h\) must be positive, got 0 and 2"):
        run1(Op.MAX_POOL_2D, pool_args(x, scheme=SAME, filt=(2, 0)), out(F32))
    with pytest.raises(BadDataError, match=r"padding bottom \(2\) must be smaller than the"
                                           r" filter extent \(2\)"):
        run1(Op.AVERAGE_POOL_2D, pool_args(x, explicit=(0, 0, 0, 2)), out(F32))
    with pytest.raises(BadDataError, match="input 0 .input. must have rank 4"):
        run1(Op.L2_POOL_2D, pool_args(feed(F32, rand(4, 4, 1)), scheme=SAME), out(F32))


# ------------------------------------------------------------------------------ resize


def source_coords(in_size, out_size, align_corners, half_pixel):
    scale = (in_size - 1) / (out_size - 1) if align_corners and out_size > 1 else \
        in_size / out_size
    pos = np.arange(out_size, dtype=np.float64)
    return ((pos + 0.5) * scale - 0.5 if half_pixel else pos * scale), scale


def bilinear_ref(x, out_h, out_w, align_corners=False, half_pixel=False):
    ys, _ = source_coords(x.shape[1], out_h, align_corners, half_pixel)
    xs, _ = source_coords(x.shape[2], out_w, align_corners, half_pixel)
    out = np.zeros((x.shape[0], out_h, out_w, x.shape[3]))
    for i, y in enumerate(ys):
        y0, y1 = max(math.floor(y), 0), min(math.ceil(y), x.shape[1] - 1)
        for j, z in enumerate(xs):
            x0, x1 = max(math.floor(z), 0), min(math.ceil(z), x.shape[2] - 1)
            dy, dx = y - y0, z - x0
            out[:, i, j] = (x[:, y0, x0] * (1 - dy) * (1 - dx) + x[:, y1, x0] * dy * (1 - dx)
                            + x[:, y0, x1] * (1 - dy) * dx + x[:, y1, x1] * dy * dx)
    return out


def nearest_ref(x, out_h, out_w, align_corners=False, half_pixel=False):
    def index(in_size, out_size):
        scale = (in_size - 1) / (out_size - 1) if align_corners and out_size > 1 else \
            in_size / out_size
        result = []
        for o in range(out_size):
            v = (o + (0.5 if half_pixel else 0.0)) * scale
            k = math.floor(v + 0.5) if align_corners else math.floor(v)
            result.append(max(min(k, in_size - 1), 0))
        return result
    return x[:, index(x.shape[1], out_h)][:, :, index(x.shape[2], out_w)]


def resize_args(x, width, height, nchw=None, corners=None):
    args = [x, width, height]
    if nchw is not None:
        args.append(boolean(nchw))
    if corners is not None:
        args += [boolean(corners[0]), boolean(corners[1])]
    return args


@pytest.mark.parametrize("corners", [None, (False, False), (True, False), (False, True)])
def test_bilinear_matches_reference(corners):
    x = rand(2, 4, 5, 3)
    got = run1(Op.RESIZE_BILINEAR, resize_args(feed(F32, x), i32(8), i32(7),
                                               nchw=False if corners else None,
                                               corners=corners), out(F32))
    np.testing.assert_allclose(got, bilinear_ref(x, 7, 8, *(corners or (False, False))),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("corners", [(False, False), (True, False), (False, True)])
def test_nearest_neighbor_matches_reference(corners):
    x = rand(1, 5, 4, 2)
    for out_h, out_w in ((9, 7), (3, 2), (5, 4)):
        got = run1(Op.RESIZE_NEAREST_NEIGHBOR, resize_args(feed(F32, x), i32(out_w), i32(out_h),
                                                           nchw=False, corners=corners), out(F32))
        np.testing.assert_array_equal(got, nearest_ref(x, out_h, out_w, *corners))


def test_resize_by_scale_nchw_and_float16():
    x = rand(1, 3, 4, 6)
    by_scale = run1(Op.RESIZE_BILINEAR, resize_args(feed(F32, x.transpose(0, 3, 1, 2)), f32(1.5),
                                                    f32(2.0), nchw=True), out(F32))
    assert by_scale.shape == (1, 6, 6, 6)  # floor(4 * 1.5) wide, floor(3 * 2) high
    by_size = run1(Op.RESIZE_BILINEAR, resize_args(feed(F32, x), i32(6), i32(6), nchw=False),
                   out(F32))
    np.testing.assert_allclose(by_scale, by_size.transpose(0, 3, 1, 2), rtol=1e-6)
    half = run1(Op.RESIZE_NEAREST_NEIGHBOR, resize_args(feed(F16, x.astype(np.float16)),
                                                        f16(0.5), f16(0.7), nchw=False), out(F16))
    np.testing.assert_array_equal(half, nearest_ref(x.astype(np.float16), 2, 2))


def test_quantized_bilinear_truncates_like_android():
    x = feed(Q8, np.array([0, 3], np.uint8).reshape(1, 1, 2, 1), 0.5, 0)
    got = run1(Op.RESIZE_BILINEAR, resize_args(x, i32(4), i32(1), nchw=False), out(Q8, (), 0.5, 0))
    # Source columns 0, 0.5, 1, 1.5 give 0, 1.5, 3, 3; 1.5 truncates to 1.
    np.testing.assert_array_equal(got.ravel(), [0, 1, 3, 3])


def test_resize_zero_batches_dynamic_and_feature_levels():
    model = build(Op.RESIZE_BILINEAR, resize_args(feed(F32, rand(1, 2, 2, 1), dims=(0, 0, 0, 0)),
                                                  f32(2.0), f32(2.0), nchw=False), [out(F32)])
    assert model.feature_level == FeatureLevel.ANDROID_10
    compilation = Compilation(model)
    assert compilation.run([np.zeros((0, 3, 2, 1), np.float32)]).outputs[0].shape == \
        (0, 6, 4, 1)
    model = build(Op.RESIZE_NEAREST_NEIGHBOR, resize_args(feed(F32, rand(1, 2, 2, 1)), i32(3),
                                                          i32(3), nchw=False,
                                                          corners=(True, False)), [out(F32)])
    assert model.feature_level == FeatureLevel.ANDROID_11


def test_resize_errors():
    x = rand(1, 4, 4, 1)
    with pytest.raises(BadDataError, match=r"RESIZE_BILINEAR\): the output height and width"
                                           r" must be positive, got 1 and 0"):
        run1(Op.RESIZE_BILINEAR, resize_args(feed(F32, x), f32(0.2), f32(0.3)), out(F32))
    with pytest.raises(BadDataError, match=r"input 4 \(align_corners\) and input 5"
                                           r" \(half_pixel_centers\) cannot both be true"):
        run1(Op.RESIZE_NEAREST_NEIGHBOR, resize_args(feed(F32, x), i32(2), i32(2), nchw=False,
                                                     corners=(True, True)), out(F32))
    # A float16 input takes float16 scales.
    with pytest.raises(BadDataError, match=r"input 1 \(width\) is FLOAT32, expected"):
        build(Op.RESIZE_BILINEAR, [feed(F16, x.astype(np.float16)), f32(2.0), f32(2.0)],
              [out(F16)])
