"""Typed wrappers of the native convolution kernels (conv_f32.c, conv_q8.c, q8_gemm.c,
transpose_conv.c, blas.c); conv_kernels.py plans the operations with them.

Float convolutions multiply with NumPy's BLAS (its sgemm called from the kernels' threads,
see blas.c; np.matmul when NumPy's BLAS is not OpenBLAS); C gathers the windows and applies
bias and activation. Depthwise convolutions, and every quantized convolution, run entirely in
C. Quantized plans pack the constant weights once. ``None`` from a plan constructor means the
native kernel cannot promise the reference's exact result (sums that could leave int32,
shifts beyond 31 bits) and the reference kernel must run.

Signed 8-bit data (TENSOR_QUANT8_ASYMM_SIGNED, Android 11) runs on the same kernels: an int8
value v is the uint8 value v + 128 with its zero point 128 up, and (x - x_zero) is the same
for both, so the kernels read int8 bytes with the sign bit flipped (``signed_data``) and
requantize with the output's zero point and bounds 128 up (``Requantization.shifted``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..quant import quantize_multiplier
from . import module

INT32_LIMIT = 2**31 - 1
# The quantized GEMM microkernels, narrowest first (tnn_q8_kind in q8.h); a plan uses the
# widest one the CPU runs, up to the one asked for.
MICROKERNELS = ("generic", "avx2", "avx512vnni")
# The largest |w - w_zero| and |x| of 8-bit values.
PRODUCT_BOUND = 255 * 255


# Sizes of a window the C kernels take (their int arithmetic cannot overflow below it).
WINDOW_LIMIT = 1 << 24


def window(batches: int, height: int, width: int, channels: int, out_h: int, out_w: int,
           kernel_h: int, kernel_w: int, stride_h: int, stride_w: int, dilation_h: int,
           dilation_w: int, pad_top: int, pad_left: int) -> tuple[int, ...]:
    """The window tuple the C functions take (see tnn_window in conv.h)."""
    return (batches, height, width, channels, out_h, out_w, kernel_h, kernel_w, stride_h,
            stride_w, dilation_h, dilation_w, pad_top, pad_left)


def window_fits(geometry: tuple[int, ...]) -> bool:
    """Whether the C kernels take this window: every size within WINDOW_LIMIT, the dilated
    filter too (beyond, the reference kernels run, with their own limits)."""
    kernel_h, kernel_w, dilation_h, dilation_w = geometry[6], geometry[7], geometry[10], \
        geometry[11]
    return max(geometry[1:]) <= WINDOW_LIMIT and \
        max((kernel_h - 1) * dilation_h, (kernel_w - 1) * dilation_w) < WINDOW_LIMIT


# ------------------------------------------------------------------------------ float


def depthwise_f32(x: np.ndarray, taps: np.ndarray, bias: np.ndarray | None,
                  geometry: tuple[int, ...], multiplier: int, lo: float, hi: float,
                  out: np.ndarray) -> np.ndarray:
    """NHWC depthwise convolution of float32 ``x`` by ``taps`` [kh, kw, channels_out], plus
    ``bias``, clamped to [lo, hi], into ``out``."""
    module().depthwise_f32(x, taps, bias, out, geometry, multiplier, lo, hi)
    return out


def im2col_f32(x: np.ndarray, geometry: tuple[int, ...], first_row: int, rows: int,
               columns: np.ndarray) -> np.ndarray:
    """Rows [first_row, first_row + rows) of the window matrix of NHWC ``x``: each output
    pixel's window as kh * kw * channels values (zero padding), into ``columns``."""
    module().im2col_f32(x, columns, geometry, first_row, rows)
    return columns


def bias_activation_f32(data: np.ndarray, bias: np.ndarray | None, lo: float,
                        hi: float) -> np.ndarray:
    """data (2-D, C-contiguous float32) + bias per column, clamped to [lo, hi], in place."""
    rows, columns = data.shape
    module().bias_activation_f32(data, bias, rows, columns, lo, hi)
    return data


# ------------------------------------------------------------------------------ quantized


# What an int8 value adds to become the uint8 value the kernels compute with.
SIGNED_OFFSET = 128


@dataclass(frozen=True)
class Requantization:
    """How int32 sums become uint8: per-channel or per-tensor real multipliers
    (input scale * filter scale / output scale, computed as the reference does), the output
    zero point and the activation's bounds."""

    real_multipliers: Any  # a float, or one per output channel
    output_zero: int
    lo: int
    hi: int

    def shifted(self, offset: int) -> Requantization:
        """The same with the zero point and bounds ``offset`` up (int8 outputs: 128)."""
        return Requantization(self.real_multipliers, self.output_zero + offset,
                              self.lo + offset, self.hi + offset)

    def fixed_point(self, channels: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(multipliers, shifts) as int32 arrays of 1 or ``channels`` values, or None when a
        shift is beyond what the native kernels handle."""
        reals = np.atleast_1d(np.asarray(self.real_multipliers, dtype=np.float64))
        pairs = [quantize_multiplier(float(r)) for r in reals]
        multipliers = np.array([m for m, _ in pairs], dtype=np.int64)
        shifts = np.array([s for _, s in pairs], dtype=np.int64)
        if (multipliers <= 0).any() or (np.abs(shifts) > 31).any():
            return None
        if reals.size != 1 and reals.size != channels:
            raise ValueError(f"{reals.size} multipliers for {channels} channels")
        return multipliers.astype(np.int32), shifts.astype(np.int32)


def _filter_values(filter_: np.ndarray, filter_zero: int) -> tuple[np.ndarray, bool, int]:
    """The filter as C reads it: uint8 with its zero point, or int8 with zero point 0
    (per-channel, or signed symmetric); a signed filter with another zero point moves to
    uint8 (values and zero point 128 up: the same differences)."""
    if filter_.dtype == np.int8:
        if filter_zero == 0:
            return np.ascontiguousarray(filter_), True, 0
        return (filter_.astype(np.int16) + SIGNED_OFFSET).astype(np.uint8), False, \
            int(filter_zero) + SIGNED_OFFSET
    return np.ascontiguousarray(filter_, dtype=np.uint8), False, int(filter_zero)


def _sums_fit(filter_: np.ndarray, filter_zero: int, bias: np.ndarray, input_zero: int,
              taps: int) -> bool:
    """Whether every partial sum the kernels form stays within int32: the sums of ``taps``
    products of 8-bit values, plus the bias with input_zero * sum(w - w_zero) folded in."""
    w = filter_.reshape(filter_.shape[0], -1).astype(np.int64) - filter_zero
    folded = bias.astype(np.int64) - input_zero * w.sum(axis=1)
    bound = taps * PRODUCT_BOUND + max(int(np.abs(folded).max(initial=0)),
                                        int(np.abs(bias).max(initial=0)))
    return bound <= INT32_LIMIT


class Q8Conv:
    """A planned quantized CONV_2D / GROUPED_CONV_2D / FULLY_CONNECTED (filter
    [out, kh, kw, in / groups])."""

    def __init__(self, capsule: Any, out_channels: int, kernel_h: int, kernel_w: int):
        self.capsule = capsule
        self.out_channels = out_channels
        self.kernel_h = kernel_h
        self.kernel_w = kernel_w

    @property
    def microkernel(self) -> str:
        return cast("str", module().q8_conv_kind(self.capsule))

    def run(self, x: np.ndarray, geometry: tuple[int, ...], out: np.ndarray) -> np.ndarray:
        """NHWC 8-bit ``x`` convolved into ``out`` [n, out_h, out_w, out_channels] (both
        int8 for a plan of signed data, else uint8)."""
        module().q8_conv(self.capsule, x, out, geometry)
        return out


def q8_conv(filter_: np.ndarray, filter_zero: int, bias: np.ndarray, groups: int,
            input_zero: int, requant: Requantization,
            microkernel: str = MICROKERNELS[-1], signed_data: bool = False) -> Q8Conv | None:
    """A plan for ``filter_`` (uint8 with ``filter_zero``, or int8 per-channel values), or
    None when the native kernel cannot reproduce the reference exactly. ``microkernel`` caps
    the GEMM microkernel (the tests run each one this CPU has). ``signed_data``: the input and
    output are int8, ``input_zero`` and ``requant`` theirs (the plan moves them 128 up)."""
    out_channels, kernel_h, kernel_w, group_in = filter_.shape
    values, signed, zero = _filter_values(filter_, filter_zero)
    bias = np.ascontiguousarray(bias, dtype=np.int32)
    fixed = requant.fixed_point(out_channels)
    taps = kernel_h * kernel_w * group_in
    offset = SIGNED_OFFSET if signed_data else 0
    input_zero, requant = input_zero + offset, requant.shifted(offset)
    if fixed is None or not _sums_fit(values, zero, bias, input_zero, taps):
        return None
    capsule = module().q8_conv_plan(values, signed, zero, bias, out_channels, kernel_h,
                                    kernel_w, group_in, groups, input_zero, *fixed,
                                    requant.output_zero, requant.lo, requant.hi,
                                    MICROKERNELS.index(microkernel), signed_data)
    return Q8Conv(capsule, out_channels, kernel_h, kernel_w)


def q8_products(filter_: np.ndarray, filter_zero: int, input_zero: int,
                signed_data: bool = False) -> Q8Conv | None:
    """A plan whose only use is ``sums``: the exact sums (x - x_zero) * (w - w_zero) of a
    1x1 convolution by ``filter_`` [out, in] (uint8 with its zero point, or int8), no bias."""
    out_channels, group_in = filter_.shape
    # never applied (the plan only gives sums); its bounds the data type's
    neutral = Requantization(0.5, 0, 0, 255).shifted(-SIGNED_OFFSET if signed_data else 0)
    return q8_conv(filter_.reshape(out_channels, 1, 1, group_in), filter_zero,
                   np.zeros(out_channels, np.int32), 1, input_zero, neutral,
                   signed_data=signed_data)


def q8_sums(plan: Q8Conv, x: np.ndarray, geometry: tuple[int, ...], sums: np.ndarray) \
        -> np.ndarray:
    """The plan's int32 sums (bias included) instead of its requantized outputs."""
    module().q8_conv_sums(plan.capsule, x, sums, geometry)
    return sums


class Q8Depthwise:
    """A planned quantized DEPTHWISE_CONV_2D (filter [1, kh, kw, channels_out])."""

    def __init__(self, capsule: Any, channels: int):
        self.capsule = capsule
        self.channels = channels

    def run(self, x: np.ndarray, geometry: tuple[int, ...], out: np.ndarray) -> np.ndarray:
        module().q8_depthwise(self.capsule, x, out, geometry)
        return out


def q8_depthwise(filter_: np.ndarray, filter_zero: int, bias: np.ndarray, multiplier: int,
                 input_zero: int, requant: Requantization,
                 signed_data: bool = False) -> Q8Depthwise | None:
    """A plan as ``q8_conv``'s for a depthwise filter [1, kh, kw, channels_out]."""
    _, kernel_h, kernel_w, channels = filter_.shape
    values, signed, zero = _filter_values(filter_, filter_zero)
    bias = np.ascontiguousarray(bias, dtype=np.int32)
    fixed = requant.fixed_point(channels)
    per_channel_filter = values.reshape(-1, channels).T  # [channels, taps]
    offset = SIGNED_OFFSET if signed_data else 0
    input_zero, requant = input_zero + offset, requant.shifted(offset)
    if fixed is None or not _sums_fit(per_channel_filter, zero, bias, 0, kernel_h * kernel_w):
        return None
    capsule = module().q8_depthwise_plan(values, signed, zero, bias, channels, multiplier,
                                         kernel_h, kernel_w, input_zero, *fixed,
                                         requant.output_zero, requant.lo, requant.hi,
                                         signed_data)
    return Q8Depthwise(capsule, channels)
