"""Slicing and gathering: slice, select, narrow, chunk, split, unbind, index_select,
embedding and single-tensor indexing.

Slices are STRIDED_SLICE with begin/end masks for untouched dimensions, so slicing keeps
working on flexible dimensions (bounds that depend on them are patched at load time).
select uses the shrink-axis mask. Equal chunks are one SPLIT.
"""

from __future__ import annotations

import numpy as np
import torch

from ...nnapi.codes import OperationType as Op
from .. import layout as lay
from ..context import Converter
from ..errors import Unsupported
from ..symbolic import Sym, SymInt, ceil_div, sym_max, sym_min
from ..values import TensorValue
from . import lowering
from ._common import dim_index, require_tensor, static_int

_BIG = 2 ** 62


def _bound(v, size: SymInt, default: SymInt) -> SymInt:
    """A PyTorch slice bound made non-negative and clamped to [0, size]."""
    if v is None:
        return default
    if isinstance(v, Sym):
        return v
    v = int(v)
    if v >= _BIG or (not isinstance(size, Sym) and v >= size):
        return size
    if v == 0:
        return 0
    if v < 0:
        v = size + v
        return sym_max(v, 0) if isinstance(v, Sym) else max(v, 0)
    return sym_min(v, size) if isinstance(size, Sym) else min(v, size)


def strided_slice(cx: Converter, x: TensorValue, slices: dict[int, tuple], shrink=()) \
        -> TensorValue:
    """STRIDED_SLICE of ``x``: ``slices`` maps a PyTorch dim to (start, end, step) with
    clamped non-negative bounds; ``shrink`` dims (each a one-element slice) are removed."""
    begin, end, strides = [], [], []
    begin_mask = end_mask = shrink_mask = 0
    shape = list(x.shape)
    for axis, dim in enumerate(x.layout):
        if dim in slices:
            start, stop, step = slices[dim]
            begin.append(start)
            end.append(stop)
            strides.append(step)
            if _same(stop, shape[dim]):
                end_mask |= 1 << axis
                end[-1] = 0
            shape[dim] = sym_max(ceil_div(stop - start, step), 0) if isinstance(
                stop - start, Sym) else max(-(-(stop - start) // step), 0)
        else:
            begin.append(0)
            end.append(0)
            strides.append(1)
            begin_mask |= 1 << axis
            end_mask |= 1 << axis
        if dim in shrink:
            shrink_mask |= 1 << axis
    out_shape = tuple(n for d, n in enumerate(shape) if d not in shrink)
    out_layout = lay.without_dims(x.layout, list(shrink)) if shrink else x.layout
    if not shrink and all(not isinstance(a, Sym) and not isinstance(b, Sym) and a == b
                          for a, b in zip(out_shape, x.shape)):
        return x
    return cx.emit(Op.STRIDED_SLICE,
                   dict(input=x, begin=cx.int_vector(begin), end=cx.int_vector(end),
                        strides=cx.int_vector(strides), begin_mask=cx.i32(begin_mask),
                        end_mask=cx.i32(end_mask), shrink_axis_mask=cx.i32(shrink_mask)),
                   out_shape, x.dtype, out_layout, x.scale, x.zero_point)


def _same(a: SymInt, b: SymInt) -> bool:
    if isinstance(a, Sym) or isinstance(b, Sym):
        return isinstance(a, Sym) and a == b
    return int(a) == int(b)


@lowering("aten::slice", nnapi=("STRIDED_SLICE",))
def slice_(cx: Converter, x, dim=0, start=None, end=None, step=1):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    step = static_int(step, "slice step")
    if step <= 0:
        raise Unsupported("slice with a non-positive step")
    size = x.shape[d]
    s = _bound(start, size, 0)
    e = _bound(end, size, size)
    return strided_slice(cx, x, {d: (s, e, step)})


@lowering("aten::narrow", nnapi=("STRIDED_SLICE",))
def narrow(cx: Converter, x, dim, start, length):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    s = _bound(start, x.shape[d], 0)
    return strided_slice(cx, x, {d: (s, s + length, 1)})


@lowering("aten::select", nnapi=("STRIDED_SLICE",), notes="shrink-axis mask removes the dim")
def select(cx: Converter, x, dim, index):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    i = index if isinstance(index, Sym) else int(index)
    if not isinstance(i, Sym) and i < 0:
        i = x.shape[d] + i
    return strided_slice(cx, x, {d: (i, i + 1, 1)}, shrink=(d,))


def split_sizes(cx: Converter, x: TensorValue, dim: int, sizes: list[SymInt]) \
        -> list[TensorValue]:
    """Pieces of ``x`` along ``dim``: one SPLIT if they are equal, else slices."""
    if len(sizes) == 1:
        return [x]
    if all(not isinstance(s, Sym) for s in sizes) and len(set(sizes)) == 1:
        axis = lay.axis(x.layout, dim)
        parts = [cx.new_tensor(tuple(s if i == dim else n for i, n in enumerate(x.shape)),
                               x.dtype, x.layout, x.scale, x.zero_point) for s in sizes]
        cx.operation(Op.SPLIT, dict(input=x, axis=cx.i32(axis), num_splits=cx.i32(len(sizes))),
                     dict(outputs=parts))
        return parts
    parts, start = [], 0
    for s in sizes:
        parts.append(strided_slice(cx, x, {dim: (start, start + s, 1)}))
        start = start + s
    return parts


@lowering("aten::chunk", nnapi=("SPLIT", "STRIDED_SLICE"))
def chunk(cx: Converter, x, chunks, dim=0):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    n = static_int(chunks, "chunks")
    size = x.shape[d]
    if isinstance(size, Sym):
        cx.guard(size % n, 0, f"chunk({n}) needs the flexible dimension divisible by {n}")
        return split_sizes(cx, x, d, [size // n] * n)
    each = -(-size // n)
    sizes = [min(each, size - i) for i in range(0, size, each)]
    return split_sizes(cx, x, d, sizes)


@lowering("aten::split", "aten::split_with_sizes", nnapi=("SPLIT", "STRIDED_SLICE"))
def split(cx: Converter, x, split_size, dim=0):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    size = static_int(x.shape[d], "split dimension")
    if isinstance(split_size, (list, tuple)):
        sizes = [static_int(s, "split size") for s in split_size]
        if sum(sizes) != size:
            raise Unsupported(f"split sizes {sizes} do not add up to {size}")
    else:
        each = static_int(split_size, "split size")
        sizes = [min(each, size - i) for i in range(0, size, each)]
    return split_sizes(cx, x, d, sizes)


@lowering("aten::unbind", nnapi=("STRIDED_SLICE",))
def unbind(cx: Converter, x, dim=0):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    n = static_int(x.shape[d], "unbind dimension")
    return [strided_slice(cx, x, {d: (i, i + 1, 1)}, shrink=(d,)) for i in range(n)]


def gather_indices(cx: Converter, x: TensorValue, dim: int, indices) -> TensorValue:
    """GATHER along PyTorch dimension ``dim`` with constant indices (a list)."""
    idx = cx.constant(np.asarray(indices, np.int32).reshape(-1), "int32")
    shape = tuple(len(indices) if i == dim else n for i, n in enumerate(x.shape))
    return cx.emit(Op.GATHER, dict(input=x, axis=cx.i32(lay.axis(x.layout, dim)), indices=idx),
                   shape, x.dtype, x.layout, x.scale, x.zero_point)


def _index_operand(cx: Converter, index) -> TensorValue:
    if isinstance(index, torch.Tensor):
        return cx.torch_constant(index.to(torch.int64))
    index = require_tensor(index, "index")
    if index.dtype not in ("int64", "int32"):
        raise Unsupported(f"indices of dtype {index.dtype}")
    if index.rank > 1:
        index = cx.contiguous(index)
    return index


@lowering("aten::index_select", nnapi=("GATHER",))
def index_select(cx: Converter, x, dim, index):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    idx = _index_operand(cx, index)
    if idx.rank != 1:
        raise Unsupported("index_select with a multi-dimensional index")
    shape = tuple(idx.shape[0] if i == d else n for i, n in enumerate(x.shape))
    return cx.emit(Op.GATHER, dict(input=x, axis=cx.i32(lay.axis(x.layout, d)), indices=idx),
                   shape, x.dtype, x.layout, x.scale, x.zero_point)


@lowering("aten::embedding", nnapi=("GATHER",), notes="constant weight, int indices")
def embedding(cx: Converter, weight, indices, *rest):
    if not isinstance(weight, torch.Tensor):
        raise Unsupported("embedding weights computed by the model")
    w = cx.torch_constant(weight.detach().float())
    idx = _index_operand(cx, indices)
    shape = tuple(idx.shape) + (w.shape[1],)
    return cx.emit(Op.GATHER, dict(input=w, axis=cx.i32(0), indices=idx), shape, w.dtype)


@lowering("aten::index", nnapi=("GATHER",), notes="one index tensor (x[idx] or x[:, idx])")
def index(cx: Converter, x, indices):
    x = require_tensor(x)
    present = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(present) != 1:
        raise Unsupported("advanced indexing with more than one index tensor")
    d, idx = present[0]
    if isinstance(idx, torch.Tensor) and idx.dtype == torch.bool:
        raise Unsupported("boolean mask indexing (data-dependent shape)")
    operand = _index_operand(cx, idx)
    if operand.rank != 1:
        raise Unsupported("indexing with a multi-dimensional index tensor")
    return index_select(cx, x, d, operand)
