"""Remembering what a kernel derives from an operation's constants and input shapes.

Reading and checking a convolution's dozen scalars and working out its window takes tens of
microseconds of Python per execution, a sizeable share of a small layer's time. The result
only depends on the operation's constant operands and on the shapes of its other inputs, so
it is kept in the compiled step's memo (``KernelContext.memo``) and reused while those shapes
stay the same. Executions running at once may both compute an entry; they store equal values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from ..context import KernelContext

T = TypeVar("T")


def per_operation(ctx: KernelContext, what: str, compute: Callable[[KernelContext], T],
                  shape_only: frozenset[str]) -> T:
    """compute(ctx), reused for this operation while its inputs keep their shapes.

    ``compute`` may read the values of constant inputs but only the shapes of the inputs
    named in ``shape_only``; when any other input is not a constant, nothing is remembered.
    """
    shapes = ctx.shapes_key()
    entry = ctx.memo.get(what)
    if entry is not None and entry[0] == shapes:
        return cast("T", entry[1])
    value = compute(ctx)
    if ctx.variable_inputs <= shape_only:
        ctx.memo[what] = (shapes, value)
    return value
