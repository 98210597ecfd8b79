"""Native ADD, SUB, MUL, DIV, RELU*, LOGISTIC, TANH, HARD_SWISH, QUANTIZE and DEQUANTIZE
against the reference kernels on randomized cases: broadcast shapes of every rank, zero
points, scales, fused activations, extreme values (float: infinities, NaN; quantized: 0 and
255), uint8 and, with the same cases made signed, int8. All results must be bit-exact, float
ones included (the same IEEE float32 operations)."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime.native.elementwise import broadcast_layout

from ..ops._single_op import F16, F32, I32, Q8, feed, i32, out
from ._compare import assert_same, needs_native, run_both

Op = OperationType
pytestmark = needs_native


def broadcast_pair(rng) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes of rank 0 to 4 that broadcast together."""
    rank = int(rng.integers(0, 5))
    full = [int(v) for v in rng.integers(1, 7, rank)]
    shapes = []
    for _ in range(2):
        shape = [d if rng.random() < 0.6 else 1 for d in full]
        shapes.append(tuple(shape[int(rng.integers(0, rank + 1)):]))
    return shapes[0], shapes[1]


def float_values(rng, shape) -> np.ndarray:
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    if x.size and rng.random() < 0.3:
        x.flat[rng.integers(0, x.size)] = rng.choice([np.inf, -np.inf, np.nan, 0.0, -0.0])
    return x


def quant_values(rng, shape) -> np.ndarray:
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    if x.size and rng.random() < 0.3:
        x.flat[rng.integers(0, x.size)] = rng.choice([0, 255])
    return x


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL, Op.DIV], ids=lambda o: o.name)
def test_float_arithmetic(monkeypatch, op, seed):
    rng = np.random.default_rng(seed)
    a, b = broadcast_pair(rng)
    inputs = [feed(F32, float_values(rng, a)), feed(F32, float_values(rng, b)),
              i32(int(rng.integers(0, 4)))]
    with np.errstate(all="ignore"):
        expected, actual = run_both(monkeypatch, op, inputs, [out(F32)])
    assert_same(expected, actual)


SIGNED = pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])


@SIGNED
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL], ids=lambda o: o.name)
def test_quantized_arithmetic(monkeypatch, op, seed, signed):
    rng = np.random.default_rng(100 + seed)
    a, b = broadcast_pair(rng)
    s1, s2 = (float(10 ** rng.uniform(-3, 0)) for _ in range(2))
    # Output scales that make the rescale multipliers small, moderate and close to one (MUL
    # requires them below one).
    so = (s1 * s2 if op == Op.MUL else max(s1, s2)) * float(10 ** rng.uniform(0.01, 2.5))
    inputs = [feed(Q8, quant_values(rng, a), s1, int(rng.integers(0, 256))),
              feed(Q8, quant_values(rng, b), s2, int(rng.integers(0, 256))),
              i32(int(rng.integers(0, 4)))]
    expected, actual = run_both(monkeypatch, op, inputs,
                                [out(Q8, (), so, int(rng.integers(0, 256)))], signed=signed)
    assert_same(expected, actual)


@pytest.mark.parametrize("a, b, layout", [
    ((2, 3, 4), (2, 3, 4), ((1, 1, 1, 24), (0, 0, 0, 1), (0, 0, 0, 1))),
    ((2, 3, 4), (4,), ((1, 1, 6, 4), (0, 0, 4, 1), (0, 0, 0, 1))),
    ((2, 1, 4), (3, 1), ((1, 2, 3, 4), (0, 4, 0, 1), (0, 0, 1, 0))),
    ((), (5,), ((1, 1, 1, 5), (0, 0, 0, 0), (0, 0, 0, 1))),
    ((2, 1, 3, 1, 2), (1, 4, 1, 5, 1), None),
])
def test_broadcast_layout_merges_dimensions(a, b, layout):
    assert broadcast_layout(a, b) == layout


@SIGNED
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("op", [Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH,
                                Op.HARD_SWISH], ids=lambda o: o.name)
def test_quantized_activations(monkeypatch, op, seed, signed):
    rng = np.random.default_rng(200 + seed)
    shape = tuple(int(v) for v in rng.integers(1, 6, int(rng.integers(1, 5))))
    scale = float(10 ** rng.uniform(-3, 0.5))
    if op == Op.LOGISTIC:
        output = out(Q8, (), 1 / 256, 0)
    elif op == Op.TANH:
        output = out(Q8, (), 1 / 128, 128)
    elif op == Op.HARD_SWISH:  # NNAPI: output scale at least input scale / 128
        output = out(Q8, (), scale * float(10 ** rng.uniform(-2, 1)), int(rng.integers(0, 256)))
    else:
        output = out(Q8, (), scale, int(rng.integers(0, 256)))
    inputs = [feed(Q8, quant_values(rng, shape), scale, int(rng.integers(0, 256)))]
    if op in (Op.RELU, Op.RELU1, Op.RELU6):
        output = out(Q8, (), inputs[0].scale, inputs[0].zero_point)
    expected, actual = run_both(monkeypatch, op, inputs, [output], signed=signed)
    assert_same(expected, actual)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("op", [Op.RELU, Op.RELU1, Op.RELU6], ids=lambda o: o.name)
def test_float_clamps(monkeypatch, op, seed):
    rng = np.random.default_rng(300 + seed)
    x = float_values(rng, (3, 7, 5))
    x.flat[:4] = [np.nan, np.inf, -np.inf, np.finfo(np.float32).max]
    expected, actual = run_both(monkeypatch, op, [feed(F32, x)], [out(F32)])
    assert_same(expected, actual)


@SIGNED
@pytest.mark.parametrize("seed", range(8))
def test_quantize(monkeypatch, seed, signed):
    rng = np.random.default_rng(400 + seed)
    scale = float(10 ** rng.uniform(-3, 1))
    x = float_values(rng, (4, 33)) * np.float32(scale * 40)
    # Halves, which round away from zero, and values beyond the range.
    x.flat[:6] = np.float32(scale) * np.array([0.5, -0.5, 2.5, -2.5, 1e6, -1e6], np.float32)
    x.flat[6] = np.nan  # the upper bound, as the reference's clamp lets it through
    expected, actual = run_both(monkeypatch, Op.QUANTIZE, [feed(F32, x)],
                                [out(Q8, (), scale, int(rng.integers(0, 256)))], signed=signed)
    assert_same(expected, actual)


@SIGNED
@pytest.mark.parametrize("seed", range(4))
def test_dequantize(monkeypatch, seed, signed):
    rng = np.random.default_rng(500 + seed)
    inputs = [feed(Q8, quant_values(rng, (2, 3, 17)), float(10 ** rng.uniform(-3, 1)),
                   int(rng.integers(0, 256)))]
    expected, actual = run_both(monkeypatch, Op.DEQUANTIZE, inputs, [out(F32)], signed=signed)
    assert_same(expected, actual)


@pytest.mark.parametrize("op", [Op.LOGISTIC, Op.TANH], ids=lambda o: o.name)
def test_float_sigmoids(monkeypatch, op):
    x = float_values(np.random.default_rng(9), (3, 50)) * np.float32(10)
    x.flat[:4] = [np.nan, np.inf, -np.inf, 100.0]
    expected, actual = run_both(monkeypatch, op, [feed(F32, x)], [out(F32)])
    assert_same(expected, actual)


CAST_TYPES = {F32: np.float32, F16: np.float16, I32: np.int32}
# (source, target): every pair of the float and integer types, and uint8 to itself (CAST
# takes 8-bit quantized tensors only to the same type and parameters).
CAST_PAIRS = [(a, b) for a in CAST_TYPES for b in CAST_TYPES] + [(Q8, Q8)]


@pytest.mark.parametrize("seed", range(len(CAST_PAIRS)))
def test_cast(monkeypatch, seed):
    """Values beyond the target's range, fractions and NaN (saturation, truncation toward
    zero, NaN to 0)."""
    rng = np.random.default_rng(400 + seed)
    source, target = CAST_PAIRS[seed]
    if source == Q8:
        x = rng.integers(0, 256, (3, 5), dtype=np.uint8)
        inputs, output = [feed(Q8, x, 0.5, 3)], out(Q8, (), 0.5, 3)
    else:
        with np.errstate(over="ignore"):  # beyond float16's range: infinities
            x = (rng.standard_normal((3, 5)) * 1e5).astype(CAST_TYPES[source])
        if source != I32:
            x.flat[0] = np.nan
        inputs, output = [feed(source, x)], out(target)
    expected, actual = run_both(monkeypatch, OperationType.CAST, inputs, [output])
    assert_same(expected, actual)
