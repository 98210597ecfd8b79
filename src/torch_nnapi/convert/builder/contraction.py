"""Products of two model tensors (matmul, bmm, einsum, attention) in one NNAPI operation.

NNAPI has no batched matrix product before feature level 6. A contraction of two computed
tensors is one convolution instead: the dimensions shared by both operands and the result
(the batch: attention's heads, Swin's windows) become the groups of a GROUPED_CONV_2D whose
1x1 filter is the second operand, the contracted dimensions its input channels, the first
operand's own dimensions the image positions and the second's the output channels per
group. Without a batch it is one FULLY_CONNECTED (feature level 1). Operands are used in
the order their data is stored in whenever it fits, so the transposes a product needs
(``k.transpose(-2, -1)``) usually cost nothing; otherwise one TRANSPOSE brings an operand
into place. Either operand can play the input, whichever needs fewer elements moved.

Dimensions are named by labels, as in einsum: a label in both operands and the result is a
batch dimension, in both but not the result a contracted one, in one operand and the result
a row (first operand) or column (second operand) of the product.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...nnapi.codes import OperationType as Op
from ..errors import Unsupported
from . import layout as lay
from .common import tile
from .context import Converter, OperandRef
from .merged import is_one, same_dim, stored_layout, view_runs
from .symbolic import Sym, SymInt, hint, numel
from .values import TensorValue

Labels = tuple[str, ...]  # one label per dimension, as in einsum


@dataclass(frozen=True)
class _Placement:
    """How one assignment of the operands (input, filter) lays out the product."""

    rows_before: Labels  # input labels stored before the channels
    rows_after: Labels  # after them (NCHW: the image height)
    batch: Labels  # the groups, outermost first
    contracted: Labels
    columns: Labels  # output channels per group
    input_order: Labels | None  # labels as the input must be stored; None: as it is
    filter_order: Labels | None  # likewise for the filter
    cost: int  # elements transposed


def contract(cx: Converter, a: TensorValue, b: TensorValue, a_labels: Sequence[str],
             b_labels: Sequence[str], out_labels: Sequence[str]) -> TensorValue:
    """``einsum(a_labels, b_labels -> out_labels)`` of two float tensors whose every
    label is either in the result or in both operands (contracted)."""
    a_labels, b_labels, out_labels = tuple(a_labels), tuple(b_labels), tuple(out_labels)
    sizes = _label_sizes((a, a_labels), (b, b_labels))
    for label in set(a_labels) ^ set(b_labels):
        if label not in out_labels and not is_one(sizes[label]):
            raise Unsupported(f"contraction: dimension {label!r} is summed in one operand only")
    if not a.is_float or a.dtype != b.dtype:
        raise Unsupported(f"products of {a.dtype} and {b.dtype} tensors")
    options = [(_place(a, a_labels, b, b_labels, out_labels, sizes), a, a_labels, b, b_labels),
               (_place(b, b_labels, a, a_labels, out_labels, sizes), b, b_labels, a, a_labels)]
    place, inp, inp_labels, filt, filt_labels = min(options, key=lambda o: o[0].cost)
    return _emit(cx, place, inp, inp_labels, filt, filt_labels, out_labels, sizes)


def _label_sizes(*operands: tuple[TensorValue, Labels]) -> dict[str, SymInt]:
    sizes: dict[str, SymInt] = {}
    for t, labels in operands:
        if len(labels) != t.rank:
            raise Unsupported(f"{len(labels)} labels for a tensor of rank {t.rank}")
        for label, n in zip(labels, t.shape, strict=False):
            seen = sizes.get(label)
            if seen is None:
                sizes[label] = n
            elif not same_dim(seen, n):  # (a size-1 side would broadcast: not handled here)
                raise Unsupported(f"dimension {label!r} has sizes {hint(seen)} and {hint(n)}")
    return sizes


def _place(inp: TensorValue, inp_labels: Labels, filt: TensorValue, filt_labels: Labels,
           out_labels: Labels, sizes: dict[str, SymInt]) -> _Placement:
    big = [label for label in dict.fromkeys(inp_labels + filt_labels)
           if not is_one(sizes[label])]
    shared = [label for label in big if label in inp_labels and label in filt_labels]
    batch = [label for label in shared if label in out_labels]
    contracted = [label for label in shared if label not in out_labels]
    rows = [label for label in big if label not in filt_labels]
    columns = [label for label in big if label not in inp_labels]
    stored_in = _stored(inp, inp_labels, sizes)
    stored_filt = _stored(filt, filt_labels, sizes)
    found_in = _input_pattern(stored_in, batch, contracted, grouped=bool(batch))
    found_filt = _filter_pattern(stored_filt, batch, contracted)
    if found_in and found_filt and found_in[2] == found_filt[0] and found_in[3] == found_filt[2]:
        before, after, g, k = found_in
        return _Placement(before, after, g, k, found_filt[1], None, None, 0)
    in_size, filt_size = hint(numel(inp.shape)), hint(numel(filt.shape))
    candidates = []
    if found_filt:  # move the input to the filter's order
        g, c, k = found_filt
        order = tuple(r for r in stored_in if r in rows) + g + k
        candidates.append(_Placement(order[:len(rows)], (), g, k, c, order, None, in_size))
    if found_in:  # move the filter to the input's order
        before, after, g, k = found_in
        c = tuple(label for label in stored_filt if label in columns)
        candidates.append(_Placement(before, after, g, k, c, None, g + c + k, filt_size))
    g = tuple(label for label in stored_in if label in batch)
    k = tuple(label for label in stored_in if label in contracted)
    c = tuple(label for label in stored_filt if label in columns)
    r = tuple(label for label in stored_in if label in rows)
    candidates.append(_Placement(r, (), g, k, c, r + g + k, g + c + k, in_size + filt_size))
    return min(candidates, key=lambda p: p.cost)


def _stored(t: TensorValue, labels: Labels, sizes: dict[str, SymInt]) -> Labels:
    """The labels of ``t``'s size-above-1 dimensions, in the order they are stored."""
    return tuple(labels[d] for d in t.layout if not is_one(sizes[labels[d]]))


def _input_pattern(stored: Labels, batch: Sequence[str], contracted: Sequence[str],
                   grouped: bool) -> tuple[Labels, Labels, Labels, Labels] | None:
    """(rows before, rows after, batch order, contracted order) when ``stored`` is rows,
    then the batch, then the contracted labels, then rows (only with a batch: the NCHW
    form of GROUPED_CONV_2D; FULLY_CONNECTED wants the contracted labels last)."""
    channels = set(batch) | set(contracted)
    positions = [i for i, label in enumerate(stored) if label in channels]
    if positions and positions != list(range(positions[0], positions[-1] + 1)):
        return None
    start = positions[0] if positions else len(stored)
    block = stored[start:start + len(positions)]
    g, k = block[:len(batch)], block[len(batch):]
    if set(g) != set(batch):
        return None
    after = stored[start + len(positions):]
    if after and not grouped:
        return None
    return stored[:start], after, g, k


def _filter_pattern(stored: Labels, batch: Sequence[str], contracted: Sequence[str]
                    ) -> tuple[Labels, Labels, Labels] | None:
    """(batch order, column order, contracted order) when ``stored`` is the batch, then
    the columns, then the contracted labels."""
    g = stored[:len(batch)]
    k = stored[len(stored) - len(contracted):] if contracted else ()
    if set(g) != set(batch) or set(k) != set(contracted):
        return None
    return g, stored[len(batch):len(stored) - len(contracted)], k


def _emit(cx: Converter, place: _Placement, inp: TensorValue, inp_labels: Labels,
          filt: TensorValue, filt_labels: Labels, out_labels: Labels,
          sizes: dict[str, SymInt]) -> TensorValue:
    by_label_in = {label: d for d, label in enumerate(inp_labels)}
    by_label_filt = {label: d for d, label in enumerate(filt_labels)}
    if place.input_order is not None:
        inp = cx.to_layout(inp, _full_layout(inp, [by_label_in[x] for x in place.input_order]))
    if place.filter_order is not None:
        filt = cx.to_layout(filt, _full_layout(filt, [by_label_filt[x]
                                                     for x in place.filter_order]))
    before, after, g, k, c = (place.rows_before, place.rows_after, place.batch,
                              place.contracted, place.columns)
    groups = numel(sizes[x] for x in g)
    units = numel(sizes[x] for x in g + c)
    dtype = inp.dtype
    if isinstance(units, Sym):
        if not g:
            raise Unsupported("a product whose output columns depend on a flexible dimension")
        # groups of a flexible count (Swin's windows): a zero bias TILEd at load time
        bias = tile(cx, cx.constant(np.zeros(1, np.float32), dtype), (units,), (units,))
    else:
        bias = cx.constant(np.zeros(int(units), np.float32), dtype)
    input_order = [by_label_in[x] for x in before + g + k + after]
    filter_order = [by_label_filt[x] for x in g + c + k]
    out_index = {label: d for d, label in enumerate(out_labels)}
    out_shape = tuple(sizes[x] for x in out_labels)
    if not g and not after:  # one FULLY_CONNECTED
        x = view_runs(cx, inp, input_order, (len(before), len(k)))
        w = view_runs(cx, filt, filter_order, (len(c), len(k)))
        order = [out_index[label] for label in before + c]
        layout, grouping = stored_layout(out_shape, order, (len(before), len(c)))
        return cx.emit(Op.FULLY_CONNECTED, dict(input=x, weights=w, bias=bias,
                                                fuse_code=cx.i32(0)),
                       out_shape, dtype, layout, groups=grouping)
    nchw = bool(after)
    if nchw:
        x_runs = (len(before), len(g) + len(k), len(after), 0)
        out_runs = (len(before), len(g) + len(c), len(after), 0)
    else:
        x_runs = (len(before), 0, 0, len(g) + len(k))
        out_runs = (len(before), 0, 0, len(g) + len(c))
    x = view_runs(cx, inp, input_order, x_runs)
    w = view_runs(cx, filt, filter_order, (len(g) + len(c), 0, 0, len(k)))
    zero, one = cx.i32(0), cx.i32(1)
    order = [out_index[label] for label in before + g + c + after]
    layout, grouping = stored_layout(out_shape, order, out_runs)
    inputs: dict[str, OperandRef] = dict(
        input=x, filter=w, bias=bias, pad_left=zero, pad_right=zero, pad_top=zero,
        pad_bottom=zero, stride_w=one, stride_h=one, num_groups=cx.i32(groups),
        fuse_code=zero, nchw=cx.boolean(nchw))
    return cx.emit(Op.GROUPED_CONV_2D, inputs, out_shape, dtype, layout, groups=grouping)


def _full_layout(t: TensorValue, order: Sequence[int]) -> lay.Layout:
    """A layout storing ``t``'s dimensions ``order`` first (its size-1 ones after)."""
    return tuple(order) + tuple(d for d in range(t.rank) if d not in order)

