"""Native runners of the operations that only move values, against the reference kernels:
SPLIT along every axis of randomized tensors (parts that are views and parts that are
copies) gives the reference's parts exactly."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType

from ..ops._single_op import F32, feed, i32, out
from ._compare import assert_same, needs_native, run_both

pytestmark = needs_native


@pytest.mark.parametrize("seed", range(20))
def test_split(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    shape = [int(v) for v in rng.integers(1, 4, rank)]
    axis = int(rng.integers(-rank, rank))
    parts = int(rng.integers(1, 4))
    shape[axis] *= parts
    x = rng.standard_normal(shape).astype(np.float32)
    inputs = [feed(F32, x), i32(axis), i32(parts)]
    expected, actual = run_both(monkeypatch, OperationType.SPLIT, inputs,
                                [out(F32) for _ in range(parts)])
    assert_same(expected, actual)
    assert all(a.flags.c_contiguous for a in actual)
