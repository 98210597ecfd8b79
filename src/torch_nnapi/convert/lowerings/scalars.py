"""Shape arithmetic and TorchScript plumbing, folded at conversion time (no NNAPI ops).

``b, c, h, w = x.size()`` and ``x.view(b, -1)`` reach the graph as aten::size,
prim::NumToTensor, aten::Int, list construction and integer arithmetic. Sizes are known
here (plain ints) or depend on flexible input dimensions (:class:`Sym`, resolved at load
time), so all of this becomes values, never operations. Tensor-valued ops sharing a name
with number arithmetic (aten::add, aten::mul...) call ``number_binary``
(builder/arithmetic.py) from their own lowerings when both operands are numbers.
"""

from __future__ import annotations

import operator

import torch

from ..builder.arithmetic import as_number, number_binary
from ..builder.context import Converter
from ..builder.symbolic import Sym, sym_max, sym_min
from ..builder.values import TensorValue
from ..capture.graph import SCALAR_TYPES
from ..errors import Unsupported
from . import lowering

# ------------------------------------------------------------------------ containers


@lowering("prim::ListConstruct", notes="lists are folded at conversion time", any_rank=True)
def list_construct(cx: Converter, *items):
    return list(items)


@lowering("prim::TupleConstruct", any_rank=True)
def tuple_construct(cx: Converter, *items):
    return tuple(items)


@lowering("prim::ListUnpack", "prim::TupleUnpack", any_rank=True)
def unpack(cx: Converter, items):
    n = len(cx.current_node.outputs)
    if len(items) != n:
        raise Unsupported(f"unpacking {len(items)} values into {n}")
    return tuple(items)


@lowering("prim::TupleIndex", "aten::__getitem__", any_rank=True)
def getitem(cx: Converter, items, index):
    if isinstance(index, Sym) or isinstance(items, TensorValue):
        raise Unsupported("indexing needs a list and an index known at conversion time")
    if isinstance(items, dict):
        return items[index]
    return items[int(index)]


@lowering("aten::len", any_rank=True)
def length(cx: Converter, items):
    if isinstance(items, TensorValue):
        return items.shape[0]
    return len(items)


@lowering("aten::list", any_rank=True)
def list_copy(cx: Converter, items):
    return list(items)


# ------------------------------------------------------------------------ tensor metadata


@lowering("aten::size", notes="sizes are known at conversion time or resolved at load time",
          any_rank=True)
def size(cx: Converter, t, dim=None):
    if not isinstance(t, TensorValue):
        t = _as_shape_source(t)
    if dim is None:
        return list(t.shape)
    if isinstance(dim, Sym):
        raise Unsupported("size() of a dimension that is not known at conversion time")
    return t.shape[int(dim)]


@lowering("aten::dim", any_rank=True)
def dim(cx: Converter, t):
    return _as_shape_source(t).rank if not isinstance(t, TensorValue) else t.rank


@lowering("aten::numel", any_rank=True)
def numel(cx: Converter, t):
    t = t if isinstance(t, TensorValue) else _as_shape_source(t)
    n = 1
    for d in t.shape:
        n = n * d
    return n


@lowering("prim::dtype", any_rank=True)
def dtype(cx: Converter, t):
    name = t.dtype if isinstance(t, TensorValue) else str(t.dtype).replace("torch.", "")
    return SCALAR_TYPES[name]


@lowering("prim::device", any_rank=True)
def device(cx: Converter, t):
    return "cpu"


def _as_shape_source(t):
    if isinstance(t, torch.Tensor):
        return TensorValue(-1, tuple(t.shape), "float32", tuple(range(t.dim())))
    raise Unsupported(f"expected a tensor, got {type(t).__name__}")


# ------------------------------------------------------------------------ numbers


@lowering("prim::NumToTensor", "aten::Int", "aten::IntImplicit", "aten::ScalarImplicit",
          "aten::Float", "aten::FloatImplicit", "aten::Bool",
          notes="0-dim tensors holding sizes are kept as numbers")
def number_cast(cx: Converter, v):
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
def floordiv(cx: Converter, a, b):
    return number_binary("floordiv", a, b)


@lowering("aten::__xor__")
def logic(cx: Converter, a, b):
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        raise Unsupported("bitwise operations on tensors")
    return operator.xor(a, b)


@lowering("aten::__not__")
def logical_not(cx: Converter, a):
    return not a


@lowering("aten::__is__", "aten::__isnot__")
def identity_test(cx: Converter, a, b):
    same = (a is None and b is None) or a is b
    return same if cx.current_node.kind == "aten::__is__" else not same


@lowering("prim::max", "prim::min")
def extremum(cx: Converter, *args):
    items = list(args[0]) if len(args) == 1 else list(args)
    if any(isinstance(x, TensorValue) for x in items):
        raise Unsupported("prim::max/min of tensors")
    fn = sym_max if cx.current_node.kind == "prim::max" else sym_min
    result = items[0]
    for x in items[1:]:
        result = fn(result, x) if isinstance(result, Sym) or isinstance(x, Sym) else (
            max(result, x) if cx.current_node.kind == "prim::max" else min(result, x))
    return result


# ------------------------------------------------------------------------ plumbing


@lowering("prim::unchecked_cast", "aten::detach", "aten::contiguous", "aten::clone",
          "aten::lift_fresh", "aten::alias", "prim::data", "aten::detach_",
          notes="identity: no NNAPI operation", any_rank=True)
def identity(cx: Converter, x, *rest):
    return x


@lowering("aten::dropout", "aten::dropout_", "aten::feature_dropout", "aten::alpha_dropout",
          "aten::feature_alpha_dropout", notes="identity in eval mode", any_rank=True)
def dropout(cx: Converter, x, p=0.0, train=False):
    if train is True:
        raise Unsupported("dropout in training mode")
    return x


@lowering("aten::warn", notes="dropped", any_rank=True)
def warn(cx: Converter, *args):
    return None


@lowering("prim::RaiseException")
def raise_exception(cx: Converter, *args):
    raise Unsupported("the model raises an exception for the example inputs"
                      f" ({args[0] if args else ''})")


@lowering("prim::Uninitialized")
def uninitialized(cx: Converter):
    return None


@lowering("aten::format")
def format_string(cx: Converter, fmt, *args):
    return str(fmt)
