"""MAXIMUM, MINIMUM and POW with broadcasting.

MAXIMUM/MINIMUM pick as C++'s std::max/std::min do (``a < b ? b : a`` and ``b < a ? b : a``),
so a NaN in input0 is kept and one in input1 is not, as on Android. Quantized inputs are
first requantized to the output's scale and zero point, through float as Android's
reference does. POW computes in float32 (float16 rounded back).
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..registry import register
from ._common import broadcast_inputs
from ._requantize import in_output_terms


@register(Op.MAXIMUM, Op.MINIMUM, prepare=broadcast_inputs())
def min_max(ctx: KernelContext) -> np.ndarray:
    a, b = in_output_terms(ctx, "input0"), in_output_terms(ctx, "input1")
    take_b = a < b if ctx.operation == Op.MAXIMUM else b < a
    return np.where(take_b, b, a).astype(ctx.output_dtype(), copy=False)


@register(Op.POW, prepare=broadcast_inputs("base", "exponent"))
def power(ctx: KernelContext) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        result = np.power(ctx.float_input("base"), ctx.float_input("exponent"))
    return cast("np.ndarray", result.astype(ctx.output_dtype(), copy=False))
