"""Upsampling: nearest and bilinear (align_corners both ways, size or scale factor).

Nearest: RESIZE_NEAREST_NEIGHBOR when its source-index rule (floor(dst * in / out)) picks
the same pixels as PyTorch's, which holds for integer scale factors and for sizes; otherwise
a GATHER per axis with PyTorch's exact index map. Flexible dimensions need an integer scale
factor.

Bilinear: level 3's RESIZE_BILINEAR has neither PyTorch's half-pixel centers
(align_corners=False) nor align_corners=True (both arrived at level 4). Bilinear
interpolation is separable: along each axis, every output is a weighted sum of two input
neighbours, so it is computed exactly as two GATHERs (the neighbours, constant indices)
and a weighted ADD, in whatever layout the tensor has.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import arithmetic, in_float
from ..builder.common import require_tensor, static_int, tile
from ..builder.context import Arg, Converter
from ..builder.merged import is_one, same_dim
from ..builder.slicing import concatenate, gather_indices, strided_slice
from ..builder.spatial import spatial_input
from ..builder.symbolic import Sym, SymInt, hint
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


def _sizes_and_scales(x: TensorValue, output_size: Sequence[SymInt] | None, scales: Arg,
                      dims: int) -> tuple[list[SymInt], list[float | None]]:
    """Output sizes and PyTorch's per-axis scale factors (None where not given)."""
    spatial = x.shape[2:]
    if scales is not None and not isinstance(scales, (list, tuple)):
        scales = [scales] * dims
    sizes: list[SymInt]
    if output_size is not None:
        sizes = [s if isinstance(s, Sym) else int(s) for s in output_size]
    elif scales is not None:
        sizes = []
        for n, s in zip(spatial, scales, strict=False):
            factor = _factor(s)
            if isinstance(n, Sym):
                if factor != int(factor):
                    raise Unsupported("a non-integer scale factor on a flexible dimension")
                sizes.append(n * int(factor))
            else:
                sizes.append(int(np.floor(n * factor)))
    else:
        raise Unsupported("upsampling without size or scale factor")
    factors: list[float | None] = [None if s is None else _factor(s) for s in scales] \
        if scales is not None else [None] * dims
    return sizes, factors


def _factor(s: Arg) -> float:
    """A scale factor as the float PyTorch computes with."""
    if isinstance(s, (int, float, torch.Tensor)):
        return float(s)
    raise Unsupported(f"a scale factor of type {type(s).__name__}")


def _pytorch_scale(n: int, out: int, factor: float | None, align_corners: bool) -> np.float32:
    if align_corners:
        value = (n - 1) / (out - 1) if out > 1 else 0.0
    elif factor is not None and factor > 0:
        value = 1.0 / factor
    else:
        value = n / out
    scale: np.float32 = np.float32(value)
    return scale


def nearest_map(n: int, out: int, factor: float | None) -> np.ndarray:
    """PyTorch's nearest source index for each output index (float32 arithmetic)."""
    scale = _pytorch_scale(n, out, factor, False)
    src = np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64)
    indices: np.ndarray = np.minimum(src, n - 1)
    return indices


def _nnapi_nearest_map(n: int, out: int) -> np.ndarray:
    scale = np.float32(n) / np.float32(out)
    indices: np.ndarray = np.minimum(
        np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64), n - 1)
    return indices


def _nearest2d(cx: Converter, x: TensorValue, sizes: Sequence[SymInt],
               factors: Sequence[float | None]) -> TensorValue:
    oh, ow = sizes
    n, c, h, w = x.shape
    if isinstance(h, Sym) or isinstance(w, Sym) or isinstance(oh, Sym) or isinstance(ow, Sym):
        # NNAPI picks floor(dst * in / out), as PyTorch does for a given size or an integer
        # scale factor (_sizes_and_scales refuses fractional ones, for which PyTorch uses
        # 1 / factor instead)
        g, nchw = spatial_input(cx, x)
        return cx.emit(Op.RESIZE_NEAREST_NEIGHBOR,
                       dict(input=g, width=cx.i32(ow), height=cx.i32(oh),
                            nchw=cx.boolean(nchw)),
                       (n, c, oh, ow), g.dtype, g.layout, g.scale, g.zero_point)
    maps = [nearest_map(h, oh, factors[0]), nearest_map(w, ow, factors[1])]
    if np.array_equal(maps[0], _nnapi_nearest_map(h, oh)) and \
            np.array_equal(maps[1], _nnapi_nearest_map(w, ow)):
        g, nchw = spatial_input(cx, x)
        return cx.emit(Op.RESIZE_NEAREST_NEIGHBOR,
                       dict(input=g, width=cx.i32(ow), height=cx.i32(oh),
                            nchw=cx.boolean(nchw)),
                       (n, c, oh, ow), g.dtype, g.layout, g.scale, g.zero_point)
    out = x
    for d, m, size, new in ((2, maps[0], h, oh), (3, maps[1], w, ow)):
        if size != new or not np.array_equal(m, np.arange(size)):
            out = gather_indices(cx, out, d, m.tolist())
    return out


@lowering("aten::upsample_nearest2d", "aten::upsample_nearest1d",
          nnapi=("RESIZE_NEAREST_NEIGHBOR", "GATHER"),
          notes="GATHER where NNAPI's pixel choice would differ")
def upsample_nearest(cx: Converter, x: Arg, output_size: Sequence[SymInt] | None = None,
                     *scales: Arg) -> TensorValue:
    x = require_tensor(x)
    one_d = cx.current_node.kind == "aten::upsample_nearest1d"
    dims = 1 if one_d else 2
    factors = _scale_args(scales, dims)
    sizes, factors = _sizes_and_scales(x, output_size, factors, dims)
    if one_d:
        x4 = cx.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2]))
        y = _nearest2d(cx, x4, [1] + sizes, [1.0] + factors)
        return cx.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    if x.rank != 4:
        raise Unsupported("nearest upsampling of a non-4-D tensor")
    return _nearest2d(cx, x, sizes, factors)


def _scale_args(scales: Sequence[Arg], dims: int) -> Arg:
    """Scale factors from either overload: (scale_factors list) or (scales_h, scales_w)."""
    if len(scales) == 1:
        return scales[0]
    if len(scales) == dims and all(s is None for s in scales):
        return None
    if len(scales) == dims:
        return [None if s is None else _factor(s) for s in scales]
    return None


def _interpolate_axis(cx: Converter, x: TensorValue, dim: int, n: int, out: int,
                      factor: float | None, corners: bool) -> TensorValue:
    """Linear interpolation along one axis: two GATHERs of the neighbours, weighted."""
    scale = _pytorch_scale(n, out, factor, corners)
    dst = np.arange(out, dtype=np.float32)
    if corners:
        src = dst * scale
    else:
        src = np.maximum((dst + np.float32(0.5)) * scale - np.float32(0.5), np.float32(0.0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    w1 = (src - i0).astype(np.float32)
    if np.all(w1 == 0) and np.array_equal(i0, np.arange(n)) and out == n:
        return x
    shape = [1] * x.rank
    shape[dim] = out
    low = gather_indices(cx, x, dim, i0.tolist())
    if np.all(w1 == 0):
        return low
    high = gather_indices(cx, x, dim, i1.tolist())
    w0 = torch.from_numpy((np.float32(1.0) - w1).reshape(shape))
    return arithmetic(cx, Op.ADD, arithmetic(cx, Op.MUL, low, w0),
                      arithmetic(cx, Op.MUL, high, torch.from_numpy(w1.reshape(shape))))


@lowering("aten::upsample_bilinear2d",
          nnapi=("GATHER", "MUL", "ADD", "TILE", "RESIZE_BILINEAR", "STRIDED_SLICE",
                 "CONCATENATION"),
          notes="static sizes: exact in any layout, per axis the two neighbours gathered and"
          " weighted; from 1x1: TILE; flexible sizes: RESIZE_BILINEAR's size form, by integer"
          " factors at twice the size then every other pixel (level 2), else with"
          " half_pixel_centers or align_corners (feature level 4)")
def upsample_bilinear(cx: Converter, x: Arg, output_size: Sequence[SymInt] | None,
                      align_corners: bool, *scales: Arg) -> TensorValue:
    x = require_tensor(x)
    if x.rank != 4:
        raise Unsupported("bilinear upsampling of a non-4-D tensor")
    factors = _scale_args(scales, 2)
    sizes, factors = _sizes_and_scales(x, output_size, factors, 2)
    n, c, h, w = x.shape
    corners = bool(align_corners)
    if is_one(h) and is_one(w):  # every output pixel is the input pixel
        return tile(cx, x, [1, 1, sizes[0], sizes[1]], (n, c, sizes[0], sizes[1]))
    if any(isinstance(d, Sym) for d in (h, w, *sizes)):
        return _resize_bilinear(cx, x, sizes, corners)
    h = static_int(h, "bilinear upsampling height")
    w = static_int(w, "bilinear upsampling width")
    oh, ow = (static_int(s, "output size") for s in sizes)

    def compute(f: TensorValue) -> TensorValue:
        out = _interpolate_axis(cx, f, 3, w, ow, factors[1], corners)
        return _interpolate_axis(cx, out, 2, h, oh, factors[0], corners)

    return in_float(cx, x, compute)


def _resize_bilinear(cx: Converter, x: TensorValue, sizes: Sequence[SymInt], corners: bool
                     ) -> TensorValue:
    """RESIZE_BILINEAR to sizes known at load time. PyTorch samples input pixel
    (dst + 0.5) * in / out - 0.5 (clamped at 0), or dst * (in - 1) / (out - 1) with
    align_corners: NNAPI's half_pixel_centers and align_corners (feature level 4; level 3
    has neither). With a scale factor PyTorch uses 1 / factor rather than in / out: the
    same for the integer factors _sizes_and_scales lets through."""
    n, c = x.shape[:2]
    oh, ow = sizes
    fh, fw = _integer_factor(x.shape[2], oh), _integer_factor(x.shape[3], ow)
    if not corners and fh is not None and fw is not None:
        factors = [fh, fw]
        return in_float(cx, x, lambda f: _upsample_by_integers(cx, f, factors))

    def compute(f: TensorValue) -> TensorValue:
        g, nchw = spatial_input(cx, f)
        return cx.emit(Op.RESIZE_BILINEAR,
                       dict(input=g, width=cx.i32(ow), height=cx.i32(oh),
                            nchw=cx.boolean(nchw), align_corners=cx.boolean(corners),
                            half_pixel_centers=cx.boolean(not corners)),
                       (n, c, oh, ow), g.dtype, g.layout)

    return in_float(cx, x, compute)


def _integer_factor(size: SymInt, out: SymInt) -> int | None:
    """k when ``out`` is ``size * k`` for every input shape (k a positive integer)."""
    if hint(size) <= 0 or hint(out) % hint(size):
        return None
    k = hint(out) // hint(size)
    return k if same_dim(size * k, out) else None


def _upsample_by_integers(cx: Converter, x: TensorValue, factors: list[int]) -> TensorValue:
    """Bilinear upsampling by integer factors with PyTorch's half-pixel centres, exactly, at
    feature level 1-2: output pixel d samples input (d + 0.5) / k - 0.5 = e / (2k) with
    e = 2d + 1 - k, which NNAPI's RESIZE_BILINEAR (sampling e * in / out) gives at pixel e
    of an image twice the output size; the pixels below e = 0 (PyTorch clamps them to the
    first input pixel) repeat pixel 0. So: one RESIZE_BILINEAR to twice the output size,
    then per axis every other pixel from 2 * n0 + 1 - k and n0 copies of pixel 0."""
    n, c, h, w = x.shape
    g, nchw = spatial_input(cx, x)
    twice = (2 * h * factors[0], 2 * w * factors[1])
    big = cx.emit(Op.RESIZE_BILINEAR,
                  dict(input=g, width=cx.i32(twice[1]), height=cx.i32(twice[0]),
                       nchw=cx.boolean(nchw)),
                  (n, c) + twice, g.dtype, g.layout)
    out = big
    for dim, k, size in ((2, factors[0], h), (3, factors[1], w)):
        if k == 1:
            out = strided_slice(cx, out, {dim: (0, 2 * size, 2)})
            continue
        copies = (k - 1 + 1) // 2  # outputs whose source lies before pixel 0
        start = 2 * copies + 1 - k
        kept = strided_slice(cx, out, {dim: (start, start + 2 * (size * k - copies), 2)})
        first = strided_slice(cx, out, {dim: (0, 1, 1)})
        out = concatenate(cx, [first] * copies + [kept], dim)
    return out
