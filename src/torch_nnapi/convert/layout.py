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

from typing import Sequence, TypeVar

Layout = tuple[int, ...]
T = TypeVar("T")

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


def data_order_matches(layout: Layout, torch_shape: Sequence) -> bool:
    """True when the data is in contiguous order already: only size-1 dims are moved."""
    order = [d for d in layout if not _is_one(torch_shape[d])]
    return order == sorted(order)


def _is_one(d) -> bool:
    return isinstance(d, int) and d == 1


def normalize_dim(dim: int, rank: int) -> int:
    if not -rank <= dim < max(rank, 1):
        raise IndexError(f"dimension {dim} is out of range for rank {rank}")
    return dim % rank if rank else 0
