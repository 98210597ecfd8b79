"""The table of runtime kernels: one prepare (shapes and parameter checks) and one execute per
operation type, registered by decorator from the family modules in ``runtime.ops``; and the
native kernels (``runtime.native``) that replace the reference executes when a compilation
runs the native kernel set.

A native kernel is a planner: given an operation's context (its constants and the shapes of
its inputs) it reads and checks its parameters once and returns a runner, ``runner(*values)``
on the operation's input values in order, returning its outputs, valid while the non-constant
inputs keep their shapes; or None to leave the operation to the reference execute. The
executor keeps each step's runner and calls it directly on later executions; a runner
returning None hands that execution to the reference execute (GATHER's, for indices out of
range, which the reference reports). A native fusion
(``register_fusion``) plans one runner for two operations; a group fusion
(``register_group_member``, ``register_group_planner``) one runner for a chain of operations
whose intermediate results nothing else reads (float element-wise ones: GELU, layer norm).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..nnapi.codes import OperationType

if TYPE_CHECKING:
    from ..nnapi.model import Operation
    from .context import KernelContext

Shape = tuple[int, ...]
PrepareFn = Callable[["KernelContext"], Sequence[Shape]]
ExecuteResult = np.ndarray | Sequence[np.ndarray]
ExecuteFn = Callable[["KernelContext"], ExecuteResult]
Runner = Callable[..., ExecuteResult | None]  # None: this time, the reference execute
PlanFn = Callable[["KernelContext"], Runner | None]
# (producer's context, consumer's context) -> runner on the producer's inputs giving the
# consumer's outputs, or None.
FusionPlanFn = Callable[["KernelContext", "KernelContext"], Runner | None]
# Whether an operation (its context at the compile-time shapes) may join a group fusion.
MemberFn = Callable[["KernelContext"], bool]


@dataclass(frozen=True)
class GroupPlan:
    """A group fusion's runner and the operands it takes, in order (the group's inputs that
    are not constants of the model, which the plan keeps)."""

    runner: Runner
    inputs: tuple[int, ...]


# The group's operations in model order, the last one giving the group's result, each with
# its context at the compile-time shapes -> the plan, or None (the operations run one by one).
GroupPlanFn = Callable[[Sequence[tuple["Operation", "KernelContext"]]], GroupPlan | None]


@dataclass(frozen=True)
class Kernel:
    operation: OperationType
    prepare: PrepareFn
    execute: ExecuteFn
    module: str
    # The output shapes are those execute produces (IF and WHILE: whatever the called model
    # gives); prepare then only gives them at compile time, when it can.
    shaped_by_execution: bool = False


KERNELS: dict[OperationType, Kernel] = {}
NATIVE_KERNELS: dict[OperationType, PlanFn] = {}
FUSIONS: dict[tuple[OperationType, OperationType], FusionPlanFn] = {}
GROUP_MEMBERS: dict[OperationType, MemberFn] = {}
# What _registrar enters in a table: a planner or a member predicate.
_Registered = TypeVar("_Registered", PlanFn, MemberFn)
GROUP_PLANNERS: list[GroupPlanFn] = []


def register(*operations: OperationType, prepare: PrepareFn,
             shaped_by_execution: bool = False) -> Callable[[ExecuteFn], ExecuteFn]:
    """Registers ``execute`` (the decorated function) and ``prepare`` for ``operations``.

    ``prepare(ctx)`` returns each output's shape and raises BadDataError for invalid
    parameters; it may read constant input values (``ctx.input``/``ctx.scalar``). When it
    needs a value only known at execution, reading it raises ValueNotKnown and the shapes
    are settled at execution. ``execute(ctx)`` returns the output arrays, in the output
    operands' dtypes. With ``shaped_by_execution`` the shapes execute returns are the
    outputs' shapes, and prepare is only asked at compile time.
    """

    def wrap(execute: ExecuteFn) -> ExecuteFn:
        for op in operations:
            if op in KERNELS:
                raise ValueError(f"a kernel for {op.name} is already registered"
                                 f" in {KERNELS[op].module}")
            KERNELS[op] = Kernel(op, prepare, execute, execute.__module__,
                                 shaped_by_execution)
        return execute

    return wrap


def register_native(*operations: OperationType) -> Callable[[PlanFn], PlanFn]:
    """Registers the decorated planner as the native kernel of ``operations`` (see the module
    docstring); the reference kernel's prepare still gives the shapes and checks."""

    return _registrar(NATIVE_KERNELS, operations, "already has a native kernel")


def register_fusion(producer: OperationType,
                    consumer: OperationType) -> Callable[[FusionPlanFn], FusionPlanFn]:
    """Registers the decorated planner of a native fusion: when an operation ``producer``'s
    only reader is an operation ``consumer``, one runner computes the consumer's outputs from
    the producer's inputs (the producer's output is never made)."""

    def wrap(planner: FusionPlanFn) -> FusionPlanFn:
        FUSIONS[(producer, consumer)] = planner
        return planner

    return wrap


def register_group_member(*operations: OperationType) -> Callable[[MemberFn], MemberFn]:
    """Registers the decorated predicate: whether an operation of ``operations`` may join a
    group fusion (its types and constant parameters are ones the group planner computes)."""

    return _registrar(GROUP_MEMBERS, operations, "is already a group member")


def _registrar(table: dict[OperationType, _Registered], operations: tuple[OperationType, ...],
               taken: str) -> Callable[[_Registered], _Registered]:
    """A decorator entering its function in ``table`` under each of ``operations``, refusing
    an operation already there ("ADD <taken>")."""

    def wrap(function: _Registered) -> _Registered:
        for op in operations:
            if op in table:
                raise ValueError(f"{op.name} {taken}")
            table[op] = function
        return function

    return wrap


def register_group_planner(planner: GroupPlanFn) -> GroupPlanFn:
    """Registers the planner of group fusions (one: the groups are made of the operations
    register_group_member accepts)."""
    if GROUP_PLANNERS:
        raise ValueError("a group planner is already registered")
    GROUP_PLANNERS.append(planner)
    return planner


# The tables are filled by importing runtime.ops and runtime.native (the executor imports
# both, and so does importing torch_nnapi.runtime); the registry imports neither, which would
# be an import circle: each family imports the registry to register itself.


def kernel_for(operation: OperationType) -> Kernel | None:
    return KERNELS.get(operation)


def native_kernel_for(operation: OperationType) -> PlanFn | None:
    return NATIVE_KERNELS.get(operation)


def fusion_for(producer: OperationType, consumer: OperationType) -> FusionPlanFn | None:
    return FUSIONS.get((producer, consumer))


def group_member_for(operation: OperationType) -> MemberFn | None:
    return GROUP_MEMBERS.get(operation)


def group_planner() -> GroupPlanFn | None:
    return GROUP_PLANNERS[0] if GROUP_PLANNERS else None
