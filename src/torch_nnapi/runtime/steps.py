"""What a compiled step holds: its operation, kernel and binding, the shapes settled at
compile time, the native runner planned for its input shapes and its fusion; and how a step
that runs from a replayed list (``Compilation._replay``) is described. Also the executor's
small shape helpers and how kernel errors are reported.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nnapi.errors import NnapiError, OpFailedError, OutOfMemoryError
from ..nnapi.model import Operation
from .context import Binding, Shape
from .limits import is_allocation_failure
from .registry import Kernel, PlanFn, Runner


def fully_known(shape: Shape, is_scalar: bool) -> bool:
    return is_scalar or (len(shape) > 0 and all(d > 0 for d in shape))


def has_shape(value: Any, shape: Shape) -> bool:
    """Whether an input value fits the shape its step was prepared for (values without a
    shape, omitted inputs and model references, always do)."""
    return not isinstance(value, np.ndarray) or value.shape == shape


def conflicts(declared: Shape, actual: Shape) -> bool:
    """True when a declared shape (0 = unknown, () = unknown rank) contradicts an actual one."""
    if not declared:
        return False
    if len(declared) != len(actual):
        return True
    return any(d and d != a for d, a in zip(declared, actual, strict=True))


def prefixed(error: Exception, where: str) -> NnapiError:
    """Re-raises a kernel's error with the operation it happened in (once)."""
    if isinstance(error, NnapiError):
        message = str(error)
        return type(error)(message if message.startswith(where) else f"{where}: {message}",
                           error.code)
    if is_allocation_failure(error):
        return OutOfMemoryError(f"{where}: {type(error).__name__}: {error}")
    return OpFailedError(f"{where}: {type(error).__name__}: {error}")


@dataclass
class Step:
    position: int
    operation: Operation
    kernel: Kernel
    # The operation's inputs and outputs by signature name, for its kernel.
    binding: Binding
    # Output shapes settled at compile time from input shapes and constants only, valid
    # whenever the actual input shapes equal ``input_shapes``.
    static_outputs: list[Shape] | None = None
    input_shapes: tuple[Shape, ...] = ()
    frees: tuple[int, ...] = ()
    # The native kernel's planner (None: the reference execute only), and the runner it
    # planned for the shapes of the inputs in `variable` (None: left to the reference).
    planner: PlanFn | None = None
    variable: tuple[int, ...] = ()
    plan: tuple[tuple[Shape | None, ...], Runner | None] | None = None
    # Per output: whether it is rounded to float16 (relaxed precision emulated).
    rounded: tuple[bool, ...] = ()
    # The operation's inputs, and its one output when it has one that is not rounded (-1
    # otherwise): what the runner loop reads.
    inputs: tuple[int, ...] = ()
    single_output: int = -1
    # A native fusion (registry.register_fusion): the step whose only reader this step is,
    # and, once planned for the compile-time shapes, the runner computing this step from that
    # step's inputs; the fused step is then skipped (`fused_away`) when shapes are those.
    fusion: Step | None = None
    fused_runner: Runner | None = None
    fused_inputs: tuple[int, ...] = ()
    fused_away: bool = False
    # Per-operation values kernels derive once (see runtime.ops._memo); owned by this step so
    # they live and die with the compilation.
    memo: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"operation {self.position} ({self.operation.type.name})"


@dataclass(frozen=True, slots=True)
class Replayed:
    """A step as an execution with the compile-time shapes runs it once every runner is
    planned (``Compilation._replay``): its runner on the values ``arguments`` picks (None:
    the step the full way; ``skip``: fused into a later step), its outputs, then the
    temporaries it drops."""

    step: Step
    runner: Runner | None
    arguments: Callable[[list[Any]], tuple[Any, ...]]
    outputs: tuple[int, ...]
    frees: tuple[int, ...]
    skip: bool = False

    @staticmethod
    def of(step: Step, runner: Runner | None, inputs: Sequence[int], skip: bool = False) \
            -> Replayed:
        # itemgetter picks the values in C (a recurrent step has two dozen inputs); with one
        # index it would give the value itself, not a tuple.
        arguments: Callable[[list[Any]], tuple[Any, ...]]
        if len(inputs) == 1:
            only = inputs[0]
            arguments = lambda values: (values[only],)  # noqa: E731
        else:
            arguments = operator.itemgetter(*inputs)
        return Replayed(step, runner, arguments, tuple(step.operation.outputs), step.frees, skip)
