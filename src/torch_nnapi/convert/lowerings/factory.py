"""Tensor factories and fills: zeros/ones/full/empty and their ``_like`` and ``new_``
variants, ``_shape_as_tensor``, ``arange``, ``fill_``/``zero_`` and ``masked_fill``.

What a factory makes depends only on sizes and dtypes, which are known at conversion time:
the result is a constant (PyTorch computes it here), never an NNAPI operation; in-place
fills of constants are folded the same way by the driver. Sizes that depend on a flexible
input dimension make a one-element constant TILEd to the size at load time; a factory filled
region by region through slices (Swin's attention mask, fused by patterns.py) is a grid of
such TILEs, concatenated. ``empty`` is zeros (any value is right). ``masked_fill`` of a
model tensor is one SELECT.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import torch

from ..builder.arithmetic import select
from ..builder.common import dim_index, named_args, static_int, tile
from ..builder.context import Arg, Converter
from ..builder.slicing import concatenate, slice_bound
from ..builder.symbolic import Sym, SymInt, hint, sym_max, sym_min
from ..builder.values import TensorValue
from ..capture.graph import DTYPE_OF_CODE, FILLED_KIND
from ..errors import Unsupported
from . import lowering

Fill = bool | int | float  # the value a factory fills a tensor with
# Per region filled: the slices (dim, start, end, step) selecting it, and its value
Region = tuple[list[Sequence[Arg]], Fill]


def _dtype(code: Arg, default: str) -> torch.dtype:
    name = DTYPE_OF_CODE.get(static_int(code, "dtype"), default) if code is not None \
        else default
    dtype: torch.dtype = getattr(torch, name)
    return dtype


def _filled(cx: Converter, size: Arg, value: Arg, dtype: torch.dtype
            ) -> torch.Tensor | TensorValue:
    """A tensor of ``size`` holding ``value``: a constant, or (flexible sizes) a TILE."""
    fill = _fill_value(value)
    dims = _sizes(size)
    if not any(isinstance(d, Sym) for d in dims):
        return torch.full([int(d) for d in dims], fill, dtype=dtype)
    if len(dims) > 4:
        raise Unsupported("a flexible-size fill of rank above 4")
    if dtype == torch.bool:
        raise Unsupported("a bool fill of a flexible size (TILE takes no bool tensors)")
    one = cx.torch_constant(torch.full([1] * len(dims), fill, dtype=dtype))
    return tile(cx, one, dims, tuple(dims))


def _sizes(size: Arg) -> list[SymInt]:
    """A factory's size argument (one size or a list) as sizes known at conversion or load
    time."""
    items: list[Arg]
    if isinstance(size, (int, Sym)):
        items = [size]
    elif isinstance(size, (list, tuple, torch.Tensor)):
        items = list(size)
    else:
        items = [size]
    dims = [d for d in items if isinstance(d, (int, Sym)) and not isinstance(d, bool)]
    if len(dims) != len(items):
        raise Unsupported("a size computed by the model (only sizes known at conversion or"
                          " load time)")
    return dims


def _like_size(x: Arg) -> list[SymInt]:
    if isinstance(x, TensorValue):
        return list(x.shape)
    if isinstance(x, torch.Tensor):
        return list(x.shape)
    raise Unsupported(f"expected a tensor, got {type(x).__name__}")


def _own_dtype(x: Arg) -> str:
    if isinstance(x, TensorValue):
        return x.dtype
    if isinstance(x, torch.Tensor):
        return str(x.dtype).replace("torch.", "")
    raise Unsupported(f"expected a tensor, got {type(x).__name__}")


_FILLS = {"zeros": 0, "ones": 1, "empty": 0}


@lowering("aten::zeros", "aten::ones", "aten::full", "aten::empty", nnapi=("TILE",),
          notes="a constant; sizes of flexible dimensions TILE a constant at load time;"
          " empty is zeros")
def full(cx: Converter, *args: Arg) -> torch.Tensor | TensorValue:
    return _filled(cx, *_request(cx, args))


def _request(cx: Converter, args: Sequence[Arg]) -> tuple[Arg, Arg, torch.dtype]:
    """(size, fill value, dtype) of the current node, a ``zeros``/``ones``/``full``/
    ``empty`` or ``new_`` factory."""
    a = named_args(cx, args)
    name = cx.current_node.kind.split("::")[1].removeprefix("new_")
    value = a["fill_value"] if name == "full" else _FILLS[name]
    if "self" in a:  # new_*: the dtype of the tensor it is called on
        return a["size"], value, _dtype(a.get("dtype"), _own_dtype(a["self"]))
    default = "float32"
    if name == "full" and isinstance(value, (bool, int)) and not isinstance(value, float):
        default = "bool" if isinstance(value, bool) else "int64"
    return a["size"], value, _dtype(a.get("dtype"), default)


@lowering("aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like",
          nnapi=("TILE",), any_rank=True,
          notes="a constant of the input's size (a TILE for flexible sizes)")
def full_like(cx: Converter, *args: Arg) -> torch.Tensor | TensorValue:
    a = named_args(cx, args)
    name = cx.current_node.kind.split("::")[1][:-len("_like")]
    value = a["fill_value"] if name == "full" else _FILLS[name]
    x = a["self"]
    return _filled(cx, _like_size(x), value, _dtype(a.get("dtype"), _own_dtype(x)))


@lowering("aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::new_empty",
          nnapi=("TILE",), any_rank=True, notes="a constant (a TILE for flexible sizes)")
def new_full(cx: Converter, *args: Arg) -> torch.Tensor | TensorValue:
    return _filled(cx, *_request(cx, args))


@lowering(FILLED_KIND, nnapi=("TILE", "CONCATENATION"), any_rank=True,
          notes="a factory filled region by region through slices (Swin's attention mask,"
          " patterns.py): a constant; of flexible sizes, its regions TILEd and concatenated")
def filled_regions(cx: Converter, *args: Arg) -> torch.Tensor | TensorValue:
    fused = cx.current_node
    factory, k = fused.steps[0], len(fused.steps[0].inputs)
    cx.node = factory
    try:
        requested, value, dtype = _request(cx, args[:k])
    finally:
        cx.node = fused
    size = _sizes(requested)
    fills: list[Region] = []
    slices: list[Sequence[Arg]] = []
    for step in fused.steps[1:]:
        n = len(step.inputs) - 1
        step_args = args[k:k + n]
        k += n
        if step.kind == "aten::slice":
            slices.append(step_args)  # dim, start, end, step
        else:
            fills.append((slices, _fill_value(step_args[0])))
            slices = []
    if not any(isinstance(d, Sym) for d in size):
        out = torch.full([int(d) for d in size], _fill_value(value), dtype=dtype)
        for chain, fill in fills:
            view = out
            for dim, start, end, stride in chain:
                if any(isinstance(v, Sym) for v in (start, end, stride)):
                    raise Unsupported("a slice of a flexible size into a fixed-size tensor")
                view = torch.ops.aten.slice(view, dim, start, end, stride)
            view.fill_(fill)
        return out
    return _regions_at_load(cx, size, _fill_value(value), dtype, fills)


def _fill_value(value: Arg) -> Fill:
    if isinstance(value, TensorValue):
        raise Unsupported("a fill value computed by the model")
    fill = value.item() if isinstance(value, torch.Tensor) else value
    if not isinstance(fill, (bool, int, float)):
        raise Unsupported(f"a fill value of type {type(fill).__name__}")
    return fill


def _regions_at_load(cx: Converter, size: list[SymInt], value: Fill, dtype: torch.dtype,
                     fills: list[Region]) -> TensorValue:
    """A tensor of flexible ``size`` filled region by region: the slice bounds cut each
    dimension into segments (sizes known at load time), every cell of that grid holds one
    value, TILEd to its size, and the cells are concatenated. The bounds must keep the
    order they have for the example inputs; the model checks that when it is loaded."""
    if len(size) > 4:
        raise Unsupported("a flexible-size fill of rank above 4")
    regions: list[tuple[list[tuple[SymInt, SymInt]], Fill]] = []
    for chain, fill in fills:
        region: list[tuple[SymInt, SymInt]] = [(0, d) for d in size]
        for dim, start, end, step in chain:
            if isinstance(step, Sym) or static_int(step, "slice step") != 1:
                raise Unsupported("a fill through a slice with a step")
            d = dim_index(dim, len(size))
            lo, hi = region[d]
            s = slice_bound(_bound(start), hi - lo, 0)
            e = slice_bound(_bound(end), hi - lo, hi - lo)
            region[d] = (lo + s, lo + sym_max(e, s))
        regions.append((region, fill))
    where = f"the regions filled through slices at {cx.current_node.location}"
    segments = [_segments(cx, [0, n] + [b for r, _ in regions for b in r[d]], where)
                for d, n in enumerate(size)]

    def cell_value(cell: tuple[int, ...]) -> Fill:
        out = value
        for region, fill in regions:
            if all(hint(lo) <= hint(segments[d][i][0]) and hint(segments[d][i][1]) <= hint(hi)
                   for d, (i, (lo, hi)) in enumerate(zip(cell, region, strict=True))):
                out = fill
        return out

    def build(prefix: tuple[int, ...]) -> torch.Tensor | TensorValue:
        d = len(prefix)
        if d == len(size):
            shape = [segments[k][i][1] - segments[k][i][0] for k, i in enumerate(prefix)]
            return _filled(cx, shape, cell_value(prefix), dtype)
        parts = [build(prefix + (i,)) for i in range(len(segments[d]))]
        if len(parts) == 1:
            return parts[0]
        constants = [p for p in parts if isinstance(p, torch.Tensor)]
        if len(constants) == len(parts):
            return torch.cat(constants, d)
        return concatenate(cx, parts, d)

    return cx.tensor(build(()))


def _bound(v: Arg) -> SymInt | None:
    """A slice bound: None, a number or a size known at load time."""
    return v if v is None or isinstance(v, Sym) else static_int(v, "slice bound")


def _segments(cx: Converter, bounds: list[SymInt], where: str) -> list[tuple[SymInt, SymInt]]:
    """The non-empty [start, end) pieces ``bounds`` cut a dimension into, in the order of
    their example values; load-time guards keep bounds equal or ordered as they are."""
    ordered: list[SymInt] = []
    for b in sorted(bounds, key=hint):
        if ordered and hint(ordered[-1]) == hint(b):
            cx.guard(b - ordered[-1], 0, f"{where} change at this size")
            if isinstance(ordered[-1], Sym) and not isinstance(b, Sym):
                ordered[-1] = b
        else:
            ordered.append(b)
    for a, b in zip(ordered, ordered[1:], strict=False):
        cx.guard(sym_min(b - a, 1), 1, f"{where} would be empty or overlap at this size")
    return list(zip(ordered, ordered[1:], strict=False))


@lowering("aten::_shape_as_tensor", any_rank=True, notes="a constant (static sizes)")
def shape_as_tensor(cx: Converter, x: Arg) -> torch.Tensor:
    size = _like_size(x)
    if any(isinstance(d, Sym) for d in size):
        raise Unsupported("the shape of a flexible input as a tensor")
    return torch.tensor([int(d) for d in size], dtype=torch.int64)


@lowering("aten::arange", notes="a constant (its bounds must be known at conversion time)")
def arange(cx: Converter, *args: Arg) -> NoReturn:
    a = named_args(cx, args)
    bounds = [a.get(k) for k in ("start", "end", "step") if a.get(k) is not None]
    if any(isinstance(b, Sym) for b in bounds):
        raise Unsupported("arange over a flexible length (NNAPI cannot make a sequence)")
    raise Unsupported("arange whose bounds are computed by the model")


@lowering("aten::fill_", "aten::zero_", nnapi=("TILE",), any_rank=True,
          notes="of a model tensor: a constant of its size")
def fill_(cx: Converter, x: Arg, value: Arg = 0) -> torch.Tensor | TensorValue:
    if isinstance(value, TensorValue):
        raise Unsupported("fill_ with a value computed by the model")
    return _filled(cx, _like_size(x), value, getattr(torch, _own_dtype(x)))


@lowering("aten::masked_fill", "aten::masked_fill_", nnapi=("SELECT", "TILE"), any_rank=True,
          notes="SELECT(mask, value, x); operands broadcast by TILE where needed")
def masked_fill(cx: Converter, x: Arg, mask: Arg, value: Arg) -> TensorValue:
    if not isinstance(x, TensorValue) and not isinstance(mask, TensorValue):
        raise Unsupported("masked_fill of constants with a value computed by the model")
    fill = value.item() if isinstance(value, torch.Tensor) and value.dim() == 0 else value
    return select(cx, mask, fill, x, dtype=_own_dtype(x))

