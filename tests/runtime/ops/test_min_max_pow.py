"""MAXIMUM, MINIMUM and POW: broadcasting, NaN order, quantized requantization."""

from __future__ import annotations

import math

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError
from torch_nnapi.nnapi import OperationType as Op

from ._single_op import F16, F32, I32, Q8, build, feed, out, run1


@pytest.mark.parametrize("op, reference", [(Op.MAXIMUM, np.maximum), (Op.MINIMUM, np.minimum)],
                         ids=["max", "min"])
@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (F16, np.float16),
                                                 (I32, np.int32)], ids=["f32", "f16", "i32"])
def test_min_max_broadcast(op, reference, operand_type, dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-50, 50, (3, 1, 2)).astype(dtype)
    b = rng.integers(-50, 50, (4, 1)).astype(dtype)
    got = run1(op, [feed(operand_type, a), feed(operand_type, b)], out(operand_type, (3, 4, 2)))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, reference(a, b))


def test_nan_follows_std_max_and_min():
    nan = np.float32(np.nan)
    a = np.array([nan, 1.0], np.float32)
    b = np.array([1.0, nan], np.float32)
    for op in (Op.MAXIMUM, Op.MINIMUM):
        got = run1(op, [feed(F32, a), feed(F32, b)], out(F32, (2,)))
        assert np.isnan(got[0]) and got[1] == 1.0


def _requantize_reference(q, scale, zero, out_scale, out_zero):
    real = float(np.float32((int(q) - zero) * np.float32(scale)))
    value = real / float(np.float32(out_scale)) + out_zero
    return min(255, max(0, int(math.copysign(math.floor(abs(value) + 0.5), value))))


@pytest.mark.parametrize("op, pick", [(Op.MAXIMUM, max), (Op.MINIMUM, min)], ids=["max", "min"])
def test_quantized_inputs_are_requantized_to_the_output(op, pick):
    a = np.arange(0, 256, 5, dtype=np.uint8)
    b = np.arange(255, -1, -5, dtype=np.uint8)
    qa, qb, qo = (0.3, 17), (0.7, 200), (0.45, 100)
    got = run1(op, [feed(Q8, a, *qa), feed(Q8, b, *qb)], out(Q8, a.shape, *qo))
    want = [pick(_requantize_reference(x, *qa, *qo), _requantize_reference(y, *qb, *qo))
            for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (F16, np.float16)],
                         ids=["f32", "f16"])
def test_pow_broadcasts(operand_type, dtype):
    base = np.array([[0.5, 2.0, 3.0, 4.0]], dtype)
    exponent = np.array([[0.0], [2.0], [-1.0]], dtype)
    got = run1(Op.POW, [feed(operand_type, base), feed(operand_type, exponent)],
               out(operand_type, (3, 4)))
    np.testing.assert_allclose(got, np.power(base.astype(np.float64), exponent), rtol=1e-3)


def test_pow_of_negative_base_with_fraction_is_nan():
    got = run1(Op.POW, [feed(F32, np.array([-8.0], np.float32)),
                        feed(F32, np.array([1 / 3], np.float32))], out(F32, (1,)))
    assert np.isnan(got[0])


def test_pow_rejects_int32():
    with pytest.raises(BadDataError, match=r"POW\): input 0 \(base\) is TENSOR_INT32"):
        build(Op.POW, [feed(I32, dims=(1,)), feed(I32, dims=(1,))], [out(I32, (1,))])


def test_max_inputs_must_share_a_type():
    with pytest.raises(BadDataError, match=r"MAXIMUM\): input 1 \(input1\) is TENSOR_INT32"):
        build(Op.MAXIMUM, [feed(F32, dims=(1,)), feed(I32, dims=(1,))], [out(F32, (1,))])
