"""The table of runtime kernels: one prepare (shapes and parameter checks) and one execute per
operation type, registered by decorator from the family modules in ``runtime.ops``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence, Union

import numpy as np

from ..nnapi.codes import OperationType

if TYPE_CHECKING:
    from .context import KernelContext

Shape = tuple[int, ...]
PrepareFn = Callable[["KernelContext"], Sequence[Shape]]
ExecuteFn = Callable[["KernelContext"], Union[np.ndarray, Sequence[np.ndarray]]]


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


def kernel_for(operation: OperationType) -> Kernel | None:
    from . import ops  # noqa: F401  (importing the package registers every family)

    return KERNELS.get(operation)
