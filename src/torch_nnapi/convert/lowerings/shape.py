"""Shape manipulation: reshape/view/flatten/squeeze/unsqueeze, transpose/permute,
expand/repeat, cat/stack.

transpose and permute emit nothing: they change the operand's layout (layout.py) and a
TRANSPOSE appears only if a later operation needs another order. Reshapes need PyTorch's
contiguous order unless only size-1 dimensions move; squeeze and unsqueeze keep the layout.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeGuard

import torch

from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.common import dim_index, require_tensor, static_int, tile
from ..builder.context import Arg, Converter
from ..builder.merged import reshape_in_place, same_dim, with_rank
from ..builder.slicing import (
    concatenate,
    gather_indices,
    permute,
    squeeze,
    strided_slice,
    unsqueeze,
)
from ..builder.symbolic import Sym, SymInt, numel, sym_min
from ..builder.values import TensorValue
from ..errors import ConverterBug, Unsupported
from . import lowering

if TYPE_CHECKING:
    from ..capture.graph import Node


def resolve_shape(x: TensorValue, target: Iterable[SymInt]) -> tuple[SymInt, ...]:
    """A reshape target with its -1 filled in."""
    sizes = list(target)
    unknown = [i for i, s in enumerate(sizes) if not isinstance(s, Sym) and int(s) == -1]
    if len(unknown) > 1:
        raise Unsupported(f"reshape to {sizes} has more than one -1")
    if unknown:
        known = numel([s for i, s in enumerate(sizes) if i != unknown[0]])
        sizes[unknown[0]] = numel(x.shape) // known
    elif isinstance(numel(x.shape), Sym) and not any(isinstance(s, Sym) for s in sizes):
        # MaxViT's grid partition: the sizes a model was built for, whatever the input
        raise Unsupported(f"a tensor whose size depends on a flexible dimension is reshaped"
                          f" to the fixed shape {[int(s) for s in sizes]}, so this model runs"
                          " at one input size only: convert it without flexible dimensions")
    return tuple(s if isinstance(s, Sym) else int(s) for s in sizes)


@lowering("aten::reshape", "aten::view", "aten::_reshape_alias", "aten::_unsafe_view",
          nnapi=("RESHAPE", "TRANSPOSE"), any_rank=True,
          notes="a TRANSPOSE first only if the data is not in PyTorch order")
def reshape(cx: Converter, x: Arg, sizes: SymInt | list[SymInt] | tuple[SymInt, ...],
            *rest: Arg) -> TensorValue:
    x = require_tensor(x)
    if not isinstance(sizes, (list, tuple)):
        sizes = [sizes]
    return view(cx, x, resolve_shape(x, sizes))


def view(cx: Converter, x: TensorValue, shape: Sequence[SymInt]) -> TensorValue:
    """``x.view(shape)``: in the storage order ``x`` has when the view only splits or merges
    dimensions stored together (no TRANSPOSE), else as a contiguous reshape."""
    return reshape_in_place(cx, x, shape) or cx.reshape(x, shape)


@lowering("aten::view_as", "aten::reshape_as", nnapi=("RESHAPE",), any_rank=True)
def reshape_as(cx: Converter, x: Arg, other: TensorValue | torch.Tensor) -> TensorValue:
    shape = other.shape if isinstance(other, TensorValue) else tuple(other.shape)
    return view(cx, require_tensor(x), shape)


@lowering("aten::flatten", nnapi=("RESHAPE", "TRANSPOSE"), any_rank=True)
def flatten(cx: Converter, x: Arg, start: int = 0, end: int = -1) -> TensorValue:
    x = require_tensor(x)
    if x.rank == 0:
        return cx.reshape(x, (1,))
    s = dim_index(start, x.rank, "start_dim")
    e = dim_index(end, x.rank, "end_dim")
    if s > e:
        raise Unsupported("flatten with start_dim > end_dim")
    shape = x.shape[:s] + (numel(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return view(cx, x, shape)


@lowering("aten::unflatten", nnapi=("RESHAPE",), any_rank=True)
def unflatten(cx: Converter, x: Arg, dim: int, sizes: Sequence[SymInt]) -> TensorValue:
    x = require_tensor(x)
    d = dim_index(dim, x.rank)
    inner = resolve_shape(x.with_(shape=(x.shape[d],)), sizes)
    return view(cx, x, x.shape[:d] + inner + x.shape[d + 1:])


@lowering("aten::squeeze", "aten::squeeze_", nnapi=("RESHAPE",), any_rank=True,
          notes="keeps the layout (squeezed dims have size 1)")
def aten_squeeze(cx: Converter, x: Arg, dims: int | list[int] | tuple[int, ...] | None = None
                 ) -> TensorValue:
    x = require_tensor(x)
    if dims is None:
        return squeeze(cx, x, range(x.rank))
    dims = dims if isinstance(dims, (list, tuple)) else [dims]
    return squeeze(cx, x, [dim_index(d, x.rank) for d in dims])


@lowering("aten::unsqueeze", "aten::unsqueeze_", nnapi=("RESHAPE",), any_rank=True)
def aten_unsqueeze(cx: Converter, x: Arg, dim: int) -> TensorValue:
    x = require_tensor(x)
    return unsqueeze(cx, x, dim_index(dim, x.rank + 1))


@lowering("aten::permute", nnapi=(), notes="no operation: changes the layout", any_rank=True)
def aten_permute(cx: Converter, x: Arg, dims: Sequence[int]) -> TensorValue:
    x = require_tensor(x)
    return permute(x, [dim_index(d, x.rank) for d in dims])


@lowering("aten::transpose", "aten::transpose_", "aten::swapaxes", "aten::swapdims",
          nnapi=(), notes="no operation: changes the layout", any_rank=True)
def transpose(cx: Converter, x: Arg, d0: int, d1: int) -> TensorValue:
    x = require_tensor(x)
    a, b = dim_index(d0, x.rank), dim_index(d1, x.rank)
    perm = list(range(x.rank))
    perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)


@lowering("aten::t", "aten::numpy_T", nnapi=(), notes="no operation: changes the layout",
          any_rank=True)
def t(cx: Converter, x: Arg) -> TensorValue:
    x = require_tensor(x)
    if x.rank < 2:
        return x
    return permute(x, list(reversed(range(x.rank))))


@lowering("aten::expand", "aten::expand_as", "aten::broadcast_to",
          nnapi=("TILE", "RESHAPE", "LOGICAL_AND"), any_rank=True)
def expand(cx: Converter, x: Arg, sizes: Sequence[SymInt] | TensorValue | torch.Tensor,
           *rest: Arg) -> TensorValue:
    x = require_tensor(x)
    if isinstance(sizes, TensorValue):
        wanted = list(sizes.shape)
    elif isinstance(sizes, torch.Tensor):
        wanted = list(tuple(sizes.shape))
    else:
        wanted = list(sizes)
    if len(wanted) < x.rank:
        raise Unsupported("expand to fewer dimensions")
    if len(wanted) > x.rank:
        x = with_rank(cx, x, len(wanted))
    target = tuple(x.shape[i] if not isinstance(s, Sym) and int(s) == -1 else s
                   for i, s in enumerate(wanted))
    multiples: list[SymInt] = []
    for have, want in zip(x.shape, target, strict=True):
        if isinstance(have, int) and have == 1:
            multiples.append(want)
        elif have == want or isinstance(want, Sym) or isinstance(have, Sym):
            multiples.append(1)
        else:
            raise Unsupported(f"cannot expand {list(x.shape)} to {wanted}")
    return tile(cx, x, multiples, target)


@lowering("aten::repeat", nnapi=("TILE", "RESHAPE"), any_rank=True)
def repeat(cx: Converter, x: Arg, repeats: Sequence[SymInt]) -> TensorValue:
    x = require_tensor(x)
    counts = list(repeats)
    if len(counts) < x.rank:
        raise Unsupported("repeat with fewer repeats than dimensions")
    if len(counts) > x.rank:
        x = with_rank(cx, x, len(counts))
    shape = tuple(d * r for d, r in zip(x.shape, counts, strict=True))
    return tile(cx, x, counts, shape)


@lowering("aten::cat", "aten::concat", "aten::concatenate", nnapi=("CONCATENATION",),
          any_rank=True)
def cat(cx: Converter, items: Sequence[Arg], dim: int = 0) -> TensorValue:
    return concatenate(cx, list(items), dim)


@lowering("aten::stack", nnapi=("RESHAPE", "CONCATENATION"), any_rank=True)
def stack(cx: Converter, items: Sequence[Arg], dim: int = 0) -> TensorValue | torch.Tensor:
    if not items:
        raise Unsupported("stack of an empty list")
    if any(isinstance(v, Sym) for v in items):
        raise Unsupported("stack of sizes that depend on a flexible input dimension")
    # numbers are 0-dim tensors here (traced sizes: torch.stack([img.shape[0], ...]))
    values = [torch.tensor(v) if isinstance(v, (int, float)) else v for v in items]
    if not any(isinstance(v, TensorValue) for v in values):
        constants = [v for v in values if isinstance(v, torch.Tensor)]
        if len(constants) != len(values):
            raise Unsupported("stack of values that are not tensors")
        return torch.stack(constants, static_int(dim, "dim"))
    tensors = [cx.tensor(v) if not isinstance(v, TensorValue) else v for v in values]
    rank = tensors[0].rank
    d = dim_index(dim, rank + 1)
    expanded = [aten_unsqueeze(cx, t, d) for t in tensors]
    return concatenate(cx, expanded, d)


@lowering("aten::roll", nnapi=("STRIDED_SLICE", "CONCATENATION"), any_rank=True,
          notes="per rolled dimension: its two parts swapped (two slices, one CONCATENATION)")
def roll(cx: Converter, x: Arg, shifts: SymInt | list[SymInt] | tuple[SymInt, ...],
         dims: int | list[int] | tuple[int, ...] = ()) -> TensorValue:
    x = require_tensor(x)
    amounts = list(shifts) if isinstance(shifts, (list, tuple)) else [shifts]
    rolled = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    if not rolled:  # roll of the flattened tensor
        flat = cx.reshape(x, (numel(x.shape),))
        return cx.reshape(roll(cx, flat, amounts, [0]), x.shape)
    if len(amounts) != len(rolled):
        raise Unsupported(f"roll with {len(amounts)} shifts for {len(rolled)} dimensions")
    out = x
    for shift, dim in zip(amounts, rolled, strict=True):
        d = dim_index(dim, x.rank)
        size = x.shape[d]
        cut = _roll_cut(cx, size, static_int(shift, "roll shift"))
        if not _is_static_zero(cut):  # out[i] = x[i - shift]: the part from ``cut`` first
            tail = strided_slice(cx, out, {d: (cut, size, 1)})
            head = strided_slice(cx, out, {d: (0, cut, 1)})
            out = concatenate(cx, [tail, head], d)
    return out


def _roll_cut(cx: Converter, size: SymInt, shift: int) -> SymInt:
    """Where a roll by ``shift`` cuts a dimension of ``size``: (-shift) mod size. For a
    flexible size the cut is ``-shift`` or ``size - shift``, which holds while ``|shift| <
    size`` (Swin's cyclic shift by half a window); the model checks that when loaded."""
    if not isinstance(size, Sym):
        return (-shift) % int(size)
    if shift == 0:
        return 0
    if not abs(shift) < size.hint:
        raise Unsupported(f"roll by {shift} of a flexible dimension of example size"
                          f" {size.hint}")
    cx.guard(sym_min(size - (abs(shift) + 1), 0), 0,
             f"roll by {shift} needs the rolled dimension larger than {abs(shift)}")
    return -shift if shift < 0 else size - shift


def _is_static_zero(v: SymInt) -> bool:
    return not isinstance(v, Sym) and int(v) == 0


@lowering("aten::flip", nnapi=("GATHER",), notes="a GATHER per flipped dimension")
def flip(cx: Converter, x: Arg, dims: Sequence[int]) -> TensorValue:
    x = require_tensor(x)
    out = x
    for dim in dims:
        d = dim_index(dim, x.rank)
        n = static_int(x.shape[d], "flipped dimension")
        out = gather_indices(cx, out, d, list(range(n - 1, -1, -1)))
    return out


@lowering("torch_nnapi::reshape_permute_reshape", nnapi=("CHANNEL_SHUFFLE",),
          notes="ShuffleNet's channel shuffle (a 5-D view, transpose, view back) as one"
          " CHANNEL_SHUFFLE; other such chains step by step (patterns.py)")
def reshape_permute_reshape(cx: Converter, x: Arg, *args: Arg) -> Arg:
    from . import lowering_for

    fused = cx.current_node
    parts: list[Sequence[Arg]] = []
    k = 0
    for step in fused.steps:
        n = len(step.inputs) - 1
        parts.append(args[k:k + n])
        k += n
    x = require_tensor(x)
    groups = _channel_shuffle_groups(x, fused.steps, parts)
    if groups is not None:
        return cx.emit(Op.CHANNEL_SHUFFLE, dict(input=x, num_groups=cx.i32(groups),
                                                axis=cx.i32(lay.axis(x.layout, 1))),
                       x.shape, x.dtype, x.layout, x.scale, x.zero_point)
    value: Arg = x
    try:
        for step, part in zip(fused.steps, parts, strict=False):
            cx.node = step
            step_lowering = lowering_for(step.kind)
            if step_lowering is None:
                raise ConverterBug(f"patterns.py fused {step.kind}, which has no lowering")
            value = step_lowering.fn(cx, value, *part)
    finally:
        cx.node = fused
    return value


def _channel_shuffle_groups(x: TensorValue, steps: Sequence[Node],
                            parts: Sequence[Sequence[Arg]]) -> int | None:
    """g when the chain is view(n, g, c/g, h, w) -> swap dims 1, 2 -> view(n, c, h, w)."""
    first, last = parts[0][0], parts[-1][0]
    transposed = steps[1].kind == "aten::transpose"
    dims = parts[1] if transposed else parts[1][0]
    if x.rank != 4 or not isinstance(x.shape[1], int) or not _is_sizes(first) \
            or not _is_sizes(last) or not _is_sizes(dims):
        return None
    split = resolve_shape(x, first)
    if len(split) != 5:
        return None
    groups, per_group = split[1], split[2]
    if not isinstance(groups, int) or not isinstance(per_group, int):
        return None
    if not (same_dim(split[0], x.shape[0]) and groups * per_group == x.shape[1]
            and same_dim(split[3], x.shape[2]) and same_dim(split[4], x.shape[3])):
        return None
    order = [int(d) % 5 for d in dims]
    swapped = sorted(order) == [1, 2] if transposed else order == [0, 2, 1, 3, 4]
    if not swapped:
        return None
    merged = resolve_shape(x, last)
    if len(merged) != 4 or not all(same_dim(a, b) for a, b in zip(merged, x.shape, strict=True)):
        return None
    return groups


def _is_sizes(v: Arg) -> TypeGuard[Sequence[SymInt]]:
    """Whether ``v`` is a list of sizes or dimensions (ints, or sizes known at load time)."""
    return isinstance(v, (list, tuple)) and all(isinstance(s, (int, Sym)) for s in v)
