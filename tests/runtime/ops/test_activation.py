"""RELU, RELU1, RELU6, LOGISTIC, TANH, PRELU, HARD_SWISH, ELU: float and quantized kernels
against NumPy references, Android's edge cases, dynamic and zero-sized shapes, and clear
errors."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, OperandType
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.nnapi.operand_types import type_info
from torch_nnapi.runtime import Compilation

from ._single_op import F16, F32, Q8, build, const, f16, f32, feed, out, run1

RNG = np.random.default_rng(7)

_CLAMP_BOUNDS = {Op.RELU: (0.0, np.inf), Op.RELU1: (-1.0, 1.0), Op.RELU6: (0.0, 6.0)}


def _unary(op, x: np.ndarray, in_type=F32, out_quant=(0.0, 0), in_quant=(0.0, 0), dims=None):
    shape = x.shape if dims is None else dims
    return run1(op, [feed(in_type, x, *in_quant, dims=shape)], out(in_type, shape, *out_quant))


@pytest.mark.parametrize("op", list(_CLAMP_BOUNDS))
@pytest.mark.parametrize("dtype,operand_type", [(np.float32, F32), (np.float16, F16)])
def test_clamps_float(op, dtype, operand_type):
    x = (RNG.standard_normal((2, 3, 4)) * 5).astype(dtype)
    lo, hi = _CLAMP_BOUNDS[op]
    got = _unary(op, x, operand_type)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.clip(x, lo, hi).astype(dtype))


def test_clamps_map_nan_to_the_lower_bound_and_relu_caps_infinity():
    x = np.array([np.nan, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(_unary(Op.RELU, x), [0, np.finfo(np.float32).max, 0])
    np.testing.assert_array_equal(_unary(Op.RELU1, x), [-1, 1, -1])
    np.testing.assert_array_equal(_unary(Op.RELU6, x), [0, 6, 0])


@pytest.mark.parametrize("op", list(_CLAMP_BOUNDS))
def test_clamps_quant8_keep_the_scale(op):
    scale, zero_point = 0.1, 100
    q = np.arange(256, dtype=np.uint8)
    got = _unary(op, q, Q8, (scale, zero_point), (scale, zero_point))
    real = (q.astype(np.float64) - zero_point) * scale
    lo, hi = _CLAMP_BOUNDS[op]
    expected = np.clip(np.round(np.clip(real, lo, hi) / scale) + zero_point, 0, 255)
    np.testing.assert_array_equal(got, expected)


def test_relu_quant8_requires_the_input_quantization():
    with pytest.raises(BadDataError, match="scale and zero point of input"):
        build(Op.RELU, [feed(Q8, dims=(2,), scale=0.5)], [out(Q8, (2,), 0.25, 0)])


@pytest.mark.parametrize("dtype,operand_type,rtol", [(np.float32, F32, 1e-6),
                                                     (np.float16, F16, 1e-3)])
def test_logistic_and_tanh_float(dtype, operand_type, rtol):
    x = np.linspace(-20, 20, 101).astype(dtype)
    xf = x.astype(np.float64)
    np.testing.assert_allclose(_unary(Op.LOGISTIC, x, operand_type), 1 / (1 + np.exp(-xf)),
                               rtol=rtol, atol=rtol * 1e-3)
    np.testing.assert_allclose(_unary(Op.TANH, x, operand_type), np.tanh(xf), rtol=rtol,
                               atol=rtol * 1e-3)


@pytest.mark.parametrize("scale,zero_point", [(0.5, 0), (0.1, 128), (0.05, 100), (1.0, 17),
                                              (0.01, 200), (2.0 ** -10, 128)])
def test_quant8_logistic_and_tanh_follow_the_real_functions(scale, zero_point):
    q = np.arange(256, dtype=np.uint8)
    real = (q.astype(np.float64) - zero_point) * np.float32(scale)
    logistic = _unary(Op.LOGISTIC, q, Q8, (1 / 256, 0), (scale, zero_point)).astype(int)
    expected = np.clip(np.round(256 / (1 + np.exp(-real))), 0, 255)
    assert np.max(np.abs(logistic - expected)) <= 1
    tanh = _unary(Op.TANH, q, Q8, (1 / 128, 128), (scale, zero_point)).astype(int)
    expected = np.clip(np.round(128 * np.tanh(real)) + 128, 0, 255)
    assert np.max(np.abs(tanh - expected)) <= 1
    # Monotonic, and saturated far from the zero point.
    assert np.all(np.diff(logistic) >= 0) and np.all(np.diff(tanh) >= 0)


def test_quant8_logistic_exact_values():
    # Input scale 1/16: q - 128 = 16 * x. Values computed with Android's algorithm.
    q = np.array([0, 64, 112, 127, 128, 129, 144, 192, 255], np.uint8)
    got = _unary(Op.LOGISTIC, q, Q8, (1 / 256, 0), (1 / 16, 128))
    expected = np.round(256 / (1 + np.exp(-(q.astype(float) - 128) / 16)))
    np.testing.assert_array_equal(got, np.minimum(expected, 255))
    assert got[4] == 128  # logistic(0) is exactly one half


def test_quant8_sigmoids_saturate_only_beyond_the_input_radius():
    # Input scale 2: the radius is 3 steps (real 6); logistic(-6) * 256 = 0.63 rounds to 1.
    q = np.array([124, 125, 126, 130, 131, 132], np.uint8)
    logistic = _unary(Op.LOGISTIC, q, Q8, (1 / 256, 0), (2.0, 128))
    np.testing.assert_array_equal(logistic, [0, 1, 5, 251, 255, 255])
    tanh = _unary(Op.TANH, q, Q8, (1 / 128, 128), (2.0, 128))
    np.testing.assert_array_equal(tanh, [0, 0, 0, 255, 255, 255])


@pytest.mark.parametrize("op,quant", [(Op.LOGISTIC, (1 / 128, 128)), (Op.TANH, (1 / 256, 0))])
def test_quant8_sigmoids_require_the_fixed_output_quantization(op, quant):
    with pytest.raises(BadDataError, match="must have scale"):
        build(op, [feed(Q8, dims=(2,), scale=0.5)], [out(Q8, (2,), *quant)])


def test_quant8_logistic_rejects_a_tiny_input_scale():
    model = build(Op.LOGISTIC, [feed(Q8, dims=(2,), scale=1e-9)], [out(Q8, (2,), 1 / 256, 0)])
    with pytest.raises(BadDataError, match=r"operation 0 \(LOGISTIC\).*greater than 1"):
        Compilation(model)


def test_activations_reject_rank_5():
    model = build(Op.TANH, [feed(F32, dims=(1, 1, 1, 1, 2))], [out(F32, (0,) * 5)])
    with pytest.raises(BadDataError, match=r"input 0 \(input\) must have rank 0..4"):
        Compilation(model)


def test_dynamic_and_zero_sized_shapes():
    compilation = Compilation(build(Op.RELU6, [feed(F32, dims=(0, 3))], [out(F32, (0, 0))]))
    for rows in (0, 1, 5):
        x = np.full((rows, 3), 7.0, np.float32)
        got = compilation.run([x]).outputs[0]
        assert got.shape == (rows, 3)
        np.testing.assert_array_equal(got, np.full((rows, 3), 6.0))


# --------------------------------------------------------------------------------------------
# PRELU


@pytest.mark.parametrize("dtype,operand_type", [(np.float32, F32), (np.float16, F16)])
def test_prelu_float_broadcasts_alpha(dtype, operand_type):
    x = RNG.standard_normal((2, 3, 4)).astype(dtype)
    alpha = RNG.standard_normal((3, 1)).astype(dtype)
    got = run1(Op.PRELU, [feed(operand_type, x), const(operand_type, alpha)],
               out(operand_type, (0, 0, 0)))
    expected = np.where(x >= 0, x, x * alpha)
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, expected.astype(dtype))


@pytest.mark.parametrize("alpha_scale,out_scale", [(0.25, 0.5), (0.5, 0.1), (0.02, 0.03)])
def test_prelu_quant8_follows_float(alpha_scale, out_scale):
    in_scale, in_zp, alpha_zp, out_zp = 0.25, 128, 50, 120
    x = np.arange(256, dtype=np.uint8).reshape(1, 256)
    alpha = RNG.integers(0, 256, (1, 1), dtype=np.uint8)
    got = run1(Op.PRELU, [feed(Q8, x, scale=in_scale, zero_point=in_zp),
                          const(Q8, alpha, alpha_scale, alpha_zp)],
               out(Q8, x.shape, out_scale, out_zp))
    real_x = (x.astype(float) - in_zp) * in_scale
    real_alpha = (alpha.astype(float) - alpha_zp) * alpha_scale
    real = np.where(real_x >= 0, real_x, real_x * real_alpha)
    expected = np.clip(np.round(real / out_scale) + out_zp, 0, 255)
    assert np.max(np.abs(got.astype(int) - expected)) <= 1


def test_prelu_errors():
    model = build(Op.PRELU, [feed(F32, dims=(2, 3)), feed(F32, dims=(4,))], [out(F32, (0, 0))])
    with pytest.raises(BadDataError, match=r"cannot be broadcast"):
        Compilation(model)
    # A tensor of unknown rank turns out to be a scalar at execution.
    model = build(Op.PRELU, [feed(F32, dims=(2,)), feed(F32, dims=())], [out(F32, (2,))])
    with pytest.raises(BadDataError, match=r"input 1 \(alpha\) must have rank 1 or more"):
        Compilation(model).run([np.ones(2, np.float32), np.array(0.5, np.float32)])
    with pytest.raises(BadDataError, match=r"input 1 \(alpha\) is TENSOR_FLOAT16"):
        build(Op.PRELU, [feed(F32, dims=(2,)), feed(F16, dims=(2,))], [out(F32, (2,))])


# --------------------------------------------------------------------------------------------
# Signed quant8 (API 30), HARD_SWISH and ELU

Q8_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED


def _hard_swish(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x + 3, 0, 6) / 6


@pytest.mark.parametrize("dtype,operand_type", [(np.float32, F32), (np.float16, F16)])
def test_hard_swish_float(dtype, operand_type):
    x = np.linspace(-5, 5, 41).astype(dtype)
    got = _unary(Op.HARD_SWISH, x, operand_type)
    np.testing.assert_allclose(got, _hard_swish(x.astype(np.float32)).astype(dtype), rtol=1e-3,
                               atol=1e-3)


@pytest.mark.parametrize("operand_type,zero_points", [(Q8, (128, 90)), (Q8_SIGNED, (0, -38))])
def test_hard_swish_quantized_is_within_a_quantum_of_the_real_function(operand_type,
                                                                      zero_points):
    """Input scale 0.05, output scale 0.03, in 8-bit fixed point."""
    (in_zero, out_zero), dtype = zero_points, type_info(operand_type).dtype
    limits = np.iinfo(dtype)
    q = np.arange(limits.min, limits.max + 1).astype(dtype)
    got = run1(Op.HARD_SWISH, [feed(operand_type, q, 0.05, in_zero)],
               out(operand_type, q.shape, 0.03, out_zero))
    real = _hard_swish((q.astype(np.float64) - in_zero) * 0.05)
    expected = np.clip(np.round(real / 0.03) + out_zero, limits.min, limits.max)
    assert got.dtype == dtype
    assert np.abs(got.astype(np.int64) - expected).max() <= 1


def test_hard_swish_rejects_an_output_scale_below_the_input_scale_over_128():
    with pytest.raises(BadDataError, match="HARD_SWISH needs an output scale"):
        Compilation(build(Op.HARD_SWISH, [feed(Q8, dims=(2,), scale=1.0, zero_point=128)],
                          [out(Q8, (2,), 0.001, 128)]))


@pytest.mark.parametrize("dtype,operand_type,alpha", [(np.float32, F32, f32(0.5)),
                                                      (np.float16, F16, f16(0.5))])
def test_elu(dtype, operand_type, alpha):
    x = np.array([-3, -0.5, 0, 0.5, 3], dtype)
    got = run1(Op.ELU, [feed(operand_type, x), alpha], out(operand_type, x.shape))
    expected = np.where(x > 0, x, 0.5 * np.expm1(x.astype(np.float32)))
    np.testing.assert_allclose(got, expected.astype(dtype), rtol=1e-3)


@pytest.mark.parametrize("op,out_quant", [(Op.LOGISTIC, (1 / 256, -128)),
                                          (Op.TANH, (1 / 128, 0))])
def test_signed_logistic_and_tanh_match_the_unsigned_kernels_shifted(op, out_quant):
    """The int8 kernels compute what the uint8 ones do on values 128 higher, but saturate
    from the input radius on (TFLite's int8 kernels)."""
    q = np.arange(-128, 128).astype(np.int8)
    signed = _unary(op, q, Q8_SIGNED, out_quant, (0.1, -10))
    unsigned = _unary(op, (q.astype(np.int32) + 128).astype(np.uint8), Q8,
                      (out_quant[0], out_quant[1] + 128), (0.1, 118))
    assert np.abs(signed.astype(np.int32) + 128 - unsigned).max() <= 1
