"""The quantized:: ops of eager and FX graph mode quantization, and quantize/dequantize.

Activations are quint8 (TENSOR_QUANT8_ASYMM), or qint8 (TENSOR_QUANT8_ASYMM_SIGNED, feature
level 4) when PT2E quantized the model for ``target_level=4``; every quantized op keeps its
input's type. Per-tensor weights take the activations' type (qint8 weights become uint8 with
zero point + 128 for quint8 activations) and the float bias becomes int32 with scale
input.scale * weight.scale, as NNAPI's quantized CONV_2D / FULLY_CONNECTED take them.

Per-channel symmetric int8 weights of a convolution or linear layer become NNAPI's
TENSOR_QUANT8_SYMM_PER_CHANNEL filters (feature level 3; a linear layer as a 1x1 CONV_2D,
since FULLY_CONNECTED takes no per-channel weights) when the back-end's format carries them
(``cx.per_channel_weights``: ExecuTorch's blob). PyTorch's serialized NNAPI format
(nnapi_model_loader.cpp) cannot, so there such a layer runs as the float layer on
dequantized weights between DEQUANTIZE and QUANTIZE (counted in ``cx.per_channel_in_float``;
``convert`` says so in one line); its output still matches PyTorch's within one quantum.
Transposed convolutions keep that float form with per-channel weights. hardswish, batch,
layer, group and instance norm and matmul, which NNAPI level 3 cannot compute in 8 bits, run
the same way in float.

The other operand of add and mul may be a number (the ``.Scalar`` overloads, e.g. a residual sum
that starts from 0) or a quantized constant (FX quantizes parameters such as a position
embedding or a layer scale ahead of time).

This family wraps the float families: unlike the others, which share only the building
blocks of ``builder/``, it calls their tensor forms (``conv.conv2d_tensor`` and
``conv_transpose``, ``linear.fully_connected`` and ``matmul_tensors``, the norms, softmax and
leaky_relu), with quantized operands or between DEQUANTIZE and QUANTIZE; moving those into
``builder/`` would move most of those families.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np
import torch

from ...nnapi.codes import FeatureLevel, FuseCode
from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import (
    arithmetic,
    composed_hardsigmoid,
    composed_hardswish,
    float_of,
    quantize_as,
)
from ..builder.common import Ints, broadcast_operands, constant_float, require_tensor, static_int
from ..builder.context import Arg, Converter
from ..builder.slicing import concatenate
from ..builder.spatial import ConvQuant
from ..builder.symbolic import SymInt
from ..builder.values import QUANT_DTYPES, QUANT_RANGES, TensorValue
from ..capture.graph import SCALAR_TYPES
from ..capture.packed import ConvParams, LinearParams, StoredWeight
from ..errors import Unsupported
from ..quant_policy import fixed_output
from . import lowering
from .activation import leaky_relu
from .conv import conv2d_tensor, conv_transpose
from .linear import fully_connected, matmul_tensors
from .norm import batch_norm_tensor, group_norm, instance_norm, layer_norm
from .reduce import softmax


def quantized_input(x: Arg) -> TensorValue:
    x = require_tensor(x)
    if not x.is_quantized:
        raise Unsupported(f"a quantized op on a {x.dtype} tensor")
    return x


def _output_params(scale: Arg, zero_point: Arg) -> tuple[float, int]:
    return constant_float(scale, "output scale"), static_int(zero_point, "output zero point")


@lowering("aten::quantize_per_tensor", nnapi=("QUANTIZE",),
          notes="quint8; qint8 with target_level=4; a model input only quantized to quint8 is"
                " quantized on the host")
def quantize_per_tensor(cx: Converter, x: Arg, scale: Arg, zero_point: Arg, dtype: Arg
                        ) -> TensorValue:
    x = require_tensor(x)
    name = quant_dtype_of(dtype)
    s, zp = _output_params(scale, zero_point)
    if x.is_quantized and (x.dtype, x.scale, x.zero_point) == (name, s, zp):
        return x  # a model input the wrapper quantizes on the host (lowerer._quantized_on_host)
    if not x.is_float:
        raise Unsupported(f"quantize_per_tensor of a {x.dtype} tensor")
    return quantize_as(cx, x, s, zp, name)


def quant_dtype_of(dtype: Arg) -> str:
    """The 8-bit activation type a quantize_per_tensor's ``dtype`` argument names (qint8
    makes the model need feature level 4: ``levels.model_requirements`` says so)."""
    code = static_int(dtype, "dtype")
    name = next((n for n in QUANT_DTYPES if SCALAR_TYPES[n] == code), None)
    if name is None:
        raise Unsupported(f"quantization to scalar type {code} (NNAPI activations are quint8,"
                          " or qint8 from feature level 4)")
    return name


@lowering("aten::dequantize", nnapi=("DEQUANTIZE",))
def dequantize(cx: Converter, x: Arg) -> TensorValue | list[TensorValue]:
    if isinstance(x, list):
        return [float_of(cx, quantized_input(t)) for t in x]
    x = require_tensor(x)
    if not x.is_quantized:
        return x
    return float_of(cx, x)


def _weight(w: torch.Tensor | StoredWeight, dtype: str = "quint8"
            ) -> tuple[np.ndarray, float, int] | None:
    """(weights of the activations' 8-bit ``dtype``, scale, zero point) for per-tensor
    weights, or None for per-channel. NNAPI takes the filter in the input's type, so signed
    weights move by 128 for unsigned activations (and unsigned ones back for signed)."""
    if isinstance(w, StoredWeight):
        if w.axis is not None:
            return None
        if w.values.dtype not in (torch.int8, torch.uint8):
            raise Unsupported(f"8-bit weights stored as {w.values.dtype}")
        q, zero_point = _in_type(w.values.numpy(), int(w.zero_point), dtype)
        return q, float(w.scale), zero_point
    if w.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        if w.dtype not in (torch.qint8, torch.quint8):
            raise Unsupported(f"quantized weights of type {w.dtype}")
        q, zero_point = _in_type(w.int_repr().numpy(), int(w.q_zero_point()), dtype)
        return q, float(w.q_scale()), zero_point
    if w.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric,
                       torch.per_channel_affine_float_qparams):
        return None
    raise Unsupported(f"weights quantized with {w.qscheme()}")


def _per_channel(w: torch.Tensor | StoredWeight) -> tuple[np.ndarray, tuple[float, ...]] | None:
    """(int8 values, one scale per output channel) of symmetric int8 weights quantized along
    their first dimension (a convolution's or linear layer's output channels), what NNAPI's
    TENSOR_QUANT8_SYMM_PER_CHANNEL holds; None for any other quantization."""
    if isinstance(w, StoredWeight):
        if w.axis != 0 or w.values.dtype != torch.int8 or \
                bool((torch.as_tensor(w.zero_point) != 0).any()):
            return None
        values, scales = w.values, torch.as_tensor(w.scale)
    else:
        if w.qscheme() not in (torch.per_channel_affine, torch.per_channel_symmetric) or \
                w.dtype != torch.qint8 or w.q_per_channel_axis() != 0 or \
                bool((w.q_per_channel_zero_points() != 0).any()):
            return None
        values, scales = w.int_repr(), w.q_per_channel_scales()
    return values.numpy(), tuple(float(s) for s in scales.reshape(-1))


def _in_type(q: np.ndarray, zero_point: int, dtype: str) -> tuple[np.ndarray, int]:
    """8-bit integers ``q`` (int8 or uint8) with ``zero_point``, as ``dtype`` holds them."""
    lowest = QUANT_RANGES[dtype][0]
    shift = lowest - (-128 if q.dtype == np.int8 else 0)
    return (q.astype(np.int32) + shift).astype(np.int8 if lowest < 0 else np.uint8), \
        zero_point + shift


def _bias_array(b: torch.Tensor | None) -> np.ndarray | None:
    if b is None:
        return None
    if b.is_quantized:
        b = b.dequantize()
    return b.detach().float().numpy()


class PackedConv(Protocol):
    """What the converter reads of PyTorch's packed convolution parameters (a
    ``torch.classes.quantized.Conv2dPackedParamsBase``)."""

    def unpack(self) -> tuple[torch.Tensor, torch.Tensor | None]: ...
    def stride(self) -> list[int]: ...
    def padding(self) -> list[int]: ...
    def dilation(self) -> list[int]: ...
    def groups(self) -> int: ...
    def transpose(self) -> int: ...
    def output_padding(self) -> list[int]: ...


class _ConvArgs(NamedTuple):
    weight: torch.Tensor | StoredWeight
    bias: torch.Tensor | None
    stride: Ints
    padding: str | Ints
    dilation: Ints
    groups: int
    transposed: bool
    output_padding: Ints


def _unpack_conv(packed: ConvParams | PackedConv) -> _ConvArgs:
    if isinstance(packed, ConvParams):
        p = packed
        return _ConvArgs(p.weight, p.bias, p.stride, p.padding, p.dilation, p.groups,
                         p.transposed, list(p.output_padding))
    try:
        weight, bias = packed.unpack()
        stride, padding = packed.stride(), packed.padding()
        dilation, groups = packed.dilation(), packed.groups()
        transposed = bool(packed.transpose())
        output_padding = packed.output_padding() if transposed else [0, 0]
    except Exception as e:  # noqa: BLE001 - an unknown packed format is reported as such
        raise Unsupported(f"cannot unpack the convolution parameters ({e})") from None
    return _ConvArgs(weight, bias, stride, padding, dilation, groups, transposed,
                     output_padding)


def quantized_conv(cx: Converter, x: Arg, packed: ConvParams | PackedConv, scale: Arg,
                   zero_point: Arg, fuse: FuseCode) -> TensorValue:
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    w, b, stride, padding, dilation, groups, transposed, output_padding = _unpack_conv(packed)
    if w.dim() != 4:
        raise Unsupported(f"quantized {w.dim() - 2}-D convolution")
    bias = _bias_array(b)
    per_tensor = _weight(w, x.dtype)
    per_channel = _per_channel(w) if per_tensor is None and cx.per_channel_weights and \
        not transposed else None
    if per_channel is not None:
        values, scales = per_channel
        quant = ConvQuant(0.0, 0, out_scale, out_zp, scales)
        return conv2d_tensor(cx, x, values, bias, stride, padding, dilation, groups, fuse, quant)
    if per_tensor is None:  # per-channel: float layer between DEQUANTIZE and QUANTIZE
        cx.per_channel_in_float += 1
        wf = w.dequantize().float().numpy()
        f = float_of(cx, x)
        if transposed:
            y = conv_transpose(cx, f, wf, bias, stride, padding, output_padding, groups,
                               dilation, fuse=fuse)
        else:
            y = conv2d_tensor(cx, f, wf, bias, stride, padding, dilation, groups, fuse)
        return quantize_as(cx, y, out_scale, out_zp, x.dtype)
    q, w_scale, w_zp = per_tensor
    quant = ConvQuant(w_scale, w_zp, out_scale, out_zp)
    if transposed:
        return conv_transpose(cx, x, q, bias, stride, padding, output_padding, groups,
                              dilation, quant, fuse)
    return conv2d_tensor(cx, x, q, bias, stride, padding, dilation, groups, fuse, quant)


@lowering("quantized::conv2d", "quantized::conv_transpose2d",
          nnapi=("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D",
                 "DEQUANTIZE", "QUANTIZE"),
          notes="per-tensor weights in 8 bits; per-channel weights in 8 bits where the"
                " back-end carries them (ExecuTorch; not transposed), else in float")
def qconv2d(cx: Converter, x: Arg, packed: ConvParams | PackedConv, scale: Arg,
            zero_point: Arg) -> TensorValue:
    return quantized_conv(cx, x, packed, scale, zero_point, FuseCode.NONE)


@lowering("quantized::conv2d_relu",
          nnapi=("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "DEQUANTIZE", "QUANTIZE"),
          notes="fused RELU")
def qconv2d_relu(cx: Converter, x: Arg, packed: ConvParams | PackedConv, scale: Arg,
                 zero_point: Arg) -> TensorValue:
    return quantized_conv(cx, x, packed, scale, zero_point, FuseCode.RELU)


def quantized_linear(cx: Converter, x: Arg, packed: LinearParams | torch.ScriptObject,
                     scale: Arg, zero_point: Arg, fuse: FuseCode) -> TensorValue:
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    try:
        w, b = (packed.weight, packed.bias) if isinstance(packed, LinearParams) \
            else torch.ops.quantized.linear_unpack(packed)
    except Exception as e:  # noqa: BLE001
        raise Unsupported(f"cannot unpack the linear parameters ({e})") from None
    bias = _bias_array(b)
    per_tensor = _weight(w, x.dtype)
    per_channel = _per_channel(w) if per_tensor is None and cx.per_channel_weights else None
    if per_channel is not None:
        return _per_channel_linear(cx, x, *per_channel, bias, fuse, out_scale, out_zp)
    if per_tensor is None:
        cx.per_channel_in_float += 1
        y = fully_connected(cx, float_of(cx, x), w.dequantize().float().numpy(), bias, fuse)
        return quantize_as(cx, y, out_scale, out_zp, x.dtype)
    q, w_scale, w_zp = per_tensor
    return fully_connected(cx, x, q, bias, fuse, ConvQuant(w_scale, w_zp, out_scale, out_zp))


def _per_channel_linear(cx: Converter, x: TensorValue, values: np.ndarray,
                        scales: tuple[float, ...], bias: np.ndarray | None, fuse: FuseCode,
                        out_scale: float, out_zp: int) -> TensorValue:
    """A linear layer with per-channel weights [O, K] as a 1x1 CONV_2D of the rows as
    [rows, K, 1, 1] images (NNAPI's FULLY_CONNECTED takes no per-channel weights)."""
    out_features, in_features = values.shape
    if x.shape[-1] != in_features:
        raise Unsupported(f"input has {x.shape[-1]} features, the weight expects {in_features}")
    rows: SymInt = 1
    for d in x.shape[:-1]:
        rows = rows * d
    images = cx.reshape(x, (rows, in_features, 1, 1))
    y = conv2d_tensor(cx, images, values.reshape(out_features, in_features, 1, 1), bias,
                      1, 0, 1, 1, fuse, ConvQuant(0.0, 0, out_scale, out_zp, scales))
    return cx.reshape(y, (*x.shape[:-1], out_features))


@lowering("quantized::linear", nnapi=("FULLY_CONNECTED", "CONV_2D", "DEQUANTIZE", "QUANTIZE"),
          notes="per-tensor weights in 8 bits; per-channel weights in 8 bits (a 1x1"
                " CONV_2D) where the back-end carries them (ExecuTorch), else in float")
def qlinear(cx: Converter, x: Arg, packed: LinearParams | torch.ScriptObject, scale: Arg,
            zero_point: Arg) -> TensorValue:
    return quantized_linear(cx, x, packed, scale, zero_point, FuseCode.NONE)


@lowering("quantized::linear_relu", nnapi=("FULLY_CONNECTED", "DEQUANTIZE", "QUANTIZE"),
          notes="fused RELU")
def qlinear_relu(cx: Converter, x: Arg, packed: LinearParams | torch.ScriptObject, scale: Arg,
                 zero_point: Arg) -> TensorValue:
    return quantized_linear(cx, x, packed, scale, zero_point, FuseCode.RELU)


def _binary_operand(v: Arg) -> torch.Tensor | TensorValue:
    """A quantized tensor of the model, or a quantized constant."""
    if isinstance(v, torch.Tensor) and v.is_quantized:
        return v
    return quantized_input(v)


def quantized_binary(cx: Converter, op: Op, a: Arg, b: Arg, scale: Arg, zero_point: Arg,
                     fuse: FuseCode) -> TensorValue:
    a, b = _binary_operand(a), _binary_operand(b)
    if not isinstance(a, TensorValue) and not isinstance(b, TensorValue):
        raise Unsupported(f"{op.name} of two constants")
    out_scale, out_zp = _output_params(scale, zero_point)
    dtype = next(t.dtype for t in (a, b) if isinstance(t, TensorValue))
    (ta, tb), shape, layout = broadcast_operands(cx, [a, b], dtype)
    return cx.emit(op, dict(input0=ta, input1=tb, fuse_code=cx.i32(int(fuse))), shape, dtype,
                   layout, out_scale, out_zp)


def _scalar_in_float(cx: Converter, op: Op, a: Arg, b: Arg, fuse: FuseCode) -> TensorValue:
    """A quantized tensor and a number: PyTorch derives the output quantization itself."""
    a = quantized_input(a)
    out_scale, out_zp = cx.example_quant()
    y = arithmetic(cx, op, float_of(cx, a), constant_float(b, "scalar"), fuse)
    return quantize_as(cx, y, out_scale, out_zp, a.dtype)


def _add_or_mul(cx: Converter, op: Op, fuse: FuseCode, a: Arg, b: Arg, scale: Arg, zero_point: Arg
                ) -> TensorValue:
    """Every overload of quantized::add/mul(_relu): (qa, qb, scale, zero_point), (qa, number)
    and (number, qa)."""
    if scale is None and zero_point is None:
        tensor, number = (b, a) if isinstance(b, TensorValue) else (a, b)
        return _scalar_in_float(cx, op, tensor, number, fuse)
    return quantized_binary(cx, op, a, b, scale, zero_point, fuse)


_BINARY_NOTES = "the other operand may be a number or a quantized constant"


@lowering("quantized::add", nnapi=("ADD", "DEQUANTIZE", "QUANTIZE"), notes=_BINARY_NOTES)
def qadd(cx: Converter, a: Arg, b: Arg, scale: Arg = None, zero_point: Arg = None) -> TensorValue:
    return _add_or_mul(cx, Op.ADD, FuseCode.NONE, a, b, scale, zero_point)


@lowering("quantized::add_relu", nnapi=("ADD", "DEQUANTIZE", "QUANTIZE"),
          notes="fused RELU; " + _BINARY_NOTES)
def qadd_relu(cx: Converter, a: Arg, b: Arg, scale: Arg = None, zero_point: Arg = None
              ) -> TensorValue:
    return _add_or_mul(cx, Op.ADD, FuseCode.RELU, a, b, scale, zero_point)


@lowering("quantized::mul", nnapi=("MUL", "DEQUANTIZE", "QUANTIZE"), notes=_BINARY_NOTES)
def qmul(cx: Converter, a: Arg, b: Arg, scale: Arg = None, zero_point: Arg = None) -> TensorValue:
    return _add_or_mul(cx, Op.MUL, FuseCode.NONE, a, b, scale, zero_point)


@lowering("quantized::mul_relu", nnapi=("MUL", "DEQUANTIZE", "QUANTIZE"),
          notes="fused RELU; " + _BINARY_NOTES)
def qmul_relu(cx: Converter, a: Arg, b: Arg, scale: Arg = None, zero_point: Arg = None
              ) -> TensorValue:
    return _add_or_mul(cx, Op.MUL, FuseCode.RELU, a, b, scale, zero_point)


@lowering("quantized::add_scalar", nnapi=("DEQUANTIZE", "ADD", "QUANTIZE"))
def qadd_scalar(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    return _scalar_in_float(cx, Op.ADD, a, b, FuseCode.NONE)


@lowering("quantized::add_scalar_relu", nnapi=("DEQUANTIZE", "ADD", "QUANTIZE"))
def qadd_scalar_relu(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    return _scalar_in_float(cx, Op.ADD, a, b, FuseCode.RELU)


@lowering("quantized::mul_scalar", nnapi=("DEQUANTIZE", "MUL", "QUANTIZE"))
def qmul_scalar(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    return _scalar_in_float(cx, Op.MUL, a, b, FuseCode.NONE)


@lowering("quantized::mul_scalar_relu", nnapi=("DEQUANTIZE", "MUL", "QUANTIZE"))
def qmul_scalar_relu(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    return _scalar_in_float(cx, Op.MUL, a, b, FuseCode.RELU)


@lowering("quantized::matmul", nnapi=("DEQUANTIZE", "MUL", "REDUCE_SUM", "QUANTIZE"),
          notes="computed in float")
def qmatmul(cx: Converter, a: Arg, b: Arg, scale: Arg, zero_point: Arg) -> TensorValue:
    out_scale, out_zp = _output_params(scale, zero_point)
    a = quantized_input(a)
    product = matmul_tensors(cx, float_of(cx, a), float_of(cx, quantized_input(b)))
    return quantize_as(cx, product, out_scale, out_zp, a.dtype)


@lowering("quantized::cat", nnapi=("CONCATENATION",),
          notes="inputs may have different scales (requantized by NNAPI)")
def qcat(cx: Converter, items: Sequence[Arg], dim: int, scale: Arg, zero_point: Arg
         ) -> TensorValue:
    out_scale, out_zp = _output_params(scale, zero_point)
    return concatenate(cx, [quantized_input(t) for t in items], dim, out_scale, out_zp)


@lowering("quantized::hardswish",
          nnapi=("DEQUANTIZE", "ADD", "MUL", "DIV", "QUANTIZE", "HARD_SWISH"),
          notes="computed in float; one quantized HARD_SWISH with target_level=4")
def qhardswish(cx: Converter, x: Arg, scale: Arg, zero_point: Arg) -> TensorValue:
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    if cx.allows(FeatureLevel.ANDROID_11, x):
        return cx.emit(Op.HARD_SWISH, dict(input=x), x.shape, x.dtype, x.layout, out_scale,
                       out_zp)
    y = composed_hardswish(cx, float_of(cx, x))
    return quantize_as(cx, y, out_scale, out_zp, x.dtype)


@lowering("quantized::hardsigmoid", nnapi=("DEQUANTIZE", "ADD", "DIV", "QUANTIZE"),
          notes="computed in float")
def qhardsigmoid(cx: Converter, x: Arg, scale: Arg = None, zero_point: Arg = None) -> TensorValue:
    x = quantized_input(x)
    out_scale, out_zp = cx.example_quant() if scale is None else _output_params(scale,
                                                                                  zero_point)
    return quantize_as(cx, composed_hardsigmoid(cx, float_of(cx, x)), out_scale, out_zp, x.dtype)


@lowering("quantized::batch_norm2d", "quantized::batch_norm2d_relu", "quantized::batch_norm",
          nnapi=("DEQUANTIZE", "MUL", "ADD", "RELU", "QUANTIZE"), notes="computed in float")
def qbatch_norm(cx: Converter, x: Arg, weight: Arg, bias: Arg, mean: Arg, var: Arg, eps: Arg,
                scale: Arg, zero_point: Arg) -> TensorValue:
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    y = batch_norm_tensor(cx, float_of(cx, x), weight, bias, mean, var, eps)
    if cx.current_node.kind.endswith("_relu"):
        y = cx.emit_like(Op.RELU, dict(input=y), y)
    return quantize_as(cx, y, out_scale, out_zp, x.dtype)


@lowering("quantized::relu6", nnapi=("RELU6",))
def qrelu6(cx: Converter, x: Arg, inplace: bool = False) -> TensorValue:
    x = quantized_input(x)
    return cx.emit_like(Op.RELU6, dict(input=x), x)


@lowering("quantized::leaky_relu", nnapi=("DEQUANTIZE", "PRELU", "QUANTIZE"),
          notes="computed in float")
def qleaky_relu(cx: Converter, x: Arg, slope: Arg, inplace: bool, scale: Arg, zero_point: Arg
                ) -> TensorValue:
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    return quantize_as(cx, leaky_relu(cx, float_of(cx, x), slope), out_scale, out_zp, x.dtype)


@lowering("quantized::sigmoid", nnapi=("LOGISTIC",))
def qsigmoid(cx: Converter, x: Arg, scale: Arg, zero_point: Arg) -> TensorValue:
    x = quantized_input(x)
    out_scale, out_zp = _output_params(scale, zero_point)
    if (out_scale, out_zp) == fixed_output(Op.LOGISTIC, x.nnapi_type):
        return cx.emit(Op.LOGISTIC, dict(input=x), x.shape, x.dtype, x.layout, out_scale, out_zp)
    f = float_of(cx, x)
    return quantize_as(cx, cx.emit_like(Op.LOGISTIC, dict(input=f), f), out_scale, out_zp,
                       x.dtype)


@lowering("quantized::layer_norm", nnapi=("DEQUANTIZE", "MEAN", "SUB", "MUL", "ADD", "RSQRT",
                                          "QUANTIZE"), notes="computed in float")
def qlayer_norm(cx: Converter, x: Arg, normalized_shape: Sequence[SymInt], weight: Arg,
                bias: Arg, eps: Arg, scale: Arg, zero_point: Arg) -> TensorValue:
    return layer_norm(cx, quantized_input(x), normalized_shape, weight, bias, eps)


@lowering("quantized::group_norm", nnapi=("DEQUANTIZE", "RESHAPE", "MEAN", "SUB", "MUL", "ADD",
                                          "RSQRT", "QUANTIZE"), notes="computed in float")
def qgroup_norm(cx: Converter, x: Arg, groups: int, weight: Arg, bias: Arg, eps: Arg, scale: Arg,
                zero_point: Arg) -> TensorValue:
    return group_norm(cx, quantized_input(x), groups, weight, bias, eps)


@lowering("quantized::instance_norm", nnapi=("DEQUANTIZE", "MEAN", "SUB", "MUL", "ADD", "RSQRT",
                                             "QUANTIZE"), notes="computed in float")
def qinstance_norm(cx: Converter, x: Arg, weight: Arg, bias: Arg, eps: Arg, scale: Arg,
                   zero_point: Arg) -> TensorValue:
    return instance_norm(cx, quantized_input(x), weight, bias, None, None, True, 0.1, eps)


@lowering("quantized::softmax", nnapi=("SOFTMAX", "DEQUANTIZE", "QUANTIZE"),
          notes="8-bit SOFTMAX when the output has NNAPI's fixed scale 1/256, else in float")
def qsoftmax(cx: Converter, x: Arg, dim: int, scale: Arg, zero_point: Arg) -> TensorValue:
    return softmax(cx, quantized_input(x), dim)


@lowering("quantized::dropout", nnapi=(), notes="identity in eval mode")
def qdropout(cx: Converter, x: Arg, scale: Arg, zero_point: Arg, p: float = 0.5,
             training: bool = False) -> TensorValue:
    x = quantized_input(x)
    if static_int(training, "training"):
        raise Unsupported("dropout in training mode")
    if (x.scale, x.zero_point) != _output_params(scale, zero_point):
        raise Unsupported("a quantized dropout that changes the quantization")
    return x
