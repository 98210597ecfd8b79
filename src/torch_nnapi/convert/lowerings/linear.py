"""Linear layers and matrix products.

With a constant weight matrix (linear, addmm, matmul by a parameter) the product is one
FULLY_CONNECTED, which flattens leading dimensions itself; a RESHAPE restores them. A
product of two model tensors (attention's ``q @ k.transpose(-2, -1)``) has no batched
matmul at feature level 3: it becomes a broadcast MUL and a REDUCE_SUM over the shared
dimension, arranged so that a transposed operand needs no TRANSPOSE.
"""

from __future__ import annotations

import numpy as np
import torch

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from .. import layout as lay
from ..context import Converter
from ..errors import Unsupported
from ..symbolic import SymInt
from ..values import TensorValue
from . import lowering
from ._common import broadcast_shapes, constant_float, require_tensor
from .conv import ConvQuant, bias_operand, filter_operand, output_type
from .elementwise import arithmetic


def _prod(dims) -> SymInt:
    out: SymInt = 1
    for d in dims:
        out = out * d
    return out


def fully_connected(cx: Converter, x: TensorValue, weight, bias: np.ndarray | None,
                    fuse: FuseCode = FuseCode.NONE, quant: ConvQuant | None = None) \
        -> TensorValue:
    """``x @ weight.T + bias`` for a constant ``weight`` [O, K] (x of any rank >= 1); with
    ``quant``, a quantized layer (uint8 weights, float bias quantized here)."""
    if quant is None and not x.is_float:
        raise Unsupported(f"float linear layer on a {x.dtype} tensor")
    out_features, in_features = weight.shape
    if x.shape[-1] != in_features:
        raise Unsupported(f"input has {x.shape[-1]} features, the weight expects"
                          f" {in_features}")
    if not lay.data_order_matches(x.layout, x.shape):
        x = cx.contiguous(x)
    original = x
    if x.rank == 1:
        x = cx.reshape(x, (1, in_features))
    w = filter_operand(cx, np.ascontiguousarray(weight), x, quant)
    b = bias_operand(cx, np.zeros(out_features, np.float32) if bias is None else bias, x, quant)
    dtype, scale, zero_point = output_type(x, quant)
    batch = _prod(x.shape[:-1])
    out = cx.emit(Op.FULLY_CONNECTED,
                  dict(input=x, weights=w, bias=b, fuse_code=cx.i32(int(fuse))),
                  (batch, out_features), dtype, None, scale, zero_point)
    target = tuple(original.shape[:-1]) + (out_features,)
    if tuple(target) != tuple(out.shape):
        out = cx.reshape(out, target)
    return out


def _const_matrix(w) -> np.ndarray:
    return w.detach().float().contiguous().numpy()


@lowering("aten::linear", nnapi=("FULLY_CONNECTED", "RESHAPE"),
          notes="constant weight -> FULLY_CONNECTED; otherwise as matmul")
def linear(cx: Converter, x, weight, bias=None):
    x = require_tensor(x)
    if isinstance(weight, torch.Tensor):
        b = None if bias is None else _bias_array(bias)
        if b is not None or bias is None:
            return fully_connected(cx, x, _const_matrix(weight), b)
    out = matmul_tensors(cx, x, _transposed(cx, weight))
    return out if bias is None else arithmetic(cx, Op.ADD, out, bias)


def _bias_array(bias):
    return _const_matrix(bias) if isinstance(bias, torch.Tensor) else None


def _transposed(cx: Converter, w):
    if isinstance(w, torch.Tensor):
        return w.t()
    w = require_tensor(w)
    return w.with_(shape=(w.shape[1], w.shape[0]), layout=lay.compose(w.layout, (1, 0)))


@lowering("aten::addmm", nnapi=("FULLY_CONNECTED", "MUL", "ADD", "REDUCE_SUM"),
          notes="beta * bias + alpha * (a @ b); constant b -> FULLY_CONNECTED")
def addmm(cx: Converter, bias, a, b, beta=1, alpha=1):
    beta = constant_float(beta, "beta")
    alpha = constant_float(alpha, "alpha")
    if isinstance(b, torch.Tensor) and isinstance(a, TensorValue) and (
            isinstance(bias, torch.Tensor) or bias is None):
        n = b.shape[1]
        bias_vec = None
        if bias is not None:
            bias_vec = np.broadcast_to(_const_matrix(bias).reshape(-1) if bias.dim() <= 1
                                       else _const_matrix(bias), (n,)) * beta
            if bias.dim() == 2 and bias.shape[0] != 1:
                bias_vec = None
        if bias is None or bias_vec is not None:
            return fully_connected(cx, a, _const_matrix(b).T * alpha,
                                   None if bias_vec is None else bias_vec.astype(np.float32))
    product = matmul(cx, a, b)
    if alpha != 1.0:
        product = arithmetic(cx, Op.MUL, product, alpha)
    scaled_bias = bias if beta == 1.0 else (bias * beta if not isinstance(bias, TensorValue)
                                            else arithmetic(cx, Op.MUL, bias, beta))
    return arithmetic(cx, Op.ADD, product, scaled_bias)


@lowering("aten::matmul", "aten::mm", "aten::bmm",
          nnapi=("FULLY_CONNECTED", "MUL", "REDUCE_SUM", "RESHAPE"),
          notes="constant right operand -> FULLY_CONNECTED; two model tensors -> MUL +"
          " REDUCE_SUM (at most one batch dimension after flattening)")
def matmul(cx: Converter, a, b):
    if isinstance(b, torch.Tensor) and isinstance(a, TensorValue):
        w = _const_matrix(b)
        if w.ndim == 2:
            return fully_connected(cx, a, w.T, None)
        if w.ndim == 1:
            out = fully_connected(cx, a, w.reshape(1, -1), None)
            return cx.reshape(out, out.shape[:-1])
    if isinstance(a, torch.Tensor) and isinstance(b, TensorValue) and a.dim() == 2 \
            and b.rank == 2:
        # a @ b = (b.T @ a.T).T: a FULLY_CONNECTED over b's columns, transposes as layouts
        bt = b.with_(shape=(b.shape[1], b.shape[0]), layout=lay.compose(b.layout, (1, 0)))
        out = fully_connected(cx, bt, _const_matrix(a), None)
        return out.with_(shape=(out.shape[1], out.shape[0]),
                         layout=lay.compose(out.layout, (1, 0)))
    return matmul_tensors(cx, a, b)


def matmul_tensors(cx: Converter, a, b) -> TensorValue:
    """``a @ b`` with PyTorch's matmul broadcasting, as MUL + REDUCE_SUM."""
    like = a if isinstance(a, TensorValue) else b
    like = require_tensor(like)
    if not like.is_float:
        raise Unsupported(f"matmul of {like.dtype} tensors")
    a = cx.tensor(a, dtype=like.dtype)
    b = cx.tensor(b, dtype=like.dtype)
    squeeze_rows = a.rank == 1
    squeeze_cols = b.rank == 1
    if squeeze_rows:
        a = cx.reshape(a, (1, a.shape[0]))
    if squeeze_cols:
        b = cx.reshape(b, (b.shape[0], 1))
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    flat = _prod(batch)
    # b's transpose is free when b is stored transposed (e.g. k.transpose(-2, -1))
    bt = b.with_(shape=b.shape[:-2] + (n, k2),
                 layout=lay.compose(b.layout, tuple(range(b.rank - 2)) + (b.rank - 1,
                                                                          b.rank - 2)))
    use_bt = lay.data_order_matches(bt.layout, bt.shape)
    lead = (flat,) if batch else ()
    if use_bt:
        a4 = _flat_batch(cx, a, batch, lead, (m, 1, k))
        b4 = _flat_batch(cx, bt, batch, lead, (1, n, k))
        reduce_axis = len(lead) + 2
    else:
        a4 = _flat_batch(cx, a, batch, lead, (m, k, 1))
        b4 = _flat_batch(cx, b, batch, lead, (1, k2, n))
        reduce_axis = len(lead) + 1
    product_shape = broadcast_shapes(a4.shape, b4.shape)
    if len(product_shape) > 4:
        raise Unsupported("matmul with more than one batch dimension after broadcasting")
    product = cx.emit(Op.MUL, dict(input0=a4, input1=b4, fuse_code=cx.i32(0)), product_shape,
                      like.dtype)
    out_shape = lead + (m, n)
    out = cx.emit(Op.REDUCE_SUM, dict(input=product, axes=cx.int_vector([reduce_axis]),
                                      keep_dims=cx.boolean(False)),
                  out_shape, like.dtype)
    final = tuple(batch) + (m, n)
    if squeeze_rows:
        final = final[:-2] + (n,)
    if squeeze_cols:
        final = final[:-1]
    if tuple(final) != tuple(out.shape):
        out = cx.reshape(out, final)
    return out


def _flat_batch(cx: Converter, t: TensorValue, batch, lead, tail) -> TensorValue:
    """``t`` reshaped to ``lead + tail``: its batch dimensions broadcast and flattened."""
    own_batch = t.shape[:-2]
    if tuple(own_batch) != tuple(batch) and any(d != 1 for d in own_batch if isinstance(d, int)):
        if len(own_batch) and tuple(own_batch) != tuple(batch):
            raise Unsupported("matmul broadcasting between different batch shapes")
    if not own_batch or all(isinstance(d, int) and d == 1 for d in own_batch):
        shape = ((1,) if lead else ()) + tail
    else:
        shape = lead + tail
    return cx.reshape(t, shape)
