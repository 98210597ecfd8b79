"""CAST, QUANTIZE and DEQUANTIZE: saturation, rounding, per-channel scales, zero-sized inputs."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import BOOL8, F16, F32, I32, Q8, Q8PC, Q8S, Operand, build, feed, out, run1


def _cast(source: Operand, target: Operand):
    return run1(Op.CAST, [source], target)


def test_cast_float_to_int32_truncates_and_saturates():
    x = np.array([1.9, -1.9, -0.5, 3e9, -3e9, np.inf, np.nan], np.float32)
    got = _cast(feed(F32, x), out(I32, x.shape))
    np.testing.assert_array_equal(got, [1, -1, 0, 2**31 - 1, -(2**31), 2**31 - 1, 0])


def test_cast_to_quant8_saturates_and_ignores_quantization():
    x = np.array([-3.0, 0.7, 254.9, 300.0, np.nan], np.float16)
    got = _cast(feed(F16, x), out(Q8, x.shape, 4.0, 100))
    np.testing.assert_array_equal(got, [0, 0, 254, 255, 0])
    n = np.array([-1, 0, 77, 256, 2**31 - 1], np.int32)
    np.testing.assert_array_equal(_cast(feed(I32, n), out(Q8, n.shape, 0.1, 3)),
                                  [0, 0, 77, 255, 255])


def test_cast_from_quant8_and_to_float16():
    q = np.array([0, 1, 255], np.uint8)
    np.testing.assert_array_equal(_cast(feed(Q8, q, scale=0.5, zero_point=7), out(I32, (3,))),
                                  [0, 1, 255])
    n = np.array([1, 2049, 70000], np.int32)
    got = _cast(feed(I32, n), out(F16, (3,)))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, [1.0, 2048.0, np.inf])  # 2049 rounds to even


def test_cast_rank_comes_from_the_input():
    compilation = Compilation(build(Op.CAST, [feed(F32, dims=(0, 0))], [out(I32, (0, 0))]))
    np.testing.assert_array_equal(compilation.run([np.ones((2, 5), np.float32)]).outputs[0],
                                  np.ones((2, 5), np.int32))


@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (F16, np.float16)],
                         ids=["f32", "f16"])
def test_quantize_rounds_half_away_from_zero_and_saturates(operand_type, dtype):
    x = np.array([0.25, 0.75, -0.25, -0.75, 100.0, -100.0, np.inf, -np.inf, np.nan], dtype)
    got = run1(Op.QUANTIZE, [feed(operand_type, x)], out(Q8, x.shape, 0.5, 10))
    # x / 0.5 = .5, 1.5, -.5, -1.5 -> 1, 2, -1, -2; + 10; saturate; NaN -> 255 as on Android.
    np.testing.assert_array_equal(got, [11, 12, 9, 8, 210, 0, 255, 0, 255])


def test_quantize_is_exact_just_below_a_half():
    x = np.array([0.49999997, -0.49999997], np.float32)
    got = run1(Op.QUANTIZE, [feed(F32, x)], out(Q8, (2,), 1.0, 5))
    np.testing.assert_array_equal(got, [5, 5])


@pytest.mark.parametrize("output_type, dtype", [(F32, np.float32), (F16, np.float16)],
                         ids=["f32", "f16"])
def test_dequantize_asymmetric_and_symmetric(output_type, dtype):
    q = np.array([0, 3, 255], np.uint8)
    got = run1(Op.DEQUANTIZE, [feed(Q8, q, scale=0.5, zero_point=3)], out(output_type, (3,)))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, [-1.5, 0.0, 126.0])
    s = np.array([-128, 0, 127], np.int8)
    got = run1(Op.DEQUANTIZE, [feed(Q8S, s, scale=0.25)], out(output_type, (3,)))
    np.testing.assert_array_equal(got, [-32.0, 0.0, 31.75])


@pytest.mark.parametrize("channel_dim", [0, 1, 2])
def test_dequantize_per_channel(channel_dim):
    rng = np.random.default_rng(channel_dim)
    q = rng.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    scales = rng.uniform(0.1, 2.0, q.shape[channel_dim]).astype(np.float32)
    source = feed(Q8PC, q, channel_scales=[float(s) for s in scales], channel_dim=channel_dim)
    got = run1(Op.DEQUANTIZE, [source], out(F32, q.shape))
    shape = [1, 1, 1]
    shape[channel_dim] = -1
    np.testing.assert_array_equal(got, q.astype(np.float32) * scales.reshape(shape))


def test_zero_sized_inputs():
    empty = np.zeros((0, 3), np.float32)
    quantized = run1(Op.QUANTIZE, [feed(F32, empty)], out(Q8, (0, 0), 0.5, 0))
    assert quantized.shape == (0, 3) and quantized.dtype == np.uint8
    real = run1(Op.DEQUANTIZE, [feed(Q8, quantized, scale=0.5)], out(F16, (0, 0)))
    assert real.shape == (0, 3) and real.dtype == np.float16


def test_dequantize_rejects_rank_5():
    with pytest.raises(BadDataError, match=r"DEQUANTIZE\): input 0 \(input\) must have rank"):
        Compilation(build(Op.DEQUANTIZE, [feed(Q8, dims=(1, 1, 1, 1, 1), scale=1.0)],
                          [out(F32, (1, 1, 1, 1, 1))]))


def test_signature_levels_and_types():
    assert build(Op.DEQUANTIZE, [feed(Q8, dims=(1,), scale=1.0)],
                 [out(F32, (1,))]).feature_level == FeatureLevel.ANDROID_8_1
    assert build(Op.DEQUANTIZE, [feed(Q8S, dims=(1,), scale=1.0)],
                 [out(F32, (1,))]).feature_level == FeatureLevel.ANDROID_10
    with pytest.raises(BadDataError, match=r"QUANTIZE\): output 0 \(output\) is TENSOR_INT32"):
        build(Op.QUANTIZE, [feed(F32, dims=(1,))], [out(I32, (1,))])
    with pytest.raises(BadDataError, match=r"DEQUANTIZE\): .*TENSOR_INT32"):
        build(Op.DEQUANTIZE, [feed(I32, dims=(1,))], [out(F32, (1,))])
    with pytest.raises(BadDataError, match=r"CAST\): .*TENSOR_BOOL8"):
        build(Op.CAST, [feed(BOOL8, dims=(1,))], [out(F32, (1,))])
