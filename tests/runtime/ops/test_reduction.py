"""MEAN, REDUCE_*, ARGMAX/ARGMIN, TOPK_V2."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import BOOL, BOOL8, F16, F32, I32, INT, Q8, build, const, feed, out, run, run1

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def test_mean_of_floats_with_repeated_and_negative_axes():
    y = run1(Op.MEAN, [feed(F32, X), const(I32, [2, -1, 0]), const(INT, 0)], out(F32, (3,)))
    np.testing.assert_allclose(y, X.mean(axis=(0, 2)), rtol=1e-6)
    y = run1(Op.MEAN, [feed(F32, X), const(I32, [1]), const(INT, 1)], out(F32, (2, 1, 4)))
    np.testing.assert_allclose(y, X.mean(axis=1, keepdims=True), rtol=1e-6)


def test_mean_of_quant8_truncates_the_integer_average():
    x = np.array([[1, 2], [4, 4]], np.uint8)  # row averages 1.5 and 4
    y = run1(Op.MEAN, [feed(Q8, x, scale=0.5, zero_point=2), const(I32, [1]), const(INT, 0)],
             out(Q8, (2,), scale=0.5, zero_point=2))
    assert y.tolist() == [1, 4]


def test_mean_axis_out_of_range():
    with pytest.raises(BadDataError, match=r"operation 0 \(MEAN\): input 1 \(axes\) 3 is out of"
                                           r" range \[-3, 3\)"):
        run1(Op.MEAN, [feed(F32, X), const(I32, [3]), const(INT, 0)], out(F32, (0,)))


def test_mean_with_axes_known_only_at_execution():
    model = build(Op.MEAN, [feed(F32, X), feed(I32, [0], dims=(0,)), const(INT, 0)],
                  [out(F32, ())])
    compilation = Compilation(model)
    for axes in ([0], [1, 2], [-1]):
        y = compilation.run([X, np.array(axes, np.int32)]).outputs[0]
        np.testing.assert_allclose(y, X.mean(axis=tuple(axes)), rtol=1e-6)


@pytest.mark.parametrize("op, reference", [
    (Op.REDUCE_MAX, np.max), (Op.REDUCE_MIN, np.min), (Op.REDUCE_SUM, np.sum),
    (Op.REDUCE_PROD, np.prod)])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_float_reductions_match_numpy(op, reference, keep_dims):
    y = run1(op, [feed(F32, X), const(I32, [0, 2]), const(BOOL, keep_dims)],
             out(F32, (0,) * (3 if keep_dims else 1)))
    np.testing.assert_allclose(y, reference(X, axis=(0, 2), keepdims=keep_dims), rtol=1e-5)


def test_float16_sum_is_computed_in_float32():
    x = np.full((4096,), 1.0, np.float16)  # float16 accumulation would stall at 2048
    y = run1(Op.REDUCE_SUM, [feed(F16, x), const(I32, [0]), const(BOOL, False)], out(F16, ()))
    assert y.shape == (1,) and float(y[0]) == 4096.0


def test_quant8_max_and_min_keep_raw_values():
    x = RNG.integers(0, 256, (3, 5)).astype(np.uint8)
    scale, zero_point = 0.1, 100
    for op, reference in ((Op.REDUCE_MAX, np.max), (Op.REDUCE_MIN, np.min)):
        y = run1(op, [feed(Q8, x, scale, zero_point), const(I32, [-1]), const(BOOL, True)],
                 out(Q8, (3, 1), scale, zero_point))
        np.testing.assert_array_equal(y, reference(x, axis=-1, keepdims=True))


def test_reduce_with_no_axes_is_the_identity():
    y = run1(Op.REDUCE_MAX, [feed(F32, X), feed(I32, np.zeros(0, np.int32), dims=(0,)),
                             const(BOOL, False)], out(F32, X.shape))
    np.testing.assert_array_equal(y, X)


def test_logical_reductions():
    x = np.array([[1, 0, 1], [1, 1, 1]], np.uint8)
    all_ = run1(Op.REDUCE_ALL, [feed(BOOL8, x), const(I32, [1]), const(BOOL, False)],
                out(BOOL8, (2,)))
    any_ = run1(Op.REDUCE_ANY, [feed(BOOL8, x), const(I32, [0]), const(BOOL, False)],
                out(BOOL8, (3,)))
    assert all_.tolist() == [0, 1] and any_.tolist() == [1, 1, 1]


# ------------------------------------------------------------------ ARGMAX, ARGMIN


def test_arg_max_and_min_pick_the_first_of_equal_values():
    x = np.array([[3, 7, 7, 1], [2, 2, 0, 0]], np.int32)
    big = run1(Op.ARGMAX, [feed(I32, x), const(INT, -1)], out(I32, (2,)))
    small = run1(Op.ARGMIN, [feed(I32, x), const(INT, 1)], out(I32, (2,)))
    assert big.tolist() == [1, 0] and small.tolist() == [3, 2]


@pytest.mark.parametrize("op, args, expected", [
    (Op.ARGMAX, [const(INT, 0)], 1),
    (Op.MEAN, [const(I32, [0]), const(INT, 0)], 8 / 3),
    (Op.REDUCE_SUM, [const(I32, [-1]), const(BOOL, False)], 8.0),
])
def test_reducing_a_vector_gives_shape_1(op, args, expected):
    """Android 11: NNAPI tensors have a rank of 1 or more (Android 10 gave rank 0)."""
    x = np.array([1, 5, 2], np.float32)
    y = run1(op, [feed(F32, x)] + args, out(I32 if op == Op.ARGMAX else F32, ()))
    assert y.shape == (1,)
    assert y[0] == pytest.approx(expected)


def test_arg_max_axis_out_of_range():
    with pytest.raises(BadDataError, match=r"input 1 \(axis\) -4 is out of range"):
        run1(Op.ARGMAX, [feed(F32, X), const(INT, -4)], out(I32, (0, 0)))


# ------------------------------------------------------------------ TOPK_V2


def test_top_k_orders_equal_values_by_descending_index():
    x = np.array([[5, 1, 5, 3, 5], [0, 9, 8, 9, 1]], np.uint8)
    values, indices = run(Op.TOPK_V2, [feed(Q8, x, scale=1.0), const(INT, 4)],
                          [out(Q8, (2, 4), scale=1.0), out(I32, (2, 4))])
    assert indices.tolist() == [[4, 2, 0, 3], [3, 1, 2, 4]]
    assert values.tolist() == [[5, 5, 5, 3], [9, 9, 8, 1]]


def test_top_k_of_floats_matches_a_sort():
    values, indices = run(Op.TOPK_V2, [feed(F32, X), const(INT, 2)],
                          [out(F32, (2, 3, 2)), out(I32, (2, 3, 2))])
    np.testing.assert_array_equal(values, -np.sort(-X, axis=-1)[..., :2])
    np.testing.assert_array_equal(np.take_along_axis(X, indices, axis=-1), values)


@pytest.mark.parametrize("k", [0, 5])
def test_top_k_range(k):
    with pytest.raises(BadDataError, match=rf"input 1 \(k\) {k} is out of range \[1, 4\]"):
        run(Op.TOPK_V2, [feed(F32, X), const(INT, k)], [out(F32, (0, 0, 0)), out(I32, (0, 0, 0))])
