"""Slicing and gathering: slice, select, narrow, chunk, split, unbind, index_select,
embedding and single-tensor indexing.

Slices are STRIDED_SLICE with begin/end masks for untouched dimensions, so slicing keeps
working on flexible dimensions (bounds that depend on them are patched at load time).
select uses the shrink-axis mask. Equal chunks are one SPLIT.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.common import dim_index, require_tensor, static_int
from ..builder.context import Converter
from ..builder.merged import separate
from ..builder.symbolic import Sym, SymInt, ceil_div, sym_max, sym_min
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering

_BIG = 2 ** 62


def slice_bound(v, size: SymInt, default: SymInt) -> SymInt:
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
    if x.groups or x.rank > 4:
        return _strided_slice_merged(cx, x, slices, shrink)
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
                          for a, b in zip(out_shape, x.shape, strict=False)):
        return x
    return cx.emit(Op.STRIDED_SLICE,
                   dict(input=x, begin=cx.int_vector(begin), end=cx.int_vector(end),
                        strides=cx.int_vector(strides), begin_mask=cx.i32(begin_mask),
                        end_mask=cx.i32(end_mask), shrink_axis_mask=cx.i32(shrink_mask)),
                   out_shape, x.dtype, out_layout, x.scale, x.zero_point)


def _outer_of_run(x: TensorValue, dim: int, step: int) -> tuple[int, SymInt] | None:
    """(NNAPI axis, size of the dimensions merged inside it) when ``dim`` can be sliced on
    its merged axis: the outermost of its run (a slice of it is a contiguous range of the
    merged axis) with step 1, or alone in its run; else None."""
    position = lay.axis(x.layout, dim)
    for axis, run in enumerate(lay.group_runs(x.groups, x.rank)):
        if position in run:
            inner: SymInt = 1
            for p in run:
                if p != position:
                    inner = inner * x.shape[x.layout[p]]
            if _same(inner, 1) or (position == run[0] and step == 1):
                return axis, inner
            return None
    return None


def _strided_slice_merged(cx: Converter, x: TensorValue, slices: dict[int, tuple],
                          shrink) -> TensorValue:
    """strided_slice of an operand merging dimensions: a sliced dimension outermost in its
    merged axis slices that axis in units of the inner size; others are separated first."""
    places = {d: _outer_of_run(x, d, slices[d][2]) for d in slices}
    if any(p is None for p in places.values()):
        x = separate(cx, x, slices)
        places = {d: _outer_of_run(x, d, slices[d][2]) for d in slices}
    runs = lay.group_runs(x.groups, x.rank)
    nshape = x.nnapi_shape
    begin: list[SymInt] = [0] * len(runs)
    end: list[SymInt] = list(nshape)
    strides = [1] * len(runs)
    shape = list(x.shape)
    shrink_mask = 0
    sizes = [len(run) for run in runs]
    for d, (start, stop, step) in slices.items():
        place = places[d]
        assert place is not None  # every sliced dimension is separate now
        axis, inner = place
        begin[axis], end[axis], strides[axis] = start * inner, stop * inner, step
        length = stop - start
        shape[d] = sym_max(ceil_div(length, step), 0) if isinstance(length, Sym) else \
            max(-(-length // step), 0)
        if d in shrink:
            sizes[axis] -= 1
            if sizes[axis] == 0 and _same(inner, 1) and len(runs[axis]) == 1:
                shrink_mask |= 1 << axis
    end_mask = 0
    for axis in range(len(runs)):
        if _same(end[axis], nshape[axis]):
            end_mask |= 1 << axis
            end[axis] = 0
    out_shape = tuple(n for d, n in enumerate(shape) if d not in shrink)
    out_layout = lay.without_dims(x.layout, list(shrink)) if shrink else x.layout
    kept = [n for axis, n in enumerate(sizes) if not shrink_mask & (1 << axis)]
    groups = lay.normalize_groups(kept, len(out_shape)) if out_shape else ()
    if not shrink and all(_same(a, b) for a, b in zip(out_shape, x.shape, strict=False)):
        return x
    return cx.emit(Op.STRIDED_SLICE,
                   dict(input=x, begin=cx.int_vector(begin), end=cx.int_vector(end),
                        strides=cx.int_vector(strides), begin_mask=cx.i32(0),
                        end_mask=cx.i32(end_mask), shrink_axis_mask=cx.i32(shrink_mask)),
                   out_shape, x.dtype, out_layout, x.scale, x.zero_point, groups)


def _same(a: SymInt, b: SymInt) -> bool:
    if isinstance(a, Sym) or isinstance(b, Sym):
        return isinstance(a, Sym) and a == b
    return int(a) == int(b)


@lowering("aten::slice", nnapi=("STRIDED_SLICE",), any_rank=True)
def slice_(cx: Converter, x, dim=0, start=None, end=None, step=1):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    step = static_int(step, "slice step")
    if step <= 0:
        raise Unsupported("slice with a non-positive step")
    size = x.shape[d]
    s = slice_bound(start, size, 0)
    e = slice_bound(end, size, size)
    return strided_slice(cx, x, {d: (s, e, step)})


@lowering("aten::narrow", nnapi=("STRIDED_SLICE",), any_rank=True)
def narrow(cx: Converter, x, dim, start, length):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    s = slice_bound(start, x.shape[d], 0)
    return strided_slice(cx, x, {d: (s, s + length, 1)})


@lowering("aten::select", nnapi=("STRIDED_SLICE",), any_rank=True,
          notes="shrink-axis mask removes the dim")
def select(cx: Converter, x, dim, index):
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    i = index if isinstance(index, Sym) else int(index)
    if not isinstance(i, Sym) and i < 0:
        i = x.shape[d] + i
    return strided_slice(cx, x, {d: (i, i + 1, 1)}, shrink=(d,))


def split_sizes(cx: Converter, x: TensorValue, dim: int, sizes: Sequence[SymInt]) \
        -> list[TensorValue]:
    """Pieces of ``x`` along ``dim``: one SPLIT if they are equal, else slices."""
    if len(sizes) == 1:
        return [x]
    if all(not isinstance(s, Sym) for s in sizes) and len(set(sizes)) == 1:
        if x.groups or x.rank > 4:  # equal parts of the outermost of a merged axis
            place = _outer_of_run(x, dim, 1)
            if place is None:
                x = separate(cx, x, [dim])
                place = _outer_of_run(x, dim, 1)
            assert place is not None
            axis = place[0]
        else:
            axis = lay.axis(x.layout, dim)
        parts = [cx.new_tensor(tuple(s if i == dim else n for i, n in enumerate(x.shape)),
                               x.dtype, x.layout, x.scale, x.zero_point, x.groups)
                 for s in sizes]
        cx.operation(Op.SPLIT, dict(input=x, axis=cx.i32(axis), num_splits=cx.i32(len(sizes))),
                     dict(outputs=parts))
        return parts
    parts, start = [], 0
    for s in sizes:
        parts.append(strided_slice(cx, x, {dim: (start, start + s, 1)}))
        start = start + s
    return parts


@lowering("aten::chunk", "aten::unsafe_chunk", nnapi=("SPLIT", "STRIDED_SLICE"),
          any_rank=True)
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


@lowering("aten::split", "aten::split_with_sizes", "aten::unsafe_split",
          "aten::unsafe_split_with_sizes", nnapi=("SPLIT", "STRIDED_SLICE"), any_rank=True)
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


@lowering("aten::unbind", nnapi=("STRIDED_SLICE",), any_rank=True)
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
