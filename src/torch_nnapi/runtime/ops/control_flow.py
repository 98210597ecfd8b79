"""IF and WHILE: they run the models their MODEL inputs refer to.

The compilation holds a compiled model for each MODEL operand, so a kernel reads its called
models as input values and runs them within the execution's limits (``ctx.limits``). What
they output decides the operation's output shapes (``shaped_by_execution``): a called model
may produce tensors of any size, so operands of unknown shape flow through. At compile time
the shapes are given only when the called model declares them.

A WHILE loop that keeps running longer than the execution's loop timeout (2 s by default,
at most 15 s) ends the execution with MissedDeadlineError, checked each time the condition
says to go on, as Android does; the execution's own timeout is checked as well.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol, cast

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import MissedDeadlineError
from ..context import KernelContext, Shape, ValueNotKnown
from ..registry import register
from ..timeouts import RunLimits


class _Called(Protocol):
    """What a MODEL input's value is: the compilation of the model it names."""

    model: Any

    def run(self, inputs: Sequence[Any], *, limits: RunLimits) -> Any: ...


def _called(ctx: KernelContext, name: str) -> _Called:
    return cast(_Called, ctx.input(name))


def _truth(condition: np.ndarray) -> bool:
    """A condition operand (TENSOR_BOOL8 of shape [1]): any nonzero value is true."""
    return bool(condition.reshape(-1)[0])


def _declared_outputs(called: _Called) -> list[Shape]:
    """The output shapes a called model declares, when every one is fully specified."""
    model = called.model
    shapes = []
    for o in model.outputs:
        operand = model.operands[o]
        if not operand.fully_specified:
            raise ValueNotKnown(f"the called model's output {operand.describe()}")
        shapes.append(() if operand.is_scalar else tuple(operand.dimensions))
    return shapes


def _passed(ctx: KernelContext) -> list[np.ndarray]:
    """The operation's inputs after its MODEL operands, in order."""
    return ctx.inputs("inputs") if ctx.input_count("inputs") else []


def _prepare_if(ctx: KernelContext) -> list[Shape]:
    branch = "then_model" if _truth(ctx.input("condition")) else "else_model"
    return _declared_outputs(_called(ctx, branch))


@register(Op.IF, prepare=_prepare_if, shaped_by_execution=True)
def if_(ctx: KernelContext) -> Sequence[np.ndarray]:
    branch = _called(ctx, "then_model" if _truth(ctx.input("condition")) else "else_model")
    return cast("Sequence[np.ndarray]", branch.run(_passed(ctx), limits=ctx.limits).outputs)


def _prepare_while(ctx: KernelContext) -> list[Shape]:
    """The loop's outputs are the body's first outputs."""
    count = ctx.output_count("outputs")
    return _declared_outputs(_called(ctx, "body_model"))[:count]


@register(Op.WHILE, prepare=_prepare_while, shaped_by_execution=True)
def while_(ctx: KernelContext) -> Sequence[np.ndarray]:
    condition, body = _called(ctx, "condition_model"), _called(ctx, "body_model")
    limits = ctx.limits
    values = _passed(ctx)
    carried = len(body.model.outputs)  # values fed back: outputs first, then state
    start = time.monotonic_ns()
    while True:
        limits.check_deadline()
        if not _truth(condition.run(values, limits=limits).outputs[0]):
            break
        elapsed = time.monotonic_ns() - start
        if elapsed > limits.loop_timeout_ns:
            raise MissedDeadlineError(f"the loop ran {elapsed / 1e9:.3g} s, longer than the"
                                      f" loop timeout of {limits.loop_timeout_ns / 1e9:g} s")
        values = [*body.run(values, limits=limits).outputs, *values[carried:]]
    return values[:ctx.output_count("outputs")]
