"""MEAN, REDUCE_ALL/ANY/MAX/MIN/PROD/SUM, ARGMAX/ARGMIN, TOPK_V2.

Float16 is computed in float32 and cast back. Quant8 MEAN (uint8, and int8 since API 30) sums
the raw values in integers and divides truncating toward zero, exactly as Android's reference
(its output keeps the input's quantization). Reducing every dimension of a tensor without
keeping them, or ARGMAX/ARGMIN of a 1-D tensor, gives shape [1] (Android 11). REDUCE_MAX/MIN
start from the type's lowest/highest finite value as Android's reference does, so reducing an
empty axis gives that value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import ASYMM_8BIT
from ..registry import register
from .shape_common import axes_vector, axis_scalar, reduced_shape

# --------------------------------------------------------------------------------------------
# MEAN and REDUCE_*


def reduce_plan(ctx: KernelContext) -> tuple[tuple[int, ...], bool, Shape]:
    """(axes to reduce, keep_dims, output shape), checked; the native reductions and the
    MUL + REDUCE_SUM fusion plan with it."""
    shape = ctx.input_shape("input")
    axes = tuple(axes_vector(ctx, "axes", len(shape)))
    keep_dims = ctx.scalar("keep_dims")
    keep_dims = keep_dims > 0 if ctx.operation == Op.MEAN else bool(keep_dims)
    return axes, keep_dims, reduced_shape(shape, axes, keep_dims)


def _prepare_reduce(ctx: KernelContext) -> list[Shape]:
    return [reduce_plan(ctx)[2]]


@register(Op.MEAN, prepare=_prepare_reduce)
def mean(ctx: KernelContext) -> np.ndarray:
    axes, _, out_shape = reduce_plan(ctx)
    x = ctx.input("input")
    count = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    if count == 0:  # nothing to average: Android leaves the zero-initialized output
        return np.zeros(out_shape, ctx.output_dtype())
    if ctx.input_type("input") in ASYMM_8BIT:
        total = np.sum(x, axis=axes, dtype=np.int64)  # of raw values, which int8 has < 0
        average = np.sign(total) * (np.abs(total) // count)
    else:
        average = np.sum(ctx.float_input("input"), axis=axes, dtype=np.float32) / np.float32(count)
    # (NumPy gives scalars, not arrays, when every axis is reduced.)
    return np.asarray(average).astype(ctx.output_dtype()).reshape(out_shape)


def _extreme(dtype: np.dtype, lowest: bool) -> float | int:
    """The starting value of REDUCE_MAX (lowest) or REDUCE_MIN (highest) for a dtype."""
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if lowest else info.max


_REDUCERS: dict[Op, Callable[[np.ndarray, tuple[int, ...]], np.ndarray | np.generic]] = {
    Op.REDUCE_MAX: lambda x, axes: np.max(x, axis=axes, initial=_extreme(x.dtype, True)),
    Op.REDUCE_MIN: lambda x, axes: np.min(x, axis=axes, initial=_extreme(x.dtype, False)),
    Op.REDUCE_SUM: lambda x, axes: np.sum(x, axis=axes, dtype=np.float32),
    Op.REDUCE_PROD: lambda x, axes: np.prod(x, axis=axes, dtype=np.float32),
    Op.REDUCE_ALL: lambda x, axes: np.all(x, axis=axes),
    Op.REDUCE_ANY: lambda x, axes: np.any(x, axis=axes),
}


@register(*_REDUCERS, prepare=_prepare_reduce)
def reduce(ctx: KernelContext) -> np.ndarray:
    axes, _, out_shape = reduce_plan(ctx)
    x = ctx.input("input")
    if ctx.operation in (Op.REDUCE_SUM, Op.REDUCE_PROD):
        x = ctx.float_input("input")
    with np.errstate(over="ignore", invalid="ignore"):
        result = _REDUCERS[ctx.operation](x, axes)
    return np.asarray(result).astype(ctx.output_dtype()).reshape(out_shape)


# --------------------------------------------------------------------------------------------
# ARGMAX and ARGMIN


def _arg_axis(ctx: KernelContext) -> int:
    shape = ctx.input_shape("input")
    axis = axis_scalar(ctx, "axis", len(shape))
    if shape[axis] == 0:
        raise BadDataError(f"{ctx.describe_input('input')} {list(shape)} is empty along axis"
                           f" {axis}")
    return axis


def _prepare_arg(ctx: KernelContext) -> list[Shape]:
    shape = ctx.input_shape("input")
    axis = _arg_axis(ctx)
    return [shape[:axis] + shape[axis + 1:] or (1,)]


@register(Op.ARGMAX, Op.ARGMIN, prepare=_prepare_arg)
def arg_min_max(ctx: KernelContext) -> np.ndarray:
    """The first index of the extreme value, as the reference's strict comparison gives."""
    find = np.argmax if ctx.operation == Op.ARGMAX else np.argmin
    x = ctx.input("input")
    return np.asarray(find(x, axis=_arg_axis(ctx)), dtype=np.int32).reshape(
        _prepare_arg(ctx)[0])


# --------------------------------------------------------------------------------------------
# TOPK_V2


def _top_k(ctx: KernelContext) -> int:
    shape = ctx.input_shape("input")
    if not shape:
        raise BadDataError(f"{ctx.describe_input('input')} must have rank 1 or more")
    k = ctx.scalar("k")
    if not 1 <= k <= shape[-1]:
        raise BadDataError(f"{ctx.describe_input('k')} {k} is out of range [1, {shape[-1]}]"
                           f" for the last dimension of {ctx.describe_input('input')}"
                           f" {list(shape)}")
    return cast("int", k)


def _prepare_top_k(ctx: KernelContext) -> list[Shape]:
    shape = ctx.input_shape("input")[:-1] + (_top_k(ctx),)
    return [shape, shape]


@register(Op.TOPK_V2, prepare=_prepare_top_k)
def top_k(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray]:
    """Values in descending order; equal values in descending index order, as Android."""
    k = _top_k(ctx)
    x = ctx.input("input")
    last = x.shape[-1] - 1
    # A stable sort of the reversed row puts equal values' larger original indices first.
    reversed_keys = -x[..., ::-1].astype(np.float64)
    order = np.argsort(reversed_keys, axis=-1, kind="stable")[..., :k]
    indices = (last - order).astype(np.int32)
    return np.take_along_axis(x, indices, axis=-1), indices
