"""Runners for the operations that only move values: RESHAPE, SQUEEZE and EXPAND_DIMS (free:
a view of their input), TRANSPOSE, TILE, SPLIT, STRIDED_SLICE, CONCATENATION and GATHER; and the
float element-wise functions of unary_math (ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT, FLOOR).

They compute what the reference kernels compute, with the reference's own parameter
readers and functions, but read the parameters once per plan instead of at every execution;
in a model of many small operations that reading is most of the time. Quantized
CONCATENATION of inputs quantized unlike the output requantizes through a 256-entry table of
what the reference gives for each value.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import movement, shape, unary_math
from ..ops.shape_common import axis_scalar
from ..registry import Runner, register_native
from . import module
from .planning import constant_parameters, every_byte

# The 8-bit types (int8 since API 30), whose CONCATENATION may requantize.
_QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)
_TARGETS = {Op.RESHAPE: shape.reshape_target, Op.SQUEEZE: shape.squeeze_shape,
            Op.EXPAND_DIMS: shape.expand_dims_shape}


@register_native(*_TARGETS)
def reshape(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx):
        return None
    target = _TARGETS[ctx.operation](ctx)
    return lambda x, *_: x.reshape(target)


@register_native(Op.TRANSPOSE)
def transpose(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx):
        return None
    permutation = tuple(shape.transpose_permutation(ctx))
    return lambda x, *_: np.ascontiguousarray(x.transpose(permutation))


@register_native(Op.TILE)
def tile(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx):
        return None
    multiples = shape.tile_multiples(ctx)
    return lambda x, *_: np.tile(x, multiples)


@register_native(Op.SPLIT)
def split(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx):
        return None
    axis, parts = shape.split_plan(ctx)
    # The parts' index tuples, worked out once (np.split works them out at every call);
    # parts already contiguous (a split along the first dimension longer than 1) stay views.
    size = ctx.input_shape("input")[axis] // parts
    leading = (slice(None),) * axis
    pieces = [(*leading, slice(k * size, (k + 1) * size)) for k in range(parts)]
    return lambda x, *_: [np.ascontiguousarray(x[piece]) for piece in pieces]


@register_native(Op.STRIDED_SLICE)
def strided_slice(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx):
        return None
    plan, out_shape = movement.strided_slice_plan(ctx)
    return lambda x, *_: np.array(x[plan].reshape(out_shape))


def _requantization_table(ctx: KernelContext, k: int) -> np.ndarray | None:
    """The reference's requantization of the k-th input to the output's quantization for
    every 8-bit value, as bytes indexed by the value's byte; None when they are quantized
    alike."""
    every_value = every_byte(ctx.input_type("inputs", k))
    table = shape.requantized_input(ctx.with_input("inputs", every_value, k), k)
    return None if table is every_value else np.ascontiguousarray(table).view(np.uint8)


@register_native(Op.CONCATENATION)
def concatenation(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx, "inputs"):
        return None
    count = ctx.input_count("inputs")
    axis = ctx.scalar("axis")
    kind = ctx.input_type("inputs")
    if kind not in _QUANT8:
        return lambda *values: np.concatenate(values[:count], axis=axis)
    tables = [_requantization_table(ctx, i) for i in range(count)]
    lut = module().lut

    def requantized(x: np.ndarray, table: np.ndarray | None) -> np.ndarray:
        if table is None:
            return x
        out = np.empty(x.shape, x.dtype)
        lut(np.ascontiguousarray(x).view(np.uint8), out.view(np.uint8), table)
        return out

    return lambda *values: np.concatenate(
        [requantized(x, t) for x, t in zip(values[:count], tables, strict=False)], axis=axis)


@register_native(Op.GATHER)
def gather(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx, "input", "indices"):
        return None
    x_shape = ctx.input_shape("input")
    axis = axis_scalar(ctx, "axis", len(x_shape))
    size = x_shape[axis]

    def run(x: np.ndarray, _axis: object, indices: np.ndarray) -> np.ndarray | None:
        if ((indices < 0) | (indices >= size)).any():
            return None  # the reference kernel reports which index, where
        return np.asarray(np.take(x, indices, axis=axis))

    return run


@register_native(*unary_math.UNARY_FUNCTIONS)
def unary(ctx: KernelContext) -> Runner | None:
    if ctx.input_type("input") != OperandType.TENSOR_FLOAT32:
        return None
    # float32 in and out, as the reference computes it
    function = unary_math.UNARY_FUNCTIONS[ctx.operation]
    return lambda x: function(x)
