"""What a kernel sees of its operation: inputs, their operands, and the output operands."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..nnapi.codes import OperandType, OperationType
from ..nnapi.errors import BadDataError
from ..nnapi.model import Lifetime, Operand

Shape = tuple[int, ...]


class ValueNotKnown(Exception):
    """Raised when preparing at compile time needs a value only known at execution."""


class _Omitted:
    """Marks a model input the caller left out (a null buffer in the C API)."""

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED = _Omitted()
_REQUIRED: Any = object()


class KernelContext:
    """Access to one operation's inputs and outputs, for prepare and execute.

    During compile-time preparation only constants have values; reading another input's value
    raises ValueNotKnown, which defers shape inference to execution.
    """

    __slots__ = ("operation", "index", "relaxed", "memo", "_operands", "_inputs", "_outputs",
                 "_values", "_shapes")

    def __init__(self, operation: OperationType, index: int, operands: Sequence[Operand],
                 inputs: Sequence[int], outputs: Sequence[int], values: Sequence[Any],
                 shapes: Sequence[Shape] | None = None, relaxed: bool = False,
                 memo: dict[str, Any] | None = None):
        self.operation = operation
        self.index = index
        self.relaxed = relaxed
        # What kernels derive from this operation's constants and input shapes, kept by the
        # compiled step so that later executions of the same compilation reuse it.
        self.memo: dict[str, Any] = {} if memo is None else memo
        self._operands = operands
        self._inputs = inputs
        self._outputs = outputs
        self._values = values
        self._shapes = shapes

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    @property
    def at_compile_time(self) -> bool:
        return self._shapes is not None

    def is_omitted(self, i: int) -> bool:
        """True when input ``i`` is absent (past the end) or has no value."""
        if i >= len(self._inputs):
            return True
        index = self._inputs[i]
        return (self._operands[index].lifetime is Lifetime.NO_VALUE
                or self._values[index] is OMITTED)

    def has_input(self, i: int) -> bool:
        return not self.is_omitted(i)

    def input(self, i: int) -> np.ndarray:
        """The value of input ``i`` as an array of its operand's dtype."""
        if self.is_omitted(i):
            raise BadDataError(f"input {i} is omitted but needed")
        value = self._values[self._inputs[i]]
        if value is None:
            raise ValueNotKnown(i)
        return value

    def scalar(self, i: int, default: Any = _REQUIRED) -> Any:
        """A scalar input as a Python value; ``default`` when the input is absent or omitted."""
        if self.is_omitted(i):
            if default is _REQUIRED:
                raise BadDataError(f"input {i} is omitted but needed")
            return default
        return self.input(i).item()

    def float_input(self, i: int) -> np.ndarray:
        """A float16/float32 input as float32 (kernels compute fp16 in fp32, as Android does)."""
        value = self.input(i)
        return value if value.dtype == np.float32 else value.astype(np.float32)

    def input_shape(self, i: int) -> Shape:
        index = self._inputs[i]
        if self._shapes is not None:
            return self._shapes[index]
        value = self._values[index]
        return () if value is OMITTED else value.shape

    def input_operand(self, i: int) -> Operand:
        return self._operands[self._inputs[i]]

    def input_type(self, i: int) -> OperandType:
        return self._operands[self._inputs[i]].type

    def input_quant(self, i: int) -> tuple[float, int]:
        operand = self._operands[self._inputs[i]]
        return operand.scale, operand.zero_point

    def output_operand(self, j: int = 0) -> Operand:
        return self._operands[self._outputs[j]]

    def output_type(self, j: int = 0) -> OperandType:
        return self._operands[self._outputs[j]].type

    def output_quant(self, j: int = 0) -> tuple[float, int]:
        operand = self._operands[self._outputs[j]]
        return operand.scale, operand.zero_point

    def output_dtype(self, j: int = 0) -> np.dtype:
        return self._operands[self._outputs[j]].info.dtype

    def with_input(self, i: int, value: np.ndarray) -> KernelContext:
        """This operation's context with input ``i`` given ``value`` instead (same operands),
        e.g. to evaluate an element-wise kernel on every possible uint8 value at once."""
        values = list(self._values)
        values[self._inputs[i]] = value
        return KernelContext(self.operation, self.index, self._operands, self._inputs,
                             self._outputs, values, None, self.relaxed, {})
