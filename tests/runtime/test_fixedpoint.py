"""gemmlowp-style fixed point: primitives against exact integer math, functions against float
math within their precision, and exact values produced by gemmlowp's C++ implementation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from torch_nnapi.nnapi.errors import BadDataError
from torch_nnapi.runtime import fixedpoint as fp

RNG = np.random.default_rng(1234)


def _round_half_away(q: Fraction) -> int:
    n = abs(q)
    r = int(n) + (1 if n - int(n) >= Fraction(1, 2) else 0)
    return r if q >= 0 else -r


def _raw_samples(bits: int, count: int = 2000) -> np.ndarray:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    edges = [lo, lo + 1, -1, 0, 1, hi - 1, hi]
    return np.concatenate([edges, RNG.integers(lo, hi + 1, count)]).astype(np.int64)


# --------------------------------------------------------------------------------------------
# Formats and primitives


def test_format_constants():
    f4 = fp.QFormat(4)
    assert f4.fractional_bits == 27
    assert f4.one == 1 << 27
    assert fp.QFormat(0).one == 2**31 - 1
    assert fp.QFormat(0, 16).one == 32767
    assert f4.constant_pot(-2) == 1 << 25
    # 32-bit constants are narrowed to 16 bits with rounding.
    assert fp.QFormat(0, 16).constant(1 << 30) == 1 << 14
    assert fp.QFormat(2, 16).constant(1515870810) == 23130
    np.testing.assert_array_equal(f4.from_float([1.5, -0.25, 100.0]),
                                  [3 << 26, -(1 << 25), 2**31 - 1])
    with pytest.raises(ValueError):
        fp.QFormat(16, 16)
    with pytest.raises(ValueError):
        fp.QFormat(3, 8)


def test_wrap_is_twos_complement():
    np.testing.assert_array_equal(fp.wrap([2**31, -(2**31) - 1, 5], 32), [-(2**31), 2**31 - 1, 5])
    np.testing.assert_array_equal(fp.wrap([32768, -32769], 16), [-32768, 32767])


@pytest.mark.parametrize("bits", [16, 32])
def test_saturating_rounding_doubling_high_mul_matches_exact_rounding(bits):
    a, b = _raw_samples(bits), _raw_samples(bits)[::-1]
    got = fp.saturating_rounding_doubling_high_mul(a, b, bits)
    raw_max = (1 << (bits - 1)) - 1
    for x, y, g in zip(a.tolist(), b.tolist(), got.tolist(), strict=True):
        expected = _round_half_away(Fraction(x * y, 1 << (bits - 1)))
        assert g == min(expected, raw_max), (x, y)


def test_saturating_rounding_doubling_high_mul_saturates_min_times_min():
    assert fp.saturating_rounding_doubling_high_mul(-(2**31), -(2**31)) == 2**31 - 1
    assert fp.saturating_rounding_doubling_high_mul(-32768, -32768, 16) == 32767


def test_rounding_divide_by_pot_rounds_halves_away_from_zero():
    x = _raw_samples(32)
    for exponent in (0, 1, 5, 31):
        got = fp.rounding_divide_by_pot(x, exponent)
        expected = [_round_half_away(Fraction(v, 1 << exponent)) for v in x.tolist()]
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(fp.rounding_divide_by_pot([5, -5, 6, -6], 1), [3, -3, 3, -3])
    # One exponent per element.
    np.testing.assert_array_equal(fp.rounding_divide_by_pot([12, 12, 12], [0, 2, 3]), [12, 3, 2])
    with pytest.raises(ValueError):
        fp.rounding_divide_by_pot(1, -1)


@pytest.mark.parametrize("bits", [16, 32])
def test_saturating_rounding_multiply_by_pot(bits):
    x = _raw_samples(bits)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    for exponent in (1, 3):
        np.testing.assert_array_equal(fp.saturating_rounding_multiply_by_pot(x, exponent, bits),
                                      np.clip(x * (1 << exponent), lo, hi))
    np.testing.assert_array_equal(fp.saturating_rounding_multiply_by_pot(x, -3, bits),
                                  fp.rounding_divide_by_pot(x, 3))


def test_rescale_changes_integer_bits_keeping_the_value():
    f0, f4 = fp.QFormat(0), fp.QFormat(4)
    raw = f4.from_float([0.5, -0.75, 3.0])
    np.testing.assert_allclose(f0.to_float(fp.rescale(raw, 4, 0)), [0.5, -0.75, float(
        f0.to_float(f0.raw_max))])
    back = fp.rescale(f0.from_float([0.5, -0.75]), 0, 4)
    np.testing.assert_allclose(f4.to_float(back), [0.5, -0.75])


def test_rounding_half_sum_and_saturating_add():
    np.testing.assert_array_equal(
        fp.rounding_half_sum([1, -1, 2, 2**31 - 1], [2, -2, 2, 2**31 - 1]), [2, -2, 2, 2**31 - 1])
    np.testing.assert_array_equal(fp.saturating_add([30000, -30000], [5000, -5000], 16),
                                  [32767, -32768])
    np.testing.assert_array_equal(fp.add_saturating_if_16bit(2**31 - 1, 1, 32), -(2**31))
    np.testing.assert_array_equal(fp.add_saturating_if_16bit(32767, 1, 16), 32767)


# --------------------------------------------------------------------------------------------
# Math functions against float math

# Largest absolute errors, in real units, measured over each format's whole range, with margin.
_PRECISION = {32: {"exp": 3e-7, "logistic": 1e-7, "tanh": 2e-7},
              16: {"exp": 1e-4, "logistic": 2.5e-4, "tanh": 4e-4}}
_FORMATS = [(32, 0), (32, 4), (32, 5), (32, 12), (16, 0), (16, 3), (16, 4)]


def _dense_raw(bits: int, integer_bits: int) -> np.ndarray:
    fmt = fp.QFormat(integer_bits, bits)
    return np.unique(np.concatenate([
        np.linspace(fmt.raw_min, fmt.raw_max, 40001).astype(np.int64), _raw_samples(bits)]))


@pytest.mark.parametrize("bits,integer_bits", _FORMATS)
def test_exp_on_negative_values(bits, integer_bits):
    fmt, out = fp.QFormat(integer_bits, bits), fp.QFormat(0, bits)
    raw = _dense_raw(bits, integer_bits)
    raw = raw[raw <= 0]
    got = out.to_float(fp.exp_on_negative_values(raw, integer_bits, bits))
    assert np.max(np.abs(got - np.exp(fmt.to_float(raw)))) <= _PRECISION[bits]["exp"]
    assert fp.exp_on_negative_values(0, integer_bits, bits) == out.one


@pytest.mark.parametrize("bits,integer_bits", _FORMATS)
def test_logistic_and_tanh(bits, integer_bits):
    fmt, out = fp.QFormat(integer_bits, bits), fp.QFormat(0, bits)
    raw = _dense_raw(bits, integer_bits)
    x = fmt.to_float(raw)
    with np.errstate(over="ignore"):
        expected_logistic = 1 / (1 + np.exp(-x))
    logistic = out.to_float(fp.logistic(raw, integer_bits, bits))
    tanh = out.to_float(fp.tanh(raw, integer_bits, bits))
    assert np.max(np.abs(logistic - expected_logistic)) <= _PRECISION[bits]["logistic"]
    assert np.max(np.abs(tanh - np.tanh(x))) <= _PRECISION[bits]["tanh"]
    # Symmetries hold exactly.
    inner = raw[(raw > fmt.raw_min) & (raw != 0)]
    np.testing.assert_array_equal(fp.tanh(-inner, integer_bits, bits),
                                  -fp.tanh(inner, integer_bits, bits))
    np.testing.assert_array_equal(fp.logistic(-inner, integer_bits, bits),
                                  out.one - fp.logistic(inner, integer_bits, bits))


@pytest.mark.parametrize("bits", [16, 32])
def test_reciprocals(bits):
    f0 = fp.QFormat(0, bits)
    raw = np.linspace(0, f0.raw_max, 20001).astype(np.int64)
    a = f0.to_float(raw)
    lsb = 2.0 ** -(bits - 1)
    assert np.max(np.abs(f0.to_float(fp.one_over_one_plus_x_for_x_in_0_1(raw, bits))
                         - 1 / (1 + a))) <= 8 * lsb
    assert np.max(np.abs(f0.to_float(fp.one_minus_x_over_one_plus_x_for_x_in_0_1(raw, bits))
                         - (1 - a) / (1 + a))) <= 16 * lsb


# Values computed by gemmlowp's fixedpoint.h (C++), for raw inputs.
_EXACT = [
    ("exp", 32, 5, [-67108864, -134217728, -1, -(2**31)], [790015308, 290630390, 2147483124, 0]),
    ("exp", 16, 4, [-32768, -16384, -1], [0, 11, 32752]),
    ("tanh", 32, 4, [134217728, -134217728, 268435456, 2**31 - 1],
     [1635510876, -1635510876, 2070233436, 2147483647]),
    ("tanh", 16, 3, [4096, -4096, 8192, -32768, 32767], [24964, -24964, 31596, -32767, 32767]),
    ("logistic", 32, 4, [134217728, -134217728, 268435456, -(2**31)],
     [1569936226, 577547421, 1891497262, 241]),
    ("logistic", 16, 3, [4096, -4096, 8192, -32768, 32767], [23952, 8815, 28866, 11, 32756]),
]


@pytest.mark.parametrize("name,bits,integer_bits,raw,expected", _EXACT)
def test_exact_values_of_gemmlowp(name, bits, integer_bits, raw, expected):
    fn = {"exp": fp.exp_on_negative_values, "tanh": fp.tanh, "logistic": fp.logistic}[name]
    np.testing.assert_array_equal(fn(np.array(raw), integer_bits, bits), expected)


def test_exact_reciprocal_values():
    np.testing.assert_array_equal(
        fp.one_over_one_plus_x_for_x_in_0_1(np.array([0, 1 << 30, 2**31 - 1])),
        [2147483647, 1431655762, 1073741820])


# --------------------------------------------------------------------------------------------
# TFLite helpers


def test_quantize_multiplier_greater_than_one():
    multiplier, shift = fp.quantize_multiplier_greater_than_one(3.0)
    assert (multiplier, shift) == (3 << 29, 2)
    with pytest.raises(BadDataError, match="greater than 1"):
        fp.quantize_multiplier_greater_than_one(0.5)


def test_multiply_by_quantized_multiplier_greater_than_one():
    multiplier, shift = fp.quantize_multiplier_greater_than_one(2.5)
    np.testing.assert_array_equal(
        fp.multiply_by_quantized_multiplier_greater_than_one(np.array([4, -4, 3]), multiplier,
                                                             shift), [10, -10, 8])


def test_calculate_input_radius():
    # 15 * 2**27 / 2**20 = 1920.
    assert fp.calculate_input_radius(4, 20) == 1920
    assert fp.calculate_input_radius(4, 28) == 7


def test_count_leading_zeros_and_reciprocal():
    np.testing.assert_array_equal(fp.count_leading_zeros_uint32([0, 1, 2**31 - 1, 2**19]),
                                  [32, 31, 1, 12])
    # Sums with 12 integer bits; the scale is normalized into (1/2, 1].
    f12 = fp.QFormat(12)
    sums = f12.from_float([1.0, 1.25, 3.0, 200.0])
    scale, bits_over_unit = fp.get_reciprocal(sums, 12)
    reciprocal = fp.QFormat(0).to_float(scale) * 2.0 ** -bits_over_unit.astype(np.float64)
    np.testing.assert_allclose(reciprocal, [1.0, 0.8, 1 / 3, 1 / 200], rtol=1e-8)
    np.testing.assert_array_equal(bits_over_unit, [0, 0, 1, 7])
