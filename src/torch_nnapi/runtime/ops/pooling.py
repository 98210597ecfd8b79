"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D.

Windows are reduced separably (first down the rows, then across the columns), so a kh x kw
window costs kh + kw vectorized passes. Padding never counts: averages divide by the number
of real input elements in each window, as Android's kernels do. Quantized averages (uint8,
and int8 since API 30) round sum / count to the nearest integer in integers, halves away
from zero; float16 is computed in float32.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import ASYMM_8BIT, activation_range_quantized, apply_fused_activation
from ..registry import register
from .spatial import (
    Window,
    WindowParams,
    from_nhwc,
    image_dims,
    image_shape,
    pad_image,
    read_window_params,
    to_nhwc,
)


def pool_geometry(ctx: KernelContext) -> tuple[WindowParams, Window, tuple[int, ...]]:
    """The parameters, window, and (n, h, w, c, filter_h, filter_w, out_h, out_w), checked,
    for both kernel sets."""
    params = read_window_params(ctx)
    filter_w, filter_h = ctx.scalar("filter_w"), ctx.scalar("filter_h")
    if filter_w <= 0 or filter_h <= 0:
        raise BadDataError(f"{ctx.describe_input('filter_w')} and"
                           f" {ctx.describe_input('filter_h')} must be positive, got {filter_w}"
                           f" and {filter_h}")
    n, h, w, c = image_dims(ctx, params.nchw)
    window = params.window(h, w, filter_h, filter_w)
    window.check_fits(filter_h, filter_w)
    out_h, out_w = window.output_hw(h, w, filter_h, filter_w)
    if out_h <= 0 or out_w <= 0:
        raise BadDataError(f"the {filter_h}x{filter_w} filter does not fit the padded {h}x{w}"
                           " input")
    return params, window, (n, h, w, c, filter_h, filter_w, out_h, out_w)


def _prepare(ctx: KernelContext) -> list[Shape]:
    params, _, (n, _, _, c, _, _, out_h, out_w) = pool_geometry(ctx)
    return [image_shape(n, out_h, out_w, c, params.nchw)]


def _reduce_windows(padded: np.ndarray, window: Window, filter_h: int, filter_w: int,
                    out_h: int, out_w: int, combine: np.ufunc) -> np.ndarray:
    """combine (np.add or np.maximum) over every window of NHWC ``padded``."""
    sh, sw = window.stride_h, window.stride_w
    rows = padded[:, 0:(out_h - 1) * sh + 1:sh].copy()
    for i in range(1, filter_h):
        combine(rows, padded[:, i:i + (out_h - 1) * sh + 1:sh], out=rows)
    out = rows[:, :, 0:(out_w - 1) * sw + 1:sw].copy()
    for j in range(1, filter_w):
        combine(out, rows[:, :, j:j + (out_w - 1) * sw + 1:sw], out=out)
    return cast("np.ndarray", out)


def _window_counts(window: Window, height: int, width: int, filter_h: int, filter_w: int,
                   out_h: int, out_w: int) -> np.ndarray:
    """How many real (unpadded) input elements each output's window covers, [out_h, out_w, 1]."""

    def along(size: int, out_size: int, stride: int, pad: int, extent: int) -> np.ndarray:
        start = np.arange(out_size) * stride - pad
        return np.minimum(start + extent, size) - np.maximum(start, 0)

    rows = along(height, out_h, window.stride_h, window.pad_top, filter_h)
    cols = along(width, out_w, window.stride_w, window.pad_left, filter_w)
    return cast("np.ndarray", (rows[:, None] * cols[None, :])[:, :, None])


@register(Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D, prepare=_prepare)
def pool_2d(ctx: KernelContext) -> np.ndarray:
    params, window, (n, h, w, c, fh, fw, out_h, out_w) = pool_geometry(ctx)
    shape = image_shape(n, out_h, out_w, c, params.nchw)
    if n == 0:
        return np.zeros(shape, ctx.output_dtype())
    quantized = ctx.input_type("input") in ASYMM_8BIT
    x = to_nhwc(ctx.input("input") if quantized else ctx.float_input("input"), params.nchw)
    if ctx.operation == Op.MAX_POOL_2D:
        lowest = np.iinfo(x.dtype).min if quantized else -np.inf
        result = _reduce_windows(pad_image(x, window, lowest), window, fh, fw, out_h, out_w,
                                 np.maximum)
    else:
        if quantized:
            x = x.astype(np.int32)
        elif ctx.operation == Op.L2_POOL_2D:
            x = np.square(x)
        sums = _reduce_windows(pad_image(x, window), window, fh, fw, out_h, out_w, np.add)
        counts = _window_counts(window, h, w, fh, fw, out_h, out_w)
        if quantized:  # the nearest integer, halves away from zero (int8 sums can be < 0)
            half = counts // 2
            result = np.where(sums > 0, (sums + half) // counts, -((half - sums) // counts))
        else:
            result = (sums / counts.astype(np.float32)).astype(np.float32, copy=False)
            if ctx.operation == Op.L2_POOL_2D:
                np.sqrt(result, out=result)
    if quantized:
        scale, zero = ctx.output_quant()
        lo, hi = activation_range_quantized(params.fuse_code, scale, zero, ctx.output_dtype())
        result = np.clip(result, lo, hi)
    else:
        result = apply_fused_activation(result, params.fuse_code)
    return from_nhwc(result.astype(ctx.output_dtype(), copy=False), params.nchw)
