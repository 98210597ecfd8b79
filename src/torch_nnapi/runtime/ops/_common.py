"""Shape and parameter helpers shared by kernel families."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from ...nnapi.codes import FuseCode
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape

_FUSE_CODES = frozenset(int(code) for code in FuseCode)


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> Shape:
    """NumPy-style broadcasting, which NNAPI's element-wise operations follow."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y and x != 1 and y != 1:
            raise BadDataError(f"shapes {list(a)} and {list(b)} cannot be broadcast"
                               f" (dimension {i}: {x} vs {y})")
        out.append(y if x == 1 else x)
    return tuple(out)


def same_as_input(name: str = "input") -> Callable[[KernelContext], list[Shape]]:
    """A prepare function for operations whose single output has input ``name``'s shape."""

    def prepare(ctx: KernelContext) -> list[Shape]:
        return [ctx.input_shape(name)]

    return prepare


def broadcast_inputs(first: str = "input0", second: str = "input1") \
        -> Callable[[KernelContext], list[Shape]]:
    """A prepare function: the output is the broadcast of inputs ``first`` and ``second``."""

    def prepare(ctx: KernelContext) -> list[Shape]:
        return [broadcast_shapes(ctx.input_shape(first), ctx.input_shape(second))]

    return prepare


def fuse_code_input(ctx: KernelContext, name: str = "fuse_code") -> int:
    """The fused activation of input ``name``, checked to be a FuseCode."""
    code = ctx.scalar(name)
    if code not in _FUSE_CODES:
        raise BadDataError(f"{ctx.describe_input(name)} {code} is not a FuseCode (0..3)")
    return cast("int", code)


def check_rank(ctx: KernelContext, name: str, ranks: Sequence[int] | range) -> Shape:
    """Input ``name``'s shape, after checking its rank is one of ``ranks``."""
    shape = ctx.input_shape(name)
    if len(shape) not in ranks:
        allowed = f"{ranks.start}..{ranks.stop - 1}" if isinstance(ranks, range) else \
            " or ".join(map(str, ranks))
        raise BadDataError(f"{ctx.describe_input(name)} must have rank {allowed}, got shape"
                           f" {list(shape)}")
    return shape
