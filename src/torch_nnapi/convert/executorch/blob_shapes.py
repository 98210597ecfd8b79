"""Bounded dynamic sizes in the delegate blob (section ``SHAP``, docs/executorch_blob.md).

A program exported with ``torch.export.Dim(..., max=N)`` keeps some input dimensions open.
The blob then carries its model at the example sizes plus what fixes it for other sizes:
the open dimensions with their bounds, and one size program per operand dimension or INT32
value that depends on them (the converter's ``Sym`` expressions, in the postfix encoding of
``builder/symbolic.py``). The runtime checks the real sizes against the bounds, runs the
programs and compiles the model it gets, once per set of input sizes.

The programs are checked when read (valid opcodes, a stack that never underflows and ends
with one value, DIM only on an open dimension), so evaluating one never fails on structure;
the runtime (``native/shape_programs.cpp``) refuses division by zero and values outside
int32 at evaluation (``builder/symbolic.py``'s ``evaluate`` is the Python evaluator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from ..builder.symbolic import ADD, CONST, DIM, FLOORDIV, MAX, MIN, MOD, MUL, SUB

MAX_PROGRAM_WORDS = 1024  # a size expression longer than this is refused as corruption
MAX_STACK = 64
_OPERATORS = (ADD, SUB, MUL, FLOORDIV, MOD, MAX, MIN)


class PatchTarget(IntEnum):
    """What a size program sets."""

    DIMENSION = 0  # dimension ``element`` of a main-model operand
    VALUE = 1  # element ``element`` of an inline INT32 / TENSOR_INT32 constant
    OUTPUT = 2  # dimension ``element`` (PyTorch order) of ExecuTorch output ``operand``


@dataclass(frozen=True)
class DimBound:
    """ExecuTorch input ``input``'s dimension ``dim`` (PyTorch order) takes sizes in
    [minimum, maximum]."""

    input: int
    dim: int
    minimum: int
    maximum: int


@dataclass(frozen=True)
class SizePatch:
    """``program`` computes the value ``target`` names: of main-model operand (or
    ExecuTorch output) ``operand``, at ``element``."""

    target: PatchTarget
    operand: int
    element: int
    program: tuple[int, ...]


@dataclass(frozen=True)
class ShapePrograms:
    bounds: tuple[DimBound, ...] = ()
    patches: tuple[SizePatch, ...] = ()


def program_problem(program: Sequence[int], bounds: Sequence[DimBound]) -> str | None:
    """Why ``program`` is malformed (None when it is well formed): an unknown opcode, a
    truncated operand, a stack that underflows or does not end with one value, a DIM that
    reads a dimension no bound declares open."""
    if not 0 < len(program) <= MAX_PROGRAM_WORDS:
        return f"has {len(program)} words (1 to {MAX_PROGRAM_WORDS})"
    open_dims = {(b.input, b.dim) for b in bounds}
    depth, i = 0, 0
    while i < len(program):
        code = program[i]
        if code == CONST:
            if i + 1 >= len(program):
                return f"word {i}: CONST without its value"
            depth, i = depth + 1, i + 2
        elif code == DIM:
            if i + 2 >= len(program):
                return f"word {i}: DIM without its input and dimension"
            if (program[i + 1], program[i + 2]) not in open_dims:
                return f"word {i}: DIM {program[i + 1]} {program[i + 2]} is no open dimension"
            depth, i = depth + 1, i + 3
        elif code in _OPERATORS:
            if depth < 2:
                return f"word {i}: operator {code} with {depth} values on the stack"
            depth, i = depth - 1, i + 1
        else:
            return f"word {i}: unknown opcode {code}"
        if depth > MAX_STACK:
            return f"word {i}: the stack grows past {MAX_STACK}"
    return None if depth == 1 else f"ends with {depth} values on the stack"
