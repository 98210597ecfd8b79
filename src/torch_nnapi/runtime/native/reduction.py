"""Native MEAN, REDUCE_SUM, REDUCE_MAX and REDUCE_MIN (reduction.c) over a run of adjacent
axes: float32 (sums in double, within float32 rounding of the reference's), and the 8-bit
MEAN (uint8, and int8 since API 30), bit-exact (an integer sum divided by the count, as the
reference does). Other axes and types stay with the reference kernels
(runtime/ops/reduction.py)."""

from __future__ import annotations

import math

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import reduction as ref
from ..registry import Runner, register_native
from . import module
from .planning import constant_parameters

_KINDS = {Op.MEAN: 0, Op.REDUCE_SUM: 1, Op.REDUCE_MAX: 2, Op.REDUCE_MIN: 3}


@register_native(*_KINDS)
def reduce(ctx: KernelContext) -> Runner | None:
    kind = ctx.input_type("input")
    signed = kind == OperandType.TENSOR_QUANT8_ASYMM_SIGNED
    quantized = signed or kind == OperandType.TENSOR_QUANT8_ASYMM
    if not (kind == OperandType.TENSOR_FLOAT32 or (quantized and ctx.operation == Op.MEAN)) \
            or not constant_parameters(ctx):
        return None
    axes, _, out_shape = ref.reduce_plan(ctx)
    shape = ctx.input_shape("input")
    if not axes or list(axes) != list(range(axes[0], axes[-1] + 1)) or math.prod(shape) == 0:
        return None  # reduced axes apart, none, or nothing to reduce
    layout = (math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:axes[-1] + 1]),
              math.prod(shape[axes[-1] + 1:]))
    code, dtype, reduce_kernel = _KINDS[ctx.operation], ctx.output_dtype(), module().reduce

    def run(x: np.ndarray, *_: object) -> np.ndarray:
        out = np.empty(out_shape, dtype)
        reduce_kernel(code, np.ascontiguousarray(x), out, layout, signed)
        return out

    return run
