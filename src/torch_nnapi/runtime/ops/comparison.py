"""Comparisons (EQUAL ... LESS_EQUAL), LOGICAL_AND/OR/NOT and SELECT.

Binary predicates broadcast their inputs and produce TENSOR_BOOL8 (0 or 1). Quantized inputs
are compared by real value, ``scale * (q - zeroPoint)`` in float32, so inputs with different
quantization parameters compare correctly; everything else (bool8 included) compares as
stored. Logical operations treat any nonzero byte as true. SELECT takes each element from
input1 where the condition is nonzero, else from input2; quantized values are requantized
to the output's parameters first.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import ASYMM_8BIT, dequantize
from ..registry import register
from ._common import broadcast_inputs, same_as_input
from ._requantize import in_output_terms

PREDICATES = {
    Op.EQUAL: np.equal,
    Op.NOT_EQUAL: np.not_equal,
    Op.GREATER: np.greater,
    Op.GREATER_EQUAL: np.greater_equal,
    Op.LESS: np.less,
    Op.LESS_EQUAL: np.less_equal,
    Op.LOGICAL_AND: np.logical_and,
    Op.LOGICAL_OR: np.logical_or,
}


def _comparable(ctx: KernelContext, name: str) -> np.ndarray:
    if ctx.input_type(name) in ASYMM_8BIT:
        return dequantize(ctx.input(name), *ctx.input_quant(name))
    return ctx.input(name)


@register(*PREDICATES, prepare=broadcast_inputs())
def binary_predicate(ctx: KernelContext) -> np.ndarray:
    result = PREDICATES[ctx.operation](_comparable(ctx, "input0"), _comparable(ctx, "input1"))
    return np.asarray(result).astype(np.uint8)


@register(Op.LOGICAL_NOT, prepare=same_as_input())
def logical_not(ctx: KernelContext) -> np.ndarray:
    return cast("np.ndarray", (ctx.input("input") == 0).astype(np.uint8))


def _prepare_select(ctx: KernelContext) -> list[Shape]:
    first = ctx.input_shape("input1")
    for name in ("condition", "input2"):
        shape = ctx.input_shape(name)
        if shape != first:
            raise BadDataError(f"{ctx.describe_input(name)} has shape {list(shape)} but"
                               f" {ctx.describe_input('input1')} has {list(first)}; SELECT"
                               " needs equal shapes (no broadcasting)")
    return [first]


@register(Op.SELECT, prepare=_prepare_select)
def select(ctx: KernelContext) -> np.ndarray:
    chosen = np.where(ctx.input("condition") != 0, in_output_terms(ctx, "input1"),
                      in_output_terms(ctx, "input2"))
    return chosen.astype(ctx.output_dtype(), copy=False)
