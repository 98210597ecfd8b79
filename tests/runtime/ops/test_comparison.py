"""Comparisons, logical operations and SELECT: broadcasting, quantized real-value semantics."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import BOOL8, F16, F32, I32, Q8, build, feed, out, run1

_COMPARISONS = {
    Op.EQUAL: np.equal, Op.NOT_EQUAL: np.not_equal, Op.GREATER: np.greater,
    Op.GREATER_EQUAL: np.greater_equal, Op.LESS: np.less, Op.LESS_EQUAL: np.less_equal,
}


@pytest.mark.parametrize("op", list(_COMPARISONS), ids=lambda o: o.name)
@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (F16, np.float16),
                                                 (I32, np.int32), (BOOL8, np.uint8)],
                         ids=["f32", "f16", "i32", "bool8"])
def test_comparison_broadcasts(op, operand_type, dtype):
    rng = np.random.default_rng(int(op))
    a = rng.integers(0, 2 if operand_type == BOOL8 else 4, (2, 1, 3)).astype(dtype)
    b = rng.integers(0, 2 if operand_type == BOOL8 else 4, (4, 1)).astype(dtype)
    got = run1(op, [feed(operand_type, a), feed(operand_type, b)], out(BOOL8, (2, 4, 3)))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, _COMPARISONS[op](a, b).astype(np.uint8))


@pytest.mark.parametrize("op", list(_COMPARISONS), ids=lambda o: o.name)
def test_quantized_inputs_compare_real_values(op):
    # input0: scale 0.5, zero point 10; input1: scale 2, zero point 0. Raw bytes disagree
    # with real values: 12 is 1.0 and 1 is 2.0.
    a = np.array([12, 14, 16, 10], np.uint8)  # 1, 2, 3, 0
    b = np.array([1, 1, 1, 0], np.uint8)  # 2, 2, 2, 0
    got = run1(op, [feed(Q8, a, scale=0.5, zero_point=10), feed(Q8, b, scale=2.0)],
               out(BOOL8, (4,)))
    want = _COMPARISONS[op](np.array([1.0, 2.0, 3.0, 0.0]), np.array([2.0, 2.0, 2.0, 0.0]))
    np.testing.assert_array_equal(got, want.astype(np.uint8))


@pytest.mark.parametrize("op, reference", [(Op.LOGICAL_AND, np.logical_and),
                                           (Op.LOGICAL_OR, np.logical_or)],
                         ids=["and", "or"])
def test_logical_binary_treats_nonzero_as_true(op, reference):
    a = np.array([[0, 1, 2, 255]], np.uint8)
    b = np.array([[0], [3]], np.uint8)
    got = run1(op, [feed(BOOL8, a), feed(BOOL8, b)], out(BOOL8, (2, 4)))
    np.testing.assert_array_equal(got, reference(a != 0, b != 0).astype(np.uint8))


def test_logical_not():
    x = np.array([0, 1, 7], np.uint8)
    np.testing.assert_array_equal(run1(Op.LOGICAL_NOT, [feed(BOOL8, x)], out(BOOL8, (3,))),
                                  [1, 0, 0])


def test_incompatible_broadcast_is_reported():
    compilation = Compilation(build(Op.LESS, [feed(F32, dims=(2, 3)), feed(F32, dims=(0,))],
                                    [out(BOOL8, (0,))]))
    with pytest.raises(BadDataError, match=r"operation 0 \(LESS\): shapes \[2, 3\] and \[1, 4\]"):
        compilation.run([np.zeros((2, 3), np.float32), np.zeros(4, np.float32)])


def test_comparison_output_must_be_bool8():
    with pytest.raises(BadDataError, match=r"EQUAL\): output 0 \(output\) is TENSOR_FLOAT32"):
        build(Op.EQUAL, [feed(F32, dims=(2,)), feed(F32, dims=(2,))], [out(F32, (2,))])


@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (F16, np.float16),
                                                 (I32, np.int32)], ids=["f32", "f16", "i32"])
def test_select(operand_type, dtype):
    condition = np.array([[1, 0, 5], [0, 0, 1]], np.uint8)
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    b = -np.arange(6, dtype=dtype).reshape(2, 3)
    got = run1(Op.SELECT, [feed(BOOL8, condition), feed(operand_type, a), feed(operand_type, b)],
               out(operand_type, (2, 3)))
    np.testing.assert_array_equal(got, np.where(condition != 0, a, b))


def test_select_requantizes_to_the_output():
    condition = np.array([1, 0, 1, 0], np.uint8)
    a = np.array([10, 11, 0, 255], np.uint8)  # scale 0.25, zero point 10: 0, .25, -2.5, 61.25
    b = np.array([0, 5, 9, 200], np.uint8)  # scale 1, zero point 0: 0, 5, 9, 200
    got = run1(Op.SELECT, [feed(BOOL8, condition), feed(Q8, a, scale=0.25, zero_point=10),
                           feed(Q8, b, scale=1.0)], out(Q8, (4,), 0.5, 2))
    # real / 0.5 + 2, rounded half away from zero, saturated: 0 -> 2, 5 -> 12, -2.5 -> -3 -> 0,
    # 200 -> 402 -> 255.
    np.testing.assert_array_equal(got, [2, 12, 0, 255])


def test_select_needs_equal_shapes():
    with pytest.raises(BadDataError, match=r"SELECT\): input 0 \(condition\) has shape \[3\]"
                                           r" but input 1 \(input1\) has \[1\]"):
        Compilation(build(Op.SELECT, [feed(BOOL8, dims=(3,)), feed(F32, dims=(1,)),
                                      feed(F32, dims=(1,))], [out(F32, (1,))]))
    with pytest.raises(BadDataError, match=r"input 2 \(input2\) has shape \[1\] but input 1"
                                           r" \(input1\) has \[3\]"):
        Compilation(build(Op.SELECT, [feed(BOOL8, dims=(3,)), feed(F32, dims=(3,)),
                                      feed(F32, dims=(1,))], [out(F32, (3,))]))


def test_select_condition_must_be_bool8():
    with pytest.raises(BadDataError, match=r"input 0 \(condition\) is TENSOR_INT32"):
        build(Op.SELECT, [feed(I32, dims=(3,)), feed(I32, dims=(3,)), feed(I32, dims=(3,))],
              [out(I32, (3,))])
