"""Native element-wise kernels (elementwise.c): ADD, SUB, MUL, DIV with broadcasting and fused
activations, RELU/RELU1/RELU6, LOGISTIC and TANH (quantized: tables; float: NumPy's vectorized
exp and tanh, as the reference), HARD_SWISH (quantized: a table), QUANTIZE, DEQUANTIZE and CAST.

Float arithmetic is IEEE float32 as NumPy's, so these results equal the reference kernels'.
Quantized ADD/SUB/MUL reproduce the reference's fixed-point steps. An operation whose 8-bit
output depends on one 8-bit input element only (quantized RELU*, LOGISTIC, TANH, HARD_SWISH,
DEQUANTIZE) runs as a 256-entry table lookup, the table being what the reference kernel
computes for each possible input value: bit-exact by construction.

Signed 8-bit data (TENSOR_QUANT8_ASYMM_SIGNED) takes the same paths: tables are indexed by the
int8 value's byte, and ADD/SUB/MUL and QUANTIZE compute in the uint8 domain (values, zero
points and bounds 128 up: the same differences) with the sign bit flipped on the way in and
out.
"""

from __future__ import annotations

import functools

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import activation
from ..ops.conversion import cast_values
from ..quant import (
    activation_range_float,
    activation_range_quantized,
    quantize_multiplier_smaller_than_one,
)
from ..registry import Runner, kernel_for, register_native
from . import module
from .planning import constant_parameters, every_byte

_F32 = OperandType.TENSOR_FLOAT32
_Q8 = OperandType.TENSOR_QUANT8_ASYMM
_Q8_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
# The 8-bit data types, and what their values add to become the uint8 ones the C kernels
# compute with.
_OFFSETS = {_Q8: 0, _Q8_SIGNED: 128}
_OPCODES = {Op.ADD: 0, Op.SUB: 1, Op.MUL: 2, Op.DIV: 3}
_UFUNCS = {Op.ADD: lambda x, y, _: np.add(x, y), Op.SUB: lambda x, y, _: np.subtract(x, y),
           Op.MUL: lambda x, y, _: np.multiply(x, y), Op.DIV: lambda x, y, _: np.divide(x, y)}
# Quantized ADD and SUB give both inputs 20 bits of headroom before rescaling (as the
# reference kernel, runtime/ops/broadcast.py).
_ADD_LEFT_SHIFT = 20
_FLOAT_CLAMPS = {Op.RELU: (0.0, float(np.finfo(np.float32).max)), Op.RELU1: (-1.0, 1.0),
                 Op.RELU6: (0.0, 6.0)}

Layout = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


@functools.lru_cache(maxsize=1024)
def broadcast_layout(a: tuple[int, ...], b: tuple[int, ...]) -> Layout | None:
    """(output shape, a's strides, b's strides), 4 dimensions each, adjacent dimensions merged
    where both inputs allow it (so that the innermost loop is as long as possible); None when
    more than 4 dimensions remain."""
    rank = max(len(a), len(b), 1)
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    out = tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(a, b, strict=True))
    # Per dimension: whether each input runs along it (size > 1) or repeats (size 1).
    dims: list[list[int]] = []  # [size, a runs, b runs]
    for size, x, y in zip(out, a, b, strict=True):
        if size == 1:
            continue
        runs = [size, int(x != 1), int(y != 1)]
        if dims and dims[-1][1:] == runs[1:]:
            dims[-1][0] *= size
        else:
            dims.append(runs)
    if len(dims) > 4:
        return None
    dims = [[1, 0, 0]] * (4 - len(dims)) + dims
    shape = tuple(d[0] for d in dims)
    strides = []
    for which in (1, 2):
        stride, result = 1, [0, 0, 0, 0]
        for k in range(3, -1, -1):
            if dims[k][which]:
                result[k] = stride
                stride *= dims[k][0]
        strides.append(tuple(result))
    return shape, strides[0], strides[1]


def _q8_binary_params(ctx: KernelContext) -> tuple[int, ...] | None:
    """The fixed-point parameters of a quantized ADD/SUB/MUL, computed as the reference kernel
    does, zero points and bounds in the uint8 domain; None when a shift is beyond the native
    kernel's range."""
    offset = _OFFSETS[ctx.input_type("input0")]
    (s1, z1), (s2, z2), (so, zo) = ctx.input_quant("input0"), ctx.input_quant("input1"), \
        ctx.output_quant()
    lo, hi = activation_range_quantized(ctx.scalar("fuse_code"), so, zo, ctx.output_dtype())
    z1, z2, zo, lo, hi = z1 + offset, z2 + offset, zo + offset, lo + offset, hi + offset
    if ctx.operation == Op.MUL:
        product_scale = float(np.float32(s1) * np.float32(s2))
        mo, ro = quantize_multiplier_smaller_than_one(product_scale / so)
        params = (2, z1, z2, 0, 0, 0, 0, 0, mo, -ro, zo, lo, hi)
    else:
        twice_max_scale = 2 * max(float(np.float32(s1)), float(np.float32(s2)))
        m1, r1 = quantize_multiplier_smaller_than_one(s1 / twice_max_scale)
        m2, r2 = quantize_multiplier_smaller_than_one(s2 / twice_max_scale)
        mo, ro = quantize_multiplier_smaller_than_one(
            twice_max_scale / ((1 << _ADD_LEFT_SHIFT) * so))
        if ctx.operation == Op.SUB:
            m2 = -m2
        params = (_OPCODES[ctx.operation], z1, z2, _ADD_LEFT_SHIFT, m1, -r1, m2, -r2, mo, -ro, zo,
                  lo, hi)
    if min(params[5], params[7], params[9]) < -31:
        return None
    return params


@register_native(Op.ADD, Op.SUB, Op.MUL, Op.DIV)
def binary_arithmetic(ctx: KernelContext) -> Runner | None:
    kind = ctx.input_type("input0")
    quantized = kind in _OFFSETS
    if not (quantized or kind == _F32) or (quantized and ctx.operation == Op.DIV) or \
            not constant_parameters(ctx, "input0", "input1"):
        return None
    a, b = ctx.input_shape("input0"), ctx.input_shape("input1")
    layout = broadcast_layout(a, b)
    if layout is None:
        return None
    shape = np.broadcast_shapes(a, b)
    kernels = module()
    if kind == _F32:
        opcode = _OPCODES[ctx.operation]
        lo, hi = activation_range_float(ctx.scalar("fuse_code"))
        if lo == -np.inf and hi == np.inf:  # NumPy's ufunc: the same IEEE arithmetic, one call
            return _UFUNCS[ctx.operation]

        def run_float(x: np.ndarray, y: np.ndarray, *_: object) -> np.ndarray:
            out = np.empty(shape, np.float32)
            kernels.binary_f32(opcode, x, y, out, *layout, lo, hi)
            return out

        return run_float
    params = _q8_binary_params(ctx)
    if params is None:
        return None
    dtype, signed = ctx.output_dtype(), kind == _Q8_SIGNED

    def run(x: np.ndarray, y: np.ndarray, *_: object) -> np.ndarray:
        out = np.empty(shape, dtype)
        kernels.binary_q8(x, y, out, *layout, params, signed)
        return out

    return run


def reference_table(ctx: KernelContext) -> np.ndarray:
    """The reference kernel's output for each of the 256 values of the 8-bit input, indexed
    by the value's byte."""
    reference = kernel_for(ctx.operation)
    assert reference is not None, f"no reference kernel for {ctx.operation.name}"
    every_value = every_byte(ctx.input_type("input"))
    return np.ascontiguousarray(reference.execute(ctx.with_input("input", every_value)))


def _table_lookup(ctx: KernelContext) -> Runner | None:
    if not constant_parameters(ctx):
        return None
    table = reference_table(ctx)
    lut = module().lut
    # lut reads and writes bytes: int8 tables and data as their bytes
    bytes_table = table.view(np.uint8) if table.dtype == np.int8 else table

    def run(x: np.ndarray, *_: object) -> np.ndarray:
        out = np.empty(x.shape, table.dtype)
        lut(x.view(np.uint8), out.view(bytes_table.dtype), bytes_table)
        return out

    return run


@register_native(Op.RELU, Op.RELU1, Op.RELU6)
def clamp_activation(ctx: KernelContext) -> Runner | None:
    kind = ctx.input_type("input")
    if kind in _OFFSETS:
        return _table_lookup(ctx)
    if kind != _F32:
        return None
    lo, hi = _FLOAT_CLAMPS[ctx.operation]
    clamp = module().clamp_f32

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, np.float32)
        clamp(x, out, lo, hi)
        return out

    return run


@register_native(Op.LOGISTIC, Op.TANH)
def sigmoid_activation(ctx: KernelContext) -> Runner | None:
    kind = ctx.input_type("input")
    if kind in _OFFSETS:
        return _table_lookup(ctx)
    if kind != _F32:
        return None
    # Float: NumPy's exp and tanh, already vectorized, as the reference computes them.
    function = activation.FLOAT_SIGMOIDS[ctx.operation]
    return lambda x: function(x)


@register_native(Op.HARD_SWISH)
def hard_swish(ctx: KernelContext) -> Runner | None:
    """Quantized only: float HARD_SWISH stays the reference's NumPy arithmetic."""
    return _table_lookup(ctx) if ctx.input_type("input") in _OFFSETS else None


@register_native(Op.DEQUANTIZE)
def dequantize(ctx: KernelContext) -> Runner | None:
    if ctx.input_type("input") not in _OFFSETS or ctx.output_dtype() != np.float32:
        return None
    return _table_lookup(ctx)


@register_native(Op.QUANTIZE)
def quantize(ctx: KernelContext) -> Runner | None:
    kind = ctx.output_type()
    if ctx.input_type("input") != _F32 or kind not in _OFFSETS:
        return None  # float16 input: the reference's
    scale, zero_point = ctx.output_quant()
    offset, dtype = _OFFSETS[kind], ctx.output_dtype()
    quantize_f32 = module().quantize_f32

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, dtype)
        # int8: quantized 128 up, saturating to [0, 255], then the sign bit flipped
        quantize_f32(x, out, scale, zero_point + offset)
        if offset:
            np.bitwise_xor(out.view(np.uint8), 0x80, out=out.view(np.uint8))
        return out

    return run


@register_native(Op.CAST)
def cast(ctx: KernelContext) -> Runner | None:
    """The reference's conversion with the target type read once (a text encoder casts its
    attention mask at every execution)."""
    target = ctx.output_dtype()
    return lambda x: cast_values(x, target)
