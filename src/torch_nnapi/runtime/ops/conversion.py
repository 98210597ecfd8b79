"""CAST, QUANTIZE and DEQUANTIZE: element type conversions, shapes unchanged.

CAST ignores quantization parameters (a TENSOR_QUANT8_ASYMM tensor is plain uint8). To an
integer type it truncates toward zero and saturates to the type's range, NaN giving 0 (the
reference clamps to 0..255 for uint8; for int32 this is what ARM's conversion instruction
does where C++ leaves it undefined). To a float type it rounds to nearest even. Since API 30
it also copies six other types to themselves.

QUANTIZE computes ``zeroPoint + round(x / scale)`` in float32, rounding halves away from
zero, then saturates to the output type's range (uint8, or int8 since API 30); NaN becomes
the upper bound as in the reference's min/max chain.
DEQUANTIZE computes ``scale * (q - zeroPoint)`` in float32 (per channel for
TENSOR_QUANT8_SYMM_PER_CHANNEL) and rounds to float16 when the output is float16.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import dequantize, quantize
from ..registry import register
from ._common import check_rank


def _prepare(ctx: KernelContext) -> list[Shape]:
    if ctx.operation == Op.DEQUANTIZE:
        return [check_rank(ctx, "input", range(0, 5))]
    return [ctx.input_shape("input")]


def _cast(ctx: KernelContext) -> np.ndarray:
    return cast_values(ctx.input("input"), ctx.output_dtype())


def cast_values(values: np.ndarray, target: np.dtype) -> np.ndarray:
    """CAST's values: integers saturate, floats truncate toward zero (NaN to 0) on the way
    to integers (the native runner calls this too, with the target read once)."""
    if target.kind in "iu" and values.dtype != target:
        limits = np.iinfo(target)
        if values.dtype.kind == "f":
            # float64 holds every int32 exactly, so the bounds themselves are not rounded.
            values = np.trunc(np.nan_to_num(values.astype(np.float64), nan=0.0))
        values = np.clip(values, limits.min, limits.max)
    with np.errstate(over="ignore"):  # int32 and float32 beyond float16's range become inf
        return values.astype(target)


def _quantize(ctx: KernelContext) -> np.ndarray:
    values = ctx.float_input("input")
    scale, zero_point = ctx.output_quant()
    # The reference's clamp lets NaN through as its upper bound.
    values = np.where(np.isnan(values), np.float32(np.inf), values)
    return quantize(values, scale, zero_point, ctx.output_dtype())


def _dequantize(ctx: KernelContext) -> np.ndarray:
    operand = ctx.input_operand("input")
    values = ctx.input("input")
    if operand.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        quant = operand.channel_quant
        if quant is None:
            raise BadDataError(f"{ctx.describe_input('input')} has no per-channel scales")
        axis = quant.channel_dim
        scales = np.asarray(quant.scales, dtype=np.float32)
        shape = [1] * values.ndim
        shape[axis] = scales.size
        real = values.astype(np.float32) * scales.reshape(shape)
    else:
        real = dequantize(values, operand.scale, operand.zero_point)
    return real.astype(ctx.output_dtype(), copy=False)


_CONVERSIONS = {Op.CAST: _cast, Op.QUANTIZE: _quantize, Op.DEQUANTIZE: _dequantize}


@register(*_CONVERSIONS, prepare=_prepare)
def convert(ctx: KernelContext) -> np.ndarray:
    return _CONVERSIONS[ctx.operation](ctx)
