"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D and FULLY_CONNECTED.

Convolutions gather their windows with a strided view (im2col) and multiply with one BLAS
matmul per call (1x1 convolutions are a plain matmul); depthwise convolutions sum the filter
taps' shifted multiply-adds in one einsum (_depthwise.py); transposed convolutions multiply
every input pixel by the whole filter and scatter-add the patches. Float16 is computed in
float32. Quantized
operations accumulate the exact integer sums sum((x - x_zero) * (w - w_zero)) -- in a float64
GEMM, which is exact for 8-bit products at these sizes -- add the int32 bias and rescale with
the fixed-point multiplier of (input.scale * filter.scale) / output.scale, per tensor or per
output channel, exactly as Android's reference kernels do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import DTypeLike

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import (
    ASYMM_8BIT,
    activation_range_float,
    activation_range_quantized,
    requantize,
    requantize_per_channel,
)
from ..registry import register
from ._common import check_rank, fuse_code_input
from ._depthwise import depthwise_accumulate
from ._memo import per_operation
from ._parallel import for_row_blocks
from .spatial import (
    ImageSize,
    Window,
    WindowParams,
    from_nhwc,
    image_dims,
    image_shape,
    implicit_padding,
    pad_image,
    read_window_params,
    transpose_conv_output_size,
    window_view,
)

_PER_CHANNEL = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL

# The geometry depends on these inputs' shapes and on the other inputs' (constant) values.
_GEOMETRY_SHAPES = frozenset({"input", "filter", "bias"})
# Largest im2col buffer (in elements) built at once; bigger convolutions go by row blocks.
_MAX_COLUMN_ELEMENTS = 1 << 24


# ------------------------------------------------------------------------------ geometry


@dataclass(frozen=True)
class ConvGeometry:
    """Everything prepare and execute need to know about one convolution; the native
    kernels (runtime/native/conv_kernels.py) plan from it too."""

    params: WindowParams
    window: Window
    image: ImageSize  # the input's
    output: ImageSize
    filter_h: int
    filter_w: int
    groups: int = 1
    multiplier: int = 1

    @property
    def output_shape(self) -> Shape:
        return image_shape(*self.output, self.params.nchw)


def _filter_and_bias(ctx: KernelContext) -> tuple[Shape, int]:
    """The filter's shape and the bias length, after checking their ranks."""
    filter_shape = check_rank(ctx, "filter", (4,))
    bias_shape = check_rank(ctx, "bias", (1,))
    if any(d <= 0 for d in filter_shape):
        raise BadDataError(f"{ctx.describe_input('filter')} has an empty dimension:"
                           f" {list(filter_shape)}")
    return filter_shape, bias_shape[0]


def _read_conv_geometry(ctx: KernelContext) -> ConvGeometry:
    op = ctx.operation
    params = read_window_params(ctx)
    n, h, w, c = image_dims(ctx, params.nchw)
    filter_shape, bias_len = _filter_and_bias(ctx)
    groups = multiplier = 1
    if op == Op.DEPTHWISE_CONV_2D:
        multiplier = ctx.scalar("depth_multiplier")
        out_depth = filter_shape[3]
        if filter_shape[0] != 1:
            raise BadDataError(f"{ctx.describe_input('filter')} must have shape [1, height,"
                               f" width, depth_out], got {list(filter_shape)}")
        if multiplier <= 0 or c * multiplier != out_depth:
            raise BadDataError(f"{ctx.describe_input('depth_multiplier')} {multiplier} times"
                               f" input depth {c} must equal the filter's depth {out_depth}")
    else:
        out_depth = filter_shape[0]
        if op == Op.GROUPED_CONV_2D:
            groups = ctx.scalar("num_groups")
            if groups <= 0 or out_depth % groups:
                raise BadDataError(f"{ctx.describe_input('num_groups')} {groups} must be"
                                   f" positive and divide the output depth ({out_depth})")
        if filter_shape[3] * groups != c:
            raise BadDataError(f"input depth {c} must equal the filter's depth"
                               f" {filter_shape[3]}" + (f" times num_groups {groups}"
                                                        if groups > 1 else ""))
    if bias_len != out_depth:
        raise BadDataError(f"{ctx.describe_input('bias')} has {bias_len} values, the output"
                           f" depth is {out_depth}")
    fh, fw = filter_shape[1], filter_shape[2]
    window = params.window(h, w, fh, fw)
    window.check_fits(fh, fw)
    out_h, out_w = window.output_hw(h, w, fh, fw)
    if out_h <= 0 or out_w <= 0:
        raise BadDataError(f"the filter ({fh}x{fw}) does not fit the padded {h}x{w} input")
    return ConvGeometry(params, window, ImageSize(n, h, w, c),
                        ImageSize(n, out_h, out_w, out_depth), fh, fw, groups, multiplier)


def conv_geometry(ctx: KernelContext) -> ConvGeometry:
    """The checked geometry of a CONV_2D, GROUPED_CONV_2D or DEPTHWISE_CONV_2D, read once per
    operation and input shapes; both kernel sets read the operation through it."""
    return per_operation(ctx, "geometry", _read_conv_geometry, shape_only=_GEOMETRY_SHAPES)


def _prepare_conv(ctx: KernelContext) -> list[Shape]:
    return [conv_geometry(ctx).output_shape]


# ------------------------------------------------------------------------------ operands


def _operands(ctx: KernelContext, dtype: DTypeLike, weights: str = "filter") \
        -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input, filter (FULLY_CONNECTED's ``weights``) and bias in the accumulation type, zero
    points already subtracted."""
    if ctx.input_type("input") in ASYMM_8BIT:
        x_zero = ctx.input_quant("input")[1]
        w_zero = 0 if ctx.input_type(weights) == _PER_CHANNEL else ctx.input_quant(weights)[1]
        x = ctx.input("input").astype(dtype)
        x -= x_zero
        w = ctx.input(weights).astype(dtype)
        w -= w_zero
        return x, w, ctx.input("bias").astype(np.int64)
    return ctx.float_input("input"), ctx.float_input(weights), ctx.float_input("bias")


def _finish(ctx: KernelContext, acc: np.ndarray, bias: np.ndarray | None,
            fuse_code: int, weights: str = "filter") -> np.ndarray:
    """Adds the bias (unless None: already in the sums), applies the activation and converts
    to the output type. ``acc`` is NHWC or [batch, units] and may be overwritten."""
    if ctx.output_type() not in ASYMM_8BIT:
        return _float_epilogue(acc, bias, fuse_code).astype(ctx.output_dtype(), copy=False)
    total = np.rint(acc).astype(np.int64) if acc.dtype.kind == "f" else acc.astype(np.int64)
    if bias is not None:
        total += bias
    scale, zero = ctx.output_quant()
    lo, hi = activation_range_quantized(fuse_code, scale, zero, ctx.output_dtype())
    multipliers = real_multipliers(ctx, scale, weights)
    if isinstance(multipliers, np.ndarray):  # per channel
        out = requantize_per_channel(total, multipliers, zero, lo, hi, axis=-1)
    else:
        out = requantize(total, float(multipliers), zero, lo, hi)
    return out.astype(ctx.output_dtype())


def _float_epilogue(acc: np.ndarray, bias: np.ndarray | None, fuse_code: int) -> np.ndarray:
    """acc + bias, then the activation's clamp, computed in place (in a contiguous ``acc``).

    Runs in row blocks spread over threads (see _epilogue_rows).
    """
    acc = np.ascontiguousarray(acc)
    rows = _as_rows(acc)
    work = _epilogue_rows(rows, bias, fuse_code)
    if work is not None:
        for_row_blocks(rows.shape[0], rows.shape[1], work)
    return acc


def _as_rows(acc: np.ndarray) -> np.ndarray:
    """A contiguous NHWC (or [batch, units]) array as [n * h, w * c] (or itself)."""
    return acc.reshape(-1, acc.shape[-2] * acc.shape[-1]) if acc.ndim == 4 else acc


def _epilogue_rows(rows: np.ndarray, bias: np.ndarray | None,
                   fuse_code: int) -> Callable[[int, int], None] | None:
    """work(start, stop) adding the bias and clamping rows[start:stop] in place, or None.

    A row holds one image row's (width, channel) elements and the bias is repeated across
    the width, so the inner loop is long even with few channels; the two passes over a block
    run while it is in cache.
    """
    lo, hi = activation_range_float(fuse_code)
    if bias is None and lo == -np.inf and hi == np.inf:
        return None
    tiled = None if bias is None else \
        np.broadcast_to(bias, (rows.shape[1] // bias.shape[0], bias.shape[0])).reshape(-1)

    def work(start: int, stop: int) -> None:
        block = rows[start:stop]
        if tiled is not None:
            block += tiled
        if hi == np.inf:
            if lo != -np.inf:
                np.maximum(block, lo, out=block)
        else:
            np.clip(block, lo, hi, out=block)

    return work


def real_multipliers(ctx: KernelContext, output_scale: float,
                     weights: str) -> np.ndarray | float:
    """(input.scale * filter.scale) / output.scale, with Android's float/double roundings.

    The scale product is a float32 product; the division is done in double. The native
    kernels rescale with the same values.
    """
    in_scale = np.float32(ctx.input_quant("input")[0])
    filt = ctx.input_operand(weights)
    if filt.type == _PER_CHANNEL:
        if filt.channel_quant is None:
            raise BadDataError(f"{ctx.describe_input(weights)} has no per-channel scales")
        scales = np.asarray(filt.channel_quant.scales, dtype=np.float32)
        return cast("np.ndarray",
                    (in_scale * scales).astype(np.float64) / float(np.float32(output_scale)))
    return float(in_scale * np.float32(filt.scale)) / float(np.float32(output_scale))


def _accumulation_dtype(ctx: KernelContext) -> type[np.floating[Any]]:
    return np.float64 if ctx.input_type("input") in ASYMM_8BIT else np.float32


# ------------------------------------------------------------------------------ kernels


def _convolve(x: np.ndarray, w: np.ndarray, bias: np.ndarray, window: Window, out_h: int,
              out_w: int, groups: int) -> tuple[np.ndarray, np.ndarray | None]:
    """NHWC convolution of ``x`` by [out, kh, kw, in/groups] filters ``w``.

    Returns the sums and the bias still to add. Without groups the bias can ride along in
    the GEMM as an extra column of ones (None is returned): that costs a copy of the filters
    and, for 1x1 convolutions, of the input, and saves a pass over the output; it is done
    when the saving is larger (more output positions than filter values per output, and for
    1x1 convolutions fewer input channels than output channels).
    """
    n, height, width, c = x.shape
    cout, kh, kw, cg = w.shape
    k = kh * kw * cg
    pointwise = kh == kw == 1 and window == Window(0, 0, 0, 0, 1, 1, window.dilation_h,
                                                   window.dilation_w)
    fold_bias = n * out_h * out_w > k and not (pointwise and k >= cout)
    if pointwise and groups == 1 and (not fold_bias or x.size + n * height * width >
                                      _MAX_COLUMN_ELEMENTS):
        acc = x.reshape(-1, c) @ w.reshape(cout, c).T
        return acc.reshape(n, out_h, out_w, cout), bias
    padded = pad_image(x, window)
    fold_bias = fold_bias and groups == 1
    if fold_bias:
        filters = np.concatenate([w.reshape(cout, k), bias.astype(w.dtype)[:, None]], axis=1)
    else:
        filters = w.reshape(groups, cout // groups, k).transpose(0, 2, 1)
    out: np.ndarray | None = None
    rows = max(1, min(out_h, _MAX_COLUMN_ELEMENTS // max(1, n * out_w * (k * groups + 1))))
    for r0 in range(0, out_h, rows):
        r1 = min(out_h, r0 + rows)
        m = n * (r1 - r0) * out_w
        if pointwise:
            windows = padded[:, r0:r1]
        else:
            windows = window_view(padded[:, r0 * window.stride_h:], window, kh, kw, r1 - r0,
                                  out_w)
        if fold_bias:
            cols = np.empty((m, k + 1), dtype=x.dtype)
            np.copyto(cols[:, :k].reshape(windows.shape), windows)
            cols[:, k] = 1
            result = cols @ filters.T
        else:
            cols = windows.reshape(m, kh * kw, groups, cg).transpose(2, 0, 1, 3)
            result = np.matmul(cols.reshape(groups, m, k), filters).transpose(1, 0, 2)
        result = result.reshape(n, r1 - r0, out_w, cout)
        if r0 == 0 and r1 == out_h:
            out = result
            break
        if out is None:
            out = np.empty((n, out_h, out_w, cout), dtype=result.dtype)
        out[:, r0:r1] = result
    # The row-block loop runs at least once: the geometry has out_h >= 1.
    return cast("np.ndarray", out), (None if fold_bias else bias)


@register(Op.CONV_2D, Op.GROUPED_CONV_2D, prepare=_prepare_conv)
def conv_2d(ctx: KernelContext) -> np.ndarray:
    geo = conv_geometry(ctx)
    if geo.image.batches == 0:
        return np.zeros(geo.output_shape, ctx.output_dtype())
    x, w, bias = _operands(ctx, _accumulation_dtype(ctx))
    x = x.transpose(0, 2, 3, 1) if geo.params.nchw else x
    acc, unfolded_bias = _convolve(x, w, bias, geo.window, geo.output.height, geo.output.width,
                                   geo.groups)
    return from_nhwc(_finish(ctx, acc, unfolded_bias, geo.params.fuse_code), geo.params.nchw)


@register(Op.DEPTHWISE_CONV_2D, prepare=_prepare_conv)
def depthwise_conv_2d(ctx: KernelContext) -> np.ndarray:
    geo = conv_geometry(ctx)
    if geo.image.batches == 0:
        return np.zeros(geo.output_shape, ctx.output_dtype())
    quantized = ctx.input_type("input") in ASYMM_8BIT
    # 8-bit products summed over a filter window fit int32 exactly.
    x, w, bias = _operands(ctx, np.int32 if quantized else np.float32)
    x = x.transpose(0, 2, 3, 1) if geo.params.nchw else x
    if geo.multiplier > 1:
        x = np.repeat(x, geo.multiplier, axis=3)
    if quantized:
        acc = depthwise_accumulate(x, w[0], geo.window, geo.output.height, geo.output.width)
        return from_nhwc(_finish(ctx, acc, bias, geo.params.fuse_code), geo.params.nchw)
    # Float: each row block gets its bias and activation right after its sums, in cache.
    out = np.empty(geo.output, np.float32)
    rows = _as_rows(out)
    finish_rows = _epilogue_rows(rows, bias, geo.params.fuse_code)

    def finish(start: int, stop: int) -> None:
        if finish_rows is not None:
            for b in range(geo.image.batches):
                finish_rows(b * geo.output.height + start, b * geo.output.height + stop)

    depthwise_accumulate(x, w[0], geo.window, geo.output.height, geo.output.width, out=out,
                         finish=finish)
    return from_nhwc(out.astype(ctx.output_dtype(), copy=False), geo.params.nchw)


# ------------------------------------------------------------------------------ transpose


def transpose_conv_geometry(ctx: KernelContext) \
        -> tuple[Window, WindowParams, ConvGeometry]:
    """The checked window, parameters and geometry of a TRANSPOSE_CONV_2D, for both kernel
    sets."""
    # The tail padding may be negative to pick one of the output sizes a stride > 1 makes
    # ambiguous.
    params = read_window_params(ctx, negative_tail=True)
    n, h, w, c = image_dims(ctx, params.nchw)
    filter_shape, bias_len = _filter_and_bias(ctx)
    out_depth, fh, fw = filter_shape[0], filter_shape[1], filter_shape[2]
    if filter_shape[3] != c:
        raise BadDataError(f"input depth {c} must equal the filter's depth {filter_shape[3]}")
    if bias_len != out_depth:
        raise BadDataError(f"{ctx.describe_input('bias')} has {bias_len} values, the output"
                           f" depth is {out_depth}")
    if params.explicit_pads is not None:
        left, right, top, bottom = params.explicit_pads
    elif params.scheme is None:
        raise BadDataError("the window has neither explicit padding nor a padding scheme")
    else:
        requested = ctx.input("output_shape")
        if requested.shape != (4,):
            raise BadDataError(f"{ctx.describe_input('output_shape')} must have 4 values, got"
                               f" shape {list(requested.shape)}")
        req_h, req_w = (requested[2], requested[3]) if params.nchw else requested[1:3]
        top, bottom = implicit_padding(int(req_h), params.stride_h, 1, fh, params.scheme,
                                       transpose=True)
        left, right = implicit_padding(int(req_w), params.stride_w, 1, fw, params.scheme,
                                       transpose=True)
    window = Window(top, bottom, left, right, params.stride_h, params.stride_w)
    out_h = transpose_conv_output_size(h, fh, params.stride_h, top, bottom)
    out_w = transpose_conv_output_size(w, fw, params.stride_w, left, right)
    if out_h <= 0 or out_w <= 0:
        raise BadDataError(f"the padding leaves an empty {out_h}x{out_w} output")
    return window, params, ConvGeometry(params, window, ImageSize(n, h, w, c),
                                        ImageSize(n, out_h, out_w, out_depth), fh, fw)


def _prepare_transpose(ctx: KernelContext) -> list[Shape]:
    return [transpose_conv_geometry(ctx)[2].output_shape]


@register(Op.TRANSPOSE_CONV_2D, prepare=_prepare_transpose)
def transpose_conv_2d(ctx: KernelContext) -> np.ndarray:
    """Each input pixel scatters input @ filter into a filter-sized output patch."""
    window, params, geo = transpose_conv_geometry(ctx)
    if geo.image.batches == 0:
        return np.zeros(geo.output_shape, ctx.output_dtype())
    x, w, bias = _operands(ctx, _accumulation_dtype(ctx))
    x = x.transpose(0, 2, 3, 1) if params.nchw else x
    n, h, wd, c = x.shape
    kh, kw, cout = geo.filter_h, geo.filter_w, geo.output.depth
    sh, sw = window.stride_h, window.stride_w
    # contributions[n, h, w, i, j, o] = sum_c x[n, h, w, c] * w[o, i, j, c]
    filters = w.transpose(1, 2, 0, 3).reshape(kh * kw * cout, c)
    contributions = (x.reshape(-1, c) @ filters.T).reshape(n, h, wd, kh, kw, cout)
    full_h = max((h - 1) * sh + kh, window.pad_top + geo.output.height)
    full_w = max((wd - 1) * sw + kw, window.pad_left + geo.output.width)
    full = np.zeros((n, full_h, full_w, cout), dtype=contributions.dtype)
    for i in range(kh):
        for j in range(kw):
            full[:, i:i + (h - 1) * sh + 1:sh, j:j + (wd - 1) * sw + 1:sw] += \
                contributions[:, :, :, i, j]
    acc = full[:, window.pad_top:window.pad_top + geo.output.height,
               window.pad_left:window.pad_left + geo.output.width]
    acc = np.ascontiguousarray(acc)
    return from_nhwc(_finish(ctx, acc, bias, params.fuse_code), params.nchw)


# ------------------------------------------------------------------------------ fully connected


def fully_connected_geometry(ctx: KernelContext) -> tuple[int, int, int]:
    """(batch, input size, units) of a FULLY_CONNECTED, checked, for both kernel sets."""
    shape = check_rank(ctx, "input", range(2, 5))
    weights = check_rank(ctx, "weights", (2,))
    bias = check_rank(ctx, "bias", (1,))
    units, input_size = weights
    if units <= 0 or input_size <= 0:
        raise BadDataError(f"{ctx.describe_input('weights')} has an empty dimension:"
                           f" {list(weights)}")
    if bias[0] != units:
        raise BadDataError(f"{ctx.describe_input('bias')} has {bias[0]} values, the weights"
                           f" have {units} units")
    total = int(np.prod(shape))
    if total % input_size:
        raise BadDataError(f"{ctx.describe_input('input')} has {total} elements, not a multiple"
                           f" of the weights' input size {input_size}")
    return total // input_size, input_size, units


def _prepare_fc(ctx: KernelContext) -> list[Shape]:
    batch, _, units = fully_connected_geometry(ctx)
    fuse_code_input(ctx)
    return [(batch, units)]


@register(Op.FULLY_CONNECTED, prepare=_prepare_fc)
def fully_connected(ctx: KernelContext) -> np.ndarray:
    batch, input_size, units = fully_connected_geometry(ctx)
    fuse_code = fuse_code_input(ctx)
    if batch == 0:
        return np.zeros((0, units), ctx.output_dtype())
    x, w, bias = _operands(ctx, _accumulation_dtype(ctx), "weights")
    return _finish(ctx, x.reshape(batch, input_size) @ w.T, bias, fuse_code, "weights")
