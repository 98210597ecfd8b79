"""Window geometry shared by the convolution and pooling kernels.

One place computes what NNAPI's spatial operations have in common: reading the padding,
stride, dilation, fused-activation and layout scalars of the explicit or implicit form (by the
names their signatures declare), turning an implicit PaddingCode into explicit amounts, output
sizes, NHWC/NCHW conversion, and strided window views. Kernels compute in NHWC; NCHW inputs
are transposed in and out, as Android does. Public: the native kernels (runtime/native) lay
out their results the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, cast

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...nnapi.codes import PaddingCode
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..limits import check_tensor_sizes
from ._common import check_rank, fuse_code_input


def implicit_padding(in_size: int, stride: int, dilation: int, filter_size: int, scheme: int,
                     *, transpose: bool = False) -> tuple[int, int]:
    """(head, tail) padding of a PaddingCode along one axis, as NeuralNetworks.h defines it.

    For SAME the output covers ceil(in / stride) windows; transposed convolutions (where
    ``in_size`` is the output size) let the tail go negative so it fits the last stride.
    """
    if scheme == PaddingCode.VALID:
        return 0, 0
    effective = (filter_size - 1) * dilation + 1
    out_size = (in_size + stride - 1) // stride
    total = (out_size - 1) * stride + effective - in_size
    head = max(total, 0) // 2
    return head, (total - head if transpose or total > 0 else 0)


def conv_output_size(in_size: int, filter_size: int, stride: int, dilation: int, head: int,
                     tail: int) -> int:
    effective = (filter_size - 1) * dilation + 1
    return (in_size - effective + stride + head + tail) // stride


def transpose_conv_output_size(in_size: int, filter_size: int, stride: int, head: int,
                               tail: int) -> int:
    return in_size * stride + filter_size - stride - head - tail


@dataclass(frozen=True)
class Window:
    """Padding (top, bottom, left, right), strides and dilations (h, w) of one operation."""

    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    stride_h: int
    stride_w: int
    dilation_h: int = 1
    dilation_w: int = 1

    def output_hw(self, height: int, width: int, filter_h: int, filter_w: int) -> \
            tuple[int, int]:
        return (conv_output_size(height, filter_h, self.stride_h, self.dilation_h,
                                 self.pad_top, self.pad_bottom),
                conv_output_size(width, filter_w, self.stride_w, self.dilation_w,
                                 self.pad_left, self.pad_right))

    def check_fits(self, filter_h: int, filter_w: int) -> None:
        """Android requires each padding to be smaller than the (dilated) filter extent."""
        eff_h = (filter_h - 1) * self.dilation_h + 1
        eff_w = (filter_w - 1) * self.dilation_w + 1
        for name, pad, extent in (("top", self.pad_top, eff_h), ("bottom", self.pad_bottom, eff_h),
                                  ("left", self.pad_left, eff_w),
                                  ("right", self.pad_right, eff_w)):
            if pad >= extent:
                raise BadDataError(f"padding {name} ({pad}) must be smaller than the filter"
                                   f" extent ({extent})")


@dataclass(frozen=True)
class WindowParams:
    """The window scalars of a convolution or pooling operation, read from either form."""

    explicit_pads: tuple[int, int, int, int] | None  # left, right, top, bottom
    scheme: int | None
    stride_w: int
    stride_h: int
    fuse_code: int
    nchw: bool
    dilation_w: int = 1
    dilation_h: int = 1

    def window(self, height: int, width: int, filter_h: int, filter_w: int) -> Window:
        if self.explicit_pads is not None:
            left, right, top, bottom = self.explicit_pads
        elif self.scheme is None:
            raise BadDataError("the window has neither explicit padding nor a padding scheme")
        else:
            top, bottom = implicit_padding(height, self.stride_h, self.dilation_h, filter_h,
                                           self.scheme)
            left, right = implicit_padding(width, self.stride_w, self.dilation_w, filter_w,
                                           self.scheme)
        return Window(top, bottom, left, right, self.stride_h, self.stride_w, self.dilation_h,
                      self.dilation_w)


_PADS = ("pad_left", "pad_right", "pad_top", "pad_bottom")


def read_window_params(ctx: KernelContext, *, negative_tail: bool = False) -> WindowParams:
    """Reads the padding, strides, dilations, fused activation and layout of the matched form
    (dilations and layout default to 1 and NHWC where the form leaves them out or has none).
    ``negative_tail`` allows negative right and bottom padding (TRANSPOSE_CONV_2D).
    """
    if ctx.form == "implicit":
        pads, scheme = None, check_padding_code(ctx)
    else:
        scheme = None
        pads = tuple(ctx.scalar(name) for name in _PADS)
        for name, pad in zip(_PADS, pads, strict=True):
            if pad < 0 and not (negative_tail and name in ("pad_right", "pad_bottom")):
                raise BadDataError(f"{ctx.describe_input(name)} must not be negative, got {pad}")
    stride_w, stride_h = _positive(ctx, "stride_w"), _positive(ctx, "stride_h")
    dilation_w = dilation_h = 1
    if ctx.declares("dilation_w"):
        dilation_w, dilation_h = _positive(ctx, "dilation_w"), _positive(ctx, "dilation_h")
    return WindowParams(pads, scheme, stride_w, stride_h, fuse_code_input(ctx),
                        bool(ctx.scalar("nchw")), dilation_w, dilation_h)


def _positive(ctx: KernelContext, name: str) -> int:
    value = ctx.scalar(name)
    if value <= 0:
        raise BadDataError(f"{ctx.describe_input(name)} must be positive, got {value}")
    return cast("int", value)


def check_padding_code(ctx: KernelContext) -> int:
    """The implicit form's padding scheme."""
    code = ctx.scalar("padding")
    if code not in (PaddingCode.SAME, PaddingCode.VALID):
        raise BadDataError(f"{ctx.describe_input('padding')} must be a PaddingCode (1 SAME,"
                           f" 2 VALID), got {code}")
    return int(code)


# ------------------------------------------------------------------------------ layout


class ImageSize(NamedTuple):
    """An image's dimensions in NHWC order, whatever its layout."""

    batches: int
    height: int
    width: int
    depth: int


def image_dims(ctx: KernelContext, nchw: bool, name: str = "input") -> ImageSize:
    """(batches, height, width, channels) of a rank-4 input; only batches may be zero."""
    shape = check_rank(ctx, name, (4,))
    n, h, w, c = (shape[0], shape[2], shape[3], shape[1]) if nchw else shape
    if h <= 0 or w <= 0 or c <= 0:
        raise BadDataError(f"{ctx.describe_input(name)} has an empty height, width or depth:"
                           f" {list(shape)}")
    return ImageSize(n, h, w, c)


def image_shape(n: int, h: int, w: int, c: int, nchw: bool) -> Shape:
    return (n, c, h, w) if nchw else (n, h, w, c)


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(y: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2)) if nchw else y


# ------------------------------------------------------------------------------ windows


def pad_image(x: np.ndarray, window: Window, value: float = 0) -> np.ndarray:
    """NHWC ``x`` with the window's padding added (a no-op without padding)."""
    w = window
    if not (w.pad_top or w.pad_bottom or w.pad_left or w.pad_right):
        return x
    n, h, wd, c = x.shape
    shape = (n, h + w.pad_top + w.pad_bottom, wd + w.pad_left + w.pad_right, c)
    check_tensor_sizes([shape], [x.dtype], "padded input")  # huge strides pad hugely
    out = np.empty(shape, dtype=x.dtype)
    out[:, :w.pad_top] = value
    out[:, h + w.pad_top:] = value
    out[:, w.pad_top:h + w.pad_top, :w.pad_left] = value
    out[:, w.pad_top:h + w.pad_top, wd + w.pad_left:] = value
    out[:, w.pad_top:h + w.pad_top, w.pad_left:wd + w.pad_left] = x
    return out


def window_view(padded: np.ndarray, window: Window, filter_h: int, filter_w: int,
                out_h: int, out_w: int) -> np.ndarray:
    """A read-only [n, out_h, out_w, filter_h, filter_w, c] view of every window (no copy)."""
    s = padded.strides
    shape = (padded.shape[0], out_h, out_w, filter_h, filter_w, padded.shape[3])
    strides = (s[0], s[1] * window.stride_h, s[2] * window.stride_w, s[1] * window.dilation_h,
               s[2] * window.dilation_w, s[3])
    return as_strided(padded, shape, strides, writeable=False)
