"""Native comparisons and SELECT against the reference kernels on randomized tensors of
every non-quantized type (broadcast shapes, NaN among floats); 8-bit quantized inputs are
left to the reference."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType

from ..ops._single_op import BOOL8, F16, F32, I32, Q8, feed, out
from ._compare import assert_same, needs_native, run_both

pytestmark = needs_native

PREDICATES = [OperationType.EQUAL, OperationType.NOT_EQUAL, OperationType.GREATER,
              OperationType.GREATER_EQUAL, OperationType.LESS, OperationType.LESS_EQUAL]
TYPES = {F32: np.float32, F16: np.float16, I32: np.int32, BOOL8: np.uint8}


def values(rng, kind, shape) -> np.ndarray:
    if kind == BOOL8:
        return rng.integers(0, 2, shape).astype(np.uint8)
    x = rng.integers(-3, 4, shape).astype(TYPES[kind])  # small integers: many ties
    if kind in (F32, F16) and x.size and rng.random() < 0.5:
        x.flat[int(rng.integers(x.size))] = np.nan
    return x


@pytest.mark.parametrize("seed", range(24))
def test_predicates(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    op = PREDICATES[seed % len(PREDICATES)]
    kind = list(TYPES)[seed % 3] if seed % 4 else I32
    shape = [int(v) for v in rng.integers(1, 5, int(rng.integers(1, 4)))]
    other = [1 if rng.random() < 0.4 else d for d in shape]  # broadcast along some axes
    inputs = [feed(kind, values(rng, kind, shape)), feed(kind, values(rng, kind, other))]
    expected, actual = run_both(monkeypatch, op, inputs, [out(BOOL8)])
    assert_same(expected, actual)


@pytest.mark.parametrize("op", [OperationType.LOGICAL_AND, OperationType.LOGICAL_OR])
def test_logical(monkeypatch, op):
    rng = np.random.default_rng(7)
    inputs = [feed(BOOL8, values(rng, BOOL8, (3, 4))), feed(BOOL8, values(rng, BOOL8, (1, 4)))]
    expected, actual = run_both(monkeypatch, op, inputs, [out(BOOL8)])
    assert_same(expected, actual)


@pytest.mark.parametrize("seed", range(12))
def test_select(monkeypatch, seed):
    rng = np.random.default_rng(100 + seed)
    kind = [F32, F16, I32][seed % 3]  # SELECT takes no BOOL8 data
    shape = tuple(int(v) for v in rng.integers(1, 6, int(rng.integers(1, 4))))
    condition = rng.integers(0, 3, shape).astype(np.uint8)  # any nonzero byte is true
    inputs = [feed(BOOL8, condition), feed(kind, values(rng, kind, shape)),
              feed(kind, values(rng, kind, shape))]
    expected, actual = run_both(monkeypatch, OperationType.SELECT, inputs, [out(kind)])
    assert_same(expected, actual)


def test_quantized_inputs_stay_with_the_reference(monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (2, 3), dtype=np.uint8)
    inputs = [feed(Q8, x, 0.5, 10), feed(Q8, x[::-1].copy(), 0.25, 3)]
    expected, actual = run_both(monkeypatch, OperationType.LESS, inputs, [out(BOOL8)],
                                handled=False)
    assert_same(expected, actual)
