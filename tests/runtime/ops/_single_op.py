"""Builds and runs models of one operation for the kernel tests.

Each operand is described together with its value: ``const`` is a constant (omitted when its
value is None), ``feed`` a model input whose value is given at execution (None: omitted at
execution), ``out`` an output. An operand's dimensions are those of its value unless ``dims``
says otherwise (0 for a dimension known only at execution).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.nnapi.operand_types import type_info
from torch_nnapi.runtime import Compilation

F32 = OperandType.TENSOR_FLOAT32
F16 = OperandType.TENSOR_FLOAT16
I32 = OperandType.TENSOR_INT32
Q8 = OperandType.TENSOR_QUANT8_ASYMM
Q8S = OperandType.TENSOR_QUANT8_SYMM
Q8PC = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
BOOL8 = OperandType.TENSOR_BOOL8
INT = OperandType.INT32
FLOAT = OperandType.FLOAT32
HALF = OperandType.FLOAT16
BOOL = OperandType.BOOL


@dataclass
class Operand:
    """An operand of the operation under test (see the module docstring)."""

    type: OperandType
    value: Any = None
    fed: bool = False
    dims: Sequence[int] | None = None
    scale: float = 0.0
    zero_point: int = 0
    channel_scales: Sequence[float] | None = None
    channel_dim: int = 0

    def array(self) -> np.ndarray | None:
        """The value; anything but an array (a list, a number) in the operand's element type.
        Arrays are passed on as they are, so a test controls exactly what the runtime sees."""
        if self.value is None or isinstance(self.value, np.ndarray):
            return self.value
        return np.asarray(self.value, dtype=type_info(self.type).dtype)

    def dimensions(self) -> tuple[int, ...]:
        if self.dims is not None:
            return tuple(self.dims)
        if type_info(self.type).is_scalar or self.value is None:
            return ()
        return np.shape(self.value)


def const(type: OperandType, value, scale: float = 0.0, zero_point: int = 0, *,
          dims: Sequence[int] | None = None, channel_scales: Sequence[float] | None = None,
          channel_dim: int = 0) -> Operand:
    return Operand(type, value, dims=dims, scale=scale, zero_point=zero_point,
                   channel_scales=channel_scales, channel_dim=channel_dim)


def feed(type: OperandType, value=None, scale: float = 0.0, zero_point: int = 0, *,
         dims: Sequence[int] | None = None, channel_scales: Sequence[float] | None = None,
         channel_dim: int = 0) -> Operand:
    return Operand(type, value, fed=True, dims=dims, scale=scale, zero_point=zero_point,
                   channel_scales=channel_scales, channel_dim=channel_dim)


def out(type: OperandType, dims: Sequence[int] = (), scale: float = 0.0,
        zero_point: int = 0) -> Operand:
    return Operand(type, dims=dims, scale=scale, zero_point=zero_point)


def i32(value: int) -> Operand:
    return const(INT, int(value))


def f32(value: float) -> Operand:
    return const(FLOAT, float(value))


def f16(value: float) -> Operand:
    return const(HALF, float(value))


def boolean(value: bool) -> Operand:
    return const(BOOL, bool(value))


def build(op: OperationType, inputs: Sequence[Operand], outputs: Sequence[Operand]) -> Model:
    """The finished model: ``op`` reading ``inputs`` and writing ``outputs``."""
    m = Model()
    in_ids, fed_ids = [], []
    for arg in inputs:
        index = m.add_operand(arg.type, arg.dimensions(), arg.scale, arg.zero_point)
        if arg.channel_scales is not None:
            m.set_operand_symm_per_channel_quant_params(index, arg.channel_scales,
                                                        arg.channel_dim)
        if arg.fed:
            fed_ids.append(index)
        else:
            m.set_operand_value(index, arg.array())
        in_ids.append(index)
    out_ids = [m.add_operand(o.type, o.dimensions(), o.scale, o.zero_point) for o in outputs]
    m.add_operation(op, in_ids, out_ids)
    m.identify_inputs_and_outputs(fed_ids, out_ids)
    return m.finish()


def fed_values(inputs: Sequence[Operand]) -> list:
    """What an execution of the model built from ``inputs`` is given, in order."""
    return [arg.array() for arg in inputs if arg.fed]


def run(op: OperationType, inputs: Sequence[Operand], outputs: Sequence[Operand]) \
        -> list[np.ndarray]:
    """Builds, compiles and runs the operation once; returns its outputs."""
    return Compilation(build(op, inputs, outputs)).run(fed_values(inputs)).outputs


def run1(op: OperationType, inputs: Sequence[Operand], output: Operand) -> np.ndarray:
    """``run`` for an operation of one output."""
    return run(op, inputs, [output])[0]
