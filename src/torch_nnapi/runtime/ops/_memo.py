"""Remembering what a kernel derives from an operation's constants and input shapes.

Reading and checking a convolution's dozen scalars and working out its window takes tens of
microseconds of Python per execution, a sizeable share of a small layer's time. The result
only depends on the operation's constant operands and on the shapes of its other inputs, so
it is kept per operation (identified by its first output operand, which only that operation
writes) and reused while those shapes stay the same.
"""

from __future__ import annotations

import weakref
from typing import Callable, TypeVar

from ...nnapi.model import Lifetime
from ..context import KernelContext

T = TypeVar("T")

# (id of the output operand, what) -> (weak reference to it, input shapes, value)
_MEMO: dict[tuple[int, str], tuple[weakref.ref, tuple, object]] = {}


def per_operation(ctx: KernelContext, what: str, compute: Callable[[KernelContext], T],
                  shape_only: tuple[int, ...]) -> T:
    """compute(ctx), reused for this operation while its inputs keep their shapes.

    ``compute`` may read the values of constant inputs but only the shapes of the inputs in
    ``shape_only``; when any other input is not a constant, nothing is remembered.
    """
    operand = ctx.output_operand(0)
    key = (id(operand), what)
    shapes = tuple(ctx.input_shape(i) for i in range(ctx.num_inputs))
    entry = _MEMO.get(key)
    if entry is not None and entry[0]() is operand and entry[1] == shapes:
        return entry[2]
    value = compute(ctx)
    if all(i in shape_only or ctx.input_operand(i).lifetime in (Lifetime.CONSTANT,
                                                                   Lifetime.NO_VALUE)
           for i in range(ctx.num_inputs)):
        _MEMO[key] = (weakref.ref(operand, lambda _, key=key: _MEMO.pop(key, None)), shapes,
                      value)
    return value
