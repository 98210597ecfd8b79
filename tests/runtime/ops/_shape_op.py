"""Builds and runs one-operation models for the shape, movement, reduction, lookup and
sampling kernel tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.nnapi.operand_types import type_info
from torch_nnapi.runtime import Compilation

F32 = OperandType.TENSOR_FLOAT32
F16 = OperandType.TENSOR_FLOAT16
I32 = OperandType.TENSOR_INT32
Q8 = OperandType.TENSOR_QUANT8_ASYMM
BOOL8 = OperandType.TENSOR_BOOL8
INT = OperandType.INT32
BOOL = OperandType.BOOL
HALF = OperandType.FLOAT16


@dataclass
class Arg:
    """An operand of the operation under test.

    A constant by default; with ``feed=True`` a model input given ``value`` at execution.
    ``dims`` declares the dimensions (0 = unknown); by default those of ``value``. A value of
    None with ``feed=False`` makes an omitted operand.
    """

    type: OperandType
    value: Any = None
    feed: bool = False
    dims: Sequence[int] | None = None
    scale: float = 0.0
    zero_point: int = 0

    def array(self) -> np.ndarray:
        return np.asarray(self.value, dtype=type_info(self.type).dtype)


def const(type: OperandType, value, scale: float = 0.0, zero_point: int = 0) -> Arg:
    return Arg(type, value, scale=scale, zero_point=zero_point)


def feed(type: OperandType, value, dims=None, scale: float = 0.0, zero_point: int = 0) -> Arg:
    return Arg(type, value, feed=True, dims=dims, scale=scale, zero_point=zero_point)


def out(type: OperandType, dims: Sequence[int] = (), scale: float = 0.0,
        zero_point: int = 0) -> Arg:
    return Arg(type, dims=dims, scale=scale, zero_point=zero_point)


def build(op: OperationType, inputs: Sequence[Arg], outputs: Sequence[Arg]) -> Model:
    m = Model()
    in_ids, feeds = [], []
    for arg in inputs:
        scalar = type_info(arg.type).is_scalar
        if arg.dims is not None:
            dims = arg.dims
        else:
            dims = () if scalar or arg.value is None else arg.array().shape
        index = m.add_operand(arg.type, dims, arg.scale, arg.zero_point)
        if arg.feed:
            feeds.append(index)
        else:
            m.set_operand_value(index, None if arg.value is None else arg.array())
        in_ids.append(index)
    out_ids = [m.add_operand(o.type, o.dims, o.scale, o.zero_point) for o in outputs]
    m.add_operation(op, in_ids, out_ids)
    m.identify_inputs_and_outputs(feeds, out_ids)
    return m.finish()


def run(op: OperationType, inputs: Sequence[Arg], outputs: Sequence[Arg]) -> list[np.ndarray]:
    """Builds, compiles and runs the operation; returns its outputs."""
    model = build(op, inputs, outputs)
    values = [a.array() for a in inputs if a.feed]
    return Compilation(model).run(values).outputs


def run1(op: OperationType, inputs: Sequence[Arg], output: Arg) -> np.ndarray:
    return run(op, inputs, [output])[0]
