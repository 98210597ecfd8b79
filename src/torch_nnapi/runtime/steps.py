"""What a compiled step holds: its operation, kernel and binding, the shapes settled at
compile time, the native runners planned for its input shapes and its fusion; and how the
execution loop calls a step (``StepCall``). Also the executor's small shape helpers and how
kernel errors are reported.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nnapi.errors import NnapiError, OpFailedError, OutOfMemoryError
from ..nnapi.model import Operation
from .context import Binding, KernelContext, Shape
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


@dataclass(frozen=True)
class SettledShapes:
    """A step's output shapes settled at compile time from input shapes and constants only,
    valid whenever the actual input shapes are ``inputs``."""

    inputs: tuple[Shape, ...]
    outputs: list[Shape]


@dataclass
class NativeRunners:
    """A step's native kernel: its planner, the inputs whose shapes a runner depends on
    (``variable``, the non-constant ones), and the runners it planned (None: the plan left the
    operation to the reference kernel). The runner for the compile-time shapes is planned once
    and kept for every execution of those shapes; the one for other shapes is planned again
    when they change."""

    planner: PlanFn
    variable: tuple[int, ...]
    static_planned: bool = False
    static_runner: Runner | None = None
    # The variable inputs' shapes ``runner`` was planned for (None: not planned).
    shapes: tuple[Shape | None, ...] | None = None
    runner: Runner | None = None

    def shapes_of(self, values: list[Any]) -> tuple[Shape | None, ...]:
        return tuple([getattr(values[i], "shape", None) for i in self.variable])

    def runner_for(self, ctx: KernelContext, values: list[Any],
                   static: bool) -> tuple[Runner | None, bool]:
        """The runner for the current input shapes (``static``: the compile-time ones), and
        whether it was planned just now."""
        if static:
            if self.static_planned:
                return self.static_runner, False
            self.static_runner = self.planner(ctx)
            self.static_planned = True
            return self.static_runner, True
        shapes = self.shapes_of(values)
        if shapes == self.shapes:
            return self.runner, False
        runner = self.planner(ctx)
        self.shapes, self.runner = shapes, runner
        return runner, True

    def forget(self) -> None:
        """Drops every runner (one gave a wrong output: it is not used again unchecked)."""
        self.static_planned, self.static_runner = False, None
        self.shapes, self.runner = None, None


@dataclass(frozen=True)
class Fusion:
    """What a step computes together with itself: the earlier ``steps`` whose results only it
    (or they, among themselves) reads, skipped once the fused runner is planned, and the
    operands that runner takes."""

    steps: tuple[Step, ...]
    inputs: tuple[int, ...]


@dataclass
class Step:
    """One operation of a compiled model: what the constructor takes is known from the
    operation; the rest the compilation settles later (shapes, frees, fusion) or the
    kernels fill in (memo)."""

    position: int
    operation: Operation
    kernel: Kernel
    # The operation's inputs and outputs by signature name, for its kernel.
    binding: Binding
    # Per output: whether it is rounded to float16 (relaxed precision emulated).
    rounded: tuple[bool, ...]
    native: NativeRunners | None = None
    settled: SettledShapes | None = field(default=None, init=False)
    # The temporaries no later step reads, dropped once this step has run.
    frees: tuple[int, ...] = field(default=(), init=False)
    # A native fusion (registry.register_fusion, a group fusion): the steps this step computes
    # together with itself and, once planned for the compile-time shapes, the runner computing
    # this step from the fusion's inputs; the fused steps are then skipped (``fused_away``)
    # when shapes are those.
    fusion: Fusion | None = field(default=None, init=False)
    fused_runner: Runner | None = field(default=None, init=False)
    fused_away: bool = field(default=False, init=False)
    # Per-operation values kernels derive once (see runtime.ops._memo); owned by this step so
    # they live and die with the compilation.
    memo: dict[str, Any] = field(default_factory=dict, init=False)

    @property
    def where(self) -> str:
        return f"operation {self.position} ({self.operation.type.name})"

    def store(self, results: Any, values: list[Any]) -> None:
        """A runner's results into ``values``: one array or a sequence of them, each output
        rounded to float16 where relaxed precision is emulated."""
        if type(results) is np.ndarray:
            results = (results,)
        for o, array, rounded in zip(self.operation.outputs, results, self.rounded,
                                     strict=False):
            values[o] = array.astype(np.float16).astype(np.float32) if rounded else array


@dataclass(frozen=True, slots=True)
class StepCall:
    """How the execution loop (``Compilation._run_calls``) makes one step: ``runner`` on the
    values ``arguments`` picks, when the variable inputs' shapes are ``shapes`` (None: not
    checked); a lone array result goes to operand ``single`` (-1: ``Step.store`` places the
    results); then the temporaries ``frees`` are dropped. Without a runner (or when it
    declines, or the shapes differ), the step runs the full way; ``skip``: fused into a
    later step."""

    step: Step
    runner: Runner | None
    arguments: Callable[[list[Any]], tuple[Any, ...]]
    shapes: tuple[Shape | None, ...] | None
    single: int
    frees: tuple[int, ...]
    skip: bool = False

    @staticmethod
    def of(step: Step, runner: Runner | None = None, *, inputs: Sequence[int] | None = None,
           shapes: tuple[Shape | None, ...] | None = None, keep: bool = False,
           skip: bool = False) -> StepCall:
        """``runner`` on ``inputs`` (by default the operation's); ``keep``: no temporary is
        dropped."""
        inputs = step.operation.inputs if inputs is None else inputs
        # itemgetter picks the values in C (a recurrent step has two dozen inputs); with one
        # index it would give the value itself, not a tuple.
        arguments: Callable[[list[Any]], tuple[Any, ...]]
        if len(inputs) == 1:
            only = inputs[0]
            arguments = lambda values: (values[only],)  # noqa: E731
        else:
            arguments = operator.itemgetter(*inputs)
        outputs = step.operation.outputs
        single = outputs[0] if len(outputs) == 1 and not step.rounded[0] else -1
        return StepCall(step, runner, arguments, shapes, single, () if keep else step.frees,
                        skip)

    @staticmethod
    def static(step: Step) -> StepCall:
        """How an execution of the compile-time shapes calls ``step``: its runner for them,
        unchecked (none before it is planned: the full way plans it), or the fusion that
        replaces it."""
        if step.fused_away:
            return StepCall.of(step, skip=True)
        if step.fusion is not None and step.fused_runner is not None:
            return StepCall.of(step, step.fused_runner, inputs=step.fusion.inputs)
        return StepCall.of(step, step.native.static_runner if step.native is not None else None)

    @staticmethod
    def checked(step: Step) -> StepCall:
        """How an execution of other shapes calls ``step``: its last runner, when the shapes
        it was planned for are the execution's."""
        native = step.native
        if native is None or native.shapes is None:
            return StepCall.of(step)
        return StepCall.of(step, native.runner, shapes=native.shapes)

    def planned_for(self, values: list[Any]) -> bool:
        """Whether the variable inputs in ``values`` have the shapes the runner was planned
        for."""
        native = self.step.native
        return native is not None and native.shapes_of(values) == self.shapes


# A call as Compilation._replay makes it: runner (None: the step the full way), argument
# picker, lone output operand (-1: Step.store places the results), temporaries to drop, and
# the call (None: an entry that only drops temporaries).
Replayed = tuple[Runner | None, Callable[[list[Any]], tuple[Any, ...]], int, tuple[int, ...],
                 StepCall | None]


def replayed(calls: Sequence[StepCall]) -> list[Replayed]:
    """``calls`` unpacked once into the tuples the replay loop reads, the fused-away steps left
    out: half the steps of a transformer, whose temporaries the next call drops instead."""
    flat: list[Replayed] = []
    pending: tuple[int, ...] = ()
    for call in calls:
        if call.skip:
            pending += call.frees
        else:
            flat.append((call.runner, call.arguments, call.single, pending + call.frees, call))
            pending = ()
    if pending:
        flat.append((None, _no_arguments, -1, pending, None))
    return flat


def _no_arguments(values: list[Any]) -> tuple[Any, ...]:
    return ()
