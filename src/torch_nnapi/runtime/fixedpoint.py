"""gemmlowp-style fixed-point arithmetic, vectorized with NumPy.

Android's quantized reference kernels (LOGISTIC, TANH, SOFTMAX, the quantized LSTM cell)
evaluate transcendental functions in fixed point, with gemmlowp's ``FixedPoint<raw, m>``: a
signed integer of ``raw_bits`` (16 or 32) bits holding a real value scaled by
``2**(raw_bits - 1 - m)`` (``m`` integer bits, the rest fractional). Reproducing the exact
integer algorithms, constants and roundings is what makes our results bit-exact.

Every function here takes and returns raw values as NumPy int64 arrays (the raw integers
widened, so that products never overflow) plus, where it matters, the raw width and the number
of integer bits, which gemmlowp carries in template parameters. Non-saturating additions wrap
at the raw width, as the C++ arithmetic does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from ..nnapi.errors import BadDataError
from .quant import quantize_multiplier


@dataclass(frozen=True)
class QFormat:
    """A fixed-point format: ``raw_bits``-bit signed raw values with ``integer_bits``."""

    integer_bits: int
    raw_bits: int = 32

    def __post_init__(self) -> None:
        if self.raw_bits not in (16, 32):
            raise ValueError(f"raw fixed-point width must be 16 or 32 bits, got {self.raw_bits}")
        if not 0 <= self.integer_bits < self.raw_bits:
            raise ValueError(f"{self.integer_bits} integer bits do not fit {self.raw_bits} bits")

    @property
    def fractional_bits(self) -> int:
        return self.raw_bits - 1 - self.integer_bits

    @property
    def raw_min(self) -> int:
        return -(1 << (self.raw_bits - 1))

    @property
    def raw_max(self) -> int:
        return (1 << (self.raw_bits - 1)) - 1

    @property
    def one(self) -> int:
        """The raw value of 1.0; with no integer bits, the largest value (just below 1)."""
        return self.raw_max if self.integer_bits == 0 else 1 << self.fractional_bits

    def constant_pot(self, exponent: int) -> int:
        """The raw value of 2**exponent, which must be exactly representable."""
        offset = self.fractional_bits + exponent
        if not 0 <= offset < self.raw_bits - 1:
            raise ValueError(f"2**{exponent} is not representable in {self}")
        return 1 << offset

    def constant(self, int32_raw: int) -> int:
        """A constant given as its 32-bit raw value, narrowed to this width with rounding
        (gemmlowp writes every constant once, for 32 bits)."""
        return int(rounding_divide_by_pot(np.int64(int32_raw), 32 - self.raw_bits))

    def from_float(self, x: ArrayLike) -> np.ndarray:
        """Real values to raw: rounded half away from zero, saturated."""
        scaled = np.asarray(x, dtype=np.float64) * float(1 << self.fractional_bits)
        rounded = np.trunc(scaled + np.copysign(0.5, scaled))
        return np.clip(rounded, self.raw_min, self.raw_max).astype(np.int64)

    def to_float(self, raw: ArrayLike) -> np.ndarray:
        return np.asarray(raw, dtype=np.float64) / float(1 << self.fractional_bits)


# --------------------------------------------------------------------------------------------
# Integer primitives


def wrap(x: ArrayLike, raw_bits: int = 32) -> np.ndarray:
    """Two's-complement wrap-around to ``raw_bits`` bits (C++ non-saturating arithmetic)."""
    half = np.int64(1 << (raw_bits - 1))
    wrapped = (np.asarray(x, dtype=np.int64) + half) & np.int64((1 << raw_bits) - 1)
    return cast("np.ndarray", wrapped - half)


def _truncating_shift_right(x: np.ndarray, exponent: int) -> np.ndarray:
    """x / 2**exponent rounded toward zero, as C++ integer division does."""
    return np.where(x >= 0, x >> exponent, -((-x) >> exponent))


def saturating_rounding_doubling_high_mul(a: ArrayLike, b: ArrayLike,
                                          raw_bits: int = 32) -> np.ndarray:
    """Product of two values read as fractions in [-1, 1), rounded to nearest (halves away
    from zero); min * min saturates to max. ARM's VQRDMULH."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    shift = raw_bits - 1
    product = a * b
    nudge = np.where(product >= 0, np.int64(1 << (shift - 1)), np.int64(1 - (1 << (shift - 1))))
    high = _truncating_shift_right(product + nudge, shift)
    raw_min = -(1 << shift)
    return np.where((a == raw_min) & (b == raw_min), np.int64((1 << shift) - 1), high)


def rounding_divide_by_pot(x: ArrayLike, exponent: ArrayLike) -> np.ndarray:
    """x / 2**exponent rounded to nearest, halves away from zero (a rounding right shift).

    ``exponent`` may be an array (one shift per element or per channel)."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    if np.any(exponent < 0) or np.any(exponent > 62):
        raise ValueError(f"rounding shift exponent must be in [0, 62], got {exponent}")
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return cast("np.ndarray", (x >> exponent) + (remainder > threshold))


def saturating_rounding_multiply_by_pot(x: ArrayLike, exponent: int,
                                        raw_bits: int = 32) -> np.ndarray:
    """x * 2**exponent: a saturating left shift, or a rounding right shift if negative."""
    x = np.asarray(x, dtype=np.int64)
    if exponent <= 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (raw_bits - 1 - exponent)) - 1
    raw_max = (1 << (raw_bits - 1)) - 1
    shifted = x << exponent
    return np.where(x > threshold, raw_max, np.where(x < -threshold, -raw_max - 1, shifted))


def rescale(x: ArrayLike, src_integer_bits: int, dst_integer_bits: int,
            raw_bits: int = 32) -> np.ndarray:
    """Raw values of one format re-expressed with another number of integer bits."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits, raw_bits)


def rounding_half_sum(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """(a + b) / 2 rounded to nearest, halves away from zero (ARM's VRHADD)."""
    total = np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)
    return _truncating_shift_right(total + np.where(total >= 0, 1, -1), 1)


def saturating_add(a: ArrayLike, b: ArrayLike, raw_bits: int = 32) -> np.ndarray:
    limit = 1 << (raw_bits - 1)
    return np.clip(np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64),
                   -limit, limit - 1)


def add_saturating_if_16bit(a: ArrayLike, b: np.ndarray | int, raw_bits: int = 32) -> np.ndarray:
    """gemmlowp saturates additions of 16-bit values only; 32-bit ones wrap."""
    if raw_bits == 16:
        return saturating_add(a, b, raw_bits)
    return wrap(np.asarray(a, dtype=np.int64) + b, raw_bits)


# --------------------------------------------------------------------------------------------
# Math functions (gemmlowp's algorithms and constants)

# exp(-1/8), and 1/3, as 32-bit raw values with 0 integer bits.
_EXP_MINUS_ONE_EIGHTH = 1895147668
_ONE_THIRD = 715827883
# exp(-2**k) for the bits of the input above 1/4, 32-bit raw with 0 integer bits.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))
# Newton-Raphson initial estimate of 1/d for d in [1/2, 1]: 48/17 - 32/17 d, 2 integer bits.
_48_OVER_17 = 1515870810
_MINUS_32_OVER_17 = -1010580540


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: ArrayLike,
                                                            raw_bits: int = 32) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), both with 0 integer bits: a Taylor expansion around -1/8."""
    f = QFormat(0, raw_bits)
    a = np.asarray(a, dtype=np.int64)

    def mul(p: ArrayLike, q: ArrayLike) -> np.ndarray:
        return saturating_rounding_doubling_high_mul(p, q, raw_bits)

    constant_term = f.constant(_EXP_MINUS_ONE_EIGHTH)
    x = wrap(a + f.constant_pot(-3), raw_bits)
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2, raw_bits)
    cubic_sum = wrap(mul(wrap(x4_over_4 + x3, raw_bits), f.constant(_ONE_THIRD)) + x2, raw_bits)
    x4_over_24_plus_x3_over_6_plus_x2_over_2 = saturating_rounding_multiply_by_pot(
        cubic_sum, -1, raw_bits)
    return add_saturating_if_16bit(
        constant_term,
        mul(constant_term, wrap(x + x4_over_24_plus_x3_over_6_plus_x2_over_2, raw_bits)),
        raw_bits)


def exp_on_negative_values(a: ArrayLike, integer_bits: int, raw_bits: int = 32) -> np.ndarray:
    """exp(a) for a <= 0 with ``integer_bits``; the result has 0 integer bits.

    The input's part modulo 1/4 goes through the Taylor expansion; each higher bit of -a
    multiplies in a constant exp(-2**k)."""
    fmt = QFormat(integer_bits, raw_bits)
    result_fmt = QFormat(0, raw_bits)
    a = np.asarray(a, dtype=np.int64)
    one_quarter = fmt.constant_pot(-2)
    a_mod_quarter_minus_one_quarter = (a & np.int64(one_quarter - 1)) - one_quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0, raw_bits), raw_bits)
    remainder = wrap(a_mod_quarter_minus_one_quarter - a, raw_bits)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = np.int64(1 << (fmt.fractional_bits + exponent))
            scaled = saturating_rounding_doubling_high_mul(
                result, result_fmt.constant(multiplier), raw_bits)
            result = np.where((remainder & bit) != 0, scaled, result)
    if integer_bits > 5:
        # exp(x) of x below -32 is 0 in this format.
        clamp = fmt.constant(-(1 << (36 - integer_bits)))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, result_fmt.one, result)


def _newton_raphson_reciprocal(half_denominator: np.ndarray, raw_bits: int) -> np.ndarray:
    """1 / half_denominator for half_denominator in [1/2, 1], with 2 integer bits."""
    f2 = QFormat(2, raw_bits)

    def mul(p: ArrayLike, q: ArrayLike) -> np.ndarray:
        return saturating_rounding_doubling_high_mul(p, q, raw_bits)

    x = wrap(f2.constant(_48_OVER_17) + mul(half_denominator, f2.constant(_MINUS_32_OVER_17)),
             raw_bits)
    for _ in range(3):
        one_minus_half_denominator_times_x = wrap(f2.one - mul(half_denominator, x), raw_bits)
        correction = rescale(mul(x, one_minus_half_denominator_times_x), 4, 2, raw_bits)
        x = wrap(x + correction, raw_bits)
    return x


def one_over_one_plus_x_for_x_in_0_1(a: ArrayLike, raw_bits: int = 32) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1), both with 0 integer bits."""
    half_denominator = rounding_half_sum(a, QFormat(0, raw_bits).one)
    x = _newton_raphson_reciprocal(half_denominator, raw_bits)
    # x / 2 reinterpreted with 1 integer bit, then brought to 0 integer bits.
    return rescale(x, 1, 0, raw_bits)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: ArrayLike, raw_bits: int = 32) -> np.ndarray:
    """(1 - a) / (1 + a) for a in [0, 1), both with 0 integer bits."""
    half_denominator = rounding_half_sum(a, QFormat(0, raw_bits).one)
    x = _newton_raphson_reciprocal(half_denominator, raw_bits)
    return rescale(wrap(x - QFormat(2, raw_bits).one, raw_bits), 2, 0, raw_bits)


def tanh(a: ArrayLike, integer_bits: int, raw_bits: int = 32) -> np.ndarray:
    """tanh(a) = (1 - exp(-2|a|)) / (1 + exp(-2|a|)) with the sign of a; 0 integer bits out."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    non_positive = np.where(negative, a, wrap(-a, raw_bits))
    # Doubling is exact: the same raw value read with one more integer bit.
    neg_tanh = one_minus_x_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(non_positive, integer_bits + 1, raw_bits), raw_bits)
    signed = np.where(negative, wrap(-neg_tanh, raw_bits), neg_tanh)
    return np.where(a == 0, 0, signed)


def logistic(a: ArrayLike, integer_bits: int, raw_bits: int = 32) -> np.ndarray:
    """1 / (1 + exp(-a)), computed for |a| and mirrored for negative a; 0 integer bits out."""
    a = np.asarray(a, dtype=np.int64)
    result_fmt = QFormat(0, raw_bits)
    positive = a > 0
    abs_input = np.where(positive, a, wrap(-a, raw_bits))
    if_positive = one_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(wrap(-abs_input, raw_bits), integer_bits, raw_bits), raw_bits)
    if_negative = wrap(result_fmt.one - if_positive, raw_bits)
    one_half = result_fmt.constant(1 << 30)
    return np.where(a == 0, one_half, np.where(positive, if_positive, if_negative))


# --------------------------------------------------------------------------------------------
# TFLite helpers built on the primitives (used by the uint8 LOGISTIC, TANH and SOFTMAX)


def quantize_multiplier_greater_than_one(real_multiplier: float) -> tuple[int, int]:
    """(int32 multiplier, left shift >= 0) for a real multiplier above 1."""
    if not real_multiplier > 1.0:
        raise BadDataError(f"rescale multiplier {real_multiplier:g} must be greater than 1")
    multiplier, shift = quantize_multiplier(real_multiplier)
    return multiplier, shift


def multiply_by_quantized_multiplier_greater_than_one(x: ArrayLike, multiplier: int,
                                                      left_shift: int) -> np.ndarray:
    """x * 2**left_shift (wrapping, as int32), then a rounding doubling high multiply."""
    shifted = wrap(np.asarray(x, dtype=np.int64) << left_shift, 32)
    return saturating_rounding_doubling_high_mul(shifted, multiplier, 32)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int,
                           total_signed_bits: int = 31) -> int:
    """The largest |centered input| whose rescaled value stays inside the fixed-point range."""
    max_input_rescaled = (1.0 * ((1 << input_integer_bits) - 1)
                          * (1 << (total_signed_bits - input_integer_bits))
                          / (1 << input_left_shift))
    return int(math.floor(max_input_rescaled))


def count_leading_zeros_uint32(x: ArrayLike) -> np.ndarray:
    """Leading zero bits of values read as uint32 (32 for 0)."""
    values = np.asarray(x, dtype=np.int64) & np.int64(0xFFFFFFFF)
    # Below 2**53 frexp's exponent is exactly the bit length.
    _, bit_length = np.frexp(values.astype(np.float64))
    return cast("np.ndarray", 32 - bit_length.astype(np.int64))


def get_reciprocal(x: ArrayLike, x_integer_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """1 / x for positive 32-bit raw x with ``x_integer_bits``, as (raw value with 0 integer
    bits, num_bits_over_unit): the true reciprocal is raw * 2**-(31 + num_bits_over_unit)."""
    x = np.asarray(x, dtype=np.int64)
    headroom_plus_one = count_leading_zeros_uint32(x)
    num_bits_over_unit = x_integer_bits - headroom_plus_one
    normalized = (x << headroom_plus_one) & np.int64(0xFFFFFFFF)
    shifted_minus_one = wrap(normalized - (1 << 31), 32)
    return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one, 32), num_bits_over_unit


def get_inv_sqrt_quantized_multiplier_exp(x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """1 / sqrt(x) of positive int32 x as (multiplier, right shift >= 0):
    ``1 / sqrt(x) ~= multiplier * 2**-(31 + shift)`` (TFLite's GetInvSqrtQuantizedMultiplierExp,
    a Newton-Raphson iteration in fixed point with 3 integer bits).

    x <= 1 gives (max int32, 0), as later TFLite versions do: Android 10's copy overflows for
    x == 1 (one element of ±1 quantized step, the rest at the zero point)."""
    values = np.asarray(x, dtype=np.int64)
    degenerate = values <= 1
    values = np.where(degenerate, 4, values)
    shift = np.full(values.shape, 11, dtype=np.int64)
    while np.any(values >= 1 << 29):
        big = values >= 1 << 29
        values = np.where(big, values >> 2, values)
        shift += big
    left_shift_bit_pairs = (count_leading_zeros_uint32(values) - 1) // 2 - 1
    shift -= left_shift_bit_pairs
    values = values << (2 * left_shift_bit_pairs)

    def mul(p: ArrayLike, q: ArrayLike) -> np.ndarray:
        return saturating_rounding_doubling_high_mul(p, q)

    f3 = QFormat(3)
    half_input = saturating_rounding_multiply_by_pot(values >> 1, -1)
    half_three = (1 << 28) + (1 << 27)
    estimate = np.full(values.shape, f3.one, dtype=np.int64)
    for _ in range(5):
        cube = rescale(mul(mul(estimate, estimate), estimate), 9, 3)
        estimate = rescale(wrap(mul(half_three, estimate) - mul(half_input, cube)), 6, 3)
    half_sqrt_2 = 1518500250
    multiplier = mul(estimate, half_sqrt_2)
    negative = shift < 0
    multiplier = np.where(negative, wrap(multiplier << np.where(negative, -shift, 0)), multiplier)
    shift = np.maximum(shift, 0)
    multiplier = np.where(degenerate, (1 << 31) - 1, multiplier)
    return multiplier, np.where(degenerate, 0, shift)
