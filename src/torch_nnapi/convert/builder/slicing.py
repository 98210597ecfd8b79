"""Building blocks that cut, join and rearrange dimensions: strided slices, splits, gathers
with constant indices, concatenation, and permute, squeeze and unsqueeze.

Slices are STRIDED_SLICE with begin/end masks for untouched dimensions, so slicing keeps
working on flexible dimensions (bounds that depend on them are patched at load time).
permute emits nothing: it changes the operand's layout (layout.py) and a TRANSPOSE appears
only if a later operation needs another order; squeeze and unsqueeze keep the layout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..capture.graph import ExampleTensor
from ..errors import Unsupported
from . import layout as lay
from .common import choose_layout, dim_index
from .context import Arg, Converter
from .merged import regroup, same_dim, separate
from .symbolic import Sym, SymInt, ceil_div, sym_max, sym_min
from .values import QUANT_DTYPES, TensorValue

_BIG = 2 ** 62
# PyTorch dimension -> (start, end, step) of a slice, its bounds clamped and non-negative
Slices = Mapping[int, tuple[SymInt, SymInt, int]]


# ------------------------------------------------------------------------------ slices


def slice_bound(v: SymInt | None, size: SymInt, default: SymInt) -> SymInt:
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


def strided_slice(cx: Converter, x: TensorValue, slices: Slices,
                  shrink: Sequence[int] = ()) -> TensorValue:
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
            if same_dim(stop, shape[dim]):
                end_mask |= 1 << axis
                end[-1] = 0
            length = stop - start
            shape[dim] = sym_max(ceil_div(length, step), 0) if isinstance(length, Sym) else \
                max(-(-length // step), 0)
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
    if x.nnapi_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
        return cx.through_float(x, lambda f: strided_slice(cx, f, slices, shrink))
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
            if same_dim(inner, 1) or (position == run[0] and step == 1):
                return axis, inner
            return None
    return None


def _strided_slice_merged(cx: Converter, x: TensorValue, slices: Slices,
                          shrink: Sequence[int]) -> TensorValue:
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
            if sizes[axis] == 0 and same_dim(inner, 1) and len(runs[axis]) == 1:
                shrink_mask |= 1 << axis
    end_mask = 0
    for axis in range(len(runs)):
        if same_dim(end[axis], nshape[axis]):
            end_mask |= 1 << axis
            end[axis] = 0
    out_shape = tuple(n for d, n in enumerate(shape) if d not in shrink)
    out_layout = lay.without_dims(x.layout, list(shrink)) if shrink else x.layout
    kept = [n for axis, n in enumerate(sizes) if not shrink_mask & (1 << axis)]
    groups = lay.normalize_groups(kept, len(out_shape)) if out_shape else ()
    if not shrink and all(same_dim(a, b) for a, b in zip(out_shape, x.shape, strict=False)):
        return x
    if x.nnapi_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
        return cx.through_float(x, lambda f: strided_slice(cx, f, slices, shrink))
    return cx.emit(Op.STRIDED_SLICE,
                   dict(input=x, begin=cx.int_vector(begin), end=cx.int_vector(end),
                        strides=cx.int_vector(strides), begin_mask=cx.i32(0),
                        end_mask=cx.i32(end_mask), shrink_axis_mask=cx.i32(shrink_mask)),
                   out_shape, x.dtype, out_layout, x.scale, x.zero_point, groups)


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
    parts = []
    start: SymInt = 0
    for s in sizes:
        parts.append(strided_slice(cx, x, {dim: (start, start + s, 1)}))
        start = start + s
    return parts


def gather_indices(cx: Converter, x: TensorValue, dim: int, indices: Sequence[int]
                   ) -> TensorValue:
    """GATHER along PyTorch dimension ``dim`` with constant indices (a list)."""
    idx = cx.constant(np.asarray(indices, np.int32).reshape(-1), "int32")
    shape = tuple(len(indices) if i == dim else n for i, n in enumerate(x.shape))
    return cx.emit(Op.GATHER, dict(input=x, axis=cx.i32(lay.axis(x.layout, dim)), indices=idx),
                   shape, x.dtype, x.layout, x.scale, x.zero_point)


# ------------------------------------------------------------------------------ joining


def concatenate(cx: Converter, items: Sequence[Arg], dim: Arg, scale: float | None = None,
                zero_point: int | None = None) -> TensorValue:
    """CONCATENATION of tensors (constants materialized), in the first tensor's layout."""
    tensors = [v for v in items if isinstance(v, TensorValue)]
    if not tensors:
        raise Unsupported("cat of constants only")
    rank = tensors[0].rank
    d = dim_index(dim, rank)
    layout = choose_layout(tensors, rank)
    dtype = tensors[0].dtype
    operands = []
    for v in items:
        if isinstance(v, torch.Tensor) and v.numel() == 0:
            continue
        t = cx.tensor(v, like=TensorValue(-1, (1,) * rank, dtype, layout), dtype=dtype) \
            if not isinstance(v, TensorValue) else v
        if t.rank != rank:
            raise Unsupported("cat of tensors of different ranks")
        operands.append(cx.to_layout(t, layout))
    if any(t.dtype != dtype for t in operands):
        raise Unsupported("cat of tensors of different dtypes")
    groups: lay.Groups = ()
    if rank > 4 or any(t.groups for t in operands):
        groups = separate(cx, operands[0], [d]).groups
        operands = [regroup(cx, t, groups) for t in operands]
    if len(operands) == 1 and scale is None:
        return operands[0]
    size: SymInt = 0
    for t in operands:
        size = size + t.shape[d]
    shape = tuple(size if i == d else n for i, n in enumerate(operands[0].shape))
    if dtype in QUANT_DTYPES:
        if scale is None or zero_point is None:
            ex = cx.example()
            if isinstance(ex, ExampleTensor) and ex.scale:  # None or a number: no scale
                scale, zero_point = ex.scale, ex.zero_point
            else:
                scale, zero_point = operands[0].scale, operands[0].zero_point
    else:
        scale, zero_point = 0.0, 0
    return cx.emit(Op.CONCATENATION,
                   dict(inputs=operands, axis=cx.i32(operands[0].nnapi_axis(d))), shape, dtype,
                   layout, scale, zero_point, groups)


# ------------------------------------------------------------------------------ dimensions


def permute(x: TensorValue, perm: Sequence[int]) -> TensorValue:
    """``x.permute(perm)`` (``perm`` of non-negative dims): no operation, a new layout."""
    if sorted(perm) != list(range(x.rank)):
        raise Unsupported(f"permute({perm}) is not a permutation")
    return x.with_(shape=tuple(x.shape[p] for p in perm), layout=lay.compose(x.layout, perm))


def relayout_reshape(cx: Converter, x: TensorValue, shape: tuple[SymInt, ...],
                     layout: lay.Layout) -> TensorValue:
    """A RESHAPE that keeps the data order: only size-1 dimensions appear or vanish."""
    if x.nnapi_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
        return cx.reshape(x, shape)
    out = cx.new_tensor(shape, x.dtype, layout, x.scale, x.zero_point)
    cx.operation(Op.RESHAPE, dict(input=x, shape=cx.shape_vector(out.nnapi_shape)),
                 dict(output=out))
    return out


def squeeze(cx: Converter, x: TensorValue, dims: Iterable[int]) -> TensorValue:
    """``x`` without those of its (non-negative) dimensions ``dims`` that have size 1,
    in the same layout."""
    drop = [d for d in dims if not isinstance(x.shape[d], Sym) and x.shape[d] == 1]
    if not drop:
        return x
    shape = tuple(n for d, n in enumerate(x.shape) if d not in drop)
    if not shape:
        return cx.reshape(x, ())
    layout = lay.without_dims(x.layout, drop)
    if x.groups:
        return _drop_unit_dims(cx, x, drop, shape, layout)
    return relayout_reshape(cx, x, shape, layout)


def _drop_unit_dims(cx: Converter, x: TensorValue, drop: list[int],
                    shape: tuple[SymInt, ...], layout: lay.Layout) -> TensorValue:
    """squeeze of a merged operand: the same operand, fewer PyTorch dimensions."""
    sizes = list(lay.group_sizes(x.groups, x.rank))
    runs = lay.group_runs(x.groups, x.rank)
    for position, d in enumerate(x.layout):
        if d in drop:
            sizes[next(i for i, run in enumerate(runs) if position in run)] -= 1
    # a merged dimension left without PyTorch dimensions stays, as a size-1 NNAPI dimension
    return x.with_(shape=shape, layout=layout, groups=lay.normalize_groups(sizes, len(shape)))


def unsqueeze(cx: Converter, x: TensorValue, d: int) -> TensorValue:
    """``x`` with a size-1 dimension inserted at ``d`` (0 to ``x.rank``)."""
    shape = x.shape[:d] + (1,) + x.shape[d:]
    renumbered = [i + 1 if i >= d else i for i in x.layout]
    # put the new dimension where PyTorch's next dimension is stored (or last)
    position = renumbered.index(d + 1) if d < x.rank else len(renumbered)
    layout = tuple(renumbered[:position] + [d] + renumbered[position:])
    if x.groups or x.rank >= 4:  # the new size-1 dimension joins a merged one
        sizes = list(lay.group_sizes(x.groups, x.rank))
        runs = lay.group_runs(x.groups, x.rank)
        neighbour = max(position - 1, 0)
        sizes[next(i for i, run in enumerate(runs) if neighbour in run)] += 1
        return x.with_(shape=shape, layout=layout,
                       groups=lay.normalize_groups(sizes, len(shape)))
    return relayout_reshape(cx, x, shape, layout)
