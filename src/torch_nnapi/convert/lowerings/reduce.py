"""Reductions and normalizing activations: mean, sum, amax, amin, prod, any, all, max/min
(values and indices), argmax, argmin, var/std, softmax, log_softmax.

Reduced PyTorch dimensions are mapped to the operand's NNAPI axes through its layout, so
channels-last tensors reduce in place; the result keeps the layout minus the reduced dims.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.arithmetic import arithmetic, extremum, in_float, power, reduce
from ..builder.common import constant_float, dim_index, named_args, require_tensor
from ..builder.context import Arg, Converter, OperandRef
from ..builder.merged import separate
from ..builder.slicing import unsqueeze
from ..builder.spatial import global_pool
from ..builder.symbolic import SymInt, numel
from ..builder.values import TensorValue
from ..capture.graph import DTYPE_OF_CODE
from ..errors import Unsupported
from ..quant_policy import fixed_output
from . import lowering
from .elementwise import not_zero

Dims = int | Sequence[int] | None  # reduced dimensions: one, several, or (None, []) all


def reduce_dims(x: TensorValue, dims: Arg) -> list[int]:
    """The reduced dimensions ``dims`` names (one, several, or with None or [] all)."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(x.rank))
    if not isinstance(dims, (list, tuple)):
        dims = [dims]
    return sorted({dim_index(d, x.rank) for d in dims})


def _dtype_arg(x: TensorValue, dtype: int | None) -> TensorValue:
    if dtype is None:
        return x
    name = DTYPE_OF_CODE.get(int(dtype))
    if name != x.dtype:
        raise Unsupported(f"reduction with dtype={name} from {x.dtype}")
    return x


@lowering("aten::mean", nnapi=("MEAN", "AVERAGE_POOL_2D", "RESHAPE"), any_rank=True,
          notes="over H and W of a channels-last tensor: AVERAGE_POOL_2D (feature level 1)")
def mean(cx: Converter, x: Arg, dims: Dims = None, keepdim: bool = False,
         dtype: int | None = None) -> TensorValue:
    x = _dtype_arg(require_tensor(x), dtype)
    if not (x.is_float or x.is_quantized):
        raise Unsupported(f"mean of a {x.dtype} tensor")
    reduced = reduce_dims(x, dims)
    if x.rank == 4 and not x.groups and reduced == [2, 3] and (not x.is_quantized
                                           or cx.example_quant() == (x.scale, x.zero_point)):
        pooled = global_pool(cx, Op.AVERAGE_POOL_2D, x)
        if pooled is not None:
            return pooled if keepdim else cx.reshape(pooled, pooled.shape[:2])
    return reduce(cx, Op.MEAN, x, reduced, bool(keepdim))


@lowering("aten::sum", nnapi=("REDUCE_SUM",), any_rank=True)
def sum_(cx: Converter, x: Arg, dims: Dims = None, keepdim: bool = False,
         dtype: int | None = None) -> TensorValue:
    x = require_tensor(x)
    if isinstance(dims, int) and not isinstance(dims, bool) and dtype is None \
            and len(cx.current_node.inputs) == 2:
        dtype, dims = dims, None  # sum(x, dtype)
    x = _dtype_arg(x, dtype)
    if not x.is_float:
        raise Unsupported(f"sum of a {x.dtype} tensor")
    return reduce(cx, Op.REDUCE_SUM, x, reduce_dims(x, dims), bool(keepdim))


@lowering("aten::prod", nnapi=("REDUCE_PROD",), any_rank=True)
def prod(cx: Converter, x: Arg, dim: Dims = None, keepdim: bool = False,
         dtype: int | None = None) -> TensorValue:
    x = _dtype_arg(require_tensor(x), dtype)
    if not x.is_float:
        raise Unsupported(f"prod of a {x.dtype} tensor")
    return reduce(cx, Op.REDUCE_PROD, x, reduce_dims(x, dim), bool(keepdim))


@lowering("aten::amax", "aten::amin", nnapi=("REDUCE_MAX", "REDUCE_MIN"), any_rank=True)
def amax(cx: Converter, x: Arg, dims: Dims = None, keepdim: bool = False) -> TensorValue:
    x = require_tensor(x)
    op = Op.REDUCE_MAX if cx.current_node.kind == "aten::amax" else Op.REDUCE_MIN
    return reduce(cx, op, x, reduce_dims(x, dims), bool(keepdim))


@lowering("aten::any", "aten::all", nnapi=("REDUCE_ANY", "REDUCE_ALL", "NOT_EQUAL"),
          any_rank=True, notes="feature level 3; of a number tensor: x != 0 first")
def any_all(cx: Converter, x: Arg, dims: Dims = None, keepdim: bool = False) -> TensorValue:
    """The logical reductions (ExecuTorch's attention decomposition asks whether a row of
    the mask allows any key)."""
    x = require_tensor(x)
    if x.dtype != "bool":
        x = not_zero(cx, x)
    op = Op.REDUCE_ANY if cx.current_node.kind == "aten::any" else Op.REDUCE_ALL
    return reduce(cx, op, x, reduce_dims(x, dims), bool(keepdim))


@lowering("aten::max", "aten::min",
          nnapi=("REDUCE_MAX", "REDUCE_MIN", "ARGMAX", "ARGMIN", "MAXIMUM", "MINIMUM"),
          notes="max(x), max(x, dim) -> (values, indices), max(x, other)")
def max_min(cx: Converter, x: Arg, *args: Arg) -> TensorValue | tuple[TensorValue, TensorValue]:
    is_max = cx.current_node.kind == "aten::max"
    if len(args) == 1 and (isinstance(args[0], TensorValue) or hasattr(args[0], "shape")):
        return extremum(cx, Op.MAXIMUM if is_max else Op.MINIMUM, x, args[0])
    x = require_tensor(x)
    reduce_op = Op.REDUCE_MAX if is_max else Op.REDUCE_MIN
    if not args:
        return reduce(cx, reduce_op, x, list(range(x.rank)), False)
    d = dim_index(args[0], x.rank)
    keepdim = bool(args[1]) if len(args) > 1 else False
    values = reduce(cx, reduce_op, x, [d], keepdim)
    indices = arg_extremum(cx, x, d, keepdim, is_max)
    return values, indices


def arg_extremum(cx: Converter, x: TensorValue, d: int, keepdim: bool, is_max: bool) \
        -> TensorValue:
    op = Op.ARGMAX if is_max else Op.ARGMIN
    shape = tuple(n for i, n in enumerate(x.shape) if i != d)
    out = cx.emit(op, dict(input=x, axis=cx.i32(lay.axis(x.layout, d))), shape, "int64",
                  lay.without_dims(x.layout, [d]))
    if keepdim:
        out = unsqueeze(cx, out, d)
    return out


@lowering("aten::argmax", "aten::argmin", nnapi=("ARGMAX", "ARGMIN", "RESHAPE"),
          notes="int64 results are int32 in NNAPI and cast back by the wrapper")
def argmax(cx: Converter, x: Arg, dim: int | None = None, keepdim: bool = False) -> TensorValue:
    x = require_tensor(x)
    is_max = cx.current_node.kind == "aten::argmax"
    if dim is None:
        flat = cx.reshape(x, (numel(x.shape),))
        out = arg_extremum(cx, flat, 0, False, is_max)
        if keepdim:
            out = cx.reshape(out, (1,) * x.rank)
        return out
    return arg_extremum(cx, x, dim_index(dim, x.rank), bool(keepdim), is_max)


@lowering("aten::var", "aten::std", nnapi=("MEAN", "SUB", "MUL", "SQRT"), any_rank=True,
          notes="two-pass; correction must be static")
def var_std(cx: Converter, x: Arg, dims: Dims = None, correction: float | None = None,
            keepdim: bool = False, *rest: Arg) -> TensorValue:
    x = require_tensor(x)
    if isinstance(dims, bool):  # var(x, unbiased)
        correction, dims = (1 if dims else 0), None
    dd = reduce_dims(x, dims)
    n: SymInt = 1
    for d in dd:
        n = n * x.shape[d]
    corr = 1.0 if correction is None else (float(correction) if not isinstance(
        correction, bool) else float(correction))
    if not isinstance(n, int):
        raise Unsupported("variance over a flexible dimension")
    mu = reduce(cx, Op.MEAN, x, dd, True)
    dev = arithmetic(cx, Op.SUB, x, mu)
    var = reduce(cx, Op.MEAN, arithmetic(cx, Op.MUL, dev, dev), dd, bool(keepdim))
    if corr:
        var = arithmetic(cx, Op.MUL, var, n / (n - corr))
    if cx.current_node.kind == "aten::std":
        var = cx.emit_like(Op.SQRT, dict(input=var), var)
    return var


@lowering("aten::linalg_vector_norm", "aten::norm", "aten::frobenius_norm",
          nnapi=("MUL", "REDUCE_SUM", "SQRT", "ABS", "REDUCE_MAX", "REDUCE_MIN", "POW"),
          any_rank=True, notes="ord 2: sqrt of the sum of squares; 1, inf, -inf and other"
          " powers too")
def vector_norm(cx: Converter, x: Arg, *args: Arg) -> TensorValue:
    x = require_tensor(x)
    a = named_args(cx, (x,) + args)
    p = a.get("ord", a.get("p", 2))
    order = 2.0 if p is None else constant_float(p, "norm order")
    dims = reduce_dims(x, a.get("dim"))
    keepdim = bool(a.get("keepdim", False))
    if not x.is_float:
        raise Unsupported(f"norm of a {x.dtype} tensor")
    if order == 2.0:
        squares = reduce(cx, Op.REDUCE_SUM, arithmetic(cx, Op.MUL, x, x), dims, keepdim)
        return cx.emit_like(Op.SQRT, dict(input=squares), squares)
    size = cx.emit_like(Op.ABS, dict(input=x), x)
    if order == 1.0:
        return reduce(cx, Op.REDUCE_SUM, size, dims, keepdim)
    if order == float("inf"):
        return reduce(cx, Op.REDUCE_MAX, size, dims, keepdim)
    if order == float("-inf"):
        return reduce(cx, Op.REDUCE_MIN, size, dims, keepdim)
    if order == 0.0:
        raise Unsupported("the zero norm (a count of non-zero elements)")
    powered = reduce(cx, Op.REDUCE_SUM, power(cx, size, order), dims, keepdim)
    return power(cx, powered, 1.0 / order)


@lowering("aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax",
          nnapi=("SOFTMAX", "LOG_SOFTMAX"), any_rank=True, notes="beta 1, any axis")
def softmax(cx: Converter, x: Arg, dim: int, dtype: int | bool | None = None, *rest: Arg
            ) -> TensorValue:
    x = require_tensor(x)
    if isinstance(dtype, bool):
        dtype = None  # _softmax(x, dim, half_to_float)
    x = _dtype_arg(x, dtype)
    d = dim_index(dim, x.rank)
    log = "log_softmax" in cx.current_node.kind
    if x.groups or x.rank > 4:
        x = separate(cx, x, [d])
    inputs: dict[str, OperandRef] = dict(input=x, beta=cx.float_scalar(1.0, x),
                                         axis=cx.i32(x.nnapi_axis(d)))
    if log:
        if not x.is_float:
            raise Unsupported("log_softmax of a quantized tensor")
        return cx.emit_like(Op.LOG_SOFTMAX, inputs, x)
    if x.is_quantized:
        scale, zero_point = cx.example_quant()
        if (scale, zero_point) != fixed_output(Op.SOFTMAX, x.nnapi_type):  # NNAPI fixes them
            return in_float(cx, x, lambda f: softmax(cx, f, dim))
        return cx.emit(Op.SOFTMAX, inputs, x.shape, x.dtype, x.layout, scale, zero_point,
                       x.groups)
    return cx.emit_like(Op.SOFTMAX, inputs, x)

