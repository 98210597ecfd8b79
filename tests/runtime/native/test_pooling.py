"""Native AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D against the reference kernels on
randomized windows (filter sizes, strides, explicit and implicit padding, layouts, fused
activations), float32, uint8 and int8; all bit-exact (int8 averages round halves away from
zero, below zero too)."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType

from ..ops._single_op import F32, Q8, feed, out
from ._compare import assert_same, needs_native, run_both
from .test_conv import image, random_geometry, window_args

Op = OperationType
pytestmark = needs_native


def run_pool(monkeypatch, op: Op, quantized: bool, seed: int, signed: bool = False) -> None:
    rng = np.random.default_rng(seed)
    g = random_geometry(rng, dilation=False)
    channels = int(rng.integers(1, 20))
    x = image(rng, g, channels, quantized)
    if not quantized and rng.random() < 0.3:
        x.flat[rng.integers(0, x.size)] = rng.choice([np.inf, -np.inf, np.nan])
    scale, zero = float(10 ** rng.uniform(-2, 0)), int(rng.integers(0, 256))
    fuse = int(rng.integers(0, 4))
    # The pools' scalars: padding, strides, filter width and height, activation, layout.
    inputs = [feed(Q8, x, scale, zero) if quantized else feed(F32, x)]
    inputs += window_args(g, (g.kw, g.kh), fuse, grouped=False)
    output = out(Q8, (), scale, zero) if quantized else out(F32)
    with np.errstate(all="ignore"):
        expected, actual = run_both(monkeypatch, op, inputs, [output], signed=signed)
    assert_same(expected, actual)


@pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])
@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("op", [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D], ids=lambda o: o.name)
def test_quantized(monkeypatch, op, seed, signed):
    run_pool(monkeypatch, op, True, seed, signed)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("op", [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D],
                         ids=lambda o: o.name)
def test_float(monkeypatch, op, seed):
    run_pool(monkeypatch, op, False, 100 + seed)
