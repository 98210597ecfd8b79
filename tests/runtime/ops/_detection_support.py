"""Detection tests describe operands with their values; this adapts them to ``_single_op``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

from . import _single_op

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
    """A constant scalar input."""

    type: OperandType
    value: object


@dataclass
class Out:
    """An output of the given rank, its dimensions unknown (0) unless ``dims`` says."""

    type: OperandType
    rank: int
    scale: float = 0.0
    zero_point: int = 0
    dims: tuple | None = None


def build(op: OperationType, inputs: list, outputs: list[Out]) -> tuple[Model, list]:
    """The one-operation model and the values to feed its (non-constant) inputs."""
    args, feeds = [], []
    for spec in inputs:
        if isinstance(spec, Scalar):
            args.append(_single_op.Arg(spec.type, (), value=spec.value))
            continue
        value = np.asarray(spec.value)
        dims = spec.dims if spec.dims is not None else value.shape
        args.append(_single_op.Arg(spec.type, dims, spec.scale, spec.zero_point,
                                   value=value if spec.const else None))
        if not spec.const:
            feeds.append(value)
    outs = [_single_op.Arg(o.type, o.dims if o.dims is not None else (0,) * o.rank, o.scale,
                           o.zero_point) for o in outputs]
    return _single_op.build(op, args, outs), feeds


def run(op: OperationType, inputs: list, outputs: list[Out]) -> list[np.ndarray]:
    model, feeds = build(op, inputs, outputs)
    return Compilation(model).run(feeds).outputs


def quantize(x, scale: float, zero_point: int, dtype) -> np.ndarray:
    """Test data to a quantized type (halves rounded up; exactness is not the point here)."""
    limits = np.iinfo(dtype)
    q = np.floor(np.asarray(x, np.float64) / scale + 0.5) + zero_point
    return np.clip(q, limits.min, limits.max).astype(dtype)
