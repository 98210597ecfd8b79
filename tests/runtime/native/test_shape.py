"""Native runners of the operations that only move values, against the reference kernels:
SPLIT along every axis of randomized tensors (parts that are views and parts that are
copies), STRIDED_SLICE with random bounds, strides and masks, and 8-bit CONCATENATION of
inputs quantized alike or unlike the output (uint8 and int8: requantized through tables) give
the reference's values exactly."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType

from ..ops._single_op import F32, I32, Q8, const, feed, i32, out
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


@pytest.mark.parametrize("seed", range(30))
def test_strided_slice(monkeypatch, seed):
    rng = np.random.default_rng(100 + seed)
    rank = int(rng.integers(1, 5))
    shape = [int(v) for v in rng.integers(1, 6, rank)]
    begins, ends, strides, shrink = [], [], [], 0
    for d, dim in enumerate(shape):
        if rng.random() < 0.25:  # a shrunk dimension: one element, a positive stride
            index = int(rng.integers(-dim, dim))
            begins.append(index)
            ends.append(index + 1 if index != -1 else dim)
            strides.append(1)
            shrink |= 1 << d
        else:
            begins.append(int(rng.integers(-dim - 1, dim + 2)))
            ends.append(int(rng.integers(-dim - 1, dim + 2)))
            strides.append(int(rng.choice([-2, -1, 1, 2])))
    masks = [int(rng.integers(0, 1 << rank)) & ~shrink for _ in range(2)]
    x = rng.standard_normal(shape).astype(np.float32)
    inputs = [feed(F32, x), const(I32, np.array(begins, np.int32)),
              const(I32, np.array(ends, np.int32)), const(I32, np.array(strides, np.int32)),
              i32(masks[0]), i32(masks[1]), i32(shrink)]
    expected, actual = run_both(monkeypatch, OperationType.STRIDED_SLICE, inputs, [out(F32)])
    assert_same(expected, actual)


@pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])
@pytest.mark.parametrize("seed", range(10))
def test_quantized_concatenation(monkeypatch, seed, signed):
    rng = np.random.default_rng(200 + seed)
    rank = int(rng.integers(1, 5))
    shape = [int(v) for v in rng.integers(1, 4, rank)]
    axis = int(rng.integers(0, rank))
    scale, zero = float(10 ** rng.uniform(-2, 0)), int(rng.integers(0, 256))
    inputs = []
    for _ in range(int(rng.integers(1, 4))):
        alike = rng.random() < 0.3  # quantized as the output: no requantization
        part_scale = scale if alike else float(10 ** rng.uniform(-2, 0))
        part_zero = zero if alike else int(rng.integers(0, 256))
        inputs.append(feed(Q8, rng.integers(0, 256, shape, dtype=np.uint8), part_scale,
                           part_zero))
    expected, actual = run_both(monkeypatch, OperationType.CONCATENATION, [*inputs, i32(axis)],
                                [out(Q8, (), scale, zero)], signed=signed)
    assert_same(expected, actual)


@pytest.mark.parametrize("seed", range(10))
def test_tile(monkeypatch, seed):
    rng = np.random.default_rng(300 + seed)
    shape = [int(v) for v in rng.integers(1, 4, int(rng.integers(1, 5)))]
    multiples = rng.integers(0 if seed % 5 == 0 else 1, 4, len(shape)).astype(np.int32)
    x = rng.standard_normal(shape).astype(np.float32)
    inputs = [feed(F32, x), const(I32, multiples)]
    expected, actual = run_both(monkeypatch, OperationType.TILE, inputs, [out(F32)])
    assert_same(expected, actual)
    assert all(a.flags.c_contiguous for a in actual)
