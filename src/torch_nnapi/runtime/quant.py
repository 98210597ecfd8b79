"""Integer quantized arithmetic as Android's reference kernels do it, vectorized with NumPy.

The reference kernels (TFLite/gemmlowp style) rescale int32 accumulators with a 32-bit fixed
point multiplier and a power-of-two shift, rounding in specific ways. Reproducing those
roundings, rather than multiplying by a float scale, is what makes results bit-exact.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from ..nnapi.codes import FuseCode, OperandType
from ..nnapi.errors import BadDataError

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# The asymmetric 8-bit types: uint8 since the first release, int8 since API 30. Android's
# kernels for the two are one template: the same integer arithmetic on values minus their
# zero point, saturated to the type's own range.
ASYMM_8BIT = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})


def saturate(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Integer ``values`` clamped to ``dtype``'s range and cast to it."""
    limits = np.iinfo(dtype)
    return cast("np.ndarray", np.clip(values, limits.min, limits.max).astype(dtype))


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """Splits a positive real multiplier into (int32 fixed-point multiplier, left shift).

    ``real ~= multiplier * 2**(shift - 31)``; shift is negative for multipliers below 0.5.
    Multipliers outside [2**-32, 2**31) have no meaningful 32-bit fixed-point form (every
    bit would be shifted out, or every value saturate): they come from extreme quantization
    scales and are refused with BAD_DATA.
    """
    if real_multiplier == 0.0:
        return 0, 0
    if not (real_multiplier > 0 and math.isfinite(real_multiplier)):
        raise BadDataError(f"quantized rescale multiplier {real_multiplier} must be positive")
    fraction, shift = math.frexp(real_multiplier)
    q_fixed = _round_half_away(fraction * (1 << 31))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if not -31 <= shift <= 31:
        raise BadDataError(f"quantized rescale multiplier {real_multiplier:g} (a ratio of the"
                           " operands' scales) is outside [2^-32, 2^31), the range of 32-bit"
                           " fixed-point arithmetic")
    return int(q_fixed), int(shift)


def quantize_multiplier_smaller_than_one(real_multiplier: float) -> tuple[int, int]:
    """(multiplier, right_shift) for a multiplier in [0, 1), as the legacy kernels use."""
    if not 0.0 <= real_multiplier < 1.0:
        raise BadDataError(f"rescale multiplier {real_multiplier} must be in [0, 1): the output"
                           " scale is too small for the input and filter scales")
    multiplier, shift = quantize_multiplier(real_multiplier)
    return multiplier, -shift


def _round_half_away(x: float) -> int:
    """std::round: halves round away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Vectorized std::round (NumPy's rint rounds halves to even).

    Decides on the exact fractional part: adding 0.5 first would itself round in float32
    (0.49999997 + 0.5 becomes 1.0, 8388609 + 0.5 becomes 8388610).
    """
    x = np.asarray(x)
    whole = np.trunc(x)
    with np.errstate(invalid="ignore"):  # inf - inf: infinities stay as they are
        return cast("np.ndarray", np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole))


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul of int32 values, in int64 arithmetic."""
    a = np.asarray(a, dtype=np.int64)
    product = a * np.int64(b)
    nudge = np.where(product >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    total = product + nudge
    # C++ integer division truncates toward zero.
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))
    if b == INT32_MIN:
        high = np.where(a == INT32_MIN, INT32_MAX, high)
    return cast("np.ndarray", high)


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: x / 2**exponent, rounding halves away from zero."""
    if exponent == 0:
        return np.asarray(x, dtype=np.int64)
    x = np.asarray(x, dtype=np.int64)
    mask = np.int64((1 << exponent) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return cast("np.ndarray", (x >> exponent) + (remainder > threshold))


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier: x * multiplier * 2**(shift - 31), rounded."""
    left = max(shift, 0)
    right = max(-shift, 0)
    x = np.asarray(x, dtype=np.int64)
    if left:
        x = np.clip(x * (1 << left), INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right)


def requantize(acc: np.ndarray, real_multiplier: float, zero_point: int, qmin: int,
               qmax: int) -> np.ndarray:
    """Rescales int32 accumulators to an output's quantized range (the common epilogue)."""
    multiplier, shift = quantize_multiplier(real_multiplier)
    scaled = multiply_by_quantized_multiplier(acc, multiplier, shift) + zero_point
    return cast("np.ndarray", np.clip(scaled, qmin, qmax))


def requantize_per_channel(acc: np.ndarray, real_multipliers: np.ndarray, zero_point: int,
                           qmin: int, qmax: int, axis: int = -1) -> np.ndarray:
    """``requantize`` with one multiplier per channel along ``axis``."""
    acc = np.asarray(acc, dtype=np.int64)
    out = np.empty(acc.shape, dtype=np.int64)
    moved_acc = np.moveaxis(acc, axis, 0)
    moved_out = np.moveaxis(out, axis, 0)
    for c, real in enumerate(real_multipliers):
        multiplier, shift = quantize_multiplier(float(real))
        moved_out[c] = multiply_by_quantized_multiplier(moved_acc[c], multiplier, shift)
    return np.clip(out + zero_point, qmin, qmax)


def quantize(real: np.ndarray, scale: float, zero_point: int, dtype: np.dtype) -> np.ndarray:
    """Real values to a quantized type: round half away from zero, then saturate."""
    limits = np.iinfo(dtype)
    q = round_half_away(np.asarray(real, dtype=np.float32) / np.float32(scale)) + zero_point
    return cast("np.ndarray", np.clip(q, limits.min, limits.max).astype(dtype))


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """Quantized values to float32: scale * (q - zero_point)."""
    shifted = (np.asarray(q, dtype=np.int32) - np.int32(zero_point)).astype(np.float32)
    return cast("np.ndarray", shifted * np.float32(scale))


_UINT8 = np.dtype(np.uint8)  # the default of activation_range_quantized


def activation_range_quantized(fuse_code: int, scale: float, zero_point: int,
                               dtype: np.dtype = _UINT8) -> tuple[int, int]:
    """The quantized clamp bounds of a fused activation in ``dtype``'s range
    (CalculateActivationRangeUint8 and its Int8 twin)."""
    limits = np.iinfo(dtype)
    qmin, qmax = int(limits.min), int(limits.max)

    def q(f: float) -> int:
        with np.errstate(over="ignore"):  # a tiny scale: saturates like any far value
            real = float(np.float32(f) / np.float32(scale))
        return zero_point + _round_half_away(max(-2.0**40, min(real, 2.0**40)))

    code = check_fuse_code(fuse_code)
    if code == FuseCode.RELU:
        return max(qmin, q(0.0)), qmax
    if code == FuseCode.RELU6:
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if code == FuseCode.RELU1:
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


def activation_range_float(fuse_code: int) -> tuple[float, float]:
    code = check_fuse_code(fuse_code)
    return {
        FuseCode.NONE: (-np.inf, np.inf),
        FuseCode.RELU: (0.0, np.inf),
        FuseCode.RELU1: (-1.0, 1.0),
        FuseCode.RELU6: (0.0, 6.0),
    }[code]


def apply_fused_activation(x: np.ndarray, fuse_code: int) -> np.ndarray:
    """Clamps a float result in place (when writable) for a fused activation."""
    lo, hi = activation_range_float(fuse_code)
    if lo == -np.inf and hi == np.inf:
        return x
    return np.clip(x, lo, hi, out=x if x.flags.writeable else None)


def check_fuse_code(fuse_code: int) -> FuseCode:
    try:
        return FuseCode(int(fuse_code))
    except ValueError:
        raise BadDataError(f"fused activation code {fuse_code} is not a FuseCode (0..3)") \
            from None
