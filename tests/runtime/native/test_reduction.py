"""Native MEAN and REDUCE_SUM/MAX/MIN against the reference kernels on randomized tensors and
runs of adjacent axes, with keep_dims either way: the uint8 and int8 MEAN bit-exact, maxima
and minima exact, float sums within float32 rounding; axes apart stay with the reference."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType

from ..ops._single_op import F32, I32, INT, Q8, boolean, const, feed, out
from ._compare import assert_close, assert_same, needs_native, run_both

Op = OperationType
pytestmark = needs_native


def reduce_inputs(rng, op: Op, quantized: bool, adjacent: bool = True):
    rank = int(rng.integers(1, 5))
    shape = tuple(int(v) for v in rng.integers(1, 7, rank))
    first = int(rng.integers(0, rank))
    last = int(rng.integers(first, rank)) if adjacent else first
    axes = list(range(first, last + 1)) if adjacent else [0, rank - 1]
    axes = [a - rank if rng.random() < 0.3 else a for a in axes]  # negative axes too
    keep = bool(rng.random() < 0.5)
    if quantized:
        x = feed(Q8, rng.integers(0, 256, shape, dtype=np.uint8), 0.1, 7)
        output = out(Q8, (), 0.1, 7)
    else:
        values = (rng.standard_normal(shape) * 3).astype(np.float32)
        if rng.random() < 0.2:
            values.flat[0] = np.nan
        x, output = feed(F32, values), out(F32)
    flag = const(INT, int(keep)) if op == Op.MEAN else boolean(keep)
    return [x, const(I32, np.array(axes, np.int32)), flag], output


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("op", [Op.MEAN, Op.REDUCE_SUM, Op.REDUCE_MAX, Op.REDUCE_MIN],
                         ids=lambda o: o.name)
def test_float(monkeypatch, op, seed):
    inputs, output = reduce_inputs(np.random.default_rng(seed), op, quantized=False)
    expected, actual = run_both(monkeypatch, op, inputs, [output])
    if op in (Op.REDUCE_MAX, Op.REDUCE_MIN):
        assert_same(expected, actual)
    else:
        assert_close(expected, actual, rtol=1e-6)


@pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])
@pytest.mark.parametrize("seed", range(20))
def test_quantized_mean(monkeypatch, seed, signed):
    """int8 sums can be negative: their mean truncates toward zero, as the reference's."""
    inputs, output = reduce_inputs(np.random.default_rng(100 + seed), Op.MEAN, quantized=True)
    expected, actual = run_both(monkeypatch, Op.MEAN, inputs, [output], signed=signed)
    assert_same(expected, actual)


def test_axes_apart_stay_with_the_reference(monkeypatch):
    rng = np.random.default_rng(5)
    while True:
        inputs, output = reduce_inputs(rng, Op.REDUCE_SUM, quantized=False, adjacent=False)
        if inputs[0].value.ndim >= 3:
            break
    expected, actual = run_both(monkeypatch, Op.REDUCE_SUM, inputs, [output], handled=False)
    assert_same(expected, actual)
