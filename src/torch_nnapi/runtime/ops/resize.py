"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR.

The output size is given either as two INT32 sizes or as two float scales (new size =
floor(size * scale), computed in float32). Source coordinates are computed per axis in float32
exactly as TFLite's reference kernels do: x * in / out, or (x + 0.5) * in / out - 0.5 with
half_pixel_centers, or x * (in - 1) / (out - 1) with align_corners. Bilinear interpolation is
computed in float32 and truncated for 8-bit outputs, as Android does; nearest neighbor copies
the selected elements.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import round_half_away
from ..registry import register
from .spatial import from_nhwc, image_dims, image_shape, to_nhwc

_F32 = np.float32


def _options(ctx: KernelContext) -> tuple[bool, bool, bool]:
    """(nchw, align_corners, half_pixel_centers)."""
    nchw = bool(ctx.scalar("nchw"))
    align_corners = bool(ctx.scalar("align_corners"))
    half_pixel = bool(ctx.scalar("half_pixel_centers"))
    if align_corners and half_pixel:
        raise BadDataError(f"{ctx.describe_input('align_corners')} and"
                           f" {ctx.describe_input('half_pixel_centers')} cannot both be true")
    return nchw, align_corners, half_pixel


def _output_hw(ctx: KernelContext, height: int, width: int) -> tuple[int, int]:
    """Output sizes given as such (INT32 width and height) or as scales of the input's."""
    if ctx.input_type("width") == OperandType.INT32:
        out_w, out_h = int(ctx.scalar("width")), int(ctx.scalar("height"))
    else:
        out_w = _scaled_size(width, ctx.scalar("width"), "width")
        out_h = _scaled_size(height, ctx.scalar("height"), "height")
    if out_h <= 0 or out_w <= 0:
        raise BadDataError(f"the output height and width must be positive, got {out_h} and"
                           f" {out_w}")
    return out_h, out_w


def _scaled_size(size: int, scale: float, axis: str) -> int:
    """floor(size * scale) in float32; the scale must be finite and positive and the size it
    gives an NNAPI dimension."""
    scale = _F32(scale)
    if not (np.isfinite(scale) and scale > 0):
        raise BadDataError(f"the {axis} scale {float(scale):g} must be a positive finite number")
    with np.errstate(over="ignore"):
        scaled = np.floor(_F32(size) * scale)
    if not scaled < 2**32:
        raise BadDataError(f"the {axis} scale {float(scale):g} makes the {axis} {size} too large"
                           " for an NNAPI dimension")
    return int(scaled)


def _prepare(ctx: KernelContext) -> list[Shape]:
    nchw, _, _ = _options(ctx)
    n, h, w, c = image_dims(ctx, nchw)
    out_h, out_w = _output_hw(ctx, h, w)
    return [image_shape(n, out_h, out_w, c, nchw)]


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return cast("np.float32", _F32(in_size - 1) / _F32(out_size - 1))
    return cast("np.float32", _F32(in_size) / _F32(out_size))


def _nearest_indices(in_size: int, out_size: int, align_corners: bool,
                     half_pixel: bool) -> np.ndarray:
    offset = _F32(0.5 if half_pixel else 0.0)
    source = (np.arange(out_size, dtype=_F32) + offset) * _scale(in_size, out_size,
                                                                  align_corners)
    index = round_half_away(source) if align_corners else np.floor(source)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel else index


def _bilinear_axis(in_size: int, out_size: int, align_corners: bool,
                   half_pixel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output position: lower and upper source indices and the upper one's weight."""
    source = np.arange(out_size, dtype=_F32)
    scale = _scale(in_size, out_size, align_corners)
    source = (source + _F32(0.5)) * scale - _F32(0.5) if half_pixel else source * scale
    lower = np.maximum(np.floor(source).astype(np.int64), 0)
    upper = np.minimum(np.ceil(source).astype(np.int64), in_size - 1)
    return lower, upper, source - lower.astype(_F32)


@register(Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR, prepare=_prepare)
def resize(ctx: KernelContext) -> np.ndarray:
    nchw, align_corners, half_pixel = _options(ctx)
    n, h, w, c = image_dims(ctx, nchw)
    out_h, out_w = _output_hw(ctx, h, w)
    if n == 0:
        return np.zeros(image_shape(n, out_h, out_w, c, nchw), ctx.output_dtype())
    x = to_nhwc(ctx.input("input"), nchw)
    if ctx.operation == Op.RESIZE_NEAREST_NEIGHBOR:
        rows = _nearest_indices(h, out_h, align_corners, half_pixel)
        cols = _nearest_indices(w, out_w, align_corners, half_pixel)
        return from_nhwc(np.ascontiguousarray(x[:, rows][:, :, cols]), nchw)
    y0, y1, dy = _bilinear_axis(h, out_h, align_corners, half_pixel)
    x0, x1, dx = _bilinear_axis(w, out_w, align_corners, half_pixel)
    wy1, wx1 = dy[None, :, None, None], dx[None, None, :, None]
    wy0, wx0 = _F32(1) - wy1, _F32(1) - wx1
    values = x if x.dtype == _F32 else x.astype(_F32)
    top, bottom = values[:, y0], values[:, y1]
    # The same products and sum order as the reference kernel, all in float32.
    result = top[:, :, x0] * wy0 * wx0
    result += bottom[:, :, x0] * wy1 * wx0
    result += top[:, :, x1] * wy0 * wx1
    result += bottom[:, :, x1] * wy1 * wx1
    if ctx.output_type() == OperandType.TENSOR_QUANT8_ASYMM:
        result = np.clip(np.trunc(result), 0, 255)
    return from_nhwc(result.astype(ctx.output_dtype()), nchw)
