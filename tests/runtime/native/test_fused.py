"""Group fusions of float32 element-wise operations (runtime/native/fused.py) against the
reference kernels on randomized chains: broadcast shapes of every rank, constants, fused
activations, registers reused, rows merged or whole. Chains of IEEE operations (arithmetic,
MAXIMUM, MINIMUM, NEG, ABS, SQRT, RSQRT, clamps) are bit-exact; exp, tanh and logistic are
within a few ulp; row reductions (sums in another order) within float32 rounding. And which
chains are not fused: an intermediate read elsewhere or given out, kept intermediates."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

from ._compare import assert_close, assert_same, needs_native

pytestmark = needs_native
Op = OperationType
F32 = OperandType.TENSOR_FLOAT32
INT32 = OperandType.INT32

EXACT_BINARY = [Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAXIMUM, Op.MINIMUM]
EXACT_UNARY = [Op.NEG, Op.ABS, Op.SQRT, Op.RSQRT, Op.RELU, Op.RELU1, Op.RELU6]
TRANSCENDENTAL = [Op.EXP, Op.TANH, Op.LOGISTIC]
REDUCTIONS = [Op.MEAN, Op.REDUCE_SUM, Op.REDUCE_MAX, Op.REDUCE_MIN]


class Chain:
    """A model being built: operands by shape, the inputs fed, and the values to feed."""

    def __init__(self, rng: np.random.Generator, full: tuple[int, ...]):
        self.rng, self.full = rng, full
        self.model = Model()
        self.inputs: list[int] = []
        self.values: list[np.ndarray] = []
        self.shapes: dict[int, tuple[int, ...]] = {}
        self.made: list[int] = []  # operation results, in order

    def shape_like_full(self) -> tuple[int, ...]:
        """The full shape with some dimensions 1 and some leading ones dropped."""
        shape = [d if self.rng.random() < 0.7 else 1 for d in self.full]
        return tuple(shape[int(self.rng.integers(0, len(shape))):]) or (1,)

    def data(self, shape: tuple[int, ...]) -> np.ndarray:
        return (self.rng.standard_normal(shape) * 2).astype(np.float32)

    def add_input(self, shape: tuple[int, ...] | None = None) -> int:
        shape = shape or self.shape_like_full()
        operand = self.model.add_operand(F32, shape)
        self.inputs.append(operand)
        self.values.append(self.data(shape))
        self.shapes[operand] = shape
        return operand

    def add_constant(self) -> int:
        shape = self.shape_like_full()
        operand = self.model.add_constant(F32, self.data(shape))
        self.shapes[operand] = shape
        return operand

    def operation(self, op: OperationType, operands: list[int], shape: tuple[int, ...],
                  extra: list[int]) -> int:
        result = self.model.add_operand(F32, shape)
        self.model.add_operation(op, operands + extra, [result])
        self.shapes[result] = shape
        self.made.append(result)
        return result

    def binary(self, op: OperationType, a: int, b: int) -> int:
        shape = tuple(np.broadcast_shapes(self.shapes[a], self.shapes[b]))
        extra = [self.model.add_scalar(INT32, int(self.rng.integers(0, 4)))] \
            if op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV) else []
        return self.operation(op, [a, b], shape, extra)

    def unary(self, op: OperationType, a: int) -> int:
        return self.operation(op, [a], self.shapes[a], [])

    def reduction(self, op: OperationType, a: int) -> int:
        shape = self.shapes[a]
        axes = self.model.add_constant(OperandType.TENSOR_INT32,
                                       np.array([len(shape) - 1], np.int32))
        keep = self.model.add_scalar(INT32, 1) if op == Op.MEAN else \
            self.model.add_scalar(OperandType.BOOL, True)
        return self.operation(op, [a, axes, keep], (*shape[:-1], 1), [])

    def finish(self, outputs: list[int]) -> Model:
        self.model.identify_inputs_and_outputs(self.inputs, outputs)
        return self.model.finish()


def random_chain(rng: np.random.Generator, unary: list[OperationType],
                 reductions: list[OperationType], length: int) -> Chain:
    """Operations each reading the last result and, for binary ones, an input, a constant or
    an earlier result (so intermediates are read several times)."""
    rank = int(rng.integers(1, 5))
    chain = Chain(rng, tuple(int(d) for d in rng.integers(1, 9, rank)))
    value = chain.add_input(chain.full if rng.random() < 0.5 else None)
    for _ in range(length):
        pick = rng.random()
        if reductions and pick < 0.15:
            value = chain.reduction(reductions[int(rng.integers(len(reductions)))], value)
        elif pick < 0.45:
            value = chain.unary(unary[int(rng.integers(len(unary)))], value)
        else:
            source = rng.random()
            other = chain.add_input() if source < 0.3 else chain.add_constant() \
                if source < 0.6 or len(chain.made) < 2 else \
                chain.made[int(rng.integers(len(chain.made) - 1))]
            op = EXACT_BINARY[int(rng.integers(len(EXACT_BINARY)))]
            value = chain.binary(op, *((value, other) if rng.random() < 0.5 else (other, value)))
    return chain


def run_fused(model: Model, values: list[np.ndarray]) -> tuple[list[np.ndarray],
                                                                list[np.ndarray], Compilation]:
    """(reference outputs, native outputs of the second run, the native compilation)."""
    with np.errstate(all="ignore"):
        expected = Compilation(model, kernels="reference").run(values).outputs
    compilation = Compilation(model, kernels="native")
    first = compilation.run(values).outputs
    actual = compilation.run(values).outputs
    for a, b in zip(first, actual, strict=True):
        np.testing.assert_array_equal(a, b)
    return expected, actual, compilation


def fused_steps(compilation: Compilation) -> int:
    return sum(step.fused_away for step in compilation.steps)


@pytest.mark.parametrize("seed", range(60))
def test_chains_of_ieee_operations_are_bit_exact(seed):
    rng = np.random.default_rng(seed)
    chain = random_chain(rng, EXACT_UNARY, [], int(rng.integers(2, 12)))
    model = chain.finish([chain.made[-1]])
    expected, actual, compilation = run_fused(model, chain.values)
    assert fused_steps(compilation) == len(chain.made) - 1  # one runner for the chain
    assert_same(expected, actual)


@pytest.mark.parametrize("seed", range(40))
def test_chains_with_row_reductions_and_transcendentals(seed):
    rng = np.random.default_rng(1000 + seed)
    chain = random_chain(rng, EXACT_UNARY + TRANSCENDENTAL, REDUCTIONS,
                         int(rng.integers(2, 12)))
    model = chain.finish([chain.made[-1]])
    expected, actual, compilation = run_fused(model, chain.values)
    assert fused_steps(compilation) == len(chain.made) - 1
    assert_close(expected, actual, rtol=1e-4)


def single_function(op: OperationType, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """op(x) + 0 (two operations: a group) through both kernel sets."""
    chain = Chain(np.random.default_rng(0), x.shape)
    value = chain.add_input(x.shape)
    chain.values[0] = x
    zero = chain.model.add_constant(F32, np.zeros(1, np.float32))
    chain.shapes[zero] = (1,)
    result = chain.binary(Op.ADD, chain.unary(op, value), zero)
    model = chain.finish([result])
    expected, actual, compilation = run_fused(model, chain.values)
    assert fused_steps(compilation) == 1
    return expected[0], actual[0]


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 steps (0 where both are the same NaN or infinity)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    same = (np.isnan(a) & np.isnan(b)) | (a == b)
    return np.where(same, 0, np.abs(ia - ib))


@pytest.mark.parametrize("op", TRANSCENDENTAL, ids=lambda o: o.name)
def test_exp_tanh_logistic_within_a_few_ulp(op):
    rng = np.random.default_rng(7)
    sweep = np.concatenate([
        np.linspace(-110, 95, 20001, dtype=np.float32),
        (rng.standard_normal(20000) * 3).astype(np.float32),
        np.float32(10.0) ** rng.uniform(-40, -1, 2000).astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.33, -103.9, -104.0,
                  0.625, -0.625, 9.0, -9.0, 1e-45, -1e-45], np.float32)])
    expected, actual = single_function(op, sweep)
    distance = ulps(expected, actual)
    tiny = np.abs(expected) < np.float32(1.2e-38)  # denormal results: absolute 1e-45
    assert distance[~tiny].max() <= 4, sweep[~tiny][np.argmax(distance[~tiny])]
    assert np.abs(actual[tiny] - expected[tiny]).max(initial=0) <= 3e-45
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))


def test_layer_norm_over_long_rows():
    """A composed layer norm (MEAN, SUB, MUL, MEAN, ADD, RSQRT, MUL) over rows of 3000."""
    rng = np.random.default_rng(3)
    chain = Chain(rng, (5, 3000))
    x = chain.add_input((5, 3000))
    mean = chain.reduction(Op.MEAN, x)
    deviation = chain.binary(Op.SUB, x, mean)
    variance = chain.reduction(Op.MEAN, chain.binary(Op.MUL, deviation, deviation))
    eps = chain.model.add_constant(F32, np.array([1e-5], np.float32))
    chain.shapes[eps] = (1,)
    inverse = chain.unary(Op.RSQRT, chain.binary(Op.ADD, variance, eps))
    result = chain.binary(Op.MUL, deviation, inverse)
    model = chain.finish([result])
    expected, actual, compilation = run_fused(model, chain.values)
    assert fused_steps(compilation) == 6
    assert_close(expected, actual)


def two_step_model(extra: str) -> tuple[Model, list[np.ndarray]]:
    """exp(x) * x, the EXP's result also read by another operation or given out."""
    chain = Chain(np.random.default_rng(0), (4, 8))
    x = chain.add_input((4, 8))
    e = chain.unary(Op.EXP, x)
    product = chain.binary(Op.MUL, e, x)
    outputs = [product]
    if extra == "reader":
        outputs.append(chain.unary(Op.NEG, chain.unary(Op.RSQRT, e)))
    elif extra == "output":
        outputs.append(e)
    return chain.finish(outputs), chain.values


@pytest.mark.parametrize("extra", ["reader", "output"])
def test_an_intermediate_read_elsewhere_ends_its_group(extra):
    model, values = two_step_model(extra)
    expected, actual, compilation = run_fused(model, values)
    assert not compilation.steps[0].fused_away  # the EXP is made
    assert_close(expected, actual)


def test_kept_intermediates_run_every_step():
    model, values = two_step_model("")
    compilation = Compilation(model, kernels="native")
    assert compilation.steps[0].fused_away
    kept = compilation.run(values, keep_intermediates=True)
    np.testing.assert_array_equal(kept.value(model.operations[0].outputs[0]),
                                  Compilation(model, kernels="reference").run(
                                      values, keep_intermediates=True).value(
                                      model.operations[0].outputs[0]))
