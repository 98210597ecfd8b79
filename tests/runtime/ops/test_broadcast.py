"""ADD, SUB, MUL, DIV on int32 (API 30): wrapping arithmetic, floor division, no activation;
and signed quant8 ADD against the uint8 kernel."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, OperandType
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import I32, Q8, build, feed, i32, out, run1

Q8_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
A = np.array([[7, -7, 2**31 - 1, -(2**31)]], np.int32)
B = np.array([[2], [-2]], np.int32)


def _int32(op, a, b, fuse=0):
    shape = np.broadcast_shapes(a.shape, b.shape)
    return run1(op, [feed(I32, a), feed(I32, b), i32(fuse)], out(I32, shape))


def test_int32_add_sub_mul_wrap_around():
    with np.errstate(over="ignore"):
        for op, fn in ((Op.ADD, np.add), (Op.SUB, np.subtract), (Op.MUL, np.multiply)):
            np.testing.assert_array_equal(_int32(op, A, B), fn(A, B))


def test_int32_div_rounds_down_and_gives_zero_for_a_zero_divisor():
    got = _int32(Op.DIV, np.array([7, -7, 7, -7, 5], np.int32),
                 np.array([2, 2, -2, -2, 0], np.int32))
    assert got.tolist() == [3, -4, -4, 3, 0]


def test_int32_arithmetic_takes_no_activation():
    with pytest.raises(BadDataError, match=r"ADD\): int32 arithmetic takes fuse code NONE"):
        build(Op.ADD, [feed(I32, A), feed(I32, A), i32(1)], [out(I32, A.shape)])
    fuse = feed(OperandType.INT32, dims=())
    compilation = Compilation(build(Op.ADD, [feed(I32, A), feed(I32, A), fuse],
                                    [out(I32, A.shape)]))
    with pytest.raises(BadDataError, match=r"fuse_code\) must be NONE \(0\) for int32"):
        compilation.run([A, A, np.int32(1)])


def test_signed_add_is_the_unsigned_add_shifted():
    rng = np.random.default_rng(5)
    a, b = rng.integers(-128, 128, (2, 3, 5)).astype(np.int8)
    quant = ((0.1, -3), (0.07, 20), (0.15, 5))

    def add(x, y, operand_type, offset):
        (sa, za), (sb, zb), (so, zo) = quant
        return run1(Op.ADD, [feed(operand_type, x, sa, za + offset),
                             feed(operand_type, y, sb, zb + offset), i32(1)],
                    out(operand_type, x.shape, so, zo + offset))

    signed = add(a, b, Q8_SIGNED, 0)
    unsigned = add((a.astype(np.int32) + 128).astype(np.uint8),
                   (b.astype(np.int32) + 128).astype(np.uint8), Q8, 128)
    np.testing.assert_array_equal(signed.astype(np.int32) + 128, unsigned)
