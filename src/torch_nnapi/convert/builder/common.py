"""Helpers shared by lowering families: argument checks, dtype promotion, broadcasting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, TypeVar

import torch

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from ..errors import Unsupported
from . import layout as lay
from .context import Arg, Converter, is_number
from .merged import fit, is_one, regroup, with_rank
from .symbolic import Sym, SymInt, hint, hints
from .values import TensorValue, dtype_name

T = TypeVar("T")
# PyTorch's int[] arguments (strides, paddings, kernel sizes), which also take one int
Ints = int | Sequence[int]

_DUMMY_DTYPES = {"float32": torch.float32, "float16": torch.float16, "int32": torch.int32,
                 "int64": torch.int64, "bool": torch.bool}


def static_int(v: Arg, what: str) -> int:
    """An int known at conversion time (not a flexible size), else Unsupported."""
    if isinstance(v, Sym):
        raise Unsupported(f"{what} depends on a flexible input dimension")
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return int(v.item())
    if not isinstance(v, (int, bool)):
        raise Unsupported(f"{what} must be a constant integer, got {type(v).__name__}")
    return int(v)


def static_ints(values: int | Iterable[Arg], what: str, length: int | None = None
                ) -> list[int]:
    """Integers known at conversion time: ``values``, or one int repeated to ``length``."""
    items = [values] * (length or 1) if isinstance(values, int) else values
    ints = [static_int(v, what) for v in items]
    if length is not None and len(ints) == 1 and length > 1:
        ints = ints * length
    if length is not None and len(ints) != length:
        raise Unsupported(f"{what} needs {length} values, got {ints}")
    return ints


def constant_float(v: Arg, what: str) -> float:
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return float(v.item())
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise Unsupported(f"{what} must be a constant number")


def dim_index(dim: Arg, rank: int, what: str = "dim") -> int:
    d = static_int(dim, what)
    if not -max(rank, 1) <= d < max(rank, 1):
        raise Unsupported(f"{what} {d} is out of range for rank {rank}")
    return d % rank if rank else 0


def _dummy(v: Arg) -> torch.Tensor | bool | int | float:
    if isinstance(v, TensorValue):
        if v.is_quantized:
            raise Unsupported("float arithmetic mixing quantized tensors (dequantize first)")
        return torch.empty((1,) * v.rank if v.rank else (), dtype=_DUMMY_DTYPES[v.dtype])
    if isinstance(v, torch.Tensor):
        return torch.empty(tuple(1 for _ in v.shape), dtype=v.dtype)
    if isinstance(v, Sym):
        return 1
    if isinstance(v, (bool, int, float)):
        return v
    raise Unsupported(f"expected a tensor or a number, got {type(v).__name__}")


def result_dtype(*values: Arg) -> str:
    """PyTorch's type promotion for these operands."""
    dummies = [_dummy(v) for v in values]
    result = dummies[0]
    if len(dummies) == 1:
        return dtype_name(result.dtype) if isinstance(result, torch.Tensor) else (
            "float32" if isinstance(result, float) else "int64")
    dtype = torch.result_type(dummies[0], dummies[1])
    for d in dummies[2:]:
        dtype = torch.result_type(torch.empty((1,), dtype=dtype), d)
    return dtype_name(dtype)


def broadcast_shapes(*shapes: Sequence[SymInt]) -> tuple[SymInt, ...]:
    """PyTorch's broadcast of ``shapes``. A flexible dimension meeting a fixed size other
    than 1 (ViT's position embedding added to its patches) would only broadcast at the
    example size: such a model runs at one input size, which is refused here rather than
    when the converted model is loaded at another size."""
    rank = max(len(s) for s in shapes)
    out: list[SymInt] = []
    for i in range(rank):
        size: SymInt = 1
        for s in shapes:
            k = i - (rank - len(s))
            if k < 0:
                continue
            d = s[k]
            if isinstance(d, Sym):
                if isinstance(size, int) and size != 1:
                    raise _one_size_only(d, size)
                if isinstance(size, int):
                    size = d
            elif d != 1:
                if isinstance(size, Sym):
                    raise _one_size_only(size, d)
                if size not in (1, d):
                    raise Unsupported(f"shapes {[list(x) for x in shapes]} do not broadcast")
                size = d
        out.append(size)
    return tuple(out)


def _one_size_only(flexible: Sym, fixed: int) -> Unsupported:
    return Unsupported(f"a flexible dimension (size {flexible.hint} here) meets the fixed size"
                       f" {fixed} in a broadcast, so this model runs at one input size only"
                       " (e.g. a position embedding sized for it): convert it without"
                       " flexible dimensions there")


def shape_of(v: Arg) -> tuple[SymInt, ...]:
    if isinstance(v, TensorValue):
        return v.shape
    if isinstance(v, torch.Tensor):
        return tuple(v.shape)
    return ()


def choose_layout(values: Iterable[Arg], rank: int) -> lay.Layout:
    """The layout a broadcast operation works in: that of a full-rank model tensor,
    channels-last if any is, so NHWC feature maps stay NHWC."""
    layouts = [v.layout for v in values if isinstance(v, TensorValue) and v.rank == rank]
    for layout in layouts:
        if not lay.is_identity(layout):
            return layout
    return lay.identity(rank)


def align(cx: Converter, v: Arg, rank: int, layout: lay.Layout, dtype: str) -> TensorValue:
    """``v`` as an operand of a broadcast NNAPI operation of ``rank`` working in ``layout``."""
    if isinstance(v, TensorValue):
        if v.dtype != dtype and not v.is_quantized:
            v = cx.cast(v, dtype)
        if v.rank < rank and not lay.is_identity(layout):
            v = cx.reshape(v, (1,) * (rank - v.rank) + tuple(v.shape))
        if v.rank == rank:
            v = cx.to_layout(v, layout)
        return v
    like = TensorValue(-1, (1,) * rank, dtype, layout)
    if isinstance(v, torch.Tensor):
        if v.dim() > rank:
            raise Unsupported("a constant of higher rank than the result")
        return cx.tensor(v, like=like, dtype=dtype)
    if is_number(v):
        return cx.tensor(v, like=like, dtype=dtype)
    raise Unsupported(f"expected a tensor or a number, got {type(v).__name__}")


class Broadcast(NamedTuple):
    """Operands ready for an NNAPI broadcast operation, and its output's shape, layout and
    merged dimensions (TensorValue.groups)."""

    operands: list[TensorValue]
    shape: tuple[SymInt, ...]
    layout: lay.Layout
    groups: lay.Groups


def broadcast(cx: Converter, values: Sequence[Arg], dtype: str | Sequence[str]) -> Broadcast:
    """Brings ``values`` (model tensors, constants, numbers) to a common shape and layout.
    ``dtype`` is one dtype for all operands or a list with one per operand. Tensors of
    rank above 4 work in NNAPI dimensions that merge runs of dimensions each operand
    either has in full or broadcasts as a whole."""
    shapes = [shape_of(v) for v in values]
    out_shape = broadcast_shapes(*shapes)
    rank = len(out_shape)
    layout = choose_layout(values, rank)
    dtypes = [dtype] * len(values) if isinstance(dtype, str) else list(dtype)
    if rank <= 4 and not any(isinstance(v, TensorValue) and v.groups for v in values):
        aligned = [align(cx, v, rank, layout, d) for v, d in zip(values, dtypes, strict=False)]
        return Broadcast(aligned, out_shape, layout, ())
    classes = [None if is_one(n) else tuple(not is_one(_aligned(s, rank)[d]) for s in shapes)
               for d, n in enumerate(out_shape)]
    stored = [classes[d] for d in layout]
    groups = lay.coarsest_groups(stored)
    for v in values:  # keep a full-size operand's own merging when it fits
        if isinstance(v, TensorValue) and v.rank == rank and v.layout == layout and \
                v.groups and lay.groups_respect(v.groups, stored) and len(v.nnapi_shape) <= 4:
            groups = v.groups
            break
    if len(groups) > 4:
        # full and broadcast dimensions alternate too often: repeat the smaller operands
        values = [_expanded(cx, v, out_shape) for v in values]
        return broadcast(cx, values, dtype)
    groups = lay.normalize_groups(groups, rank)
    operands = [_align_merged(cx, v, rank, layout, groups, d)
                for v, d in zip(values, dtypes, strict=False)]
    return Broadcast(operands, out_shape, layout, groups)


def _expanded(cx: Converter, v: Arg, shape: tuple[SymInt, ...]) -> Arg:
    """``v`` repeated to ``shape`` (TILE for model tensors, at conversion for constants)."""
    if isinstance(v, TensorValue):
        return _tiled(cx, v, shape)
    if isinstance(v, torch.Tensor):
        if any(isinstance(d, Sym) for d in shape):
            raise Unsupported("broadcasting a constant over flexible dimensions of a tensor"
                              " of rank above 4")
        return v.expand(*hints(shape)).contiguous()
    return v


def _tiled(cx: Converter, v: TensorValue, shape: tuple[SymInt, ...]) -> TensorValue:
    """Model tensor ``v`` repeated to ``shape`` (a TILE)."""
    v = with_rank(cx, v, len(shape))
    multiples = [want if is_one(have) else 1 for have, want in zip(v.shape, shape, strict=False)]
    return tile(cx, v, multiples, shape)


def tile(cx: Converter, x: TensorValue, multiples: Sequence[SymInt],
         shape: Sequence[SymInt]) -> TensorValue:
    """TILE of ``x`` by ``multiples`` (per PyTorch dimension) to ``shape``."""
    if all(not isinstance(m, Sym) and int(m) == 1 for m in multiples):
        return x
    if x.dtype == "bool":
        return _repeated_bools(cx, x, shape)
    if x.groups or x.rank > 4:
        # merged dimensions either all repeat (then all have size 1) or none does
        repeated = [not (isinstance(m, int) and m == 1) for m in multiples]
        try:
            x = fit(cx, x, ["tiled" if r else None if is_one(n) else "kept"
                           for r, n in zip(repeated, x.shape, strict=False)])
        except Unsupported:  # too many alternations: one repeated dimension at a time
            for d in [d for d, r in enumerate(repeated) if r]:
                step = [m if i == d else 1 for i, m in enumerate(multiples)]
                x = tile(cx, x, step, tuple(n if i == d else x.shape[i]
                                            for i, n in enumerate(shape)))
            return x
    nnapi_multiples = []
    for run in lay.group_runs(x.groups, x.rank):
        product: SymInt = 1
        for position in run:
            product = product * multiples[x.layout[position]]
        nnapi_multiples.append(product)
    return cx.emit(Op.TILE, dict(input=x, multiples=cx.int_vector(nnapi_multiples)), shape,
                   x.dtype, x.layout, x.scale, x.zero_point, x.groups)


def _repeated_bools(cx: Converter, x: TensorValue, shape: Sequence[SymInt]) -> TensorValue:
    """TILE takes no bool tensors: a LOGICAL_AND with a constant true of ``shape``
    broadcasts ``x`` to it (an attention mask expanded over the queries)."""
    if any(isinstance(d, Sym) for d in shape):
        raise Unsupported("repeating a bool tensor over flexible dimensions")
    true = torch.ones(hints(tuple(shape)), dtype=torch.bool)
    (a, b), out_shape, layout, groups = broadcast(cx, [x, true], "bool")
    return cx.emit(Op.LOGICAL_AND, dict(input0=a, input1=b), out_shape, "bool", layout,
                   groups=groups)


def _aligned(shape: Sequence[T], rank: int) -> tuple[T | int, ...]:
    """``shape`` with 1s prepended up to ``rank`` dimensions."""
    return (1,) * (rank - len(shape)) + tuple(shape)


def _align_merged(cx: Converter, v: Arg, rank: int, layout: lay.Layout, groups: lay.Groups,
                  dtype: str) -> TensorValue:
    """``v`` stored in ``layout`` in an operand whose dimensions merge ``groups``."""
    if isinstance(v, TensorValue):
        if v.dtype != dtype and not v.is_quantized:
            v = cx.cast(v, dtype)
        v = cx.to_layout(with_rank(cx, v, rank), layout)
        return regroup(cx, v, groups)
    if isinstance(v, torch.Tensor):
        if v.dim() > rank:
            raise Unsupported("a constant of higher rank than the result")
        array = v.detach().reshape(_aligned(tuple(v.shape), rank))
        return cx.torch_constant(array, dtype, layout, groups)
    if is_number(v):
        return cx.tensor(v, like=TensorValue(-1, (1,) * rank, dtype, layout, groups=groups),
                         dtype=dtype)
    raise Unsupported(f"expected a tensor or a number, got {type(v).__name__}")


def broadcast_operands(cx: Converter, values: Sequence[Arg], dtype: str | Sequence[str]
                       ) -> tuple[list[TensorValue], tuple[SymInt, ...], lay.Layout]:
    """Operands ready for an NNAPI broadcast operation, and the output shape and layout,
    for operations on tensors of rank at most 4 (see :func:`broadcast`)."""
    operands, shape, layout, groups = broadcast(cx, values, dtype)
    if groups:
        raise Unsupported(f"NNAPI broadcasts tensors of rank at most 4, got shape"
                          f" {[hint(d) for d in shape]}")
    return operands, shape, layout


def named_args(cx: Converter, args: Sequence[Arg]) -> dict[str, Arg]:
    """The node's inputs by the names of its schema's arguments (defaults filled in), for
    ops whose overloads take different argument lists (``arange(end)``,
    ``arange(start, end, step)``)."""
    if cx.node is None or not cx.node.schema:
        raise Unsupported("the operator's schema is unknown")
    schema = torch._C.parse_schema(cx.node.schema)
    named = {arg.name: value for arg, value in zip(schema.arguments, args, strict=False)}
    for arg in schema.arguments[len(args):]:
        if arg.has_default_value():
            named[arg.name] = arg.default_value
    return named


def expand_to(cx: Converter, v: Arg, shape: tuple[SymInt, ...], dtype: str) -> TensorValue:
    """``v`` (model tensor, constant or number) as a model operand of exactly ``shape``:
    what NNAPI operations without broadcasting (SELECT) need."""
    if isinstance(v, TensorValue):
        if v.dtype != dtype:
            v = cx.cast(v, dtype)
        return _tiled(cx, v, shape)
    if isinstance(v, torch.Tensor) or is_number(v):
        array = torch.as_tensor(v)
        array = array.reshape(_aligned(tuple(array.shape), len(shape)))
        if not any(isinstance(d, Sym) for d in shape):
            return cx.torch_constant(array.expand(*hints(shape)).contiguous(), dtype)
        return _tiled(cx, cx.torch_constant(array, dtype), shape)
    raise Unsupported(f"expected a tensor or a number, got {type(v).__name__}")


def require_tensor(v: Arg, what: str = "input") -> TensorValue:
    if not isinstance(v, TensorValue):
        raise Unsupported(f"{what} must be a tensor computed by the model")
    return v


def fuse_none() -> int:
    return int(FuseCode.NONE)
