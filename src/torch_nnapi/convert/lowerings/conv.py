"""Convolutions: conv1d/conv2d with any groups, dilation and padding; conv_transpose2d.

groups == 1 -> CONV_2D; depthwise (groups == in_channels) -> DEPTHWISE_CONV_2D; other
groups -> GROUPED_CONV_2D (dilation 1) or one CONV_2D per group between SPLIT and
CONCATENATION (GROUPED_CONV_2D has no dilation). Feature maps stay in the layout they come
in (NCHW through NNAPI's layout flag, or NHWC), so channels-last propagates. conv1d runs as
a conv2d over a height of 1. Padding modes other than zeros arrive as a separate pad op.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.common import Ints, require_tensor, static_int, static_ints
from ..builder.context import Arg, Converter, OperandRef, ScalarInput
from ..builder.spatial import ConvQuant, bias_operand, filter_operand, output_type, spatial_input
from ..builder.symbolic import SymInt
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


@dataclass(frozen=True)
class Window:
    """2-D window parameters in NNAPI's terms (explicit padding)."""

    kernel: tuple[int, int]  # (h, w)
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int


def window_output(size: SymInt, kernel: int, stride: int, dilation: int, pad_before: int,
                  pad_after: int) -> SymInt:
    return (size + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1


def conv_padding(padding: str | Ints, kernel: tuple[int, int], dilation: tuple[int, int]
                 ) -> tuple[int, int, int, int]:
    """PyTorch padding (ints or 'same'/'valid') -> (top, bottom, left, right)."""
    if isinstance(padding, str):
        if padding == "valid":
            return 0, 0, 0, 0
        if padding == "same":
            th = dilation[0] * (kernel[0] - 1)
            tw = dilation[1] * (kernel[1] - 1)
            return th // 2, th - th // 2, tw // 2, tw - tw // 2
        raise Unsupported(f"padding={padding!r}")
    ph, pw = static_ints(padding, "padding", 2)
    return ph, ph, pw, pw


def conv2d_tensor(cx: Converter, x: TensorValue, weight: np.ndarray, bias: np.ndarray | None,
                  stride: Ints, padding: str | Ints, dilation: Ints, groups: int,
                  fuse: FuseCode = FuseCode.NONE, quant: ConvQuant | None = None) -> TensorValue:
    """A 2-D convolution of a model tensor with constant weights [O, I/g, kh, kw]: float,
    or quantized (8-bit weights, float bias quantized here) when ``quant`` is given."""
    if quant is None and not x.is_float:
        raise Unsupported(f"float convolution of a {x.dtype} tensor")
    out_channels, in_per_group, kh, kw = weight.shape
    sh, sw = static_ints(stride, "stride", 2)
    dh, dw = static_ints(dilation, "dilation", 2)
    top, bottom, left, right = conv_padding(padding, (kh, kw), (dh, dw))
    win = Window((kh, kw), (sh, sw), (dh, dw), top, bottom, left, right)
    channels = x.shape[1]
    if not isinstance(channels, int) or channels != in_per_group * groups:
        raise Unsupported(f"input has {channels} channels, the weights expect"
                          f" {in_per_group * groups}")
    if bias is None:
        bias = np.zeros(out_channels, np.float32)
    x, nchw = spatial_input(cx, x)
    dtype, scale, zero_point = output_type(x, quant)
    n, _, h, w = x.shape
    out_shape = (n, out_channels,
                 window_output(h, kh, sh, dh, top, bottom),
                 window_output(w, kw, sw, dw, left, right))
    layout = x.layout
    if groups == 1:
        filt = filter_operand(cx, weight.transpose(0, 2, 3, 1), x, quant)
        b = bias_operand(cx, bias, x, quant)
        return cx.emit(Op.CONV_2D, dict(input=x, filter=filt, bias=b, **_window(cx, win),
                                        fuse_code=cx.i32(int(fuse)), nchw=cx.boolean(nchw),
                                        **_dilations(cx, win)),
                       out_shape, dtype, layout, scale, zero_point)
    if in_per_group == 1 and out_channels % groups == 0:
        multiplier = out_channels // groups
        # [O, 1, kh, kw] -> [1, kh, kw, O]; output channel o reads input channel o // mult
        filt = filter_operand(cx, weight.transpose(1, 2, 3, 0), x, quant, channel_dim=3)
        b = bias_operand(cx, bias, x, quant)
        return cx.emit(Op.DEPTHWISE_CONV_2D,
                       dict(input=x, filter=filt, bias=b, **_window(cx, win),
                            depth_multiplier=cx.i32(multiplier), fuse_code=cx.i32(int(fuse)),
                            nchw=cx.boolean(nchw), **_dilations(cx, win)),
                       out_shape, dtype, layout, scale, zero_point)
    if (dh, dw) == (1, 1):
        filt = filter_operand(cx, weight.transpose(0, 2, 3, 1), x, quant)
        b = bias_operand(cx, bias, x, quant)
        return cx.emit(Op.GROUPED_CONV_2D,
                       dict(input=x, filter=filt, bias=b, **_window(cx, win),
                            num_groups=cx.i32(groups), fuse_code=cx.i32(int(fuse)),
                            nchw=cx.boolean(nchw)),
                       out_shape, dtype, layout, scale, zero_point)
    return _split_groups(cx, x, weight, bias, win, groups, fuse, out_shape, quant)


def _split_groups(cx: Converter, x: TensorValue, weight: np.ndarray, bias: np.ndarray,
                  win: Window, groups: int, fuse: FuseCode,
                  out_shape: tuple[SymInt, SymInt, SymInt, SymInt], quant: ConvQuant | None
                  ) -> TensorValue:
    """Grouped convolution with dilation: one CONV_2D per group between SPLIT and CONCAT."""
    channel_axis = lay.axis(x.layout, 1)
    per_in = x.shape[1] // groups
    per_out = weight.shape[0] // groups
    parts = [cx.new_tensor((x.shape[0], per_in, x.shape[2], x.shape[3]), x.dtype, x.layout)
             for _ in range(groups)]
    cx.operation(Op.SPLIT, dict(input=x, axis=cx.i32(channel_axis), num_splits=cx.i32(groups)),
                 dict(outputs=parts))
    nchw = lay.is_identity(x.layout)
    dtype, scale, zero_point = output_type(x, quant)
    outs = []
    for g, part in enumerate(parts):
        w = weight[g * per_out:(g + 1) * per_out]
        group_quant = quant.channels(g * per_out, (g + 1) * per_out) if quant else None
        filt = filter_operand(cx, w.transpose(0, 2, 3, 1), x, group_quant)
        b = bias_operand(cx, bias[g * per_out:(g + 1) * per_out], x, group_quant)
        shape = (out_shape[0], per_out, out_shape[2], out_shape[3])
        inputs: dict[str, OperandRef] = dict(
            input=part, filter=filt, bias=b, **_window(cx, win), fuse_code=cx.i32(int(fuse)),
            nchw=cx.boolean(nchw), **_dilations(cx, win))
        outs.append(cx.emit(Op.CONV_2D, inputs, shape, dtype, x.layout, scale, zero_point))
    return cx.emit(Op.CONCATENATION, dict(inputs=outs, axis=cx.i32(channel_axis)), out_shape,
                   dtype, x.layout, scale, zero_point)


def _window(cx: Converter, win: Window) -> dict[str, ScalarInput]:
    """The explicit padding and the strides of a window, as the convolutions name them."""
    return dict(pad_left=cx.i32(win.pad_left), pad_right=cx.i32(win.pad_right),
                pad_top=cx.i32(win.pad_top), pad_bottom=cx.i32(win.pad_bottom),
                stride_w=cx.i32(win.stride[1]), stride_h=cx.i32(win.stride[0]))


def _dilations(cx: Converter, win: Window) -> dict[str, ScalarInput]:
    return dict(dilation_w=cx.i32(win.dilation[1]), dilation_h=cx.i32(win.dilation[0]))


def constant_weight(w: Arg, what: str = "weight") -> np.ndarray:
    if not isinstance(w, torch.Tensor):
        raise Unsupported(f"{what} computed by the model (NNAPI needs constant weights here)")
    return w.detach().float().contiguous().numpy()


def constant_bias(b: Arg) -> np.ndarray | None:
    if b is None:
        return None
    return constant_weight(b, "bias")


def convolution(cx: Converter, x: Arg, weight: Arg, bias: Arg, stride: Ints,
                padding: str | Ints, dilation: Ints, transposed: bool, output_padding: Ints,
                groups: Arg) -> TensorValue:
    x = require_tensor(x)
    w = constant_weight(weight)
    b = constant_bias(bias)
    count = static_int(groups, "groups")
    if x.is_quantized:
        raise Unsupported("aten convolution of a quantized tensor (use quantized::conv2d)")
    if transposed:
        return conv_transpose(cx, x, w, b, stride, padding, output_padding, count, dilation)
    if w.ndim == 3:
        return _conv1d(cx, x, w, b, stride, padding, dilation, count)
    if w.ndim != 4:
        raise Unsupported(f"{w.ndim - 2}-D convolution")
    return conv2d_tensor(cx, x, w, b, stride, padding, dilation, count)


def _conv1d(cx: Converter, x: TensorValue, w: np.ndarray, b: np.ndarray | None, stride: Ints,
            padding: str | Ints, dilation: Ints, groups: int) -> TensorValue:
    if x.rank != 3:
        raise Unsupported(f"conv1d of a {x.rank}-D input")
    s = static_ints(stride, "stride", 1)[0]
    d = static_ints(dilation, "dilation", 1)[0]
    pad2: str | list[int]
    if isinstance(padding, str):
        pad2 = padding
    else:
        pad2 = [0, static_ints(padding, "padding", 1)[0]]
    x4 = cx.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2]))
    y = conv2d_tensor(cx, x4, w[:, :, None, :], b, [1, s], pad2, [1, d], groups)
    return cx.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))


def conv_transpose(cx: Converter, x: TensorValue, w: np.ndarray, b: np.ndarray | None,
                   stride: Ints, padding: str | Ints, output_padding: Ints, groups: int,
                   dilation: Ints, quant: ConvQuant | None = None,
                   fuse: FuseCode = FuseCode.NONE) -> TensorValue:
    """TRANSPOSE_CONV_2D: PyTorch's padding crops the full output; output_padding adds
    rows and columns at the bottom and right, i.e. crops less there."""
    if w.ndim != 4:
        raise Unsupported(f"{w.ndim - 2}-D transposed convolution")
    if groups != 1:
        raise Unsupported("grouped transposed convolution")
    if static_ints(dilation, "dilation", 2) != [1, 1]:
        raise Unsupported("dilated transposed convolution")
    if isinstance(padding, str):
        raise Unsupported(f"padding={padding!r} in a transposed convolution")
    sh, sw = static_ints(stride, "stride", 2)
    ph, pw = static_ints(padding, "padding", 2)
    oph, opw = static_ints(output_padding, "output_padding", 2)
    if oph > ph or opw > pw:
        raise Unsupported("output_padding larger than padding")
    in_channels, out_channels, kh, kw = w.shape
    if b is None:
        b = np.zeros(out_channels, np.float32)
    x, nchw = spatial_input(cx, x)
    n, _, h, width = x.shape
    out_shape = (n, out_channels, (h - 1) * sh + kh - 2 * ph + oph,
                 (width - 1) * sw + kw - 2 * pw + opw)
    filt = filter_operand(cx, w.transpose(1, 2, 3, 0), x, quant)  # [O, kh, kw, I]
    bias = bias_operand(cx, b, x, quant)
    dtype, scale, zero_point = output_type(x, quant)
    return cx.emit(Op.TRANSPOSE_CONV_2D,
                   dict(input=x, filter=filt, bias=bias, pad_left=cx.i32(pw),
                        pad_right=cx.i32(pw - opw), pad_top=cx.i32(ph),
                        pad_bottom=cx.i32(ph - oph), stride_w=cx.i32(sw), stride_h=cx.i32(sh),
                        fuse_code=cx.i32(int(fuse)), nchw=cx.boolean(nchw)),
                   out_shape, dtype, x.layout, scale, zero_point)


@lowering("aten::_convolution", "aten::convolution",
          nnapi=("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D",
                 "SPLIT", "CONCATENATION"),
          notes="constant weights; 1-D and 2-D")
def aten_convolution(cx: Converter, x: Arg, weight: Arg, bias: Arg, stride: Ints, padding: Ints,
                     dilation: Ints, transposed: bool, output_padding: Ints, groups: int,
                     *flags: Arg) -> TensorValue:
    return convolution(cx, x, weight, bias, stride, padding, dilation, bool(transposed),
                       output_padding, groups)


@lowering("aten::_convolution_mode", nnapi=("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D"),
          notes="string padding ('same', 'valid')")
def aten_convolution_mode(cx: Converter, x: Arg, weight: Arg, bias: Arg, stride: Ints,
                          padding: str, dilation: Ints, groups: int) -> TensorValue:
    return convolution(cx, x, weight, bias, stride, padding, dilation, False, 0, groups)


@lowering("aten::conv2d", "aten::conv1d",
          nnapi=("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "SPLIT", "CONCATENATION"),
          notes="any groups and dilation; padding ints, 'same' or 'valid'")
def aten_conv(cx: Converter, x: Arg, weight: Arg, bias: Arg = None, stride: Ints = 1,
              padding: str | Ints = 0, dilation: Ints = 1, groups: int = 1) -> TensorValue:
    return convolution(cx, x, weight, bias, stride, padding, dilation, False, 0, groups)


@lowering("aten::conv_transpose2d", nnapi=("TRANSPOSE_CONV_2D",),
          notes="groups 1, dilation 1, output_padding <= padding")
def aten_conv_transpose2d(cx: Converter, x: Arg, weight: Arg, bias: Arg = None,
                          stride: Ints = 1, padding: Ints = 0, output_padding: Ints = 0,
                          groups: int = 1, dilation: Ints = 1) -> TensorValue:
    return convolution(cx, x, weight, bias, stride, padding, dilation, True, output_padding,
                       groups)
