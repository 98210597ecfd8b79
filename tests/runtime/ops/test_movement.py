"""PAD, PAD_V2, SLICE, STRIDED_SLICE, GATHER, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, CHANNEL_SHUFFLE."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel, OpFailedError
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import BOOL, F16, F32, HALF, I32, INT, Q8, build, const, feed, out, run1

RNG = np.random.default_rng(7)
X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
PADS = [[1, 0], [0, 2], [1, 1]]

# ------------------------------------------------------------------ PAD, PAD_V2


def test_pad_fills_quant8_with_the_zero_point():
    x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    model = build(Op.PAD, [feed(Q8, x, scale=0.5, zero_point=9), const(I32, PADS)],
                  [out(Q8, (3, 5, 6), scale=0.5, zero_point=9)])
    assert model.feature_level == FeatureLevel.ANDROID_10  # a nonzero zero point needs API 29
    y = Compilation(model).run([x]).outputs[0]
    np.testing.assert_array_equal(y, np.pad(x, PADS, constant_values=9))


def test_pad_v2_uses_the_given_value():
    x = X.astype(np.float16)
    y = run1(Op.PAD_V2, [feed(F16, x), const(I32, PADS), const(HALF, -1.5)], out(F16, (3, 5, 6)))
    np.testing.assert_array_equal(y, np.pad(x, PADS, constant_values=-1.5))


def test_pad_rejects_negative_or_misshaped_paddings():
    with pytest.raises(BadDataError, match=r"input 1 \(paddings\) .* must not be negative"):
        run1(Op.PAD, [feed(F32, X), const(I32, [[1, 0], [0, -1], [0, 0]])], out(F32, (0, 0, 0)))
    with pytest.raises(BadDataError, match=r"input 1 \(paddings\) must have shape \[3, 2\]"):
        run1(Op.PAD, [feed(F32, X), const(I32, [[1, 0], [0, 1]])], out(F32, (0, 0, 0)))


def test_pad_v2_quant8_value_must_fit():
    with pytest.raises(BadDataError, match=r"input 2 \(pad_value\) 300 is outside"):
        run1(Op.PAD_V2, [feed(Q8, X.astype(np.uint8), scale=1.0), const(I32, PADS),
                         const(INT, 300)], out(Q8, (0, 0, 0), scale=1.0))


# ------------------------------------------------------------------ SLICE, STRIDED_SLICE


def test_slice_with_size_minus_one():
    y = run1(Op.SLICE, [feed(I32, X.astype(np.int32)), const(I32, [1, 0, 2]),
                        const(I32, [-1, 2, -1])], out(I32, (1, 2, 2)))
    np.testing.assert_array_equal(y, X[1:, :2, 2:].astype(np.int32))


@pytest.mark.parametrize("begin, size, message", [
    ([0, 4, 0], [1, 1, 1], r"input 1 \(begin\) 4 is out of range \[0, 3\] for dimension 1"),
    ([0, 0, 3], [1, 1, 2], r"input 2 \(size\) 2 at begin 3 does not fit dimension 2"),
    ([0, -1, 0], [1, 1, 1], r"input 1 \(begin\) -1 is out of range"),
])
def test_slice_errors(begin, size, message):
    with pytest.raises(BadDataError, match=message):
        run1(Op.SLICE, [feed(F32, X), const(I32, begin), const(I32, size)], out(F32, (0, 0, 0)))


def _python_slice(b, e, s, begin_bit, end_bit):
    """The TensorFlow semantics as Python slices: masks drop the bound; indices clamp."""
    return slice(None if begin_bit else b, None if end_bit else e, s)


@pytest.mark.parametrize("seed", range(40))
def test_strided_slice_agrees_with_numpy_slicing(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 6, size=rng.integers(1, 5)))
    x = rng.standard_normal(shape).astype(np.float32)
    begins = [int(v) for v in rng.integers(-7, 7, len(shape))]
    ends = [int(v) for v in rng.integers(-7, 7, len(shape))]
    strides = [int(v) for v in rng.choice([-3, -2, -1, 1, 2, 3], len(shape))]
    begin_mask, end_mask = int(rng.integers(0, 16)), int(rng.integers(0, 16))
    plan = tuple(_python_slice(b, e, s, begin_mask >> i & 1, end_mask >> i & 1)
                 for i, (b, e, s) in enumerate(zip(begins, ends, strides, strict=True)))
    expected = x[plan]
    y = run1(Op.STRIDED_SLICE, [feed(F32, x), const(I32, begins), const(I32, ends),
                                const(I32, strides), const(INT, begin_mask),
                                const(INT, end_mask), const(INT, 0)], out(F32, (0,) * len(shape)))
    np.testing.assert_array_equal(y, expected)


def test_strided_slice_shrinks_axes():
    args = [feed(F32, X), const(I32, [1, -1, 0]), const(I32, [2, 3, 4]), const(I32, [1, 1, 2])]
    y = run1(Op.STRIDED_SLICE, args + [const(INT, 0), const(INT, 0), const(INT, 0b011)],
             out(F32, (2,)))
    np.testing.assert_array_equal(y, X[1, -1, 0::2])
    with pytest.raises(BadDataError, match=r"input 6 \(shrink_axis_mask\) shrinks dimension 2,"
                                           " whose slice has 2 elements"):
        run1(Op.STRIDED_SLICE, args + [const(INT, 0), const(INT, 0), const(INT, 0b100)],
             out(F32, (0, 0)))


def test_strided_slice_rejects_a_zero_stride():
    with pytest.raises(BadDataError, match=r"input 3 \(strides\) \[1, 0, 1\]: stride 1 is zero"):
        run1(Op.STRIDED_SLICE, [feed(F32, X), const(I32, [0, 0, 0]), const(I32, [1, 1, 1]),
                                const(I32, [1, 0, 1]), const(INT, 0), const(INT, 0),
                                const(INT, 0)], out(F32, (0, 0, 0)))


# ------------------------------------------------------------------ GATHER


def test_gather_with_higher_rank_indices():
    indices = np.array([[2, 0], [1, 1]], np.int32)
    y = run1(Op.GATHER, [feed(F32, X), const(INT, -2), feed(I32, indices)], out(F32, (0,) * 4))
    np.testing.assert_array_equal(y, np.take(X, indices, axis=1))


def test_constant_gather_index_out_of_range_is_a_model_error():
    model = build(Op.GATHER, [feed(F32, X), const(INT, 1), const(I32, [[0], [5]])],
                  [out(F32, (2, 2, 1, 4))])
    with pytest.raises(BadDataError, match=r"operation 0 \(GATHER\): input 2 \(indices\) value"
                                           r" 5 at \[1, 0\] is out of range \[0, 3\)"):
        Compilation(model)


def test_gather_index_out_of_range_fails_naming_the_input():
    compilation = Compilation(build(Op.GATHER, [feed(F32, X), const(INT, 1),
                                                feed(I32, [0, 1])], [out(F32, (2, 2, 4))]))
    with pytest.raises(OpFailedError, match=r"operation 0 \(GATHER\): input 2 \(indices\) value"
                                            r" 3 at \[1\] is out of range \[0, 3\)"):
        compilation.run([X, np.array([0, 3], np.int32)])


# ------------------------------------------------------------------ block rearrangements


def _space_to_batch_reference(x, block, pads):
    """TensorFlow's definition, element by element (NHWC)."""
    (bh, bw), ((top, bottom), (left, right)) = block, pads
    xp = np.pad(x, [(0, 0), (top, bottom), (left, right), (0, 0)])
    n, h, w, c = xp.shape
    y = np.zeros((n * bh * bw, h // bh, w // bw, c), x.dtype)
    for ob, oy, ox in itertools.product(range(y.shape[0]), range(y.shape[1]), range(y.shape[2])):
        shift, batch = divmod(ob, n)
        dy, dx = divmod(shift, bw)
        y[ob, oy, ox] = xp[batch, oy * bh + dy, ox * bw + dx]
    return y


@pytest.mark.parametrize("nchw", [False, True])
def test_space_to_batch_and_back(nchw):
    x = RNG.standard_normal((2, 3, 5, 2)).astype(np.float32)  # NHWC
    block, pads = (2, 3), ((1, 0), (0, 1))
    layout = (lambda a: a.transpose(0, 3, 1, 2)) if nchw else (lambda a: a)
    expected = _space_to_batch_reference(x, block, pads)
    y = run1(Op.SPACE_TO_BATCH_ND, [feed(F32, layout(x)), const(I32, block), const(I32, pads),
                                    const(BOOL, nchw)], out(F32, (0,) * 4))
    np.testing.assert_array_equal(y, layout(expected))
    back = run1(Op.BATCH_TO_SPACE_ND, [feed(F32, y), const(I32, block), const(BOOL, nchw)],
                out(F32, (0,) * 4))
    np.testing.assert_array_equal(back, layout(np.pad(x, [(0, 0), (1, 0), (0, 1), (0, 0)])))


def test_space_to_batch_pads_quant8_with_the_zero_point():
    x = np.full((1, 1, 1, 1), 200, np.uint8)
    y = run1(Op.SPACE_TO_BATCH_ND, [feed(Q8, x, scale=1.0, zero_point=128), const(I32, [2, 2]),
                                    const(I32, [[0, 1], [0, 1]])],
             out(Q8, (4, 1, 1, 1), scale=1.0, zero_point=128))
    assert y.reshape(-1).tolist() == [200, 128, 128, 128]


def test_batch_to_space_needs_a_divisible_batch():
    with pytest.raises(BadDataError, match=r"batch 3 of input 0 \(input\) is not a multiple"
                                           r" of the block size, input 1 \(block_shape\) 2x1"):
        run1(Op.BATCH_TO_SPACE_ND, [feed(F32, np.zeros((3, 1, 1, 1), np.float32)),
                                    const(I32, [2, 1])], out(F32, (0,) * 4))


def _depth_to_space_reference(x, b):
    n, h, w, c = x.shape
    y = np.zeros((n, h * b, w * b, c // (b * b)), x.dtype)
    for oy, ox in itertools.product(range(h * b), range(w * b)):
        start = ((oy % b) * b + ox % b) * (c // (b * b))
        y[:, oy, ox] = x[:, oy // b, ox // b, start:start + c // (b * b)]
    return y


@pytest.mark.parametrize("nchw", [False, True])
def test_depth_to_space_and_back(nchw):
    x = RNG.integers(0, 255, (2, 2, 3, 8)).astype(np.uint8)
    layout = (lambda a: a.transpose(0, 3, 1, 2)) if nchw else (lambda a: a)
    scale, zero_point = 0.5, 4
    y = run1(Op.DEPTH_TO_SPACE,
             [feed(Q8, layout(x), scale, zero_point), const(INT, 2), const(BOOL, nchw)],
             out(Q8, (0,) * 4, scale, zero_point))
    np.testing.assert_array_equal(y, layout(_depth_to_space_reference(x, 2)))
    back = run1(Op.SPACE_TO_DEPTH, [feed(Q8, y, scale, zero_point), const(INT, 2),
                                    const(BOOL, nchw)],
                out(Q8, (0,) * 4, scale, zero_point))
    np.testing.assert_array_equal(back, layout(x))


def test_space_to_depth_needs_divisible_spatial_size():
    with pytest.raises(BadDataError, match=r"spatial size 3x4 of input 0 \(input\) is not a"
                                           r" multiple of input 1 \(block_size\) 2"):
        run1(Op.SPACE_TO_DEPTH, [feed(F32, np.zeros((1, 3, 4, 1), np.float32)), const(INT, 2)],
             out(F32, (0,) * 4))


def test_block_operations_need_rank_4():
    with pytest.raises(BadDataError, match=r"input 0 \(input\) must have rank 4 \(NCHW\)"):
        run1(Op.DEPTH_TO_SPACE, [feed(F32, X), const(INT, 1), const(BOOL, True)],
             out(F32, (0, 0, 0)))


# ------------------------------------------------------------------ CHANNEL_SHUFFLE


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_channel_shuffle_follows_the_documented_formula(axis):
    x = RNG.standard_normal((6, 4, 6)).astype(np.float32)
    groups = 2 if axis == 1 else 3
    y = run1(Op.CHANNEL_SHUFFLE, [feed(F32, x), const(INT, groups), const(INT, axis)],
             out(F32, x.shape))
    size = x.shape[axis] // groups
    xm, ym = np.moveaxis(x, axis, 0), np.moveaxis(y, axis, 0)
    for k, g in itertools.product(range(size), range(groups)):
        np.testing.assert_array_equal(ym[k * groups + g], xm[g * size + k])


def test_channel_shuffle_groups_must_divide_the_axis():
    with pytest.raises(BadDataError, match=r"input 1 \(num_groups\) 5 does not divide"):
        run1(Op.CHANNEL_SHUFFLE, [feed(F32, X), const(INT, 5), const(INT, 2)], out(F32, X.shape))


def test_block_rearrangement_with_dimensions_known_only_at_execution():
    model = build(Op.SPACE_TO_DEPTH, [feed(F32, np.zeros((1, 2, 2, 1), np.float32),
                                           dims=(0, 0, 0, 0)), const(INT, 2), const(BOOL, True)],
                  [out(F32, (0, 0, 0, 0))])
    compilation = Compilation(model)
    for shape in ((1, 3, 4, 6), (2, 1, 2, 2)):  # NCHW
        x = RNG.standard_normal(shape).astype(np.float32)
        y = compilation.run([x]).outputs[0]
        n, c, h, w = shape
        assert y.shape == (n, c * 4, h // 2, w // 2)
        nhwc = x.transpose(0, 2, 3, 1)
        expected = nhwc.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 2, 4, 5)
        np.testing.assert_array_equal(y, expected.reshape(n, h // 2, w // 2, -1)
                                      .transpose(0, 3, 1, 2))
