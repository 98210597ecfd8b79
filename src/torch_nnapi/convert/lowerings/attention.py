"""Attention: ``aten::scaled_dot_product_attention`` (``F.scaled_dot_product_attention``,
``nn.MultiheadAttention`` with ``need_weights=False``, ViT, Swin, BERT- and GPT-style blocks).

Composed at feature level 3 as PyTorch's reference computes it: the query scaled, the
scores ``q @ k^T`` and the weighted values ``softmax(scores) @ v`` each one contraction
(one GROUPED_CONV_2D over the batch and heads, builder/contraction.py), the mask added to
the scores before the SOFTMAX. A bool mask (True: attend) becomes 0 / -inf through one SELECT
between constants; ``is_causal`` is a constant -inf upper triangle. Grouped-query
attention (``enable_gqa``) broadcasts each key/value head over its group of query heads.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import arithmetic
from ..builder.common import constant_float, require_tensor, static_int
from ..builder.context import Arg, Converter
from ..builder.contraction import contract
from ..builder.merged import same_dim, separate
from ..builder.symbolic import Sym, SymInt
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


@lowering("aten::scaled_dot_product_attention",
          nnapi=("MUL", "GROUPED_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE", "RESHAPE", "ADD",
                 "SELECT", "SOFTMAX"),
          any_rank=True,
          notes="softmax(q k^T * scale + mask) v: two contractions (GROUPED_CONV_2D over"
          " batch and heads) and a SOFTMAX; bool or float masks, is_causal, scale,"
          " enable_gqa; dropout_p must be 0")
def scaled_dot_product_attention(cx: Converter, query: Arg, key: Arg, value: Arg,
                                 attn_mask: Arg = None, dropout_p: Arg = 0.0,
                                 is_causal: bool = False, scale: Arg = None,
                                 enable_gqa: bool = False) -> TensorValue:
    q = require_tensor(query, "query")
    if not q.is_float:
        raise Unsupported(f"attention over {q.dtype} tensors")
    k = cx.tensor(key, dtype=q.dtype)
    v = cx.tensor(value, dtype=q.dtype)
    if constant_float(dropout_p, "dropout_p") != 0.0:
        raise Unsupported("attention with dropout_p > 0 (random, also in eval mode)")
    if q.rank < 2 or k.rank != q.rank or v.rank != q.rank:
        raise Unsupported("attention needs query, key and value of one rank >= 2")
    width = static_int(q.shape[-1], "the query's last dimension")
    factor = 1.0 / math.sqrt(width) if scale is None else constant_float(scale, "scale")
    batch = [f"b{i}" for i in range(q.rank - 2)]
    k_batch = list(batch)
    undo: Callable[[TensorValue], TensorValue] | None = None
    if enable_gqa and q.rank >= 3 and not same_dim(q.shape[-3], k.shape[-3]):
        q, k, v, k_batch, undo = _grouped_query(cx, q, k, v, batch)
        batch = batch[:-1] + ["kv", "g"]
    if factor != 1.0:
        q = arithmetic(cx, Op.MUL, q, factor)
    scores = contract(cx, q, k, batch + ["l", "e"], k_batch + ["s", "e"], batch + ["l", "s"])
    length, source = scores.shape[-2], scores.shape[-1]
    if bool(is_causal):
        if attn_mask is not None:
            raise Unsupported("attention with both a mask and is_causal")
        scores = arithmetic(cx, Op.ADD, scores, _causal_mask(length, source))
    elif attn_mask is not None:
        scores = arithmetic(cx, Op.ADD, scores, _additive_mask(cx, attn_mask, scores))
    weights = softmax_last(cx, scores)
    out_labels = batch + ["l", "f"]
    out = contract(cx, weights, v, batch + ["l", "s"], k_batch + ["s", "f"], out_labels)
    return undo(out) if undo is not None else out


def softmax_last(cx: Converter, x: TensorValue) -> TensorValue:
    """SOFTMAX over the last dimension (beta 1)."""
    last = x.rank - 1
    x = separate(cx, x, [last]) if x.groups or x.rank > 4 else x
    return cx.emit_like(Op.SOFTMAX, dict(input=x, beta=cx.float_scalar(1.0, x),
                                         axis=cx.i32(x.nnapi_axis(last))), x)


def _causal_mask(length: SymInt, source: SymInt) -> torch.Tensor:
    """0 where query i may see key j (j <= i), -inf elsewhere, as PyTorch's is_causal."""
    if isinstance(length, Sym) or isinstance(source, Sym):
        raise Unsupported("is_causal over a flexible sequence length")
    allowed = np.tril(np.ones((int(length), int(source)), bool))
    return torch.from_numpy(np.where(allowed, np.float32(0.0), np.float32(-np.inf)))


def _additive_mask(cx: Converter, mask: Arg, like: TensorValue) -> torch.Tensor | TensorValue:
    """The mask as a float to add to the scores: a bool mask (True: attend) is 0 / -inf."""
    if isinstance(mask, torch.Tensor):
        if mask.dtype == torch.bool:
            return torch.where(mask, 0.0, float("-inf")).float()
        return mask.float()
    mask = require_tensor(mask, "attn_mask")
    if mask.dtype != "bool":
        return cx.cast(mask, like.dtype) if mask.dtype != like.dtype else mask
    shape = tuple(1 if isinstance(d, Sym) else d for d in mask.shape)
    if any(isinstance(d, Sym) for d in mask.shape):
        raise Unsupported("a bool attention mask of a flexible size")
    zeros = cx.torch_constant(torch.zeros(shape), like.dtype, mask.layout, mask.groups)
    blocked = cx.torch_constant(torch.full(shape, float("-inf")), like.dtype, mask.layout,
                                mask.groups)
    return cx.emit(Op.SELECT, dict(condition=mask, input1=zeros, input2=blocked), mask.shape,
                   like.dtype, mask.layout, groups=mask.groups)


def _grouped_query(cx: Converter, q: TensorValue, k: TensorValue, v: TensorValue,
                   batch: list[str]) -> tuple[TensorValue, TensorValue, TensorValue, list[str],
                                              Callable[[TensorValue], TensorValue]]:
    """Query heads [.., Hq, L, E] as [.., Hkv, Hq / Hkv, L, E]; keys and values get a
    size-1 group dimension that broadcasts."""
    heads, kv_heads = static_int(q.shape[-3], "query heads"), static_int(k.shape[-3],
                                                                         "key heads")
    if heads % kv_heads:
        raise Unsupported(f"{heads} query heads in groups over {kv_heads} key/value heads")
    lead = tuple(q.shape[:-3])
    q = cx.reshape(q, lead + (kv_heads, heads // kv_heads) + tuple(q.shape[-2:]))
    k = cx.reshape(k, tuple(k.shape[:-2]) + (1,) + tuple(k.shape[-2:]))
    v = cx.reshape(v, tuple(v.shape[:-2]) + (1,) + tuple(v.shape[-2:]))
    k_batch = batch[:-1] + ["kv", "one"]

    def undo(out: TensorValue) -> TensorValue:
        return cx.reshape(out, lead + (heads,) + tuple(out.shape[-2:]))

    return q, k, v, k_batch, undo

