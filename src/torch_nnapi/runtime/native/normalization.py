"""Native SOFTMAX (softmax.c) along any axis, float32, uint8 and int8.

Float results agree with the reference within float32 rounding (the sum is accumulated in
double). Quantized SOFTMAX is bit-exact: the exponential of each of the 256 possible
differences from the row maximum, and its contribution to the 12-integer-bit sum, are
tabulated with the reference's fixed-point functions (runtime/fixedpoint.py); C sums each
row, the reference's fixed-point reciprocal is taken of every row's sum at once, and C scales
the exponentials by it. An int8 SOFTMAX is the uint8 one of the values 128 up (the sign bit
flipped: the same differences from the maximum), its output 128 down (the fixed zero point
-128 instead of 0).
"""

from __future__ import annotations

import math

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from .. import fixedpoint as fp
from ..context import KernelContext
from ..ops import normalization as ref
from ..ops.shape_common import axis_scalar
from ..registry import Runner, register_native
from . import module
from .planning import constant_parameters


def _rows(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, n, inner): the tensor as [outer][n][inner] with the axis in the middle."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _q8_tables(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray, int]:
    """(exponentials, their terms of the sum, smallest counted difference), indexed by
    -difference from the row maximum, as the reference computes them."""
    multiplier, left_shift, diff_min = ref.softmax_quant8_params(ctx, float(ctx.scalar("beta")))
    _, exps, terms = ref.softmax_quant8_exponentials(-np.arange(256, dtype=np.int64), multiplier,
                                                     left_shift, diff_min)
    return exps.astype(np.int32), terms.astype(np.int32), int(diff_min)


@register_native(Op.SOFTMAX)
def softmax(ctx: KernelContext) -> Runner | None:
    kind = ctx.input_type("input")
    shape = ctx.input_shape("input")
    signed = kind == OperandType.TENSOR_QUANT8_ASYMM_SIGNED
    if kind not in (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_QUANT8_ASYMM) and not signed or \
            math.prod(shape) == 0 or not constant_parameters(ctx):
        return None
    layout = _rows(shape, axis_scalar(ctx, "axis", len(shape)))
    kernels = module()
    if kind == OperandType.TENSOR_FLOAT32:
        beta = float(np.float32(ctx.scalar("beta")))

        def run_float(x: np.ndarray, *_: object) -> np.ndarray:
            out = np.empty(shape, np.float32)
            kernels.softmax_f32(x, out, layout, beta)
            return out

        return run_float
    exps, terms, diff_min = _q8_tables(ctx)

    def run(x: np.ndarray, *_: object) -> np.ndarray:
        out = np.empty(shape, np.uint8)
        if signed:
            x = np.bitwise_xor(x.view(np.uint8), 0x80)
        sums = np.empty(layout[0] * layout[2], np.int32)
        kernels.softmax_q8_sums(x, terms, sums, layout)
        reciprocal, bits_over_unit = fp.get_reciprocal(sums, ref.SOFTMAX_SUM_INTEGER_BITS)
        exponent = bits_over_unit + 31 - 8
        kernels.softmax_q8_scale(x, out, exps, diff_min, reciprocal.astype(np.int32),
                                 exponent.astype(np.int32), layout)
        return np.bitwise_xor(out, 0x80, out=out).view(np.int8) if signed else out

    return run
