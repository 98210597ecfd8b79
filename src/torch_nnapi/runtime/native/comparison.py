"""Runners for the comparisons (EQUAL ... LESS_EQUAL, LOGICAL_AND/OR) and SELECT on tensors
that are not 8-bit quantized: what the reference kernels compute, planned once.

Attention masks in transformers are built from these (a padding mask compared, a score
selected): few elements, but taken the full way (shapes prepared, operands looked up, every
output checked) they cost a text encoder's execution more than its matrix products. Quantized
inputs compare and select by real value, with requantization: those stay with the reference.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops.comparison import PREDICATES
from ..quant import ASYMM_8BIT
from ..registry import Runner, register_native


@register_native(*PREDICATES)
def predicate(ctx: KernelContext) -> Runner | None:
    if ctx.input_type("input0") in ASYMM_8BIT or ctx.input_type("input1") in ASYMM_8BIT:
        return None
    compare = PREDICATES[ctx.operation]
    return lambda a, b: np.asarray(compare(a, b)).astype(np.uint8)


@register_native(Op.SELECT)
def select(ctx: KernelContext) -> Runner | None:
    if any(ctx.input_type(name) in ASYMM_8BIT for name in ("input1", "input2")):
        return None
    dtype = ctx.output_dtype()

    def run(condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        chosen: np.ndarray = np.where(condition != 0, a, b)
        return chosen.astype(dtype, copy=False)

    return run
