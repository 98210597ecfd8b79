"""The quantized:: ops of eager and FX graph mode quantization, and quantize/dequantize.

Activations are quint8 (TENSOR_QUANT8_ASYMM). Per-tensor qint8 weights become uint8 with
zero point + 128 and the float bias becomes int32 with scale input.scale * weight.scale, as
NNAPI's quantized CONV_2D / FULLY_CONNECTED take them.

PyTorch's serialized NNAPI format (nnapi_model_loader.cpp) cannot carry per-channel
quantization parameters, so a layer with per-channel weights runs as the float layer on
dequantized weights between DEQUANTIZE and QUANTIZE; its output still matches PyTorch's
within one quantum. hardswish and batch norm, which NNAPI level 3 cannot compute in 8 bits,
run the same way in float.
"""

from __future__ import annotations

import numpy as np
import torch

from ...nnapi.codes import FeatureLevel, FuseCode
from ...nnapi.codes import OperationType as Op
from ..context import Converter
from ..errors import Unsupported
from ..values import TensorValue
from . import lowering
from ._common import broadcast_operands, constant_float, require_tensor, static_int
from .activation import _hardsigmoid, float_of
from .conv import ConvQuant, conv2d_tensor, conv_transpose
from .elementwise import arithmetic
from .linear import fully_connected
from .norm import batch_norm
from .scalars import SCALAR_TYPES
from .shape import concatenate


def quantized_input(x) -> TensorValue:
    x = require_tensor(x)
    if not x.is_quantized:
        raise Unsupported(f"a quantized op on a {x.dtype} tensor")
    return x


def quantize(cx: Converter, f: TensorValue, scale: float, zero_point: int) -> TensorValue:
    return cx.emit(Op.QUANTIZE, dict(input=f), f.shape, "quint8", f.layout, scale, zero_point)


def _output_params(scale, zero_point) -> tuple[float, int]:
    return constant_float(scale, "output scale"), static_int(zero_point, "output zero point")


@lowering("aten::quantize_per_tensor", nnapi=("QUANTIZE",),
          notes="quint8 only; a model input only quantized is quantized on the host")
def quantize_per_tensor(cx: Converter, x, scale, zero_point, dtype):
    x = require_tensor(x)
    if static_int(dtype, "dtype") != SCALAR_TYPES["quint8"]:
        raise Unsupported("quantization to a type other than quint8 (NNAPI level 3 has no"
                          " signed 8-bit activations)")
    s, zp = _output_params(scale, zero_point)
    if x.is_quantized and (x.scale, x.zero_point) == (s, zp):
        return x  # a model input the wrapper quantizes on the host (lower._quantized_on_host)
    if not x.is_float:
        raise Unsupported(f"quantize_per_tensor of a {x.dtype} tensor")
    return quantize(cx, x, s, zp)


@lowering("aten::dequantize", nnapi=("DEQUANTIZE",))
def dequantize(cx: Converter, x):
    if isinstance(x, list):
        return [float_of(cx, quantized_input(t)) for t in x]
    x = require_tensor(x)
    if not x.is_quantized:
        return x
    return float_of(cx, x)


def _weight(w: torch.Tensor):
    """(uint8 weights, scale, zero point) for per-tensor weights, or None for per-channel."""
    if w.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        q = w.int_repr().numpy().astype(np.int32)
        zero_point = int(w.q_zero_point())
        if w.dtype == torch.qint8:
            q, zero_point = q + 128, zero_point + 128
        elif w.dtype != torch.quint8:
            raise Unsupported(f"quantized weights of type {w.dtype}")
        return q.astype(np.uint8), float(w.q_scale()), zero_point
    if w.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric,
                       torch.per_channel_affine_float_qparams):
        return None
    raise Unsupported(f"weights quantized with {w.qscheme()}")


def _bias_array(b) -> np.ndarray | None:
    if b is None:
        return None
    if b.is_quantized:
        b = b.dequantize()
    return b.detach().float().numpy()


def _unpack_conv(packed):
    try:
        weight, bias = packed.unpack()
        stride, padding = packed.stride(), packed.padding()
        dilation, groups = packed.dilation(), packed.groups()
        transposed = bool(packed.transpose())
        output_padding = packed.output_padding() if transposed else [0, 0]
    except Exception as e:  # noqa: BLE001 - an unknown packed format is reported as such
        raise Unsupported(f"cannot unpack the convolution parameters ({e})") from None
    return weight, bias, stride, padding, dilation, groups, transposed, output_padding


def quantized_conv(cx: Converter, x, packed, scale, zero_point, fuse: FuseCode):
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    w, b, stride, padding, dilation, groups, transposed, output_padding = _unpack_conv(packed)
    if w.dim() != 4:
        raise Unsupported(f"quantized {w.dim() - 2}-D convolution")
    bias = _bias_array(b)
    per_tensor = _weight(w)
    if per_tensor is None:  # per-channel: float layer between DEQUANTIZE and QUANTIZE
        wf = w.dequantize().float().numpy()
        f = float_of(cx, x)
        if transposed:
            y = conv_transpose(cx, f, wf, bias, stride, padding, output_padding, groups,
                               dilation, fuse=fuse)
        else:
            y = conv2d_tensor(cx, f, wf, bias, stride, padding, dilation, groups, fuse)
        return quantize(cx, y, out_scale, out_zp)
    q, w_scale, w_zp = per_tensor
    quant = ConvQuant(w_scale, w_zp, out_scale, out_zp)
    if transposed:
        return conv_transpose(cx, x, q, bias, stride, padding, output_padding, groups,
                              dilation, quant, fuse)
    return conv2d_tensor(cx, x, q, bias, stride, padding, dilation, groups, fuse, quant)


@lowering("quantized::conv2d", "quantized::conv_transpose2d",
          nnapi=("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D",
                 "DEQUANTIZE", "QUANTIZE"),
          notes="per-tensor weights in 8 bits; per-channel weights in float")
def qconv2d(cx: Converter, x, packed, scale, zero_point):
    return quantized_conv(cx, x, packed, scale, zero_point, FuseCode.NONE)


@lowering("quantized::conv2d_relu",
          nnapi=("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "DEQUANTIZE", "QUANTIZE"),
          notes="fused RELU")
def qconv2d_relu(cx: Converter, x, packed, scale, zero_point):
    return quantized_conv(cx, x, packed, scale, zero_point, FuseCode.RELU)


def quantized_linear(cx: Converter, x, packed, scale, zero_point, fuse: FuseCode):
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    try:
        w, b = torch.ops.quantized.linear_unpack(packed)
    except Exception as e:  # noqa: BLE001
        raise Unsupported(f"cannot unpack the linear parameters ({e})") from None
    bias = _bias_array(b)
    per_tensor = _weight(w)
    if per_tensor is None:
        y = fully_connected(cx, float_of(cx, x), w.dequantize().float().numpy(), bias, fuse)
        return quantize(cx, y, out_scale, out_zp)
    q, w_scale, w_zp = per_tensor
    return fully_connected(cx, x, q, bias, fuse, ConvQuant(w_scale, w_zp, out_scale, out_zp))


@lowering("quantized::linear", nnapi=("FULLY_CONNECTED", "DEQUANTIZE", "QUANTIZE"),
          notes="per-tensor weights in 8 bits; per-channel weights in float")
def qlinear(cx: Converter, x, packed, scale, zero_point):
    return quantized_linear(cx, x, packed, scale, zero_point, FuseCode.NONE)


@lowering("quantized::linear_relu", nnapi=("FULLY_CONNECTED", "DEQUANTIZE", "QUANTIZE"),
          notes="fused RELU")
def qlinear_relu(cx: Converter, x, packed, scale, zero_point):
    return quantized_linear(cx, x, packed, scale, zero_point, FuseCode.RELU)


def quantized_binary(cx: Converter, op: Op, a, b, scale, zero_point, fuse: FuseCode):
    a, b = quantized_input(a), quantized_input(b)
    out_scale, out_zp = _output_params(scale, zero_point)
    (ta, tb), shape, layout = broadcast_operands(cx, [a, b], "quint8")
    return cx.emit(op, dict(input0=ta, input1=tb, fuse_code=cx.i32(int(fuse))), shape, "quint8",
                   layout, out_scale, out_zp)


@lowering("quantized::add", nnapi=("ADD",))
def qadd(cx: Converter, a, b, scale, zero_point):
    return quantized_binary(cx, Op.ADD, a, b, scale, zero_point, FuseCode.NONE)


@lowering("quantized::add_relu", nnapi=("ADD",), notes="fused RELU")
def qadd_relu(cx: Converter, a, b, scale, zero_point):
    return quantized_binary(cx, Op.ADD, a, b, scale, zero_point, FuseCode.RELU)


@lowering("quantized::mul", nnapi=("MUL",))
def qmul(cx: Converter, a, b, scale, zero_point):
    return quantized_binary(cx, Op.MUL, a, b, scale, zero_point, FuseCode.NONE)


@lowering("quantized::mul_relu", nnapi=("MUL",), notes="fused RELU")
def qmul_relu(cx: Converter, a, b, scale, zero_point):
    return quantized_binary(cx, Op.MUL, a, b, scale, zero_point, FuseCode.RELU)


def _scalar_in_float(cx: Converter, op: Op, a, b, fuse: FuseCode):
    """quantized::add_scalar/mul_scalar: PyTorch derives the output quantization itself."""
    a = quantized_input(a)
    out_scale, out_zp = cx.example_quant()
    y = arithmetic(cx, op, float_of(cx, a), constant_float(b, "scalar"), fuse)
    return quantize(cx, y, out_scale, out_zp)


@lowering("quantized::add_scalar", nnapi=("DEQUANTIZE", "ADD", "QUANTIZE"))
def qadd_scalar(cx: Converter, a, b):
    return _scalar_in_float(cx, Op.ADD, a, b, FuseCode.NONE)


@lowering("quantized::add_scalar_relu", nnapi=("DEQUANTIZE", "ADD", "QUANTIZE"))
def qadd_scalar_relu(cx: Converter, a, b):
    return _scalar_in_float(cx, Op.ADD, a, b, FuseCode.RELU)


@lowering("quantized::mul_scalar", nnapi=("DEQUANTIZE", "MUL", "QUANTIZE"))
def qmul_scalar(cx: Converter, a, b):
    return _scalar_in_float(cx, Op.MUL, a, b, FuseCode.NONE)


@lowering("quantized::cat", nnapi=("CONCATENATION",),
          notes="inputs may have different scales (requantized by NNAPI)")
def qcat(cx: Converter, items, dim, scale, zero_point):
    out_scale, out_zp = _output_params(scale, zero_point)
    return concatenate(cx, [quantized_input(t) for t in items], dim, out_scale, out_zp)


@lowering("quantized::hardswish",
          nnapi=("DEQUANTIZE", "ADD", "MUL", "DIV", "QUANTIZE", "HARD_SWISH"),
          notes="computed in float; one quantized HARD_SWISH with target_level=4")
def qhardswish(cx: Converter, x, scale, zero_point):
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    if cx.allows(FeatureLevel.ANDROID_11):
        return cx.emit(Op.HARD_SWISH, dict(input=x), x.shape, x.dtype, x.layout, out_scale,
                       out_zp)
    f = float_of(cx, x)
    shifted = arithmetic(cx, Op.ADD, f, 3.0, FuseCode.RELU6)
    y = arithmetic(cx, Op.DIV, arithmetic(cx, Op.MUL, f, shifted), 6.0)
    return quantize(cx, y, out_scale, out_zp)


@lowering("quantized::hardsigmoid", nnapi=("DEQUANTIZE", "ADD", "DIV", "QUANTIZE"),
          notes="computed in float")
def qhardsigmoid(cx: Converter, x, scale=None, zero_point=None):
    x = quantized_input(x)
    out_scale, out_zp = cx.example_quant() if scale is None else _output_params(scale,
                                                                                  zero_point)
    return quantize(cx, _hardsigmoid(cx, float_of(cx, x)), out_scale, out_zp)


@lowering("quantized::batch_norm2d", "quantized::batch_norm2d_relu", "quantized::batch_norm",
          nnapi=("DEQUANTIZE", "MUL", "ADD", "RELU", "QUANTIZE"), notes="computed in float")
def qbatch_norm(cx: Converter, x, weight, bias, mean, var, eps, scale, zero_point):
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    y = batch_norm(cx, float_of(cx, x), weight, bias, mean, var, False, 0.1, eps)
    if cx.node.kind.endswith("_relu"):
        y = cx.emit_like(Op.RELU, dict(input=y), y)
    return quantize(cx, y, out_scale, out_zp)


@lowering("quantized::relu6", nnapi=("RELU6",))
def qrelu6(cx: Converter, x, inplace=False):
    x = quantized_input(x)
    return cx.emit_like(Op.RELU6, dict(input=x), x)


@lowering("quantized::leaky_relu", nnapi=("DEQUANTIZE", "PRELU", "QUANTIZE"),
          notes="computed in float")
def qleaky_relu(cx: Converter, x, slope, inplace, scale, zero_point):
    from .activation import leaky_relu

    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    return quantize(cx, leaky_relu(cx, float_of(cx, x), slope), out_scale, out_zp)


@lowering("quantized::sigmoid", nnapi=("LOGISTIC",))
def qsigmoid(cx: Converter, x, scale, zero_point):
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    if (out_scale, out_zp) == (1.0 / 256, 0):
        return cx.emit(Op.LOGISTIC, dict(input=x), x.shape, "quint8", x.layout, out_scale, out_zp)
    f = float_of(cx, x)
    return quantize(cx, cx.emit_like(Op.LOGISTIC, dict(input=f), f), out_scale, out_zp)
