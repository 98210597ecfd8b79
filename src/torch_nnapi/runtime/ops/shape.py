"""RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT, TILE, and (API 30) FILL
and RANK.

These move values without computing on them, so every data type takes the same path; the
one exception is CONCATENATION of quant8 inputs quantized unlike the output (allowed since
API 29), which requantizes them in float32 exactly as Android's reference does.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import ASYMM_8BIT, round_half_away
from ..registry import register
from .shape_common import axis_scalar, int_vector, owned, resolve_axis

# --------------------------------------------------------------------------------------------
# RESHAPE


def reshape_target(ctx: KernelContext) -> Shape:
    """The output shape: input ``shape`` with its one -1 component (if any) inferred (the
    native RESHAPE reads it too)."""
    count = math.prod(ctx.input_shape("input"))
    target = int_vector(ctx, "shape")
    stretch = [k for k, d in enumerate(target) if d == -1]
    bad = [d for d in target if d < -1]
    if bad or len(stretch) > 1:
        raise BadDataError(f"{ctx.describe_input('shape')} {target}: dimensions must be >= 0,"
                           " with at most one -1")
    known = math.prod(d for d in target if d != -1)
    if stretch:
        if known == 0 or count % known:
            raise BadDataError(f"{ctx.describe_input('shape')} {target}: no size for the -1"
                               f" dimension makes {count} elements")
        target[stretch[0]] = count // known
    elif known != count:
        raise BadDataError(f"{ctx.describe_input('shape')} {target} has {known} elements, the"
                           f" input {list(ctx.input_shape('input'))} has {count}")
    return tuple(target)


@register(Op.RESHAPE, prepare=lambda ctx: [reshape_target(ctx)])
def reshape(ctx: KernelContext) -> np.ndarray:
    return owned(ctx.input("input").reshape(reshape_target(ctx)))


# --------------------------------------------------------------------------------------------
# SQUEEZE and EXPAND_DIMS


def squeeze_shape(ctx: KernelContext) -> Shape:
    """The input's shape without the squeezed dimensions; [1] when none remains (Android 11:
    NNAPI tensors have a rank of 1 or more). The native SQUEEZE reads it too."""
    return _squeezed(ctx) or (1,)


def _squeezed(ctx: KernelContext) -> Shape:
    shape = ctx.input_shape("input")
    axes = int_vector(ctx, "axes") if ctx.has_input("axes") else []
    if not axes:  # omitted or empty: every dimension of size 1
        return tuple(n for n in shape if n != 1)
    squeezed = set()
    for axis in axes:
        d = resolve_axis(ctx, "axes", axis, len(shape))
        if shape[d] != 1:
            raise BadDataError(f"{ctx.describe_input('axes')} lists dimension {axis}, of size"
                               f" {shape[d]} in {list(shape)}; only size 1 can be squeezed")
        squeezed.add(d)
    return tuple(n for d, n in enumerate(shape) if d not in squeezed)


@register(Op.SQUEEZE, prepare=lambda ctx: [squeeze_shape(ctx)])
def squeeze(ctx: KernelContext) -> np.ndarray:
    return owned(ctx.input("input").reshape(squeeze_shape(ctx)))


def expand_dims_shape(ctx: KernelContext) -> Shape:
    """The input's shape with a 1 at the checked axis (the native EXPAND_DIMS reads it too)."""
    shape = ctx.input_shape("input")
    axis = axis_scalar(ctx, "axis", len(shape) + 1)
    return shape[:axis] + (1,) + shape[axis:]


@register(Op.EXPAND_DIMS, prepare=lambda ctx: [expand_dims_shape(ctx)])
def expand_dims(ctx: KernelContext) -> np.ndarray:
    return owned(ctx.input("input").reshape(expand_dims_shape(ctx)))


# --------------------------------------------------------------------------------------------
# TRANSPOSE


def transpose_permutation(ctx: KernelContext) -> list[int]:
    """TRANSPOSE's checked permutation (reversed axes without one), for both kernel sets."""
    shape = ctx.input_shape("input")
    rank = len(shape)
    if rank > 4:
        raise BadDataError(f"{ctx.describe_input('input')} must have rank 4 or less, got"
                           f" {list(shape)}")
    if not ctx.has_input("perm"):
        return list(range(rank))[::-1]
    perm = int_vector(ctx, "perm", rank)
    if sorted(perm) != list(range(rank)):
        raise BadDataError(f"{ctx.describe_input('perm')} {perm} is not a permutation of"
                           f" 0..{rank - 1}")
    return perm


def _prepare_transpose(ctx: KernelContext) -> list[Shape]:
    shape = ctx.input_shape("input")
    return [tuple(shape[d] for d in transpose_permutation(ctx))]


@register(Op.TRANSPOSE, prepare=_prepare_transpose)
def transpose(ctx: KernelContext) -> np.ndarray:
    return owned(ctx.input("input").transpose(transpose_permutation(ctx)))


# --------------------------------------------------------------------------------------------
# CONCATENATION


def _prepare_concatenation(ctx: KernelContext) -> list[Shape]:
    axis = ctx.scalar("axis")
    first = ctx.input_shape("inputs", 0)
    rank = len(first)
    if not 1 <= rank <= 4:
        raise BadDataError(f"{ctx.describe_input('inputs', 0)} must have rank 1 to 4, got"
                           f" shape {list(first)}")
    if not 0 <= axis < rank:
        raise BadDataError(f"{ctx.describe_input('axis')} {axis} is out of range [0, {rank})")
    total = 0
    for k in range(ctx.input_count("inputs")):
        shape = ctx.input_shape("inputs", k)
        if len(shape) != rank or any(
                a != b for d, (a, b) in enumerate(zip(shape, first, strict=True)) if d != axis):
            raise BadDataError(f"{ctx.describe_input('inputs', k)} has shape {list(shape)},"
                               f" which differs from {ctx.describe_input('inputs', 0)}"
                               f" {list(first)} in a dimension other than the axis {axis}")
        total += shape[axis]
    return [first[:axis] + (total,) + first[axis + 1:]]


def requantized_input(ctx: KernelContext, k: int) -> np.ndarray:
    """The k-th input in the output's quantization, in float32 as Android's reference does.
    Android moves int8 values to uint8 (adding 128 to values and zero points) first, which
    changes the float rounding, so we do as well. The native CONCATENATION tabulates it."""
    x = ctx.input("inputs", k)
    (scale, zero_point), (out_scale, out_zero_point) = ctx.input_quant("inputs", k), \
        ctx.output_quant()
    if (np.float32(scale), zero_point) == (np.float32(out_scale), out_zero_point):
        return x
    offset = 128 if x.dtype == np.int8 else 0
    ratio = np.float32(scale) * (np.float32(1.0) / np.float32(out_scale))
    bias = np.float32(-(zero_point + offset)) * ratio
    as_uint8 = (x.astype(np.int32) + offset).astype(np.float32)
    # saturate before the integer cast: far outside [0, 255] an int32 cast would wrap
    with np.errstate(over="ignore"):  # beyond float32: inf, which saturates too
        q = round_half_away(as_uint8 * ratio + bias) + np.float32(out_zero_point + offset)
    return cast("np.ndarray", (np.clip(q, 0, 255) - offset).astype(x.dtype))


@register(Op.CONCATENATION, prepare=_prepare_concatenation)
def concatenation(ctx: KernelContext) -> np.ndarray:
    axis = ctx.scalar("axis")
    if ctx.input_type("inputs") in ASYMM_8BIT:
        parts = [requantized_input(ctx, k) for k in range(ctx.input_count("inputs"))]
    else:
        parts = ctx.inputs("inputs")
    return np.concatenate(parts, axis=axis)


# --------------------------------------------------------------------------------------------
# SPLIT


def split_plan(ctx: KernelContext) -> tuple[int, int]:
    """(axis, number of parts), checked, for both kernel sets."""
    shape = ctx.input_shape("input")
    axis = axis_scalar(ctx, "axis", len(shape))
    parts = ctx.scalar("num_splits")
    if parts != ctx.output_count("outputs"):
        raise BadDataError(f"{ctx.describe_input('num_splits')} is {parts}, but the operation"
                           f" has {ctx.output_count('outputs')} outputs")
    if shape[axis] % parts:
        raise BadDataError(f"{ctx.describe_input('num_splits')} {parts} does not divide"
                           f" dimension {axis} of size {shape[axis]}")
    return axis, parts


def _prepare_split(ctx: KernelContext) -> list[Shape]:
    axis, parts = split_plan(ctx)
    shape = list(ctx.input_shape("input"))
    shape[axis] //= parts
    return [tuple(shape)] * parts


@register(Op.SPLIT, prepare=_prepare_split)
def split(ctx: KernelContext) -> list[np.ndarray]:
    axis, parts = split_plan(ctx)
    return [owned(p) for p in np.split(ctx.input("input"), parts, axis=axis)]


# --------------------------------------------------------------------------------------------
# TILE


def tile_multiples(ctx: KernelContext) -> list[int]:
    multiples = int_vector(ctx, "multiples", len(ctx.input_shape("input")))
    if any(m < 0 for m in multiples):
        raise BadDataError(f"{ctx.describe_input('multiples')} {multiples} must not be"
                           " negative")
    return multiples


def _prepare_tile(ctx: KernelContext) -> list[Shape]:
    return [tuple(n * m for n, m in zip(ctx.input_shape("input"), tile_multiples(ctx),
                                        strict=True))]


@register(Op.TILE, prepare=_prepare_tile)
def tile(ctx: KernelContext) -> np.ndarray:
    return np.tile(ctx.input("input"), tile_multiples(ctx))


# --------------------------------------------------------------------------------------------
# FILL and RANK


def _fill_shape(ctx: KernelContext) -> Shape:
    if len(ctx.input_shape("shape")) != 1:
        raise BadDataError(f"{ctx.describe_input('shape')} must be a 1-D tensor, got shape"
                           f" {list(ctx.input_shape('shape'))}")
    dims = [int(d) for d in ctx.input("shape")]
    if any(d < 0 for d in dims):
        raise BadDataError(f"{ctx.describe_input('shape')} {dims} has a negative dimension")
    return tuple(dims)


@register(Op.FILL, prepare=lambda ctx: [_fill_shape(ctx)])
def fill(ctx: KernelContext) -> np.ndarray:
    return np.full(_fill_shape(ctx), ctx.scalar("value"), dtype=ctx.output_dtype())


@register(Op.RANK, prepare=lambda ctx: [()])
def rank(ctx: KernelContext) -> np.ndarray:
    return np.asarray(len(ctx.input_shape("input")), dtype=np.int32)
