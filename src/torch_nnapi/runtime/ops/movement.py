"""PAD, PAD_V2, SLICE, STRIDED_SLICE, GATHER, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, CHANNEL_SHUFFLE.

Pure data movement: one path for every data type. Padding quant8 tensors fills with the
zero point (the logical zero), as Android's reference does since API 29. The block
rearrangements compute in NHWC; NCHW inputs are transposed in and out, as Android does.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..quant import ASYMM_8BIT
from ..registry import register
from .shape_common import (
    axis_scalar,
    check_constant_indices,
    check_indices,
    check_rank4,
    from_nhwc,
    int_vector,
    layout_shape,
    owned,
    positive_scalar,
    to_nhwc,
)

# --------------------------------------------------------------------------------------------
# PAD and PAD_V2


def _paddings(ctx: KernelContext, rows: int) -> list[tuple[int, int]]:
    """Input ``paddings``: a [rows, 2] tensor of non-negative (before, after) paddings."""
    shape = ctx.input_shape("paddings")
    if tuple(shape) != (rows, 2):
        raise BadDataError(f"{ctx.describe_input('paddings')} must have shape [{rows}, 2], got"
                           f" {list(shape)}")
    values = ctx.input("paddings").reshape(rows, 2)
    if (values < 0).any():
        raise BadDataError(f"{ctx.describe_input('paddings')} {values.tolist()} must not be"
                           " negative")
    return [(int(a), int(b)) for a, b in values]


def _check_rank_at_most_4(ctx: KernelContext) -> Shape:
    shape = ctx.input_shape("input")
    if len(shape) > 4:
        raise BadDataError(f"{ctx.describe_input('input')} must have rank 4 or less, got shape"
                           f" {list(shape)}")
    return shape


def _pad_plan(ctx: KernelContext) -> list[tuple[int, int]]:
    return _paddings(ctx, len(_check_rank_at_most_4(ctx)))


def _prepare_pad(ctx: KernelContext) -> list[Shape]:
    pads = _pad_plan(ctx)
    if ctx.operation == Op.PAD_V2 and ctx.input_type("input") in ASYMM_8BIT:
        value = ctx.scalar("pad_value")
        limits = np.iinfo(ctx.output_dtype())
        if not limits.min <= value <= limits.max:
            raise BadDataError(f"{ctx.describe_input('pad_value')} {value} is outside the"
                               f" {ctx.input_type('input').name} range [{limits.min},"
                               f" {limits.max}]")
    return [tuple(a + n + b for n, (a, b) in zip(ctx.input_shape("input"), pads, strict=True))]


def _pad_value(ctx: KernelContext) -> float | int:
    if ctx.operation == Op.PAD_V2:
        return cast("float | int", ctx.scalar("pad_value"))
    if ctx.input_type("input") in ASYMM_8BIT:
        return ctx.output_quant()[1]
    return 0


@register(Op.PAD, Op.PAD_V2, prepare=_prepare_pad)
def pad(ctx: KernelContext) -> np.ndarray:
    x = ctx.input("input")
    return np.pad(x, _pad_plan(ctx), constant_values=np.asarray(_pad_value(ctx)).astype(x.dtype))


# --------------------------------------------------------------------------------------------
# SLICE and STRIDED_SLICE


def _slice_plan(ctx: KernelContext) -> tuple[slice, ...]:
    shape = ctx.input_shape("input")
    begin = int_vector(ctx, "begin", len(shape))
    size = int_vector(ctx, "size", len(shape))
    plan = []
    for d, (n, b, s) in enumerate(zip(shape, begin, size, strict=True)):
        if not 0 <= b <= n:
            raise BadDataError(f"{ctx.describe_input('begin')} {b} is out of range [0, {n}] for"
                               f" dimension {d}")
        if s == -1:
            s = n - b
        if s < 0 or b + s > n:
            raise BadDataError(f"{ctx.describe_input('size')} {s} at begin {b} does not fit"
                               f" dimension {d} of size {n}")
        plan.append(slice(b, b + s))
    return tuple(plan)


def _prepare_slice(ctx: KernelContext) -> list[Shape]:
    return [tuple(s.stop - s.start for s in _slice_plan(ctx))]


@register(Op.SLICE, prepare=_prepare_slice)
def slice_(ctx: KernelContext) -> np.ndarray:
    return owned(ctx.input("input")[_slice_plan(ctx)])


def _clamped_index(index: int, dim: int, forward: bool) -> int:
    """Android's clamping of a begin/end index: negative counts from the end, then the index
    is clamped to where a slice going in the stride's direction can start or stop."""
    if forward:
        if index >= dim:
            return dim
        index = max(index, -dim)
    else:
        if index < -dim:
            return -1
        index = min(index, dim - 1)
    return index + dim if index < 0 else index


def strided_slice_plan(ctx: KernelContext) -> tuple[tuple[slice, ...], Shape]:
    """(one slice per dimension, output shape without the shrunk dimensions: [1] when every
    dimension is shrunk, as Android 11 says); the native runner slices with it."""
    shape = _check_rank_at_most_4(ctx)
    rank = len(shape)
    begins = int_vector(ctx, "begin", rank)
    ends = int_vector(ctx, "end", rank)
    strides = int_vector(ctx, "strides", rank)
    begin_mask, end_mask = ctx.scalar("begin_mask"), ctx.scalar("end_mask")
    shrink_mask = ctx.scalar("shrink_axis_mask")
    plan, out_shape = [], []
    for d in range(rank):
        dim, stride = shape[d], strides[d]
        if stride == 0:
            raise BadDataError(f"{ctx.describe_input('strides')} {strides}: stride {d} is"
                               " zero")
        forward = stride > 0
        begin = (0 if forward else dim - 1) if begin_mask >> d & 1 else \
            _clamped_index(begins[d], dim, forward)
        end = (dim if forward else -1) if end_mask >> d & 1 else \
            _clamped_index(ends[d], dim, forward)
        size = max(0, math.ceil((end - begin) / stride))
        stop = begin + stride * size
        if size == 0:
            plan.append(slice(0, 0))
        else:  # a negative stop means "past index 0", which a Python slice spells None
            plan.append(slice(begin, stop if stop >= 0 else None, stride))
        if shrink_mask >> d & 1:
            if not forward:
                raise BadDataError(f"{ctx.describe_input('shrink_axis_mask')} shrinks dimension"
                                   f" {d}, whose stride {stride} is negative; a shrunk"
                                   " dimension needs a positive stride")
            if size != 1:
                raise BadDataError(f"{ctx.describe_input('shrink_axis_mask')} shrinks dimension"
                                   f" {d}, whose slice has {size} elements instead of 1")
        else:
            out_shape.append(size)
    return tuple(plan), tuple(out_shape) or (1,)


@register(Op.STRIDED_SLICE, prepare=lambda ctx: [strided_slice_plan(ctx)[1]])
def strided_slice(ctx: KernelContext) -> np.ndarray:
    plan, out_shape = strided_slice_plan(ctx)
    return owned(ctx.input("input")[plan].reshape(out_shape))


# --------------------------------------------------------------------------------------------
# GATHER


def _prepare_gather(ctx: KernelContext) -> list[Shape]:
    shape = ctx.input_shape("input")
    axis = axis_scalar(ctx, "axis", len(shape))
    check_constant_indices(ctx, "indices", "input", axis)
    return [shape[:axis] + ctx.input_shape("indices") + shape[axis + 1:]]


@register(Op.GATHER, prepare=_prepare_gather)
def gather(ctx: KernelContext) -> np.ndarray:
    x, indices = ctx.input("input"), ctx.input("indices")
    axis = axis_scalar(ctx, "axis", x.ndim)
    check_indices(ctx, "indices", "input", axis)
    return np.asarray(np.take(x, indices, axis=axis))


# --------------------------------------------------------------------------------------------
# BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND (4-D, two spatial dimensions)


def _block_shape(ctx: KernelContext) -> tuple[int, int]:
    block = int_vector(ctx, "block_shape", 2)
    if min(block) < 1:
        raise BadDataError(f"{ctx.describe_input('block_shape')} {block} must be >= 1")
    return block[0], block[1]


def _batch_to_space_plan(ctx: KernelContext) -> tuple[bool, tuple[int, int], Shape]:
    """(NCHW?, block, NHWC output shape)."""
    nchw = ctx.scalar("nchw")
    n, h, w, c = check_rank4(ctx, "input", nchw)
    bh, bw = _block_shape(ctx)
    if n % (bh * bw):
        raise BadDataError(f"the batch {n} of {ctx.describe_input('input')} is not a multiple"
                           f" of the block size, {ctx.describe_input('block_shape')} {bh}x{bw}")
    return nchw, (bh, bw), (n // (bh * bw), h * bh, w * bw, c)


def _prepare_batch_to_space(ctx: KernelContext) -> list[Shape]:
    nchw, _, out_shape = _batch_to_space_plan(ctx)
    return [layout_shape(out_shape, nchw)]


@register(Op.BATCH_TO_SPACE_ND, prepare=_prepare_batch_to_space)
def batch_to_space_nd(ctx: KernelContext) -> np.ndarray:
    nchw, (bh, bw), out_shape = _batch_to_space_plan(ctx)
    x = to_nhwc(ctx.input("input"), nchw)
    n, h, w, c = x.shape
    blocks = x.reshape(bh, bw, n // (bh * bw), h, w, c).transpose(2, 3, 0, 4, 1, 5)
    return owned(from_nhwc(blocks.reshape(out_shape), nchw))


def _space_to_batch_plan(
        ctx: KernelContext) -> tuple[bool, tuple[int, int], list[tuple[int, int]], Shape]:
    """(NCHW?, block, NHWC paddings, NHWC output shape)."""
    nchw = ctx.scalar("nchw")
    n, h, w, c = check_rank4(ctx, "input", nchw)
    bh, bw = _block_shape(ctx)
    (top, bottom), (left, right) = _paddings(ctx, 2)
    ph, pw = top + h + bottom, left + w + right
    if ph % bh or pw % bw:
        raise BadDataError(f"the padded spatial size {ph}x{pw} of {ctx.describe_input('input')}"
                           f" is not a multiple of the block size,"
                           f" {ctx.describe_input('block_shape')} {bh}x{bw}")
    pads = [(0, 0), (top, bottom), (left, right), (0, 0)]
    return nchw, (bh, bw), pads, (n * bh * bw, ph // bh, pw // bw, c)


def _prepare_space_to_batch(ctx: KernelContext) -> list[Shape]:
    nchw, _, _, out_shape = _space_to_batch_plan(ctx)
    return [layout_shape(out_shape, nchw)]


@register(Op.SPACE_TO_BATCH_ND, prepare=_prepare_space_to_batch)
def space_to_batch_nd(ctx: KernelContext) -> np.ndarray:
    nchw, (bh, bw), pads, out_shape = _space_to_batch_plan(ctx)
    x = to_nhwc(ctx.input("input"), nchw)
    quantized = ctx.input_type("input") in ASYMM_8BIT
    fill = ctx.output_quant()[1] if quantized else 0
    x = np.pad(x, pads, constant_values=np.asarray(fill).astype(x.dtype))
    n, ph, pw, c = x.shape
    blocks = x.reshape(n, ph // bh, bh, pw // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return owned(from_nhwc(blocks.reshape(out_shape), nchw))


# --------------------------------------------------------------------------------------------
# DEPTH_TO_SPACE and SPACE_TO_DEPTH


def _depth_space_plan(ctx: KernelContext) -> tuple[bool, int, Shape]:
    """(NCHW?, block size, NHWC output shape)."""
    nchw = ctx.scalar("nchw")
    n, h, w, c = check_rank4(ctx, "input", nchw)
    b = positive_scalar(ctx, "block_size")
    if ctx.operation == Op.DEPTH_TO_SPACE:
        if c % (b * b):
            raise BadDataError(f"the depth {c} of {ctx.describe_input('input')} is not a"
                               f" multiple of the square of {ctx.describe_input('block_size')}"
                               f" {b}")
        return nchw, b, (n, h * b, w * b, c // (b * b))
    if h % b or w % b:
        raise BadDataError(f"the spatial size {h}x{w} of {ctx.describe_input('input')} is not a"
                           f" multiple of {ctx.describe_input('block_size')} {b}")
    return nchw, b, (n, h // b, w // b, c * b * b)


def _prepare_depth_space(ctx: KernelContext) -> list[Shape]:
    nchw, _, out_shape = _depth_space_plan(ctx)
    return [layout_shape(out_shape, nchw)]


@register(Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH, prepare=_prepare_depth_space)
def depth_space(ctx: KernelContext) -> np.ndarray:
    nchw, b, out_shape = _depth_space_plan(ctx)
    x = to_nhwc(ctx.input("input"), nchw)
    n, h, w, c = x.shape
    if ctx.operation == Op.DEPTH_TO_SPACE:
        blocks = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    else:
        blocks = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return owned(from_nhwc(blocks.reshape(out_shape), nchw))


# --------------------------------------------------------------------------------------------
# CHANNEL_SHUFFLE


def _shuffle_plan(ctx: KernelContext) -> tuple[int, int]:
    """(axis, groups), checked."""
    shape = ctx.input_shape("input")
    axis = axis_scalar(ctx, "axis", len(shape))
    groups = positive_scalar(ctx, "num_groups")
    if shape[axis] % groups:
        raise BadDataError(f"{ctx.describe_input('num_groups')} {groups} does not divide"
                           f" dimension {axis} of size {shape[axis]}")
    return axis, groups


def _prepare_shuffle(ctx: KernelContext) -> list[Shape]:
    _shuffle_plan(ctx)
    return [ctx.input_shape("input")]


@register(Op.CHANNEL_SHUFFLE, prepare=_prepare_shuffle)
def channel_shuffle(ctx: KernelContext) -> np.ndarray:
    axis, groups = _shuffle_plan(ctx)
    x = np.moveaxis(ctx.input("input"), axis, -1)
    grouped = x.reshape(*x.shape[:-1], groups, x.shape[-1] // groups)
    shuffled = grouped.swapaxes(-1, -2).reshape(x.shape)
    return owned(np.moveaxis(shuffled, -1, axis))
