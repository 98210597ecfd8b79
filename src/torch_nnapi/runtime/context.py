"""What a kernel sees of its operation: inputs and outputs by the names its signature declares.

``Model.finish()`` matched every operation to a form of its signature. A ``Binding`` turns that
match into name -> operand maps once per compiled step; a ``KernelContext`` pairs it with one
execution's values, so kernels read ``ctx.scalar("stride_w")`` or ``ctx.input_shape("filter")``
and never count positions. An optional input that is left out (past the end of the operation's
inputs, or an operand without a value) reads as the default its signature declares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..nnapi.codes import OperandType, OperationType
from ..nnapi.errors import BadDataError, OpFailedError
from ..nnapi.model import Lifetime, Operand, Operation
from ..nnapi.signatures import Arg, SignatureMatch
from .timeouts import NO_LIMITS, RunLimits

Shape = tuple[int, ...]


class ValueNotKnown(Exception):
    """Raised when preparing at compile time needs a value only known at execution."""


class _Omitted:
    """Marks a model input the caller left out (a null buffer in the C API)."""

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED = _Omitted()


class Binding:
    """One operation's arguments by name: the operands bound to them and their positions.

    Built once per compiled step from the operation's SignatureMatch. ``inputs`` maps every
    input the matched form declares to its operands (several for a variadic input, none when
    the input is absent or an operand without a value); ``positions`` gives where each input
    is, or would be, among the operation's inputs, for messages.
    """

    __slots__ = ("args", "form", "inputs", "operands", "operation", "operation_inputs",
                 "output_positions", "outputs", "positions", "present", "types", "variable")

    def __init__(self, operands: Sequence[Operand], operation: Operation, match: SignatureMatch):
        self.operation: OperationType = operation.type
        self.operation_inputs: tuple[int, ...] = tuple(operation.inputs)
        self.form: str = match.form.name
        self.operands = operands
        self.args: dict[str, Arg] = {a.name: a for a in match.form.inputs}
        self.types: dict[str, OperandType | None] = {  # None: of any type (IF, WHILE)
            a.name: a.resolve(match.combo.bindings) for a in match.form.inputs}
        self.inputs: dict[str, tuple[int, ...]] = {}
        self.positions: dict[str, tuple[int, ...]] = {}
        absent_at = len(operation.inputs)
        for arg in match.form.inputs:
            where = match.input_positions.get(arg.name)
            if where is None:
                self.positions[arg.name] = (absent_at,)
                self.inputs[arg.name] = ()
                absent_at += 1
                continue
            self.positions[arg.name] = tuple(where)
            self.inputs[arg.name] = tuple(
                operation.inputs[p] for p in where
                if operands[operation.inputs[p]].lifetime is not Lifetime.NO_VALUE)
        self.outputs: dict[str, tuple[int, ...]] = {
            name: tuple(operation.outputs[p] for p in where)
            for name, where in match.output_positions.items()}
        self.output_positions: dict[str, tuple[int, ...]] = {
            name: tuple(where) for name, where in match.output_positions.items()}
        # Every operand with a value, in input order (the memo's shape key), and the inputs
        # whose values are only known at execution.
        self.present: tuple[int, ...] = tuple(
            i for i in operation.inputs if operands[i].lifetime is not Lifetime.NO_VALUE)
        self.variable: frozenset[str] = frozenset(
            name for name, indices in self.inputs.items()
            if any(operands[i].lifetime is not Lifetime.CONSTANT for i in indices))


class KernelContext:
    """One operation's inputs and outputs by name, for prepare and execute.

    During compile-time preparation only constants have values; reading another input's value
    raises ValueNotKnown, which defers shape inference to execution. ``k`` selects one operand
    of a variadic input (CONCATENATION's ``inputs``).
    """

    __slots__ = ("_binding", "_inputs", "_operands", "_shapes", "_values", "limits", "memo",
                 "operation")

    def __init__(self, binding: Binding, values: Sequence[Any] | Mapping[int, Any],
                 shapes: Sequence[Shape] | None = None, memo: dict[str, Any] | None = None,
                 limits: RunLimits = NO_LIMITS):
        self._binding = binding
        self.operation: OperationType = binding.operation
        self._inputs = binding.inputs
        self._operands = binding.operands
        self._values = values
        self._shapes = shapes
        # How long the execution may still run: IF and WHILE run their models within it.
        self.limits = limits
        # What kernels derive from this operation's constants and input shapes, kept by the
        # compiled step so that later executions of the same compilation reuse it.
        self.memo: dict[str, Any] = {} if memo is None else memo

    @property
    def form(self) -> str:
        """The name of the signature form the operation matched ("explicit", "implicit", "")."""
        return self._binding.form

    @property
    def at_compile_time(self) -> bool:
        return self._shapes is not None

    # ---------------------------------------------------------------- inputs

    def declares(self, name: str) -> bool:
        """True when the matched form has an input called ``name`` (given or not)."""
        return name in self._inputs

    def has_input(self, name: str) -> bool:
        """True when input ``name`` is given and has a value (not absent, not omitted)."""
        indices = self._inputs.get(name)
        if indices is None:
            raise self._undeclared(name)
        return bool(indices) and self._values[indices[0]] is not OMITTED

    def input_count(self, name: str) -> int:
        """How many operands input ``name`` has: one, several for a variadic, 0 if absent."""
        return len(self._binding.positions[name]) if self.has_input(name) else 0

    def input(self, name: str, k: int = 0) -> np.ndarray:
        """The value of input ``name`` as an array of its operand's dtype."""
        indices = self._inputs.get(name, ())
        if k < len(indices):
            value = self._values[indices[k]]
            if value is not None and value is not OMITTED:
                return cast("np.ndarray", value)
        raise self._unavailable(name, k)

    def inputs(self, name: str) -> list[np.ndarray]:
        """The values of every operand of variadic input ``name``."""
        return [self.input(name, k) for k in range(self.input_count(name))]

    def scalar(self, name: str) -> Any:
        """A scalar input as a Python value; the declared default when it is left out."""
        indices = self._inputs.get(name, ())
        if indices:
            value = self._values[indices[0]]
            if value is not None and value is not OMITTED:
                return value.item()
        arg = self._binding.args.get(name)
        if arg is not None and arg.has_default and (not indices
                                                     or self._values[indices[0]] is OMITTED):
            return arg.default
        raise self._unavailable(name, 0)

    def float_input(self, name: str, k: int = 0) -> np.ndarray:
        """A float16/float32 input as float32 (kernels compute fp16 in fp32, as Android does)."""
        value = self.input(name, k)
        return value if value.dtype == np.float32 else value.astype(np.float32)

    def input_shape(self, name: str, k: int = 0) -> Shape:
        indices = self._inputs.get(name, ())
        if k < len(indices):
            if self._shapes is not None:
                return self._shapes[indices[k]]
            value = self._values[indices[k]]
            if value is not OMITTED:
                shape: Shape = value.shape
                return shape
        raise self._unavailable(name, k)

    def input_type(self, name: str, k: int = 0) -> OperandType:
        """The operand type of input ``name``; the declared one when the input is absent."""
        indices = self._inputs.get(name, ())
        if k < len(indices):
            return self._operands[indices[k]].type
        if name not in self._inputs:
            raise self._undeclared(name)
        declared = self._binding.types[name]
        if declared is None:  # an absent input of any type: none to tell
            raise self._unavailable(name, k)
        return declared

    def input_operand(self, name: str, k: int = 0) -> Operand:
        indices = self._inputs.get(name, ())
        if k < len(indices):
            return self._operands[indices[k]]
        raise self._unavailable(name, k)

    def input_quant(self, name: str, k: int = 0) -> tuple[float, int]:
        """(scale, zero point) of input ``name``."""
        operand = self.input_operand(name, k)
        return operand.scale, operand.zero_point

    def describe_input(self, name: str, k: int = 0) -> str:
        """How messages name an input: its position among the operation's inputs and its name,
        "input 4 (stride_w)"."""
        positions = self._binding.positions.get(name)
        if positions is None:
            raise self._undeclared(name)
        return f"input {positions[min(k, len(positions) - 1)]} ({name})"

    # ---------------------------------------------------------------- outputs

    def output_count(self, name: str) -> int:
        """How many operands output ``name`` has (0 for an optional output left out)."""
        return len(self._binding.outputs.get(name, ()))

    def output_operand(self, name: str = "output", k: int = 0) -> Operand:
        indices = self._binding.outputs.get(name, ())
        if k < len(indices):
            return self._operands[indices[k]]
        raise self._no_output(name)

    def output_type(self, name: str = "output", k: int = 0) -> OperandType:
        return self.output_operand(name, k).type

    def output_quant(self, name: str = "output", k: int = 0) -> tuple[float, int]:
        operand = self.output_operand(name, k)
        return operand.scale, operand.zero_point

    def output_dtype(self, name: str = "output", k: int = 0) -> np.dtype:
        indices = self._binding.outputs.get(name, ())  # inlined: kernels ask for it often
        if k < len(indices):
            return self._operands[indices[k]].info.dtype
        raise self._no_output(name)

    def describe_output(self, name: str, k: int = 0) -> str:
        positions = self._binding.output_positions.get(name, ())
        return f"output {positions[k]} ({name})" if k < len(positions) else f"output {name!r}"

    # ---------------------------------------------------------------- for the memo

    def shapes_key(self) -> tuple[Shape | None, ...]:
        """The shapes of every input with a value (None for one omitted at execution)."""
        if self._shapes is not None:
            shapes = self._shapes
            return tuple(shapes[i] for i in self._binding.present)
        values = self._values
        return tuple(None if values[i] is OMITTED else values[i].shape
                     for i in self._binding.present)

    @property
    def variable_inputs(self) -> frozenset[str]:
        """The inputs whose values are not constants of the model."""
        return self._binding.variable

    def input_position(self, name: str, k: int = 0) -> int:
        """Where operand ``k`` of input ``name`` is among the operation's inputs (a native
        runner's arguments come in that order)."""
        return self._binding.positions[name][k]

    def on_arguments(self) -> Callable[[Sequence[Any]], KernelContext]:
        """A function giving this operation's context on other values of its inputs, given in
        the operation's input order (a native runner's arguments): for a runner whose weights
        the model computes, to read them at each execution. It keeps no values of this
        context's execution."""
        binding, memo = self._binding, self.memo

        def context(arguments: Sequence[Any]) -> KernelContext:
            return KernelContext(binding, dict(zip(binding.operation_inputs, arguments,
                                                   strict=True)), None, memo)

        return context

    def with_input(self, name: str, value: np.ndarray, k: int = 0) -> KernelContext:
        """This operation's context with input ``name`` given ``value`` instead (the same
        operands): to evaluate an element-wise kernel on every possible uint8 value at once,
        say."""
        values: list[Any] | dict[int, Any] = dict(self._values) \
            if isinstance(self._values, Mapping) else list(self._values)
        values[self._inputs[name][k]] = value
        return KernelContext(self._binding, values, None, {})

    # ---------------------------------------------------------------- errors

    def _unavailable(self, name: str, k: int) -> Exception:
        """Why input ``name`` (operand ``k``) cannot be read: undeclared, absent, omitted, or
        (at compile time) not known yet."""
        indices = self._inputs.get(name)
        if indices is None:
            return self._undeclared(name)
        if k < len(indices):
            if self._values[indices[k]] is not OMITTED:
                return ValueNotKnown(name)
        elif k >= len(self._binding.positions[name]):
            return OpFailedError(f"{self.describe_input(name)} has no operand {k}")
        return BadDataError(f"{self.describe_input(name, k)} is omitted but needed")

    def _no_output(self, name: str) -> Exception:
        return OpFailedError(f"the kernel asked for output {name!r}, which this"
                             f" {self.operation.name} operation does not have")

    def _undeclared(self, name: str) -> Exception:
        form = f" ({self.form} form)" if self.form else ""
        return OpFailedError(f"the kernel asked for input {name!r}, which the signature of"
                             f" {self.operation.name}{form} does not declare")
