"""Builds and runs one-operation models for the detection kernel tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

T = OperandType


@dataclass
class Tensor:
    """A tensor input: a model input unless ``const``; ``dims`` overrides the declared shape."""

    type: OperandType
    value: object
    scale: float = 0.0
    zero_point: int = 0
    const: bool = False
    dims: tuple | None = None


@dataclass
class Scalar:
    type: OperandType
    value: object


@dataclass
class Out:
    """An output; ``dims`` may hold 0 for unknown dimensions (the default: unknown, given rank)."""

    type: OperandType
    rank: int
    scale: float = 0.0
    zero_point: int = 0
    dims: tuple | None = None


def build(op: OperationType, inputs: list, outputs: list[Out]) -> tuple[Model, list]:
    m = Model()
    operands, feeds = [], []
    for spec in inputs:
        if isinstance(spec, Scalar):
            operands.append(m.add_scalar(spec.type, spec.value))
            continue
        value = np.asarray(spec.value)
        if spec.const:
            operands.append(m.add_constant(spec.type, value, spec.scale, spec.zero_point))
            continue
        dims = spec.dims if spec.dims is not None else value.shape
        operands.append(m.add_operand(spec.type, dims, spec.scale, spec.zero_point))
        feeds.append((operands[-1], value))
    outs = [m.add_operand(o.type, o.dims if o.dims is not None else (0,) * o.rank, o.scale,
                          o.zero_point) for o in outputs]
    m.add_operation(op, operands, outs)
    m.identify_inputs_and_outputs([i for i, _ in feeds], outs)
    return m.finish(), [v for _, v in feeds]


def run(op: OperationType, inputs: list, outputs: list[Out]) -> list[np.ndarray]:
    model, feeds = build(op, inputs, outputs)
    return Compilation(model).run(feeds).outputs


def quantize(x, scale: float, zero_point: int, dtype) -> np.ndarray:
    limits = np.iinfo(dtype)
    q = np.floor(np.asarray(x, np.float64) / scale + 0.5) + zero_point
    return np.clip(q, limits.min, limits.max).astype(dtype)
