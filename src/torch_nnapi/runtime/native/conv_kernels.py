"""Native CONV_2D, GROUPED_CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV_2D:
planners (see runtime/registry.py) over the C kernels of conv.py.

The reference kernels (runtime/ops/conv.py) give the geometry and the real rescale
multipliers, so both kernel sets read an operation the same way. Quantized operations need
their filter, bias and scalars to be constants (the plan packs them once); float ones read
their filter and bias at every run. Signed 8-bit operations (Android 11) run on the same plans
with ``signed_data`` (see conv.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import conv as ref
from ..ops.spatial import from_nhwc
from ..quant import activation_range_float, activation_range_quantized
from ..registry import Runner, register_native
from . import module
from .conv import (
    INT32_LIMIT,
    PRODUCT_BOUND,
    SIGNED_OFFSET,
    Q8Conv,
    Q8Depthwise,
    Requantization,
    bias_activation_f32,
    depthwise_f32,
    im2col_f32,
    q8_conv,
    q8_depthwise,
    q8_products,
    q8_sums,
    window,
    window_fits,
)
from .planning import constant_parameters, contiguous_nhwc

_F32 = OperandType.TENSOR_FLOAT32
_Q8 = OperandType.TENSOR_QUANT8_ASYMM
_Q8_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
# The 8-bit data types the quantized plans take, and the NumPy type of each.
_QUANT8 = {_Q8: np.uint8, _Q8_SIGNED: np.int8}
_PER_CHANNEL = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
# Largest window matrix (in elements) gathered at once without NumPy's sgemm.
_MAX_COLUMN_ELEMENTS = 1 << 22


def _geometry_window(geo: ref.ConvGeometry) -> tuple[int, ...]:
    w = geo.window
    return window(*geo.image, geo.output.height, geo.output.width, geo.filter_h, geo.filter_w,
                  w.stride_h, w.stride_w, w.dilation_h, w.dilation_w, w.pad_top, w.pad_left)


def _requantization(ctx: KernelContext, fuse_code: int, weights: str = "filter") \
        -> Requantization:
    scale, zero = ctx.output_quant()
    lo, hi = activation_range_quantized(fuse_code, scale, zero, ctx.output_dtype())
    return Requantization(ref.real_multipliers(ctx, scale, weights), zero, lo, hi)


def _signed(ctx: KernelContext) -> bool:
    return ctx.input_type("input") == _Q8_SIGNED


def _filter_zero(ctx: KernelContext, weights: str = "filter") -> int:
    return 0 if ctx.input_type(weights) == _PER_CHANNEL else ctx.input_quant(weights)[1]


T = TypeVar("T")


def _once(ctx: KernelContext, what: str, build: Callable[[KernelContext], T]) -> T:
    """build(ctx), kept for the step: it depends on constants only."""
    if what not in ctx.memo:
        ctx.memo[what] = build(ctx)
    return cast("T", ctx.memo[what])


def _conv_plan(ctx: KernelContext) -> Q8Conv | None:
    geo = ref.conv_geometry(ctx)
    return q8_conv(ctx.input("filter"), _filter_zero(ctx), ctx.input("bias"), geo.groups,
                   ctx.input_quant("input")[1], _requantization(ctx, geo.params.fuse_code),
                   signed_data=_signed(ctx))


def _depthwise_plan(ctx: KernelContext) -> Q8Depthwise | None:
    geo = ref.conv_geometry(ctx)
    return q8_depthwise(ctx.input("filter"), _filter_zero(ctx), ctx.input("bias"),
                        geo.multiplier, ctx.input_quant("input")[1],
                        _requantization(ctx, geo.params.fuse_code), signed_data=_signed(ctx))


def _fc_plan(ctx: KernelContext) -> Q8Conv | None:
    weights = ctx.input("weights")
    return q8_conv(weights.reshape(weights.shape[0], 1, 1, weights.shape[1]),
                   _filter_zero(ctx, "weights"), ctx.input("bias"), 1,
                   ctx.input_quant("input")[1],
                   _requantization(ctx, ctx.scalar("fuse_code"), "weights"),
                   signed_data=_signed(ctx))


def _matmul_conv(x: np.ndarray, w: np.ndarray, geo: ref.ConvGeometry,
                 geometry: tuple[int, ...]) -> np.ndarray:
    """The sums of an NHWC float convolution as [n * out_h * out_w, out_depth] with
    np.matmul, for when NumPy's BLAS is not OpenBLAS: windows gathered in C by blocks."""
    rows = geo.image.batches * geo.output.height * geo.output.width
    k = geo.filter_h * geo.filter_w * geo.image.depth // geo.groups
    out = np.empty((rows, geo.output.depth), np.float32)
    w = w.reshape(geo.output.depth, -1)
    wnd = geo.window
    pointwise = geo.filter_h == geo.filter_w == wnd.stride_h == wnd.stride_w == 1 and not (
        wnd.pad_top or wnd.pad_bottom or wnd.pad_left or wnd.pad_right)
    if geo.groups == 1 and pointwise:
        return np.matmul(x.reshape(rows, geo.image.depth), w.T, out=out)
    full_k = geo.filter_h * geo.filter_w * geo.image.depth
    block = max(1, min(rows, _MAX_COLUMN_ELEMENTS // full_k))
    columns = np.empty((block, full_k), np.float32)
    taps, cg, per_group = geo.filter_h * geo.filter_w, geo.image.depth // geo.groups, \
        geo.output.depth // geo.groups
    for start in range(0, rows, block):
        count = min(block, rows - start)
        cols = im2col_f32(x, geometry, start, count, columns[:count])
        if geo.groups == 1:
            np.matmul(cols, w.T, out=out[start:start + count])
            continue
        grouped = cols.reshape(count, taps, geo.groups, cg).transpose(2, 0, 1, 3) \
            .reshape(geo.groups, count, k)
        filters = w.reshape(geo.groups, per_group, k).transpose(0, 2, 1)
        out[start:start + count] = np.matmul(grouped, filters).transpose(1, 0, 2) \
            .reshape(count, geo.output.depth)
    return out


def _windowed(ctx: KernelContext, key: str,
              plan_q8: Callable[[KernelContext], Q8Conv | Q8Depthwise | None]
              ) -> tuple[ref.ConvGeometry, bool, tuple[int, ...], tuple[int, ...],
                         Runner | None] | None:
    """What CONV_2D and DEPTHWISE_CONV_2D share: the geometry, the checks that a native
    kernel takes the operation (None when not), and the quantized runner from its plan; the
    float runner is left to the caller (None in the tuple's last place for float)."""
    geo = ref.conv_geometry(ctx)
    kind = ctx.input_type("input")
    if geo.image.batches == 0 or (kind != _F32 and kind not in _QUANT8) or \
            not constant_parameters(ctx, "input", "filter", "bias"):
        return None
    nchw, geometry = geo.params.nchw, _geometry_window(geo)
    if not window_fits(geometry):
        return None
    shape = tuple(geo.output)
    if kind == _F32:
        return geo, nchw, geometry, shape, None
    plan = _once(ctx, key, plan_q8) if constant_parameters(ctx) else None
    if plan is None:
        return None
    dtype = _QUANT8[kind]
    return geo, nchw, geometry, shape, lambda x, *_: from_nhwc(
        plan.run(contiguous_nhwc(x, nchw), geometry, np.empty(shape, dtype)), nchw)


@register_native(Op.CONV_2D, Op.GROUPED_CONV_2D)
def conv_2d(ctx: KernelContext) -> Runner | None:
    windowed = _windowed(ctx, "q8_conv", _conv_plan)
    if windowed is None:
        return None
    geo, nchw, geometry, shape, quantized = windowed
    if quantized is not None:
        return quantized
    lo, hi = activation_range_float(geo.params.fuse_code)
    if not module().has_sgemm():
        return lambda x, w, b, *_: from_nhwc(bias_activation_f32(
            _matmul_conv(contiguous_nhwc(x, nchw), w, geo, geometry), b, lo, hi)
            .reshape(shape), nchw)

    def run(x: np.ndarray, w: np.ndarray, b: np.ndarray, *_: object) -> np.ndarray:
        out = np.empty(shape, np.float32)
        module().conv_f32(contiguous_nhwc(x, nchw), w, b, out, geometry, geo.output.depth,
                          geo.groups, lo, hi)
        return from_nhwc(out, nchw)

    return run


@register_native(Op.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(ctx: KernelContext) -> Runner | None:
    windowed = _windowed(ctx, "q8_depthwise", _depthwise_plan)
    if windowed is None:
        return None
    geo, nchw, geometry, shape, quantized = windowed
    if quantized is not None:
        return quantized
    lo, hi = activation_range_float(geo.params.fuse_code)
    return lambda x, w, b, *_: from_nhwc(depthwise_f32(
        contiguous_nhwc(x, nchw), w[0], b, geometry, geo.multiplier, lo, hi,
        np.empty(shape, np.float32)), nchw)


@register_native(Op.FULLY_CONNECTED)
def fully_connected(ctx: KernelContext) -> Runner | None:
    batch, input_size, units = ref.fully_connected_geometry(ctx)
    kind = ctx.input_type("input")
    if batch == 0 or (kind != _F32 and kind not in _QUANT8) or \
            not constant_parameters(ctx, "input", "weights", "bias"):
        return None
    geometry = window(batch, 1, 1, input_size, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0)
    if not window_fits(geometry):
        return None
    if kind in _QUANT8:
        plan = _once(ctx, "q8_fc", _fc_plan) if constant_parameters(ctx) else None
        if plan is None:
            return None
        dtype = _QUANT8[kind]
        return lambda x, *_: plan.run(x.reshape(batch, input_size), geometry,
                                      np.empty((batch, units), dtype))
    lo, hi = activation_range_float(ctx.scalar("fuse_code"))
    if not module().has_sgemm():
        return lambda x, w, b, *_: bias_activation_f32(
            np.matmul(x.reshape(batch, input_size), w.T), b, lo, hi)

    def run(x: np.ndarray, w: np.ndarray, b: np.ndarray, *_: object) -> np.ndarray:
        out = np.empty((batch, units), np.float32)
        module().conv_f32(x.reshape(batch, input_size), w, b, out, geometry, units, 1, lo, hi)
        return out

    return run


def _transpose_products(ctx: KernelContext) -> Q8Conv | None:
    """Every input pixel times the whole filter: products [kh * kw * out, in] as a 1x1
    convolution, when all the sums of the transposed convolution fit int32."""
    w = ctx.input("filter")
    _, kh, kw, cin = w.shape
    bias = ctx.input("bias")
    if kh * kw * cin * PRODUCT_BOUND + int(np.abs(bias.astype(np.int64)).max(initial=0)) \
            > INT32_LIMIT:
        return None
    return q8_products(np.ascontiguousarray(w.transpose(1, 2, 0, 3)).reshape(-1, cin),
                       _filter_zero(ctx), ctx.input_quant("input")[1], _signed(ctx))


@register_native(Op.TRANSPOSE_CONV_2D)
def transpose_conv_2d(ctx: KernelContext) -> Runner | None:
    """Each input pixel times the whole filter (BLAS, or the exact quantized sums), then C
    adds up the contributions landing on each output pixel, in the reference's order."""
    wnd, params, geo = ref.transpose_conv_geometry(ctx)
    kind = ctx.input_type("input")
    if geo.image.batches == 0 or (kind != _F32 and kind not in _QUANT8) or \
            not constant_parameters(ctx, "input", "filter", "bias"):
        return None
    nchw = params.nchw
    n, h, wd, c = geo.image
    kh, kw, cout = geo.filter_h, geo.filter_w, geo.output.depth
    # The scatter's window: the input's size, the output's, the filter, strides, pads.
    geometry = window(n, h, wd, cout, geo.output.height, geo.output.width, kh, kw,
                      wnd.stride_h, wnd.stride_w, 1, 1, wnd.pad_top, wnd.pad_left)
    if not window_fits(geometry):
        return None
    shape = tuple(geo.output)
    if kind == _F32:
        lo, hi = activation_range_float(params.fuse_code)

        def run_float(x: np.ndarray, w: np.ndarray, b: np.ndarray, *_: object) -> np.ndarray:
            filters = w.transpose(1, 2, 0, 3).reshape(kh * kw * cout, c)
            contributions = contiguous_nhwc(x, nchw).reshape(-1, c) @ filters.T
            out = np.empty(shape, np.float32)
            module().col2im_f32(contributions, b, out, geometry, lo, hi)
            return from_nhwc(out, nchw)

        return run_float
    if not constant_parameters(ctx):
        return None
    plan = _once(ctx, "q8_transpose", _transpose_products)
    signed = _signed(ctx)
    requant = _requantization(ctx, params.fuse_code).shifted(SIGNED_OFFSET if signed else 0)
    fixed = requant.fixed_point(cout)
    if plan is None or fixed is None:
        return None
    bias = np.ascontiguousarray(ctx.input("bias"), np.int32)
    pixels = window(n, h, wd, c, h, wd, 1, 1, 1, 1, 1, 1, 0, 0)
    dtype = _QUANT8[kind]

    def run(x: np.ndarray, *_: object) -> np.ndarray:
        contributions = q8_sums(plan, contiguous_nhwc(x, nchw), pixels,
                                np.empty((n, h, wd, kh * kw * cout), np.int32))
        out = np.empty(shape, dtype)
        module().col2im_q8(contributions, bias, out, geometry, *fixed, requant.output_zero,
                           requant.lo, requant.hi, signed)
        return from_nhwc(out, nchw)

    return run
