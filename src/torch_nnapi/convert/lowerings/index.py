"""Slicing and gathering: slice, select, narrow, chunk, split, unbind, index_select,
embedding, advanced indexing with index tensors (``x[i, j]``, builder/gather.py) and writes
at constant positions (``x[i, j] = v``, ``index_copy_``) or at one position the model takes
(a decoder's cache slot: ``cache[:, pos] = k``, ``index_put_``, ``index_copy_``).

Slices are STRIDED_SLICE (builder/slicing.py) with begin/end masks for untouched dimensions,
so slicing keeps working on flexible dimensions (bounds that depend on them are patched at
load time). select uses the shrink-axis mask. Equal chunks are one SPLIT.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.common import dim_index, require_tensor, shape_of, static_int
from ..builder.context import Arg, Converter
from ..builder.gather import copy_at_position, gather_indexed, indexing, put_indexed
from ..builder.slicing import slice_bound, split_sizes, strided_slice
from ..builder.symbolic import Sym, SymInt
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


@lowering("aten::slice", nnapi=("STRIDED_SLICE",), any_rank=True)
def slice_(cx: Converter, x: Arg, dim: int = 0, start: SymInt | None = None,
           end: SymInt | None = None, step: int = 1) -> TensorValue:
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
def narrow(cx: Converter, x: Arg, dim: int, start: SymInt, length: SymInt) -> TensorValue:
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    s = slice_bound(start, x.shape[d], 0)
    return strided_slice(cx, x, {d: (s, s + length, 1)})


@lowering("aten::select", nnapi=("STRIDED_SLICE",), any_rank=True,
          notes="shrink-axis mask removes the dim")
def select(cx: Converter, x: Arg, dim: int, index: SymInt) -> TensorValue:
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    i = index if isinstance(index, Sym) else int(index)
    if not isinstance(i, Sym) and i < 0:
        i = x.shape[d] + i
    return strided_slice(cx, x, {d: (i, i + 1, 1)}, shrink=(d,))


@lowering("aten::chunk", "aten::unsafe_chunk", nnapi=("SPLIT", "STRIDED_SLICE"),
          any_rank=True)
def chunk(cx: Converter, x: Arg, chunks: int, dim: int = 0) -> list[TensorValue]:
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
def split(cx: Converter, x: Arg, split_size: SymInt | Sequence[SymInt], dim: int = 0
          ) -> list[TensorValue]:
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
def unbind(cx: Converter, x: Arg, dim: int = 0) -> list[TensorValue]:
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    n = static_int(x.shape[d], "unbind dimension")
    return [strided_slice(cx, x, {d: (i, i + 1, 1)}, shrink=(d,)) for i in range(n)]


def _index_operand(cx: Converter, index: Arg) -> TensorValue:
    if isinstance(index, torch.Tensor):
        return cx.torch_constant(index.to(torch.int64))
    index = require_tensor(index, "index")
    if index.dtype not in ("int64", "int32"):
        raise Unsupported(f"indices of dtype {index.dtype}")
    if index.rank > 1:
        index = cx.contiguous(index)
    return index


@lowering("aten::index_select", nnapi=("GATHER",))
def index_select(cx: Converter, x: Arg, dim: int, index: Arg) -> TensorValue:
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    idx = _index_operand(cx, index)
    if idx.rank != 1:
        raise Unsupported("index_select with a multi-dimensional index")
    shape = tuple(idx.shape[0] if i == d else n for i, n in enumerate(x.shape))
    return cx.emit(Op.GATHER, dict(input=x, axis=cx.i32(lay.axis(x.layout, d)), indices=idx),
                   shape, x.dtype, x.layout, x.scale, x.zero_point)


@lowering("aten::embedding", nnapi=("GATHER",), notes="constant weight, int indices")
def embedding(cx: Converter, weight: Arg, indices: Arg, *rest: Arg) -> TensorValue:
    if not isinstance(weight, torch.Tensor):
        raise Unsupported("embedding weights computed by the model")
    w = cx.torch_constant(weight.detach().float())
    idx = _index_operand(cx, indices)
    shape = tuple(idx.shape) + (w.shape[1],)
    return cx.emit(Op.GATHER, dict(input=w, axis=cx.i32(0), indices=idx), shape, w.dtype)


@lowering("aten::index", nnapi=("GATHER", "RESHAPE", "ADD", "MUL", "LESS", "SELECT"),
          notes="index tensors, broadcast, with slices between; several: one GATHER of the"
                " merged dimensions by a linear index (computed: int32, feature level 4)")
def index(cx: Converter, x: Arg, indices: Sequence[Arg]) -> TensorValue:
    x = require_tensor(x)
    plan = indexing(x, indices)
    only = plan.indices[0]
    if len(plan.dims) == 1 and len(shape_of(only)) == 1:
        return index_select(cx, x, plan.dims[0], only)
    return gather_indexed(cx, x, plan)


@lowering("aten::index_put", "aten::index_put_",
          nnapi=("GATHER", "SELECT", "ADD", "RESHAPE", "EQUAL", "LESS"),
          notes="x[i, j] = v at constant positions: a SELECT of the written elements; at one"
                " position the model takes along one dimension (cache[:, pos] = k): EQUAL"
                " over the slots")
def index_put(cx: Converter, x: Arg, indices: Sequence[Arg], values: Arg,
              accumulate: bool = False) -> TensorValue:
    x = _written_tensor(cx, x, values)
    return put_indexed(cx, x, indexing(x, indices), values, bool(accumulate))


@lowering("aten::index_copy", "aten::index_copy_",
          nnapi=("GATHER", "SELECT", "RESHAPE", "EQUAL", "TILE"),
          notes="at constant positions: a SELECT of the written elements; at one position"
                " the model takes (a cache written at a step's slot): EQUAL over the slots")
def index_copy(cx: Converter, x: Arg, dim: int, index: Arg, source: Arg) -> TensorValue:
    x = _written_tensor(cx, x, source)
    d = dim_index(dim, x.rank)
    if isinstance(index, TensorValue):
        return copy_at_position(cx, x, d, index, source)
    return put_indexed(cx, x, indexing(x, [None] * d + [index]), source)


def _written_tensor(cx: Converter, x: Arg, values: Arg) -> TensorValue:
    """The tensor a write goes into: a model tensor, or a constant the model writes its own
    values into (``torch.zeros(...)[i] = y``)."""
    if isinstance(x, torch.Tensor) and isinstance(values, TensorValue):
        return cx.torch_constant(x)
    return require_tensor(x)
