"""RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT, TILE, FILL, RANK."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import F16, F32, FLOAT, HALF, I32, INT, Q8, build, const, feed, out, run, run1

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# ------------------------------------------------------------------ RESHAPE


def test_reshape_infers_the_minus_one_dimension():
    y = run1(Op.RESHAPE, [feed(F32, X), const(I32, [4, -1])], out(F32, (4, 6)))
    np.testing.assert_array_equal(y, X.reshape(4, 6))


def test_reshape_with_shape_known_only_at_execution():
    model = build(Op.RESHAPE, [feed(F32, X), feed(I32, [6, 4], dims=(0,))], [out(F32, ())])
    compilation = Compilation(model)
    for shape in ([6, 4], [-1, 2], [24], [2, -1, 3]):
        y = compilation.run([X, np.array(shape, np.int32)]).outputs[0]
        np.testing.assert_array_equal(y, X.reshape(shape))


@pytest.mark.parametrize("shape, message", [
    ([-1, -1], "at most one -1"),
    ([5, 5], r"has 25 elements, the input \[2, 3, 4\] has 24"),
    ([5, -1], "no size for the -1 dimension"),
    ([-2, 12], "must be >= 0"),
])
def test_reshape_rejects_bad_shapes(shape, message):
    with pytest.raises(BadDataError, match=r"operation 0 \(RESHAPE\): input 1 \(shape\)"
                                           f".*{message}"):
        run1(Op.RESHAPE, [feed(F32, X), const(I32, shape)], out(F32, (0,)))


def test_reshape_output_does_not_alias_its_input():
    x = X.copy()
    y = run1(Op.RESHAPE, [feed(F32, x), const(I32, [24])], out(F32, (24,)))
    y[0] = 100
    assert x[0, 0, 0] == 0


# ------------------------------------------------------------------ SQUEEZE, EXPAND_DIMS


def test_squeeze_all_or_listed_dimensions():
    x = np.ones((1, 3, 1, 2), np.float32)
    assert run1(Op.SQUEEZE, [feed(F32, x), const(I32, None)], out(F32, (0, 0))).shape == (3, 2)
    assert run1(Op.SQUEEZE, [feed(F32, x), const(I32, [-2])], out(F32, (0, 0, 0))).shape == \
        (1, 3, 2)


def test_squeeze_rejects_a_dimension_not_of_size_1():
    with pytest.raises(BadDataError, match=r"input 1 \(axes\) lists dimension 1, of size 3"):
        run1(Op.SQUEEZE, [feed(F32, np.ones((1, 3), np.float32)), const(I32, [1])],
             out(F32, (0,)))


@pytest.mark.parametrize("axis, shape", [(0, (1, 2, 3, 4)), (3, (2, 3, 4, 1)),
                                         (-1, (2, 3, 4, 1)), (-4, (1, 2, 3, 4))])
def test_expand_dims(axis, shape):
    y = run1(Op.EXPAND_DIMS, [feed(F32, X), const(INT, axis)], out(F32, (0,) * 4))
    np.testing.assert_array_equal(y, X.reshape(shape))


def test_expand_dims_axis_out_of_range():
    with pytest.raises(BadDataError, match=r"input 1 \(axis\) 4 is out of range \[-4, 4\)"):
        run1(Op.EXPAND_DIMS, [feed(F32, X), const(INT, 4)], out(F32, (0,) * 4))


# ------------------------------------------------------------------ TRANSPOSE


def test_transpose_by_permutation_or_reversed_without_one():
    y = run1(Op.TRANSPOSE, [feed(F32, X), const(I32, [1, 2, 0])], out(F32, (3, 4, 2)))
    np.testing.assert_array_equal(y, X.transpose(1, 2, 0))
    y = run1(Op.TRANSPOSE, [feed(F32, X), const(I32, None)], out(F32, (4, 3, 2)))
    np.testing.assert_array_equal(y, X.transpose())
    assert y.flags.c_contiguous


def test_transpose_rejects_a_non_permutation():
    with pytest.raises(BadDataError, match=r"input 1 \(perm\) \[0, 0, 1\] is not a"
                                           " permutation"):
        run1(Op.TRANSPOSE, [feed(F32, X), const(I32, [0, 0, 1])], out(F32, (0, 0, 0)))


# ------------------------------------------------------------------ CONCATENATION


def test_concatenation_matches_numpy():
    a, b = X, X[:, :2] * 2
    y = run1(Op.CONCATENATION, [feed(F32, a), feed(F32, b), const(INT, 1)], out(F32, (2, 5, 4)))
    np.testing.assert_array_equal(y, np.concatenate([a, b], axis=1))


def _requantize_reference(q, scale, zero_point, out_scale, out_zero_point):
    """Android's float32 formula: round(q * s + bias), halves away from zero."""
    s = np.float32(scale) * (np.float32(1) / np.float32(out_scale))
    bias = np.float32(-zero_point) * s
    real = q.astype(np.float32) * s + bias
    rounded = np.sign(real) * np.floor(np.abs(real).astype(np.float64) + 0.5)  # exact
    return np.clip(rounded.astype(np.int32) + out_zero_point, 0, 255).astype(np.uint8)


def test_concatenation_requantizes_quant8_inputs_to_the_output():
    a = np.arange(0, 256, 16, dtype=np.uint8).reshape(4, 4)
    b = np.arange(255, 0, -17, dtype=np.uint8)[:8].reshape(2, 4)
    model = build(Op.CONCATENATION,
                  [feed(Q8, a, scale=0.5, zero_point=10), feed(Q8, b, scale=0.25, zero_point=3),
                   const(INT, 0)], [out(Q8, (6, 4), scale=0.3, zero_point=7)])
    assert model.feature_level == FeatureLevel.ANDROID_10
    y = Compilation(model).run([a, b]).outputs[0]
    expected = np.concatenate([_requantize_reference(a, 0.5, 10, 0.3, 7),
                               _requantize_reference(b, 0.25, 3, 0.3, 7)])
    np.testing.assert_array_equal(y, expected)


def test_concatenation_requantization_saturates_before_casting():
    """128 and 255 at scale 10 into scale 1e-6 are some 1e9 quanta: both saturate to 255 (an
    int32 cast first would wrap 255's value around to a negative number, giving 0)."""
    a = np.array([128, 255], np.uint8)
    y = run1(Op.CONCATENATION, [feed(Q8, a, scale=10.0, zero_point=0), const(INT, 0)],
             out(Q8, (2,), scale=1e-6, zero_point=255))
    np.testing.assert_array_equal(y, [255, 255])
    y = run1(Op.CONCATENATION, [feed(Q8, a, scale=10.0, zero_point=255), const(INT, 0)],
             out(Q8, (2,), scale=1e-6, zero_point=0))
    np.testing.assert_array_equal(y, [0, 0])


def test_concatenation_with_shared_quantization_keeps_feature_level_1():
    a = np.zeros((1, 2), np.uint8)
    model = build(Op.CONCATENATION, [feed(Q8, a, scale=0.5), feed(Q8, a, scale=0.5),
                                     const(INT, 0)], [out(Q8, (2, 2), scale=0.5)])
    assert model.feature_level == FeatureLevel.ANDROID_8_1


@pytest.mark.parametrize("axis, b_shape, message", [
    (-1, (2, 3, 4), r"input 2 \(axis\) -1 is out of range \[0, 3\)"),
    (0, (2, 2, 4), r"input 1 \(inputs\) has shape \[2, 2, 4\], which differs from"
                    r" input 0 \(inputs\)"),
])
def test_concatenation_errors(axis, b_shape, message):
    with pytest.raises(BadDataError, match=message):
        run1(Op.CONCATENATION, [feed(F32, X), feed(F32, np.zeros(b_shape, np.float32)),
                                const(INT, axis)], out(F32, (0, 0, 0)))


def test_concatenation_of_zero_sized_inputs():
    empty = np.zeros((2, 0, 4), np.float32)
    model = build(Op.CONCATENATION, [feed(F32, empty, dims=(2, 0, 4)), feed(F32, X),
                                     const(INT, 1)], [out(F32, (0, 0, 0))])
    np.testing.assert_array_equal(Compilation(model).run([empty, X]).outputs[0], X)


# ------------------------------------------------------------------ SPLIT, TILE


def test_split_into_equal_parts():
    outs = run(Op.SPLIT, [feed(F16, X.astype(np.float16)), const(INT, -1), const(INT, 2)],
               [out(F16, (2, 3, 2)), out(F16, (2, 3, 2))])
    for y, part in zip(outs, np.split(X.astype(np.float16), 2, axis=-1), strict=True):
        np.testing.assert_array_equal(y, part)


@pytest.mark.parametrize("parts, outputs, message", [
    (3, 2, r"input 2 \(num_splits\) is 3, but the operation has 2 outputs"),
    (3, 3, r"input 2 \(num_splits\) 3 does not divide dimension 2 of size 4"),
])
def test_split_errors(parts, outputs, message):
    with pytest.raises(BadDataError, match=message):
        run(Op.SPLIT, [feed(F32, X), const(INT, 2), const(INT, parts)],
            [out(F32, (0, 0, 0))] * outputs)


def test_tile_matches_numpy_for_every_type():
    for t, dtype in ((F32, np.float32), (I32, np.int32), (Q8, np.uint8)):
        scale = 0.5 if t == Q8 else 0.0
        x = X.astype(dtype)
        y = run1(Op.TILE, [feed(t, x, scale), const(I32, [2, 1, 3])], out(t, (4, 3, 12), scale))
        np.testing.assert_array_equal(y, np.tile(x, (2, 1, 3)))


def test_tile_needs_one_multiple_per_dimension():
    with pytest.raises(BadDataError, match=r"input 1 \(multiples\) must have 3 values, got 2"):
        run1(Op.TILE, [feed(F32, X), const(I32, [2, 2])], out(F32, (0, 0, 0)))


def test_split_outputs_must_keep_the_input_quantization():
    x = np.zeros((2, 2), np.uint8)
    with pytest.raises(BadDataError, match=r"SPLIT\): output 1 must have the scale and zero"
                                           r" point of input \(0.5, 0\)"):
        run(Op.SPLIT, [feed(Q8, x, scale=0.5), const(INT, 0), const(INT, 2)],
            [out(Q8, (1, 2), scale=0.5), out(Q8, (1, 2), scale=0.25)])


# --------------------------------------------------------------------------------------------
# FILL and RANK (API 30); squeezing every dimension leaves [1]


def test_fill_makes_a_tensor_of_the_given_shape_and_value():
    for operand_type, scalar, value in ((F32, const(FLOAT, 2.5), 2.5), (I32, const(INT, -3), -3),
                                        (F16, const(HALF, 0.5), 0.5)):
        got = run1(Op.FILL, [feed(I32, np.array([2, 3], np.int32)), scalar],
                   out(operand_type, (0, 0)))
        assert got.shape == (2, 3) and (got == value).all()


def test_fill_rejects_a_negative_dimension():
    with pytest.raises(BadDataError, match=r"shape\) \[2, -1\] has a negative dimension"):
        run1(Op.FILL, [const(I32, [2, -1]), const(FLOAT, 1.0)], out(F32, (0, 0)))


def test_rank_of_every_tensor_type():
    for shape in ((5,), (2, 3), (1, 2, 3, 4)):
        x = np.zeros(shape, np.float32)
        assert run1(Op.RANK, [feed(F32, x, dims=(0,) * len(shape))], out(INT)) == len(shape)


def test_squeezing_every_dimension_leaves_one():
    got = run1(Op.SQUEEZE, [feed(F32, np.ones((1, 1), np.float32)), const(I32, None)],
               out(F32, (1,)))
    assert got.shape == (1,)
