"""Native SOFTMAX against the reference kernel on randomized tensors (ranks 1 to 4, every
axis, several betas): quantized results (uint8 and int8) bit-exact, float ones within float32
rounding."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType

from ..ops._single_op import F32, Q8, Operand, f32, feed, i32, out
from ._compare import assert_close, assert_same, needs_native, run_both

pytestmark = needs_native


def softmax_inputs(rng, quantized: bool) -> tuple[list[Operand], Operand]:
    shape = tuple(int(v) for v in rng.integers(1, 9, int(rng.integers(1, 5))))
    axis = int(rng.integers(-len(shape), len(shape)))
    beta = float(10 ** rng.uniform(-1, 1))
    if quantized:
        x = rng.integers(0, 256, shape, dtype=np.uint8)
        if rng.random() < 0.3:  # one dominating value: most differences are not counted
            x.flat[0] = 255
        scale = float(10 ** rng.uniform(-2, 0))
        inputs = [feed(Q8, x, scale, int(rng.integers(0, 256))), f32(beta), i32(axis)]
        return inputs, out(Q8, (), 1 / 256, 0)
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    return [feed(F32, x), f32(beta), i32(axis)], out(F32)


@pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])
@pytest.mark.parametrize("seed", range(30))
def test_quantized_softmax(monkeypatch, seed, signed):
    inputs, output = softmax_inputs(np.random.default_rng(seed), quantized=True)
    expected, actual = run_both(monkeypatch, OperationType.SOFTMAX, inputs, [output],
                                signed=signed)
    assert_same(expected, actual)


@pytest.mark.parametrize("seed", range(20))
def test_float_softmax(monkeypatch, seed):
    inputs, output = softmax_inputs(np.random.default_rng(100 + seed), quantized=False)
    expected, actual = run_both(monkeypatch, OperationType.SOFTMAX, inputs, [output])
    assert_close(expected, actual, rtol=2e-6)


@pytest.mark.parametrize("seed", range(8))
def test_float_softmax_long_rows(monkeypatch, seed):
    """Rows long enough for the sixteen-lane path (and its padded last group), along the
    last axis, a few with infinities or NaN (the one-at-a-time path)."""
    rng = np.random.default_rng(200 + seed)
    shape = (int(rng.integers(1, 6)), int(rng.integers(16, 300)))
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    if seed % 2:
        x[0, int(rng.integers(shape[1]))] = rng.choice([np.inf, -np.inf, np.nan])
    beta = float(10 ** rng.uniform(-1, 1))
    expected, actual = run_both(monkeypatch, OperationType.SOFTMAX,
                                [feed(F32, x), f32(beta), i32(-1)], [out(F32)])
    assert_close(expected, actual, rtol=2e-6)
