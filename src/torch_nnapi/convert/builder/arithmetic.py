"""Arithmetic building blocks: number folding, element-wise operations with PyTorch's
broadcasting (ADD/SUB/MUL/DIV, MAXIMUM/MINIMUM, SELECT, POW), quantized tensors computed in
float between DEQUANTIZE and QUANTIZE, and reductions.

Operands are brought to a common rank and layout (``common.broadcast``): model tensors keep
channels-last when they have it, constants are reshaped and permuted at conversion time.
Number-only forms (shape arithmetic) are folded, not emitted. Reduced PyTorch dimensions are
mapped to the operand's NNAPI axes through its layout, so channels-last tensors reduce in
place; the result keeps the layout minus the reduced dims.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TypeGuard, TypeVar, overload

import numpy as np
import torch

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from ..errors import Unsupported
from . import layout as lay
from .common import broadcast, broadcast_shapes, constant_float, expand_to, result_dtype, shape_of
from .context import Arg, Converter, Number, is_number
from .merged import fit
from .slicing import squeeze
from .symbolic import Sym, binary
from .values import TensorValue

_FLOATS = ("float32", "float16")
_INTEGERS = ("int32", "int64")
A = TypeVar("A", bound="Arg")


# ------------------------------------------------------------------------------ numbers


def as_number(v: A) -> A | bool | int | float:
    """A number from a number or a one-element constant tensor (NumToTensor results)."""
    if isinstance(v, torch.Tensor) and v.numel() == 1 and not v.is_quantized:
        return v.item()
    return v


def both_numbers(a: Arg, b: Arg) -> bool:
    """True when a binary op is number arithmetic (no tensor operand in the model)."""
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        return False
    a, b = as_number(a), as_number(b)
    return is_number(a) and is_number(b)


_SYM_OPS = {"add": "add", "sub": "sub", "mul": "mul", "floordiv": "floordiv",
            "remainder": "mod"}
_PY_OPS: dict[str, Callable[[Number, Number], Number]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "remainder": operator.mod, "div": operator.truediv}


def _numbers(a: Arg, b: Arg) -> tuple[Number, Number]:
    """``a`` and ``b``, numbers or one-element constant tensors, as numbers."""
    a, b = as_number(a), as_number(b)
    if is_number(a) and is_number(b):
        return a, b
    raise Unsupported(f"number arithmetic on a {type(a).__name__} and a {type(b).__name__}")


def number_binary(op: str, a: Arg, b: Arg) -> Number:
    """``a op b`` for numbers, either of which may be a flexible size."""
    a, b = _numbers(a, b)
    if isinstance(a, Sym) or isinstance(b, Sym):
        if op == "div":
            raise Unsupported("true division of a flexible dimension (use // instead)")
        if isinstance(a, float) or isinstance(b, float):
            raise Unsupported("float arithmetic on a flexible dimension")
        return binary(_SYM_OPS[op], a, b)
    return _PY_OPS[op](a, b)


_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "aten::eq": operator.eq, "aten::ne": operator.ne, "aten::lt": operator.lt,
    "aten::gt": operator.gt, "aten::le": operator.le, "aten::ge": operator.ge}


def compare_numbers(kind: str, a: Arg, b: Arg) -> bool:
    """The comparison ``kind`` (aten::eq ...) of numbers, folded."""
    a, b = _numbers(a, b)
    if isinstance(a, Sym) or isinstance(b, Sym):
        if kind in ("aten::eq", "aten::ne") and isinstance(a, Sym) and a == b:
            return kind == "aten::eq"
        raise Unsupported("control flow that depends on a flexible dimension")
    return _COMPARISONS[kind](a, b)


# ------------------------------------------------------------------------------ element-wise


def arithmetic(cx: Converter, op: Op, a: Arg, b: Arg, fuse: FuseCode = FuseCode.NONE
               ) -> TensorValue:
    """``a op b`` as one NNAPI ADD/SUB/MUL/DIV with an optional fused activation.

    Subtracting a constant is adding its negation and dividing by a power of two is
    multiplying by its reciprocal, bit for bit: ADD and MUL need feature level 1, SUB and
    DIV level 2. Integer (int32, and int64 held as int32) ADD, SUB and MUL need level 4 and
    take no activation; integer division is :func:`floor_divide`."""
    if any(isinstance(v, TensorValue) and v.is_quantized for v in (a, b)):
        raise Unsupported(f"{op.name} of quantized tensors through aten ops (use the"
                          " quantized:: ops of a quantized model)")
    dtype = result_dtype(a, b)
    if dtype in _INTEGERS:
        if op == Op.DIV:  # PyTorch's quotient of integers is a float
            raise Unsupported("true division of integer tensors (divide floats, or use //)")
        if fuse != FuseCode.NONE:
            raise Unsupported(f"{op.name} of {dtype} tensors takes no fused activation")
    elif dtype not in _FLOATS:
        raise Unsupported(f"{op.name} of {dtype} tensors")
    if op == Op.SUB and _is_constant(b):
        op, b = Op.ADD, _negated(b)
    elif op == Op.DIV and _is_constant(b):
        reciprocal = _exact_reciprocal(b, dtype)
        if reciprocal is not None:
            op, b = Op.MUL, reciprocal
    (ta, tb), shape, layout, groups = broadcast(cx, [a, b], dtype)
    return cx.emit(op, dict(input0=ta, input1=tb, fuse_code=cx.i32(int(fuse))), shape, dtype,
                   layout, groups=groups)


def floor_divide(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    """``a // b``: for integers one DIV (NNAPI's int32 DIV rounds down, as ``//`` does;
    feature level 4), for floats a DIV and a FLOOR."""
    if result_dtype(a, b) in _INTEGERS:
        dtype = result_dtype(a, b)
        (ta, tb), shape, layout, groups = broadcast(cx, [a, b], dtype)
        return cx.emit(Op.DIV, dict(input0=ta, input1=tb, fuse_code=cx.i32(0)), shape, dtype,
                       layout, groups=groups)
    quotient = arithmetic(cx, Op.DIV, a, b)
    return cx.emit_like(Op.FLOOR, dict(input=quotient), quotient)


def _is_constant(v: Arg) -> TypeGuard[torch.Tensor | int | float]:
    """A number or constant tensor known at conversion time (not a flexible size)."""
    if isinstance(v, torch.Tensor):
        return v.dtype != torch.bool and not v.is_quantized
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _negated(v: torch.Tensor | int | float) -> torch.Tensor | int | float:
    if isinstance(v, torch.Tensor) and not v.is_floating_point():
        v = v.to(torch.int64)  # unsigned constants would wrap around
    return -v


def _exact_reciprocal(divisor: torch.Tensor | int | float, dtype: str
                      ) -> torch.Tensor | float | None:
    """``1 / divisor`` when multiplying by it equals dividing by ``divisor`` exactly: every
    element a power of two whose reciprocal ``dtype`` holds exactly; else None."""
    values = np.asarray(divisor.double() if isinstance(divisor, torch.Tensor) else divisor,
                        np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values == 0):
        return None
    mantissas, _ = np.frexp(np.abs(values))
    reciprocals = np.asarray(1.0 / values)  # an array also for a 0-dim divisor
    exact = np.dtype(np.float16 if dtype == "float16" else np.float32)
    if not (np.all(mantissas == 0.5) and np.array_equal(values.astype(exact), values)
            and np.array_equal(reciprocals.astype(exact), reciprocals)):
        return None
    if isinstance(divisor, torch.Tensor):
        return torch.from_numpy(reciprocals).to(divisor.dtype if divisor.is_floating_point()
                                                else torch.float64)
    return float(reciprocals)


def extremum(cx: Converter, op: Op, a: Arg, b: Arg) -> TensorValue:
    """MAXIMUM or MINIMUM of ``a`` and ``b``; quantized operands stay quantized."""
    dtype = result_dtype(a, b) if not _quantized(a) else a.dtype
    if _quantized(a) or _quantized(b):
        if not (_quantized(a) and _quantized(b)):
            raise Unsupported(f"{op.name} of a quantized and a float tensor")
        (ta, tb), shape, layout, groups = broadcast(cx, [a, b], dtype)
        scale, zp = cx.example_quant()
        return cx.emit(op, dict(input0=ta, input1=tb), shape, dtype, layout, scale, zp, groups)
    (ta, tb), shape, layout, groups = broadcast(cx, [a, b], dtype)
    return cx.emit(op, dict(input0=ta, input1=tb), shape, dtype, layout, groups=groups)


def _quantized(v: Arg) -> TypeGuard[TensorValue]:
    return isinstance(v, TensorValue) and v.is_quantized


def select(cx: Converter, condition: Arg, a: Arg, b: Arg, dtype: str) -> TensorValue:
    """SELECT(condition, a, b) with PyTorch broadcasting: operands whose shape is not the
    result's are repeated to it first."""
    if not (isinstance(condition, TensorValue) and condition.dtype == "bool") and not (
            isinstance(condition, torch.Tensor) and condition.dtype == torch.bool):
        raise Unsupported("where() and masked_fill() need a bool condition")
    shape = broadcast_shapes(shape_of(condition), shape_of(a), shape_of(b))
    if isinstance(condition, TensorValue) and tuple(condition.shape) != tuple(shape):
        # TILE takes no bool tensors: repeat the condition as 1.0 / 0.0, compare back
        repeated = expand_to(cx, select(cx, condition, 1.0, 0.0, "float32"), shape, "float32")
        (t, half), _, layout, groups = broadcast(cx, [repeated, 0.5], "float32")
        condition = cx.emit(Op.GREATER, dict(input0=t, input1=half), repeated.shape, "bool",
                            layout, groups=groups)
    values = [expand_to(cx, v, shape, d) for v, d in ((condition, "bool"), (a, dtype),
                                                      (b, dtype))]
    (tc, ta, tb), shape, layout, groups = broadcast(cx, values, ["bool", dtype, dtype])
    return cx.emit(Op.SELECT, dict(condition=tc, input1=ta, input2=tb), shape, dtype, layout,
                   groups=groups)


@overload
def power(cx: Converter, a: TensorValue, b: Arg) -> TensorValue: ...
@overload
def power(cx: Converter, a: Arg, b: Arg) -> Arg: ...
def power(cx: Converter, a: Arg, b: Arg) -> Arg:
    """``a ** b``: folded for numbers; exponents 2, 0.5, -0.5, -1 use cheaper ops than POW."""
    if both_numbers(a, b):
        return _number_power(a, b)
    if isinstance(a, TensorValue) and not isinstance(b, TensorValue) and (
            not isinstance(b, torch.Tensor) or b.numel() == 1):
        e = constant_float(b, "exponent")
        if e == 1.0:
            return a
        if e == 2.0:
            return arithmetic(cx, Op.MUL, a, a)
        if e == 0.5:
            return cx.emit_like(Op.SQRT, dict(input=a), a)
        if e == -0.5:
            return cx.emit_like(Op.RSQRT, dict(input=a), a)
        if e == -1.0:
            return arithmetic(cx, Op.DIV, 1.0, a)
    dtype = result_dtype(a, b)
    if dtype not in _FLOATS:
        raise Unsupported("pow of integer tensors")
    (ta, tb), shape, layout, groups = broadcast(cx, [a, b], dtype)
    return cx.emit(Op.POW, dict(base=ta, exponent=tb), shape, dtype, layout, groups=groups)


def scaled(cx: Converter, v: Arg, factor: float) -> Arg:
    """``factor * v``: a MUL for a model tensor, computed here for a constant or a number."""
    if factor == 1.0:
        return v
    if isinstance(v, TensorValue):
        return arithmetic(cx, Op.MUL, v, factor)
    if isinstance(v, (torch.Tensor, int, float)):
        product: torch.Tensor | float = v * factor
        return product
    raise Unsupported(f"{factor} times a {type(v).__name__}")


def _number_power(a: Arg, b: Arg) -> torch.Tensor | int | float:
    """``a ** b`` of numbers or one-element constant tensors (folded)."""
    if isinstance(a, (torch.Tensor, int, float)) and isinstance(b, (torch.Tensor, int, float)):
        result: torch.Tensor | int | float = a ** b
        return result
    raise Unsupported("a power of a flexible dimension")


def composed_hardsigmoid(cx: Converter, x: TensorValue) -> TensorValue:
    """relu6(x + 3) / 6 of a float tensor: ADD with a fused RELU6, then a DIV (a MUL)."""
    shifted = arithmetic(cx, Op.ADD, x, 3.0, FuseCode.RELU6)
    return arithmetic(cx, Op.DIV, shifted, 6.0)


def composed_hardswish(cx: Converter, x: TensorValue) -> TensorValue:
    """x * relu6(x + 3) / 6 of a float tensor, from ADD (with a fused RELU6), MUL and DIV."""
    shifted = arithmetic(cx, Op.ADD, x, 3.0, FuseCode.RELU6)
    return arithmetic(cx, Op.DIV, arithmetic(cx, Op.MUL, x, shifted), 6.0)


# ------------------------------------------------------------------------------ in float


def float_of(cx: Converter, x: TensorValue) -> TensorValue:
    """A float32 view of a quantized tensor (DEQUANTIZE)."""
    return cx.emit(Op.DEQUANTIZE, dict(input=x), x.shape, "float32", x.layout, groups=x.groups)


def quantize_as(cx: Converter, f: TensorValue, scale: float, zero_point: int,
                dtype: str) -> TensorValue:
    """QUANTIZE float ``f`` to the 8-bit ``dtype`` (quint8; qint8 from feature level 4)."""
    return cx.emit(Op.QUANTIZE, dict(input=f), f.shape, dtype, f.layout, scale, zero_point,
                   f.groups)


def requantize_like_output(cx: Converter, y: TensorValue) -> TensorValue:
    """QUANTIZE ``y`` with the quantization (and 8-bit type) PyTorch gave the node's output."""
    scale, zero_point = cx.example_quant()
    return quantize_as(cx, y, scale, zero_point, cx.example_quant_dtype())


def in_float(cx: Converter, x: TensorValue, compute: Callable[[TensorValue], TensorValue]
             ) -> TensorValue:
    """``compute(x)``, through float when ``x`` is quantized."""
    if not x.is_quantized:
        return compute(x)
    return requantize_like_output(cx, compute(float_of(cx, x)))


# ------------------------------------------------------------------------------ reductions


def reduce(cx: Converter, op: Op, x: TensorValue, dims: list[int], keepdim: bool,
           dtype: str | None = None) -> TensorValue:
    """One NNAPI reduction of PyTorch dims ``dims``; MEAN takes keep_dims as INT32, the
    REDUCE_* ops as BOOL. Merged dimensions (tensors of rank above 4) each hold reduced
    dimensions only or kept ones only."""
    if x.groups or x.rank > 4:
        return _reduce_merged(cx, op, x, dims, keepdim, dtype)
    axes = cx.int_vector([lay.axis(x.layout, d) for d in dims])
    keep = cx.i32(int(keepdim)) if op == Op.MEAN else cx.boolean(keepdim)
    if keepdim:
        shape = tuple(1 if i in dims else n for i, n in enumerate(x.shape))
        layout = x.layout
    else:
        shape = tuple(n for i, n in enumerate(x.shape) if i not in dims)
        layout = lay.without_dims(x.layout, dims)
    if x.is_quantized and op == Op.MEAN:
        scale, zero_point = cx.example_quant()
    else:
        scale, zero_point = x.scale, x.zero_point
    return cx.emit(op, dict(input=x, axes=axes, keep_dims=keep), shape, dtype or x.dtype, layout,
                   scale, zero_point)


def _reduce_merged(cx: Converter, op: Op, x: TensorValue, dims: list[int], keepdim: bool,
                   dtype: str | None) -> TensorValue:
    try:
        x = fit(cx, x, ["reduced" if d in dims else "kept" for d in range(x.rank)])
    except Unsupported:
        if len(dims) < 2:
            raise
        # reduced and kept dimensions alternate too often: one dimension at a time (exact
        # for sums, extrema and means of equal-sized parts), the reduced ones kept as 1
        for d in dims:
            x = _reduce_merged(cx, op, x, [d], True, dtype)
        return x if keepdim else squeeze(cx, x, dims)
    runs = lay.group_runs(x.groups, x.rank)
    reduced = [axis for axis, run in enumerate(runs) if run and x.layout[run[0]] in dims]
    axes = cx.int_vector(reduced)
    keep = cx.i32(int(keepdim)) if op == Op.MEAN else cx.boolean(keepdim)
    if keepdim:
        shape = tuple(1 if i in dims else n for i, n in enumerate(x.shape))
        layout, groups = x.layout, x.groups
    else:
        shape = tuple(n for i, n in enumerate(x.shape) if i not in dims)
        layout = lay.without_dims(x.layout, dims)
        sizes = [len(run) for axis, run in enumerate(runs) if axis not in reduced]
        groups = lay.normalize_groups(sizes, len(shape)) if shape else ()
    if x.is_quantized and op == Op.MEAN:
        scale, zero_point = cx.example_quant()
    else:
        scale, zero_point = x.scale, x.zero_point
    return cx.emit(op, dict(input=x, axes=axes, keep_dims=keep), shape, dtype or x.dtype,
                   layout, scale, zero_point, groups)
