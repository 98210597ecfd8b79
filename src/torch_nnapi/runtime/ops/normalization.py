"""SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and
INSTANCE_NORMALIZATION.

The axis operations move their axis last and work on all slices at once. Floats are computed
in float32 (float16 too, cast back). Quantized SOFTMAX (uint8, and int8 since API 30)
follows Android's reference (TFLite's Softmax): input differences from the maximum rescaled to
5 integer bits, gemmlowp's fixed-point exp, a 12-integer-bit sum and a fixed-point
reciprocal. Quantized L2 normalization scales by a fixed-point inverse square root of the
integer sum of squares. Both have a fixed output quantization, whose zero point depends on
the type (SOFTMAX 0 or -128, L2 128 or 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError, OpFailedError
from .. import fixedpoint as fp
from ..context import KernelContext, Shape
from ..quant import ASYMM_8BIT, saturate
from ..registry import register
from ._common import check_rank
from .shape_common import axis_scalar

# Quantized SOFTMAX: differences from the row maximum get 5 integer bits (exp(-32) is already
# negligible), the sum of exponentials 12 (up to 4096 rows at the maximum).
_DIFF_INTEGER_BITS = 5
SOFTMAX_SUM_INTEGER_BITS = 12  # the native SOFTMAX takes its reciprocal at this point too
_INT32_MAX = 2**31 - 1


ArrayFn = Callable[[np.ndarray], np.ndarray]


def _along_last(fn: ArrayFn, x: np.ndarray, axis: int) -> np.ndarray:
    """Applies ``fn`` to ``x`` with ``axis`` moved last, and moves the axis back."""
    return np.moveaxis(fn(np.moveaxis(x, axis, -1)), -1, axis)


def _empty_output(ctx: KernelContext) -> np.ndarray:
    return np.empty(ctx.input_shape("input"), dtype=ctx.output_dtype())


def _prepare_along_axis(ctx: KernelContext) -> list[Shape]:
    """Checks the input (rank 1 to 4) and its axis; the output has the input's shape."""
    shape = check_rank(ctx, "input", range(1, 5))
    axis_scalar(ctx, "axis", len(shape))
    return [shape]


def _along_axis(ctx: KernelContext, float_fn: ArrayFn,
                quant8_fn: ArrayFn | None = None) -> np.ndarray:
    """Computes the input slice by slice along its axis (the last one when the axis input is
    left out), the axis moved last for ``float_fn`` (in float32, cast back to the output type;
    infinities and NaNs propagate without warnings) or, for an asymmetric 8-bit input,
    ``quant8_fn`` (on its raw values)."""
    x = ctx.input("input")
    if x.size == 0:
        return _empty_output(ctx)
    axis = axis_scalar(ctx, "axis", x.ndim)
    if quant8_fn is not None and ctx.input_type("input") in ASYMM_8BIT:
        return _along_last(quant8_fn, x, axis)
    with np.errstate(all="ignore"):
        result = _along_last(float_fn, ctx.float_input("input"), axis)
        return result.astype(ctx.output_dtype(), copy=False)


# --------------------------------------------------------------------------------------------
# SOFTMAX and LOG_SOFTMAX


def _prepare_softmax(ctx: KernelContext) -> list[Shape]:
    shapes = _prepare_along_axis(ctx)
    beta = float(ctx.scalar("beta"))
    if not beta > 0:
        raise BadDataError(f"{ctx.describe_input('beta')} must be positive, got {beta}")
    if ctx.input_type("input") in ASYMM_8BIT:
        softmax_quant8_params(ctx, beta)
    return shapes


@register(Op.SOFTMAX, prepare=_prepare_softmax)
def softmax(ctx: KernelContext) -> np.ndarray:
    beta = float(ctx.scalar("beta"))

    def float_softmax(x: np.ndarray) -> np.ndarray:
        exps = np.exp((x - x.max(axis=-1, keepdims=True)) * np.float32(beta))
        return cast("np.ndarray", exps / exps.sum(axis=-1, keepdims=True))

    def quant8_softmax(q: np.ndarray) -> np.ndarray:
        return _softmax_quant8(q, *softmax_quant8_params(ctx, beta), ctx.output_quant()[1])

    return _along_axis(ctx, float_softmax, quant8_softmax)


def softmax_quant8_params(ctx: KernelContext, beta: float) -> tuple[int, int, int]:
    """(multiplier, left shift) taking 8-bit differences to 5 integer bits, and the smallest
    difference that still counts (the others contribute exp() == 0); the native SOFTMAX
    tabulates its exponentials with them."""
    scale = float(np.float32(ctx.input_quant("input")[0]))
    real = min(beta * scale * float(1 << (31 - _DIFF_INTEGER_BITS)), float(_INT32_MAX))
    if not real > 1.0:
        raise BadDataError(f"beta * input scale = {beta * scale:g} is too small for quantized"
                           " SOFTMAX (it must exceed 2**-26)")
    multiplier, left_shift = fp.quantize_multiplier_greater_than_one(real)
    return multiplier, left_shift, -fp.calculate_input_radius(_DIFF_INTEGER_BITS, left_shift)


def softmax_quant8_exponentials(diff: np.ndarray, multiplier: int, left_shift: int,
                                diff_min: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For differences from the row maximum (<= 0): whether each counts, its fixed-point
    exponential, and its term of the 12-integer-bit sum (0 when it does not count)."""
    counted = diff >= diff_min
    scaled_diff = fp.multiply_by_quantized_multiplier_greater_than_one(
        np.where(counted, diff, 0), multiplier, left_shift)
    exps = fp.exp_on_negative_values(scaled_diff, _DIFF_INTEGER_BITS)
    terms = np.where(counted, fp.rescale(exps, 0, SOFTMAX_SUM_INTEGER_BITS), 0)
    return counted, exps, terms


def _softmax_quant8(q: np.ndarray, multiplier: int, left_shift: int, diff_min: int,
                    zero_point: int) -> np.ndarray:
    """Quantized softmax along the last axis; the output has scale 1/256 and ``zero_point``
    (the lowest value of ``q``'s type)."""
    q_dtype = q.dtype
    q = q.astype(np.int64)
    diff = q - q.max(axis=-1, keepdims=True)
    counted, exps, terms = softmax_quant8_exponentials(diff, multiplier, left_shift, diff_min)
    # The C++ sum wraps at 32 bits; wrapping once at the end gives the same value.
    sum_of_exps = fp.wrap(terms.sum(axis=-1, keepdims=True))
    reciprocal, bits_over_unit = fp.get_reciprocal(sum_of_exps, SOFTMAX_SUM_INTEGER_BITS)
    out = fp.rounding_divide_by_pot(fp.saturating_rounding_doubling_high_mul(reciprocal, exps),
                                    bits_over_unit + 31 - 8)
    return saturate(np.where(counted, out + zero_point, zero_point), q_dtype)


def _prepare_log_softmax(ctx: KernelContext) -> list[Shape]:
    shape = ctx.input_shape("input")
    if not shape:
        raise BadDataError(f"{ctx.describe_input('input')} must have rank 1 or more, got a"
                           " scalar shape []")
    axis_scalar(ctx, "axis", len(shape))
    return [shape]


@register(Op.LOG_SOFTMAX, prepare=_prepare_log_softmax)
def log_softmax(ctx: KernelContext) -> np.ndarray:
    beta = np.float32(ctx.scalar("beta"))

    def compute(x: np.ndarray) -> np.ndarray:
        # Subtracting the maximum (the minimum for a negative beta) keeps exp() finite.
        pivot = x.max(axis=-1, keepdims=True) if beta >= 0 else x.min(axis=-1, keepdims=True)
        shifted = (x - pivot) * beta
        log_sum = np.log(np.exp(shifted.astype(np.float64)).sum(axis=-1, keepdims=True))
        return cast("np.ndarray", shifted - log_sum.astype(np.float32))

    return _along_axis(ctx, compute)


# --------------------------------------------------------------------------------------------
# L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION


@register(Op.L2_NORMALIZATION, prepare=_prepare_along_axis)
def l2_normalization(ctx: KernelContext) -> np.ndarray:
    def compute(x: np.ndarray) -> np.ndarray:
        norm = np.sqrt((x * x).sum(axis=-1, keepdims=True))
        # An all-zero slice stays zero (Android's float kernel would give 0/0 = NaN).
        return cast("np.ndarray", np.where(norm > 0, x / norm, np.float32(0)))

    zero_point = ctx.input_quant("input")[1]
    output_zero_point = ctx.output_quant()[1]
    return _along_axis(ctx, compute, lambda q: _l2_normalization_quant8(q, zero_point,
                                                                         output_zero_point))


def _l2_normalization_quant8(q: np.ndarray, zero_point: int,
                             output_zero_point: int) -> np.ndarray:
    """x / |x| along the last axis; the output has scale 1/128 and ``output_zero_point`` (the
    middle of ``q``'s type)."""
    q_dtype = q.dtype
    diff = q.astype(np.int64) - zero_point
    sum_of_squares = (diff * diff).sum(axis=-1, keepdims=True)
    if np.any(sum_of_squares > _INT32_MAX):
        raise OpFailedError(f"the sum of squares along the axis ({int(sum_of_squares.max())})"
                            " overflows int32")
    inv_sqrt, shift = fp.get_inv_sqrt_quantized_multiplier_exp(sum_of_squares)
    scaled = fp.rounding_divide_by_pot(
        fp.saturating_rounding_doubling_high_mul(128 * diff, inv_sqrt), shift)
    return saturate(scaled + output_zero_point, q_dtype)


def _prepare_local_response_normalization(ctx: KernelContext) -> list[Shape]:
    shapes = _prepare_along_axis(ctx)
    radius = int(ctx.scalar("radius"))
    if radius < 0:
        raise BadDataError(f"{ctx.describe_input('radius')} must not be negative, got {radius}")
    return shapes


@register(Op.LOCAL_RESPONSE_NORMALIZATION, prepare=_prepare_local_response_normalization)
def local_response_normalization(ctx: KernelContext) -> np.ndarray:
    radius = int(ctx.scalar("radius"))
    bias, alpha, beta = (float(ctx.scalar(name)) for name in ("bias", "alpha", "beta"))

    def compute(x: np.ndarray) -> np.ndarray:
        depth = x.shape[-1]
        squares = (x * x).astype(np.float64)
        cumulative = np.concatenate([np.zeros(x.shape[:-1] + (1,)), squares.cumsum(axis=-1)],
                                    axis=-1)
        position = np.arange(depth)
        window_end = np.minimum(position + radius + 1, depth)
        window_begin = np.maximum(position - radius, 0)
        window_sum = cumulative[..., window_end] - cumulative[..., window_begin]
        return cast("np.ndarray", x * np.power(bias + alpha * window_sum, -beta))

    return _along_axis(ctx, compute)


# --------------------------------------------------------------------------------------------
# INSTANCE_NORMALIZATION


def _prepare_instance_normalization(ctx: KernelContext) -> list[Shape]:
    return [check_rank(ctx, "input", (4,))]


@register(Op.INSTANCE_NORMALIZATION, prepare=_prepare_instance_normalization)
def instance_normalization(ctx: KernelContext) -> np.ndarray:
    """Normalizes each (batch, channel) plane over height and width: (x - mean) * gamma /
    sqrt(variance + epsilon) + beta, as NeuralNetworks.h says and Android 11 computes
    (Android 10 divided by the root mean square instead)."""
    x = ctx.float_input("input")
    if x.size == 0:
        return _empty_output(ctx)
    gamma, beta, epsilon = (np.float32(ctx.scalar(name)) for name in ("gamma", "beta", "epsilon"))
    spatial = (2, 3) if ctx.scalar("nchw") else (1, 2)
    count = np.float32(x.shape[spatial[0]] * x.shape[spatial[1]])
    with np.errstate(all="ignore"):
        mean = x.sum(axis=spatial, keepdims=True) / count
        centered = x - mean
        sigma = np.sqrt((centered * centered).sum(axis=spatial, keepdims=True) / count + epsilon)
        result = centered * gamma / sigma + beta
        return cast("np.ndarray", result.astype(ctx.output_dtype(), copy=False))
