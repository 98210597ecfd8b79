"""Sorting: topk, sort and argsort, on TOPK_V2.

TOPK_V2 returns the k largest values of the last NNAPI dimension in descending order, so the
sorted dimension is moved last (a TRANSPOSE unless the layout has it there already) and the
smallest values are the largest of the negation. Equal values come out in descending index
order on Android; PyTorch's stable sort wants ascending index order, so sort reads the
dimension reversed (GATHER) and maps the indices back through a constant table (GATHER
again: NNAPI has no integer subtraction before feature level 4). topk leaves equal values in
NNAPI's order, as PyTorch leaves their order unspecified.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperationType as Op
from ..builder.common import dim_index, require_tensor, static_int
from ..builder.context import Arg, Converter
from ..builder.slicing import gather_indices
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


def _last(cx: Converter, x: TensorValue, d: int) -> TensorValue:
    """``x`` with PyTorch dimension ``d`` last in its NNAPI layout."""
    if x.layout[-1] == d:
        return x
    return cx.to_layout(x, tuple(a for a in x.layout if a != d) + (d,))


def _negated(cx: Converter, x: TensorValue) -> TensorValue:
    if x.dtype not in ("float32", "float16", "int32", "int64"):
        raise Unsupported(f"the smallest values of a {x.dtype} tensor")
    return cx.emit_like(Op.NEG, dict(input=x), x)


def top_k(cx: Converter, x: TensorValue, k: int, d: int, largest: bool,
          ascending_ties: bool) -> tuple[TensorValue, TensorValue]:
    """(values, int64 indices) of the ``k`` largest (or smallest) entries along ``d``, sorted."""
    size = static_int(x.shape[d], "the sorted dimension")
    if not 0 < k <= size:
        raise Unsupported(f"k={k} out of range for a dimension of size {size}")
    x = _last(cx, x, d)
    keys = x if largest else _negated(cx, x)
    if ascending_ties:
        keys = gather_indices(cx, keys, d, list(range(size - 1, -1, -1)))
    shape = tuple(k if i == d else n for i, n in enumerate(x.shape))
    values = cx.new_tensor(shape, keys.dtype, x.layout, keys.scale, keys.zero_point)
    indices = cx.new_tensor(shape, "int64", x.layout)
    cx.operation(Op.TOPK_V2, dict(input=keys, k=cx.i32(k)), dict(values=values,
                                                                indices=indices))
    if ascending_ties:
        table = cx.constant(np.arange(size - 1, -1, -1, dtype=np.int32), "int64")
        indices = cx.emit(Op.GATHER, dict(input=table, axis=cx.i32(0), indices=indices),
                          shape, "int64", x.layout)
    if not largest:
        values = _negated(cx, values)
    return values, indices


@lowering("aten::topk", nnapi=("TOPK_V2", "NEG", "TRANSPOSE"),
          notes="sorted; equal values' indices in NNAPI's order (PyTorch leaves it open)")
def topk(cx: Converter, x: Arg, k: int, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> tuple[TensorValue, TensorValue]:
    x = require_tensor(x)
    k = static_int(k, "k")
    if not sorted and k > 1:
        raise Unsupported("topk(sorted=False): PyTorch's order of the results is unspecified")
    return top_k(cx, x, k, dim_index(dim, x.rank), bool(largest), ascending_ties=False)


def _sorted(cx: Converter, x: Arg, dim: Arg, descending: Arg
            ) -> tuple[TensorValue, TensorValue]:
    x = require_tensor(x)
    if x.rank == 0:
        raise Unsupported("sorting a 0-dim tensor")
    d = dim_index(dim, x.rank)
    size = static_int(x.shape[d], "the sorted dimension")
    return top_k(cx, x, size, d, bool(descending), ascending_ties=True)


@lowering("aten::sort", nnapi=("TOPK_V2", "GATHER", "NEG", "TRANSPOSE"),
          notes="stable: equal values keep their order")
def sort(cx: Converter, x: Arg, *args: Arg) -> tuple[TensorValue, TensorValue]:
    # sort(x, dim=-1, descending=False) or sort.stable(x, stable, dim=-1, descending=False)
    if len(args) == 3:
        args = args[1:]
    dim, descending = (list(args) + [-1, False][len(args):])[:2]
    return _sorted(cx, x, dim, descending)


@lowering("aten::argsort", nnapi=("TOPK_V2", "GATHER", "NEG", "TRANSPOSE"),
          notes="stable: equal values keep their order")
def argsort(cx: Converter, x: Arg, *args: Arg) -> TensorValue:
    # argsort(x, dim=-1, descending=False) or argsort.stable(x, stable, dim=-1, descending)
    if len(args) == 3:
        args = args[1:]
    dim, descending = (list(args) + [-1, False][len(args):])[:2]
    return _sorted(cx, x, dim, descending)[1]
