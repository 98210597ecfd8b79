"""RANDOM_MULTINOMIAL."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.nnapi import OpFailedError
from torch_nnapi.runtime import Compilation

from ._single_op import F16, F32, I32, INT, build, const, feed, out, run1


def _model(logits, samples, dtype=F32):
    return build(Op.RANDOM_MULTINOMIAL, [feed(dtype, logits), const(INT, samples),
                                         feed(I32, [0, 0])], [out(I32, (len(logits), samples))])


def test_same_seeds_give_the_same_samples():
    logits = np.zeros((2, 5), np.float32)
    compilation = Compilation(_model(logits, 50))
    first = compilation.run([logits, np.array([1, 2], np.int32)]).outputs[0]
    again = compilation.run([logits, np.array([1, 2], np.int32)]).outputs[0]
    other = compilation.run([logits, np.array([2, 1], np.int32)]).outputs[0]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("dtype", [F32, F16])
def test_frequencies_follow_softmax_and_non_finite_logits_are_never_drawn(dtype):
    logits = np.array([[np.log(1), np.log(3), -np.inf, np.log(6), np.nan]],
                      np.float16 if dtype == F16 else np.float32)
    samples = run1(Op.RANDOM_MULTINOMIAL, [feed(dtype, logits), const(INT, 20000),
                                           feed(I32, [5, 6])], out(I32, (1, 20000)))
    counts = np.bincount(samples.reshape(-1), minlength=5) / 20000
    assert counts[2] == 0 and counts[4] == 0
    np.testing.assert_allclose(counts[[0, 1, 3]], [0.1, 0.3, 0.6], atol=0.02)


def test_a_row_without_finite_logits_fails():
    logits = np.array([[0.0, 1.0], [-np.inf, -np.inf]], np.float32)
    with pytest.raises(OpFailedError, match=r"input 0 \(logits\) row 1 has no finite logit"):
        Compilation(_model(logits, 3)).run([logits, np.array([1, 1], np.int32)])
