"""Activations and other element-wise unary math.

NNAPI feature level 3 has RELU/RELU1/RELU6, LOGISTIC, TANH, PRELU and the unary math ops;
hardswish, hardsigmoid, silu, gelu and elu are composed from them, except that with
``target_level=4`` hardswish is one HARD_SWISH and elu (selu) one ELU (and a MUL). gelu's erf
uses a rational approximation accurate to ~1e-7, far inside the 1e-5 tolerance. Quantized
inputs of RELU/RELU6/LOGISTIC/TANH/clamps stay quantized; other activations of quantized
tensors run in float between DEQUANTIZE and QUANTIZE.
"""

from __future__ import annotations

import math

import torch

from ...nnapi.codes import FeatureLevel, FuseCode
from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import arithmetic, composed_hardsigmoid, composed_hardswish, in_float
from ..builder.common import constant_float, require_tensor
from ..builder.context import Arg, Converter
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering

_UNARY = {
    "aten::relu": Op.RELU, "aten::relu_": Op.RELU,
    "aten::sigmoid": Op.LOGISTIC, "aten::sigmoid_": Op.LOGISTIC,
    "aten::tanh": Op.TANH, "aten::tanh_": Op.TANH,
    "aten::exp": Op.EXP, "aten::exp_": Op.EXP,
    "aten::log": Op.LOG, "aten::log_": Op.LOG,
    "aten::sqrt": Op.SQRT, "aten::sqrt_": Op.SQRT,
    "aten::rsqrt": Op.RSQRT, "aten::rsqrt_": Op.RSQRT,
    "aten::abs": Op.ABS, "aten::abs_": Op.ABS,
    "aten::neg": Op.NEG, "aten::neg_": Op.NEG,
    "aten::sin": Op.SIN, "aten::sin_": Op.SIN,
}
# Quantized outputs of these keep fixed parameters (NNAPI's and PyTorch's agree).
_QUANT_OK = (Op.RELU, Op.LOGISTIC, Op.TANH)


_FUSE_CODES = {Op.RELU: FuseCode.RELU, Op.RELU1: FuseCode.RELU1, Op.RELU6: FuseCode.RELU6}


def relu_like(cx: Converter, op: Op, x: TensorValue) -> TensorValue:
    """RELU/RELU1/RELU6, folded into the producing operation's fused activation when
    possible (a convolution, fully connected layer, pool or ADD/MUL...)."""
    fused = cx.fuse_activation(x, int(_FUSE_CODES[op]))
    return fused if fused is not None else cx.emit_like(op, dict(input=x), x)


def unary(cx: Converter, op: Op, x: TensorValue) -> TensorValue:
    if op == Op.RELU and (x.is_float or x.is_quantized):
        return relu_like(cx, op, x)
    if x.is_quantized:
        if op not in _QUANT_OK:
            return in_float(cx, x, lambda f: unary(cx, op, f))
        scale, zero_point = cx.example_quant()
        return cx.emit(op, dict(input=x), x.shape, x.dtype, x.layout, scale, zero_point,
                       x.groups)
    if not x.is_float:
        if op in (Op.ABS, Op.NEG) and x.dtype in ("int32", "int64"):
            return cx.emit_like(op, dict(input=x), x)
        raise Unsupported(f"{op.name} of {x.dtype} tensors")
    return cx.emit_like(op, dict(input=x), x)


def simple_unary(cx: Converter, x: Arg) -> TensorValue:
    return unary(cx, _UNARY[cx.current_node.kind], require_tensor(x))


for _kind, _op in _UNARY.items():  # registered one by one so each lists its own NNAPI op
    lowering(_kind, nnapi=(_op.name,), any_rank=True)(simple_unary)


@lowering("aten::floor", "aten::floor_", nnapi=("FLOOR",),
          any_rank=True)
def floor(cx: Converter, x: float | TensorValue) -> int | TensorValue:
    if not isinstance(x, TensorValue):
        return math.floor(x)
    return in_float(cx, x, lambda f: cx.emit_like(Op.FLOOR, dict(input=f), f))


@lowering("aten::ceil", "aten::ceil_", nnapi=("NEG", "FLOOR"),
          any_rank=True, notes="-floor(-x)")
def ceil(cx: Converter, x: float | TensorValue) -> int | TensorValue:
    if not isinstance(x, TensorValue):
        return math.ceil(x)

    def compute(f: TensorValue) -> TensorValue:
        neg = cx.emit_like(Op.NEG, dict(input=f), f)
        floor_neg = cx.emit_like(Op.FLOOR, dict(input=neg), neg)
        return cx.emit_like(Op.NEG, dict(input=floor_neg), f)

    return in_float(cx, x, compute)


def clamp_tensor(cx: Converter, x: TensorValue, low: Arg, high: Arg) -> TensorValue:
    """``clamp(x, low, high)``: RELU/RELU1/RELU6 where the bounds match, else MAX/MIN."""
    lo = None if low is None else constant_float(low, "clamp minimum")
    hi = None if high is None else constant_float(high, "clamp maximum")
    bounds: dict[tuple[float | None, float | None], Op] = {
        (0.0, None): Op.RELU, (-1.0, 1.0): Op.RELU1, (0.0, 6.0): Op.RELU6}
    fused = bounds.get((lo, hi))
    if fused is not None and (x.is_quantized or x.is_float):
        return relu_like(cx, fused, x)
    if x.is_quantized:
        return in_float(cx, x, lambda f: clamp_tensor(cx, f, lo, hi))
    out = x
    if lo is not None:
        out = cx.emit_like(Op.MAXIMUM, dict(input0=out, input1=cx.tensor(lo, like=out)), out)
    if hi is not None:
        out = cx.emit_like(Op.MINIMUM, dict(input0=out, input1=cx.tensor(hi, like=out)), out)
    return out


@lowering("aten::hardtanh", "aten::hardtanh_", nnapi=("RELU1", "RELU6", "MAXIMUM", "MINIMUM"),
          any_rank=True)
def hardtanh(cx: Converter, x: Arg, low: Arg = -1.0, high: Arg = 1.0) -> TensorValue:
    return clamp_tensor(cx, require_tensor(x), low, high)


@lowering("aten::relu6", "aten::relu6_", nnapi=("RELU6",),
          any_rank=True)
def relu6(cx: Converter, x: Arg) -> TensorValue:
    return clamp_tensor(cx, require_tensor(x), 0.0, 6.0)


@lowering("aten::clamp", "aten::clamp_", "aten::clip", "aten::clip_",
          nnapi=("RELU", "RELU1", "RELU6", "MAXIMUM", "MINIMUM"),
          any_rank=True,
          notes="constant bounds")
def clamp(cx: Converter, x: Arg, low: Arg = None, high: Arg = None) -> TensorValue:
    if isinstance(low, TensorValue) or isinstance(high, TensorValue):
        raise Unsupported("clamp with tensor bounds computed by the model")
    return clamp_tensor(cx, require_tensor(x), low, high)


@lowering("aten::clamp_min", "aten::clamp_min_", nnapi=("RELU", "MAXIMUM"),
          any_rank=True)
def clamp_min(cx: Converter, x: Arg, low: Arg) -> TensorValue:
    return clamp_tensor(cx, require_tensor(x), low, None)


@lowering("aten::clamp_max", "aten::clamp_max_", nnapi=("MINIMUM",),
          any_rank=True)
def clamp_max(cx: Converter, x: Arg, high: Arg) -> TensorValue:
    return clamp_tensor(cx, require_tensor(x), None, high)


@lowering("aten::hardsigmoid", "aten::hardsigmoid_", nnapi=("ADD", "MUL"),
          any_rank=True,
          notes="relu6(x + 3) / 6: ADD with fused RELU6, then MUL")
def hardsigmoid(cx: Converter, x: Arg) -> TensorValue:
    x = require_tensor(x)
    return in_float(cx, x, lambda f: composed_hardsigmoid(cx, f))


@lowering("aten::hardswish", "aten::hardswish_", nnapi=("ADD", "MUL", "DIV", "HARD_SWISH"),
          any_rank=True,
          notes="x * relu6(x + 3) / 6; one HARD_SWISH with target_level=4 or on int8")
def hardswish(cx: Converter, x: Arg) -> TensorValue:
    x = require_tensor(x)
    if cx.allows(FeatureLevel.ANDROID_11, x):
        return hard_swish(cx, x)
    return in_float(cx, x, lambda f: composed_hardswish(cx, f))


def hard_swish(cx: Converter, x: TensorValue) -> TensorValue:
    """One HARD_SWISH (feature level 4); a quantized output takes PyTorch's quantization."""
    if not x.is_quantized:
        return cx.emit_like(Op.HARD_SWISH, dict(input=x), x)
    scale, zero_point = cx.example_quant()
    return cx.emit(Op.HARD_SWISH, dict(input=x), x.shape, x.dtype, x.layout, scale, zero_point,
                   x.groups)


@lowering("aten::silu", "aten::silu_", nnapi=("LOGISTIC", "MUL"),
          any_rank=True, notes="x * sigmoid(x)")
def silu(cx: Converter, x: Arg) -> TensorValue:
    x = require_tensor(x)
    return in_float(cx, x, lambda f: arithmetic(cx, Op.MUL, f, unary(cx, Op.LOGISTIC, f)))


@lowering("aten::leaky_relu", "aten::leaky_relu_", nnapi=("PRELU",),
          any_rank=True)
def leaky_relu(cx: Converter, x: Arg, slope: Arg = 0.01) -> TensorValue:
    x = require_tensor(x)
    alpha = constant_float(slope, "negative_slope")

    def compute(f: TensorValue) -> TensorValue:
        a = cx.tensor(alpha, like=f)
        return cx.emit_like(Op.PRELU, dict(input=f, alpha=a), f)

    return in_float(cx, x, compute)


@lowering("aten::prelu", nnapi=("PRELU",), notes="weights: one or one per channel")
def prelu(cx: Converter, x: Arg, weight: Arg) -> TensorValue:
    x = require_tensor(x)
    if not isinstance(weight, torch.Tensor):
        raise Unsupported("prelu weights computed by the model")
    w = weight.detach().float().reshape(-1)
    if w.numel() == 1:
        shape = (1,) * x.rank
    elif x.rank >= 2 and w.numel() == x.shape[1]:
        shape = (1, w.numel()) + (1,) * (x.rank - 2)
    else:
        raise Unsupported(f"prelu with {w.numel()} weights for input shape {list(x.shape)}")

    def compute(f: TensorValue) -> TensorValue:
        a = cx.constant(w.numpy().reshape(shape), f.dtype, layout=f.layout)
        return cx.emit_like(Op.PRELU, dict(input=f, alpha=a), f)

    return in_float(cx, x, compute)


@lowering("aten::elu", "aten::elu_",
          nnapi=("EXP", "SUB", "MUL", "MINIMUM", "RELU", "ADD", "ELU"), any_rank=True,
          notes="relu(x) + alpha * (exp(min(x, 0)) - 1); one ELU with target_level=4")
def elu(cx: Converter, x: Arg, alpha: Arg = 1.0, scale: Arg = 1.0, input_scale: Arg = 1.0
        ) -> TensorValue:
    x = require_tensor(x)
    a = constant_float(alpha, "alpha")
    s = constant_float(scale, "scale")
    si = constant_float(input_scale, "input_scale")

    def compute(f: TensorValue) -> TensorValue:
        if cx.allows(FeatureLevel.ANDROID_11) and si == 1.0:
            out = cx.emit_like(Op.ELU, dict(input=f, alpha=cx.float_scalar(a, f)), f)
            return arithmetic(cx, Op.MUL, out, s) if s != 1.0 else out
        neg = cx.emit_like(Op.MINIMUM, dict(input0=f, input1=cx.tensor(0.0, like=f)), f)
        if si != 1.0:
            neg = arithmetic(cx, Op.MUL, neg, si)
        em1 = arithmetic(cx, Op.SUB, cx.emit_like(Op.EXP, dict(input=neg), neg), 1.0)
        out = arithmetic(cx, Op.ADD, cx.emit_like(Op.RELU, dict(input=f), f),
                         arithmetic(cx, Op.MUL, em1, a) if a != 1.0 else em1)
        return arithmetic(cx, Op.MUL, out, s) if s != 1.0 else out

    return in_float(cx, x, compute)


@lowering("aten::selu", "aten::selu_",
          nnapi=("EXP", "SUB", "MUL", "MINIMUM", "RELU", "ADD", "ELU"), any_rank=True,
          notes="elu with SELU's constants")
def selu(cx: Converter, x: Arg) -> TensorValue:
    return elu(cx, x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


# erf(z) for z >= 0 as 1 - t * poly(t) * exp(-z^2), t = 1 / (1 + p z): Abramowitz and
# Stegun 7.1.26 (absolute error below 1.5e-7).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


@lowering("aten::gelu", "aten::gelu_", nnapi=("ABS", "MUL", "ADD", "DIV", "EXP", "NEG", "TANH"),
          any_rank=True,
          notes="exact: 0.5 * (x + |x| * erf(|x| / sqrt 2)) with a 1.5e-7 erf approximation;"
          " approximate='tanh' uses TANH")
def gelu(cx: Converter, x: Arg, approximate: str = "none") -> TensorValue:
    x = require_tensor(x)
    if approximate == "tanh":
        return in_float(cx, x, lambda f: _gelu_tanh(cx, f))
    return in_float(cx, x, lambda f: _gelu_erf(cx, f))


def _gelu_erf(cx: Converter, x: TensorValue) -> TensorValue:
    mul, add = Op.MUL, Op.ADD
    ax = cx.emit_like(Op.ABS, dict(input=x), x)
    z = arithmetic(cx, mul, ax, 1.0 / math.sqrt(2.0))
    t = arithmetic(cx, Op.DIV, 1.0, arithmetic(cx, add, arithmetic(cx, mul, z, _ERF_P), 1.0))
    poly = arithmetic(cx, mul, t, _ERF_A[4])
    for coefficient in reversed(_ERF_A[:4]):
        poly = arithmetic(cx, mul, arithmetic(cx, add, poly, coefficient), t)
    minus_z2 = cx.emit_like(Op.NEG, dict(input=arithmetic(cx, mul, z, z)), z)
    gauss = cx.emit_like(Op.EXP, dict(input=minus_z2), z)
    erfc = arithmetic(cx, mul, poly, gauss)  # 1 - erf(z)
    # x + |x| * erf = x + |x| - |x| * erfc
    total = arithmetic(cx, Op.SUB, arithmetic(cx, add, x, ax), arithmetic(cx, mul, ax, erfc))
    return arithmetic(cx, mul, total, 0.5)


def _gelu_tanh(cx: Converter, x: TensorValue) -> TensorValue:
    mul = Op.MUL
    cube = arithmetic(cx, mul, arithmetic(cx, mul, x, x), x)
    inner = arithmetic(cx, mul, arithmetic(cx, Op.ADD, x, arithmetic(cx, mul, cube, 0.044715)),
                       math.sqrt(2.0 / math.pi))
    th = cx.emit_like(Op.TANH, dict(input=inner), inner)
    return arithmetic(cx, mul, arithmetic(cx, mul, x, arithmetic(cx, Op.ADD, th, 1.0)), 0.5)


@lowering("aten::softplus", nnapi=("EXP", "ADD", "LOG", "MUL", "DIV", "MAXIMUM"),
          any_rank=True,
          notes="log(1 + exp(beta x)) / beta, linear above the threshold")
def softplus(cx: Converter, x: Arg, beta: Arg = 1.0, threshold: Arg = 20.0) -> TensorValue:
    x = require_tensor(x)
    b = constant_float(beta, "beta")
    th = constant_float(threshold, "threshold")

    def compute(f: TensorValue) -> TensorValue:
        bx = arithmetic(cx, Op.MUL, f, b) if b != 1.0 else f
        capped = cx.emit_like(Op.MINIMUM, dict(input0=bx, input1=cx.tensor(th, like=bx)), bx)
        exp = cx.emit_like(Op.EXP, dict(input=capped), capped)
        soft = cx.emit_like(Op.LOG, dict(input=arithmetic(cx, Op.ADD, exp, 1.0)), bx)
        out = cx.emit_like(Op.MAXIMUM, dict(input0=soft, input1=bx), bx)  # above: bx itself
        return arithmetic(cx, Op.DIV, out, b) if b != 1.0 else out

    return in_float(cx, x, compute)
