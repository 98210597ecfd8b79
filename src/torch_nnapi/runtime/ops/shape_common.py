"""Helpers of the shape, movement, reduction and lookup kernels: parameter vectors, axes,
NHWC views of NCHW inputs, and owned output arrays. Public: the native kernels
(runtime/native) read their axes with the same checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from ...nnapi.errors import BadDataError, OpFailedError
from ..context import KernelContext, Shape, ValueNotKnown


def int_vector(ctx: KernelContext, name: str, length: int | None = None) -> list[int]:
    """A 1-D int32 parameter tensor as Python ints, after checking its shape.

    The shape is checked first so that a bad shape is reported even when the values are only
    known at execution (reading them raises ValueNotKnown then).
    """
    shape = ctx.input_shape(name)
    if len(shape) != 1:
        raise BadDataError(f"{ctx.describe_input(name)} must be a 1-D tensor, got shape"
                           f" {list(shape)}")
    if length is not None and shape[0] != length:
        raise BadDataError(f"{ctx.describe_input(name)} must have {length} values, got"
                           f" {shape[0]}")
    return [int(v) for v in ctx.input(name).reshape(-1)]


def resolve_axis(ctx: KernelContext, name: str, axis: int, rank: int) -> int:
    """An axis from input ``name``, possibly negative, in [-rank, rank) as a non-negative
    index."""
    if not -rank <= axis < rank:
        raise BadDataError(f"{ctx.describe_input(name)} {axis} is out of range [{-rank}, {rank})"
                           f" for an input of rank {rank}")
    return axis % rank


def axis_scalar(ctx: KernelContext, name: str, rank: int) -> int:
    """Scalar input ``name`` (its declared default when left out) as an axis of ``rank``."""
    return resolve_axis(ctx, name, ctx.scalar(name), rank)


def axes_vector(ctx: KernelContext, name: str, rank: int) -> list[int]:
    """Distinct non-negative axes from 1-D input ``name``, in increasing order (repeated axes
    count once)."""
    return sorted({resolve_axis(ctx, name, a, rank) for a in int_vector(ctx, name)})


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keep_dims: bool) -> Shape:
    """The shape left after reducing ``axes``: removed, or kept with size 1; [1] when nothing
    is left (Android 11: NNAPI tensors have a rank of 1 or more)."""
    if keep_dims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes) or (1,)


def check_indices(ctx: KernelContext, name: str, target: str, axis: int,
                  error: type = OpFailedError) -> None:
    """The values of index input ``name`` must address dimension ``axis`` of input ``target``;
    a data-dependent failure otherwise."""
    indices, size = ctx.input(name), ctx.input_shape(target)[axis]
    bad = (indices < 0) | (indices >= size)
    if bad.any():
        position = tuple(int(p) for p in np.argwhere(bad)[0])
        raise error(f"{ctx.describe_input(name)} value {int(indices[position])} at"
                    f" {list(position)} is out of range [0, {size}) for dimension {axis} of"
                    f" {ctx.describe_input(target)}")


def check_constant_indices(ctx: KernelContext, name: str, target: str, axis: int) -> None:
    """At compile time, constant indices out of range make the model invalid."""
    if not ctx.at_compile_time:
        return  # execute checks them, as a data-dependent failure
    try:
        check_indices(ctx, name, target, axis, BadDataError)
    except ValueNotKnown:
        return


def positive_scalar(ctx: KernelContext, name: str) -> int:
    value = ctx.scalar(name)
    if value < 1:
        raise BadDataError(f"{ctx.describe_input(name)} must be >= 1, got {value}")
    return cast("int", value)


# --------------------------------------------------------------------------------------------
# The optional NCHW layout flag: kernels compute in NHWC, as Android's reference does.

_NCHW_TO_NHWC = (0, 2, 3, 1)
_NHWC_TO_NCHW = (0, 3, 1, 2)


def nhwc_shape(shape: Sequence[int], nchw: bool) -> Shape:
    return tuple(shape[d] for d in _NCHW_TO_NHWC) if nchw else tuple(shape)


def layout_shape(nhwc: Sequence[int], nchw: bool) -> Shape:
    """An NHWC shape in the operation's layout."""
    return tuple(nhwc[d] for d in _NHWC_TO_NCHW) if nchw else tuple(nhwc)


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(_NCHW_TO_NHWC) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(_NHWC_TO_NCHW) if nchw else x


def check_rank4(ctx: KernelContext, name: str, nchw: bool) -> Shape:
    """The NHWC view of rank-4 input ``name``'s shape."""
    shape = ctx.input_shape(name)
    if len(shape) != 4:
        layout = "NCHW" if nchw else "NHWC"
        raise BadDataError(f"{ctx.describe_input(name)} must have rank 4 ({layout}), got shape"
                           f" {list(shape)}")
    return nhwc_shape(shape, nchw)


def owned(x: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    """A fresh C-contiguous array, so outputs never alias inputs or constants."""
    return np.array(x, dtype=dtype, order="C", copy=True)
