"""RELU, RELU1, RELU6, LOGISTIC, TANH and PRELU.

Floats are computed in float32 (float16 too, cast back). Quantized RELU* clamp the raw values
to the quantized bounds. Quantized LOGISTIC and TANH rescale the centered input to a 32-bit
fixed-point value with 4 integer bits and evaluate gemmlowp's fixed-point logistic / tanh, as
Android's reference (TFLite's uint8 Logistic/Tanh) does, so results are bit-exact. Quantized
PRELU rescales positive inputs and input * alpha products with two fixed-point multipliers.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import FuseCode, OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from .. import fixedpoint as fp
from ..context import KernelContext, Shape
from ..quant import activation_range_quantized, multiply_by_quantized_multiplier, \
    quantize_multiplier
from ..registry import register
from ._common import broadcast_shapes, check_rank

_Q8 = OperandType.TENSOR_QUANT8_ASYMM
_FLOAT32_MAX = float(np.finfo(np.float32).max)
# (fused activation whose quantized bounds apply, float lower bound, float upper bound)
_CLAMPS = {
    Op.RELU: (FuseCode.RELU, 0.0, _FLOAT32_MAX),
    Op.RELU1: (FuseCode.RELU1, -1.0, 1.0),
    Op.RELU6: (FuseCode.RELU6, 0.0, 6.0),
}
# The fixed-point input format of quantized LOGISTIC and TANH: int32 with 4 integer bits.
_INPUT_INTEGER_BITS = 4


def _float32_scale(scale: float) -> float:
    """Operand scales are float in Android: computations start from the float32 value."""
    return float(np.float32(scale))


def _prepare_elementwise(ctx: KernelContext) -> list[Shape]:
    shape = check_rank(ctx, "input", range(0, 5))
    if ctx.input_type("input") == _Q8 and ctx.operation in (Op.LOGISTIC, Op.TANH):
        _sigmoid_input_params(ctx)
    return [shape]


@register(Op.RELU, Op.RELU1, Op.RELU6, prepare=_prepare_elementwise)
def clamp_activation(ctx: KernelContext) -> np.ndarray:
    fuse_code, lo, hi = _CLAMPS[ctx.operation]
    if ctx.input_type("input") == _Q8:
        scale, zero_point = ctx.output_quant()
        qmin, qmax = activation_range_quantized(fuse_code, scale, zero_point)
        return np.clip(ctx.input("input"), qmin, qmax).astype(np.uint8)
    x = ctx.float_input("input")
    # std::min(std::max(lo, x), hi): NaN becomes lo, and RELU caps infinity at FLT_MAX
    # (which float16 rounds back to infinity).
    result = np.where(x > lo, x, np.float32(lo))
    result = np.where(result > hi, np.float32(hi), result)
    with np.errstate(over="ignore"):
        return result.astype(ctx.output_dtype(), copy=False)


@register(Op.LOGISTIC, Op.TANH, prepare=_prepare_elementwise)
def sigmoid_activation(ctx: KernelContext) -> np.ndarray:
    if ctx.input_type("input") == _Q8:
        return _sigmoid_quant8(ctx)
    with np.errstate(over="ignore"):
        result = FLOAT_SIGMOIDS[ctx.operation](ctx.float_input("input"))
    return result.astype(ctx.output_dtype(), copy=False)


def _logistic(x: np.ndarray) -> np.ndarray:
    return np.float32(1) / (np.float32(1) + np.exp(-x))


# The float32 functions of LOGISTIC and TANH (the native runners use them too).
FLOAT_SIGMOIDS = {Op.LOGISTIC: _logistic, Op.TANH: np.tanh}


def _sigmoid_input_params(ctx: KernelContext) -> tuple[int, int, int]:
    """(multiplier, left shift, input radius) rescaling centered uint8 inputs to 4 integer
    bits; beyond the radius the output saturates."""
    scale = _float32_scale(ctx.input_quant("input")[0])
    multiplier, left_shift = fp.quantize_multiplier_greater_than_one(
        scale * float(1 << (31 - _INPUT_INTEGER_BITS)))
    return multiplier, left_shift, fp.calculate_input_radius(_INPUT_INTEGER_BITS, left_shift)


def _sigmoid_quant8(ctx: KernelContext) -> np.ndarray:
    multiplier, left_shift, radius = _sigmoid_input_params(ctx)
    centered = ctx.input("input").astype(np.int64) - ctx.input_quant("input")[1]
    rescaled = fp.multiply_by_quantized_multiplier_greater_than_one(
        np.clip(centered, -radius, radius), multiplier, left_shift)
    if ctx.operation == Op.TANH:
        # Q0.31 in [-1, 1] to Q0.7 around the fixed zero point 128.
        raw = fp.tanh(rescaled, _INPUT_INTEGER_BITS)
        out = fp.rounding_divide_by_pot(raw, 24) + 128
    else:
        # Q0.31 in [0, 1] to Q0.8.
        raw = fp.logistic(rescaled, _INPUT_INTEGER_BITS)
        out = fp.rounding_divide_by_pot(raw, 23)
    out = np.minimum(out, 255)
    # Strictly beyond the radius (TFLite's optimized kernel; its reference kernel also
    # saturates at the radius itself, which changes LOGISTIC there for large input scales).
    out = np.where(centered < -radius, 0, np.where(centered > radius, 255, out))
    return out.astype(np.uint8)


def _prepare_prelu(ctx: KernelContext) -> list[Shape]:
    for name in ("input", "alpha"):
        if not ctx.input_shape(name):
            raise BadDataError(f"{ctx.describe_input(name)} must have rank 1 or more, got a"
                               " scalar shape []")
    shape = broadcast_shapes(ctx.input_shape("input"), ctx.input_shape("alpha"))
    if ctx.input_type("input") == _Q8:
        _prelu_multipliers(ctx)
    return [shape]


@register(Op.PRELU, prepare=_prepare_prelu)
def prelu(ctx: KernelContext) -> np.ndarray:
    if ctx.input_type("input") == _Q8:
        return _prelu_quant8(ctx)
    x, alpha = ctx.float_input("input"), ctx.float_input("alpha")
    with np.errstate(all="ignore"):
        return np.where(x >= 0, x, x * alpha).astype(ctx.output_dtype(), copy=False)


def _prelu_multipliers(ctx: KernelContext) -> tuple[tuple[int, int], tuple[int, int]]:
    """Fixed-point multipliers for positive inputs (input scale / output scale) and for
    negative ones (input scale * alpha scale / output scale), as float math then double."""
    input_scale = np.float32(ctx.input_quant("input")[0])
    alpha_scale = np.float32(ctx.input_quant("alpha")[0])
    output_scale = np.float32(ctx.output_quant()[0])
    positive = float(input_scale / output_scale)
    negative = float(input_scale * alpha_scale) / float(output_scale)
    return quantize_multiplier(positive), quantize_multiplier(negative)


def _prelu_quant8(ctx: KernelContext) -> np.ndarray:
    (m_pos, s_pos), (m_neg, s_neg) = _prelu_multipliers(ctx)
    x = ctx.input("input").astype(np.int64) - ctx.input_quant("input")[1]
    alpha = ctx.input("alpha").astype(np.int64) - ctx.input_quant("alpha")[1]
    x, alpha = np.broadcast_arrays(x, alpha)
    positive = multiply_by_quantized_multiplier(x, m_pos, s_pos)
    negative = multiply_by_quantized_multiplier(x * alpha, m_neg, s_neg)
    out = np.where(x >= 0, positive, negative) + ctx.output_quant()[1]
    return np.clip(out, 0, 255).astype(np.uint8)
