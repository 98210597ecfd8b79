"""Chains recognised whole in a fused group (runtime/native/fused_patterns.py): GELU in its
erf and tanh forms and a layer norm's normalization, built as the converter lowers them with
randomized shapes, constants and operand orders. The recognised instruction equals the
generic program bit for bit (the same operations in the same order) and the reference kernels
within float32 rounding; a fused activation, an intermediate read elsewhere or a constant of
several elements leaves the chain to the generic program."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation
from torch_nnapi.runtime.native import fused_patterns

from ._compare import assert_close, assert_same, needs_native

pytestmark = needs_native
Op = OperationType
F32 = OperandType.TENSOR_FLOAT32
INT32 = OperandType.INT32
ERF_CONSTANTS = (1 / math.sqrt(2), 0.3275911, 1.0, 1.0, 1.061405429, -1.453152027,
                 1.421413741, -0.284496736, 0.254829592, 0.5)
TANH_CONSTANTS = (0.044715, math.sqrt(2 / math.pi), 1.0, 0.5)


class Builder:
    """A model of one input being built, commutative operands in random order."""

    def __init__(self, rng: np.random.Generator, shape: tuple[int, ...]):
        self.rng, self.shape = rng, shape
        self.model = Model()
        self.input = self.model.add_operand(F32, shape)
        self.shapes = {self.input: shape}
        self.outputs: list[int] = []

    def constant(self, value: float | np.ndarray) -> int:
        array = np.asarray(value, np.float32).reshape(np.shape(value) or (1,))
        operand = self.model.add_constant(F32, array)
        self.shapes[operand] = array.shape
        return operand

    def binary(self, op: OperationType, a: int, b: int, fuse: int = 0) -> int:
        if op in (Op.ADD, Op.MUL) and self.rng.random() < 0.5:
            a, b = b, a
        shape = tuple(np.broadcast_shapes(self.shapes[a], self.shapes[b]))
        return self._emit(op, [a, b, self.model.add_scalar(INT32, fuse)], shape)

    def unary(self, op: OperationType, a: int) -> int:
        return self._emit(op, [a], self.shapes[a])

    def mean(self, a: int) -> int:
        shape = self.shapes[a]
        axes = self.model.add_constant(OperandType.TENSOR_INT32,
                                       np.array([len(shape) - 1], np.int32))
        return self._emit(Op.MEAN, [a, axes, self.model.add_scalar(INT32, 1)],
                          (*shape[:-1], 1))

    def _emit(self, op: OperationType, operands: list[int], shape: tuple[int, ...]) -> int:
        result = self.model.add_operand(F32, shape)
        self.model.add_operation(op, operands, [result])
        self.shapes[result] = shape
        return result

    def finish(self, result: int) -> Model:
        self.model.identify_inputs_and_outputs([self.input], [result, *self.outputs])
        return self.model.finish()


def gelu_erf(b: Builder, x: int, k: tuple[float, ...], fuse: int = 0) -> int:
    """The converter's exact GELU (lowerings/activation.py), its constants ``k``."""
    ax = b.unary(Op.ABS, x)
    z = b.binary(Op.MUL, ax, b.constant(k[0]))
    t = b.binary(Op.DIV, b.constant(k[2]),
                 b.binary(Op.ADD, b.binary(Op.MUL, z, b.constant(k[1])), b.constant(k[3])))
    poly = b.binary(Op.MUL, t, b.constant(k[4]), fuse)
    for c in k[5:9]:
        poly = b.binary(Op.MUL, b.binary(Op.ADD, poly, b.constant(c)), t)
    gauss = b.unary(Op.EXP, b.unary(Op.NEG, b.binary(Op.MUL, z, z)))
    erfc = b.binary(Op.MUL, poly, gauss)
    total = b.binary(Op.SUB, b.binary(Op.ADD, x, ax), b.binary(Op.MUL, ax, erfc))
    return b.binary(Op.MUL, total, b.constant(k[9]))


def gelu_tanh(b: Builder, x: int, k: tuple[float, ...], fuse: int = 0) -> int:
    cube = b.binary(Op.MUL, b.binary(Op.MUL, x, x), x)
    inner = b.binary(Op.MUL, b.binary(Op.ADD, x, b.binary(Op.MUL, cube, b.constant(k[0]))),
                     b.constant(k[1]), fuse)
    shifted = b.binary(Op.ADD, b.unary(Op.TANH, inner), b.constant(k[2]))
    return b.binary(Op.MUL, b.binary(Op.MUL, x, shifted), b.constant(k[3]))


def layer_norm(b: Builder, x: int, eps: float, affine: bool) -> int:
    deviation = b.binary(Op.SUB, x, b.mean(x))
    variance = b.mean(b.binary(Op.MUL, deviation, deviation))
    inverse = b.unary(Op.RSQRT, b.binary(Op.ADD, variance, b.constant(eps)))
    y = b.binary(Op.MUL, deviation, inverse)
    if affine:
        width = b.shape[-1]
        y = b.binary(Op.MUL, y, b.constant(b.rng.standard_normal(width).astype(np.float32)))
        y = b.binary(Op.ADD, y, b.constant(b.rng.standard_normal(width).astype(np.float32)))
    return y


def values(rng: np.random.Generator, shape: tuple[int, ...], extremes: bool) -> np.ndarray:
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if extremes and x.size > 8:
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, 8, replace=False)
        flat[picks] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 30.0, -30.0, 1e-30]
    return x


def recognised_names(monkeypatch) -> list[str]:
    """The names of the templates matched from now on."""
    names: list[str] = []
    find = fused_patterns.find

    def spy(*args: Any, **kwargs: Any) -> list[fused_patterns.Match]:
        matches = find(*args, **kwargs)
        names.extend(m.name for m in matches)
        return matches

    monkeypatch.setattr(fused_patterns, "find", spy)
    return names


def run_three(monkeypatch, model: Model, x: np.ndarray
              ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[str]]:
    """(reference, generic program, recognised, the names recognised) of one model."""
    with np.errstate(all="ignore"):
        reference = Compilation(model, kernels="reference").run([x]).outputs
    with monkeypatch.context() as m:
        m.setattr(fused_patterns, "TEMPLATES", {})
        generic = Compilation(model, kernels="native").run([x]).outputs
    names = recognised_names(monkeypatch)
    compilation = Compilation(model, kernels="native")
    compilation.run([x])
    recognised = compilation.run([x]).outputs
    return reference, generic, recognised, names


def random_shape(rng: np.random.Generator) -> tuple[int, ...]:
    rank = int(rng.integers(1, 4))
    return tuple(int(d) for d in rng.integers(1, 40, rank - 1)) + (int(rng.integers(1, 700)),)


GELUS: dict[str, tuple[Callable[..., int], tuple[float, ...]]] = {
    "gelu_erf": (gelu_erf, ERF_CONSTANTS), "gelu_tanh": (gelu_tanh, TANH_CONSTANTS)}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", GELUS)
def test_gelu_equals_its_operations(monkeypatch, name, seed):
    """Randomized shapes and constants (the lowering's, perturbed: read from the model)."""
    rng = np.random.default_rng(seed)
    build, constants = GELUS[name]
    k = tuple(c * (1 + 0.1 * rng.standard_normal()) if seed % 2 else c for c in constants)
    shape = random_shape(rng)
    b = Builder(rng, shape)
    model = b.finish(build(b, b.input, k))
    reference, generic, recognised, names = run_three(monkeypatch, model,
                                                      values(rng, shape, seed % 3 == 0))
    assert names == [name]
    assert_same(generic, recognised)
    assert_close(reference, recognised, rtol=1e-5)


@pytest.mark.parametrize("seed", range(12))
def test_layer_norm_equals_its_operations(monkeypatch, seed):
    rng = np.random.default_rng(100 + seed)
    shape = random_shape(rng)
    b = Builder(rng, shape)
    model = b.finish(layer_norm(b, b.input, float(rng.choice([1e-5, 1e-6, 0.1])),
                                affine=seed % 2 == 0))
    x = values(rng, shape, seed % 4 == 0)
    reference, generic, recognised, names = run_three(monkeypatch, model, x)
    assert names == ["normalize"]  # (rows of one value then run as the generic program)
    assert_same(generic, recognised)
    assert_close(reference, recognised, rtol=1e-5)


def test_gelu_inside_a_longer_group(monkeypatch):
    """GELU of a sum, then a residual: one group, its middle recognised."""
    rng = np.random.default_rng(5)
    b = Builder(rng, (6, 300))
    shifted = b.binary(Op.ADD, b.input, b.constant(rng.standard_normal(300).astype(np.float32)))
    y = gelu_erf(b, shifted, ERF_CONSTANTS)
    model = b.finish(b.binary(Op.ADD, y, b.input))
    reference, generic, recognised, names = run_three(monkeypatch, model,
                                                      values(rng, (6, 300), False))
    assert names == ["gelu_erf"]
    assert_same(generic, recognised)
    assert_close(reference, recognised)


@pytest.mark.parametrize("spoiler", ["activation", "read elsewhere", "tensor constant"])
def test_what_ends_a_match(monkeypatch, spoiler):
    """A fused activation, an intermediate given out or a constant of several elements: the
    chain runs as the generic program, still equal to the reference."""
    rng = np.random.default_rng(9)
    b = Builder(rng, (4, 64))
    k: tuple[float | np.ndarray, ...] = TANH_CONSTANTS
    if spoiler == "tensor constant":
        k = (np.full(64, TANH_CONSTANTS[0], np.float32), *TANH_CONSTANTS[1:])
    result = gelu_tanh(b, b.input, k, fuse=1 if spoiler == "activation" else 0)  # type: ignore[arg-type]
    if spoiler == "read elsewhere":
        b.outputs.append(b.model.operations[0].outputs[0])  # x * x
    model = b.finish(result)
    reference, generic, recognised, names = run_three(monkeypatch, model,
                                                      values(rng, (4, 64), False))
    assert names == []
    assert_same(generic, recognised)
    assert_close(reference, recognised)


def test_rows_of_one_value_run_the_generic_program(monkeypatch):
    """A normalization over rows of one value is matched but not planned as one: the plan
    wants a row to run along; the generic program computes it."""
    rng = np.random.default_rng(11)
    b = Builder(rng, (7, 1))
    model = b.finish(layer_norm(b, b.input, 1e-5, affine=False))
    reference, generic, recognised, names = run_three(monkeypatch, model,
                                                      values(rng, (7, 1), False))
    assert names == ["normalize"]
    assert_same(generic, recognised)
    assert_close(reference, recognised)
