"""MAXIMUM, MINIMUM and POW with broadcasting.

MAXIMUM/MINIMUM pick as C++'s std::max/std::min do (``a < b ? b : a`` and ``b < a ? b : a``),
so a NaN in input0 is kept and one in input1 is not, as on Android. Quantized inputs are
first requantized to the output's scale and zero point, through float as Android's
reference does. POW computes in float32 (float16 rounded back).
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..registry import register
from ._common import broadcast_inputs
from ._requantize import requantize_uint8


def _operand_in_output_terms(ctx: KernelContext, i: int) -> np.ndarray:
    if ctx.input_type(i) == OperandType.TENSOR_QUANT8_ASYMM:
        return requantize_uint8(ctx.input(i), ctx.input_quant(i), ctx.output_quant())
    return ctx.input(i)


@register(Op.MAXIMUM, Op.MINIMUM, Op.POW, prepare=broadcast_inputs)
def min_max_pow(ctx: KernelContext) -> np.ndarray:
    if ctx.operation == Op.POW:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = np.power(ctx.float_input(0), ctx.float_input(1))
        return result.astype(ctx.output_dtype(), copy=False)
    a, b = _operand_in_output_terms(ctx, 0), _operand_in_output_terms(ctx, 1)
    take_b = a < b if ctx.operation == Op.MAXIMUM else b < a
    return np.where(take_b, b, a).astype(ctx.output_dtype(), copy=False)
