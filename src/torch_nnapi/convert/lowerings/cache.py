"""Writes into a fixed-size cache at a position the model computes or takes as an input.

A decoder step with a key/value cache writes this token's keys at ``position``:
``keys.index_copy(dim, position, k)``. NNAPI has no scatter; with one position the write is
a select over the cache: where the slot number along ``dim`` equals the position, the new
values (broadcast along ``dim``), elsewhere the cache as it was. Every shape stays fixed, so
each token is one execution of the same compilation.
"""

from __future__ import annotations

import torch

from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import select
from ..builder.common import broadcast, dim_index, shape_of, static_int
from ..builder.context import Arg, Converter
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


@lowering("aten::index_copy", "aten::index_copy_", nnapi=("EQUAL", "SELECT", "TILE"),
          any_rank=True, notes="one position along dim, a constant or a tensor the model"
                               " takes (a cache written at a step's position)")
def index_copy(cx: Converter, x: Arg, dim: Arg, index: Arg, source: Arg) -> TensorValue:
    if not isinstance(x, TensorValue):
        raise Unsupported("index_copy into a constant tensor")
    d = dim_index(dim, x.rank)
    if [static_int(n, "index size") for n in shape_of(index)] not in ([1], []):
        raise Unsupported("index_copy of more than one position (NNAPI has no scatter)")
    if shape_of(source) != tuple(1 if k == d else n for k, n in enumerate(x.shape)):
        raise Unsupported(f"index_copy: source sizes {list(shape_of(source))} for one"
                          f" position along dim {d} of {list(x.shape)}")
    size = static_int(x.shape[d], "the size along dim")
    slots = torch.arange(size, dtype=torch.int32).reshape(
        [size if k == d else 1 for k in range(x.rank)])
    (ts, ti), shape, layout, groups = broadcast(cx, [slots, index], "int32")
    written = cx.emit(Op.EQUAL, dict(input0=ts, input1=ti), shape, "bool", layout,
                      groups=groups)
    return select(cx, written, source, x, x.dtype)
