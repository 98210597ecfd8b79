"""Window geometry shared by the convolution and pooling kernels.

One place computes what NNAPI's spatial operations have in common: reading the padding,
stride, dilation, fused-activation and layout scalars of either form, turning an implicit
PaddingCode into explicit amounts, output sizes, NHWC/NCHW conversion, and strided window
views. Kernels compute in NHWC; NCHW inputs are transposed in and out, as Android does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...nnapi.codes import OperandType, PaddingCode
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..limits import check_tensor_sizes
from ..quant import check_fuse_code
from ._common import check_rank


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
    """The scalars of a convolution or pooling operation, read from either form.

    ``extras`` holds the scalars between the strides and the fused activation (DEPTHWISE's
    multiplier, GROUPED's group count, the pools' filter width and height).
    """

    explicit_pads: tuple[int, int, int, int] | None  # left, right, top, bottom
    scheme: int | None
    stride_w: int
    stride_h: int
    extras: tuple[int, ...]
    fuse_code: int
    nchw: bool
    dilation_w: int = 1
    dilation_h: int = 1

    def window(self, height: int, width: int, filter_h: int, filter_w: int) -> Window:
        if self.explicit_pads is not None:
            left, right, top, bottom = self.explicit_pads
        else:
            top, bottom = implicit_padding(height, self.stride_h, self.dilation_h, filter_h,
                                           self.scheme)
            left, right = implicit_padding(width, self.stride_w, self.dilation_w, filter_w,
                                           self.scheme)
        return Window(top, bottom, left, right, self.stride_h, self.stride_w, self.dilation_h,
                      self.dilation_w)


def read_window_params(ctx: KernelContext, first: int, num_extras: int = 0, *,
                       negative_tail: bool = False) -> WindowParams:
    """Reads the scalars that start at input ``first`` (the first padding scalar).

    The implicit form is recognized as Android does: its layout flag (a BOOL) sits where the
    explicit form has an INT32, or the operation ends right after its fused activation.
    ``negative_tail`` allows negative right and bottom padding (TRANSPOSE_CONV_2D).
    """
    implicit_end = first + 4 + num_extras  # position of the implicit form's layout flag
    implicit = ctx.num_inputs == implicit_end or (
        ctx.num_inputs > implicit_end and ctx.input_type(implicit_end) == OperandType.BOOL)

    def required(i: int) -> int:
        return int(ctx.input(i).item())

    if implicit:
        pads, scheme = None, check_padding_code(required(first))
        pos = first + 1
    else:
        pads = tuple(required(first + i) for i in range(4))
        scheme = None
        pos = first + 4
        names = ("left", "right", "top", "bottom")
        for name, pad in zip(names, pads):
            if pad < 0 and not (negative_tail and name in ("right", "bottom")):
                raise BadDataError(f"padding {name} must not be negative, got {pad}")
    stride_w, stride_h = required(pos), required(pos + 1)
    extras = tuple(required(pos + 2 + i) for i in range(num_extras))
    pos += 2 + num_extras
    fuse_code = int(check_fuse_code(required(pos)))
    nchw = ctx.num_inputs > pos + 1 and bool(ctx.scalar(pos + 1, False))
    dilation_w, dilation_h = 1, 1
    if ctx.num_inputs > pos + 2:
        dilation_w, dilation_h = int(ctx.scalar(pos + 2, 1)), int(ctx.scalar(pos + 3, 1))
    if stride_w <= 0 or stride_h <= 0:
        raise BadDataError(f"strides must be positive, got width {stride_w} and height"
                           f" {stride_h}")
    if dilation_w <= 0 or dilation_h <= 0:
        raise BadDataError(f"dilation factors must be positive, got width {dilation_w} and"
                           f" height {dilation_h}")
    return WindowParams(pads, scheme, stride_w, stride_h, extras, fuse_code, nchw, dilation_w,
                        dilation_h)


def check_padding_code(code: int) -> int:
    if code not in (PaddingCode.SAME, PaddingCode.VALID):
        raise BadDataError(f"implicit padding must be a PaddingCode (1 SAME, 2 VALID), got"
                           f" {code}")
    return int(code)


# ------------------------------------------------------------------------------ layout


def image_dims(ctx: KernelContext, i: int, nchw: bool, what: str = "input") -> \
        tuple[int, int, int, int]:
    """(batches, height, width, channels) of a rank-4 input; only batches may be zero."""
    shape = check_rank(ctx, i, (4,), what)
    n, h, w, c = (shape[0], shape[2], shape[3], shape[1]) if nchw else shape
    if h <= 0 or w <= 0 or c <= 0:
        raise BadDataError(f"input {i} ({what}) has an empty height, width or depth:"
                           f" {list(shape)}")
    return n, h, w, c


def image_shape(n: int, h: int, w: int, c: int, nchw: bool) -> Shape:
    return (n, c, h, w) if nchw else (n, h, w, c)


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(y: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2)) if nchw else y


# ------------------------------------------------------------------------------ windows


def pad_image(x: np.ndarray, window: Window, value=0) -> np.ndarray:
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
