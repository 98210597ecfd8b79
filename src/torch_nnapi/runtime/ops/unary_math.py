"""FLOOR, ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT: element-wise functions of one tensor.

Float16 is computed in float32 and rounded back, as Android's reference does; NEG and ABS on
int32 (ABS since API 30) wrap around for INT32_MIN like the two's-complement negation they
are. Out-of-domain inputs
give IEEE results (NaN, inf) rather than errors, as in C.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext, Shape
from ..registry import register
from ._common import check_rank


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return cast("np.ndarray", np.reciprocal(np.sqrt(x)))


# What each operation computes, for the reference kernel and the native float runner alike.
UNARY_FUNCTIONS: dict[Op, Callable[[np.ndarray], np.ndarray]] = {
    Op.FLOOR: np.floor,
    Op.ABS: np.abs,
    Op.EXP: np.exp,
    Op.LOG: np.log,
    Op.NEG: np.negative,
    Op.RSQRT: _rsqrt,
    Op.SIN: np.sin,
    Op.SQRT: np.sqrt,
}


def _prepare(ctx: KernelContext) -> list[Shape]:
    if ctx.operation == Op.FLOOR:
        return [check_rank(ctx, "input", range(0, 5))]
    return [ctx.input_shape("input")]


@register(*UNARY_FUNCTIONS, prepare=_prepare)
def unary_math(ctx: KernelContext) -> np.ndarray:
    function = UNARY_FUNCTIONS[ctx.operation]
    if ctx.input_type("input") == OperandType.TENSOR_INT32:
        with np.errstate(over="ignore"):
            return function(ctx.input("input"))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        result = function(ctx.float_input("input"))
    return result.astype(ctx.output_dtype(), copy=False)
