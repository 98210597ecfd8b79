"""Native AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (pooling.c), float32, uint8 and int8,
bit-exact with the reference kernels (runtime/ops/pooling.py): same windows, same summation
order, same integer rounding of quantized averages."""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import pooling as ref
from ..ops.spatial import from_nhwc
from ..quant import activation_range_float, activation_range_quantized
from ..registry import Runner, register_native
from . import conv, module
from .planning import constant_parameters, contiguous_nhwc

_KINDS = {Op.AVERAGE_POOL_2D: 0, Op.MAX_POOL_2D: 1, Op.L2_POOL_2D: 2}


@register_native(Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D)
def pool_2d(ctx: KernelContext) -> Runner | None:
    kind = ctx.input_type("input")
    signed = kind == OperandType.TENSOR_QUANT8_ASYMM_SIGNED
    quantized = signed or kind == OperandType.TENSOR_QUANT8_ASYMM
    if not (quantized or kind == OperandType.TENSOR_FLOAT32) or \
            (quantized and ctx.operation == Op.L2_POOL_2D) or not constant_parameters(ctx):
        return None
    params, window, (n, h, w, c, fh, fw, out_h, out_w) = ref.pool_geometry(ctx)
    if n == 0:
        return None
    geometry = conv.window(n, h, w, c, out_h, out_w, fh, fw, window.stride_h, window.stride_w,
                           1, 1, window.pad_top, window.pad_left)
    if not conv.window_fits(geometry):
        return None
    lo, hi = activation_range_float(params.fuse_code)
    qlo, qhi = 0, 255
    if quantized:
        scale, zero = ctx.output_quant()
        qlo, qhi = activation_range_quantized(params.fuse_code, scale, zero, ctx.output_dtype())
        if signed:  # the kernel clamps int8 values 128 up, in the uint8 domain
            qlo, qhi = qlo + 128, qhi + 128
    pool, code, nchw = module().pool, _KINDS[ctx.operation], params.nchw
    dtype = ctx.output_dtype() if quantized else np.float32

    def run(x: np.ndarray, *_: object) -> np.ndarray:
        out = np.empty((n, out_h, out_w, c), dtype)
        pool(code, contiguous_nhwc(x, nchw), out, geometry, lo, hi, qlo, qhi, signed)
        return from_nhwc(out, nchw)

    return run
