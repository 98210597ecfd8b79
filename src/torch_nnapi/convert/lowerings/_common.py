"""Helpers shared by lowering families: argument checks, dtype promotion, broadcasting."""

from __future__ import annotations

from typing import Sequence

import torch

from ...nnapi.codes import FuseCode
from .. import layout as lay
from ..context import Converter, is_number
from ..errors import Unsupported
from ..symbolic import Sym, SymInt
from ..values import TensorValue, dtype_name

_DUMMY_DTYPES = {"float32": torch.float32, "float16": torch.float16, "int32": torch.int32,
                 "int64": torch.int64, "bool": torch.bool}


def static_int(v, what: str) -> int:
    """An int known at conversion time (not a flexible size), else Unsupported."""
    if isinstance(v, Sym):
        raise Unsupported(f"{what} depends on a flexible input dimension")
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return int(v.item())
    if not isinstance(v, (int, bool)):
        raise Unsupported(f"{what} must be a constant integer, got {type(v).__name__}")
    return int(v)


def static_ints(values, what: str, length: int | None = None) -> list[int]:
    if isinstance(values, int):
        values = [values] * (length or 1)
    values = [static_int(v, what) for v in values]
    if length is not None and len(values) == 1 and length > 1:
        values = values * length
    if length is not None and len(values) != length:
        raise Unsupported(f"{what} needs {length} values, got {values}")
    return values


def constant_float(v, what: str) -> float:
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return float(v.item())
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise Unsupported(f"{what} must be a constant number")


def dim_index(dim, rank: int, what: str = "dim") -> int:
    d = static_int(dim, what)
    if not -max(rank, 1) <= d < max(rank, 1):
        raise Unsupported(f"{what} {d} is out of range for rank {rank}")
    return d % rank if rank else 0


def _dummy(v):
    if isinstance(v, TensorValue):
        if v.is_quantized:
            raise Unsupported("float arithmetic mixing quantized tensors (dequantize first)")
        return torch.empty((1,) * v.rank if v.rank else (), dtype=_DUMMY_DTYPES[v.dtype])
    if isinstance(v, torch.Tensor):
        return torch.empty(tuple(1 for _ in v.shape), dtype=v.dtype)
    if isinstance(v, Sym):
        return 1
    return v


def result_dtype(*values) -> str:
    """PyTorch's type promotion for these operands."""
    dummies = [_dummy(v) for v in values]
    result = dummies[0]
    if len(dummies) == 1:
        return dtype_name(result.dtype) if isinstance(result, torch.Tensor) else (
            "float32" if isinstance(result, float) else "int64")
    dtype = torch.result_type(dummies[0], dummies[1])
    for d in dummies[2:]:
        dtype = torch.result_type(torch.empty((1,), dtype=dtype), d)
    return dtype_name(dtype)


def broadcast_shapes(*shapes: Sequence[SymInt]) -> tuple[SymInt, ...]:
    rank = max(len(s) for s in shapes)
    out: list[SymInt] = []
    for i in range(rank):
        size: SymInt = 1
        for s in shapes:
            k = i - (rank - len(s))
            if k < 0:
                continue
            d = s[k]
            if isinstance(d, Sym):
                if isinstance(size, int) and size == 1:
                    size = d
            elif d != 1:
                if isinstance(size, int) and size not in (1, d):
                    raise Unsupported(f"shapes {[list(x) for x in shapes]} do not broadcast")
                size = d
        out.append(size)
    return tuple(out)


def shape_of(v) -> tuple:
    if isinstance(v, TensorValue):
        return v.shape
    if isinstance(v, torch.Tensor):
        return tuple(v.shape)
    return ()


def choose_layout(values, rank: int) -> lay.Layout:
    """The layout a broadcast operation works in: that of a full-rank model tensor,
    channels-last if any is, so NHWC feature maps stay NHWC."""
    layouts = [v.layout for v in values if isinstance(v, TensorValue) and v.rank == rank]
    for layout in layouts:
        if not lay.is_identity(layout):
            return layout
    return lay.identity(rank)


def align(cx: Converter, v, rank: int, layout: lay.Layout, dtype: str) -> TensorValue:
    """``v`` as an operand of a broadcast NNAPI operation of ``rank`` working in ``layout``."""
    if isinstance(v, TensorValue):
        if v.dtype != dtype and not v.is_quantized:
            v = cx.cast(v, dtype)
        if v.rank < rank and not lay.is_identity(layout):
            v = cx.reshape(v, (1,) * (rank - v.rank) + tuple(v.shape))
        if v.rank == rank:
            v = cx.to_layout(v, layout)
        return v
    like = TensorValue(-1, (1,) * rank, dtype, layout)
    if isinstance(v, torch.Tensor):
        if v.dim() > rank:
            raise Unsupported("a constant of higher rank than the result")
        return cx.tensor(v, like=like, dtype=dtype)
    if is_number(v):
        return cx.tensor(v, like=like, dtype=dtype)
    raise Unsupported(f"expected a tensor or a number, got {type(v).__name__}")


def broadcast_operands(cx: Converter, values, dtype):
    """Operands ready for an NNAPI broadcast operation, and the output shape and layout.
    ``dtype`` is one dtype for all operands or a list with one per operand."""
    shapes = [shape_of(v) for v in values]
    out_shape = broadcast_shapes(*shapes)
    rank = len(out_shape)
    if rank > 4:
        raise Unsupported(f"NNAPI broadcasts tensors of rank at most 4, got rank {rank}")
    layout = choose_layout(values, rank)
    dtypes = [dtype] * len(values) if isinstance(dtype, str) else list(dtype)
    operands = [align(cx, v, rank, layout, d) for v, d in zip(values, dtypes)]
    return operands, out_shape, layout


def require_tensor(v, what: str = "input") -> TensorValue:
    if not isinstance(v, TensorValue):
        raise Unsupported(f"{what} must be a tensor computed by the model")
    return v


def fuse_none() -> int:
    return int(FuseCode.NONE)
