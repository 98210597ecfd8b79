"""ADD, SUB, MUL, DIV: element-wise arithmetic with broadcasting and a fused activation.

Floats (and float16, computed in float32) use plain arithmetic. Quantized ADD/SUB (uint8 or
int8) rescale both inputs to a common fixed-point scale with 20 bits of headroom before
summing, and MUL rescales the integer product, exactly as the reference kernels do. Int32
arithmetic (API 30) wraps around as C++ does; its DIV rounds down (Python's ``//``) and gives
0 for a zero divisor, as Android's does.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ...nnapi.codes import FuseCode, OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import (
    ASYMM_8BIT,
    activation_range_quantized,
    apply_fused_activation,
    multiply_by_quantized_multiplier,
    quantize_multiplier_smaller_than_one,
)
from ..registry import register
from ._common import broadcast_inputs, check_rank, fuse_code_input

_ADD_LEFT_SHIFT = 20
_broadcast = broadcast_inputs()


def _prepare(ctx: KernelContext) -> list[Shape]:
    check_rank(ctx, "input0", range(0, 5))
    check_rank(ctx, "input1", range(0, 5))
    return _broadcast(ctx)


_FLOAT_OPS = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide}


@register(Op.ADD, Op.SUB, Op.MUL, Op.DIV, prepare=_prepare)
def binary_arithmetic(ctx: KernelContext) -> np.ndarray:
    fuse_code = fuse_code_input(ctx)
    input_type = ctx.input_type("input0")
    if input_type in ASYMM_8BIT:
        if ctx.operation == Op.MUL:
            return _mul_quant8(ctx, fuse_code)
        return _add_quant8(ctx, fuse_code, negate_second=ctx.operation == Op.SUB)
    if input_type == OperandType.TENSOR_INT32:
        if fuse_code != FuseCode.NONE:
            raise BadDataError(f"{ctx.describe_input('fuse_code')} must be NONE (0) for int32"
                               f" arithmetic, got {fuse_code}")
        return _int32(ctx)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        result = _FLOAT_OPS[ctx.operation](ctx.float_input("input0"),
                                            ctx.float_input("input1"))
    result = apply_fused_activation(np.asarray(result, dtype=np.float32), fuse_code)
    return result.astype(ctx.output_dtype(), copy=False)


def _add_quant8(ctx: KernelContext, fuse_code: int, negate_second: bool) -> np.ndarray:
    (s1, z1), (s2, z2) = ctx.input_quant("input0"), ctx.input_quant("input1")
    so, zo = ctx.output_quant()
    twice_max_scale = 2 * max(float(np.float32(s1)), float(np.float32(s2)))
    m1, r1 = quantize_multiplier_smaller_than_one(s1 / twice_max_scale)
    m2, r2 = quantize_multiplier_smaller_than_one(s2 / twice_max_scale)
    mo, ro = quantize_multiplier_smaller_than_one(twice_max_scale
                                                  / ((1 << _ADD_LEFT_SHIFT) * so))
    if negate_second:
        m2 = -m2
    x1 = (ctx.input("input0").astype(np.int64) - z1) << _ADD_LEFT_SHIFT
    x2 = (ctx.input("input1").astype(np.int64) - z2) << _ADD_LEFT_SHIFT
    total = multiply_by_quantized_multiplier(x1, m1, -r1) + \
        multiply_by_quantized_multiplier(x2, m2, -r2)
    out = multiply_by_quantized_multiplier(total, mo, -ro) + zo
    lo, hi = activation_range_quantized(fuse_code, so, zo, ctx.output_dtype())
    return cast("np.ndarray", np.clip(out, lo, hi).astype(ctx.output_dtype()))


def _mul_quant8(ctx: KernelContext, fuse_code: int) -> np.ndarray:
    (s1, z1), (s2, z2) = ctx.input_quant("input0"), ctx.input_quant("input1")
    so, zo = ctx.output_quant()
    product_scale = float(np.float32(s1) * np.float32(s2))
    mo, ro = quantize_multiplier_smaller_than_one(product_scale / so)
    product = (ctx.input("input0").astype(np.int64) - z1) \
        * (ctx.input("input1").astype(np.int64) - z2)
    out = multiply_by_quantized_multiplier(product, mo, -ro) + zo
    lo, hi = activation_range_quantized(fuse_code, so, zo, ctx.output_dtype())
    return cast("np.ndarray", np.clip(out, lo, hi).astype(ctx.output_dtype()))


def _int32(ctx: KernelContext) -> np.ndarray:
    """Int32 arithmetic, wrapping on overflow."""
    a, b = ctx.input("input0"), ctx.input("input1")
    with np.errstate(over="ignore", divide="ignore"):
        if ctx.operation == Op.ADD:
            return cast("np.ndarray", np.add(a, b, dtype=np.int32))
        if ctx.operation == Op.SUB:
            return cast("np.ndarray", np.subtract(a, b, dtype=np.int32))
        if ctx.operation == Op.MUL:
            return cast("np.ndarray", np.multiply(a, b, dtype=np.int32))
        a64, b64 = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
        quotient = np.floor_divide(a64, np.where(b64 == 0, 1, b64))
        return np.where(b64 == 0, 0, quotient).astype(np.int32)
