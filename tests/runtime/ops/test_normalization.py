"""SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION,
INSTANCE_NORMALIZATION: every axis against NumPy references, quantized kernels against the
real functions, NCHW against NHWC, and clear errors for invalid parameters."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import BOOL, F16, F32, FLOAT, HALF, INT, Q8, build, const, feed, out, run1

RNG = np.random.default_rng(11)
SHAPE = (2, 3, 4, 5)


def _softmax_reference(x: np.ndarray, beta: float, axis: int) -> np.ndarray:
    z = (x.astype(np.float64) - x.max(axis=axis, keepdims=True)) * beta
    return np.exp(z) / np.exp(z).sum(axis=axis, keepdims=True)


# --------------------------------------------------------------------------------------------
# SOFTMAX


@pytest.mark.parametrize("axis", [None, -4, -3, 1, 2, 3])
def test_softmax_float_along_every_axis(axis):
    x = RNG.standard_normal(SHAPE).astype(np.float32) * 3
    extra = [] if axis is None else [const(INT, axis)]
    got = run1(Op.SOFTMAX, [feed(F32, x), const(FLOAT, 0.7), *extra], out(F32, SHAPE))
    np.testing.assert_allclose(got, _softmax_reference(x, 0.7, -1 if axis is None else axis),
                               rtol=1e-5, atol=1e-7)


def test_softmax_float16():
    x = RNG.standard_normal((3, 6)).astype(np.float16)
    got = run1(Op.SOFTMAX, [feed(F16, x), const(HALF, 1.0)], out(F16, x.shape))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, _softmax_reference(x, 1.0, -1), rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("scale,zero_point,beta", [(0.5, 0, 1.0), (0.1, 128, 1.0),
                                                   (0.25, 128, 0.5), (1.0, 10, 2.0)])
def test_softmax_quant8_follows_float(axis, scale, zero_point, beta):
    q = RNG.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    got = run1(Op.SOFTMAX, [feed(Q8, q, scale, zero_point), const(FLOAT, beta), const(INT, axis)],
               out(Q8, q.shape, 1 / 256, 0))
    real = (q.astype(np.float64) - zero_point) * scale
    expected = np.clip(np.round(_softmax_reference(real, beta, axis) * 256), 0, 255)
    assert np.max(np.abs(got.astype(int) - expected)) <= 1


def test_softmax_quant8_is_the_same_along_any_axis():
    q = RNG.integers(0, 256, (3, 7), dtype=np.uint8)

    def softmax(x, axis):
        return run1(Op.SOFTMAX, [feed(Q8, x, 0.1, 128), const(FLOAT, 1.0), const(INT, axis)],
                    out(Q8, x.shape, 1 / 256, 0))

    np.testing.assert_array_equal(softmax(q, 1), softmax(np.ascontiguousarray(q.T), 0).T)


def test_softmax_quant8_with_a_wide_range_saturates_small_terms_to_zero():
    q = np.array([[0, 255, 255, 10]], np.uint8)
    got = run1(Op.SOFTMAX, [feed(Q8, q, 1.0, 0), const(FLOAT, 1.0)], out(Q8, q.shape, 1 / 256, 0))
    np.testing.assert_array_equal(got, [[0, 128, 128, 0]])


@pytest.mark.parametrize("inputs,message", [
    ([const(FLOAT, 0.0)], r"input 1 \(beta\) must be positive, got 0.0"),
    ([const(FLOAT, 1.0), const(INT, 4)], r"input 2 \(axis\) 4 is out of range \[-4, 4\)"),
    ([const(FLOAT, 1.0), const(INT, -5)], r"input 2 \(axis\) -5 is out of range \[-4, 4\)"),
])
def test_softmax_invalid_parameters(inputs, message):
    model = build(Op.SOFTMAX, [feed(F32, dims=SHAPE), *inputs], [out(F32, SHAPE)])
    with pytest.raises(BadDataError, match=message):
        Compilation(model)


def test_softmax_quant8_rejects_a_too_small_beta_times_scale():
    model = build(Op.SOFTMAX, [feed(Q8, scale=1e-5, dims=(1, 4)), const(FLOAT, 1e-4)],
                  [out(Q8, (1, 4), 1 / 256, 0)])
    with pytest.raises(BadDataError, match="too small for quantized SOFTMAX"):
        Compilation(model)


def test_softmax_axis_given_at_execution_and_zero_sized_input():
    model = build(Op.SOFTMAX, [feed(F32, dims=(0, 3)), const(FLOAT, 1.0), feed(INT)],
                  [out(F32, (0, 0))])
    compilation = Compilation(model)
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for axis in (0, 1, -1):
        got = compilation.run([x, np.array(axis, np.int32)]).outputs[0]
        np.testing.assert_allclose(got, _softmax_reference(x, 1.0, axis), rtol=1e-6)
    empty = compilation.run([np.zeros((0, 3), np.float32), np.array(1, np.int32)]).outputs[0]
    assert empty.shape == (0, 3)
    with pytest.raises(BadDataError, match=r"operation 0 \(SOFTMAX\): input 2 \(axis\)"):
        compilation.run([x, np.array(2, np.int32)])


# --------------------------------------------------------------------------------------------
# LOG_SOFTMAX


@pytest.mark.parametrize("axis", [-1, 0, 2])
@pytest.mark.parametrize("beta", [1.0, 0.3, -2.0])
def test_log_softmax(axis, beta):
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32) * 4
    got = run1(Op.LOG_SOFTMAX, [feed(F32, x), const(FLOAT, beta), const(INT, axis)],
               out(F32, x.shape))
    z = x.astype(np.float64) * beta
    expected = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_log_softmax_of_large_logits_stays_finite():
    x = np.array([[1000.0, 0.0, -1000.0]], np.float32)
    got = run1(Op.LOG_SOFTMAX, [feed(F32, x), const(FLOAT, 1.0), const(INT, -1)],
               out(F32, x.shape))
    np.testing.assert_allclose(got, [[0.0, -1000.0, -2000.0]])


# --------------------------------------------------------------------------------------------
# L2_NORMALIZATION


@pytest.mark.parametrize("axis", [None, 0, 1, -2])
def test_l2_normalization_float(axis):
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    extra = [] if axis is None else [const(INT, axis)]
    got = run1(Op.L2_NORMALIZATION, [feed(F32, x), *extra], out(F32, SHAPE))
    axis = -1 if axis is None else axis
    expected = x / np.sqrt((x.astype(np.float64) ** 2).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_l2_normalization_of_zeros_is_zero():
    x = np.array([[0.0, 0.0], [3.0, 4.0]], np.float32)
    got = run1(Op.L2_NORMALIZATION, [feed(F32, x)], out(F32, x.shape))
    np.testing.assert_allclose(got, np.array([[0.0, 0.0], [0.6, 0.8]]))


@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("scale,zero_point", [(0.1, 32), (1.0, 128), (0.02, 0)])
def test_l2_normalization_quant8_follows_float(axis, scale, zero_point):
    q = RNG.integers(0, 256, (6, 5), dtype=np.uint8)
    got = run1(Op.L2_NORMALIZATION, [feed(Q8, q, scale, zero_point), const(INT, axis)],
               out(Q8, q.shape, 1 / 128, 128))
    diff = q.astype(np.float64) - zero_point
    real = diff / np.sqrt((diff ** 2).sum(axis=axis, keepdims=True))
    expected = np.clip(np.round(real * 128) + 128, 0, 255)
    assert np.max(np.abs(got.astype(int) - expected)) <= 1


def test_l2_normalization_quant8_degenerate_sums():
    # Sums of squares 0 and 1: all at the zero point, or a single step away from it.
    q = np.array([[7, 7, 7], [7, 8, 7], [6, 7, 7]], np.uint8)
    got = run1(Op.L2_NORMALIZATION, [feed(Q8, q, 0.5, 7)], out(Q8, q.shape, 1 / 128, 128))
    np.testing.assert_array_equal(got, [[128, 128, 128], [128, 255, 128], [0, 128, 128]])


def test_l2_normalization_quant8_requires_the_fixed_output_quantization():
    with pytest.raises(BadDataError, match=r"scale 0.0078125 and zero point 128"):
        build(Op.L2_NORMALIZATION, [feed(Q8, scale=0.5, dims=(2, 2))],
              [out(Q8, (2, 2), 1 / 256, 0)])


# --------------------------------------------------------------------------------------------
# LOCAL_RESPONSE_NORMALIZATION


def _lrn_reference(x, radius, bias, alpha, beta, axis):
    x = np.moveaxis(x.astype(np.float64), axis, -1)
    out = np.empty_like(x)
    depth = x.shape[-1]
    for d in range(depth):
        window = x[..., max(0, d - radius):min(depth, d + radius + 1)]
        out[..., d] = x[..., d] / (bias + alpha * (window ** 2).sum(axis=-1)) ** beta
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("axis", [None, 0, 2, -3])
@pytest.mark.parametrize("radius", [0, 1, 2, 10])
def test_local_response_normalization(axis, radius):
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    bias, alpha, beta = 1.5, 0.3, 0.75
    extra = [] if axis is None else [const(INT, axis)]
    got = run1(Op.LOCAL_RESPONSE_NORMALIZATION,
               [feed(F32, x), const(INT, radius), const(FLOAT, bias),
                const(FLOAT, alpha), const(FLOAT, beta), *extra],
               out(F32, SHAPE))
    expected = _lrn_reference(x, radius, bias, alpha, beta, -1 if axis is None else axis)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_local_response_normalization_float16():
    x = RNG.standard_normal((1, 1, 2, 6)).astype(np.float16)
    got = run1(Op.LOCAL_RESPONSE_NORMALIZATION,
               [feed(F16, x), const(INT, 2), const(HALF, 1.0),
                const(HALF, 0.5), const(HALF, 0.5)], out(F16, x.shape))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, _lrn_reference(x, 2, 1.0, 0.5, 0.5, -1), rtol=2e-3)


def test_local_response_normalization_rejects_a_negative_radius():
    model = build(Op.LOCAL_RESPONSE_NORMALIZATION,
                  [feed(F32, dims=SHAPE), const(INT, -1), const(FLOAT, 1.0),
                   const(FLOAT, 1.0), const(FLOAT, 0.5)], [out(F32, SHAPE)])
    with pytest.raises(BadDataError, match=r"input 1 \(radius\) must not be negative, got -1"):
        Compilation(model)


# --------------------------------------------------------------------------------------------
# INSTANCE_NORMALIZATION


def _instance_norm(x: np.ndarray, gamma: float, beta: float, epsilon: float, nchw: bool,
                   operand_type=F32, scalar_type=FLOAT) -> np.ndarray:
    return run1(Op.INSTANCE_NORMALIZATION,
                [feed(operand_type, x), const(scalar_type, gamma), const(scalar_type, beta),
                 const(scalar_type, epsilon), const(BOOL, nchw)], out(operand_type, x.shape))


def test_instance_normalization_nchw_matches_nhwc():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32) + 1
    nhwc = _instance_norm(x, 2.0, 0.5, 1e-3, nchw=False)
    nchw = _instance_norm(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), 2.0, 0.5, 1e-3,
                          nchw=True)
    np.testing.assert_allclose(nchw.transpose(0, 2, 3, 1), nhwc, rtol=1e-6, atol=1e-6)


def test_instance_normalization_divides_by_the_standard_deviation():
    """As NeuralNetworks.h says and Android 11 computes (Android 10 divided by the root mean
    square, which its conformance vectors expected)."""
    x = RNG.standard_normal((1, 3, 3, 2)).astype(np.float32) + 2
    got = _instance_norm(x, 1.5, -1.0, 1e-4, nchw=False)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(1, 2), keepdims=True)
    variance = x64.var(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(got, (x64 - mean) * 1.5 / np.sqrt(variance + 1e-4) - 1.0,
                               rtol=1e-5, atol=1e-6)


def test_instance_normalization_float16_and_rank_check():
    x = RNG.standard_normal((1, 2, 2, 3)).astype(np.float16)
    got = _instance_norm(x, 1.0, 0.0, 1e-4, False, F16, HALF)
    assert got.dtype == np.float16
    model = build(Op.INSTANCE_NORMALIZATION,
                  [feed(F32, dims=(2, 3, 4)), const(FLOAT, 1.0), const(FLOAT, 0.0),
                   const(FLOAT, 1e-4), const(BOOL, False)], [out(F32, (2, 3, 4))])
    with pytest.raises(BadDataError, match=r"input 0 \(input\) must have rank 4"):
        Compilation(model)


# --------------------------------------------------------------------------------------------
# Signatures


def test_optional_axis_inputs_need_feature_level_3():
    plain = build(Op.SOFTMAX, [feed(F32, dims=(2, 3)), const(FLOAT, 1.0)], [out(F32, (2, 3))])
    assert plain.feature_level == FeatureLevel.ANDROID_8_1
    with_axis = build(Op.L2_NORMALIZATION, [feed(F32, dims=(2, 3)), const(INT, 0)],
                      [out(F32, (2, 3))])
    assert with_axis.feature_level == FeatureLevel.ANDROID_10


def test_scalar_types_follow_the_tensor_type():
    with pytest.raises(BadDataError, match=r"input 1 \(beta\) is FLOAT32, expected FLOAT16"):
        build(Op.SOFTMAX, [feed(F16, dims=(2, 3)), const(FLOAT, 1.0)], [out(F16, (2, 3))])
    with pytest.raises(BadDataError, match=r"input 0 \(input\) is TENSOR_QUANT8_ASYMM"):
        build(Op.LOG_SOFTMAX, [feed(Q8, scale=0.5, dims=(2, 3)), const(FLOAT, 1.0),
                               const(INT, -1)], [out(Q8, (2, 3), 0.5, 0)])
