"""Builds and runs one-operation models for the convolution, pooling and resize tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

F32 = OperandType.TENSOR_FLOAT32
F16 = OperandType.TENSOR_FLOAT16
Q8 = OperandType.TENSOR_QUANT8_ASYMM
Q8PC = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
I32T = OperandType.TENSOR_INT32


@dataclass
class Tensor:
    """A tensor operand: a model input unless ``constant``; ``dynamic`` declares 0 dims."""

    value: np.ndarray
    type: OperandType = F32
    scale: float = 0.0
    zero_point: int = 0
    constant: bool = False
    channel_scales: Sequence[float] | None = None
    channel_dim: int = 0
    dynamic: bool = False


@dataclass
class Scalar:
    value: object
    type: OperandType = OperandType.INT32


def i32(v: int) -> Scalar:
    return Scalar(int(v))


def boolean(v: bool) -> Scalar:
    return Scalar(bool(v), OperandType.BOOL)


def f32(v: float) -> Scalar:
    return Scalar(float(v), OperandType.FLOAT32)


def f16(v: float) -> Scalar:
    return Scalar(float(v), OperandType.FLOAT16)


def const(value, type=F32, scale=0.0, zero_point=0, **kw) -> Tensor:
    return Tensor(np.asarray(value), type, scale, zero_point, constant=True, **kw)


def build(op: OperationType, args: Sequence, output_type=F32, output_scale=0.0,
          output_zero=0, output_dims: Sequence[int] | None = None) -> tuple[Model, list]:
    """The finished model and the values of its inputs, in order (bare arrays: float32 inputs)."""
    m = Model()
    indices, feeds = [], []
    for arg in args:
        if isinstance(arg, np.ndarray):
            arg = Tensor(arg)
        if isinstance(arg, Scalar):
            indices.append(m.add_scalar(arg.type, arg.value))
            continue
        dims = [0] * arg.value.ndim if arg.dynamic else arg.value.shape
        index = m.add_operand(arg.type, dims, arg.scale, arg.zero_point)
        if arg.channel_scales is not None:
            m.set_operand_symm_per_channel_quant_params(index, arg.channel_scales,
                                                        arg.channel_dim)
        if arg.constant:
            m.set_operand_value(index, arg.value)
        else:
            feeds.append((index, arg.value))
        indices.append(index)
    out = m.add_operand(output_type, output_dims or (), output_scale, output_zero)
    m.add_operation(op, indices, [out])
    m.identify_inputs_and_outputs([i for i, _ in feeds], [out])
    return m.finish(), [v for _, v in feeds]


def run(op: OperationType, args: Sequence, output_type=F32, output_scale=0.0,
        output_zero=0, output_dims: Sequence[int] | None = None) -> np.ndarray:
    model, feeds = build(op, args, output_type, output_scale, output_zero, output_dims)
    return Compilation(model).run(feeds).outputs[0]
