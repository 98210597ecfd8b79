"""Advanced indexing with several index tensors, read (``x[i, j]``, ``x[:, i, j]``) and
written (``x[i, j] = v``, ``index_copy_``).

PyTorch broadcasts the index tensors together; the result takes their broadcast shape where
the indexed dimensions were, or first when slices separate them. NNAPI gathers along one
axis, so:

* constant indices that each vary along a broadcast dimension of their own select each
  dimension apart (a GATHER, or nothing for the whole range), then a view places the
  dimensions: the attention-mask builders of text transformers index a padding mask
  ``[B, K]`` with ``arange(B)[:, None, None, None]`` and ``arange(K)[None, None, None, :]``,
  which is the mask itself viewed as ``[B, 1, 1, K]``;
* otherwise the indexed dimensions are merged into one (a RESHAPE, after a permute when
  slices separate them) and one GATHER takes the linear index: folded at conversion for
  constant indices, computed with int32 arithmetic (feature level 4) for indices the model
  computes, negative ones wrapped as PyTorch wraps them. An index out of range is an error
  in PyTorch; NNAPI has no run-time check, and such an index reads another element.

Writes keep the tensor and SELECT the written elements: a constant map from each element to
the value written there (the last write, as PyTorch's CPU kernel does), a GATHER of the
values through it, and a SELECT (an ADD with ``accumulate``). NNAPI has no scatter: the
written positions must be known at conversion time, except one position the model takes
along one dimension (a decoder's cache slot), written by an EQUAL over the slots and a
SELECT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ...nnapi.codes import OperationType as Op
from ..errors import Unsupported
from .arithmetic import arithmetic, select
from .common import broadcast, broadcast_shapes, expand_to, shape_of, static_int
from .context import Arg, Converter
from .slicing import gather_indices, permute
from .symbolic import Sym, SymInt
from .values import TensorValue

_TORCH_DTYPES = {"float32": torch.float32, "int32": torch.int32, "int64": torch.int64,
                 "bool": torch.bool}

Index = torch.Tensor | TensorValue  # an int64 constant (non-negative) or a model tensor


@dataclass(frozen=True)
class Indexing:
    """``x[indices]`` with index tensors: which dimensions they index, the indices (one
    per indexed dimension), their broadcast shape, and whether the indexed dimensions are
    consecutive (the result then keeps their place, else it puts them first)."""

    rank: int
    dims: tuple[int, ...]
    indices: tuple[Index, ...]
    shape: tuple[SymInt, ...]
    adjacent: bool

    @property
    def constant(self) -> bool:
        return all(isinstance(i, torch.Tensor) for i in self.indices)

    def result_shape(self, x_shape: Sequence[SymInt]) -> tuple[SymInt, ...]:
        rest = tuple(n for d, n in enumerate(x_shape) if d not in self.dims)
        if not self.adjacent:
            return self.shape + rest
        first = self.dims[0]
        return tuple(x_shape[:first]) + self.shape + tuple(x_shape[self.dims[-1] + 1:])

    def order(self) -> list[int]:
        """The permutation bringing the indexed dimensions together where the result
        has them (in place when consecutive, else first)."""
        if self.adjacent:
            return list(range(self.rank))
        return list(self.dims) + [d for d in range(self.rank) if d not in self.dims]

    @property
    def first(self) -> int:
        """Where the indexed dimensions start once :meth:`order` brought them together."""
        return self.dims[0] if self.adjacent else 0


def indexing(x: TensorValue, indices: Sequence[Arg]) -> Indexing:
    """How ``aten::index``'s ``indices`` (None for a whole dimension, an integer tensor, or
    a constant bool mask, which stands for the positions where it is true) index ``x``."""
    dims: list[int] = []
    found: list[Index] = []
    d = 0
    for k, idx in enumerate(indices):
        if idx is None:
            d += 1
            continue
        if isinstance(idx, torch.Tensor) and idx.dtype == torch.bool:
            for part in idx.nonzero(as_tuple=True):
                dims.append(d)
                found.append(_constant_index(part, x, d))
                d += 1
            continue
        if d >= x.rank:
            raise Unsupported(f"index {k} is past the tensor's {x.rank} dimensions")
        dims.append(d)
        found.append(_constant_index(idx, x, d) if isinstance(idx, torch.Tensor)
                     else _model_index(idx, k))
        d += 1
    if d > x.rank:
        raise Unsupported(f"{d} indexed dimensions for a tensor of rank {x.rank}")
    if not dims:
        raise Unsupported("indexing without an index tensor")
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    shape = broadcast_shapes(*[shape_of(i) for i in found])
    return Indexing(x.rank, tuple(dims), tuple(found), shape, adjacent)


def _constant_index(idx: torch.Tensor, x: TensorValue, d: int) -> torch.Tensor:
    if idx.is_floating_point() or idx.is_complex() or idx.dtype == torch.bool:
        raise Unsupported(f"indices of dtype {str(idx.dtype).replace('torch.', '')}")
    if idx.numel() == 0:
        raise Unsupported("an empty index tensor (NNAPI tensors have no size 0)")
    values = idx.to(torch.int64)
    n = x.shape[d]
    low, high = int(values.min()), int(values.max())
    if isinstance(n, Sym):
        if low < 0:
            raise Unsupported(f"negative constant indices into flexible dimension {d}")
        return values
    if low < -n or high >= n:
        bad = low if low < -n else high
        raise Unsupported(f"index {bad} is out of range for dimension {d} of size {n}")
    return torch.where(values < 0, values + n, values)


def _model_index(idx: Arg, position: int) -> TensorValue:
    if not isinstance(idx, TensorValue):
        raise Unsupported(f"index {position} must be a tensor, got {type(idx).__name__}")
    if idx.dtype == "bool":
        raise Unsupported("indexing with a bool mask the model computes (the result's size"
                          " depends on the data)")
    if idx.dtype not in ("int64", "int32"):
        raise Unsupported(f"indices of dtype {idx.dtype}")
    return idx


# ------------------------------------------------------------------------------ reading


def gather_indexed(cx: Converter, x: TensorValue, plan: Indexing) -> TensorValue:
    """``x[indices]`` as :func:`indexing` planned it."""
    if plan.constant:
        selection = _separate_selections(plan)
        if selection is not None:
            return _select_each(cx, x, plan, selection)
    if x.dtype == "bool":  # RESHAPE, TRANSPOSE and GATHER's arithmetic take no bool tensors
        return _as_bool(cx, gather_indexed(cx, _as_float(cx, x), plan))
    sizes = _indexed_sizes(x, plan)
    merged = _merged(cx, x, plan, sizes)
    linear = _linear_index(cx, plan, sizes)
    return _gather(cx, merged, plan.first, linear, plan.result_shape(x.shape))


def _separate_selections(plan: Indexing) -> list[tuple[int | None, list[int]]] | None:
    """Per indexed dimension: the broadcast dimension its (constant) index varies along
    (None: one element) and its values, when no two indices vary along the same one."""
    rank = len(plan.shape)
    used: set[int] = set()
    found: list[tuple[int | None, list[int]]] = []
    for idx in plan.indices:
        assert isinstance(idx, torch.Tensor)
        aligned = idx.reshape((1,) * (rank - idx.dim()) + tuple(idx.shape))
        varying = [b for b in range(rank) if aligned.shape[b] > 1]
        if len(varying) > 1 or used & set(varying):
            return None
        used.update(varying)
        found.append((varying[0] if varying else None, aligned.reshape(-1).tolist()))
    return found


def _select_each(cx: Converter, x: TensorValue, plan: Indexing,
                 selection: list[tuple[int | None, list[int]]]) -> TensorValue:
    """Each indexed dimension selected apart, then viewed as the result."""
    y = x
    for d, (_, values) in zip(plan.dims, selection, strict=True):
        size = y.shape[d]
        if isinstance(size, Sym) or values != list(range(size)):  # the whole range: as is
            y = gather_indices(cx, y, d, values)
    # the indexed dimensions in the order of the broadcast dimensions they vary along
    ranked = sorted(range(len(plan.dims)), key=lambda k: (selection[k][0] is None,
                                                          selection[k][0] or 0))
    indexed = [plan.dims[k] for k in ranked]
    rest = [d for d in range(x.rank) if d not in plan.dims]
    if plan.adjacent:
        first, last = plan.dims[0], plan.dims[-1]
        perm = list(range(first)) + indexed + list(range(last + 1, x.rank))
    else:
        perm = indexed + rest
    if perm != list(range(x.rank)):
        y = permute(y, perm)
    shape = plan.result_shape(x.shape)
    if tuple(y.shape) == shape:
        return y
    if y.dtype == "bool":  # no operation reshapes bool tensors
        return _as_bool(cx, cx.reshape(_as_float(cx, y), shape))
    return cx.reshape(y, shape)


def _indexed_sizes(x: TensorValue, plan: Indexing) -> list[int]:
    """The sizes of the indexed dimensions: fixed, as the linear index's strides are."""
    return [static_int(x.shape[d], f"indexed dimension {d} (several index tensors)")
            for d in plan.dims]


def _merged(cx: Converter, x: TensorValue, plan: Indexing, sizes: Sequence[int]
            ) -> TensorValue:
    """``x`` with its indexed dimensions brought together and merged into one."""
    order = plan.order()
    t = permute(x, order) if order != list(range(x.rank)) else x
    count = len(plan.dims)
    first = plan.first
    total = int(np.prod(sizes))
    return cx.reshape(t, tuple(t.shape[:first]) + (total,) + tuple(t.shape[first + count:]))


def _linear_index(cx: Converter, plan: Indexing, sizes: Sequence[int]
                  ) -> torch.Tensor | TensorValue:
    """Each element's position in the merged dimension, in the indices' broadcast shape:
    folded when the indices are constants, else int32 arithmetic (feature level 4)."""
    if len(plan.indices) == 1:
        # one index: GATHER refuses an index out of range (a negative one too), where a
        # linear index would read another element
        only = plan.indices[0]
        return only.expand(*[int(n) for n in plan.shape]).contiguous() if isinstance(
            only, torch.Tensor) else only
    strides = [int(np.prod(sizes[k + 1:])) for k in range(len(sizes))]
    folded: torch.Tensor | None = None
    computed: TensorValue | None = None
    for idx, n, stride in zip(plan.indices, sizes, strides, strict=True):
        if isinstance(idx, torch.Tensor):
            folded = idx * stride if folded is None else folded + idx * stride
            continue
        term = _wrapped(cx, idx, n)
        if stride != 1:
            term = arithmetic(cx, Op.MUL, term, stride)
        computed = term if computed is None else arithmetic(cx, Op.ADD, computed, term)
    if computed is None:
        assert folded is not None
        return folded.expand(*[int(n) for n in plan.shape]).contiguous()
    total = computed if folded is None else arithmetic(cx, Op.ADD, computed, folded)
    if tuple(total.shape) != tuple(plan.shape):
        total = expand_to(cx, total, plan.shape, total.dtype)
    return total


def _wrapped(cx: Converter, idx: TensorValue, size: int) -> TensorValue:
    """A model's index with negative entries counted from the end, as PyTorch does."""
    (t, zero), shape, layout, groups = broadcast(cx, [idx, 0], idx.dtype)
    negative = cx.emit(Op.LESS, dict(input0=t, input1=zero), shape, "bool", layout,
                       groups=groups)
    return select(cx, negative, arithmetic(cx, Op.ADD, idx, size), idx, idx.dtype)


def _gather(cx: Converter, merged: TensorValue, axis: int, linear: torch.Tensor | TensorValue,
            shape: tuple[SymInt, ...]) -> TensorValue:
    """GATHER of ``merged`` along ``axis`` by ``linear``, viewed as ``shape``; an index of
    rank 0, or a result of rank above 4, gathers by the flattened index."""
    rank = merged.rank - 1 + len(shape_of(linear))
    flat = rank > 4 or not shape_of(linear)
    if isinstance(linear, torch.Tensor):
        values = linear.reshape(-1) if flat else linear
        index = cx.constant(values.to(torch.int32).numpy(), "int32")
    else:
        index = cx.contiguous(linear)
        if flat:
            index = cx.reshape(index, (int(np.prod([int(n) for n in linear.shape])),))
    out_shape = tuple(merged.shape[:axis]) + tuple(index.shape) + tuple(merged.shape[axis + 1:])
    merged = cx.contiguous(merged)
    out = cx.emit(Op.GATHER, dict(input=merged, axis=cx.i32(axis), indices=index), out_shape,
                  merged.dtype, None, merged.scale, merged.zero_point)
    return out if out_shape == tuple(shape) else cx.reshape(out, shape)


def _as_float(cx: Converter, x: TensorValue) -> TensorValue:
    """A bool tensor as 1.0 / 0.0."""
    return select(cx, x, 1.0, 0.0, "float32")


def _as_bool(cx: Converter, x: TensorValue) -> TensorValue:
    """1.0 / 0.0 back to a bool tensor."""
    (t, half), shape, layout, groups = broadcast(cx, [x, 0.5], "float32")
    return cx.emit(Op.GREATER, dict(input0=t, input1=half), shape, "bool", layout,
                   groups=groups)


# ------------------------------------------------------------------------------ writing


def put_indexed(cx: Converter, x: TensorValue, plan: Indexing, values: Arg,
                accumulate: bool = False) -> TensorValue:
    """``x`` with ``x[indices] = values`` (``+=`` with ``accumulate``), as :func:`indexing`
    planned the indices: constants, or one position the model takes along one dimension
    (:func:`put_at_position`)."""
    if x.dtype == "bool":  # SELECT, RESHAPE and TRANSPOSE take no bool tensors
        as_float = values if not isinstance(values, TensorValue) else _as_float(cx, values)
        if isinstance(as_float, torch.Tensor) and as_float.dtype == torch.bool:
            as_float = as_float.float()
        return _as_bool(cx, put_indexed(cx, _as_float(cx, x), plan, as_float, accumulate))
    if not plan.constant:
        return put_at_position(cx, x, plan, values, accumulate)
    sizes = _indexed_sizes(x, plan)
    linear = _linear_index(cx, plan, sizes)
    assert isinstance(linear, torch.Tensor)
    flat = linear.reshape(-1).numpy()
    count = int(np.prod(sizes))
    source = np.full(count, -1, np.int64)
    np.maximum.at(source, flat, np.arange(flat.size))  # the last write to each element
    if accumulate and len(np.unique(flat)) != flat.size:
        raise Unsupported("accumulating into repeated positions (NNAPI has no scatter-add)")
    written = torch.from_numpy(source >= 0)
    merged = _merged(cx, x, plan, sizes)
    axis = plan.first
    mask = written.reshape((count,) + (1,) * (merged.rank - axis - 1))
    picked = _values_at(cx, values, plan, x, merged, np.maximum(source, 0))
    if accumulate:
        addend: Arg = torch.where(mask, torch.as_tensor(picked), 0) if not isinstance(
            picked, TensorValue) else select(cx, mask, picked, 0, x.dtype)
        result = arithmetic(cx, Op.ADD, merged, addend)
    else:
        result = select(cx, mask, picked, merged, x.dtype)
    shape = [x.shape[d] for d in plan.order()]
    back = cx.reshape(result, tuple(shape))
    order = plan.order()
    inverse = [int(k) for k in np.argsort(order)]
    return back if order == list(range(x.rank)) else permute(back, inverse)


def copy_at_position(cx: Converter, x: TensorValue, d: int, index: Arg,
                     source: Arg) -> TensorValue:
    """``x.index_copy(d, index, source)`` at one position the model takes or computes (a
    decoder's key/value cache written at this step's slot). NNAPI has no scatter: where the
    slot number along ``d`` equals the position, ``source`` (broadcast along ``d``),
    elsewhere ``x``; every shape stays fixed, so each step is one execution."""
    if [static_int(n, "index size") for n in shape_of(index)] not in ([1], []):
        raise Unsupported("index_copy of more than one position the model computes (NNAPI"
                          " has no scatter)")
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


def put_at_position(cx: Converter, x: TensorValue, plan: Indexing, values: Arg,
                    accumulate: bool = False) -> TensorValue:
    """``x[..., position, ...] = values`` (``index_put_``, slice assignment) at one position
    the model takes along one dimension: :func:`copy_at_position` with ``values`` broadcast
    to one slot, a negative position counted from the end as PyTorch does."""
    if len(plan.dims) != 1 or accumulate:
        raise Unsupported("writing at positions the model computes along more than one"
                          " dimension, or accumulating there (NNAPI has no scatter)")
    d = plan.dims[0]
    index = plan.indices[0]
    assert isinstance(index, TensorValue)
    if [static_int(n, "index size") for n in index.shape] not in ([1], []):
        raise Unsupported("writing at more than one position the model computes (NNAPI"
                          " has no scatter)")
    one_slot = tuple(1 if k == d else n for k, n in enumerate(x.shape))
    if isinstance(values, TensorValue):
        source: Arg = cx.reshape(expand_to(cx, values, plan.result_shape(x.shape), x.dtype),
                                 one_slot)
    else:
        source = torch.as_tensor(values, dtype=_TORCH_DTYPES.get(x.dtype, torch.float32)).expand(
            *[static_int(n, "written size") for n in one_slot]).contiguous()
    size = static_int(x.shape[d], "the size along dim")
    return copy_at_position(cx, x, d, _wrapped(cx, index, size), source)


def _values_at(cx: Converter, values: Arg, plan: Indexing, x: TensorValue,
               merged: TensorValue, source: np.ndarray) -> Arg:
    """The value written to each element of the merged dimension (``source``: which of
    the written values; any where none is), in ``merged``'s shape."""
    result_shape = plan.result_shape(x.shape)
    axis = plan.first
    index_rank = len(plan.shape)
    if not isinstance(values, TensorValue):
        full = torch.as_tensor(values).expand(*[int(n) for n in result_shape])
        if full.dim() == 0 or full.numel() == 1:
            return full.reshape(-1)[0].item()
        flat = full.reshape(tuple(full.shape[:axis]) + (-1,) + tuple(
            full.shape[axis + index_rank:]))
        return flat.index_select(axis, torch.from_numpy(source)).contiguous()
    expanded = expand_to(cx, values, result_shape, x.dtype)
    total = int(np.prod([int(n) for n in plan.shape]))
    grouped = cx.reshape(expanded, tuple(result_shape[:axis]) + (total,) + tuple(
        result_shape[axis + index_rank:]))
    return _gather(cx, grouped, axis, torch.from_numpy(source),
                   tuple(grouped.shape[:axis]) + (int(source.size),) +
                   tuple(grouped.shape[axis + 1:]))


__all__ = ["Indexing", "copy_at_position", "gather_indexed", "indexing", "put_at_position",
           "put_indexed"]
