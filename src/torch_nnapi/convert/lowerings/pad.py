"""Padding: constant (PAD, or PAD_V2 for a non-zero value), reflection, replication and
circular. NNAPI level 3 has no MIRROR_PAD: the other modes are a GATHER per padded
dimension with a constant index list (reflect: ..2 1 | 0 1 2 .. n-1 | n-2 n-3..).
Negative padding crops with STRIDED_SLICE. Constant padding by amounts that depend on a
flexible input dimension is patched into PAD's paddings when the model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...nnapi.codes import OperationType as Op
from ..builder.common import constant_float, require_tensor, static_int, static_ints
from ..builder.context import Arg, Converter
from ..builder.slicing import gather_indices, strided_slice
from ..builder.symbolic import Sym, SymInt, all_static, sym_max
from ..builder.values import QUANT_RANGES, TensorValue
from ..errors import Unsupported
from . import lowering

Pads = dict[int, tuple[SymInt, SymInt]]  # PyTorch dimension -> (before, after)


def _per_dim(x: TensorValue, pad: Sequence[SymInt], flexible: bool = False) -> Pads:
    """PyTorch's pad list (last dimension first) -> {dim: (before, after)}. ``flexible``:
    amounts may be expressions of flexible dimensions known to be >= 0 (Swin pads its
    feature map up to a multiple of the window, ``(ws - W % ws) % ws``), patched at load."""
    pads: Sequence[SymInt] = ([_flexible_amount(p) for p in pad] if flexible
                              else static_ints(pad, "pad"))
    if len(pads) % 2 or len(pads) // 2 > x.rank:
        raise Unsupported(f"pad list {pads} for a {x.rank}-D tensor")
    out = {}
    for k in range(len(pads) // 2):
        before, after = pads[2 * k], pads[2 * k + 1]
        if not (_is_zero(before) and _is_zero(after)):
            out[x.rank - 1 - k] = (before, after)
    return out


def _flexible_amount(p: SymInt) -> SymInt:
    if isinstance(p, Sym):
        if not p.nonneg:
            raise Unsupported(f"pad amount {p!r} depends on a flexible input dimension and may"
                              " be negative")
        return p
    return static_int(p, "pad")


def _is_zero(v: SymInt) -> bool:
    return not isinstance(v, Sym) and int(v) == 0


def _crop_negative(cx: Converter, x: TensorValue, pads: Pads) -> tuple[TensorValue, Pads]:
    crops = {}
    for d, (before, after) in pads.items():
        if isinstance(before, Sym) or isinstance(after, Sym):
            continue  # flexible amounts are >= 0 (_flexible_amount)
        if before < 0 or after < 0:
            size = static_int(x.shape[d], "cropped dimension")
            crops[d] = (max(-before, 0), size - max(-after, 0), 1)
    if crops:
        x = strided_slice(cx, x, crops)
    return x, {d: (sym_max(b, 0), sym_max(a, 0)) for d, (b, a) in pads.items()}


def constant_pad(cx: Converter, x: TensorValue, pad: Sequence[SymInt], value: Arg
                 ) -> TensorValue:
    pads = _per_dim(x, pad, flexible=True)
    x, pads = _crop_negative(cx, x, pads)
    pads = {d: p for d, p in pads.items() if not (_is_zero(p[0]) and _is_zero(p[1]))}
    if not pads:
        return x
    v = 0.0 if value is None else constant_float(value, "pad value")
    rows = [amount for d in x.layout for amount in pads.get(d, (0, 0))]
    shape = tuple(n + pads.get(d, (0, 0))[0] + pads.get(d, (0, 0))[1]
                  for d, n in enumerate(x.shape))
    paddings = (cx.constant(np.array(rows, np.int32).reshape(x.rank, 2), "int32")
                if all_static(rows) else cx.int_tensor(rows, (x.rank, 2)))
    if v == 0.0:
        return cx.emit(Op.PAD, dict(input=x, paddings=paddings), shape, x.dtype, x.layout,
                       x.scale, x.zero_point)
    if x.is_quantized:
        q = int(round(v / x.scale)) + x.zero_point
        lowest, highest = QUANT_RANGES[x.dtype]
        if not lowest <= q <= highest:
            raise Unsupported(f"pad value {v} is outside the quantized range")
        fill = cx.i32(q)
    elif x.is_float:
        fill = cx.float_scalar(v, x)
    else:
        fill = cx.i32(int(v))
    return cx.emit(Op.PAD_V2, dict(input=x, paddings=paddings, pad_value=fill), shape, x.dtype,
                   x.layout, x.scale, x.zero_point)


def _index_map(mode: str, n: int, before: int, after: int) -> list[int]:
    positions = range(-before, n + after)
    if mode == "reflect":
        if before >= n or after >= n:
            raise Unsupported(f"reflection padding of {max(before, after)} for size {n}")
        period = 2 * (n - 1)
        out = []
        for i in positions:
            k = abs(i) % period if period else 0
            out.append(period - k if k >= n else k)
        return out
    if mode == "replicate":
        return [min(max(i, 0), n - 1) for i in positions]
    if mode == "circular":
        if before > n or after > n:
            raise Unsupported(f"circular padding of {max(before, after)} for size {n}")
        return [i % n for i in positions]
    raise Unsupported(f"padding mode {mode!r}")


def index_pad(cx: Converter, x: TensorValue, pad: Sequence[SymInt], mode: str) -> TensorValue:
    pads = _per_dim(x, pad)
    x, pads = _crop_negative(cx, x, pads)
    for d, (before, after) in sorted(pads.items()):
        if before == after == 0:
            continue
        n = static_int(x.shape[d], f"{mode}-padded dimension")
        x = gather_indices(cx, x, d, _index_map(mode, n, int(before), int(after)))
    return x


@lowering("aten::constant_pad_nd", nnapi=("PAD", "PAD_V2", "STRIDED_SLICE"))
def constant_pad_nd(cx: Converter, x: Arg, pad: Sequence[SymInt], value: Arg = 0.0
                    ) -> TensorValue:
    return constant_pad(cx, require_tensor(x), pad, value)


@lowering("aten::pad", nnapi=("PAD", "PAD_V2", "GATHER", "STRIDED_SLICE"),
          notes="constant, reflect, replicate, circular")
def pad_(cx: Converter, x: Arg, pad: Sequence[SymInt], mode: str = "constant", value: Arg = None
         ) -> TensorValue:
    x = require_tensor(x)
    if mode == "constant":
        return constant_pad(cx, x, pad, value)
    return index_pad(cx, x, pad, mode)


@lowering("aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d",
          nnapi=("GATHER",))
def reflection_pad(cx: Converter, x: Arg, pad: Sequence[SymInt]) -> TensorValue:
    return index_pad(cx, require_tensor(x), pad, "reflect")


@lowering("aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d",
          nnapi=("GATHER",))
def replication_pad(cx: Converter, x: Arg, pad: Sequence[SymInt]) -> TensorValue:
    return index_pad(cx, require_tensor(x), pad, "replicate")


@lowering("aten::_pad_circular", nnapi=("GATHER",))
def circular_pad(cx: Converter, x: Arg, pad: Sequence[SymInt]) -> TensorValue:
    return index_pad(cx, require_tensor(x), pad, "circular")
