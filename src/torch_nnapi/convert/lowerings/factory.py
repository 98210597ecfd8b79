"""Tensor factories and fills: zeros/ones/full/empty and their ``_like`` and ``new_``
variants, ``_shape_as_tensor``, ``arange``, ``fill_``/``zero_`` and ``masked_fill``.

What a factory makes depends only on sizes and dtypes, which are known at conversion time:
the result is a constant (PyTorch computes it here), never an NNAPI operation; in-place
fills of constants (Swin's attention mask) are folded the same way by the driver. Sizes
that depend on a flexible input dimension make a one-element constant TILEd to the size
at load time. ``empty`` is zeros (any value is right). ``masked_fill`` of a model tensor
is one SELECT.
"""

from __future__ import annotations

import torch

from ..context import Converter
from ..errors import Unsupported
from ..symbolic import Sym
from ..values import TensorValue
from . import lowering
from ._common import named_args, tile
from .elementwise import select
from .scalars import DTYPE_OF_CODE


def _dtype(code, default: str) -> torch.dtype:
    name = DTYPE_OF_CODE.get(int(code), default) if code is not None else default
    return getattr(torch, name)


def _filled(cx: Converter, size, value, dtype: torch.dtype):
    """A tensor of ``size`` holding ``value``: a constant, or (flexible sizes) a TILE."""
    if isinstance(value, TensorValue):
        raise Unsupported("a fill value computed by the model")
    value = value.item() if isinstance(value, torch.Tensor) else value
    size = [size] if isinstance(size, (int, Sym)) else list(size)
    if not all(isinstance(d, (int, Sym)) and not isinstance(d, bool) for d in size):
        raise Unsupported("a size computed by the model (only sizes known at conversion or"
                          " load time)")
    if not any(isinstance(d, Sym) for d in size):
        return torch.full([int(d) for d in size], value, dtype=dtype)
    if len(size) > 4:
        raise Unsupported("a flexible-size fill of rank above 4")
    if dtype == torch.bool:
        raise Unsupported("a bool fill of a flexible size (TILE takes no bool tensors)")
    one = cx.torch_constant(torch.full([1] * len(size), value, dtype=dtype))
    return tile(cx, one, size, tuple(size))


def _like_size(x) -> list:
    if isinstance(x, TensorValue):
        return list(x.shape)
    if isinstance(x, torch.Tensor):
        return list(x.shape)
    raise Unsupported(f"expected a tensor, got {type(x).__name__}")


def _own_dtype(x) -> str:
    return x.dtype if isinstance(x, TensorValue) else str(x.dtype).replace("torch.", "")


_FILLS = {"zeros": 0, "ones": 1, "empty": 0}


@lowering("aten::zeros", "aten::ones", "aten::full", "aten::empty", nnapi=("TILE",),
          notes="a constant; sizes of flexible dimensions TILE a constant at load time;"
          " empty is zeros")
def full(cx: Converter, *args):
    a = named_args(cx, args)
    name = cx.current_node.kind.split("::")[1]
    value = a["fill_value"] if name == "full" else _FILLS[name]
    default = "float32"
    if name == "full" and isinstance(value, (bool, int)) and not isinstance(value, float):
        default = "bool" if isinstance(value, bool) else "int64"
    return _filled(cx, a["size"], value, _dtype(a.get("dtype"), default))


@lowering("aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like",
          nnapi=("TILE",), any_rank=True,
          notes="a constant of the input's size (a TILE for flexible sizes)")
def full_like(cx: Converter, *args):
    a = named_args(cx, args)
    name = cx.current_node.kind.split("::")[1][:-len("_like")]
    value = a["fill_value"] if name == "full" else _FILLS[name]
    x = a["self"]
    return _filled(cx, _like_size(x), value, _dtype(a.get("dtype"), _own_dtype(x)))


@lowering("aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::new_empty",
          nnapi=("TILE",), any_rank=True, notes="a constant (a TILE for flexible sizes)")
def new_full(cx: Converter, *args):
    a = named_args(cx, args)
    name = cx.current_node.kind.split("::")[1][len("new_"):]
    value = a["fill_value"] if name == "full" else _FILLS[name]
    return _filled(cx, a["size"], value, _dtype(a.get("dtype"), _own_dtype(a["self"])))


@lowering("aten::_shape_as_tensor", any_rank=True, notes="a constant (static sizes)")
def shape_as_tensor(cx: Converter, x):
    size = _like_size(x)
    if any(isinstance(d, Sym) for d in size):
        raise Unsupported("the shape of a flexible input as a tensor")
    return torch.tensor([int(d) for d in size], dtype=torch.int64)


@lowering("aten::arange", notes="a constant (its bounds must be known at conversion time)")
def arange(cx: Converter, *args):
    a = named_args(cx, args)
    bounds = [a.get(k) for k in ("start", "end", "step") if a.get(k) is not None]
    if any(isinstance(b, Sym) for b in bounds):
        raise Unsupported("arange over a flexible length (NNAPI cannot make a sequence)")
    raise Unsupported("arange whose bounds are computed by the model")


@lowering("aten::fill_", "aten::zero_", nnapi=("TILE",), any_rank=True,
          notes="of a model tensor: a constant of its size")
def fill_(cx: Converter, x, value=0):
    if isinstance(value, TensorValue):
        raise Unsupported("fill_ with a value computed by the model")
    return _filled(cx, _like_size(x), value, getattr(torch, _own_dtype(x)))


@lowering("aten::masked_fill", "aten::masked_fill_", nnapi=("SELECT", "TILE"), any_rank=True,
          notes="SELECT(mask, value, x); operands broadcast by TILE where needed")
def masked_fill(cx: Converter, x, mask, value):
    if not isinstance(x, TensorValue) and not isinstance(mask, TensorValue):
        raise Unsupported("masked_fill of constants with a value computed by the model")
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        value = value.item()
    return select(cx, mask, value, x, dtype=_own_dtype(x))

