"""Pooling: max and average pools (1-D and 2-D, padding, ceil_mode), adaptive pools.

NNAPI pools take explicit padding; PyTorch's ceil_mode becomes extra padding at the bottom
and right. NNAPI averages exclude padding (PyTorch's count_include_pad=False); PyTorch's
default count_include_pad=True with padding becomes an explicit zero PAD followed by an
unpadded pool. Adaptive pools to 1x1 (any input size, flexible ones included) are a pool
over the whole image for channels-last inputs (feature level 1), else a MEAN (level 2) or
REDUCE_MAX over H and W; other output sizes dividing the input use a fixed window.
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.arithmetic import arithmetic, in_float
from ..builder.common import Ints, require_tensor, static_int, static_ints
from ..builder.context import Arg, Converter
from ..builder.spatial import global_pool, spatial_input
from ..builder.symbolic import Sym, SymInt, ceil_div, sym_max, sym_min
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


def pooled_size(size: SymInt, kernel: int, stride: int, pad: int, ceil_mode: bool) \
        -> tuple[SymInt, SymInt]:
    """PyTorch's pooled size and the padding NNAPI needs after the input to produce it."""
    if not ceil_mode:
        return (size + 2 * pad - kernel) // stride + 1, pad
    out = ceil_div(size + 2 * pad - kernel, stride) + 1
    # the last window must start inside the input or its left padding
    limit = ceil_div(size + pad, stride)
    out = sym_min(out, limit) if isinstance(out, Sym) or isinstance(limit, Sym) \
        else min(out, limit)
    after = (out - 1) * stride + kernel - size - pad  # ceil_mode's extra rows or columns
    if isinstance(after, Sym):
        return out, sym_max(after, 0)
    after = max(after, 0)
    if (size + pad + after - kernel) // stride + 1 != out:
        raise Unsupported(f"ceil_mode pooling of size {size} with kernel {kernel} and stride"
                          f" {stride}")
    return out, after


def pool2d(cx: Converter, op: Op, x: TensorValue, kernel: Ints, stride: Ints, padding: Ints,
           ceil_mode: bool, fuse: FuseCode = FuseCode.NONE) -> TensorValue:
    kh, kw = static_ints(kernel, "kernel_size", 2)
    sh, sw = static_ints(stride, "stride", 2) if stride else [kh, kw]
    ph, pw = static_ints(padding, "padding", 2)
    x, nchw = spatial_input(cx, x)
    n, c, h, w = x.shape
    oh, bottom = pooled_size(h, kh, sh, ph, ceil_mode)
    ow, right = pooled_size(w, kw, sw, pw, ceil_mode)
    return cx.emit(op, dict(input=x, pad_left=cx.i32(pw), pad_right=cx.i32(right),
                            pad_top=cx.i32(ph), pad_bottom=cx.i32(bottom), stride_w=cx.i32(sw),
                            stride_h=cx.i32(sh), filter_w=cx.i32(kw), filter_h=cx.i32(kh),
                            fuse_code=cx.i32(int(fuse)), nchw=cx.boolean(nchw)),
                   (n, c, oh, ow), x.dtype, x.layout, x.scale, x.zero_point)


def _as_4d(cx: Converter, x: TensorValue) -> tuple[TensorValue, bool]:
    """1-D pools run as 2-D pools over a height of 1; unbatched inputs get a batch."""
    if x.rank == 3:
        return cx.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2])), True
    return x, False


@lowering("aten::max_pool2d", "aten::max_pool1d", nnapi=("MAX_POOL_2D",),
          notes="dilation 1; padding and ceil_mode")
def max_pool(cx: Converter, x: Arg, kernel: Ints, stride: Ints = (), padding: Ints = 0,
             dilation: Ints = 1, ceil_mode: bool = False) -> TensorValue:
    x = require_tensor(x)
    one_d = cx.current_node.kind == "aten::max_pool1d"
    dims = 1 if one_d else 2
    if any(d != 1 for d in static_ints(dilation, "dilation", dims)):
        raise Unsupported("dilated max pooling")
    if one_d:
        x4, _ = _as_4d(cx, x)
        k = [1] + static_ints(kernel, "kernel_size", 1)
        s = [1] + (static_ints(stride, "stride", 1) if stride else k[1:])
        p = [0] + static_ints(padding, "padding", 1)
        y = pool2d(cx, Op.MAX_POOL_2D, x4, k, s, p, bool(ceil_mode))
        return cx.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    if x.rank == 3:
        raise Unsupported("unbatched 2-D pooling")
    return pool2d(cx, Op.MAX_POOL_2D, x, kernel, stride, padding, bool(ceil_mode))


@lowering("aten::avg_pool2d", "aten::avg_pool1d", nnapi=("AVERAGE_POOL_2D", "PAD", "MUL"),
          notes="count_include_pad with padding adds a PAD; divisor_override without"
          " padding adds a MUL")
def avg_pool(cx: Converter, x: Arg, kernel: Ints, stride: Ints = (), padding: Ints = 0,
             ceil_mode: bool = False, count_include_pad: bool = True,
             divisor_override: Arg = None) -> TensorValue:
    x = require_tensor(x)
    one_d = cx.current_node.kind == "aten::avg_pool1d"
    if one_d:
        x4, _ = _as_4d(cx, x)
        k = [1] + static_ints(kernel, "kernel_size", 1)
        s = [1] + (static_ints(stride, "stride", 1) if stride else k[1:])
        p = [0] + static_ints(padding, "padding", 1)
        y = _avg_pool2d(cx, x4, k, s, p, bool(ceil_mode), bool(count_include_pad), None)
        return cx.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    if x.rank == 3:
        raise Unsupported("unbatched 2-D pooling")
    return _avg_pool2d(cx, x, kernel, stride, padding, bool(ceil_mode),
                       bool(count_include_pad), divisor_override)


def _avg_pool2d(cx: Converter, x: TensorValue, kernel: Ints, stride: Ints, padding: Ints,
                ceil_mode: bool, count_include_pad: bool, divisor_override: Arg
                ) -> TensorValue:
    kh, kw = static_ints(kernel, "kernel_size", 2)
    ph, pw = static_ints(padding, "padding", 2)
    if divisor_override is not None:
        if ph or pw or ceil_mode:
            raise Unsupported("avg_pool2d divisor_override with padding or ceil_mode")
        y = pool2d(cx, Op.AVERAGE_POOL_2D, x, kernel, stride, padding, False)
        factor = kh * kw / static_int(divisor_override, "divisor_override")
        return arithmetic(cx, Op.MUL, y, factor) if not y.is_quantized else _unsupported_q()
    if count_include_pad and (ph or pw):
        x = _zero_pad_hw(cx, x, ph, pw)
        stride = static_ints(stride, "stride", 2) if stride else [kh, kw]
        return pool2d(cx, Op.AVERAGE_POOL_2D, x, [kh, kw], stride, [0, 0], ceil_mode)
    return pool2d(cx, Op.AVERAGE_POOL_2D, x, kernel, stride, padding, ceil_mode)


def _unsupported_q() -> NoReturn:
    raise Unsupported("quantized avg_pool2d with divisor_override")


def _zero_pad_hw(cx: Converter, x: TensorValue, ph: int, pw: int) -> TensorValue:
    """PAD H and W with zeros (the quantized zero for quantized tensors)."""
    x, _ = spatial_input(cx, x)
    pads = {2: (ph, ph), 3: (pw, pw)}
    rows = [pads.get(d, (0, 0)) for d in x.layout]
    shape = tuple(n + sum(pads.get(d, (0, 0))) for d, n in enumerate(x.shape))
    paddings = cx.constant(np.array(rows, np.int32), "int32")
    return cx.emit(Op.PAD, dict(input=x, paddings=paddings), shape, x.dtype, x.layout, x.scale,
                   x.zero_point)


def _adaptive_sizes(x: TensorValue, output_size: Arg) -> tuple[SymInt, SymInt]:
    """(height, width) of the output; None keeps the input's."""
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * 2
    if len(sizes) == 1:
        sizes = sizes * 2
    if len(sizes) != 2:
        raise Unsupported(f"adaptive 2-D pooling to {len(sizes)} sizes {sizes}")
    oh, ow = (x.shape[2 + i] if s is None else static_int(s, "output_size")
              for i, s in enumerate(sizes))
    return oh, ow


def adaptive_matrix(n: int, out: int) -> np.ndarray:
    """A[o, i] = 1 / |window o| for the inputs of PyTorch's adaptive window o."""
    matrix = np.zeros((out, n), np.float64)
    for o in range(out):
        start = (o * n) // out
        end = -((-(o + 1) * n) // out)
        matrix[o, start:end] = 1.0 / (end - start)
    return matrix.astype(np.float32)


def contract_axis(cx: Converter, x: TensorValue, torch_dim: int, matrix: np.ndarray,
                   layout: lay.Layout) -> TensorValue:
    """Applies ``matrix`` along ``torch_dim``, which must be last in ``layout``."""
    x = cx.to_layout(x, layout)
    out_size = matrix.shape[0]
    batch: SymInt = 1
    for d in x.nnapi_shape[:-1]:
        batch = batch * d
    w = cx.constant(matrix, x.dtype)
    b = cx.constant(np.zeros(out_size, np.float32), x.dtype)
    flat = cx.emit(Op.FULLY_CONNECTED, dict(input=x, weights=w, bias=b, fuse_code=cx.i32(0)),
                   (batch, out_size), x.dtype)
    shape = tuple(out_size if d == torch_dim else n for d, n in enumerate(x.shape))
    out = cx.new_tensor(shape, x.dtype, layout)
    cx.operation(Op.RESHAPE, dict(input=flat, shape=cx.shape_vector(out.nnapi_shape)),
                 dict(output=out))
    return out


def _adaptive_avg_matrices(cx: Converter, x: TensorValue, oh: int, ow: int) -> TensorValue:
    """Uneven adaptive average pooling: two products with averaging matrices."""

    def compute(f: TensorValue) -> TensorValue:
        out = f
        if ow != f.shape[3]:
            out = contract_axis(cx, out, 3, adaptive_matrix(int(f.shape[3]), ow), (0, 1, 2, 3))
        if oh != f.shape[2]:
            out = contract_axis(cx, out, 2, adaptive_matrix(int(f.shape[2]), oh), (0, 1, 3, 2))
        return out

    return in_float(cx, x, compute)


def _adaptive_windows_at_load(cx: Converter, x: TensorValue, oh: SymInt, ow: SymInt,
                              is_max: bool) -> TensorValue | tuple[TensorValue, None]:
    """Adaptive pooling of flexible sizes: PyTorch's windows are all alike (size and stride
    in // out) when the input size is a multiple of the output size, which the model then
    requires (checked when it is loaded); the window is computed at load time."""
    n, c, h, w = x.shape
    for size, target, name in ((h, oh, "height"), (w, ow, "width")):
        cx.guard(size % target, 0, f"adaptive pooling to {oh}x{ow} needs the {name} of its"
                 f" input to be a multiple of {target}")
    kh, kw = h // oh, w // ow
    g, nchw = spatial_input(cx, x)
    zero = cx.i32(0)
    op = Op.MAX_POOL_2D if is_max else Op.AVERAGE_POOL_2D
    out = cx.emit(op, dict(input=g, pad_left=zero, pad_right=zero, pad_top=zero,
                           pad_bottom=zero, stride_w=cx.i32(kw), stride_h=cx.i32(kh),
                           filter_w=cx.i32(kw), filter_h=cx.i32(kh),
                           fuse_code=cx.i32(int(FuseCode.NONE)), nchw=cx.boolean(nchw)),
                  (n, c, oh, ow), g.dtype, g.layout, g.scale, g.zero_point)
    if is_max and len(cx.current_node.outputs) > 1:
        return out, None
    return out


@lowering("aten::adaptive_avg_pool2d", "aten::adaptive_max_pool2d",
          nnapi=("MEAN", "REDUCE_MAX", "AVERAGE_POOL_2D", "MAX_POOL_2D", "FULLY_CONNECTED"),
          notes="1x1 (any input, flexible too); sizes dividing the input as fixed windows"
          " (flexible inputs: computed at load time, which checks the division); other"
          " average sizes as averaging-matrix products")
def adaptive_pool(cx: Converter, x: Arg, output_size: Arg
                  ) -> TensorValue | tuple[TensorValue, None]:
    x = require_tensor(x)
    is_max = cx.current_node.kind == "aten::adaptive_max_pool2d"
    if x.rank != 4:
        raise Unsupported("adaptive pooling of a non-4-D input")
    oh, ow = _adaptive_sizes(x, output_size)
    n, c, h, w = x.shape
    whole = global_pool(cx, Op.MAX_POOL_2D if is_max else Op.AVERAGE_POOL_2D, x) \
        if (oh, ow) == (1, 1) else None
    if whole is not None:
        out = whole
    elif (oh, ow) == (1, 1):
        axes = [lay.axis(x.layout, 2), lay.axis(x.layout, 3)]
        if is_max:
            out = cx.emit(Op.REDUCE_MAX, dict(input=x, axes=cx.int_vector(axes),
                                              keep_dims=cx.boolean(True)),
                          (n, c, 1, 1), x.dtype, x.layout, x.scale, x.zero_point)
        else:
            out = cx.emit(Op.MEAN, dict(input=x, axes=cx.int_vector(axes), keep_dims=cx.i32(1)),
                          (n, c, 1, 1), x.dtype, x.layout, x.scale, x.zero_point)
    else:
        # (an output size is flexible only where it is the input's)
        if isinstance(h, Sym) or isinstance(w, Sym) or isinstance(oh, Sym) or isinstance(ow, Sym):
            return _adaptive_windows_at_load(cx, x, oh, ow, is_max)
        if h % oh or w % ow:
            if is_max:
                raise Unsupported(f"adaptive max pooling from {h}x{w} to {oh}x{ow} (the input"
                                  " size must be a multiple of the output size)")
            return _adaptive_avg_matrices(cx, x, oh, ow)
        kh, kw = h // oh, w // ow
        op = Op.MAX_POOL_2D if is_max else Op.AVERAGE_POOL_2D
        out = pool2d(cx, op, x, [kh, kw], [kh, kw], [0, 0], False)
    if is_max and len(cx.current_node.outputs) > 1:
        return out, None  # the indices: unsupported if anything reads them
    return out
