"""Dimension order of an operand: how the NNAPI tensor's dimensions relate to PyTorch's.

Each converted tensor keeps PyTorch's logical shape (NCHW for feature maps) and a *layout*,
a permutation with ``nnapi_shape[i] == torch_shape[layout[i]]``. The identity is PyTorch's
contiguous order; ``NHWC`` is channels-last. Operations that do not care about order
(element-wise math, reductions, concatenation, slicing...) work in any layout by mapping
their axes; convolutions, pools and resizes take NCHW or NHWC (NNAPI's layout flag); a
reshape needs the contiguous order unless only size-1 dimensions move. A TRANSPOSE is
emitted only when an operation's requirement is not met (``Converter.to_layout``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TypeVar

from .symbolic import SymInt

Layout = tuple[int, ...]
T = TypeVar("T")
# One TRANSPOSE of merged dimensions: run lengths over the current order, the permutation of
# those runs
Step = tuple[tuple[int, ...], tuple[int, ...]]

NHWC: Layout = (0, 2, 3, 1)


def identity(rank: int) -> Layout:
    return tuple(range(rank))


def is_identity(layout: Layout) -> bool:
    return all(i == d for i, d in enumerate(layout))


def apply(layout: Layout, torch_shape: Sequence[T]) -> tuple[T, ...]:
    """The NNAPI shape of a tensor with this PyTorch shape and layout."""
    return tuple(torch_shape[d] for d in layout)


def inverse(layout: Layout) -> Layout:
    inv = [0] * len(layout)
    for i, d in enumerate(layout):
        inv[d] = i
    return tuple(inv)


def axis(layout: Layout, torch_dim: int) -> int:
    """Where PyTorch dimension ``torch_dim`` sits in the NNAPI tensor."""
    return layout.index(torch_dim)


def transpose_perm(src: Layout, dst: Layout) -> tuple[int, ...]:
    """The TRANSPOSE permutation taking data in layout ``src`` to layout ``dst``."""
    return tuple(src.index(d) for d in dst)


def compose(layout: Layout, perm: Sequence[int]) -> Layout:
    """Layout of ``x.permute(perm)`` when ``x`` has ``layout`` and the data is not moved."""
    # new torch dim j is old torch dim perm[j]; nnapi dim i holds old dim layout[i]
    position = {old: new for new, old in enumerate(perm)}
    return tuple(position[d] for d in layout)


def without_dims(layout: Layout, dims: Sequence[int]) -> Layout:
    """Layout after removing (reducing away) PyTorch dimensions ``dims``."""
    removed = set(dims)
    kept = [d for d in layout if d not in removed]
    renumber = {d: i for i, d in enumerate(sorted(kept))}
    return tuple(renumber[d] for d in kept)


def data_order_matches(layout: Layout, torch_shape: Sequence[SymInt]) -> bool:
    """True when the data is in contiguous order already: only size-1 dims are moved."""
    order = [d for d in layout if not _is_one(torch_shape[d])]
    return order == sorted(order)


def _is_one(d: SymInt) -> bool:
    return isinstance(d, int) and d == 1


def normalize_dim(dim: int, rank: int) -> int:
    if not -rank <= dim < max(rank, 1):
        raise IndexError(f"dimension {dim} is out of range for rank {rank}")
    return dim % rank if rank else 0


# ------------------------------------------------------------------------------ merged dims
#
# NNAPI operands hold at most 4 dimensions; PyTorch tensors may have more. A tensor of any
# rank is held by an operand whose dimensions each merge a run of consecutive dimensions of
# the storage order (``layout``): ``groups`` gives the runs' lengths (``()``: one dimension
# each, the usual case). Dimensions that move together through a sequence of reshapes and
# permutes stay merged, so [B, T, 3, H, D] attention reshapes and window partitions need no
# operand of rank above 4. Size-1 dimensions can join any run; a run of length 0 is an NNAPI
# dimension of size 1 that holds no PyTorch dimension (e.g. a convolution's 1x1 image).

Groups = tuple[int, ...]


def group_sizes(groups: Groups, rank: int) -> tuple[int, ...]:
    """The run lengths, one per NNAPI dimension (``()`` expanded to all ones)."""
    return tuple(groups) if groups else (1,) * rank


def normalize_groups(groups: Sequence[int], rank: int) -> Groups:
    """``groups`` as stored: ``()`` when every run has length one."""
    groups = tuple(int(g) for g in groups)
    if sum(groups) != rank or any(g < 0 for g in groups):
        raise ValueError(f"groups {groups} do not partition {rank} dimensions")
    return () if all(g == 1 for g in groups) else groups


def group_runs(groups: Groups, rank: int) -> list[tuple[int, ...]]:
    """The storage positions each NNAPI dimension merges."""
    runs, start = [], 0
    for g in group_sizes(groups, rank):
        runs.append(tuple(range(start, start + g)))
        start += g
    return runs


def merged_shape(layout: Layout, groups: Groups, torch_shape: Sequence[SymInt]
                 ) -> tuple[SymInt, ...]:
    """The NNAPI shape: per run of the storage order, the product of its sizes."""
    stored = apply(layout, torch_shape)
    out = []
    for run in group_runs(groups, len(layout)):
        size: SymInt = 1
        for position in run:
            size = size * stored[position]
        out.append(size)
    return tuple(out)


def coarsest_groups(classes: Sequence[object]) -> Groups:
    """The fewest runs over a storage order whose positions each share a class; positions
    of class None (size-1 dimensions) join any run. Returned unnormalized (lengths)."""
    sizes: list[int] = []
    current: object = None
    pending = 0  # leading size-1 dimensions, joined to the first run
    for c in classes:
        if c is None:
            if sizes:
                sizes[-1] += 1
            else:
                pending += 1
        elif sizes and c == current:
            sizes[-1] += 1
        else:
            sizes.append(1 + pending)
            pending = 0
            current = c
    if pending:
        sizes.append(pending)
    return tuple(sizes)


def groups_respect(groups: Groups, classes: Sequence[object]) -> bool:
    """True when every run of ``groups`` holds one class (None joining any)."""
    for run in group_runs(groups, len(classes)):
        seen = {classes[p] for p in run} - {None}
        if len(seen) > 1:
            return False
    return True


def transpose_plan(src: Sequence[int], dst: Sequence[int], max_rank: int = 4,
                   max_steps: int = 3) -> list[Step] | None:
    """TRANSPOSEs of at most ``max_rank`` merged dimensions taking order ``src`` to ``dst``
    (both orders of the same dimension ids): a list of (run lengths over the current order,
    permutation of those runs). Dimensions consecutive in both orders move as one; when
    more than ``max_rank`` runs remain, a shortest sequence of steps is searched. None when
    ``max_steps`` steps cannot do it."""
    src, dst = tuple(src), tuple(dst)
    if src == dst:
        return []
    step = _one_step(src, dst, max_rank)
    if step is not None:
        return [step]
    target_rank = {d: i for i, d in enumerate(dst)}

    def breaks(order: tuple[int, ...]) -> int:
        return sum(1 for a, b in itertools.pairwise(order) if target_rank[b] != target_rank[a] + 1)

    frontier: dict[tuple[int, ...], list[Step]] = {src: []}
    seen = {src}
    for _ in range(max_steps - 1):
        candidates = []
        for order, steps in frontier.items():
            for runs, perm, moved in _moves(order, max_rank):
                if moved in seen:
                    continue
                seen.add(moved)
                plan = steps + [(runs, perm)]
                final = _one_step(moved, dst, max_rank)
                if final is not None:
                    return plan + [final]
                candidates.append((breaks(moved), moved, plan))
        candidates.sort(key=lambda c: c[0])
        frontier = {moved: plan for _, moved, plan in candidates[:64]}
    return None


def _one_step(src: tuple[int, ...], dst: tuple[int, ...], max_rank: int) -> Step | None:
    """(runs, permutation) moving ``src`` to ``dst`` in one TRANSPOSE, or None."""
    position = {d: i for i, d in enumerate(src)}
    blocks: list[list[int]] = []
    for d in dst:
        if blocks and position[d] == position[blocks[-1][-1]] + 1:
            blocks[-1].append(d)
        else:
            blocks.append([d])
    if len(blocks) > max_rank:
        return None
    by_start = sorted(range(len(blocks)), key=lambda b: position[blocks[b][0]])
    runs = tuple(len(blocks[b]) for b in by_start)
    # output run j is input run perm[j]
    perm = tuple(by_start.index(b) for b in range(len(blocks)))
    return runs, perm


def _moves(order: tuple[int, ...], max_rank: int
           ) -> Iterator[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """Every TRANSPOSE of ``order`` cut into 2..max_rank runs: (runs, perm, new order)."""
    from itertools import combinations, permutations

    n = len(order)
    for k in range(2, min(max_rank, n) + 1):
        for cuts in combinations(range(1, n), k - 1):
            bounds = (0,) + cuts + (n,)
            pieces = [order[bounds[i]:bounds[i + 1]] for i in range(k)]
            runs = tuple(len(p) for p in pieces)
            for perm in permutations(range(k)):
                if perm == tuple(range(k)):
                    continue
                yield runs, perm, tuple(d for j in perm for d in pieces[j])
