"""Shape arithmetic and TorchScript plumbing, folded at conversion time (no NNAPI ops).

``b, c, h, w = x.size()`` and ``x.view(b, -1)`` reach the graph as aten::size,
prim::NumToTensor, aten::Int, list construction and integer arithmetic. Sizes are known
here (plain ints) or depend on flexible input dimensions (:class:`Sym`, resolved at load
time), so all of this becomes values, never operations. Tensor-valued ops sharing a name
with number arithmetic (aten::add, aten::mul...) call ``number_binary``
(builder/arithmetic.py) from their own lowerings when both operands are numbers.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized
from typing import NoReturn

import torch

from ..builder.arithmetic import as_number, number_binary
from ..builder.context import Arg, Converter, Number
from ..builder.symbolic import Sym, SymInt, sym_max, sym_min
from ..builder.values import TensorValue
from ..capture.graph import SCALAR_TYPES
from ..errors import Unsupported
from . import lowering

# ------------------------------------------------------------------------ containers


@lowering("prim::ListConstruct", notes="lists are folded at conversion time", any_rank=True)
def list_construct(cx: Converter, *items: Arg) -> list[Arg]:
    return list(items)


@lowering("prim::TupleConstruct", any_rank=True)
def tuple_construct(cx: Converter, *items: Arg) -> tuple[Arg, ...]:
    return tuple(items)


@lowering("prim::ListUnpack", "prim::TupleUnpack", any_rank=True)
def unpack(cx: Converter, items: Sequence[Arg]) -> tuple[Arg, ...]:
    n = len(cx.current_node.outputs)
    if len(items) != n:
        raise Unsupported(f"unpacking {len(items)} values into {n}")
    return tuple(items)


@lowering("prim::TupleIndex", "aten::__getitem__", any_rank=True)
def getitem(cx: Converter, items: Sequence[Arg] | dict[object, Arg] | TensorValue,
            index: SymInt | str) -> Arg:
    if isinstance(index, Sym) or isinstance(items, TensorValue):
        raise Unsupported("indexing needs a list and an index known at conversion time")
    if isinstance(items, dict):
        return items[index]
    return items[int(index)]


@lowering("aten::len", any_rank=True)
def length(cx: Converter, items: TensorValue | Sized) -> SymInt:
    if isinstance(items, TensorValue):
        return items.shape[0]
    return len(items)


@lowering("aten::list", any_rank=True)
def list_copy(cx: Converter, items: Sequence[Arg]) -> list[Arg]:
    return list(items)


# ------------------------------------------------------------------------ tensor metadata


@lowering("aten::size", notes="sizes are known at conversion time or resolved at load time",
          any_rank=True)
def size(cx: Converter, t: TensorValue | torch.Tensor, dim: SymInt | None = None
         ) -> SymInt | list[SymInt]:
    if not isinstance(t, TensorValue):
        t = _as_shape_source(t)
    if dim is None:
        return list(t.shape)
    if isinstance(dim, Sym):
        raise Unsupported("size() of a dimension that is not known at conversion time")
    return t.shape[int(dim)]


@lowering("aten::dim", any_rank=True)
def dim(cx: Converter, t: TensorValue | torch.Tensor) -> int:
    return _as_shape_source(t).rank if not isinstance(t, TensorValue) else t.rank


@lowering("aten::numel", any_rank=True)
def numel(cx: Converter, t: TensorValue | torch.Tensor) -> SymInt:
    t = t if isinstance(t, TensorValue) else _as_shape_source(t)
    n: SymInt = 1
    for d in t.shape:
        n = n * d
    return n


@lowering("prim::dtype", any_rank=True)
def dtype(cx: Converter, t: TensorValue | torch.Tensor) -> int:
    name = t.dtype if isinstance(t, TensorValue) else str(t.dtype).replace("torch.", "")
    return SCALAR_TYPES[name]


@lowering("prim::device", any_rank=True)
def device(cx: Converter, t: Arg) -> str:
    return "cpu"


def _as_shape_source(t: Arg) -> TensorValue:
    if isinstance(t, torch.Tensor):
        return TensorValue(-1, tuple(t.shape), "float32", tuple(range(t.dim())))
    raise Unsupported(f"expected a tensor, got {type(t).__name__}")


# ------------------------------------------------------------------------ numbers


@lowering("prim::NumToTensor", "aten::Int", "aten::IntImplicit", "aten::ScalarImplicit",
          "aten::Float", "aten::FloatImplicit", "aten::Bool",
          notes="0-dim tensors holding sizes are kept as numbers")
def number_cast(cx: Converter, v: Number | torch.Tensor | TensorValue
                ) -> Number | torch.Tensor:
    v = as_number(v)
    if isinstance(v, TensorValue):
        raise Unsupported("a tensor computed by the model cannot become a Python number")
    kind = cx.current_node.kind
    if isinstance(v, Sym):
        if kind in ("aten::Float", "aten::FloatImplicit"):
            raise Unsupported("float() of a flexible dimension")
        return v
    if kind in ("aten::Int", "aten::IntImplicit"):
        return int(v)
    if kind in ("aten::Float", "aten::FloatImplicit"):
        return float(v)
    if kind == "aten::Bool":
        return bool(v)
    return v


@lowering("aten::floordiv", "aten::__floordiv__")
def floordiv(cx: Converter, a: Arg, b: Arg) -> Number:
    return number_binary("floordiv", a, b)


@lowering("aten::__xor__")
def logic(cx: Converter, a: int | TensorValue, b: int | TensorValue) -> int:
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        raise Unsupported("bitwise operations on tensors")
    return a ^ b


@lowering("aten::__not__")
def logical_not(cx: Converter, a: Arg) -> bool:
    return not a


@lowering("aten::__is__", "aten::__isnot__")
def identity_test(cx: Converter, a: Arg, b: Arg) -> bool:
    same = (a is None and b is None) or a is b
    return same if cx.current_node.kind == "aten::__is__" else not same


@lowering("prim::max", "prim::min")
def extremum(cx: Converter, *args: SymInt | float | TensorValue
             | Sequence[SymInt | float | TensorValue]) -> SymInt | float:
    first = args[0]
    items = list(first) if len(args) == 1 and isinstance(first, Sequence) else list(args)
    numbers = [x for x in items if not isinstance(x, (TensorValue, Sequence))]
    if len(numbers) != len(items):
        raise Unsupported("prim::max/min of tensors")
    fn = sym_max if cx.current_node.kind == "prim::max" else sym_min
    result = numbers[0]
    for x in numbers[1:]:
        if isinstance(result, Sym) or isinstance(x, Sym):
            if isinstance(result, float) or isinstance(x, float):
                raise Unsupported("prim::max/min of a flexible dimension and a float")
            result = fn(result, x)
        else:
            result = max(result, x) if cx.current_node.kind == "prim::max" else min(result, x)
    return result


# ------------------------------------------------------------------------ plumbing


@lowering("prim::unchecked_cast", "aten::detach", "aten::contiguous", "aten::clone",
          "aten::lift_fresh", "aten::alias", "prim::data", "aten::detach_",
          notes="identity: no NNAPI operation", any_rank=True)
def identity(cx: Converter, x: Arg, *rest: Arg) -> Arg:
    return x


@lowering("aten::dropout", "aten::dropout_", "aten::feature_dropout", "aten::alpha_dropout",
          "aten::feature_alpha_dropout", notes="identity in eval mode", any_rank=True)
def dropout(cx: Converter, x: Arg, p: float = 0.0, train: bool = False) -> Arg:
    if train is True:
        raise Unsupported("dropout in training mode")
    return x


@lowering("aten::warn", notes="dropped", any_rank=True)
def warn(cx: Converter, *args: Arg) -> None:
    return None


@lowering("prim::RaiseException")
def raise_exception(cx: Converter, *args: Arg) -> NoReturn:
    raise Unsupported("the model raises an exception for the example inputs"
                      f" ({args[0] if args else ''})")


@lowering("prim::Uninitialized")
def uninitialized(cx: Converter) -> None:
    return None


@lowering("aten::format")
def format_string(cx: Converter, fmt: Arg, *args: Arg) -> str:
    return str(fmt)
