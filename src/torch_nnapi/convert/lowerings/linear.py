"""Linear layers and matrix products.

With a constant weight matrix (linear, addmm, matmul by a parameter) the product is one
FULLY_CONNECTED, which flattens leading dimensions itself; a RESHAPE restores them. A
product of two model tensors (attention's ``q @ k.transpose(-2, -1)``) has no batched
matmul at feature level 3: it is one FULLY_CONNECTED or GROUPED_CONV_2D
(builder/contraction.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.arithmetic import arithmetic, reduce, scaled
from ..builder.common import constant_float, require_tensor
from ..builder.context import Arg, Converter
from ..builder.contraction import contract
from ..builder.merged import is_one, stored_layout, ungroup, view_runs
from ..builder.slicing import permute
from ..builder.spatial import ConvQuant, bias_operand, filter_operand, output_type
from ..builder.symbolic import numel
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


def fully_connected(cx: Converter, x: TensorValue, weight: np.ndarray, bias: np.ndarray | None,
                    fuse: FuseCode = FuseCode.NONE, quant: ConvQuant | None = None) -> TensorValue:
    """``x @ weight.T + bias`` for a constant ``weight`` [O, K] (x of any rank >= 1); with
    ``quant``, a quantized layer (8-bit weights, float bias quantized here)."""
    if quant is None and not x.is_float:
        raise Unsupported(f"float linear layer on a {x.dtype} tensor")
    out_features, in_features = weight.shape
    if x.shape[-1] != in_features:
        raise Unsupported(f"input has {x.shape[-1]} features, the weight expects"
                          f" {in_features}")
    if x.groups or x.rank > 4 or not lay.data_order_matches(x.layout, x.shape):
        rows_first = _rows_then_features(x)
        if rows_first is not None:  # FULLY_CONNECTED keeps the rows' order: no TRANSPOSE
            return _fully_connected_rows(cx, x, rows_first, weight, bias, fuse, quant)
        x = ungroup(cx, cx.contiguous(x))
    original = x
    if x.rank == 1:
        x = cx.reshape(x, (1, in_features))
    w = filter_operand(cx, np.ascontiguousarray(weight), x, quant)
    b = bias_operand(cx, np.zeros(out_features, np.float32) if bias is None else bias, x, quant)
    dtype, scale, zero_point = output_type(x, quant)
    batch = numel(x.shape[:-1])
    out = cx.emit(Op.FULLY_CONNECTED,
                  dict(input=x, weights=w, bias=b, fuse_code=cx.i32(int(fuse))),
                  (batch, out_features), dtype, None, scale, zero_point)
    target = tuple(original.shape[:-1]) + (out_features,)
    if tuple(target) != tuple(out.shape):
        out = cx.reshape(out, target)
    return out


def _rows_then_features(x: TensorValue) -> list[int] | None:
    """The stored order of ``x``'s other size-above-1 dimensions when its last dimension
    (the features) is stored innermost; else None."""
    last = x.rank - 1
    stored = [d for d in x.layout if not is_one(x.shape[d])]
    if x.rank < 2 or not stored or stored[-1] != last:
        return None
    return stored[:-1]


def _fully_connected_rows(cx: Converter, x: TensorValue, rows: list[int], weight: np.ndarray,
                          bias: np.ndarray | None, fuse: FuseCode, quant: ConvQuant | None
                          ) -> TensorValue:
    """FULLY_CONNECTED of ``x`` whose rows are permuted but whose features are innermost:
    the result's rows are stored in the same order."""
    out_features, in_features = weight.shape
    flat = view_runs(cx, x, rows + [x.rank - 1], (len(rows), 1))
    w = filter_operand(cx, np.ascontiguousarray(weight), flat, quant)
    b = bias_operand(cx, np.zeros(out_features, np.float32) if bias is None else bias, flat,
                     quant)
    dtype, scale, zero_point = output_type(flat, quant)
    shape = tuple(x.shape[:-1]) + (out_features,)
    wide = not is_one(out_features)
    layout, groups = stored_layout(shape, rows + ([x.rank - 1] if wide else []),
                                   (len(rows), 1 if wide else 0))
    return cx.emit(Op.FULLY_CONNECTED,
                   dict(input=flat, weights=w, bias=b, fuse_code=cx.i32(int(fuse))), shape,
                   dtype, layout, scale, zero_point, groups)


def _const_matrix(w: torch.Tensor) -> np.ndarray:
    return w.detach().float().contiguous().numpy()


@lowering("aten::linear", nnapi=("FULLY_CONNECTED", "RESHAPE"), any_rank=True,
          notes="constant weight -> FULLY_CONNECTED; otherwise as matmul")
def linear(cx: Converter, x: Arg, weight: Arg, bias: Arg = None) -> TensorValue:
    x = require_tensor(x)
    if isinstance(weight, torch.Tensor):
        b = None if bias is None else _bias_array(bias)
        if b is not None or bias is None:
            return fully_connected(cx, x, _const_matrix(weight), b)
    out = matmul_tensors(cx, x, _transposed(cx, weight))
    return out if bias is None else arithmetic(cx, Op.ADD, out, bias)


def _bias_array(bias: Arg) -> np.ndarray | None:
    return _const_matrix(bias) if isinstance(bias, torch.Tensor) else None


def _transposed(cx: Converter, w: Arg) -> torch.Tensor | TensorValue:
    if isinstance(w, torch.Tensor):
        return w.t()
    w = require_tensor(w)
    return w.with_(shape=(w.shape[1], w.shape[0]), layout=lay.compose(w.layout, (1, 0)))


@lowering("aten::addmm", nnapi=("FULLY_CONNECTED", "MUL", "ADD", "REDUCE_SUM"),
          notes="beta * bias + alpha * (a @ b); constant b -> FULLY_CONNECTED")
def addmm(cx: Converter, bias: Arg, a: Arg, b: Arg, beta: Arg = 1, alpha: Arg = 1) -> TensorValue:
    beta = constant_float(beta, "beta")
    alpha = constant_float(alpha, "alpha")
    if isinstance(b, torch.Tensor) and isinstance(a, TensorValue) and (
            isinstance(bias, torch.Tensor) or bias is None):
        n = b.shape[1]
        bias_vec: np.ndarray | None = None
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
    return arithmetic(cx, Op.ADD, product, scaled(cx, bias, beta))


@lowering("aten::baddbmm", nnapi=("GROUPED_CONV_2D", "MUL", "ADD"), any_rank=True,
          notes="beta * input + alpha * (batch1 @ batch2)")
def baddbmm(cx: Converter, bias: Arg, batch1: Arg, batch2: Arg, beta: Arg = 1, alpha: Arg = 1
            ) -> TensorValue:
    beta = constant_float(beta, "beta")
    alpha = constant_float(alpha, "alpha")
    product = matmul_tensors(cx, batch1, batch2)
    if alpha != 1.0:
        product = arithmetic(cx, Op.MUL, product, alpha)
    if beta == 0.0:
        return product
    return arithmetic(cx, Op.ADD, product, scaled(cx, bias, beta))


@lowering("aten::einsum", nnapi=("GROUPED_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE",
                                 "RESHAPE", "REDUCE_SUM"),
          any_rank=True,
          notes="operands contracted pairwise (one contraction each); indices of one operand"
          " only summed first; no repeated index within an operand, no '...'")
def einsum(cx: Converter, equation: Arg, operands: Sequence[Arg], path: Arg = None
           ) -> TensorValue:
    if not isinstance(equation, str):
        raise Unsupported("einsum without a constant equation")
    spec = equation.replace(" ", "")
    if "..." in spec:
        raise Unsupported(f"einsum {equation!r}: '...' (broadcast dimensions)")
    inputs, arrow, output = spec.partition("->")
    labels = inputs.split(",")
    operands = list(operands)
    if len(labels) != len(operands):
        raise Unsupported(f"einsum {equation!r} names {len(labels)} operands, got"
                          f" {len(operands)}")
    if not arrow:  # implicit output: indices seen once, sorted
        counts = {c: inputs.count(c) for c in inputs if c != ","}
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    if any(len(set(s)) != len(s) for s in labels + [output]):
        raise Unsupported(f"einsum {equation!r}: an index repeated within one operand")
    tensors = [cx.tensor(t, dtype="float32") if not isinstance(t, TensorValue) else t
               for t in operands]
    value, have = tensors[0], labels[0]
    for i in range(1, len(tensors)):
        keep = set(output) | set("".join(labels[i + 1:]))  # still needed after this product
        other, other_labels = _sum_own(cx, tensors[i], labels[i], set(have) | keep)
        value, have = _sum_own(cx, value, have, set(other_labels) | keep)
        result = "".join(dict.fromkeys(c for c in have + other_labels if c in keep))
        value = contract(cx, value, other, have, other_labels, result)
        have = result
    value, have = _sum_own(cx, value, have, set(output))
    return permute(value, [have.index(c) for c in output])


def _sum_own(cx: Converter, t: TensorValue, labels: str, needed: set[str]
             ) -> tuple[TensorValue, str]:
    """``t`` with the indices nothing else needs summed away (REDUCE_SUM)."""
    summed = [d for d, c in enumerate(labels) if c not in needed]
    if not summed:
        return t, labels
    out = reduce(cx, Op.REDUCE_SUM, t, summed, False)
    return out, "".join(c for d, c in enumerate(labels) if d not in summed)


@lowering("aten::matmul", "aten::mm", "aten::bmm",
          nnapi=("FULLY_CONNECTED", "GROUPED_CONV_2D", "TRANSPOSE", "RESHAPE"),
          any_rank=True,
          notes="constant right operand -> FULLY_CONNECTED; two model tensors -> one"
          " FULLY_CONNECTED, or one GROUPED_CONV_2D over the batch (transposes only where"
          " an operand is not stored in a usable order)")
def matmul(cx: Converter, a: Arg, b: Arg) -> TensorValue:
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


def matmul_tensors(cx: Converter, a: Arg, b: Arg) -> TensorValue:
    """``a @ b`` with PyTorch's matmul broadcasting, as one contraction (contraction.py:
    a FULLY_CONNECTED, or a GROUPED_CONV_2D whose groups are the batch)."""
    like = a if isinstance(a, TensorValue) else b
    like = require_tensor(like)
    if not like.is_float:
        raise Unsupported(f"matmul of {like.dtype} tensors")
    a = cx.tensor(a, dtype=like.dtype)
    b = cx.tensor(b, dtype=like.dtype)
    batch = max(a.rank, b.rank) - 2
    a_labels = [f"a{i}" for i in range(a.rank - 2)] + (["m", "k"] if a.rank >= 2 else ["k"])
    b_labels = [f"b{i}" for i in range(b.rank - 2)] + (["k", "n"] if b.rank >= 2 else ["k"])
    out_labels = []
    for i in range(batch):  # broadcast batch dimensions, aligned on the right
        ia, ib = i - (batch - (a.rank - 2)), i - (batch - (b.rank - 2))
        sa = a.shape[ia] if ia >= 0 else 1
        sb = b.shape[ib] if ib >= 0 else 1
        if ia >= 0 and ib >= 0 and (is_one(sa) == is_one(sb)):
            b_labels[ib] = a_labels[ia]  # the same dimension in both
        out_labels.append(a_labels[ia] if ib < 0 or (ia >= 0 and not is_one(sa))
                          else b_labels[ib])
    out_labels += (["m"] if a.rank >= 2 else []) + (["n"] if b.rank >= 2 else [])
    return contract(cx, a, b, a_labels, b_labels, out_labels)

