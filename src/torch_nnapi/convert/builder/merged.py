"""Operands that merge dimensions: how tensors of any rank live in NNAPI operands of rank 4.

A TensorValue's ``groups`` (layout.py) say which runs of its storage order one NNAPI
dimension merges. These functions give a lowering the merging it needs: ``fit`` and
``separate`` regroup an operand so that each NNAPI dimension holds dimensions of one kind
(reduced or kept, broadcast or not, the sliced one alone), ``regroup``/``view_runs`` are the
RESHAPEs doing it (none when the dimensions already agree, one per distinct result),
``transpose_merged`` moves data with TRANSPOSEs of at most 4 merged dimensions, and
``reshape_in_place``/``reshape_merged`` let a view of rank above 4 keep the operand it views.
Lowerings that handle merged operands declare ``any_rank=True`` (lowerings/__init__.py);
the others get one NNAPI dimension per PyTorch dimension from :func:`ungroup`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..errors import Unsupported
from . import layout as lay
from .symbolic import Sym, SymInt, hint, hints
from .values import TensorValue


class Converter(Protocol):
    """What these functions need of the converter (context.Converter, which calls them from
    its reshapes and layout changes: a protocol here keeps the two modules out of a circle)."""

    # (operand, NNAPI dims) -> the operand a RESHAPE made of it
    regrouped: dict[tuple[int, tuple[SymInt, ...]], int]

    def new_tensor(self, shape: Sequence[SymInt], dtype: str, layout: lay.Layout | None = ...,
                   scale: float = ..., zero_point: int = ..., groups: Sequence[int] = ...
                   ) -> TensorValue: ...

    def operation(self, op: Op, inputs: Mapping[str, TensorValue | int],
                  outputs: Mapping[str, TensorValue]) -> None: ...

    def emit(self, op: Op, inputs: Mapping[str, TensorValue | int], shape: Sequence[SymInt],
             dtype: str, layout: lay.Layout | None = ..., scale: float = ...,
             zero_point: int = ..., groups: Sequence[int] = ...) -> TensorValue: ...

    def int_vector(self, values: Iterable[SymInt]) -> int: ...

    def shape_vector(self, shape: Sequence[SymInt]) -> int: ...

    def reshape(self, t: TensorValue, shape: Sequence[SymInt]) -> TensorValue: ...

    def contiguous(self, t: TensorValue) -> TensorValue: ...

    def cast(self, t: TensorValue, dtype: str) -> TensorValue: ...

    def through_float(self, t: TensorValue,
                      move: Callable[[TensorValue], TensorValue]) -> TensorValue: ...


def with_rank(cx: Converter, t: TensorValue, rank: int) -> TensorValue:
    """``t`` with size-1 dimensions prepended up to ``rank``, as broadcasting does: the
    same operand when ``t`` merges dimensions or has some (they join its first run),
    else a RESHAPE."""
    extra = rank - t.rank
    if extra <= 0:
        return t
    shape = (1,) * extra + tuple(t.shape)
    if t.rank == 0 or (not t.groups and rank <= 4):
        return cx.reshape(t, shape)
    sizes = list(lay.group_sizes(t.groups, t.rank))
    sizes[0] += extra
    layout = tuple(range(extra)) + tuple(d + extra for d in t.layout)
    return t.with_(shape=shape, layout=layout, groups=lay.normalize_groups(sizes, rank))


def transpose_merged(cx: Converter, t: TensorValue, layout: lay.Layout) -> TensorValue:
    """to_layout for merged operands: TRANSPOSEs of at most 4 runs of dimensions that
    move together (layout.transpose_plan)."""
    order = [d for d in t.layout if not is_one(t.shape[d])]
    wanted = [d for d in layout if not is_one(t.shape[d])]
    if order != wanted and t.nnapi_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
        return cx.through_float(t, lambda f: transpose_merged(cx, f, layout))
    if order != wanted:
        plan = lay.transpose_plan(order, wanted)
        if plan is None:
            raise Unsupported(f"permuting a tensor of shape {list(hints(t.shape))} takes"
                              " more than 3 NNAPI transposes")
        for runs, perm in plan:
            t = view_runs(cx, t, order, runs)
            pieces, start = [], 0
            for n in runs:
                pieces.append(order[start:start + n])
                start += n
            order = [d for j in perm for d in pieces[j]]
            new_layout, groups = stored_layout(t.shape, order, [runs[j] for j in perm])
            t = cx.emit(Op.TRANSPOSE, dict(input=t, perm=cx.int_vector(perm)), t.shape,
                        t.dtype, new_layout, t.scale, t.zero_point, groups)
    return relabel(cx, t, layout)


def view_runs(cx: Converter, t: TensorValue, order: Sequence[int], runs: Sequence[int]) \
        -> TensorValue:
    """``t``, whose size-above-1 dimensions are stored in ``order``, as an operand
    whose dimensions merge the runs ``runs`` of that order (a RESHAPE if needed)."""
    layout, groups = stored_layout(t.shape, order, runs)
    return regroup(cx, t.with_(layout=layout, groups=()), groups, relabel_from=t)


def relabel(cx: Converter, t: TensorValue, layout: lay.Layout) -> TensorValue:
    """``t`` described with ``layout``, which orders its size-above-1 dimensions as it
    stores them: the same operand, with runs of ``layout`` matching its dimensions."""
    layout = tuple(layout)
    if layout == t.layout:
        return t
    groups = _groups_matching(layout, t.shape, t.nnapi_shape)
    if groups is None:
        return regroup(cx, t.with_(layout=layout, groups=()),
                            _default_runs(lay.apply(layout, t.shape)), relabel_from=t)
    return t.with_(layout=layout, groups=lay.normalize_groups(groups, t.rank))


def regroup(cx: Converter, t: TensorValue, groups: Sequence[int],
            relabel_from: TensorValue | None = None) -> TensorValue:
    """``t`` (data order unchanged) in an operand whose dimensions merge the runs
    ``groups`` of its layout: the same operand when the dimensions agree, else a
    RESHAPE (one per distinct result, reused)."""
    source = relabel_from if relabel_from is not None else t
    groups = lay.normalize_groups(groups, t.rank) if groups else ()
    wanted = lay.merged_shape(t.layout, groups, t.shape) if groups else \
        lay.apply(t.layout, t.shape)
    if len(wanted) > 4:
        raise Unsupported(f"NNAPI tensors have at most 4 dimensions, this one would have"
                          f" shape {[hint(d) for d in wanted]}")
    if _same_dims(source.nnapi_shape, wanted):
        return t.with_(groups=groups, operand=source.operand)
    if t.nnapi_type in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
        return cx.through_float(source, lambda f: regroup(
            cx, t.with_(operand=f.operand, dtype="float32"), groups, relabel_from=f))
    key = (source.operand, tuple(wanted))
    found = cx.regrouped.get(key)
    if found is not None:
        return t.with_(groups=groups, operand=found)
    out = cx.new_tensor(t.shape, t.dtype, t.layout, t.scale, t.zero_point, groups)
    cx.operation(Op.RESHAPE,
                   dict(input=source, shape=cx.shape_vector(out.nnapi_shape or (1,))),
                   dict(output=out))
    cx.regrouped[key] = out.operand
    return out


def fit(cx: Converter, t: TensorValue, classes: Sequence[object]) -> TensorValue:
    """``t`` in an operand of rank at most 4 whose every dimension merges PyTorch
    dimensions of one class (``classes[d]`` per PyTorch dimension; None: joins any):
    ``t`` itself when it already is, else the coarsest such merging."""
    stored = [classes[d] for d in t.layout]
    if (t.groups or t.rank > 4) and not (lay.groups_respect(t.groups, stored)
                                         and len(t.nnapi_shape) <= 4):
        groups = lay.coarsest_groups(stored)
        if len(groups) > 4:
            raise Unsupported(f"a tensor of shape {list(hints(t.shape))} needs"
                              f" {len(groups)} NNAPI dimensions here (at most 4)")
        return regroup(cx, t, groups)
    return t


def separate(cx: Converter, t: TensorValue, dims: Iterable[int]) -> TensorValue:
    """``t`` with each of PyTorch dimensions ``dims`` an NNAPI dimension of its own."""
    special = set(dims)
    classes: list[tuple[str, int] | None] = []
    run = 0
    for d in t.layout:  # the others merge between the separated ones
        if d in special:
            classes.append(("alone", d))
            run += 1
        else:
            classes.append(None if is_one(t.shape[d]) else ("run", run))
    by_dim = {d: c for d, c in zip(t.layout, classes, strict=False)}
    return fit(cx, t, [by_dim[d] for d in range(t.rank)])


def ungroup(cx: Converter, t: TensorValue) -> TensorValue:
    """``t`` in an operand with one dimension per PyTorch dimension (rank <= 4)."""
    if not t.groups:
        return t
    if t.rank > 4:
        raise Unsupported(f"NNAPI tensors have at most 4 dimensions; this operation"
                          f" cannot take a tensor of shape {list(hints(t.shape))}")
    return regroup(cx, t, ())


def reshape_in_place(cx: Converter, t: TensorValue, shape: Sequence[SymInt]) \
        -> TensorValue | None:
    """``t.view(shape)`` without moving data when ``t`` is stored permuted but every
    group of dimensions the view merges or splits is stored together in order (as a
    view of a strided PyTorch tensor would need): the result keeps ``t``'s storage
    order, with the split or merged dimensions in place. None when that is not so."""
    shape = tuple(shape)
    if lay.data_order_matches(t.layout, t.shape) and not t.groups:
        return None
    chunks = _view_chunks(t.shape, shape)
    if chunks is None:
        return None
    stored = [d for d in t.layout if not is_one(t.shape[d])]
    order: list[int] = []
    position = 0
    by_first = {old[0]: (old, new) for old, new in chunks}
    while position < len(stored):
        found = by_first.get(stored[position])
        if found is None:
            return None
        old, new = found
        if stored[position:position + len(old)] != old:
            return None
        order.extend(new)
        position += len(old)
    layout, _ = stored_layout(shape, order, (len(order),))
    runs = _runs_matching(lay.apply(layout, shape), t.nnapi_shape)
    if runs is not None and (len(shape) > 4 or len(runs) == len(shape) or t.groups):
        return t.with_(shape=shape, layout=layout,
                       groups=lay.normalize_groups(runs, len(shape)))
    described = TensorValue(t.operand, shape, t.dtype, layout, t.scale, t.zero_point)
    return regroup(cx, described, _default_runs(lay.apply(layout, shape))
                        if len(shape) > 4 else (), relabel_from=t)


def reshape_merged(cx: Converter, t: TensorValue, shape: tuple[SymInt, ...]) -> TensorValue:
    if not lay.data_order_matches(t.layout, t.shape):
        t = cx.contiguous(t)
    identity = lay.identity(len(shape))
    if len(shape) > 4 or t.groups:
        runs = _runs_matching(shape, t.nnapi_shape)
        if runs is not None and (len(shape) > 4 or len(runs) == len(shape)):
            return t.with_(shape=shape, layout=identity,
                           groups=lay.normalize_groups(runs, len(shape)))
    groups = () if len(shape) <= 4 else _default_runs(shape)
    return regroup(cx, TensorValue(t.operand, shape, t.dtype, identity, t.scale,
                                    t.zero_point), groups, relabel_from=t)


def default_groups(stored: Sequence[SymInt]) -> lay.Groups:
    """Runs of a storage order for a fresh operand of rank above 4: size-1 dimensions
    joined to a neighbour, then the innermost pairs merged until 4 remain."""
    return _default_runs(stored)


def _default_runs(stored: Sequence[SymInt]) -> tuple[int, ...]:
    runs = list(lay.coarsest_groups([None if is_one(d) else i for i, d in enumerate(stored)]))
    while len(runs) > 4:
        runs[-2:] = [runs[-2] + runs[-1]]
    return tuple(runs)


def stored_layout(shape: Sequence[SymInt], order: Sequence[int], runs: Sequence[int]) \
        -> tuple[lay.Layout, lay.Groups]:
    """The layout storing ``shape``'s size-above-1 dimensions in ``order`` (size-1 ones
    after them) and the groups merging ``runs`` of that order (size-1 ones join the last)."""
    units = [d for d in range(len(shape)) if is_one(shape[d]) and d not in order]
    layout = tuple(order) + tuple(units)
    runs = list(runs)
    if units:
        if runs:
            runs[-1] += len(units)
        else:
            runs = [len(units)]
    return layout, lay.normalize_groups(runs, len(layout)) if layout else ()


def _view_chunks(old: Sequence[SymInt], new: Sequence[SymInt]) \
        -> list[tuple[list[int], list[int]]] | None:
    """The size-above-1 dimensions of ``old`` and ``new`` paired into consecutive groups of
    equal size ([old dims], [new dims]), as a view regroups them; None if they do not pair
    (or a flexible size makes it unclear)."""
    olds = [d for d, n in enumerate(old) if not is_one(n)]
    news = [d for d, n in enumerate(new) if not is_one(n)]
    chunks = []
    i = j = 0
    while i < len(olds) and j < len(news):
        a, b = [olds[i]], [news[j]]
        pa, pb = old[olds[i]], new[news[j]]
        i, j = i + 1, j + 1
        while not same_dim(pa, pb):
            if isinstance(pa, Sym) or isinstance(pb, Sym):
                return None
            if pa < pb and i < len(olds):
                a.append(olds[i])
                pa = pa * old[olds[i]]
                i += 1
            elif pb < pa and j < len(news):
                b.append(news[j])
                pb = pb * new[news[j]]
                j += 1
            else:
                return None
        chunks.append((a, b))
    if i != len(olds) or j != len(news):
        return None
    return chunks


def _same_dims(a: Sequence[SymInt], b: Sequence[SymInt]) -> bool:
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b, strict=True))


def _runs_matching(shape: Sequence[SymInt], dims: Sequence[SymInt]) -> list[int] | None:
    """Run lengths of ``shape`` whose products are ``dims`` in order (size-1 entries join
    runs), or None when ``dims`` are not such products."""
    runs: list[int] = []
    i = 0
    for target in dims:
        start = i
        product: SymInt = 1
        if is_one(target):  # a size-1 entry, or an empty run
            if i < len(shape) and is_one(shape[i]):
                i += 1
                runs.append(1)
            else:
                runs.append(0)
            continue
        while i < len(shape) and not same_dim(product, target):
            product = product * shape[i]
            i += 1
        if not same_dim(product, target):
            return None
        runs.append(i - start)
    rest = len(shape) - i
    if rest:
        if not runs or not all(is_one(d) for d in shape[i:]):
            return None
        runs[-1] += rest
    return runs


def _groups_matching(layout: lay.Layout, shape: Sequence[SymInt], dims: Sequence[SymInt]
                     ) -> list[int] | None:
    return _runs_matching(lay.apply(layout, shape), dims)


def is_one(d: SymInt) -> bool:
    """A dimension known to have size 1."""
    return not isinstance(d, Sym) and int(d) == 1


def same_dim(a: SymInt, b: SymInt) -> bool:
    """Sizes known to be equal (flexible ones: the same expression)."""
    if isinstance(a, Sym) or isinstance(b, Sym):
        return isinstance(a, Sym) and a == b
    return int(a) == int(b)
