"""Element-wise binary arithmetic, comparisons and selection, with PyTorch broadcasting.

Operands are brought to a common rank and layout (``builder/common.broadcast``): model
tensors keep channels-last when they have it, constants are reshaped and permuted at
conversion time. Number-only forms (shape arithmetic) are folded, not emitted. The
operations themselves are building blocks in ``builder/arithmetic.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import (
    arithmetic,
    both_numbers,
    compare_numbers,
    extremum,
    floor_divide,
    number_binary,
    power,
    scaled,
    select,
)
from ..builder.common import broadcast, constant_float, result_dtype
from ..builder.context import Arg, Converter
from ..builder.values import TensorValue
from ..capture.graph import DTYPE_OF_CODE
from ..errors import Unsupported
from . import lowering


def _scaled(cx: Converter, b: Arg, alpha: Arg) -> Arg:
    """``alpha * b`` for add/sub's alpha argument."""
    if alpha is None or (not isinstance(alpha, TensorValue) and constant_float(alpha, "alpha")
                         == 1.0):
        return b
    return scaled(cx, b, constant_float(alpha, "alpha"))


@lowering("aten::add", "aten::add_", nnapi=("ADD", "MUL"), any_rank=True,
          notes="alpha != 1 adds a MUL; number operands are folded")
def add(cx: Converter, a: Arg, b: Arg, alpha: Arg = None) -> Arg:
    if both_numbers(a, b):
        return number_binary("add", a, b)
    if isinstance(a, (str, list)):
        raise Unsupported("list or string concatenation")
    return arithmetic(cx, Op.ADD, a, _scaled(cx, b, alpha))


@lowering("aten::sub", "aten::sub_", nnapi=("SUB", "MUL"), any_rank=True)
def sub(cx: Converter, a: Arg, b: Arg, alpha: Arg = None) -> Arg:
    if both_numbers(a, b):
        return number_binary("sub", a, b)
    return arithmetic(cx, Op.SUB, a, _scaled(cx, b, alpha))


@lowering("aten::rsub", nnapi=("SUB", "MUL"), any_rank=True, notes="b - alpha * a")
def rsub(cx: Converter, a: Arg, b: Arg, alpha: Arg = None) -> Arg:
    if both_numbers(a, b):
        return number_binary("sub", b, a)
    return arithmetic(cx, Op.SUB, b, _scaled(cx, a, alpha))


@lowering("aten::mul", "aten::mul_", nnapi=("MUL",), any_rank=True)
def mul(cx: Converter, a: Arg, b: Arg) -> Arg:
    if both_numbers(a, b):
        return number_binary("mul", a, b)
    return arithmetic(cx, Op.MUL, a, b)


@lowering("aten::div", "aten::div_", "aten::true_divide", "aten::true_divide_",
          nnapi=("DIV", "FLOOR"), any_rank=True,
          notes="rounding_mode='floor' adds FLOOR; 'trunc' is not supported")
def div(cx: Converter, a: Arg, b: Arg, rounding_mode: str | None = None) -> Arg:
    if both_numbers(a, b):
        if rounding_mode == "floor":
            return number_binary("floordiv", a, b)
        return number_binary("div", a, b)
    if rounding_mode not in (None, "floor"):
        raise Unsupported(f"division with rounding_mode={rounding_mode!r}")
    if rounding_mode == "floor":
        return floor_divide(cx, a, b)
    return arithmetic(cx, Op.DIV, a, b)


@lowering("aten::floor_divide", "aten::floor_divide_", nnapi=("DIV", "FLOOR"), any_rank=True,
          notes="integers: one DIV (feature level 4)")
def floor_divide_(cx: Converter, a: Arg, b: Arg) -> Arg:
    if both_numbers(a, b):
        return number_binary("floordiv", a, b)
    return floor_divide(cx, a, b)


@lowering("aten::remainder", nnapi=("DIV", "FLOOR", "MUL", "SUB"), any_rank=True,
          notes="a - floor(a / b) * b")
def remainder(cx: Converter, a: Arg, b: Arg) -> Arg:
    if both_numbers(a, b):
        return number_binary("remainder", a, b)
    q = floor_divide(cx, a, b)
    return arithmetic(cx, Op.SUB, a, arithmetic(cx, Op.MUL, q, b))


@lowering("aten::minimum", "aten::fmin", nnapi=("MINIMUM",), any_rank=True)
def minimum(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    return extremum(cx, Op.MINIMUM, a, b)


@lowering("aten::maximum", "aten::fmax", nnapi=("MAXIMUM",), any_rank=True)
def maximum(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    return extremum(cx, Op.MAXIMUM, a, b)


_COMPARISONS = {"aten::eq": Op.EQUAL, "aten::ne": Op.NOT_EQUAL, "aten::lt": Op.LESS,
                "aten::le": Op.LESS_EQUAL, "aten::gt": Op.GREATER,
                "aten::ge": Op.GREATER_EQUAL}


@lowering(*_COMPARISONS, nnapi=tuple(op.name for op in _COMPARISONS.values()), any_rank=True,
          notes="number comparisons are folded")
def compare(cx: Converter, a: Arg, b: Arg) -> bool | TensorValue:
    kind = cx.current_node.kind
    if both_numbers(a, b):
        return compare_numbers(kind, a, b)
    if not isinstance(a, TensorValue) and not isinstance(b, TensorValue):
        raise Unsupported("comparison of values that are not numbers or model tensors")
    dtype = result_dtype(a, b)
    (ta, tb), shape, layout, groups = broadcast(cx, [a, b], dtype)
    return cx.emit(_COMPARISONS[kind], dict(input0=ta, input1=tb), shape, "bool", layout,
                   groups=groups)


@lowering("aten::where", nnapi=("SELECT", "TILE"), any_rank=True,
          notes="where(cond, a, b); operands broadcast by TILE (SELECT needs equal shapes)")
def where(cx: Converter, condition: Arg, a: Arg = None, b: Arg = None) -> TensorValue:
    if a is None:
        raise Unsupported("where(condition) (nonzero indices have a data-dependent shape)")
    return select(cx, condition, a, b, result_dtype(a, b))


_AND = ("aten::logical_and", "aten::__and__", "aten::bitwise_and")
_OR = ("aten::logical_or", "aten::__or__", "aten::bitwise_or")


@lowering(*_AND, *_OR, nnapi=("LOGICAL_AND", "LOGICAL_OR"), any_rank=True,
          notes="bool tensors (& and | of bools too); numbers are folded")
def logical_binary(cx: Converter, a: Arg, b: Arg) -> int | torch.Tensor | TensorValue:
    is_and = cx.current_node.kind in _AND
    if not isinstance(a, TensorValue) and not isinstance(b, TensorValue):
        return _bitwise(a, b, is_and)
    if any(isinstance(v, TensorValue) and v.dtype != "bool" for v in (a, b)) \
            and cx.current_node.kind not in ("aten::logical_and", "aten::logical_or"):
        raise Unsupported("bitwise operations on integer tensors")
    op = Op.LOGICAL_AND if is_and else Op.LOGICAL_OR
    (ta, tb), shape, layout, groups = broadcast(cx, [a, b], "bool")
    return cx.emit(op, dict(input0=ta, input1=tb), shape, "bool", layout, groups=groups)


def _bitwise(a: Arg, b: Arg, is_and: bool) -> int | torch.Tensor:
    """``a & b`` or ``a | b`` of numbers (folded)."""
    if isinstance(a, (int, torch.Tensor)) and isinstance(b, (int, torch.Tensor)):
        return (a & b) if is_and else (a | b)
    raise Unsupported(f"& or | of a {type(a).__name__} and a {type(b).__name__}")


@lowering("aten::logical_not", "aten::bitwise_not", nnapi=("LOGICAL_NOT",), any_rank=True,
          notes="bool tensors (`~` of a bool mask too)")
def logical_not(cx: Converter, a: Arg) -> TensorValue:
    if not isinstance(a, TensorValue) or a.dtype != "bool":
        raise Unsupported(f"{cx.current_node.kind} of a non-bool tensor")
    return cx.emit_like(Op.LOGICAL_NOT, dict(input=a), a)


@lowering("aten::pow", "aten::pow_", nnapi=("MUL", "SQRT", "RSQRT", "DIV", "POW"), any_rank=True,
          notes="exponents 2, 0.5, -0.5, -1 use cheaper ops; others POW")
def aten_pow(cx: Converter, a: Arg, b: Arg) -> Arg:
    return power(cx, a, b)


_CASTABLE = ("float32", "float16", "int32", "int64")


@lowering("aten::to", "aten::type_as", "aten::_to_copy",
          nnapi=("CAST", "NOT_EQUAL", "SELECT"), any_rank=True,
          notes="dtype conversions among float32, float16, int32, int64 (CAST) and bool"
          " (x != 0; SELECT(x, 1, 0)); device moves are dropped")
def to(cx: Converter, x: Arg, *args: Arg) -> TensorValue | torch.Tensor:
    target = _target_dtype(cx, args)
    if isinstance(x, torch.Tensor) and not x.is_quantized:
        # a constant (torch.export keeps the device moves of constants: a torch.device is
        # no constant to the fold)
        return x if target is None else x.to(getattr(torch, target))
    x = _tensor_arg(x)
    if target is None or target == x.dtype:
        return x  # a device or memory-format change only
    if target == "bool" and x.dtype in _CASTABLE:
        return not_zero(cx, x)
    if x.dtype == "bool" and target in _CASTABLE:
        return select(cx, x, 1, 0, target)
    if target not in _CASTABLE or x.dtype not in _CASTABLE:
        raise Unsupported(f"conversion from {x.dtype} to {target}")
    return cx.cast(x, target)


def not_zero(cx: Converter, x: TensorValue) -> TensorValue:
    """``x != 0`` as bool: NNAPI's CAST takes no bool."""
    if x.dtype not in _CASTABLE:
        raise Unsupported(f"conversion from {x.dtype} to bool")
    (t, zero), shape, layout, groups = broadcast(cx, [x, 0], x.dtype)
    return cx.emit(Op.NOT_EQUAL, dict(input0=t, input1=zero), shape, "bool", layout,
                   groups=groups)


def _target_dtype(cx: Converter, args: Sequence[Arg]) -> str | None:
    """The dtype ``to``/``type_as`` converts to (None: a device or memory-format change)."""
    if cx.current_node.kind == "aten::type_as":
        other = args[0]
        if not isinstance(other, (TensorValue, torch.Tensor)):
            raise Unsupported(f"type_as of a {type(other).__name__}")
        return other.dtype if isinstance(other, TensorValue) else str(other.dtype)[6:]
    codes = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    others = [a for a in args if isinstance(a, (TensorValue, torch.Tensor))]
    if others:
        o = others[0]
        return o.dtype if isinstance(o, TensorValue) else str(o.dtype)[6:]
    if codes and codes[0] in DTYPE_OF_CODE:
        return DTYPE_OF_CODE[codes[0]]
    return None


def _tensor_arg(x: Arg) -> TensorValue:
    if not isinstance(x, TensorValue):
        raise Unsupported("a dtype conversion of a value that is not a model tensor")
    return x
