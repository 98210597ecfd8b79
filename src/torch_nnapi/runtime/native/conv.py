"""Typed wrappers of the native convolution kernels (conv_f32.c, conv_q8.c, q8_gemm.c).

Float convolutions keep NumPy's BLAS for the GEMM (measured as fast as anything we could
write, see README "Speed"); C gathers the windows and applies bias and activation in one
pass. Depthwise convolutions, and every quantized convolution, run entirely in C.

Quantized plans are built once per operation from its constant operands (the kernels keep
them in the step's memo). ``None`` from a plan constructor means the native kernel cannot
promise the reference's exact result (sums that could leave int32, shifts beyond 31 bits)
and the reference kernel must run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import conv as ref
from ..ops._memo import per_operation
from ..ops._spatial import from_nhwc
from ..quant import (
    activation_range_float,
    activation_range_quantized,
    quantize_multiplier,
)
from ..registry import register_native
from . import module

_F32 = OperandType.TENSOR_FLOAT32
_Q8 = OperandType.TENSOR_QUANT8_ASYMM
_PER_CHANNEL = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
# Largest window matrix (in elements) gathered at once; larger convolutions go by row blocks.
_MAX_COLUMN_ELEMENTS = 1 << 22

_INT32_LIMIT = 2**31 - 1
# The quantized GEMM microkernels, narrowest first (tnn_q8_kind in q8.h); a plan uses the
# widest one the CPU runs, up to the one asked for.
MICROKERNELS = ("generic", "avx2", "avx512vnni")
# The largest |w - w_zero| and |x| of 8-bit values.
_PRODUCT_BOUND = 255 * 255


def window(batches: int, height: int, width: int, channels: int, out_h: int, out_w: int,
           kernel_h: int, kernel_w: int, stride_h: int, stride_w: int, dilation_h: int,
           dilation_w: int, pad_top: int, pad_left: int) -> tuple[int, ...]:
    """The window tuple the C functions take (see tnn_window in conv.h)."""
    return (batches, height, width, channels, out_h, out_w, kernel_h, kernel_w, stride_h,
            stride_w, dilation_h, dilation_w, pad_top, pad_left)


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


@dataclass(frozen=True)
class Requantization:
    """How int32 sums become uint8: per-channel or per-tensor real multipliers
    (input scale * filter scale / output scale, computed as the reference does), the output
    zero point and the activation's bounds."""

    real_multipliers: Any  # a float, or one per output channel
    output_zero: int
    lo: int
    hi: int

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
    """The filter as C reads it: uint8 with its zero point, or int8 (per-channel) with 0."""
    if filter_.dtype == np.int8:
        return np.ascontiguousarray(filter_), True, 0
    return np.ascontiguousarray(filter_, dtype=np.uint8), False, int(filter_zero)


def _sums_fit(filter_: np.ndarray, filter_zero: int, bias: np.ndarray, input_zero: int,
              taps: int) -> bool:
    """Whether every partial sum the kernels form stays within int32: the sums of ``taps``
    products of 8-bit values, plus the bias with input_zero * sum(w - w_zero) folded in."""
    w = filter_.reshape(filter_.shape[0], -1).astype(np.int64) - filter_zero
    folded = bias.astype(np.int64) - input_zero * w.sum(axis=1)
    bound = taps * _PRODUCT_BOUND + max(int(np.abs(folded).max(initial=0)),
                                        int(np.abs(bias).max(initial=0)))
    return bound <= _INT32_LIMIT


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
        return module().q8_conv_kind(self.capsule)

    def run(self, x: np.ndarray, geometry: tuple[int, ...], out: np.ndarray) -> np.ndarray:
        """NHWC uint8 ``x`` convolved into ``out`` [n, out_h, out_w, out_channels]."""
        module().q8_conv(self.capsule, x, out, geometry)
        return out


def q8_conv(filter_: np.ndarray, filter_zero: int, bias: np.ndarray, groups: int,
            input_zero: int, requant: Requantization,
            microkernel: str = MICROKERNELS[-1]) -> Q8Conv | None:
    """A plan for ``filter_`` (uint8 with ``filter_zero``, or int8 per-channel values), or
    None when the native kernel cannot reproduce the reference exactly. ``microkernel`` caps
    the GEMM microkernel (the tests run each one this CPU has)."""
    out_channels, kernel_h, kernel_w, group_in = filter_.shape
    values, signed, zero = _filter_values(filter_, filter_zero)
    bias = np.ascontiguousarray(bias, dtype=np.int32)
    fixed = requant.fixed_point(out_channels)
    taps = kernel_h * kernel_w * group_in
    if fixed is None or not _sums_fit(values, zero, bias, input_zero, taps):
        return None
    capsule = module().q8_conv_plan(values, signed, zero, bias, out_channels, kernel_h,
                                    kernel_w, group_in, groups, input_zero, *fixed,
                                    requant.output_zero, requant.lo, requant.hi,
                                    MICROKERNELS.index(microkernel))
    return Q8Conv(capsule, out_channels, kernel_h, kernel_w)


def q8_products(filter_: np.ndarray, filter_zero: int, input_zero: int) -> Q8Conv | None:
    """A plan whose only use is ``sums``: the exact sums (x - x_zero) * (w - w_zero) of a
    1x1 convolution by ``filter_`` [out, in] (uint8 with its zero point, or int8), no bias."""
    out_channels, group_in = filter_.shape
    neutral = Requantization(0.5, 0, 0, 255)  # never applied: the plan only gives sums
    return q8_conv(filter_.reshape(out_channels, 1, 1, group_in), filter_zero,
                   np.zeros(out_channels, np.int32), 1, input_zero, neutral)


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
                 input_zero: int, requant: Requantization) -> Q8Depthwise | None:
    _, kernel_h, kernel_w, channels = filter_.shape
    values, signed, zero = _filter_values(filter_, filter_zero)
    bias = np.ascontiguousarray(bias, dtype=np.int32)
    fixed = requant.fixed_point(channels)
    per_channel_filter = values.reshape(-1, channels).T  # [channels, taps]
    if fixed is None or not _sums_fit(per_channel_filter, zero, bias, 0, kernel_h * kernel_w):
        return None
    capsule = module().q8_depthwise_plan(values, signed, zero, bias, channels, multiplier,
                                         kernel_h, kernel_w, input_zero, *fixed,
                                         requant.output_zero, requant.lo, requant.hi)
    return Q8Depthwise(capsule, channels)


# ------------------------------------------------------------------------------ kernels


def _geometry_window(geo: ref._Conv) -> tuple[int, ...]:
    w = geo.window
    return window(geo.batches, geo.height, geo.width, geo.in_depth, geo.out_h, geo.out_w,
                  geo.filter_h, geo.filter_w, w.stride_h, w.stride_w, w.dilation_h,
                  w.dilation_w, w.pad_top, w.pad_left)


def _nhwc_input(ctx: KernelContext, nchw: bool) -> np.ndarray:
    x = ctx.input(0)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if nchw else x


def _requantization(ctx: KernelContext, fuse_code: int) -> Requantization:
    scale, zero = ctx.output_quant()
    lo, hi = activation_range_quantized(fuse_code, scale, zero)
    return Requantization(ref._real_multipliers(ctx, scale), zero, lo, hi)


def _filter_zero(ctx: KernelContext) -> int:
    return 0 if ctx.input_type(1) == _PER_CHANNEL else ctx.input_quant(1)[1]


def _conv_plan(ctx: KernelContext) -> Q8Conv | None:
    geo = ref._geometry(ctx)
    return q8_conv(ctx.input(1), _filter_zero(ctx), ctx.input(2), geo.groups,
                   ctx.input_quant(0)[1], _requantization(ctx, geo.params.fuse_code))


def _depthwise_plan(ctx: KernelContext) -> Q8Depthwise | None:
    geo = ref._geometry(ctx)
    return q8_depthwise(ctx.input(1), _filter_zero(ctx), ctx.input(2), geo.multiplier,
                        ctx.input_quant(0)[1], _requantization(ctx, geo.params.fuse_code))


def _fc_plan(ctx: KernelContext) -> Q8Conv | None:
    weights = ctx.input(1)
    return q8_conv(weights.reshape(weights.shape[0], 1, 1, weights.shape[1]), _filter_zero(ctx),
                   ctx.input(2), 1, ctx.input_quant(0)[1], _requantization(ctx, ctx.scalar(3)))


def _float_gemm_conv(x: np.ndarray, w: np.ndarray, geo: ref._Conv,
                     geometry: tuple[int, ...]) -> np.ndarray:
    """The sums of an NHWC float convolution as [n * out_h * out_w, out_depth]: windows
    gathered in C (by blocks of rows when large), multiplied by BLAS."""
    rows = geo.batches * geo.out_h * geo.out_w
    k = geo.filter_h * geo.filter_w * geo.in_depth
    out = np.empty((rows, geo.out_depth), np.float32)
    w = w.reshape(geo.out_depth, -1)
    wnd = geo.window
    pointwise = geo.filter_h == geo.filter_w == wnd.stride_h == wnd.stride_w == 1 and not (
        wnd.pad_top or wnd.pad_bottom or wnd.pad_left or wnd.pad_right)
    if geo.groups == 1 and pointwise:
        return np.matmul(x.reshape(rows, geo.in_depth), w.T, out=out)
    block = max(1, min(rows, _MAX_COLUMN_ELEMENTS // k))
    columns = np.empty((block, k), np.float32)
    for start in range(0, rows, block):
        count = min(block, rows - start)
        cols = im2col_f32(x, geometry, start, count, columns[:count])
        if geo.groups == 1:
            np.matmul(cols, w.T, out=out[start:start + count])
        else:
            taps, cg, per_group = geo.filter_h * geo.filter_w, geo.in_depth // geo.groups, \
                geo.out_depth // geo.groups
            grouped = cols.reshape(count, taps, geo.groups, cg).transpose(2, 0, 1, 3) \
                .reshape(geo.groups, count, taps * cg)
            filters = w.reshape(geo.groups, per_group, taps * cg).transpose(0, 2, 1)
            out[start:start + count] = np.matmul(grouped, filters).transpose(1, 0, 2) \
                .reshape(count, geo.out_depth)
    return out


@register_native(Op.CONV_2D, Op.GROUPED_CONV_2D)
def conv_2d(ctx: KernelContext) -> np.ndarray | None:
    geo = ref._geometry(ctx)
    kind = ctx.input_type(0)
    if geo.batches == 0 or kind not in (_F32, _Q8):
        return None
    nchw = geo.params.nchw
    x = _nhwc_input(ctx, nchw)
    geometry = _geometry_window(geo)
    nhwc_shape = (geo.batches, geo.out_h, geo.out_w, geo.out_depth)
    if kind == _Q8:
        plan = per_operation(ctx, "native_plan", _conv_plan, shape_only=(0,))
        if plan is None:
            return None
        out = plan.run(x, geometry, np.empty(nhwc_shape, np.uint8))
    else:
        lo, hi = activation_range_float(geo.params.fuse_code)
        if module().has_sgemm():
            out = np.empty(nhwc_shape, np.float32)
            module().conv_f32(x, ctx.input(1), ctx.input(2), out, geometry, geo.out_depth,
                              geo.groups, lo, hi)
        else:
            sums = _float_gemm_conv(x, ctx.input(1), geo, geometry)
            out = bias_activation_f32(sums, ctx.input(2), lo, hi).reshape(nhwc_shape)
    return from_nhwc(out, nchw)


@register_native(Op.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(ctx: KernelContext) -> np.ndarray | None:
    geo = ref._geometry(ctx)
    kind = ctx.input_type(0)
    if geo.batches == 0 or kind not in (_F32, _Q8):
        return None
    nchw = geo.params.nchw
    x = _nhwc_input(ctx, nchw)
    geometry = _geometry_window(geo)
    nhwc_shape = (geo.batches, geo.out_h, geo.out_w, geo.out_depth)
    if kind == _Q8:
        plan = per_operation(ctx, "native_plan", _depthwise_plan, shape_only=(0,))
        if plan is None:
            return None
        out = plan.run(x, geometry, np.empty(nhwc_shape, np.uint8))
    else:
        lo, hi = activation_range_float(geo.params.fuse_code)
        out = depthwise_f32(x, ctx.input(1)[0], ctx.input(2), geometry, geo.multiplier, lo, hi,
                            np.empty(nhwc_shape, np.float32))
    return from_nhwc(out, nchw)


@register_native(Op.FULLY_CONNECTED)
def fully_connected(ctx: KernelContext) -> np.ndarray | None:
    batch, input_size, units = ref._fc_geometry(ctx)
    kind = ctx.input_type(0)
    if batch == 0 or kind not in (_F32, _Q8):
        return None
    x = ctx.input(0).reshape(batch, input_size)
    if kind == _Q8:
        plan = per_operation(ctx, "native_plan", _fc_plan, shape_only=(0,))
        if plan is None:
            return None
        return plan.run(x, window(batch, 1, 1, input_size, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0),
                        np.empty((batch, units), np.uint8))
    lo, hi = activation_range_float(ctx.scalar(3))
    if module().has_sgemm():
        out = np.empty((batch, units), np.float32)
        module().conv_f32(x, ctx.input(1), ctx.input(2), out,
                          window(batch, 1, 1, input_size, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0), units, 1,
                          lo, hi)
        return out
    sums = np.matmul(x, ctx.input(1).T, out=np.empty((batch, units), np.float32))
    return bias_activation_f32(sums, ctx.input(2), lo, hi)


def _transpose_products(ctx: KernelContext) -> Q8Conv | None:
    """Every input pixel times the whole filter: products [kh * kw * out, in] as a 1x1
    convolution, when all the sums of the transposed convolution fit int32."""
    w = ctx.input(1)
    _, kh, kw, cin = w.shape
    bias = ctx.input(2)
    if kh * kw * cin * _PRODUCT_BOUND + int(np.abs(bias.astype(np.int64)).max(initial=0)) \
            > _INT32_LIMIT:
        return None
    return q8_products(np.ascontiguousarray(w.transpose(1, 2, 0, 3)).reshape(-1, cin),
                       _filter_zero(ctx), ctx.input_quant(0)[1])


@register_native(Op.TRANSPOSE_CONV_2D)
def transpose_conv_2d(ctx: KernelContext) -> np.ndarray | None:
    """Each input pixel times the whole filter (BLAS, or the exact quantized sums), then C
    adds up the contributions landing on each output pixel, in the reference's order."""
    wnd, params, geo = ref._transpose_geometry(ctx)
    kind = ctx.input_type(0)
    if geo.batches == 0 or kind not in (_F32, _Q8):
        return None
    x = _nhwc_input(ctx, params.nchw)
    n, h, wd, c = x.shape
    kh, kw, cout = geo.filter_h, geo.filter_w, geo.out_depth
    # The window of the scatter: the input's size, the output's, the filter, strides, pads.
    geometry = window(n, h, wd, cout, geo.out_h, geo.out_w, kh, kw, wnd.stride_h, wnd.stride_w,
                      1, 1, wnd.pad_top, wnd.pad_left)
    nhwc_shape = (n, geo.out_h, geo.out_w, cout)
    if kind == _F32:
        filters = ctx.input(1).transpose(1, 2, 0, 3).reshape(kh * kw * cout, c)
        contributions = x.reshape(-1, c) @ filters.T
        lo, hi = activation_range_float(params.fuse_code)
        out = np.empty(nhwc_shape, np.float32)
        module().col2im_f32(contributions, ctx.input(2), out, geometry, lo, hi)
        return from_nhwc(out, params.nchw)
    plan = per_operation(ctx, "native_plan", _transpose_products, shape_only=(0,))
    requant = _requantization(ctx, params.fuse_code)
    fixed = requant.fixed_point(cout)
    if plan is None or fixed is None:
        return None
    contributions = q8_sums(plan, x, window(n, h, wd, c, h, wd, 1, 1, 1, 1, 1, 1, 0, 0),
                            np.empty((n, h, wd, kh * kw * cout), np.int32))
    out = np.empty(nhwc_shape, np.uint8)
    module().col2im_q8(contributions, np.ascontiguousarray(ctx.input(2), np.int32), out,
                       geometry, *fixed, requant.output_zero, requant.lo, requant.hi)
    return from_nhwc(out, params.nchw)
