"""RELU, RELU1, RELU6, LOGISTIC, TANH, PRELU, HARD_SWISH and ELU.

Floats are computed in float32 (float16 too, cast back). Quantized (uint8, and int8 since API
30) RELU* clamp the raw values to the quantized bounds. Quantized LOGISTIC and TANH rescale the
centered input to a 32-bit fixed-point value with 4 integer bits and evaluate gemmlowp's
fixed-point logistic / tanh, as Android's reference (TFLite's Logistic/Tanh) does, so results
are bit-exact; the int8 kernels saturate from the input radius on, the uint8 ones beyond it.
Quantized PRELU rescales positive inputs and input * alpha products with two fixed-point
multipliers. Quantized HARD_SWISH follows TFLite's 16-bit fixed-point kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from ...nnapi.codes import FuseCode, OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from .. import fixedpoint as fp
from ..context import KernelContext, Shape
from ..quant import (
    ASYMM_8BIT,
    activation_range_quantized,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    saturate,
)
from ..registry import register
from ._common import broadcast_shapes, check_rank, same_as_input

_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
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
    if ctx.input_type("input") in ASYMM_8BIT and ctx.operation in (Op.LOGISTIC, Op.TANH):
        _sigmoid_input_params(ctx)
    return [shape]


@register(Op.RELU, Op.RELU1, Op.RELU6, prepare=_prepare_elementwise)
def clamp_activation(ctx: KernelContext) -> np.ndarray:
    fuse_code, lo, hi = _CLAMPS[ctx.operation]
    if ctx.input_type("input") in ASYMM_8BIT:
        scale, zero_point = ctx.output_quant()
        dtype = ctx.output_dtype()
        qmin, qmax = activation_range_quantized(fuse_code, scale, zero_point, dtype)
        return cast("np.ndarray", np.clip(ctx.input("input"), qmin, qmax).astype(dtype))
    x = ctx.float_input("input")
    # std::min(std::max(lo, x), hi): NaN becomes lo, and RELU caps infinity at FLT_MAX
    # (which float16 rounds back to infinity).
    result = np.where(x > lo, x, np.float32(lo))
    result = np.where(result > hi, np.float32(hi), result)
    with np.errstate(over="ignore"):
        return result.astype(ctx.output_dtype(), copy=False)


@register(Op.LOGISTIC, Op.TANH, prepare=_prepare_elementwise)
def sigmoid_activation(ctx: KernelContext) -> np.ndarray:
    if ctx.input_type("input") in ASYMM_8BIT:
        return _sigmoid_quant8(ctx)
    with np.errstate(over="ignore"):
        result = FLOAT_SIGMOIDS[ctx.operation](ctx.float_input("input"))
    return result.astype(ctx.output_dtype(), copy=False)


def _logistic(x: np.ndarray) -> np.ndarray:
    return cast("np.ndarray", np.float32(1) / (np.float32(1) + np.exp(-x)))


# The float32 functions of LOGISTIC and TANH (the native runners use them too).
FLOAT_SIGMOIDS: dict[Op, Callable[[np.ndarray], np.ndarray]] = {Op.LOGISTIC: _logistic,
                                                                 Op.TANH: np.tanh}


def _sigmoid_input_params(ctx: KernelContext) -> tuple[int, int, int]:
    """(multiplier, left shift, input radius) rescaling centered 8-bit inputs to 4 integer
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
    dtype = ctx.output_dtype()
    limits = np.iinfo(dtype)
    zero_point = ctx.output_quant()[1]  # fixed: tanh 128 or 0, logistic 0 or -128
    if ctx.operation == Op.TANH:
        # Q0.31 in [-1, 1] to Q0.7 around the zero point.
        raw = fp.tanh(rescaled, _INPUT_INTEGER_BITS)
        out = fp.rounding_divide_by_pot(raw, 24) + zero_point
    else:
        # Q0.31 in [0, 1] to Q0.8.
        raw = fp.logistic(rescaled, _INPUT_INTEGER_BITS)
        out = fp.rounding_divide_by_pot(raw, 23) + zero_point
    out = np.clip(out, limits.min, limits.max)
    if ctx.input_type("input") == _SIGNED:  # TFLite's int8 kernels: from the radius on
        low, high = centered <= -radius, centered >= radius
    else:  # its uint8 optimized kernel: strictly beyond (its reference one differs there)
        low, high = centered < -radius, centered > radius
    out = np.where(low, limits.min, np.where(high, limits.max, out))
    return out.astype(dtype)


def _prepare_prelu(ctx: KernelContext) -> list[Shape]:
    for name in ("input", "alpha"):
        if not ctx.input_shape(name):
            raise BadDataError(f"{ctx.describe_input(name)} must have rank 1 or more, got a"
                               " scalar shape []")
    shape = broadcast_shapes(ctx.input_shape("input"), ctx.input_shape("alpha"))
    if ctx.input_type("input") in ASYMM_8BIT:
        _prelu_multipliers(ctx)
    return [shape]


@register(Op.PRELU, prepare=_prepare_prelu)
def prelu(ctx: KernelContext) -> np.ndarray:
    if ctx.input_type("input") in ASYMM_8BIT:
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
    return saturate(out, ctx.output_dtype())


@register(Op.ELU, prepare=same_as_input())
def elu(ctx: KernelContext) -> np.ndarray:
    """max(0, x) + min(0, alpha * (exp(x) - 1)) in float32, float16 rounded back."""
    x = ctx.float_input("input")
    alpha = np.float32(ctx.scalar("alpha"))
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.maximum(np.float32(0), x) + \
            np.minimum(np.float32(0), alpha * (np.exp(x) - np.float32(1)))
    return cast("np.ndarray", result.astype(ctx.output_dtype(), copy=False))


def _prepare_hard_swish(ctx: KernelContext) -> list[Shape]:
    if ctx.input_type("input") in ASYMM_8BIT:
        _hard_swish_params(ctx)
    return [ctx.input_shape("input")]


@register(Op.HARD_SWISH, prepare=_prepare_hard_swish)
def hard_swish(ctx: KernelContext) -> np.ndarray:
    if ctx.input_type("input") in ASYMM_8BIT:
        return _hard_swish_quant8(ctx)
    x = ctx.float_input("input")
    result = x * np.minimum(np.float32(6), np.maximum(np.float32(0), x + np.float32(3))) \
        / np.float32(6)
    return cast("np.ndarray", result.astype(ctx.output_dtype(), copy=False))


# The real value 3 is the 16-bit value 32768 on the "relu-ish" scale.
_RELUISH_SCALE = np.float32(3.0 / 32768.0)


def _int16_multiplier(real: np.float32) -> tuple[int, int]:
    """A positive real multiplier as a 16-bit fixed-point multiplier and an exponent: the
    32-bit one rounded to its high half (DownScaleInt32ToInt16Multiplier)."""
    multiplier, exponent = quantize_multiplier(float(real))
    if multiplier >= 2**31 - 1 - (1 << 15):
        return 2**15 - 1, exponent
    return (multiplier + (1 << 15)) >> 16, exponent


def _hard_swish_params(ctx: KernelContext) -> tuple[tuple[int, int], tuple[int, int]]:
    """((output multiplier, exponent), (relu-ish multiplier, exponent)) from the scales, as
    float math, the output one scaling down only."""
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(ctx.input_quant("input")[0])
    output = _int16_multiplier(hires_input_scale / np.float32(ctx.output_quant()[0]))
    if output[1] > 0:
        raise BadDataError("HARD_SWISH needs an output scale at least input scale / 128,"
                           f" got {ctx.output_quant()[0]:g} for input scale"
                           f" {ctx.input_quant('input')[0]:g}")
    return output, _int16_multiplier(hires_input_scale / _RELUISH_SCALE)


def _saturating_left_shift_int16(x: np.ndarray, amount: int) -> np.ndarray:
    return cast("np.ndarray", np.clip(x * (1 << amount), -2**15, 2**15 - 1))


def _hard_swish_quant8(ctx: KernelContext) -> np.ndarray:
    (out_mul, out_exp), (relu_mul, relu_exp) = _hard_swish_params(ctx)
    hires = (ctx.input("input").astype(np.int64) - ctx.input_quant("input")[1]) * (1 << 7)
    preshift_output = fp.saturating_rounding_doubling_high_mul(hires, out_mul, 16)
    # x rescaled from [-3, 3] to [-1, 1] (saturating), then to [0, 1]
    reluish = hires
    if relu_exp > 0:
        reluish = _saturating_left_shift_int16(reluish, relu_exp - 1)
    reluish = fp.saturating_rounding_doubling_high_mul(reluish, relu_mul, 16)
    if relu_exp > 0:
        reluish = _saturating_left_shift_int16(reluish, 1)
    elif relu_exp < 0:
        reluish = fp.rounding_divide_by_pot(reluish, -relu_exp)
    reluish = (reluish + (1 << 15)) >> 1
    # a doubling high multiply rounding toward zero, as TFLite's kernel takes it here
    product = reluish * preshift_output
    output = np.where(product >= 0, product >> 15, -((-product) >> 15))
    output = fp.rounding_divide_by_pot(output, -out_exp) + ctx.output_quant()[1]
    return saturate(output, ctx.output_dtype())
