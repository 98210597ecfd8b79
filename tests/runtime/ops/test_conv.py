"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D and FULLY_CONNECTED against
straightforward NumPy references, plus layouts, dynamic shapes and parameter errors."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel, OperationType
from torch_nnapi.runtime import Compilation

from ._single_op import F16, F32, I32, INT, Q8, Q8PC, boolean, build, const, feed, i32, out, run1

Op = OperationType
RNG = np.random.default_rng(7)
SAME, VALID = 1, 2


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------------------ references


def conv_ref(x, w, b, pads=(0, 0, 0, 0), strides=(1, 1), dilation=(1, 1), groups=1):
    """NHWC convolution by direct summation. pads = (top, bottom, left, right)."""
    x = np.asarray(x, np.float64)
    n, h, wd, c = x.shape
    cout, kh, kw, cg = w.shape
    top, bottom, left, right = pads
    xp = np.zeros((n, h + top + bottom, wd + left + right, c))
    xp[:, top:top + h, left:left + wd] = x
    eff_h, eff_w = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh = (xp.shape[1] - eff_h) // strides[0] + 1
    ow = (xp.shape[2] - eff_w) // strides[1] + 1
    out = np.zeros((n, oh, ow, cout))
    per_group = cout // groups
    for o in range(cout):
        g = o // per_group
        for y in range(oh):
            for z in range(ow):
                rows = y * strides[0] + np.arange(kh) * dilation[0]
                cols = z * strides[1] + np.arange(kw) * dilation[1]
                patch = xp[:, rows][:, :, cols][..., g * cg:(g + 1) * cg]
                out[:, y, z, o] = np.sum(patch * w[o], axis=(1, 2, 3)) + b[o]
    return out


def transpose_conv_ref(x, w, b, pads, strides):
    """Every input pixel adds x[c] * w[o, i, j, c] at (h * s + i - top, w * s + j - left)."""
    x = np.asarray(x, np.float64)
    n, h, wd, c = x.shape
    cout, kh, kw, _ = w.shape
    top, bottom, left, right = pads
    oh = h * strides[0] + kh - strides[0] - top - bottom
    ow = wd * strides[1] + kw - strides[1] - left - right
    out = np.zeros((n, oh, ow, cout)) + b
    for y in range(h):
        for z in range(wd):
            for i in range(kh):
                for j in range(kw):
                    r, q = y * strides[0] + i - top, z * strides[1] + j - left
                    if 0 <= r < oh and 0 <= q < ow:
                        out[:, r, q] += x[:, y, z] @ w[:, i, j, :].T
    return out


def quantize(real, scale, zero):
    return np.clip(np.round(real / scale) + zero, 0, 255).astype(np.uint8)


def conv_args(x, w, b, *, explicit=None, scheme=None, strides=(1, 1), fuse=0, nchw=None,
              dilation=None, extra=()):
    """Inputs of the explicit (pads = left, right, top, bottom) or implicit form."""
    args = [x, w, b]
    args += [i32(p) for p in explicit] if explicit is not None else [i32(scheme)]
    args += [i32(strides[1]), i32(strides[0]), *[i32(e) for e in extra], i32(fuse)]
    if nchw is not None:
        args.append(boolean(nchw))
    if dilation is not None:
        args += [i32(dilation[1]), i32(dilation[0])]
    return args


def float_conv(op, x, w, b, **kwargs) -> np.ndarray:
    """Runs ``op`` on a float32 input ``x`` with constant weights ``w`` and bias ``b``."""
    return run1(op, conv_args(feed(F32, x), const(F32, w), const(F32, b), **kwargs), out(F32))


# ------------------------------------------------------------------------------ CONV_2D


@pytest.mark.parametrize("explicit,strides,dilation", [
    ((1, 1, 1, 1), (1, 1), (1, 1)),
    ((0, 2, 1, 0), (2, 1), (1, 1)),
    ((2, 2, 2, 2), (1, 2), (2, 3)),
])
def test_conv_explicit_matches_reference(explicit, strides, dilation):
    x, w, b = rand(2, 7, 8, 3), rand(4, 3, 3, 3), rand(4)
    got = float_conv(Op.CONV_2D, x, w, b, explicit=explicit, strides=strides, nchw=False,
                     dilation=dilation)
    left, right, top, bottom = explicit
    want = conv_ref(x, w, b, (top, bottom, left, right), strides, dilation)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scheme,strides", [(SAME, (1, 1)), (SAME, (2, 3)), (VALID, (2, 2))])
def test_conv_implicit_padding(scheme, strides):
    x, w, b = rand(1, 9, 10, 2), rand(3, 3, 4, 2), rand(3)
    got = float_conv(Op.CONV_2D, x, w, b, scheme=scheme, strides=strides)
    if scheme == SAME:
        pads = []
        for size, k, s in ((9, 3, strides[0]), (10, 4, strides[1])):
            total = max(0, ((size + s - 1) // s - 1) * s + k - size)
            pads += [total // 2, total - total // 2]
    else:
        pads = [0, 0, 0, 0]
    np.testing.assert_allclose(got, conv_ref(x, w, b, tuple(pads), strides), rtol=1e-5,
                               atol=1e-5)


def test_conv_nchw_agrees_with_nhwc_and_relu6_clamps():
    x, w, b = rand(2, 5, 6, 3) * 4, rand(8, 3, 3, 3), rand(8)
    nhwc = float_conv(Op.CONV_2D, x, w, b, scheme=SAME, fuse=3, nchw=False)
    nchw = float_conv(Op.CONV_2D, x.transpose(0, 3, 1, 2), w, b, scheme=SAME, fuse=3, nchw=True)
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-6)
    assert nhwc.min() >= 0 and nhwc.max() <= 6 and nhwc.max() == 6


def test_pointwise_conv_with_weights_as_inputs_and_float16():
    x, w, b = rand(1, 4, 4, 5), rand(7, 1, 1, 5), rand(7)
    want = conv_ref(x, w, b)
    got = run1(Op.CONV_2D, conv_args(feed(F32, x), feed(F32, w), feed(F32, b), scheme=VALID),
               out(F32))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    half = run1(Op.CONV_2D, conv_args(feed(F16, x.astype(np.float16)),
                                     const(F16, w.astype(np.float16)),
                                     const(F16, b.astype(np.float16)), scheme=VALID), out(F16))
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, want, rtol=1e-2, atol=1e-2)


def test_grouped_conv_matches_reference_in_both_layouts():
    x, w, b = rand(2, 6, 5, 6), rand(9, 2, 3, 2), rand(9)
    want = conv_ref(x, w, b, (1, 0, 1, 1), (1, 2), groups=3)
    got = float_conv(Op.GROUPED_CONV_2D, x, w, b, explicit=(1, 1, 1, 0), strides=(1, 2),
                     extra=(3,), nchw=False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = float_conv(Op.GROUPED_CONV_2D, x.transpose(0, 3, 1, 2), w, b, explicit=(1, 1, 1, 0),
                     strides=(1, 2), extra=(3,), nchw=True)
    np.testing.assert_allclose(got, want.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ DEPTHWISE


@pytest.mark.parametrize("multiplier,strides,dilation,pads,kernel", [
    (1, (1, 1), (1, 1), (1, 1, 1, 1), (3, 3)),
    (2, (2, 2), (1, 1), (1, 0, 1, 0), (3, 3)),
    (3, (1, 2), (2, 2), (2, 2, 0, 1), (3, 3)),
    (1, (2, 3), (1, 1), (2, 1, 0, 2), (3, 3)),
    (2, (1, 3), (1, 1), (0, 0, 1, 0), (2, 2)),
    (1, (3, 4), (2, 1), (1, 2, 2, 0), (3, 5)),
])
def test_depthwise_matches_reference(multiplier, strides, dilation, pads, kernel):
    c = 4
    x, w, b = rand(2, 9, 8, c), rand(1, *kernel, c * multiplier), rand(c * multiplier)
    left, right, top, bottom = pads
    got = float_conv(Op.DEPTHWISE_CONV_2D, x, w, b, explicit=pads, strides=strides,
                     extra=(multiplier,), nchw=False, dilation=dilation)
    filters = np.moveaxis(w[0], -1, 0)[..., None]
    want = conv_ref(np.repeat(x, multiplier, axis=3), filters, b, (top, bottom, left, right),
                    strides, dilation, groups=c * multiplier)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_depthwise_nchw_agrees_with_nhwc():
    x, w, b = rand(1, 6, 6, 3), rand(1, 3, 3, 6), rand(6)
    nhwc = float_conv(Op.DEPTHWISE_CONV_2D, x, w, b, scheme=SAME, extra=(2,), nchw=False)
    nchw = float_conv(Op.DEPTHWISE_CONV_2D, x.transpose(0, 3, 1, 2), w, b, scheme=SAME,
                      extra=(2,), nchw=True)
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-6)


# ------------------------------------------------------------------------------ quantized


def _quantized_conv(op, x, w, b, w_scales, extra=(), fuse=0):
    """Runs ``op`` quantized (per-channel when w_scales is a list) and the float reference."""
    in_scale, in_zero, out_scale, out_zero = 0.05, 120, 0.08, 100
    qx = quantize(x, in_scale, in_zero)
    channel_dim = 3 if op == Op.DEPTHWISE_CONV_2D else 0
    if np.ndim(w_scales):
        shape = [1] * 4
        shape[channel_dim] = -1
        scales = np.asarray(w_scales).reshape(shape)
        qw = np.clip(np.round(w / scales), -127, 127).astype(np.int8)
        real_w = qw * scales
        filt = const(Q8PC, qw, channel_scales=list(w_scales), channel_dim=channel_dim)
        bias_scales = in_scale * np.asarray(w_scales, np.float32)
        bias_scale = 0.0
    else:
        w_zero = 128
        qw = quantize(w, w_scales, w_zero)
        real_w = (qw.astype(np.float64) - w_zero) * w_scales
        filt = const(Q8, qw, w_scales, w_zero)
        bias_scales = bias_scale = np.float32(in_scale) * np.float32(w_scales)
    qb = np.round(b / bias_scales).astype(np.int32)
    args = conv_args(feed(Q8, qx, in_scale, in_zero), filt,
                     const(I32, qb, float(bias_scale)), scheme=SAME, extra=extra, fuse=fuse)
    got = run1(op, args, out(Q8, (), out_scale, out_zero))
    real_x = (qx.astype(np.float64) - in_zero) * in_scale
    real_b = qb * np.asarray(bias_scales, np.float64)
    return got, real_x, real_w, real_b, (out_scale, out_zero)


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantized_conv_is_within_one_of_the_real_result(per_channel):
    x, w, b = rand(1, 5, 5, 3), rand(4, 3, 3, 3) * 0.5, rand(4)
    scales = [0.01, 0.004, 0.02, 0.008] if per_channel else 0.006
    got, rx, rw, rb, (os_, oz) = _quantized_conv(Op.CONV_2D, x, w, b, scales)
    want = conv_ref(rx, rw, rb, (1, 1, 1, 1))
    expected = np.clip(np.round(want / os_) + oz, 0, 255)
    assert np.abs(got.astype(int) - expected).max() <= 1


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantized_depthwise_is_within_one_of_the_real_result(per_channel):
    x, w, b = rand(2, 6, 5, 2), rand(1, 3, 3, 4) * 0.5, rand(4)
    scales = [0.01, 0.004, 0.02, 0.008] if per_channel else 0.006
    got, rx, rw, rb, (os_, oz) = _quantized_conv(Op.DEPTHWISE_CONV_2D, x, w, b, scales,
                                                 extra=(2,), fuse=1)
    want = conv_ref(np.repeat(rx, 2, axis=3), np.moveaxis(rw[0], -1, 0)[..., None], rb,
                    (1, 1, 1, 1), groups=4)
    expected = np.clip(np.round(want / os_) + oz, max(0, oz), 255)
    assert np.abs(got.astype(int) - expected).max() <= 1


def test_quantized_fully_connected_rescales_like_android():
    # Sum = (3 - 1) * (5 - 2) * 4 + 10 = 34; multiplier 0.5 * 0.25 / 1.0 = 0.125 -> 4.25 -> 4.
    x = feed(Q8, np.full((1, 4), 3, np.uint8), 0.5, 1)
    w = const(Q8, np.full((2, 4), 5, np.uint8), 0.25, 2)
    b = const(I32, np.array([10, -34 * 8], np.int32), 0.125)
    got = run1(Op.FULLY_CONNECTED, [x, w, b, i32(0)], out(Q8, (), 1.0, 7))
    np.testing.assert_array_equal(got, [[4 + 7, 0]])


# ------------------------------------------------------------------------------ TRANSPOSE


@pytest.mark.parametrize("pads,strides", [((0, 0, 0, 0), (1, 1)), ((1, 0, 0, 2), (2, 3)),
                                          ((0, -1, 1, -1), (2, 2))])
def test_transpose_conv_explicit_matches_reference(pads, strides):
    x, w, b = rand(2, 3, 4, 3), rand(5, 3, 2, 3), rand(5)
    left, right, top, bottom = pads
    got = float_conv(Op.TRANSPOSE_CONV_2D, x, w, b, explicit=pads, strides=strides, nchw=False)
    want = transpose_conv_ref(x, w, b, (top, bottom, left, right), strides)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_transpose_conv_implicit_same_gives_the_requested_shape():
    x, w, b = rand(1, 4, 5, 2), rand(3, 3, 3, 2), rand(3)
    shape = const(I32, np.array([1, 8, 10, 3], np.int32))
    args = [feed(F32, x), const(F32, w), const(F32, b), shape, i32(SAME), i32(2), i32(2), i32(0),
            boolean(False)]
    got = run1(Op.TRANSPOSE_CONV_2D, args, out(F32))
    assert got.shape == (1, 8, 10, 3)
    # SAME over an 8x10 output with stride 2 and a 3x3 filter pads 0 before and 1 after.
    np.testing.assert_allclose(got, transpose_conv_ref(x, w, b, (0, 1, 0, 1), (2, 2)),
                               rtol=1e-5, atol=1e-5)
    nchw = run1(Op.TRANSPOSE_CONV_2D, [feed(F32, x.transpose(0, 3, 1, 2)), const(F32, w),
                                       const(F32, b), const(I32, np.array([1, 3, 8, 10], np.int32)),
                                       i32(SAME), i32(2), i32(2), i32(0), boolean(True)], out(F32))
    np.testing.assert_allclose(nchw, got.transpose(0, 3, 1, 2), rtol=1e-6)


def test_quantized_transpose_conv_per_channel():
    x = feed(Q8, np.array([[[[130], [140]]]], np.uint8), 0.5, 128)
    w = const(Q8PC, np.array([[[[2]]], [[[-3]]]], np.int8), channel_scales=[0.5, 0.25])
    b = const(I32, np.array([4, -8], np.int32))
    args = [x, w, b, i32(0), i32(0), i32(0), i32(0), i32(2), i32(1), i32(0), boolean(False)]
    got = run1(Op.TRANSPOSE_CONV_2D, args, out(Q8, (), 0.5, 10))
    # Input offsets 2 and 12 land on output columns 0 and 2; column 1 only gets the bias.
    # Channel 0: sums 2*2+4, 4, 12*2+4 times 0.5*0.5/0.5; channel 1: 2*-3-8, -8, 12*-3-8
    # times 0.5*0.25/0.5 = -3.5 (rounds away from zero to -4), -2, -11; plus 10, clamped.
    np.testing.assert_array_equal(got[0, 0], [[14, 6], [12, 8], [24, 0]])


# ------------------------------------------------------------------------------ FULLY_CONNECTED


def test_fully_connected_flattens_its_input():
    x, w, b = rand(2, 3, 2, 4), rand(5, 8), rand(5)
    got = run1(Op.FULLY_CONNECTED, [feed(F32, x), const(F32, w), const(F32, b), i32(1)], out(F32))
    want = np.maximum(x.reshape(6, 8) @ w.T + b, 0)
    assert got.shape == (6, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ shapes


def test_dynamic_input_shapes_and_zero_batches():
    w, b = rand(2, 3, 3, 3), rand(2)
    model = build(Op.CONV_2D, conv_args(feed(F32, rand(1, 5, 5, 3), dims=(0, 0, 0, 0)),
                                        const(F32, w), const(F32, b), scheme=SAME, strides=(2, 2)),
                  [out(F32)])
    compilation = Compilation(model)
    for shape in ((1, 5, 5, 3), (3, 8, 4, 3), (0, 6, 6, 3)):
        x = rand(*shape)
        got = compilation.run([x]).outputs[0]
        assert got.shape == (shape[0], (shape[1] + 1) // 2, (shape[2] + 1) // 2, 2)
        if shape[0]:
            pad_h, pad_w = max(0, (got.shape[1] - 1) * 2 + 3 - shape[1]), \
                max(0, (got.shape[2] - 1) * 2 + 3 - shape[2])
            want = conv_ref(x, w, b, (pad_h // 2, pad_h - pad_h // 2, pad_w // 2,
                                      pad_w - pad_w // 2), (2, 2))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,args_of", [
    (Op.FULLY_CONNECTED, lambda x: [x, const(F32, rand(3, 4)), const(F32, rand(3)), i32(0)]),
    (Op.DEPTHWISE_CONV_2D, lambda x: conv_args(x, const(F32, rand(1, 3, 3, 8)), const(F32, rand(8)),
                                               scheme=SAME, extra=(2,))),
    (Op.TRANSPOSE_CONV_2D, lambda x: conv_args(x, const(F32, rand(2, 3, 3, 4)), const(F32, rand(2)),
                                               explicit=(0, 0, 0, 0), nchw=False)),
])
def test_zero_batches_give_empty_outputs(op, args_of):
    model = build(op, args_of(feed(F32, rand(1, 4, 4, 4), dims=(0, 0, 0, 0))), [out(F32)])
    got = Compilation(model).run([np.zeros((0, 4, 4, 4), np.float32)]).outputs[0]
    assert got.shape[0] == 0 and got.size == 0


def test_nchw_and_dilation_need_android_10():
    x, w, b = feed(F32, rand(1, 5, 5, 1)), const(F32, rand(1, 3, 3, 1)), const(F32, rand(1))
    model = build(Op.CONV_2D, conv_args(x, w, b, scheme=SAME), [out(F32)])
    assert model.feature_level == FeatureLevel.ANDROID_8_1
    model = build(Op.CONV_2D, conv_args(x, w, b, scheme=SAME, nchw=False, dilation=(2, 2)),
                  [out(F32)])
    assert model.feature_level == FeatureLevel.ANDROID_10


# ------------------------------------------------------------------------------ errors


def _conv_error(args, op=Op.CONV_2D):
    with pytest.raises(BadDataError) as info:
        run1(op, args, out(F32))
    return str(info.value)


def test_parameter_errors_name_the_operation_and_the_problem():
    x, w, b = feed(F32, rand(1, 5, 5, 2)), const(F32, rand(3, 3, 3, 2)), const(F32, rand(3))
    assert "operation 0 (CONV_2D): input 3 (padding) must be a PaddingCode" in \
        _conv_error(conv_args(x, w, b, scheme=3))
    assert "input 5 (stride_h) must be positive, got 0" in \
        _conv_error(conv_args(x, w, b, scheme=SAME, strides=(0, 1)))
    assert "padding left (3) must be smaller than the filter extent (3)" in \
        _conv_error(conv_args(x, w, b, explicit=(3, 0, 0, 0)))
    assert "input 5 (pad_top) must not be negative, got -1" in \
        _conv_error(conv_args(x, w, b, explicit=(0, 0, -1, 0)))
    assert "input 9 (dilation_h) must be positive, got 0" in \
        _conv_error(conv_args(x, w, b, scheme=SAME, nchw=False, dilation=(0, 1)))
    assert "input 6 (fuse_code) 7 is not a FuseCode" in \
        _conv_error(conv_args(x, w, b, scheme=SAME, fuse=7))
    assert "input depth 2 must equal the filter's depth 3" in \
        _conv_error(conv_args(x, const(F32, rand(3, 3, 3, 3)), b, scheme=SAME))
    assert "input 2 (bias) has 4 values, the output depth is 3" in \
        _conv_error(conv_args(x, w, const(F32, rand(4)), scheme=SAME))
    assert "input 1 (filter) must have rank 4" in \
        _conv_error(conv_args(x, const(F32, rand(3, 3, 2)), b, scheme=SAME))
    assert "does not fit the padded 5x5 input" in \
        _conv_error(conv_args(x, const(F32, rand(3, 7, 7, 2)), b, scheme=VALID))


def test_depthwise_grouped_and_fc_errors():
    x = feed(F32, rand(1, 5, 5, 2))
    assert "input 6 (depth_multiplier) 3 times input depth 2 must equal the filter's depth 4" \
        in \
        _conv_error(conv_args(x, const(F32, rand(1, 3, 3, 4)), const(F32, rand(4)), scheme=SAME,
                              extra=(3,)), Op.DEPTHWISE_CONV_2D)
    assert "input 6 (num_groups) 3 must be positive and divide the output depth (4)" in \
        _conv_error(conv_args(x, const(F32, rand(4, 3, 3, 1)), const(F32, rand(4)), scheme=SAME,
                              extra=(3,), nchw=False), Op.GROUPED_CONV_2D)
    assert "input 0 (input) has 50 elements, not a multiple of the weights' input size 3" in \
        _conv_error([x, const(F32, rand(4, 3)), const(F32, rand(4)), i32(0)], Op.FULLY_CONNECTED)
    assert "input 3 (output_shape) must have 4 values" in \
        _conv_error([x, const(F32, rand(2, 3, 3, 2)), const(F32, rand(2)),
                     const(I32, np.array([1, 5, 5], np.int32)), i32(SAME), i32(1), i32(1),
                     i32(0), boolean(False)], Op.TRANSPOSE_CONV_2D)


def test_signature_rules_reject_bad_quantization():
    x = feed(Q8, np.zeros((1, 3, 3, 2), np.uint8), 0.5, 0)
    w = const(Q8PC, np.zeros((1, 3, 3, 2), np.int8), channel_scales=[0.5], channel_dim=0)
    with pytest.raises(BadDataError, match=r"filter must be quantized along dimension 3"):
        build(Op.DEPTHWISE_CONV_2D, conv_args(x, w, const(I32, np.zeros(2, np.int32)),
                                              scheme=SAME, extra=(1,)), [out(Q8, (), 1.0, 0)])
    w = const(Q8, np.zeros((2, 3, 3, 2), np.uint8), 0.5, 0)
    with pytest.raises(BadDataError, match=r"bias scale must equal input.scale \* filter"):
        build(Op.CONV_2D, conv_args(x, w, const(I32, np.zeros(2, np.int32), 0.3),
                                    scheme=SAME), [out(Q8, (), 1.0, 0)])


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_large_depthwise_split_across_threads_matches_one_thread(monkeypatch, strides):
    x, w, b = rand(2, 64, 48, 40), rand(1, 3, 3, 40), rand(40)
    args = conv_args(feed(F32, x), const(F32, w), const(F32, b), scheme=SAME, strides=strides,
                     extra=(1,))
    monkeypatch.setenv("TORCH_NNAPI_NUM_THREADS", "1")
    single = run1(Op.DEPTHWISE_CONV_2D, args, out(F32))
    monkeypatch.setenv("TORCH_NNAPI_NUM_THREADS", "3")
    np.testing.assert_array_equal(run1(Op.DEPTHWISE_CONV_2D, args, out(F32)), single)


def test_small_quantized_output_scale_needs_android_10():
    def model(output_scale):
        x = feed(Q8, np.zeros((1, 3, 3, 1), np.uint8), 0.5, 0)
        w = const(Q8, np.ones((1, 1, 1, 1), np.uint8), 0.5, 0)
        b = const(I32, np.zeros(1, np.int32), 0.25)
        return build(Op.CONV_2D, conv_args(x, w, b, scheme=VALID), [out(Q8, (), output_scale, 0)])

    assert model(0.3).feature_level == FeatureLevel.ANDROID_8_1
    assert model(0.25).feature_level == FeatureLevel.ANDROID_10


@pytest.mark.parametrize("cin,cout,fuse", [(8, 40, 3), (40, 8, 1), (24, 24, 0)])
def test_large_pointwise_conv_epilogue_across_threads(monkeypatch, cin, cout, fuse):
    x, w, b = rand(1, 96, 80, cin) * 3, rand(cout, 1, 1, cin), rand(cout)
    monkeypatch.setenv("TORCH_NNAPI_NUM_THREADS", "3")
    got = float_conv(Op.CONV_2D, x, w, b, scheme=VALID, fuse=fuse)
    want = x.reshape(-1, cin).astype(np.float64) @ w.reshape(cout, cin).T.astype(np.float64) + b
    want = {0: want, 1: np.maximum(want, 0), 3: np.clip(want, 0, 6)}[fuse]
    np.testing.assert_allclose(got.reshape(-1, cout), want, rtol=1e-4, atol=1e-4)


def test_scalar_parameters_given_at_execution_are_read_every_time():
    x, w, b = rand(1, 4, 4, 2) * 8, rand(3, 1, 1, 2), rand(3)
    compilation = Compilation(build(Op.CONV_2D, [feed(F32, x), const(F32, w), const(F32, b),
                                                 i32(VALID), i32(1), i32(1), feed(INT)],
                                    [out(F32, (1, 4, 4, 3))]))
    want = conv_ref(x, w, b)
    for code, low, high in ((0, -np.inf, np.inf), (3, 0, 6), (0, -np.inf, np.inf), (1, 0, np.inf)):
        got = compilation.run([x, np.int32(code)]).outputs[0]
        np.testing.assert_allclose(got, np.clip(want, low, high), rtol=1e-5, atol=1e-5)


def test_geometry_is_remembered_per_compilation_not_shared_between_them():
    x, w, b = rand(1, 6, 6, 2), rand(3, 3, 3, 2), rand(3)
    strided, plain = (Compilation(build(Op.CONV_2D, conv_args(feed(F32, x), const(F32, w),
                                                              const(F32, b), scheme=VALID,
                                                              strides=s), [out(F32)]))
                      for s in ((2, 2), (1, 1)))
    for _ in range(2):
        np.testing.assert_allclose(strided.run([x]).outputs[0],
                                   conv_ref(x, w, b, strides=(2, 2)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(plain.run([x]).outputs[0], conv_ref(x, w, b),
                                   rtol=1e-5, atol=1e-5)
    assert strided.steps[0].memo and plain.steps[0].memo
    assert strided.steps[0].memo["geometry"] is not plain.steps[0].memo["geometry"]
